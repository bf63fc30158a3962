//! Careful resume: start-up from a path an earlier connection measured.
//!
//! The phases follow the IETF's careful-resume design, with one
//! difference: the *unvalidated* jump to half the saved rate is taken at
//! once (start-up takes it as a measured rate, so the first flight, early
//! data included, is half the saved bandwidth-delay product: the initial
//! window at once, whose pairs read the bottleneck as a first contact's
//! do, and the rest paced over a round trip), and *reconnaissance* runs
//! beside it: if the handshake's round trip does not match the saved one,
//! the controller retreats to its initial window at that first sample.
//! The jump's own acknowledgements *validate* it (a train of them that
//! outlasts the jitter of its RTT samples shows at least 80 % of the
//! jump's rate) and it steps up to the saved rate, validated in its turn
//! (unless the path has shown that rate already, which ends resume); or
//! the controller *retreats* to the rate the path did show. A congestion
//! exit from start-up while the jump is unvalidated retreats too. Where
//! ltx differs from the draft, and why, is in `docs/design/start-up.md`.

use std::time::Instant;

use super::Tolerant;
use crate::congestion::SavedPath;
use crate::rtt::RttEstimator;

/// The fraction of the saved rate the unvalidated jump sends at.
const JUMP_FRACTION: u64 = 2;

/// The share of the jump's rate its acknowledgements must show for the
/// jump to be validated.
const VALIDATED_SHARE: f64 = 0.8;

/// Where careful resume stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resume {
    /// No saved path, or resume is over (validated, refused).
    Off,
    /// The jump met a queue or fell short and the controller retreated:
    /// its window is already what the path showed.
    Retreated,
    /// Jumped at once to half the saved path's rate, waiting for the
    /// handshake's round trip to match it.
    Reconnaissance(SavedPath),
    /// Sending at `jump` bytes per second, not yet confirmed.
    Unvalidated {
        /// The jump's rate, bytes per second.
        jump: u64,
        /// The saved rate, which a confirmed half-rate jump steps up to.
        saved: u64,
        /// When the controller began sending at `jump`: only a train sent
        /// since shows whether the path carries it.
        since: Option<Instant>,
    },
}

impl Tolerant {
    /// Takes a saved path, in start-up and without a rate hint: the jump
    /// to half its rate, half its bandwidth-delay product in flight, paced
    /// after a burst of the initial window. Paced packets come back at the
    /// pace; the burst's pairs show whether the path got faster.
    pub(super) fn take_saved_path(&mut self, saved: SavedPath) {
        if !self.in_startup || self.hinted || saved.rate == 0 || saved.min_rtt.is_zero() {
            return;
        }
        let jump = (saved.rate / JUMP_FRACTION).max(1);
        self.take_known_rate(jump);
        let product = u128::from(jump) * saved.min_rtt.as_nanos() / 1_000_000_000;
        self.window = self.window.max(u64::try_from(product).unwrap_or(u64::MAX));
        self.startup.burst_left = self.config.initial_window_packets;
        self.resume = Resume::Reconnaissance(saved);
    }

    /// The first RTT sample: the jump goes on, unvalidated, if it matches
    /// the saved path; if not, the path changed and the controller
    /// starts again from its initial window, measuring.
    pub(super) fn resume_on_rtt_sample(&mut self, rtt: &RttEstimator) {
        let Resume::Reconnaissance(saved) = self.resume else {
            return;
        };
        if !rtt.has_sample() {
            return;
        }
        if self.in_startup && saved.matches(rtt.latest()) {
            self.resume = Resume::Unvalidated {
                jump: (saved.rate / JUMP_FRACTION).max(1),
                saved: saved.rate,
                since: None,
            };
            return;
        }
        self.resume = Resume::Off;
        if self.in_startup {
            self.hinted = false;
            self.max_rate = None;
            self.startup.forget_rate(None);
            self.startup.measured = false;
            self.window = self.initial_window_bytes();
        }
    }

    /// A start-up round ended that sent with data waiting: its train
    /// validates the jump or retreats from it.
    pub(super) fn validate_resume(&mut self, now: Instant, rtt: &RttEstimator) {
        let Resume::Unvalidated { jump, saved, since } = self.resume else {
            return;
        };
        // A train shorter than the jitter of its RTT samples reads the
        // jitter: the jump waits for one that can tell, or for a queue or
        // a loss above the baseline, which retreat at once.
        let Some(shown) = self.startup.jump_reading(since) else {
            return;
        };
        if shown as f64 >= jump as f64 * VALIDATED_SHARE {
            // The path carries the jump: the half-rate jump steps up to the
            // saved rate, confirmed in its turn; the rate is sent at from
            // here, with a probe burst per round whose pairs show more.
            // Where the path has shown the saved rate already (the pairs of
            // the first flight's burst, as a first contact reads them), it
            // is no slower than when it was saved: resume is over, and
            // start-up goes on from the fastest rate it showed.
            let known = self.max_rate.unwrap_or(0).max(shown);
            let rate = if known < saved {
                self.resume = Resume::Unvalidated {
                    jump: saved,
                    saved,
                    since: Some(now),
                };
                saved
            } else {
                self.resume = Resume::Off;
                known
            };
            self.startup.take_rate_hint(rate);
            self.startup.measured = true;
            self.update_max_rate();
            if let Some(bdp) = self.bdp(rtt) {
                self.window = self.window.max(bdp);
            }
        } else {
            self.retreat(rtt);
        }
    }

    /// Whether the jump is still unconfirmed.
    pub(super) fn resume_unvalidated(&self) -> bool {
        matches!(self.resume, Resume::Unvalidated { .. })
    }

    /// Whether this start-up retreated from a jump.
    pub(super) fn resume_retreated(&self) -> bool {
        matches!(self.resume, Resume::Retreated)
    }

    /// Safe retreat: the saved rate is forgotten for what the path showed
    /// (its last ACK train), and the window is that rate's product, or
    /// the initial window when nothing was shown. Where the path shows a
    /// queue, the jump met congestion, and start-up sends at the rate shown.
    /// Where it does not, the train fell short by loss (a path that loses
    /// in bursts shows less than it carries): start-up goes on growing the
    /// window as on a first contact, up to the saved product, so that a
    /// resume does not end below what a first contact would find.
    pub(super) fn retreat(&mut self, rtt: &RttEstimator) {
        let saved = match self.resume {
            Resume::Unvalidated { saved, .. } => Some(saved),
            Resume::Reconnaissance(saved) => Some(saved.rate),
            Resume::Off | Resume::Retreated => None,
        };
        self.resume = Resume::Retreated;
        self.hinted = false;
        let queue = rtt.min().mul_f64(self.config.delay_exit_ratio)
            + rtt.queue_margin(self.config.delay_exit_extra);
        if rtt.latest() < queue {
            self.startup.measured = false;
            self.startup.growth_limit = saved;
        }
        let shown = self.startup.measured_rate();
        self.startup.forget_rate(shown);
        self.max_rate = shown;
        self.window = match self.bdp(rtt) {
            Some(bdp) => bdp.max(self.min_window()),
            None => self.initial_window_bytes(),
        };
    }
}
