//! Whether a round trip's losses are congestion: more than the random-loss
//! baseline explains, while a queue stands.
//!
//! Two things make the judgement robust on paths with jitter and a window
//! that changes size:
//! - the losses are counted against the packets whose fate was decided in
//!   the same round (acknowledged or declared lost), not against the
//!   packets sent in it: after a reduction fewer packets leave per round
//!   than the round before, whose losses are being declared, and counting
//!   them against the smaller number reads random loss as a surge — which
//!   cuts the window again, and again, down to the minimum;
//! - the queue is the smallest RTT sample of this round and the one before,
//!   not the latest sample: a jittered sample is not a queue.

use std::time::{Duration, Instant};

use crate::recovery::LossEstimate;
use crate::rtt::RttEstimator;

/// Loss and RTT bookkeeping per round trip (one smoothed RTT).
#[derive(Debug, Clone, Default)]
pub(super) struct LossRound {
    /// When the current round began.
    start: Option<Instant>,
    /// Packets acknowledged or declared lost in the current round.
    decided: u64,
    /// Of those, the lost.
    lost: u64,
    /// The smallest RTT sample of the current round.
    min_sample: Option<Duration>,
    /// The smallest RTT sample of the round before.
    previous_min_sample: Option<Duration>,
}

impl LossRound {
    /// Starts a new round if the current one has lasted `round`. A round
    /// that ended more than one round ago says nothing of the queue now.
    fn roll(&mut self, now: Instant, round: Duration) {
        let round = round.max(Duration::from_millis(1));
        let Some(start) = self.start else {
            self.start = Some(now);
            return;
        };
        let elapsed = now.saturating_duration_since(start);
        if elapsed < round {
            return;
        }
        self.previous_min_sample = if elapsed < round * 2 {
            self.min_sample
        } else {
            None
        };
        self.min_sample = None;
        self.decided = 0;
        self.lost = 0;
        self.start = Some(now);
    }

    /// `packets` were acknowledged at `now`.
    pub(super) fn on_acked(&mut self, now: Instant, round: Duration, packets: u64) {
        self.roll(now, round);
        self.decided = self.decided.saturating_add(packets);
    }

    /// An RTT sample was taken at `now`.
    pub(super) fn on_rtt_sample(&mut self, now: Instant, round: Duration, sample: Duration) {
        self.roll(now, round);
        self.min_sample = Some(self.min_sample.map_or(sample, |min| min.min(sample)));
    }

    /// `packets` were declared lost at `now`.
    pub(super) fn on_lost(&mut self, now: Instant, round: Duration, packets: u64) {
        self.roll(now, round);
        self.decided = self.decided.saturating_add(packets);
        self.lost = self.lost.saturating_add(packets);
    }

    /// The queue that stands now: the smallest RTT sample of this round
    /// and the one before, or the latest sample if neither took one.
    fn standing_rtt(&self, rtt: &RttEstimator) -> Duration {
        [self.min_sample, self.previous_min_sample]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or_else(|| rtt.latest())
    }

    /// Whether this round's losses exceed what the random-loss `estimate`
    /// explains (three standard deviations, burstiness included) while a
    /// queue stands (the standing RTT above the minimum by an eighth and a
    /// margin). Random loss does not lengthen the round trip, so a lossy
    /// path with an empty queue never counts, even before the estimator has
    /// a baseline.
    pub(super) fn above_baseline(&self, estimate: &LossEstimate, rtt: &RttEstimator) -> bool {
        let min = rtt.min();
        let queueing =
            self.standing_rtt(rtt) > min + min / 8 + rtt.queue_margin(Duration::from_millis(2));
        let n = self.decided.max(1) as f64;
        let p = estimate.rate;
        let dispersion = (2.0 * estimate.burst * (1.0 - p) - 1.0).max(1.0);
        let sigma = (n * p * (1.0 - p) * dispersion).sqrt();
        queueing && self.lost as f64 > n * p + 3.0 * sigma + 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn rtt_with(min_ms: u64, latest_ms: u64) -> RttEstimator {
        let mut rtt = RttEstimator::new(ms(min_ms));
        rtt.update(Duration::ZERO, ms(min_ms));
        rtt.update(Duration::ZERO, ms(latest_ms));
        rtt
    }

    const RANDOM: LossEstimate = LossEstimate {
        rate: 0.2,
        burst: 1.0,
        samples: 10_000,
    };

    #[test]
    fn random_loss_after_a_reduction_is_not_a_surge() {
        // The round declares the losses of a larger window than the one
        // now sent: 20 of 100 decided is the baseline, whatever was sent.
        let t0 = Instant::now();
        let rtt = rtt_with(100, 200);
        let mut round = LossRound::default();
        round.on_rtt_sample(t0, ms(100), ms(200));
        round.on_acked(t0, ms(100), 80);
        round.on_lost(t0, ms(100), 20);
        assert!(!round.above_baseline(&RANDOM, &rtt));
    }

    #[test]
    fn a_surge_on_a_standing_queue_is_congestion() {
        let t0 = Instant::now();
        let rtt = rtt_with(100, 200);
        let mut round = LossRound::default();
        round.on_rtt_sample(t0, ms(100), ms(200));
        round.on_acked(t0, ms(100), 50);
        round.on_lost(t0, ms(100), 50);
        assert!(round.above_baseline(&RANDOM, &rtt));
    }

    #[test]
    fn one_jittered_sample_is_not_a_queue() {
        // The latest sample is late, but the round saw the path empty.
        let t0 = Instant::now();
        let rtt = rtt_with(100, 300);
        let mut round = LossRound::default();
        round.on_rtt_sample(t0, ms(100), ms(101));
        round.on_rtt_sample(t0 + ms(50), ms(100), ms(300));
        round.on_acked(t0 + ms(50), ms(100), 50);
        round.on_lost(t0 + ms(50), ms(100), 50);
        assert!(!round.above_baseline(&RANDOM, &rtt));
    }

    #[test]
    fn a_round_long_past_says_nothing_of_the_queue() {
        let t0 = Instant::now();
        let rtt = rtt_with(100, 200);
        let mut round = LossRound::default();
        round.on_rtt_sample(t0, ms(100), ms(101));
        // Three rounds later, only late samples: the queue stands now.
        round.on_rtt_sample(t0 + ms(300), ms(100), ms(200));
        round.on_acked(t0 + ms(300), ms(100), 50);
        round.on_lost(t0 + ms(300), ms(100), 50);
        assert!(round.above_baseline(&RANDOM, &rtt));
    }
}
