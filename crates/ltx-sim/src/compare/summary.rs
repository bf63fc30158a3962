//! Medians per cell and preset, and the targets of the comparison,
//! computed from the runs.

use std::collections::BTreeMap;

use ltx_presets::Profile;

use super::plan::{Cell, Plan, Section};
use super::runner::Run;
use crate::metrics::percentile;

/// ltx may be this much slower than the best preset of a cell.
const WITHIN_BEST: f64 = 1.05;
/// From this loss rate on, ltx should be the fastest preset.
const HEAVY_LOSS: f64 = 0.2;
/// Largest T/T* of ltx in the 100 MB long-delay table.
const LONG_100MB_RATIO: f64 = 1.15;
/// Largest T/T* of ltx in the 10 MB tables.
const TEN_MB_RATIO: f64 = 1.6;
/// Wire overhead allowed at loss `p` by the earlier line: this / (1 − p).
const OVERHEAD_LOSSY: f64 = 1.05;
/// Wire overhead allowed without loss.
const OVERHEAD_CLEAN: f64 = 1.02;
/// Largest `overhead · (1 − q)` of a lossy cell, `q` the loss its
/// channels dealt.
const DEALT_CELL: f64 = 1.10;
/// Largest median of `overhead · (1 − q)` over the cells of a table.
const DEALT_TABLE: f64 = 1.06;
/// Least Jain index on the shared bottleneck.
const SHARED_JAIN: f64 = 0.95;
/// Largest p95 queueing delay on the shared bottleneck, in RTTs.
const SHARED_QUEUE_RTT: f64 = 0.5;
/// Largest queue loss on the drop-tail shared bottleneck.
const SHARED_QUEUE_LOSS: f64 = 0.005;

/// The medians of one preset's runs of one cell.
#[derive(Debug, Clone)]
pub struct CellSummary {
    /// Index of the cell in the plan.
    pub cell: usize,
    /// The preset.
    pub profile: Profile,
    /// Runs (seeds).
    pub runs: usize,
    /// Runs that finished within the bound.
    pub completed: usize,
    /// Runs that delivered exactly the bytes sent.
    pub verified: usize,
    /// Median completion time, seconds; a run that did not complete counts
    /// as infinitely long, so this is infinite when most did not.
    pub completion_s: f64,
    /// Median T/T*, infinite likewise.
    pub ratio: f64,
    /// Median goodput over all runs (0 for a run that did not complete),
    /// bits/s.
    pub goodput_bps: f64,
    /// Median wire overhead of the completed runs.
    pub overhead: Option<f64>,
    /// Median, over the completed runs, of the wire overhead scaled by the
    /// fraction of packets the run's channel let through, `overhead ·
    /// (1 − random_loss)`: the overhead with the channel's luck taken out
    /// (1 plus the headers for a code that wastes nothing).
    pub overhead_dealt: Option<f64>,
    /// Median p99 delivery delay of the completed runs, ms.
    pub delay_p99_ms: Option<f64>,
    /// Median p95 queueing delay at the bottleneck, ms.
    pub queue_delay_p95_ms: f64,
    /// Median queue loss.
    pub queue_loss: f64,
    /// Median Jain index of the runs that have one.
    pub jain: Option<f64>,
}

/// The median of `values` (nearest rank); `None` if there are none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    percentile(&mut values, 0.5)
}

/// The summary of every cell and preset of `plan` that has runs, in the
/// plan's order.
pub fn summarize(plan: &Plan, runs: &[Run]) -> Vec<CellSummary> {
    let mut grouped: BTreeMap<(usize, usize), Vec<&Run>> = BTreeMap::new();
    for run in runs {
        let profile = plan
            .profiles
            .iter()
            .position(|&p| p == run.spec.profile)
            .unwrap_or(usize::MAX);
        grouped
            .entry((run.spec.cell, profile))
            .or_default()
            .push(run);
    }
    grouped
        .into_values()
        .map(|runs| {
            let finished: Vec<&&Run> = runs.iter().filter(|r| r.completed()).collect();
            let time = |r: &&Run| r.completion_s.unwrap_or(f64::INFINITY);
            CellSummary {
                cell: runs[0].spec.cell,
                profile: runs[0].spec.profile,
                runs: runs.len(),
                completed: finished.len(),
                verified: runs.iter().filter(|r| r.verified).count(),
                completion_s: median(runs.iter().map(time).collect()).unwrap_or(f64::INFINITY),
                ratio: median(
                    runs.iter()
                        .map(|r| r.ratio.unwrap_or(f64::INFINITY))
                        .collect(),
                )
                .unwrap_or(f64::INFINITY),
                goodput_bps: median(runs.iter().map(|r| r.goodput_bps).collect()).unwrap_or(0.0),
                overhead: median(finished.iter().map(|r| r.overhead).collect()),
                overhead_dealt: median(
                    finished
                        .iter()
                        .map(|r| r.overhead * (1.0 - r.random_loss))
                        .collect(),
                ),
                delay_p99_ms: median(finished.iter().map(|r| r.delay_p99_ms).collect()),
                queue_delay_p95_ms: median(runs.iter().map(|r| r.queue_delay_p95_ms).collect())
                    .unwrap_or(0.0),
                queue_loss: median(runs.iter().map(|r| r.queue_loss).collect()).unwrap_or(0.0),
                jain: median(runs.iter().filter_map(|r| r.jain).collect()),
            }
        })
        .collect()
}

/// One target of the comparison and whether the runs meet it.
#[derive(Debug, Clone)]
pub struct Target {
    /// What is asked, in words.
    pub name: String,
    /// Cells (or cell and measure pairs) it was checked on.
    pub checked: usize,
    /// Those where it does not hold, each with the figures that fail.
    pub failures: Vec<String>,
}

impl Target {
    /// Whether it holds everywhere it was checked; `None` if no run
    /// checked it.
    pub fn holds(&self) -> Option<bool> {
        (self.checked > 0).then_some(self.failures.is_empty())
    }
}

/// The best (smallest) median T/T* of a cell and the preset with it; on a
/// tie, the preset listed first.
pub fn best(summaries: &[&CellSummary]) -> Option<(Profile, f64)> {
    summaries
        .iter()
        .filter(|s| s.ratio.is_finite())
        .min_by(|a, b| a.ratio.total_cmp(&b.ratio))
        .map(|s| (s.profile, s.ratio))
}

/// The targets of the comparison for the `ltx` preset, checked on the
/// summaries of `plan`'s runs: its speed against the other presets, its
/// T/T*, its wire overhead, and on the shared bottleneck fairness,
/// queueing delay and queue loss, with the bounds of the constants above.
pub fn targets(plan: &Plan, summaries: &[CellSummary]) -> Vec<Target> {
    let mut by_cell: BTreeMap<usize, Vec<&CellSummary>> = BTreeMap::new();
    for s in summaries {
        by_cell.entry(s.cell).or_default().push(s);
    }
    let mut targets = Targets::new();
    let mut dealt_by_table: BTreeMap<Section, Vec<f64>> = BTreeMap::new();
    for (&index, cell_summaries) in &by_cell {
        let cell = &plan.cells[index];
        let Some(ltx) = cell_summaries.iter().find(|s| s.profile == Profile::Ltx) else {
            continue;
        };
        targets.check_speed(cell, ltx, cell_summaries);
        targets.check_size(cell, ltx);
        if cell.flows == 1 {
            targets.check_overhead(cell, ltx);
            if let Some(dealt) = ltx.overhead_dealt {
                dealt_by_table.entry(cell.section).or_default().push(dealt);
            }
        } else {
            targets.check_shared(cell, ltx);
        }
    }
    for (section, dealt) in dealt_by_table {
        if let Some(median) = median(dealt) {
            targets.dealt_table.check(median <= DEALT_TABLE, || {
                format!(
                    "{}: median overhead × (1 − q) {median:.4} > {DEALT_TABLE:.2}",
                    section.name()
                )
            });
        }
    }
    targets.into_list()
}

/// Every target, as the cells are checked against them.
struct Targets {
    within_best: Target,
    fastest: Target,
    long_100mb: Target,
    ten_mb: Target,
    overhead: Target,
    overhead_dealt: Target,
    dealt_table: Target,
    jain: Target,
    queue_delay: Target,
    queue_loss: Target,
}

impl Targets {
    fn new() -> Targets {
        Targets {
            within_best: Target::new(
                "ltx within 5 % of the best preset (median T/T*), seed 000 tables and seed 004 sweeps",
            ),
            fastest: Target::new("ltx the fastest preset at ≥ 20 % loss"),
            long_100mb: Target::new("ltx T/T* ≤ 1.15, long delay, 100 MB"),
            ten_mb: Target::new("ltx T/T* ≤ 1.6, 10 MB (both seed 000 tables)"),
            overhead: Target::new(
                "(the earlier line, replaced by the two below) ltx overhead ≤ 1.05/(1−p), ≤ 1.02 at 0 %",
            ),
            overhead_dealt: Target::new(
                "ltx overhead × (1 − q), q the loss each run's channel dealt: ≤ 1.10 in every cell, \
                 ≤ 1.02 at 0 %",
            ),
            dealt_table: Target::new(
                "ltx overhead × (1 − q): the median of each table's cells ≤ 1.06",
            ),
            jain: Target::new("shared bottleneck: ltx jain ≥ 0.95"),
            queue_delay: Target::new("shared bottleneck: ltx p95 queueing delay ≤ 0.5 RTT"),
            queue_loss: Target::new(
                "shared bottleneck: ltx queue loss ≤ 0.5 % (drop-tail), 0 with ECN",
            ),
        }
    }

    /// ltx against the other presets of a swept cell: within 5 % of the
    /// best, and the fastest at heavy loss.
    fn check_speed(&mut self, cell: &Cell, ltx: &CellSummary, cell_summaries: &[&CellSummary]) {
        let label = cell.label();
        let others: Vec<&CellSummary> = cell_summaries
            .iter()
            .copied()
            .filter(|s| s.profile != Profile::Ltx)
            .collect();
        let swept = cell.section.is_seed_table()
            || matches!(cell.section, Section::DelaySweep | Section::LossSweep);
        if !swept || others.is_empty() {
            return;
        }
        if let Some((profile, ratio)) = best(cell_summaries) {
            self.within_best
                .check(ltx.ratio <= ratio * WITHIN_BEST, || {
                    format!(
                        "{label}: ltx {} against {profile} {ratio:.3}",
                        show(ltx.ratio)
                    )
                });
        }
        if cell.loss >= HEAVY_LOSS {
            let faster: Vec<String> = others
                .iter()
                .filter(|s| s.ratio < ltx.ratio)
                .map(|s| format!("{} {}", s.profile, show(s.ratio)))
                .collect();
            self.fastest.check(faster.is_empty(), || {
                format!(
                    "{label}: ltx {}, faster: {}",
                    show(ltx.ratio),
                    faster.join(", ")
                )
            });
        }
    }

    /// ltx's T/T* on the full matrix's transfers (not the quick check's
    /// small ones).
    fn check_size(&mut self, cell: &Cell, ltx: &CellSummary) {
        let label = cell.label();
        match cell.section {
            Section::LongDelay100Mb if cell.size == 100_000_000 => {
                self.long_100mb.check(ltx.ratio <= LONG_100MB_RATIO, || {
                    format!("{label}: {}", show(ltx.ratio))
                })
            }
            Section::Correlated | Section::LongDelay if cell.size == 10_000_000 => {
                self.ten_mb.check(ltx.ratio <= TEN_MB_RATIO, || {
                    format!("{label}: {}", show(ltx.ratio))
                })
            }
            _ => {}
        }
    }

    /// ltx's wire bytes per byte delivered, against the cell's nominal loss
    /// (the earlier line, which a run's luck alone can break) and against
    /// the loss its channels dealt.
    fn check_overhead(&mut self, cell: &Cell, ltx: &CellSummary) {
        let label = cell.label();
        if let Some(measured) = ltx.overhead {
            let allowed = if cell.loss == 0.0 {
                OVERHEAD_CLEAN
            } else {
                OVERHEAD_LOSSY / (1.0 - cell.loss)
            };
            self.overhead.check(measured <= allowed, || {
                format!("{label}: {measured:.4} > {allowed:.4}")
            });
        }
        if let Some(dealt) = ltx.overhead_dealt {
            let allowed = if cell.loss == 0.0 {
                OVERHEAD_CLEAN
            } else {
                DEALT_CELL
            };
            self.overhead_dealt.check(dealt <= allowed, || {
                format!("{label}: overhead × (1 − q) {dealt:.4} > {allowed:.2}")
            });
        }
    }

    /// ltx flows sharing a bottleneck: fairness, queueing delay and queue
    /// loss.
    fn check_shared(&mut self, cell: &Cell, ltx: &CellSummary) {
        let label = cell.label();
        let rtt_ms = cell.rtt.as_secs_f64() * 1000.0;
        match ltx.jain {
            Some(j) => self
                .jain
                .check(j >= SHARED_JAIN, || format!("{label}: {j:.3}")),
            None => self.jain.check(false, || format!("{label}: no index")),
        }
        self.queue_delay
            .check(ltx.queue_delay_p95_ms <= SHARED_QUEUE_RTT * rtt_ms, || {
                format!(
                    "{label}: {:.1} ms = {:.2} RTT",
                    ltx.queue_delay_p95_ms,
                    ltx.queue_delay_p95_ms / rtt_ms
                )
            });
        let allowed = if cell.ecn { 0.0 } else { SHARED_QUEUE_LOSS };
        self.queue_loss.check(ltx.queue_loss <= allowed, || {
            format!("{label}: {:.3} %", ltx.queue_loss * 100.0)
        });
    }

    fn into_list(self) -> Vec<Target> {
        vec![
            self.within_best,
            self.fastest,
            self.long_100mb,
            self.ten_mb,
            self.overhead,
            self.overhead_dealt,
            self.dealt_table,
            self.jain,
            self.queue_delay,
            self.queue_loss,
        ]
    }
}

impl Target {
    fn new(name: &str) -> Target {
        Target {
            name: name.to_owned(),
            checked: 0,
            failures: Vec::new(),
        }
    }

    fn check(&mut self, holds: bool, failure: impl FnOnce() -> String) {
        self.checked += 1;
        if !holds {
            self.failures.push(failure());
        }
    }
}

/// A ratio, `∞` when infinite.
fn show(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.3}")
    } else {
        "∞".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan::RunSpec;
    use super::*;

    fn run(cell: usize, profile: Profile, seed: u64, ratio: Option<f64>) -> Run {
        Run {
            spec: RunSpec {
                cell,
                profile,
                seed,
            },
            completion_s: ratio.map(|r| r * 2.0),
            ideal_s: 2.0,
            ratio,
            goodput_bps: ratio.map_or(0.0, |r| 1e6 / r),
            overhead: 1.01,
            delay_p50_ms: 1.0,
            delay_p99_ms: 2.0,
            queue_delay_p95_ms: 3.0,
            queue_loss: 0.0,
            random_loss: 0.0,
            jain: None,
            verified: ratio.is_some(),
            error: None,
            simulated_s: 1.0,
        }
    }

    fn plan() -> Plan {
        Plan::full(
            &[Section::LongDelay],
            vec![Profile::Ltx, Profile::Cubic],
            3,
            1,
        )
    }

    #[test]
    fn a_run_that_did_not_complete_counts_as_infinitely_long() {
        let runs = [
            run(0, Profile::Cubic, 1, None),
            run(0, Profile::Cubic, 2, None),
            run(0, Profile::Cubic, 3, Some(1.5)),
            run(0, Profile::Ltx, 1, Some(1.3)),
            run(0, Profile::Ltx, 2, None),
            run(0, Profile::Ltx, 3, Some(1.2)),
        ];
        let summaries = summarize(&plan(), &runs);
        assert_eq!(summaries.len(), 2);
        let ltx = summaries
            .iter()
            .find(|s| s.profile == Profile::Ltx)
            .unwrap();
        let cubic = summaries
            .iter()
            .find(|s| s.profile == Profile::Cubic)
            .unwrap();
        assert_eq!(ltx.ratio, 1.3);
        assert_eq!((ltx.completed, ltx.verified), (2, 2));
        assert_eq!(cubic.ratio, f64::INFINITY);
        assert_eq!(cubic.overhead, Some(1.01), "only completed runs count");
        assert_eq!(
            best(&summaries.iter().collect::<Vec<_>>()),
            Some((Profile::Ltx, 1.3))
        );
    }

    /// Targets of one cell (0 % loss, long delay, 10 MB) where ltx's
    /// median is `ltx` and cubic's `cubic`.
    fn within_best(ltx: f64, cubic: f64) -> Option<bool> {
        let runs: Vec<Run> = [(Profile::Ltx, ltx), (Profile::Cubic, cubic)]
            .into_iter()
            .flat_map(|(p, r)| (1..=3).map(move |seed| run(0, p, seed, Some(r))))
            .collect();
        let plan = plan();
        targets(&plan, &summarize(&plan, &runs))[0].holds()
    }

    #[test]
    fn ltx_may_be_five_percent_slower_than_the_best_and_no_more() {
        assert_eq!(within_best(1.0499, 1.0), Some(true));
        assert_eq!(within_best(1.0501, 1.0), Some(false));
        assert_eq!(within_best(1.0, 2.0), Some(true));
    }

    #[test]
    fn a_target_without_cells_neither_holds_nor_fails() {
        let plan = plan();
        let runs: Vec<Run> = (1..=3)
            .map(|s| run(0, Profile::Ltx, s, Some(1.2)))
            .collect();
        let targets = targets(&plan, &summarize(&plan, &runs));
        let shared = targets.iter().find(|t| t.name.contains("jain")).unwrap();
        assert_eq!(shared.holds(), None);
        let ten_mb = targets.iter().find(|t| t.name.contains("10 MB")).unwrap();
        assert_eq!(ten_mb.holds(), Some(true));
        // The overhead at 0 %: 1.01 ≤ 1.02.
        let overhead = targets
            .iter()
            .find(|t| t.name.contains("overhead"))
            .unwrap();
        assert_eq!((overhead.checked, overhead.holds()), (1, Some(true)));
    }

    /// A channel that dealt 22 % where the cell says 20 %: 1.33 bytes per
    /// byte is above 1.05/0.8 = 1.3125, and 1.33 · 0.78 = 1.037 within both
    /// bounds of the loss dealt; 1.36 · 0.78 = 1.061 within the cell's 1.10
    /// but not the table's 1.06 (the table has this one cell); 1.42 · 0.78
    /// = 1.108 within neither.
    #[test]
    fn the_overhead_against_the_loss_dealt_takes_the_channels_luck_out() {
        let plan = plan();
        let cell = plan
            .cells
            .iter()
            .position(|c| c.loss == 0.2 && c.burst == 1.0)
            .unwrap();
        let lines = |overhead: f64| {
            let runs: Vec<Run> = (1..=3)
                .map(|seed| Run {
                    overhead,
                    random_loss: 0.22,
                    ..run(cell, Profile::Ltx, seed, Some(1.2))
                })
                .collect();
            let targets = targets(&plan, &summarize(&plan, &runs));
            let line = |name: &str| {
                targets
                    .iter()
                    .find(|t| t.name.contains(name))
                    .and_then(Target::holds)
            };
            (line("1.05/(1−p)"), line("every cell"), line("each table"))
        };
        assert_eq!(lines(1.30), (Some(true), Some(true), Some(true)));
        assert_eq!(lines(1.33), (Some(false), Some(true), Some(true)));
        assert_eq!(lines(1.36), (Some(false), Some(true), Some(false)));
        assert_eq!(lines(1.42), (Some(false), Some(false), Some(false)));
    }
}
