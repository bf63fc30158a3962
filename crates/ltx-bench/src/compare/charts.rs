//! The comparison's plots: transfer time against loss rate per loss
//! pattern (seed 000's tables) and per RTT (seed 004's loss sweep),
//! against RTT per loss rate (the delay sweep), and throughput against
//! p95 queueing delay on the shared bottleneck, one point per preset.

use std::path::Path;

use ltx_presets::Profile;
use ltx_sim::compare::{CellSummary, Plan, Section};

use crate::plots::{self, Frame, Series};

/// Draws every plot the plan's sections have into `dir`.
pub(super) fn draw(dir: &Path, plan: &Plan, summaries: &[CellSummary]) -> anyhow::Result<()> {
    plots::load_font()?;
    let names: Vec<&'static str> = Profile::ALL.iter().map(|p| p.name()).collect();
    let mut groups: Vec<(Section, String)> = Vec::new();
    for cell in &plan.cells {
        let key = (cell.section, cell.group());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    for (section, group) in groups {
        let in_group = |s: &&CellSummary| {
            let cell = &plan.cells[s.cell];
            cell.section == section && cell.group() == group
        };
        let slug = slug(&group);
        match section {
            Section::Correlated
            | Section::LongDelay
            | Section::LongDelay100Mb
            | Section::LossSweep => {
                let series = series(summaries.iter().filter(in_group), |s| {
                    plan.cells[s.cell].loss * 100.0
                });
                let title = format!("{section}, {group}: median transfer time (∞ left out)");
                let frame = Frame {
                    title: &title,
                    x: "loss rate (%)",
                    y: "transfer time (s, log)",
                    names: &names,
                };
                plots::log_lines(
                    &dir.join(format!("time-vs-loss-{section}-{slug}")),
                    &frame,
                    &series,
                )?;
            }
            Section::DelaySweep => {
                let series = series(summaries.iter().filter(in_group), |s| {
                    plan.cells[s.cell].rtt.as_secs_f64() * 1000.0
                });
                let title = format!("{section}, {group}: median transfer time (∞ left out)");
                let frame = Frame {
                    title: &title,
                    x: "RTT (ms)",
                    y: "transfer time (s, log)",
                    names: &names,
                };
                plots::log_lines(
                    &dir.join(format!("time-vs-rtt-{section}-{slug}")),
                    &frame,
                    &series,
                )?;
            }
            Section::Shared => {
                let points: Vec<(&'static str, f64, f64)> = summaries
                    .iter()
                    .filter(in_group)
                    .map(|s| (s.profile.name(), s.queue_delay_p95_ms, s.goodput_bps / 1e6))
                    .collect();
                let title = format!("{section}, {group}: goodput and p95 queueing delay (medians)");
                let frame = Frame {
                    title: &title,
                    x: "95th percentile queueing delay (ms)",
                    y: "goodput, all flows (Mbit/s)",
                    names: &names,
                };
                plots::scatter_points(
                    &dir.join(format!("throughput-vs-queue-delay-{section}-{slug}")),
                    &frame,
                    &points,
                )?;
            }
            Section::Web => {}
        }
    }
    Ok(())
}

/// Each preset's finite median completion times against `x`.
fn series<'a>(
    summaries: impl Iterator<Item = &'a CellSummary>,
    x: impl Fn(&CellSummary) -> f64,
) -> Series {
    let mut series = Series::new();
    for s in summaries.filter(|s| s.completion_s.is_finite()) {
        series
            .entry(s.profile.name())
            .or_default()
            .push((x(s), s.completion_s));
    }
    for points in series.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// A group label as a file name part: lowercase, `=`, spaces, `%` and
/// the decimal point (which would read as an extension) turned into plain
/// characters (`E=2` → `e2`, `loss 0.5 %` → `loss-0_5pct`, `RTT 20 ms` →
/// `rtt-20ms`).
fn slug(label: &str) -> String {
    label
        .to_lowercase()
        .replace(" %", "pct")
        .replace(" ms", "ms")
        .replace('=', "")
        .replace('.', "_")
        .replace(", ", "-")
        .replace(' ', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_labels_become_file_names() {
        assert_eq!(slug("E=2"), "e2");
        assert_eq!(slug("uncorrelated"), "uncorrelated");
        assert_eq!(slug("loss 0.5 %"), "loss-0_5pct");
        assert_eq!(slug("RTT 20 ms"), "rtt-20ms");
        assert_eq!(slug("drop-tail"), "drop-tail");
    }
}
