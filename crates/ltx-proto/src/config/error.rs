//! What a configuration can get wrong, and which setting it names.

use std::fmt;

use crate::protection::HandshakeError;

/// A setting of [`TransportConfig`](super::TransportConfig) or
/// [`RepairConfig`](super::RepairConfig) that an error names, so that a
/// front end can say which of its flags or keys was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// The largest UDP payload.
    MaxDatagram,
    /// The decoding window.
    MaxWindow,
    /// The idle time-out.
    IdleTimeout,
    /// The widest proactive repair window.
    MaxRepairSpan,
    /// The price of waiting for feedback.
    DelayPerPercent,
    /// The quantile of cheap answers.
    CheapAnswerQuantile,
    /// The residual of the tail.
    TailResidual,
    /// The residual of fixed windows.
    TargetResidual,
    /// The cap on proactive repair per source symbol.
    MaxRatio,
    /// The margin of reactive answers.
    ReactiveMargin,
    /// The round trip up to which feedback counts as cheap.
    CheapFeedbackRtt,
    /// A known bottleneck rate.
    RateHint,
    /// Data in the client's first flight.
    EarlyData,
    /// The loss rate a connection assumes before it has measured one.
    ExpectedLoss,
}

impl Setting {
    /// The setting's name, as the configuration's setter spells it.
    pub fn name(self) -> &'static str {
        match self {
            Setting::MaxDatagram => "max_datagram",
            Setting::MaxWindow => "max_window",
            Setting::IdleTimeout => "idle_timeout",
            Setting::MaxRepairSpan => "max_repair_span",
            Setting::DelayPerPercent => "delay_per_percent",
            Setting::CheapAnswerQuantile => "cheap_answer_quantile",
            Setting::TailResidual => "tail_residual",
            Setting::TargetResidual => "target_residual",
            Setting::MaxRatio => "max_ratio",
            Setting::ReactiveMargin => "reactive_margin",
            Setting::CheapFeedbackRtt => "cheap_feedback_rtt",
            Setting::RateHint => "rate_hint",
            Setting::EarlyData => "early_data",
            Setting::ExpectedLoss => "expected_loss",
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A configuration the connection cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A value outside the range the setting allows.
    #[error("{setting}: {value} is outside {range}")]
    OutOfRange {
        /// The setting given.
        setting: Setting,
        /// The value given, as written.
        value: String,
        /// The range allowed, in words.
        range: &'static str,
    },
    /// A setting changed from the preset's that the chosen controller or
    /// redundancy scheme does not read: it would be silently ignored.
    #[error("{setting} has no effect under {policy}")]
    NoEffect {
        /// The setting changed.
        setting: Setting,
        /// The controller or scheme that does not read it, in words
        /// ("the blocks redundancy scheme").
        policy: String,
    },
    /// The handshake could not be started with the keys given.
    #[error("the handshake could not start: {0}")]
    Handshake(HandshakeError),
}

impl ConfigError {
    /// The setting the error names, if any.
    pub fn setting(&self) -> Option<Setting> {
        match self {
            ConfigError::OutOfRange { setting, .. } | ConfigError::NoEffect { setting, .. } => {
                Some(*setting)
            }
            ConfigError::Handshake(_) => None,
        }
    }

    pub(super) fn out_of_range(
        setting: Setting,
        value: impl fmt::Display,
        range: &'static str,
    ) -> ConfigError {
        ConfigError::OutOfRange {
            setting,
            value: value.to_string(),
            range,
        }
    }
}
