//! The rate and time left of one transfer, for the progress display.
//! Sans-IO: every call takes `now`, so tests run it in virtual time.

use std::time::{Duration, Instant};

/// How often a new rate sample is taken.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// The time constant of the rate's smoothing: a sample counts for about
/// this long, so one slow or fast burst does not swing the time left.
const SMOOTHING: Duration = Duration::from_secs(2);
/// How long a transfer runs before its time left is shown: a start-up
/// that is still finding the path's rate would promise nonsense.
const SETTLE: Duration = Duration::from_secs(2);

/// Rate and time left of a transfer, counted from the first byte it
/// moves: bytes already there when it starts (a resumed file's part)
/// count neither in the rate nor against the time.
#[derive(Debug, Clone, Default)]
pub struct RateMeter {
    /// When the transfer started and how many bytes were there already.
    start: Option<(Instant, u64)>,
    /// The last sample.
    last: Option<(Instant, u64)>,
    /// Bytes per second, smoothed.
    smoothed: Option<f64>,
    done: u64,
    total: u64,
}

impl RateMeter {
    /// Records that `done` of `total` bytes are there at `now`. The first
    /// call starts the meter, with `done` as the bytes that were there
    /// before.
    pub fn update(&mut self, now: Instant, done: u64, total: u64) {
        self.done = done;
        self.total = total;
        let Some((last_at, last_done)) = self.last else {
            self.start = Some((now, done));
            self.last = Some((now, done));
            return;
        };
        let dt = now.saturating_duration_since(last_at);
        if dt < SAMPLE_EVERY {
            return;
        }
        let sample = done.saturating_sub(last_done) as f64 / dt.as_secs_f64();
        let weight = 1.0 - (-dt.as_secs_f64() / SMOOTHING.as_secs_f64()).exp();
        self.smoothed = Some(match self.smoothed {
            None => sample,
            Some(rate) => rate + weight * (sample - rate),
        });
        self.last = Some((now, done));
    }

    /// Bytes per second now, smoothed; `None` before the first sample.
    pub fn rate(&self) -> Option<f64> {
        self.smoothed
    }

    /// Bytes moved since the start, and for how long.
    pub fn moved(&self, now: Instant) -> (u64, Duration) {
        match self.start {
            Some((at, base)) => (
                self.done.saturating_sub(base),
                now.saturating_duration_since(at),
            ),
            None => (0, Duration::ZERO),
        }
    }

    /// The time left at the smoothed rate, once the transfer has run
    /// long enough for its rate to mean something.
    pub fn time_left(&self, now: Instant) -> Option<Duration> {
        let (start, _) = self.start?;
        if now.saturating_duration_since(start) < SETTLE {
            return None;
        }
        let rate = self.smoothed.filter(|&r| r > 0.0)?;
        let left = self.total.saturating_sub(self.done) as f64 / rate;
        Some(Duration::from_secs_f64(left.min(1e7)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_resumed_transfer_counts_only_its_new_bytes() {
        let t0 = Instant::now();
        let mut meter = RateMeter::default();
        // 80 MB were there already; 1 MB/s from then on.
        for i in 0..=50u64 {
            meter.update(t0 + ms(100 * i), 80_000_000 + 100_000 * i, 100_000_000);
        }
        let rate = meter.rate().unwrap();
        assert!((rate - 1e6).abs() < 1e3, "{rate}");
        assert_eq!(meter.moved(t0 + ms(5000)), (5_000_000, ms(5000)));
        let left = meter.time_left(t0 + ms(5000)).unwrap().as_secs_f64();
        assert!((left - 15.0).abs() < 0.1, "{left}");
    }

    #[test]
    fn the_time_left_waits_for_the_rate_to_settle() {
        let t0 = Instant::now();
        let mut meter = RateMeter::default();
        meter.update(t0, 0, 1_000_000);
        meter.update(t0 + ms(500), 10_000, 1_000_000);
        assert!(meter.time_left(t0 + ms(500)).is_none());
        meter.update(t0 + ms(2500), 100_000, 1_000_000);
        assert!(meter.time_left(t0 + ms(2500)).is_some());
    }

    #[test]
    fn one_stall_does_not_swing_the_time_left() {
        let t0 = Instant::now();
        let mut meter = RateMeter::default();
        let mut done = 0;
        for i in 0..=40u64 {
            meter.update(t0 + ms(250 * i), done, 100_000_000);
            done += 250_000; // 1 MB/s
        }
        let before = meter.time_left(t0 + ms(10_000)).unwrap().as_secs_f64();
        // Half a second with nothing (a repair wait), then the same rate.
        meter.update(t0 + ms(10_250), done, 100_000_000);
        meter.update(t0 + ms(10_500), done, 100_000_000);
        let after = meter.time_left(t0 + ms(10_500)).unwrap().as_secs_f64();
        assert!(after / before < 1.3, "{before:.1} s → {after:.1} s");
    }
}
