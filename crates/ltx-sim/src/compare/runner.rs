//! Running the plan's scenarios on worker threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::plan::{Plan, RunSpec};
use crate::scenario::{ScenarioError, ScenarioResult};

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Which cell, preset and seed.
    pub spec: RunSpec,
    /// Seconds until the slowest flow read its last byte; `None`: it did
    /// not within the cell's bound.
    pub completion_s: Option<f64>,
    /// The ideal completion T* of one flow, seconds.
    pub ideal_s: f64,
    /// `completion_s / ideal_s`.
    pub ratio: Option<f64>,
    /// All flows' bytes over the slowest flow's time, bits/s (0 if a flow
    /// did not complete).
    pub goodput_bps: f64,
    /// Bytes the senders put on the wire / bytes delivered.
    pub overhead: f64,
    /// Median delivery delay less the one-way delay, ms.
    pub delay_p50_ms: f64,
    /// 99th percentile of it, ms.
    pub delay_p99_ms: f64,
    /// 95th percentile of the bottleneck's queueing delay, ms.
    pub queue_delay_p95_ms: f64,
    /// Packets the bottleneck's queue dropped (overflow or AQM) / packets
    /// offered to it.
    pub queue_loss: f64,
    /// Packets the channel lost at random / packets offered to the
    /// bottleneck: the loss rate this run's channel dealt, which differs
    /// from the cell's rate by chance (most for long bursts and short
    /// transfers).
    pub random_loss: f64,
    /// Jain's index over the flows' goodputs (several flows only).
    pub jain: Option<f64>,
    /// Whether every flow delivered exactly the bytes sent.
    pub verified: bool,
    /// The first flow's error, when one did not complete.
    pub error: Option<String>,
    /// Simulated seconds.
    pub simulated_s: f64,
}

impl Run {
    /// The figures of `result`, the outcome of `spec`.
    pub fn of(spec: RunSpec, result: &ScenarioResult) -> Run {
        Run {
            spec,
            completion_s: result.completion_s,
            ideal_s: result.ideal_s,
            ratio: result.ratio,
            goodput_bps: result.goodput_bps,
            overhead: result.overhead,
            delay_p50_ms: result.delay_p50_ms,
            delay_p99_ms: result.delay_p99_ms,
            queue_delay_p95_ms: result.queue_delay_p95_ms,
            queue_loss: result.queue_loss,
            random_loss: result.random_loss,
            jain: result.jain,
            verified: result.verified,
            error: result.flows.iter().find_map(|f| f.error.clone()),
            simulated_s: result.simulated_s,
        }
    }

    /// Whether every flow finished within the bound.
    pub fn completed(&self) -> bool {
        self.completion_s.is_some()
    }
}

/// Runs one run of `plan`.
pub fn run_one(plan: &Plan, spec: RunSpec) -> Result<Run, ScenarioError> {
    let scenario = plan.scenario(spec);
    Ok(Run::of(spec, &scenario.run()?))
}

/// Runs every run of `plan` on `threads` threads and returns them in the
/// plan's order ([`Plan::runs`]). `done` sees each run on the calling
/// thread as soon as it finishes, with the number finished so far.
///
/// The larger transfers start first, so that one long run does not keep
/// the others' threads waiting at the end.
pub fn run_all(
    plan: &Plan,
    threads: usize,
    mut done: impl FnMut(usize, &Run),
) -> Result<Vec<Run>, ScenarioError> {
    let specs = plan.runs();
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by_key(|&i| {
        let cell = &plan.cells[specs[i].cell];
        std::cmp::Reverse(cell.size.saturating_mul(cell.flows as u64))
    });
    let next = AtomicUsize::new(0);
    let mut runs: Vec<Option<Run>> = vec![None; specs.len()];
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel();
        for _ in 0..threads.max(1) {
            let sender = sender.clone();
            let (next, order, specs) = (&next, &order, &specs);
            scope.spawn(move || {
                while let Some(&index) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let outcome = run_one(plan, specs[index]);
                    let failed = outcome.is_err();
                    if sender.send((index, outcome)).is_err() || failed {
                        // The caller stops at the first error; so do the
                        // others.
                        next.store(usize::MAX / 2, Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (count, (index, outcome)) in receiver.into_iter().enumerate() {
            let run = outcome?;
            done(count + 1, &run);
            runs[index] = Some(run);
        }
        Ok::<(), ScenarioError>(())
    })?;
    Ok(runs.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use ltx_presets::Profile;

    use super::super::plan::{Plan, Section};
    use super::*;

    #[test]
    fn the_figures_do_not_depend_on_the_threads() {
        let plan = Plan::quick(&[Section::Web], vec![Profile::Ltx, Profile::Cubic], 2);
        let mut seen = 0;
        let one = run_all(&plan, 1, |count, _| seen = count).expect("runs");
        let three = run_all(&plan, 3, |_, _| {}).expect("runs");
        assert_eq!(seen, plan.runs().len());
        assert_eq!(one.len(), plan.runs().len());
        for (a, b) in one.iter().zip(&three) {
            assert_eq!(a.spec, b.spec);
            assert_eq!(a.completion_s, b.completion_s, "{:?}", a.spec);
            assert_eq!(a.overhead, b.overhead, "{:?}", a.spec);
        }
        assert_eq!(
            one.iter().map(|r| r.spec).collect::<Vec<_>>(),
            plan.runs(),
            "in the plan's order"
        );
    }
}
