//! A one-bottleneck path in virtual time, for the controllers' unit tests:
//! a sender limited by the controller's window and pacing rate, a FIFO
//! queue of fixed capacity served at a fixed rate, random loss before the
//! queue, optional ECN marking above a queueing-delay threshold, and
//! acknowledgements back after the propagation delay.
//!
//! The path knows which drops were the queue's, and tells the controller
//! (`above_baseline`) as the connection's loss estimator would: random loss
//! is never above the baseline, queue overflow always is.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ltx_proto::congestion::Controller;
use ltx_proto::rtt::RttEstimator;

/// The path's fixed parameters.
#[derive(Debug, Clone)]
pub(crate) struct TestPath {
    /// Bottleneck rate, bytes per second.
    pub(crate) rate: u64,
    /// Round-trip propagation delay.
    pub(crate) base_rtt: Duration,
    /// Queue capacity, bytes.
    pub(crate) buffer: u64,
    /// Random loss probability per packet.
    pub(crate) loss: f64,
    /// Queueing delay above which packets are marked CE (`None`: no ECN).
    pub(crate) mark_above: Option<Duration>,
    /// Packet size, bytes.
    pub(crate) packet: u64,
}

impl TestPath {
    /// A path of `mbit` Mbit/s, `rtt_ms` round trip, a queue of `bdps`
    /// bandwidth-delay products, 1200-byte packets and no loss.
    pub(crate) fn new(mbit: u64, rtt_ms: u64, bdps: f64) -> TestPath {
        let rate = mbit * 1_000_000 / 8;
        let bdp = rate as f64 * rtt_ms as f64 / 1000.0;
        TestPath {
            rate,
            base_rtt: Duration::from_millis(rtt_ms),
            buffer: (bdp * bdps) as u64,
            loss: 0.0,
            mark_above: None,
            packet: 1200,
        }
    }

    /// The bandwidth-delay product, bytes.
    pub(crate) fn bdp(&self) -> u64 {
        (self.rate as f64 * self.base_rtt.as_secs_f64()) as u64
    }
}

/// What a run saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct TestRun {
    /// Bytes acknowledged.
    pub(crate) delivered: u64,
    /// Packets the queue dropped.
    pub(crate) queue_drops: u64,
    /// Packets lost at random.
    pub(crate) random_drops: u64,
    /// Packets marked CE.
    pub(crate) marks: u64,
    /// Packets sent.
    pub(crate) sent: u64,
    /// (time since start, window) after every acknowledgement.
    pub(crate) windows: Vec<(Duration, u64)>,
    /// (time since start, queueing delay) of every packet queued.
    pub(crate) queue_delays: Vec<(Duration, Duration)>,
}

impl TestRun {
    /// The windows seen in `[from, to)` since the start.
    pub(crate) fn windows_between(&self, from: Duration, to: Duration) -> Vec<u64> {
        self.windows
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, w)| *w)
            .collect()
    }

    /// The mean queueing delay of packets queued in `[from, to)`.
    pub(crate) fn mean_queue_delay(&self, from: Duration, to: Duration) -> Duration {
        let delays: Vec<Duration> = self
            .queue_delays
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, d)| *d)
            .collect();
        let total: Duration = delays.iter().sum();
        total / u32::try_from(delays.len().max(1)).unwrap_or(u32::MAX)
    }
}

/// What reaches the sender, and when.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Feedback {
    at: Instant,
    sent: Instant,
    bytes: u64,
    outcome: Outcome,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Acked { marked: bool },
    Lost { by_queue: bool },
}

/// Runs `cc` over `path` from `start` for `duration`, always with data to
/// send, with the random loss drawn from `seed`.
pub(crate) fn run(
    cc: &mut dyn Controller,
    path: &TestPath,
    start: Instant,
    duration: Duration,
    seed: u64,
) -> TestRun {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rtt = RttEstimator::new(path.base_rtt);
    let mut out = TestRun::default();
    let mut feedback: BinaryHeap<Reverse<Feedback>> = BinaryHeap::new();
    let serialise = Duration::from_secs_f64(path.packet as f64 / path.rate as f64);
    let mut busy_until = start;
    let mut next_send = start;
    let mut in_flight = 0u64;
    let mut now = start;
    let end = start + duration;
    while now < end {
        while feedback.peek().is_some_and(|f| f.0.at <= now) {
            let Reverse(f) = feedback.pop().expect("peeked");
            in_flight = in_flight.saturating_sub(f.bytes);
            match f.outcome {
                Outcome::Acked { marked } => {
                    rtt.update(Duration::ZERO, now.saturating_duration_since(f.sent));
                    cc.on_rtt_sample(now, &rtt);
                    cc.on_ack(now, f.sent, f.bytes, false, &rtt);
                    if marked {
                        cc.on_ecn_ce(now, f.sent, 1, &rtt);
                    }
                    out.delivered += f.bytes;
                    out.windows.push((now - start, cc.window()));
                }
                Outcome::Lost { by_queue } => cc.on_loss(now, f.sent, f.bytes, by_queue, &rtt),
            }
        }
        if in_flight + path.packet <= cc.window() && now >= next_send {
            let bytes = path.packet;
            in_flight += bytes;
            out.sent += 1;
            cc.on_sent(now, bytes, in_flight);
            let rate = cc.pacing_rate(&rtt).unwrap_or_else(|| {
                (cc.window() as f64 / rtt.smoothed().as_secs_f64().max(1e-6)) as u64
            });
            let gap = Duration::from_secs_f64(bytes as f64 / rate.max(1) as f64);
            next_send = now + gap.min(Duration::from_secs(1));
            let backlog = busy_until.saturating_duration_since(now);
            let queued = (backlog.as_secs_f64() * path.rate as f64) as u64;
            let outcome = if rng.random::<f64>() < path.loss {
                out.random_drops += 1;
                Outcome::Lost { by_queue: false }
            } else if queued + bytes > path.buffer.max(bytes) {
                out.queue_drops += 1;
                Outcome::Lost { by_queue: true }
            } else {
                out.queue_delays.push((now - start, backlog));
                busy_until = busy_until.max(now) + serialise;
                let marked = path.mark_above.is_some_and(|k| backlog > k);
                out.marks += u64::from(marked);
                Outcome::Acked { marked }
            };
            // A loss is noticed when the next packet's acknowledgement
            // would have come back: about a round trip after sending.
            let at = busy_until.max(now) + path.base_rtt;
            feedback.push(Reverse(Feedback {
                at,
                sent: now,
                bytes,
                outcome,
            }));
            continue;
        }
        let mut next = end;
        if let Some(f) = feedback.peek() {
            next = next.min(f.0.at);
        }
        if in_flight + path.packet <= cc.window() {
            next = next.min(next_send.max(now));
        }
        if next <= now {
            // Nothing can happen at `now` any more: move on by a tick.
            next = now + Duration::from_micros(1);
        }
        now = next;
    }
    out
}
