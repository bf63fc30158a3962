//! A token-bucket pacer.
//!
//! Tokens are bytes, kept exactly in units of a nanosecond's worth of a rate
//! of one byte per second (`byte·10⁹`), so a refill is `elapsed_ns × rate`
//! with no rounding: sub-microsecond gaps at low rates accumulate instead of
//! being truncated away, and u128 arithmetic covers rates past 10 Gbit/s over
//! any span of time.
//!
//! The bucket holds `rate × 2 ms`, clamped between 10 and 256 datagrams and
//! never more than the window: a burst of 10 datagrams (the initial window)
//! leaves at once, later traffic leaves in bursts of at most 2 ms, which a
//! bottleneck queue absorbs, while the timer need not fire for every packet.

use std::time::{Duration, Instant};

/// The span of sending a full bucket holds.
const BURST_INTERVAL: Duration = Duration::from_millis(2);
/// The smallest bucket, in datagrams.
const MIN_BURST: u64 = 10;
/// The largest bucket, in datagrams.
const MAX_BURST: u64 = 256;
/// Nanoseconds per second: the scale of the token unit.
const NANOS: u128 = 1_000_000_000;

/// A token-bucket pacer for one connection.
///
/// Call [`Pacer::delay`] before sending a packet and [`Pacer::on_sent`] once
/// it is sent: asking does not consume, so a packet that is finally not sent
/// (the window closed meanwhile) costs nothing.
#[derive(Debug, Clone)]
pub struct Pacer {
    max_datagram: u64,
    /// Tokens in `byte·10⁹` units.
    tokens: u128,
    /// The bucket's size at the last refill, in `byte·10⁹` units.
    capacity: u128,
    last_refill: Option<Instant>,
}

impl Pacer {
    /// A pacer with a full bucket of 10 datagrams of `max_datagram` bytes.
    pub fn new(max_datagram: u16) -> Self {
        let max_datagram = u64::from(max_datagram).max(1);
        let capacity = u128::from(MIN_BURST * max_datagram) * NANOS;
        Self {
            max_datagram,
            tokens: capacity,
            capacity,
            last_refill: None,
        }
    }

    /// When a packet of `bytes` may be sent: None if now, else the instant at
    /// which the bucket will hold enough at `rate_bytes_per_s` (0 counts as
    /// 1). `window` bounds the bucket: the congestion window, or less where
    /// the controller bounds its bursts.
    pub fn delay(
        &mut self,
        now: Instant,
        bytes: u64,
        rate_bytes_per_s: u64,
        window: u64,
    ) -> Option<Instant> {
        let rate = u128::from(rate_bytes_per_s.max(1));
        self.capacity = self.capacity_for(rate, window);
        if let Some(last) = self.last_refill {
            let elapsed = now.saturating_duration_since(last).as_nanos();
            self.tokens = self.tokens.saturating_add(elapsed.saturating_mul(rate));
        }
        self.tokens = self.tokens.min(self.capacity);
        self.last_refill = Some(self.last_refill.map_or(now, |last| last.max(now)));
        // A packet larger than the bucket goes when the bucket is full.
        let needed = (u128::from(bytes) * NANOS).min(self.capacity);
        if self.tokens >= needed {
            return None;
        }
        let wait = (needed - self.tokens).div_ceil(rate);
        let wait = Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX));
        Some(
            now.checked_add(wait)
                .unwrap_or(now + Duration::from_secs(86_400)),
        )
    }

    /// A packet of `bytes` was sent: takes its tokens (down to zero).
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        let _ = now;
        self.tokens = self.tokens.saturating_sub(u128::from(bytes) * NANOS);
    }

    /// The bucket size for `rate` bytes per second and `window` bytes, in
    /// `byte·10⁹` units.
    fn capacity_for(&self, rate: u128, window: u64) -> u128 {
        let min = u128::from(MIN_BURST * self.max_datagram) * NANOS;
        let max = u128::from(MAX_BURST * self.max_datagram) * NANOS;
        let interval = rate.saturating_mul(BURST_INTERVAL.as_nanos());
        let by_window = u128::from(window.max(self.max_datagram)) * NANOS;
        interval.clamp(min, max).min(by_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: u16 = 1200;

    #[test]
    fn initial_window_leaves_as_one_burst() {
        let now = Instant::now();
        let mut pacer = Pacer::new(MTU);
        let window = 10 * u64::from(MTU);
        for _ in 0..10 {
            assert_eq!(pacer.delay(now, u64::from(MTU), 1_000_000, window), None);
            pacer.on_sent(now, u64::from(MTU));
        }
        // The eleventh waits one datagram's time at 1 MB/s: 1.2 ms.
        let at = pacer.delay(now, u64::from(MTU), 1_000_000, window);
        assert_eq!(at, Some(now + Duration::from_micros(1200)));
    }

    #[test]
    fn steady_rate_is_kept() {
        // 10 Gbit/s with 1200-byte datagrams for 100 000 packets: the time
        // taken is the bytes over the rate, less the first burst.
        let epoch = Instant::now();
        let rate = 1_250_000_000u64;
        let mut pacer = Pacer::new(MTU);
        let mut now = epoch;
        let packets = 100_000u64;
        for _ in 0..packets {
            if let Some(at) = pacer.delay(now, u64::from(MTU), rate, u64::MAX) {
                assert!(at > now);
                now = at;
                assert_eq!(pacer.delay(now, u64::from(MTU), rate, u64::MAX), None);
            }
            pacer.on_sent(now, u64::from(MTU));
        }
        let ideal = Duration::from_nanos(packets * u64::from(MTU) * 1_000_000_000 / rate);
        let elapsed = now - epoch;
        assert!(
            elapsed <= ideal && elapsed + Duration::from_millis(3) >= ideal,
            "{elapsed:?} vs {ideal:?}"
        );
    }

    #[test]
    fn slow_rates_accumulate_sub_byte_refills() {
        // 1000 B/s polled every 100 ns: each poll adds 0.1 byte.
        let epoch = Instant::now();
        let mut pacer = Pacer::new(MTU);
        pacer.on_sent(epoch, 12_000);
        let mut now = epoch;
        let mut polls = 0u64;
        while pacer.delay(now, 100, 1000, 12_000).is_some() {
            now += Duration::from_nanos(100);
            polls += 1;
        }
        assert_eq!(polls, 1_000_000, "100 bytes at 1000 B/s take 100 ms");
    }

    #[test]
    fn extremes_do_not_overflow() {
        let epoch = Instant::now();
        let mut pacer = Pacer::new(u16::MAX);
        // The bucket grows to 256 datagrams at this rate, but starts at 10.
        let at = pacer.delay(epoch, u64::MAX, u64::MAX, u64::MAX);
        assert!(at.is_some_and(|at| at <= epoch + Duration::from_nanos(1)));
        assert_eq!(
            pacer.delay(
                epoch + Duration::from_nanos(1),
                u64::MAX,
                u64::MAX,
                u64::MAX
            ),
            None
        );
        pacer.on_sent(epoch, u64::MAX);
        assert!(pacer.delay(epoch, u64::MAX, 0, 0).is_some());
        let later = epoch + Duration::from_secs(10 * 365 * 86_400);
        assert_eq!(pacer.delay(later, 1, u64::MAX, u64::MAX), None);
    }
}
