//! The rate of delivered bytes per round trip after start-up, for the
//! optional delivery cap on the window (`TolerantConfig::delivery_cap`).

use std::time::{Duration, Instant};

use super::bottleneck_rate::TRAIN_OVER_ACKED;
use super::Tolerant;
use crate::rtt::RttEstimator;

/// Rounds over which [`DeliveryRate`] keeps its largest sample.
const DELIVERY_ROUNDS: usize = 10;

/// The rate of delivered bytes, one sample per round trip (rounds in which
/// the sender ran out of data are left out), and the largest of the last
/// [`DELIVERY_ROUNDS`]. A round's delivered bytes are those acknowledged plus
/// those lost, the lost counted up to [`TRAIN_OVER_ACKED`](super::bottleneck_rate::TRAIN_OVER_ACKED) times the
/// acknowledged: a cap drawn from acknowledged bytes alone would shrink with
/// the window on a path that loses more than the cap allows for, round after
/// round, down to the minimum; counting the losses keeps it above the window
/// at any random loss up to 75 %, and still bounded where a queue drops
/// nearly everything.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DeliveryRate {
    /// When the current round began, and the bytes acknowledged and lost in
    /// it.
    round: Option<(Instant, u64, u64)>,
    /// Whether an acknowledgement in the current round was app-limited.
    app_limited: bool,
    /// The last rounds' rates, bytes per second, a ring.
    samples: [u64; DELIVERY_ROUNDS],
    /// Samples taken.
    taken: usize,
}

impl DeliveryRate {
    pub(super) fn on_ack(&mut self, now: Instant, bytes: u64, app_limited: bool, srtt: Duration) {
        let Some((start, acked, lost)) = self.round else {
            self.round = Some((now, 0, 0));
            self.app_limited = app_limited;
            return;
        };
        let acked = acked.saturating_add(bytes);
        self.app_limited |= app_limited;
        let elapsed = now.saturating_duration_since(start);
        if elapsed < srtt || elapsed.is_zero() {
            self.round = Some((start, acked, lost));
            return;
        }
        if !self.app_limited {
            let counted_lost = lost.min((acked as f64 * TRAIN_OVER_ACKED) as u64);
            let delivered = acked.saturating_add(counted_lost);
            let rate = u128::from(delivered) * 1_000_000_000 / elapsed.as_nanos();
            self.samples[self.taken % DELIVERY_ROUNDS] = u64::try_from(rate).unwrap_or(u64::MAX);
            self.taken = self.taken.saturating_add(1);
        }
        self.round = Some((now, 0, 0));
        self.app_limited = false;
    }

    pub(super) fn on_loss(&mut self, bytes: u64) {
        if let Some((_, _, lost)) = &mut self.round {
            *lost = lost.saturating_add(bytes);
        }
    }

    /// The largest rate of the last rounds, once there is one.
    pub(super) fn max(&self) -> Option<u64> {
        (self.taken > 0).then(|| self.samples.iter().copied().max().unwrap_or(0))
    }
}

impl Tolerant {
    /// The most the window may grow to in congestion avoidance, with a
    /// `delivery_cap`: that many bandwidth-delay products at the fastest
    /// rate delivered in the last rounds since start-up, never below the
    /// minimum window.
    pub(super) fn delivery_cap(&self, rtt: &RttEstimator) -> Option<u64> {
        let gain = self.config.delivery_cap?;
        let rate = self.delivered.max()?;
        let bdp = rate as f64 * rtt.min().as_secs_f64();
        Some(((bdp * gain) as u64).max(self.min_window()))
    }
}
