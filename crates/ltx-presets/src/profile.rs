//! Presets: a congestion controller and a redundancy scheme under one
//! name, for the command line and for side-by-side measurements.
//!
//! The seed presets pair their seed's window control with their seed's
//! redundancy ([`Profile::scheme`]): LT-TCP's PFEC + RFEC over blocks,
//! TCP-dFEC's XOR parity steered by 1 ± δ, Coded TCP's blocks of 32 with
//! random linear coding, FECTCP's rateless coding of a whole block. `ltx`,
//! `ccp` and the TCP baselines run ltx's sliding-window policy
//! ([`SlidingWindowFactory`]). Where each deviates from its seed is said in
//! its scheme's module: [`blocks`], [`dfec`], [`whole_block`].
//!
//! [`blocks`]: crate::recovery::blocks
//! [`dfec`]: crate::recovery::dfec
//! [`whole_block`]: crate::recovery::whole_block

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use ltx_proto::congestion::{ControllerFactory, TolerantConfig};
use ltx_proto::recovery::{SchemeFactory, SlidingWindowFactory};
use ltx_proto::RepairConfig;
use ltx_proto::TransportConfig;

use crate::congestion::{
    BbrConfig, CcpConfig, CodedTcpConfig, CubicConfig, FectcpConfig, LtTcpConfig, NewRenoConfig,
};
use crate::recovery::{BlockConfig, DfecConfig, WholeBlockConfig};

/// A named controller and redundancy policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// ltx's own design, the default: the Coded TCP back-off on a standing
    /// queue, a start-up that measures the bottleneck, an ECN response
    /// ([`TolerantConfig::default`]).
    #[default]
    Ltx,
    /// Seed 000 (LT-TCP): a TCP window that answers ECN CE marks only
    /// ([`LtTcpConfig`]); it never backs off behind a queue that drops
    /// without marking, as the seed assumes ECN. Redundancy: blocks of 64
    /// with PFEC sized from the loss estimate and RFEC on feedback
    /// ([`BlockConfig::LT_TCP`]); the block size is ltx's choice.
    LtTcp,
    /// Seed 001 (CCP): delay-based control holding the queue at a tenth of
    /// the largest queue seen ([`CcpConfig`]); the control law is a reading
    /// of the seed's `f(storage, inFlight)`, which its material leaves
    /// unstated.
    Ccp,
    /// Seed 002 (TCP-dFEC): standard TCP window control, which the seed
    /// keeps, as [`NewRenoConfig`]. Redundancy: XOR parity whose ratio is
    /// steered towards a target residual loss by 1 ± δ, inside a FEC window
    /// halved when FEC is lost or fails ([`DfecConfig`]); what XOR misses
    /// is answered by random linear repair, where the seed retransmits.
    Dfec,
    /// Seed 003 (Coded TCP): the rule `cwnd ← cwnd × RTTmin / RTT` alone,
    /// without ltx's additions ([`CodedTcpConfig`]). Redundancy:
    /// blocks of 32 source packets, random linear coding, `k·p/(1−p)`
    /// proactive repairs per block and extra coded packets on feedback
    /// ([`BlockConfig::CODED_TCP`]).
    Tolerant,
    /// Seed 004 (FECTCP): window control by time-outs
    /// `ΔT = (1 + β)(sRTT + σ)` that hide isolated losses
    /// ([`FectcpConfig`]); it reduces once per round trip where the seed
    /// halves on every time-out, and a round trip with losses while the
    /// queue stood all along counts as a time-out (paced sending spreads an
    /// overflow's drops so that none would time out). Redundancy: the whole transfer (up to the
    /// peer's window) is one block, its source symbols then random linear
    /// repairs over all of it until the receiver's decoded-through says it
    /// is recovered, the seed's BACK ([`WholeBlockConfig`]); the code is
    /// RLC where the seed uses a Raptor-like one.
    Fectcp,
    /// NewReno (RFC 5681, 6582): the loss-based baseline ([`NewRenoConfig`]).
    NewReno,
    /// CUBIC (RFC 9438): the loss-based baseline most hosts run
    /// ([`CubicConfig`]).
    Cubic,
    /// BBR, version 1 shape: model-based and tolerant of random loss
    /// ([`BbrConfig`]).
    Bbr,
}

/// A profile name that is not one of [`Profile::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile '{0}' (valid: ltx, lt-tcp, ccp, dfec, ctcp, fectcp, newreno, cubic, bbr)")]
pub struct UnknownProfile(pub String);

impl Profile {
    /// Every profile, the default first.
    pub const ALL: [Profile; 9] = [
        Profile::Ltx,
        Profile::LtTcp,
        Profile::Ccp,
        Profile::Dfec,
        Profile::Tolerant,
        Profile::Fectcp,
        Profile::NewReno,
        Profile::Cubic,
        Profile::Bbr,
    ];

    /// The profile's name, as [`FromStr`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Ltx => "ltx",
            Profile::LtTcp => "lt-tcp",
            Profile::Ccp => "ccp",
            Profile::Dfec => "dfec",
            Profile::Tolerant => "ctcp",
            Profile::Fectcp => "fectcp",
            Profile::NewReno => "newreno",
            Profile::Cubic => "cubic",
            Profile::Bbr => "bbr",
        }
    }

    /// The profile's congestion controller.
    pub fn controller(self) -> Arc<dyn ControllerFactory> {
        match self {
            Profile::Ltx => Arc::new(TolerantConfig::default()),
            Profile::LtTcp => Arc::new(LtTcpConfig::default()),
            Profile::Ccp => Arc::new(CcpConfig::default()),
            Profile::Dfec | Profile::NewReno => Arc::new(NewRenoConfig::default()),
            Profile::Tolerant => Arc::new(CodedTcpConfig::default()),
            Profile::Fectcp => Arc::new(FectcpConfig::default()),
            Profile::Cubic => Arc::new(CubicConfig::default()),
            Profile::Bbr => Arc::new(BbrConfig::default()),
        }
    }

    /// The profile's redundancy scheme: the seed's for the seed presets,
    /// ltx's sliding window for the others.
    pub fn scheme(self) -> Arc<dyn SchemeFactory> {
        match self {
            Profile::LtTcp => Arc::new(BlockConfig::LT_TCP),
            Profile::Dfec => Arc::new(DfecConfig::default()),
            Profile::Tolerant => Arc::new(BlockConfig::CODED_TCP),
            Profile::Fectcp => Arc::new(WholeBlockConfig::default()),
            Profile::Ltx | Profile::Ccp | Profile::NewReno | Profile::Cubic | Profile::Bbr => {
                Arc::new(SlidingWindowFactory)
            }
        }
    }

    /// Sets `config`'s controller and redundancy scheme to the profile's,
    /// and its redundancy numbers to their defaults, leaving its other
    /// settings alone.
    pub fn apply(self, config: &mut TransportConfig) {
        config
            .set_congestion_controller(self.controller())
            .set_redundancy_scheme(self.scheme());
        *config.repair_mut() = RepairConfig::default();
    }

    /// The default transport configuration with the profile's controller
    /// and redundancy policy.
    pub fn transport_config(self) -> TransportConfig {
        let mut config = TransportConfig::default();
        self.apply(&mut config);
        config
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Profile, UnknownProfile> {
        let wanted = s.trim().to_ascii_lowercase();
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == wanted)
            .ok_or_else(|| UnknownProfile(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn every_name_reads_back() {
        for profile in Profile::ALL {
            assert_eq!(profile.name().parse::<Profile>(), Ok(profile));
            assert_eq!(profile.to_string(), profile.name());
        }
        assert_eq!("LT-TCP".parse::<Profile>(), Ok(Profile::LtTcp));
        assert_eq!(Profile::default(), Profile::Ltx);
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let err = "reno".parse::<Profile>().unwrap_err();
        let message = err.to_string();
        assert!(message.contains("'reno'"), "{message}");
        for profile in Profile::ALL {
            assert!(
                message.contains(profile.name()),
                "{message} lacks {profile}"
            );
        }
    }

    #[test]
    fn each_profile_builds_its_seeds_redundancy() {
        let expected = [
            "sliding-window",
            "blocks",
            "sliding-window",
            "dfec",
            "blocks",
            "whole-block",
            "sliding-window",
            "sliding-window",
            "sliding-window",
        ];
        for (profile, name) in Profile::ALL.into_iter().zip(expected) {
            let config = profile.transport_config();
            assert_eq!(
                config
                    .redundancy_scheme()
                    .build(config.repair(), 1024)
                    .name(),
                name,
                "{profile}"
            );
        }
    }

    #[test]
    fn each_profile_builds_its_controller() {
        let now = Instant::now();
        let expected = [
            "ltx", "lt-tcp", "ccp", "newreno", "ctcp", "fectcp", "newreno", "cubic", "bbr",
        ];
        for (profile, name) in Profile::ALL.into_iter().zip(expected) {
            let config = profile.transport_config();
            assert!(config.validate().is_ok());
            let controller = config
                .congestion_controller()
                .build(now, config.max_datagram());
            assert_eq!(controller.name(), name, "{profile}");
        }
    }

    #[test]
    fn a_repair_setting_only_the_sliding_window_reads_is_refused_elsewhere() {
        for profile in Profile::ALL {
            let mut config = profile.transport_config();
            assert_eq!(config.validate(), Ok(()), "{profile}");
            config
                .repair_mut()
                .set_tail_residual(0.02)
                .expect("a valid residual");
            let sliding = matches!(
                profile,
                Profile::Ltx | Profile::Ccp | Profile::NewReno | Profile::Cubic | Profile::Bbr
            );
            assert_eq!(config.validate().is_ok(), sliding, "{profile}");
        }
    }

    #[test]
    fn only_ltxs_controller_takes_a_rate_hint() {
        for profile in Profile::ALL {
            let mut config = profile.transport_config();
            config.set_rate_hint(Some(1_000_000)).expect("a valid rate");
            let refused = matches!(
                config.validate(),
                Err(ltx_proto::ConfigError::NoEffect {
                    setting: ltx_proto::Setting::RateHint,
                    ..
                })
            );
            assert_eq!(refused, profile != Profile::Ltx, "{profile}");
        }
    }
}
