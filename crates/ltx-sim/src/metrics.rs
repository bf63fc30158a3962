//! The measures every benchmark reports (`docs/results.md`, "Terms"):
//! percentiles of delays, Jain's fairness index, and the ideal completion
//! time a transfer is compared against.

use std::time::Duration;

/// The `q`-quantile of `samples` by the nearest rank: the smallest sample
/// that at least a fraction `q` of them do not exceed, never an
/// interpolation. Sorts `samples` in place. `None` if there are none, any is
/// NaN, or `q` is outside `0..=1`.
pub fn percentile(samples: &mut [f64], q: f64) -> Option<f64> {
    if samples.is_empty() || !(0.0..=1.0).contains(&q) || samples.iter().any(|s| s.is_nan()) {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    // Rank ⌈q·n⌉ counted from 1; q = 0 takes the first sample.
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    Some(samples[rank - 1])
}

/// Jain's fairness index of the flows' throughputs, `(Σx)² / (n·Σx²)`:
/// 1 when all are equal, `1/n` when one flow has everything.
///
/// `None` if there are no flows, any throughput is negative or not finite,
/// or all are zero (the index is then undefined).
pub fn jain(throughputs: &[f64]) -> Option<f64> {
    if throughputs.is_empty() || throughputs.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return None;
    }
    let sum: f64 = throughputs.iter().sum();
    let squares: f64 = throughputs.iter().map(|x| x * x).sum();
    if squares == 0.0 {
        return None;
    }
    Some(sum * sum / (throughputs.len() as f64 * squares))
}

/// The ideal completion time `T* = R + R/2 + S·8 / (C·(1−p)·f)` of `bytes`
/// over a path of `rate_bps`, round trip `rtt` and random `loss`: a round
/// trip of handshake, half one for the last byte, and the bytes at the
/// capacity of an erasure channel, `f` (`payload_fraction`) being a full
/// packet's share of payload. `Duration::MAX` when the path carries nothing
/// or the time does not fit.
pub fn ideal_completion(
    bytes: u64,
    rate_bps: u64,
    rtt: Duration,
    loss: f64,
    payload_fraction: f64,
) -> Duration {
    let capacity = rate_bps as f64 * (1.0 - loss) * payload_fraction;
    if capacity.is_nan() || capacity <= 0.0 {
        return Duration::MAX;
    }
    let transfer = bytes as f64 * 8.0 / capacity;
    Duration::try_from_secs_f64(transfer)
        .ok()
        .and_then(|t| t.checked_add(rtt + rtt / 2))
        .unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_of_equal_shares_is_one() {
        assert_eq!(jain(&[3.0; 5]), Some(1.0));
    }

    #[test]
    fn jain_of_one_hot_is_one_over_n() {
        for n in 1..10 {
            let mut x = vec![0.0; n];
            x[n / 2] = 7.0;
            assert_eq!(jain(&x), Some(1.0 / n as f64), "n = {n}");
        }
    }

    #[test]
    fn jain_of_a_known_split() {
        // (1 + 3)² / (2 · (1 + 9)) = 16 / 20.
        assert_eq!(jain(&[1.0, 3.0]), Some(0.8));
    }

    #[test]
    fn jain_refuses_what_has_no_index() {
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
        assert_eq!(jain(&[1.0, -1.0]), None);
        assert_eq!(jain(&[1.0, f64::NAN]), None);
        assert_eq!(jain(&[1.0, f64::INFINITY]), None);
    }

    #[test]
    fn percentile_by_nearest_rank() {
        // 1..=10 shuffled: the p-quantile is ⌈10p⌉.
        let mut data = [7.0, 3.0, 10.0, 1.0, 5.0, 9.0, 2.0, 8.0, 4.0, 6.0];
        assert_eq!(percentile(&mut data, 0.0), Some(1.0));
        assert_eq!(percentile(&mut data, 0.1), Some(1.0));
        assert_eq!(percentile(&mut data, 0.11), Some(2.0));
        assert_eq!(percentile(&mut data, 0.5), Some(5.0));
        assert_eq!(percentile(&mut data, 0.51), Some(6.0));
        assert_eq!(percentile(&mut data, 0.95), Some(10.0));
        assert_eq!(percentile(&mut data, 0.99), Some(10.0));
        assert_eq!(percentile(&mut data, 1.0), Some(10.0));
        assert_eq!(data, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);
    }

    #[test]
    fn percentile_of_a_hundred_samples() {
        let mut data: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut data, 0.95), Some(95.0));
        assert_eq!(percentile(&mut data, 0.99), Some(99.0));
        assert_eq!(percentile(&mut data, 0.5), Some(50.0));
    }

    #[test]
    fn percentile_refuses_what_has_none() {
        assert_eq!(percentile(&mut [], 0.5), None);
        assert_eq!(percentile(&mut [1.0], 1.01), None);
        assert_eq!(percentile(&mut [1.0], -0.01), None);
        assert_eq!(percentile(&mut [1.0], f64::NAN), None);
        assert_eq!(percentile(&mut [1.0, f64::NAN], 0.5), None);
        assert_eq!(percentile(&mut [4.0], 0.5), Some(4.0));
    }

    #[test]
    fn ideal_completion_of_the_long_delay_scenario() {
        // 10 MB at 50 Mbit/s, 600 ms RTT, 10 % loss, f = 1:
        // 0.6 + 0.3 s, plus 80e6 bit / 45e6 bit/s = 1.7777… s.
        let t = ideal_completion(10_000_000, 50_000_000, Duration::from_millis(600), 0.1, 1.0);
        let expected = 0.9 + 10e6 * 8.0 / 45e6;
        assert!((t.as_secs_f64() - expected).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn ideal_completion_counts_header_overhead() {
        // 1200 payload bytes in 1250 wire bytes; no loss, no delay:
        // 1.2 MB take 1.25 MB of wire at 10 Mbit/s = 1 s.
        let t = ideal_completion(1_200_000, 10_000_000, Duration::ZERO, 0.0, 0.96);
        assert!((t.as_secs_f64() - 1.0).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn ideal_completion_of_a_dead_path_is_forever() {
        let rtt = Duration::from_millis(10);
        assert_eq!(ideal_completion(1, 1_000, rtt, 1.0, 1.0), Duration::MAX);
        assert_eq!(ideal_completion(1, 0, rtt, 0.0, 1.0), Duration::MAX);
        assert_eq!(ideal_completion(1, 1_000, rtt, 0.0, 0.0), Duration::MAX);
        assert_eq!(
            ideal_completion(1, 1_000, rtt, f64::NAN, 1.0),
            Duration::MAX
        );
    }
}
