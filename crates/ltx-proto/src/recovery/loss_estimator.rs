//! The path's loss rate and mean loss-burst length, estimated from the fate of
//! every packet the sender sent.
//!
//! Fates arrive by packet number and out of order; the estimator commits a
//! packet number once a report at least [`COMMIT_LAG`] numbers later has
//! arrived, so that run lengths are counted in packet-number order, and
//! corrects its counts for fates reported after the commit. Committed fates
//! feed exponentially weighted counts: `rate = lost / (lost + delivered)`
//! over a window of packets, `burst = lost / runs` over four windows. How
//! and why: `docs/design/loss-estimator.md`.

use std::collections::VecDeque;

/// How many packet numbers past a fate must be reported before it is
/// committed.
pub const COMMIT_LAG: u64 = 32;

/// Delivered packets the estimate assumes before any are seen.
pub const CLEAN_PRIOR: f64 = 8.0;

/// How many packets an expected loss rate
/// ([`TransportConfig::expected_loss`](crate::TransportConfig::expected_loss))
/// weighs as at first; its weight falls with each fate counted, to nothing
/// once this many are.
pub const PRIOR_PACKETS: u64 = 128;

/// How many committed fates are remembered to apply late corrections.
pub const HISTORY: usize = 4096;

/// The largest pending span; a report further ahead forces commits.
const PENDING_CAP: u64 = 1 << 16;

/// The default length of the exponential window, in packets.
pub const DEFAULT_WINDOW: u64 = 2048;

/// What the sender learnt about one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Unknown,
    Delivered,
    Lost,
}

/// A snapshot of the loss estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossEstimate {
    /// The fraction of packets lost, in `[0, 1]`.
    pub rate: f64,
    /// The mean length of a run of consecutive losses, at least 1.
    pub burst: f64,
    /// How many packets the estimate is based on (committed fates).
    pub samples: u64,
}

impl LossEstimate {
    /// The estimate of a path that has lost nothing: rate 0, burst 1.
    pub const CLEAN: Self = Self {
        rate: 0.0,
        burst: 1.0,
        samples: 0,
    };
}

impl Default for LossEstimate {
    fn default() -> Self {
        Self::CLEAN
    }
}

/// An estimator of the loss rate and mean burst length of a path, fed with
/// the fate of each packet the sender sent, source and repair alike.
#[derive(Debug, Clone)]
pub struct LossEstimator {
    /// Counters over `window` packets, for the rate.
    short: Counters,
    /// Counters over `4 × window` packets, for the burst.
    long: Counters,
    /// The lowest packet number not yet committed.
    next_commit: u64,
    /// `pending[i]` is the fate of `next_commit + i`.
    pending: VecDeque<Fate>,
    /// The losses and deliveries in `pending`, kept as it changes: the
    /// estimate is read for every packet sent.
    pending_counts: FateCounts,
    /// `history[history.len() - 1 - i]` is the committed fate of
    /// `next_commit - 1 - i`.
    history: VecDeque<Fate>,
    /// The largest packet number reported so far.
    largest: Option<u64>,
    samples: u64,
    /// Whether the last committed known fate was a loss.
    in_run: bool,
    /// The loss rate assumed before any is measured, if any.
    prior: Option<f64>,
}

/// How many losses and deliveries a run of fates holds.
#[derive(Debug, Clone, Copy, Default)]
struct FateCounts {
    lost: u32,
    delivered: u32,
}

impl FateCounts {
    fn add(&mut self, fate: Fate) {
        match fate {
            Fate::Lost => self.lost += 1,
            Fate::Delivered => self.delivered += 1,
            Fate::Unknown => {}
        }
    }

    fn remove(&mut self, fate: Fate) {
        match fate {
            Fate::Lost => self.lost -= 1,
            Fate::Delivered => self.delivered -= 1,
            Fate::Unknown => {}
        }
    }
}

/// Exponentially weighted counts of committed fates.
#[derive(Debug, Clone)]
struct Counters {
    window: u64,
    decay: f64,
    delivered: f64,
    lost: f64,
    runs: f64,
}

impl Counters {
    fn new(window: u64) -> Self {
        Self {
            window,
            decay: 1.0 - 1.0 / window as f64,
            delivered: 0.0,
            lost: 0.0,
            runs: 0.0,
        }
    }

    /// Counts one fate, `samples` fates having been counted before it.
    fn commit(&mut self, samples: u64, lost: bool, new_run: bool) {
        if samples >= self.window {
            self.delivered *= self.decay;
            self.lost *= self.decay;
            self.runs *= self.decay;
        }
        if lost {
            self.lost += 1.0;
            if new_run {
                self.runs += 1.0;
            }
        } else {
            self.delivered += 1.0;
        }
    }

    /// The weight now of a fate committed `age` commits ago.
    fn weight(&self, samples: u64, age: u64) -> f64 {
        if samples >= self.window {
            self.decay.powi(i32::try_from(age).unwrap_or(i32::MAX))
        } else {
            1.0
        }
    }
}

impl Default for LossEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl LossEstimator {
    /// An estimator over the default window of [`DEFAULT_WINDOW`] packets.
    pub fn new() -> Self {
        Self::with_window(DEFAULT_WINDOW)
    }

    /// An estimator over an exponential window of `window` packets (at least 1).
    pub fn with_window(window: u64) -> Self {
        let window = window.max(1);
        Self {
            short: Counters::new(window),
            long: Counters::new(window.saturating_mul(4)),
            next_commit: 0,
            pending: VecDeque::new(),
            pending_counts: FateCounts::default(),
            history: VecDeque::new(),
            largest: None,
            samples: 0,
            in_run: false,
            prior: None,
        }
    }

    /// Assumes loss rate `rate` (clamped to 0–1) before any is measured:
    /// it counts as [`PRIOR_PACKETS`] packets at first, fewer with each
    /// fate reported, none once that many are.
    pub fn with_prior(mut self, rate: f64) -> Self {
        self.prior = Some(rate.clamp(0.0, 1.0));
        self
    }

    /// Packet `pn` was acknowledged.
    pub fn on_delivered(&mut self, pn: u64) {
        self.report(pn, Fate::Delivered);
    }

    /// Packet `pn` was declared lost by loss detection.
    pub fn on_lost(&mut self, pn: u64) {
        self.report(pn, Fate::Lost);
    }

    /// Packet `pn`, declared lost earlier, was acknowledged after all: it was
    /// reordered, not lost, and counts as delivered.
    pub fn on_spurious(&mut self, pn: u64) {
        self.report(pn, Fate::Delivered);
    }

    /// The current estimate.
    pub fn estimate(&self) -> LossEstimate {
        let Counters {
            mut lost,
            mut delivered,
            ..
        } = self.short;
        // Fates reported but not yet committed count too: early in a
        // connection they are all there is, and the first full flight must
        // not leave unprotected because fewer than COMMIT_LAG packets were
        // sent before it.
        lost += f64::from(self.pending_counts.lost);
        delivered += f64::from(self.pending_counts.delivered);
        let total = lost + delivered;
        // The prior gives way to the fates seen, committed or not (none has
        // decayed yet: the window is far longer than the prior).
        let weight = PRIOR_PACKETS as f64 - total;
        if let Some(prior) = self.prior.filter(|_| weight > 0.0) {
            let rate = ((lost + weight * prior) / (total + weight)).clamp(0.0, 1.0);
            return LossEstimate {
                rate,
                burst: self.burst(),
                samples: self.samples,
            };
        }
        if total <= 0.0 || lost <= 0.0 {
            return LossEstimate {
                samples: self.samples,
                ..LossEstimate::CLEAN
            };
        }
        // A prior of CLEAN_PRIOR delivered packets: a burst in the first
        // dozen packets must not read as a path that loses half of them
        // (and buy a flight's worth of needless repair); it fades once the
        // window fills.
        let rate = (lost / (total + CLEAN_PRIOR)).clamp(0.0, 1.0);
        LossEstimate {
            rate,
            burst: self.burst(),
            samples: self.samples,
        }
    }

    /// The mean length of a run of losses over the long window, at least 1.
    fn burst(&self) -> f64 {
        if self.long.runs > 0.0 {
            (self.long.lost / self.long.runs).max(1.0)
        } else {
            1.0
        }
    }

    fn report(&mut self, pn: u64, fate: Fate) {
        if pn < self.next_commit {
            self.late(pn, fate);
            return;
        }
        // Make room: a report too far ahead forces the oldest commits.
        if pn - self.next_commit >= PENDING_CAP {
            self.commit_until(pn - PENDING_CAP + 1);
        }
        let index = usize::try_from(pn - self.next_commit).expect("bounded by PENDING_CAP");
        if index >= self.pending.len() {
            self.pending.resize(index + 1, Fate::Unknown);
        }
        let slot = &mut self.pending[index];
        // An acknowledgement is the truth; a loss never overrides it.
        if !(fate == Fate::Lost && *slot == Fate::Delivered) {
            self.pending_counts.remove(*slot);
            self.pending_counts.add(fate);
            *slot = fate;
        }
        if self.largest.is_none_or(|largest| pn > largest) {
            self.largest = Some(pn);
        }
        let largest = self.largest.unwrap_or(pn);
        if let Some(target) = largest.checked_sub(COMMIT_LAG - 1) {
            self.commit_until(target);
        }
    }

    /// Commits every packet number below `target`; a span without any report
    /// is skipped in one step, however long.
    fn commit_until(&mut self, target: u64) {
        while self.next_commit < target && !self.pending.is_empty() {
            self.commit_one();
        }
        if self.next_commit < target {
            let skipped = target - self.next_commit;
            let kept = usize::try_from(skipped).unwrap_or(usize::MAX).min(HISTORY);
            self.history
                .extend(std::iter::repeat_n(Fate::Unknown, kept));
            let excess = self.history.len().saturating_sub(HISTORY);
            self.history.drain(..excess);
            self.next_commit = target;
        }
    }

    /// Commits the fate of `next_commit`.
    fn commit_one(&mut self) {
        let fate = self.pending.pop_front().unwrap_or(Fate::Unknown);
        self.pending_counts.remove(fate);
        self.next_commit += 1;
        self.history.push_back(fate);
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        if fate == Fate::Unknown {
            return;
        }
        let lost = fate == Fate::Lost;
        let new_run = lost && !self.in_run;
        self.short.commit(self.samples, lost, new_run);
        self.long.commit(self.samples, lost, new_run);
        self.samples += 1;
        self.in_run = lost;
    }

    /// Corrects the counters for a report on an already committed packet.
    fn late(&mut self, pn: u64, fate: Fate) {
        let age = self.next_commit - 1 - pn;
        let Ok(age_index) = usize::try_from(age) else {
            return;
        };
        if age_index >= self.history.len() {
            return;
        }
        let index = self.history.len() - 1 - age_index;
        let old = self.history[index];
        let samples = self.samples;
        for counters in [&mut self.short, &mut self.long] {
            let weight = counters.weight(samples, age);
            match (old, fate) {
                (Fate::Lost, Fate::Delivered) => {
                    counters.lost = (counters.lost - weight).max(0.0);
                    counters.delivered += weight;
                }
                (Fate::Unknown, Fate::Delivered) => counters.delivered += weight,
                (Fate::Unknown, Fate::Lost) => {
                    counters.lost += weight;
                    counters.runs += weight;
                }
                // Repeats, and a loss declared after an acknowledgement.
                _ => return,
            }
        }
        if old == Fate::Unknown {
            self.samples += 1;
        }
        self.history[index] = fate;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expected_loss_stands_until_the_paths_own_fates_replace_it() {
        let mut est = LossEstimator::new().with_prior(0.2);
        assert_eq!(est.estimate().rate, 0.2);
        // A clean path: the prior fades with every delivery, and is gone
        // once PRIOR_PACKETS fates are in.
        for pn in 0..PRIOR_PACKETS / 2 {
            est.on_delivered(pn);
        }
        let half = est.estimate().rate;
        assert!((half - 0.1).abs() < 1e-9, "{half}");
        for pn in PRIOR_PACKETS / 2..PRIOR_PACKETS {
            est.on_delivered(pn);
        }
        assert_eq!(est.estimate().rate, 0.0);
        // A path that loses as expected reads the same throughout.
        let mut est = LossEstimator::new().with_prior(0.2);
        for pn in 0..PRIOR_PACKETS {
            if pn % 5 == 0 {
                est.on_lost(pn);
            } else {
                est.on_delivered(pn);
            }
            let rate = est.estimate().rate;
            assert!((0.15..=0.25).contains(&rate), "after {pn}: {rate}");
        }
    }

    #[test]
    fn clean_until_told_otherwise() {
        let mut est = LossEstimator::new();
        assert_eq!(est.estimate(), LossEstimate::CLEAN);
        for pn in 0..1000 {
            est.on_delivered(pn);
        }
        let e = est.estimate();
        assert_eq!((e.rate, e.burst), (0.0, 1.0));
        assert_eq!(e.samples, 1000 - COMMIT_LAG);
    }

    #[test]
    fn commits_only_past_the_lag() {
        let mut est = LossEstimator::new();
        est.on_lost(0);
        est.on_delivered(COMMIT_LAG - 1);
        assert_eq!(est.estimate().samples, 0);
        est.on_delivered(COMMIT_LAG);
        assert_eq!(est.estimate().samples, 1);
    }

    #[test]
    fn uncommitted_reports_count_early_on() {
        // One loss among the first ten packets, none committed yet: the
        // estimate already sees it, damped by the clean prior.
        let mut est = LossEstimator::new();
        est.on_lost(0);
        for pn in 1..10 {
            est.on_delivered(pn);
        }
        let e = est.estimate();
        assert_eq!(e.samples, 0);
        assert!(
            (e.rate - 1.0 / (10.0 + CLEAN_PRIOR)).abs() < 1e-12,
            "{}",
            e.rate
        );
    }

    #[test]
    fn late_spurious_corrects_a_committed_loss() {
        let mut est = LossEstimator::new();
        est.on_lost(0);
        for pn in 1..=(2 * COMMIT_LAG) {
            est.on_delivered(pn);
        }
        assert!(est.estimate().rate > 0.0);
        est.on_spurious(0);
        assert_eq!(est.estimate().rate, 0.0);
    }

    #[test]
    fn runs_give_the_burst() {
        let mut est = LossEstimator::new();
        // Runs of 4 losses separated by 6 deliveries: rate 0.4, burst 4.
        for pn in 0..10_000u64 {
            if pn % 10 < 4 {
                est.on_lost(pn);
            } else {
                est.on_delivered(pn);
            }
        }
        let e = est.estimate();
        assert!((e.rate - 0.4).abs() < 0.01, "{e:?}");
        assert!((e.burst - 4.0).abs() < 0.05, "{e:?}");
    }

    #[test]
    fn far_jump_does_not_blow_up() {
        let mut est = LossEstimator::new();
        est.on_lost(0);
        est.on_delivered(u64::MAX);
        est.on_lost(u64::MAX - 1);
        let e = est.estimate();
        assert!(e.rate <= 1.0 && e.burst >= 1.0);
    }
}
