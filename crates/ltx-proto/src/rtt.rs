//! Round-trip time estimation.
//!
//! The estimator follows RFC 9002, section 5: an exponentially weighted
//! smoothed RTT and mean deviation, a minimum over the whole connection, and
//! the peer's acknowledgement delay subtracted only where that cannot push a
//! sample below the minimum. Packet numbers are never reused in ltx, so every
//! sample is unambiguous.

use std::time::Duration;

/// The granularity below which timers are not worth distinguishing; the
/// floor of the variance term in [`RttEstimator::pto_base`].
const GRANULARITY: Duration = Duration::from_millis(1);

/// An estimator of a path's round-trip time, fed with one sample per ACK.
#[derive(Debug, Clone, Copy)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Duration,
    var: Duration,
    min: Duration,
    has_sample: bool,
}

impl RttEstimator {
    /// An estimator that reports `initial` as its RTT until the first sample.
    pub fn new(initial: Duration) -> Self {
        Self {
            latest: initial,
            smoothed: initial,
            var: initial / 2,
            min: initial,
            has_sample: false,
        }
    }

    /// Takes an RTT `sample` whose ACK the peer says it delayed by `ack_delay`.
    ///
    /// The minimum is taken over raw samples: the ack delay is the peer's
    /// claim, and trusting it for the minimum would let one wrong claim lower
    /// the floor for the rest of the connection.
    pub fn update(&mut self, ack_delay: Duration, sample: Duration) {
        self.latest = sample;
        if !self.has_sample {
            self.has_sample = true;
            self.min = sample;
            self.smoothed = sample;
            self.var = sample / 2;
            return;
        }
        self.min = self.min.min(sample);
        let adjusted = match sample.checked_sub(ack_delay) {
            Some(adjusted) if adjusted >= self.min => adjusted,
            _ => sample,
        };
        let deviation = self.smoothed.abs_diff(adjusted);
        self.var = (self.var * 3 + deviation) / 4;
        self.smoothed = (self.smoothed * 7 + adjusted) / 8;
    }

    /// The most recent sample, without the ack delay subtracted.
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// The smoothed RTT.
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }

    /// The mean deviation of the RTT.
    pub fn var(&self) -> Duration {
        self.var
    }

    /// The smallest sample seen on the connection: the RTT with empty queues.
    pub fn min(&self) -> Duration {
        self.min
    }

    /// The probe time-out before backoff: smoothed RTT plus four mean
    /// deviations, the deviation term at least 1 ms.
    pub fn pto_base(&self) -> Duration {
        self.smoothed + (self.var * 4).max(GRANULARITY)
    }

    /// Whether any sample has been taken; until then every figure is the
    /// initial guess.
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }

    /// How far above the minimum an RTT must be, beyond any proportional
    /// test, before it is read as a queue rather than jitter: `cap` on long
    /// paths, but at most a quarter of the minimum RTT (and at least
    /// [`MIN_QUEUE_MARGIN`]), since on a short path a whole bandwidth-delay
    /// product of queue adds only the minimum RTT, and a fixed margin of a
    /// few milliseconds would hide it.
    pub fn queue_margin(&self, cap: Duration) -> Duration {
        cap.min((self.min / 4).max(MIN_QUEUE_MARGIN))
    }
}

/// The smallest margin [`RttEstimator::queue_margin`] gives: host
/// scheduling jitter on a short path.
pub const MIN_QUEUE_MARGIN: Duration = Duration::from_micros(250);

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn initial_guess_until_first_sample() {
        let rtt = RttEstimator::new(ms(333));
        assert!(!rtt.has_sample());
        assert_eq!(rtt.smoothed(), ms(333));
        assert_eq!(rtt.var(), ms(166) + Duration::from_micros(500));
        assert_eq!(rtt.pto_base(), ms(999));
    }

    #[test]
    fn first_sample_replaces_guess() {
        let mut rtt = RttEstimator::new(ms(333));
        rtt.update(ms(10), ms(600));
        assert!(rtt.has_sample());
        assert_eq!(rtt.latest(), ms(600));
        assert_eq!(rtt.smoothed(), ms(600));
        assert_eq!(rtt.var(), ms(300));
        assert_eq!(rtt.min(), ms(600));
    }

    #[test]
    fn ack_delay_subtracted_only_above_min() {
        let mut rtt = RttEstimator::new(ms(333));
        rtt.update(ms(0), ms(100));
        // 120 - 10 = 110 >= 100: subtracted.
        rtt.update(ms(10), ms(120));
        assert_eq!(rtt.smoothed(), (ms(100) * 7 + ms(110)) / 8);
        let mut rtt = RttEstimator::new(ms(333));
        rtt.update(ms(0), ms(100));
        // 120 - 30 = 90 < 100: not subtracted.
        rtt.update(ms(30), ms(120));
        assert_eq!(rtt.smoothed(), (ms(100) * 7 + ms(120)) / 8);
    }

    #[test]
    fn min_is_over_the_connection_and_converges() {
        let mut rtt = RttEstimator::new(ms(333));
        rtt.update(ms(0), ms(50));
        for _ in 0..100 {
            rtt.update(ms(0), ms(80));
        }
        assert_eq!(rtt.min(), ms(50));
        assert!(rtt.smoothed().abs_diff(ms(80)) < ms(1));
        // Variance decays towards zero; the PTO keeps its 1 ms floor.
        assert!(rtt.pto_base() >= rtt.smoothed() + ms(1));
    }
}
