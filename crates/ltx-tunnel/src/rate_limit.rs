//! Per-client bandwidth limits: one token bucket per direction, shared by
//! all of a client's TCP connections, in bytes.
//!
//! The server takes a chunk's bytes from the bucket before passing them
//! on. Towards the client, that holds the destination's socket unread, so
//! TCP flow control slows the destination; from the client, it holds the
//! stream unread, so ltx's flow control slows the client. A client over
//! its limit so waits, it is never cut off, and its other connections
//! share what is left fairly enough (each waits its turn for the bucket).

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota};

/// A limit on the bytes per second one client moves each way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    bytes_per_second: NonZeroU32,
}

impl RateLimit {
    /// The lowest limit: 1 kB/s (8 kbit/s).
    pub const MIN_BYTES_PER_SECOND: u64 = 1_000;

    /// A limit of `bytes_per_second` each way; `None` below
    /// [`MIN_BYTES_PER_SECOND`](Self::MIN_BYTES_PER_SECOND). Limits above
    /// 4.29 GB/s (34 Gbit/s) are held at that.
    pub fn bytes_per_second(bytes_per_second: u64) -> Option<RateLimit> {
        if bytes_per_second < Self::MIN_BYTES_PER_SECOND {
            return None;
        }
        let clamped = bytes_per_second.min(u64::from(u32::MAX)) as u32;
        Some(RateLimit {
            bytes_per_second: NonZeroU32::new(clamped)?,
        })
    }

    /// The limit, in bytes per second.
    pub fn get(self) -> u64 {
        u64::from(self.bytes_per_second.get())
    }
}

/// The two buckets of one client.
#[derive(Debug)]
pub(crate) struct ClientBuckets {
    /// Bytes from destinations to the client.
    pub(crate) to_client: Bucket,
    /// Bytes from the client to destinations.
    pub(crate) from_client: Bucket,
}

impl ClientBuckets {
    pub(crate) fn new(limit: RateLimit) -> ClientBuckets {
        ClientBuckets {
            to_client: Bucket::new(limit),
            from_client: Bucket::new(limit),
        }
    }
}

/// One direction's token bucket.
#[derive(Debug)]
pub(crate) struct Bucket {
    limiter: DefaultDirectRateLimiter,
    clock: DefaultClock,
    burst: u32,
}

/// The bucket's depth: 50 ms at the limit, and at least two copy buffers,
/// so that one chunk always fits and short bursts pass at once.
fn burst(limit: RateLimit) -> NonZeroU32 {
    let rate = limit.bytes_per_second.get();
    let floor = 2 * crate::splice::COPY_BUFFER as u32;
    NonZeroU32::new((rate / 20).max(floor)).expect("at least the floor")
}

impl Bucket {
    fn new(limit: RateLimit) -> Bucket {
        let burst = burst(limit);
        let quota = Quota::per_second(limit.bytes_per_second).allow_burst(burst);
        let clock = DefaultClock::default();
        Bucket {
            limiter: DefaultDirectRateLimiter::direct_with_clock(quota, clock.clone()),
            clock,
            burst: burst.get(),
        }
    }

    /// Waits until `bytes` may pass.
    pub(crate) async fn take(&self, bytes: usize) {
        let mut left = bytes;
        while left > 0 {
            let chunk = left.min(self.burst as usize);
            let cells = NonZeroU32::new(chunk as u32).expect("chunk > 0");
            match self.limiter.check_n(cells) {
                Ok(Ok(())) => left -= chunk,
                Ok(Err(not_until)) => {
                    let wait = not_until.wait_time_from(self.clock.now());
                    tokio::time::sleep(wait.max(Duration::from_micros(100))).await;
                }
                // A chunk never exceeds the burst; were it to, let it by
                // rather than wait forever.
                Err(_) => left -= chunk,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_below_the_floor_are_refused() {
        assert_eq!(RateLimit::bytes_per_second(999), None);
        assert_eq!(
            RateLimit::bytes_per_second(1_000).map(RateLimit::get),
            Some(1_000)
        );
        assert_eq!(
            RateLimit::bytes_per_second(u64::MAX).map(RateLimit::get),
            Some(u64::from(u32::MAX))
        );
    }

    /// 1 MB through a 2 MB/s bucket whose first 64 KiB pass at once:
    /// about half a second, in real time (the bucket reads std's clock).
    #[tokio::test]
    async fn a_bucket_passes_its_rate() {
        let limit = RateLimit::bytes_per_second(2_000_000).unwrap();
        let bucket = Bucket::new(limit);
        let start = std::time::Instant::now();
        for _ in 0..1_000 {
            bucket.take(1_000).await;
        }
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    }
}
