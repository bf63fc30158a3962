//! The transport a command runs, from a preset and the user's flags: the
//! preset first, then the flags, each value checked by `ltx-proto`; an
//! error names the flag, and a flag the preset would ignore is refused.

use anyhow::anyhow;
use ltx_presets::Profile;
use ltx_proto::{ConfigError, Setting, TransportConfig};

use crate::exit::{Failed, Failure};
use crate::repair_args::RepairArgs;

/// `profile`'s transport with the repair flags of `repair` and, if given,
/// the path's rate in bits per second (`--rate-hint`).
pub fn transport_for(
    profile: Profile,
    repair: &RepairArgs,
    rate_hint_bps: Option<u64>,
) -> anyhow::Result<TransportConfig> {
    let mut transport = profile.transport_config();
    let refused = |e: ConfigError| flag_error(&e, profile);
    repair.settings().apply(&mut transport).map_err(refused)?;
    transport
        .set_rate_hint(rate_hint_bps.map(|bps| (bps / 8).max(1)))
        .map_err(refused)?;
    transport.validate().map_err(refused)?;
    Ok(transport)
}

/// The flag that sets `setting` on the command line.
pub fn flag_of(setting: Setting) -> &'static str {
    match setting {
        Setting::DelayPerPercent => "--delay-per-percent",
        Setting::CheapAnswerQuantile => "--cheap-answer-quantile",
        Setting::TailResidual => "--tail-residual",
        Setting::MaxRepairSpan => "--max-repair-span",
        Setting::RateHint => "--rate-hint",
        Setting::IdleTimeout => "--timeout",
        Setting::ExpectedLoss => "--expect-loss",
        other => other.name(),
    }
}

/// `error` as the command line's, naming its flag and `profile`; exit code
/// 2 (bad command line).
pub fn flag_error(error: &ConfigError, profile: Profile) -> anyhow::Error {
    let message = match error {
        ConfigError::OutOfRange {
            setting,
            value,
            range,
        } => format!("{}: {value} is outside {range}", flag_of(*setting)),
        ConfigError::NoEffect { setting, policy } => format!(
            "{} has no effect under the {profile} preset: {policy} does not read it",
            flag_of(*setting)
        ),
        other => other.to_string(),
    };
    anyhow!(message).context(Failed(Failure::Usage))
}

/// A value the command line gives for `setting`, checked as `ltx-proto`
/// checks it: the message clap prints after the flag's name.
pub(crate) fn range_message(error: ConfigError) -> String {
    match error {
        ConfigError::OutOfRange { value, range, .. } => format!("{value} is outside {range}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Probe {
        #[command(flatten)]
        repair: RepairArgs,
    }

    fn repair(args: &[&str]) -> RepairArgs {
        Probe::try_parse_from(std::iter::once("probe").chain(args.iter().copied()))
            .expect("valid flags")
            .repair
    }

    #[test]
    fn a_repair_flag_the_preset_does_not_read_is_refused_naming_it() {
        let flags = repair(&["--delay-per-percent", "300ms"]);
        assert!(transport_for(Profile::Ltx, &flags, None).is_ok());
        let err = transport_for(Profile::LtTcp, &flags, None).unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("--delay-per-percent"), "{message}");
        assert!(message.contains("lt-tcp"), "{message}");
        assert_eq!(Failure::of(&err) as u8, 2);
    }

    #[test]
    fn a_rate_hint_goes_to_the_controller_that_reads_one() {
        let none = repair(&[]);
        let transport = transport_for(Profile::Ltx, &none, Some(50_000_000)).unwrap();
        assert_eq!(transport.rate_hint(), Some(6_250_000));
        let err = transport_for(Profile::Cubic, &none, Some(50_000_000)).unwrap_err();
        assert!(format!("{err:#}").contains("--rate-hint"), "{err:#}");
    }
}
