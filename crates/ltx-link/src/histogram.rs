//! A log-bucketed histogram of durations: constant memory, 1 % precision.

use std::time::Duration;

/// Bucket width as a ratio: each bucket is 1 % wider than the last.
const GROWTH: f64 = 1.01;
/// Durations below one microsecond share the first bucket.
const BUCKETS: usize = 2400; // 1.01^2400 µs ≈ 2·10^10 µs: hours

/// Counts of durations, for quantiles such as the p95 queueing delay.
#[derive(Debug, Clone)]
pub struct DelayHistogram {
    counts: Vec<u64>,
    total: u64,
    max: Duration,
}

impl Default for DelayHistogram {
    fn default() -> DelayHistogram {
        DelayHistogram {
            counts: vec![0; BUCKETS],
            total: 0,
            max: Duration::ZERO,
        }
    }
}

impl DelayHistogram {
    fn bucket(d: Duration) -> usize {
        let micros = d.as_secs_f64() * 1e6;
        if micros < 1.0 {
            return 0;
        }
        ((micros.ln() / GROWTH.ln()) as usize + 1).min(BUCKETS - 1)
    }

    fn bucket_upper(i: usize) -> Duration {
        if i == 0 {
            return Duration::from_micros(1);
        }
        Duration::from_secs_f64(GROWTH.powi(i as i32) * 1e-6)
    }

    /// Counts one sample.
    pub fn record(&mut self, d: Duration) {
        self.counts[Self::bucket(d)] += 1;
        self.total += 1;
        self.max = self.max.max(d);
    }

    /// How many samples were counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q`-quantile (0..=1), within 1 %, or zero with no samples.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::bucket_upper(i).min(self.max);
            }
        }
        self.max
    }

    /// The largest sample.
    pub fn max(&self) -> Duration {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_one_percent() {
        let mut h = DelayHistogram::default();
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        let p95 = h.quantile(0.95).as_secs_f64() * 1e3;
        assert!((p95 - 950.0).abs() <= 9.5, "p95 {p95} ms");
        let p50 = h.quantile(0.5).as_secs_f64() * 1e3;
        assert!((p50 - 500.0).abs() <= 5.0, "p50 {p50} ms");
        assert_eq!(h.quantile(1.0), Duration::from_millis(1000));
        assert_eq!(h.count(), 1000);
    }

    #[test]
    fn an_empty_histogram_reports_zero() {
        assert_eq!(DelayHistogram::default().quantile(0.95), Duration::ZERO);
    }
}
