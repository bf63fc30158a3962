//! Careful resume: start-up from a path an earlier connection measured.
//!
//! The phases follow the IETF's careful-resume design: *reconnaissance*
//! until the handshake gives a round trip; if it matches the saved one,
//! an *unvalidated* jump to half the saved rate (start-up takes it as a
//! measured rate, so the first flight is half the saved bandwidth-delay
//! product, paced over a round trip); the jump's own acknowledgements
//! *validate* it (their train shows at least 80 % of the jump's rate) and
//! it steps up to the saved rate, validated in its turn; or the controller
//! *retreats* to the rate the path did show. A congestion exit
//! from start-up while the jump is unvalidated retreats too. Where ltx
//! differs from the draft, and why, is in `docs/design/start-up.md`.

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
    /// No saved path, or resume is over (validated, retreated, refused).
    Off,
    /// A saved path, waiting for the handshake's round trip.
    Reconnaissance(SavedPath),
    /// Sending at `jump` bytes per second, not yet confirmed.
    Unvalidated {
        /// The jump's rate, bytes per second.
        jump: u64,
        /// The saved rate, which a confirmed half-rate jump steps up to.
        saved: u64,
    },
}

impl Tolerant {
    /// Takes a saved path, in start-up and without a rate hint.
    pub(super) fn take_saved_path(&mut self, saved: SavedPath) {
        if self.in_startup && !self.hinted && saved.rate > 0 && !saved.min_rtt.is_zero() {
            self.resume = Resume::Reconnaissance(saved);
        }
    }

    /// The first RTT sample: jump if it matches the saved path.
    pub(super) fn resume_on_rtt_sample(&mut self, rtt: &RttEstimator) {
        let Resume::Reconnaissance(saved) = self.resume else {
            return;
        };
        if !rtt.has_sample() {
            return;
        }
        if !self.in_startup || !saved.matches(rtt.latest()) {
            self.resume = Resume::Off;
            return;
        }
        let jump = (saved.rate / JUMP_FRACTION).max(1);
        self.max_rate = Some(jump);
        self.startup.take_rate_hint(jump);
        self.hinted = true;
        self.resume = Resume::Unvalidated {
            jump,
            saved: saved.rate,
        };
    }

    /// A start-up round ended that sent with data waiting: its train
    /// validates the jump or retreats from it.
    pub(super) fn validate_resume(&mut self, rtt: &RttEstimator) {
        let Resume::Unvalidated { jump, saved } = self.resume else {
            return;
        };
        let Some(shown) = self.startup.measured_rate() else {
            return;
        };
        if shown as f64 >= jump as f64 * VALIDATED_SHARE {
            // The path carries the jump: the half-rate jump steps up to the
            // saved rate, confirmed in its turn; the rate is sent at from
            // here, with a probe burst per round whose pairs show more.
            let rate = if jump < saved {
                self.resume = Resume::Unvalidated { jump: saved, saved };
                saved
            } else {
                self.resume = Resume::Off;
                shown.max(jump)
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

    /// Safe retreat: the saved rate is forgotten for what the path showed
    /// (its last ACK train), and the window is that rate's product, or
    /// the initial window when nothing was shown.
    pub(super) fn retreat(&mut self, rtt: &RttEstimator) {
        self.resume = Resume::Off;
        self.hinted = false;
        let shown = self.startup.measured_rate();
        self.startup.forget_rate(shown);
        self.max_rate = shown;
        self.window = match self.bdp(rtt) {
            Some(bdp) => bdp.max(self.min_window()),
            None => self.initial_window_bytes(),
        };
    }
}
