//! What the runs of a cell add up to: each system's median time (∞ when
//! most runs did not complete), and per cell the ratio of ltx's median to
//! the best peer's, with the targets of the suite.

use std::collections::BTreeMap;

use ltx_cli::live::round;
use serde_json::{json, Value};

use super::super::measure::median;
use super::cells::{Cell, Table};
use super::record::{number, Run};

/// ltx's median at loss ≥ [`LOSSY`] must be at most this times the best
/// peer's.
pub(crate) const LOSSY_TARGET: f64 = 0.5;
/// Loss rates from which [`LOSSY_TARGET`] applies.
pub(crate) const LOSSY: f64 = 0.05;
/// ltx's median at 0 % loss must be at most this times the best of kernel
/// Cubic and BBR.
pub(crate) const LOSSLESS_TARGET: f64 = 1.05;
/// The emulated and simulated medians of ltx must agree within this.
pub(crate) const FIDELITY_TOLERANCE: f64 = 0.15;

/// A cell's identity, for grouping runs: table, loss and burst in
/// thousandths.
pub(crate) type CellKey = (Table, u64, u64);

/// The key of `cell`.
pub(crate) fn key(cell: &Cell) -> CellKey {
    (
        cell.table,
        (cell.loss * 1000.0).round() as u64,
        (cell.burst * 1000.0).round() as u64,
    )
}

/// One system's runs on one cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tally {
    /// Runs made.
    pub(crate) ran: usize,
    /// Of those, completed intact.
    pub(crate) completed: usize,
    /// Median time over the runs made, a run that did not complete
    /// counting as ∞; `None` if no run was made. `f64::INFINITY` is ∞.
    pub(crate) median_s: Option<f64>,
    /// Median goodput of the completed runs, bits per second.
    pub(crate) goodput_bps: Option<f64>,
    /// Median of the completed runs' p95 one-way delay: half the round
    /// trip plus the bottleneck's p95 queueing delay, ms.
    pub(crate) delay_p95_ms: Option<f64>,
}

impl Tally {
    /// Adds up `runs`.
    pub(crate) fn of(runs: &[&Run]) -> Tally {
        let made: Vec<&&Run> = runs.iter().filter(|r| r.ran).collect();
        let times: Vec<f64> = made
            .iter()
            .map(|r| r.time().unwrap_or(f64::INFINITY))
            .collect();
        let done: Vec<&&&Run> = made.iter().filter(|r| r.time().is_some()).collect();
        let goodputs: Vec<f64> = done.iter().filter_map(|r| r.goodput_bps).collect();
        let delays: Vec<f64> = done
            .iter()
            .filter_map(|r| {
                r.queue_delay_p95_ms
                    .map(|q| q + r.cell.rtt.as_secs_f64() * 1e3 / 2.0)
            })
            .collect();
        Tally {
            ran: made.len(),
            completed: done.len(),
            median_s: median(&times),
            goodput_bps: median(&goodputs),
            delay_p95_ms: median(&delays),
        }
    }

    /// The median if it is finite.
    pub(crate) fn finite(&self) -> Option<f64> {
        self.median_s.filter(|s| s.is_finite())
    }
}

/// Runs grouped by cell, then by system.
pub(crate) fn group(runs: &[Run]) -> BTreeMap<CellKey, BTreeMap<&'static str, Vec<&Run>>> {
    let mut cells: BTreeMap<CellKey, BTreeMap<&'static str, Vec<&Run>>> = BTreeMap::new();
    for run in runs {
        cells
            .entry(key(&run.cell))
            .or_default()
            .entry(run.system)
            .or_default()
            .push(run);
    }
    cells
}

/// The summary line of one cell, from its runs by system.
pub(crate) fn cell_summary(cell: &Cell, systems: &BTreeMap<&'static str, Vec<&Run>>) -> Value {
    let tallies: BTreeMap<&str, Tally> = systems
        .iter()
        .map(|(&name, runs)| (name, Tally::of(runs)))
        .collect();
    let ltx = tallies.get("ltx").copied();
    // ltx told the rate or resuming is ltx too, not a peer.
    let best_peer = best(&tallies, |name| !name.starts_with("ltx"));
    let best_tcp = best(&tallies, |name| name == "tcp-cubic" || name == "tcp-bbr");
    let ltx_median = ltx.and_then(|t| t.median_s);
    let ratio = |peer: Option<(&str, f64)>| match (ltx_median, peer) {
        (Some(l), Some((_, p))) if l.is_finite() && p.is_finite() => Some(l / p),
        (Some(l), Some(_)) if l.is_finite() => Some(0.0),
        _ => None,
    };
    let sims: Vec<f64> = systems
        .get("ltx")
        .map(|runs| runs.iter().filter_map(|r| r.sim_s).collect())
        .unwrap_or_default();
    let sim_median = median(&sims);
    let emu_over_sim = match (ltx.and_then(|t| t.finite()), sim_median) {
        (Some(e), Some(s)) => Some(e / s),
        _ => None,
    };
    let ltx_all_done = ltx.is_some_and(|t| t.ran > 0 && t.completed == t.ran);
    let (target, peer_ratio, peer) = if cell.loss == 0.0 {
        (LOSSLESS_TARGET, ratio(best_tcp), best_tcp)
    } else {
        (LOSSY_TARGET, ratio(best_peer), best_peer)
    };
    let applies = cell.loss == 0.0 || cell.loss >= LOSSY;
    let speed_met = match (applies, peer) {
        (false, _) => None,
        (true, None) => None,
        (true, Some(_)) => Some(peer_ratio.is_some_and(|r| r <= target)),
    };
    let fidelity_met = emu_over_sim.map(|r| (r - 1.0).abs() <= FIDELITY_TOLERANCE);
    let shown = |m: Option<f64>| {
        m.map(|s| {
            if s.is_finite() {
                json!(round(s, 4))
            } else {
                json!("inf")
            }
        })
    };
    json!({
        "summary": "cell",
        "scenario": cell.table.name(),
        "rate_mbit": number(cell.rate_bps as f64 / 1e6),
        "rtt_ms": number(cell.rtt.as_secs_f64() * 1e3),
        "loss": number(cell.loss),
        "burst": number(cell.burst),
        "size_bytes": cell.size,
        "ideal_s": round(cell.ideal().as_secs_f64(), 4),
        "ltx_median_s": shown(ltx_median),
        "ltx_completed": ltx.map(|t| t.completed),
        "ltx_runs": ltx.map(|t| t.ran),
        "peer": peer.map(|(name, _)| name),
        "peer_median_s": shown(peer.map(|(_, m)| m)),
        "ltx_over_peer": peer_ratio.map(|r| round(r, 4)),
        "target_ratio": target,
        "speed_target_met": speed_met,
        "ltx_completes_all": ltx_all_done,
        "sim_median_s": sim_median.map(|s| round(s, 4)),
        "emu_over_sim": emu_over_sim.map(|r| round(r, 4)),
        "fidelity_target_met": fidelity_met,
        "medians_s": tallies
            .iter()
            .map(|(name, t)| ((*name).to_owned(), shown(t.median_s).unwrap_or(Value::Null)))
            .collect::<serde_json::Map<String, Value>>(),
    })
}

/// The least median among the systems `chosen` picks that ran (∞ if none
/// of them completed); `None` if none ran.
fn best<'a>(
    tallies: &BTreeMap<&'a str, Tally>,
    chosen: impl Fn(&str) -> bool,
) -> Option<(&'a str, f64)> {
    tallies
        .iter()
        .filter(|(name, _)| chosen(name))
        .filter_map(|(&name, tally)| tally.median_s.map(|m| (name, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::super::cells::quick;
    use super::*;

    fn run(system: &'static str, loss: f64, time: Option<f64>) -> Run {
        let mut cell = quick()[1];
        cell.loss = loss;
        let mut run = Run::not_run(cell, system, 1, 10.0, String::new());
        run.ran = true;
        run.completed = time.is_some();
        run.verified = time.is_some();
        run.completion_s = time;
        run
    }

    /// Two of three runs done: the median is the slower of the two; one
    /// of three: ∞.
    #[test]
    fn a_run_that_did_not_complete_counts_as_infinitely_long() {
        let two = [
            run("ltx", 0.1, Some(1.0)),
            run("ltx", 0.1, Some(3.0)),
            run("ltx", 0.1, None),
        ];
        let tally = Tally::of(&two.iter().collect::<Vec<_>>());
        assert_eq!(
            (tally.ran, tally.completed, tally.median_s),
            (3, 2, Some(3.0))
        );
        let one = [
            run("ltx", 0.1, Some(1.0)),
            run("ltx", 0.1, None),
            run("ltx", 0.1, None),
        ];
        let tally = Tally::of(&one.iter().collect::<Vec<_>>());
        assert_eq!(tally.median_s, Some(f64::INFINITY));
        assert_eq!(tally.finite(), None);
    }

    /// At 10 % loss ltx at 1 s against BBR at 2.5 s meets the 0.5 target;
    /// against a peer at 1.9 s it would not.
    #[test]
    fn the_lossy_target_compares_ltx_with_the_best_peer() {
        let verdict = |peer_s: f64| {
            let runs = [
                run("ltx", 0.1, Some(1.0)),
                run("tcp-bbr", 0.1, Some(peer_s)),
                run("tcp-cubic", 0.1, None),
            ];
            let grouped = group(&runs);
            let (_, systems) = grouped.iter().next().unwrap();
            cell_summary(&runs[0].cell, systems)
        };
        let met = verdict(2.5);
        assert_eq!(met["peer"], "tcp-bbr");
        assert_eq!(met["ltx_over_peer"], 0.4);
        assert_eq!(met["speed_target_met"], true);
        assert_eq!(verdict(1.9)["speed_target_met"], false);
    }

    /// Without loss the comparison is with kernel TCP only, at 1.05.
    #[test]
    fn the_lossless_target_compares_ltx_with_kernel_tcp() {
        let runs = [
            run("ltx", 0.0, Some(1.04)),
            run("tcp-cubic", 0.0, Some(1.0)),
            run("kcp-fec", 0.0, Some(0.5)),
        ];
        let grouped = group(&runs);
        let (_, systems) = grouped.iter().next().unwrap();
        let line = cell_summary(&runs[0].cell, systems);
        assert_eq!(line["peer"], "tcp-cubic");
        assert_eq!(line["speed_target_met"], true);
        assert_eq!(line["medians_s"]["kcp-fec"], 0.5);
    }
}
