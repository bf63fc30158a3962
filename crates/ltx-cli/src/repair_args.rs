//! The redundancy settings a user may change on every command that makes a
//! connection in the simulator or over the network (`ltx sim run`,
//! `ltx-bench compare`, `ltx send`, `ltx tunnel`): the same flags, the same
//! meaning, so that a trade measured in the simulator can be taken onto a
//! real path as it is; and the `[repair]` table of a configuration file,
//! which holds the same settings.

use std::time::Duration;

use clap::Args;
use ltx_proto::{RepairConfig, RepairSettings};
use ltx_sim::units::{parse_duration, parse_fraction};
use serde::Deserialize;

use crate::settings::range_message;

/// How the sender weighs repair bytes against waiting for feedback. Each
/// flag left out keeps the preset's value.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Repair (bytes against delay)")]
pub struct RepairArgs {
    /// The price of waiting for feedback: the mean wait per span of the
    /// sliding window worth one percent of its bytes (default 75ms). Lower
    /// spends more repair ahead of loss: less delivery delay, more bytes;
    /// higher sends fewer bytes where each one costs (a metered link) and
    /// lets more gaps wait a round trip for feedback.
    #[arg(long, value_parser = parse_duration)]
    pub delay_per_percent: Option<Duration>,
    /// On paths of 240 ms and less, size answers to feedback this many
    /// standard deviations of the flight's spread from its expected need
    /// (-4 to 4, default -1). Higher sends more repair sooner: less delivery
    /// delay, more bytes; 0 answers the expected need.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_quantile)]
    pub cheap_answer_quantile: Option<f64>,
    /// The fraction of transfers whose last flight the tail may leave short
    /// for a round trip of feedback (e.g. 1% or 0.01; above 0, at most 50%;
    /// default 1%). Lower sends more repair at the end of a transfer, while
    /// the link would otherwise idle: fewer waits, more bytes.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_tail_residual)]
    pub tail_residual: Option<f64>,
    /// Widest window, in source symbols, a proactive repair covers (1 to
    /// 16384, default 256). Wider needs a thinner margin on long paths and
    /// costs coding time in proportion.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_span)]
    pub max_repair_span: Option<u16>,
    /// The loss rate to assume before the connection has measured one
    /// (e.g. 10% or 0.1; 0 to 90%), for a path known to lose: the first
    /// flights then carry repair, and a loss among them does not hold the
    /// stream up for a round trip. It fades as the path's own losses are
    /// counted, gone after 128 packets [default: none, a path is clean
    /// until it loses].
    #[arg(long, value_parser = parse_expected_loss)]
    pub expect_loss: Option<f64>,
}

impl RepairArgs {
    /// The settings given, each flag left out left to the preset.
    pub fn settings(&self) -> RepairSettings {
        RepairSettings {
            delay_per_percent: self.delay_per_percent,
            cheap_answer_quantile: self.cheap_answer_quantile,
            tail_residual: self.tail_residual,
            max_repair_span: self.max_repair_span,
            expected_loss: self.expect_loss,
        }
    }
}

/// A residual of `--tail-residual` (e.g. 1% or 0.01), in the range
/// `ltx-proto` allows.
fn parse_tail_residual(input: &str) -> Result<f64, String> {
    let value = parse_fraction(input).map_err(|e| e.to_string())?;
    RepairConfig::default()
        .set_tail_residual(value)
        .map_err(range_message)?;
    Ok(value)
}

/// The repair settings in a configuration file's `[repair]` table, each key
/// as its flag is written (`delay_per_percent = "25ms"`,
/// `expect_loss = "10%"`, `tail_residual = "1%"`, `cheap_answer_quantile =
/// -1`, `max_repair_span = 256`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairFile {
    /// As `--delay-per-percent`.
    pub delay_per_percent: Option<String>,
    /// As `--cheap-answer-quantile`.
    pub cheap_answer_quantile: Option<f64>,
    /// As `--tail-residual`.
    pub tail_residual: Option<String>,
    /// As `--max-repair-span`.
    pub max_repair_span: Option<u16>,
    /// As `--expect-loss`.
    pub expect_loss: Option<String>,
}

impl RepairArgs {
    /// The flags given over `file`'s keys: a flag wins over its key, a key
    /// fills in for a flag left out. A key out of range is an error naming
    /// it (`repair.KEY in the file: ...`).
    pub fn settings_over(&self, file: &RepairFile) -> Result<RepairSettings, String> {
        fn key<T>(
            name: &str,
            flag: Option<T>,
            text: Option<&str>,
            parse: impl Fn(&str) -> Result<T, String>,
        ) -> Result<Option<T>, String> {
            match (flag, text) {
                (Some(value), _) => Ok(Some(value)),
                (None, Some(text)) => parse(text)
                    .map(Some)
                    .map_err(|e| format!("repair.{name} in the file: {e}")),
                (None, None) => Ok(None),
            }
        }
        let quantile = file.cheap_answer_quantile.map(|q| q.to_string());
        let span = file.max_repair_span.map(|s| s.to_string());
        Ok(RepairSettings {
            delay_per_percent: key(
                "delay_per_percent",
                self.delay_per_percent,
                file.delay_per_percent.as_deref(),
                |t| parse_duration(t).map_err(|e| e.to_string()),
            )?,
            cheap_answer_quantile: key(
                "cheap_answer_quantile",
                self.cheap_answer_quantile,
                quantile.as_deref(),
                parse_quantile,
            )?,
            tail_residual: key(
                "tail_residual",
                self.tail_residual,
                file.tail_residual.as_deref(),
                parse_tail_residual,
            )?,
            max_repair_span: key(
                "max_repair_span",
                self.max_repair_span,
                span.as_deref(),
                parse_span,
            )?,
            expected_loss: key(
                "expect_loss",
                self.expect_loss,
                file.expect_loss.as_deref(),
                parse_expected_loss,
            )?,
        })
    }
}

/// A rate of `--expect-loss` (e.g. 10% or 0.1), in the range `ltx-proto`
/// allows.
fn parse_expected_loss(input: &str) -> Result<f64, String> {
    let value = parse_fraction(input).map_err(|e| e.to_string())?;
    ltx_proto::TransportConfig::default()
        .set_expected_loss(Some(value))
        .map_err(range_message)?;
    Ok(value)
}

/// A quantile of `--cheap-answer-quantile`, in standard deviations, in the
/// range `ltx-proto` allows.
fn parse_quantile(input: &str) -> Result<f64, String> {
    let value: f64 = input
        .trim()
        .parse()
        .map_err(|_| format!("`{input}` is not a number (e.g. -1, 0 or 0.5)"))?;
    RepairConfig::default()
        .set_cheap_answer_quantile(value)
        .map_err(range_message)?;
    Ok(value)
}

/// A span of `--max-repair-span`, in source symbols, in the range
/// `ltx-proto` allows.
fn parse_span(input: &str) -> Result<u16, String> {
    let value: u16 = input
        .trim()
        .parse()
        .map_err(|_| format!("`{input}` is not a whole number of symbols (e.g. 256)"))?;
    RepairConfig::default()
        .set_max_repair_span(value)
        .map_err(range_message)?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use ltx_proto::TransportConfig;

    use super::*;

    #[derive(Debug, Parser)]
    struct Probe {
        #[command(flatten)]
        repair: RepairArgs,
    }

    fn parse(args: &[&str]) -> Result<RepairArgs, clap::Error> {
        Probe::try_parse_from(std::iter::once("probe").chain(args.iter().copied()))
            .map(|probe| probe.repair)
    }

    #[test]
    fn flags_left_out_keep_the_presets_values() {
        let preset = TransportConfig::default();
        let mut transport = preset.clone();
        parse(&[])
            .expect("no flags")
            .settings()
            .apply(&mut transport)
            .unwrap();
        assert_eq!(transport.repair(), preset.repair());
    }

    #[test]
    fn flags_given_reach_the_transport() {
        let mut transport = TransportConfig::default();
        parse(&[
            "--delay-per-percent",
            "300ms",
            "--cheap-answer-quantile",
            "-2",
            "--tail-residual",
            "5%",
            "--max-repair-span",
            "1024",
            "--expect-loss",
            "10%",
        ])
        .expect("valid flags")
        .settings()
        .apply(&mut transport)
        .unwrap();
        let repair = transport.repair();
        assert_eq!(repair.delay_per_percent(), Duration::from_millis(300));
        assert_eq!(repair.cheap_answer_quantile(), -2.0);
        assert_eq!(repair.tail_residual(), 0.05);
        assert_eq!(repair.max_repair_span(), 1024);
        assert_eq!(transport.expected_loss(), Some(0.1));
    }

    #[test]
    fn a_flag_wins_over_the_files_key_and_a_key_fills_in_for_a_flag_left_out() {
        let file: RepairFile = toml::from_str(
            r#"
            delay_per_percent = "25ms"
            expect_loss = "10%"
            max_repair_span = 512
            "#,
        )
        .expect("a valid table");
        let flags = parse(&["--delay-per-percent", "300ms"]).expect("valid flags");
        let settings = flags.settings_over(&file).expect("valid settings");
        assert_eq!(settings.delay_per_percent, Some(Duration::from_millis(300)));
        assert_eq!(settings.expected_loss, Some(0.1));
        assert_eq!(settings.max_repair_span, Some(512));
        assert_eq!(settings.tail_residual, None);
        let bad = RepairFile {
            expect_loss: Some("95%".into()),
            ..RepairFile::default()
        };
        let err = parse(&[]).unwrap().settings_over(&bad).unwrap_err();
        assert!(err.contains("repair.expect_loss"), "{err}");
        assert!(toml::from_str::<RepairFile>("price = \"1s\"").is_err());
    }

    #[test]
    fn values_out_of_range_are_refused() {
        for args in [
            ["--tail-residual", "0"],
            ["--tail-residual", "60%"],
            ["--cheap-answer-quantile", "5"],
            ["--max-repair-span", "0"],
            ["--max-repair-span", "16385"],
            ["--delay-per-percent", "soon"],
            ["--expect-loss", "95%"],
        ] {
            assert!(parse(&args).is_err(), "{args:?} accepted");
        }
    }
}
