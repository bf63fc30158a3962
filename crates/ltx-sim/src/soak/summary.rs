//! The tally of many soak runs.

use super::outcome::SoakOutcome;
use super::outcome::SoakReport;
use super::SoakProtection;
use std::collections::BTreeMap;

/// Counts over many soak runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SoakSummary {
    /// Runs counted.
    pub runs: u64,
    /// Runs that delivered.
    pub delivered: u64,
    /// Runs that ended with an error.
    pub errors: u64,
    /// Runs that read wrong data.
    pub wrong: u64,
    /// Runs that hung.
    pub hangs: u64,
    /// Errors by their reason (see [`SoakOutcome::reason`]).
    pub errors_by_reason: BTreeMap<String, u64>,
    /// Errors on paths without any outage, by reason: these are the ones
    /// no outage explains.
    pub errors_without_outage: BTreeMap<String, u64>,
    /// Seeds of the wrong and hung runs, in the order met.
    pub failing_seeds: Vec<u64>,
    /// Bytes delivered over all runs.
    pub bytes_delivered: u64,
    /// Virtual seconds simulated over all runs.
    pub simulated_s: f64,
    /// Completion / ideal of each delivered run of at least 64 kB.
    pub ratios: Vec<f64>,
    /// The runs of each protection, and what their corrupted packets came to.
    pub by_protection: BTreeMap<SoakProtection, ProtectionCounts>,
}

/// Counts over the soak runs of one protection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtectionCounts {
    /// Runs counted.
    pub runs: u64,
    /// Runs that delivered.
    pub delivered: u64,
    /// Packets the links corrupted.
    pub corrupted: u64,
    /// Packets the ends refused as unauthentic.
    pub unauthentic: u64,
}

impl SoakSummary {
    /// Counts one run.
    pub fn add(&mut self, report: &SoakReport) {
        self.runs += 1;
        self.simulated_s += report.simulated.as_secs_f64();
        let counts = self.by_protection.entry(report.protection).or_default();
        counts.runs += 1;
        counts.delivered += u64::from(report.outcome == SoakOutcome::Delivered);
        counts.corrupted += report.corrupted;
        counts.unauthentic += report.unauthentic;
        match &report.outcome {
            SoakOutcome::Delivered => {
                self.delivered += 1;
                self.bytes_delivered += report.read;
                if let Some(completion) = report.completion {
                    if report.size >= 64_000 {
                        self.ratios
                            .push(completion.as_secs_f64() / report.ideal.as_secs_f64());
                    }
                }
            }
            SoakOutcome::Error { .. } => {
                self.errors += 1;
                let reason = report.outcome.reason().unwrap_or_default();
                if !report.outage {
                    *self
                        .errors_without_outage
                        .entry(reason.clone())
                        .or_default() += 1;
                }
                *self.errors_by_reason.entry(reason).or_default() += 1;
            }
            SoakOutcome::Wrong(_) => {
                self.wrong += 1;
                self.failing_seeds.push(report.seed);
            }
            SoakOutcome::Hang(_) => {
                self.hangs += 1;
                self.failing_seeds.push(report.seed);
            }
        }
    }

    /// Whether no run read wrong data or hung.
    pub fn passed(&self) -> bool {
        self.wrong == 0 && self.hangs == 0
    }
}
