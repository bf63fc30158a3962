//! The queue that stands, as the smallest RTT of the last round trip, and
//! the queue-target response that drains it without waiting for a loss,
//! stepping aside when another flow holds the queue. The reasoning is in
//! `docs/design/congestion-response.md`.

use std::time::{Duration, Instant};

use super::Tolerant;
use crate::rtt::RttEstimator;

/// RTT samples (since the last reduction, in one round) needed
/// before their minimum is taken as the standing queue.
pub(super) const MIN_QUEUE_SAMPLES: u32 = 8;

/// A ratio `RTTmin / RTT` above this is no standing queue: random loss then
/// leaves the window alone.
pub(super) const STANDING_QUEUE: f64 = 0.9;

/// Datagrams a random-loss cut within the queue target keeps above
/// `RTTmin / RTT` of the window, at most the ninth of it that
/// [`STANDING_QUEUE`] leaves alone: the ACK clock's grain (see
/// `docs/design/congestion-response.md`).
pub(super) const ACK_CLOCK_HEADROOM: u64 = 2;

/// The queue that stands now: the smallest RTT sample of the last complete
/// round trip (of it and the current one, while it has few samples). A minimum, not
/// the latest sample, so that jitter does not pass for a queue; over one
/// round, not since the last reduction, so that one sample from a moment the
/// queue ran dry does not hide the queue that built after it for as long as
/// no loss cuts. Not over two rounds: where several flows share the queue,
/// each one's drain empties it for a moment, and a minimum over two rounds
/// nearly always holds someone's drain, so a flow that drained least saw the
/// queue stand least and drained least again.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StandingQueue {
    /// When the current round began.
    round_start: Option<Instant>,
    /// The smallest sample of the current round, and how many it took.
    current: Option<(Duration, u32)>,
    /// The same of the round before.
    previous: Option<(Duration, u32)>,
}

impl StandingQueue {
    /// Takes an RTT sample at `now`; a round lasts one smoothed RTT.
    pub(super) fn on_sample(&mut self, now: Instant, sample: Duration, round: Duration) {
        if self
            .round_start
            .is_none_or(|start| now.saturating_duration_since(start) >= round)
        {
            self.round_start = Some(now);
            self.previous = self.current.take();
        }
        self.current = Some(match self.current {
            Some((min, samples)) => (min.min(sample), samples.saturating_add(1)),
            None => (sample, 1),
        });
    }

    /// Whether no sample has been taken since the last reset.
    pub(super) fn is_empty(&self) -> bool {
        self.current.is_none() && self.previous.is_none()
    }

    /// The smallest sample of the last complete round if it holds at least
    /// [`MIN_QUEUE_SAMPLES`]; else of the two rounds, once they hold as
    /// many between them (a window of a few packets takes several rounds to
    /// give that many samples).
    pub(super) fn min(&self) -> Option<Duration> {
        if let Some((min, samples)) = self.previous {
            if samples >= MIN_QUEUE_SAMPLES {
                return Some(min);
            }
        }
        let rounds = [self.previous, self.current];
        let samples: u32 = rounds.iter().flatten().map(|&(_, n)| n).sum();
        if samples < MIN_QUEUE_SAMPLES {
            return None;
        }
        rounds.iter().flatten().map(|&(min, _)| min).min()
    }
}

/// Drains that did not drain this many times in a row mean another flow
/// holds the queue: the queue target is set aside until the queue is seen
/// below it again.
pub(super) const FUTILE_DRAINS: u32 = 2;

/// Round trips after a drain in which the queue should fall below the
/// target.
pub(super) const DRAIN_ROUNDS: u32 = 3;

/// Round trips a flow competes on loss, leaving the queue to the flow it
/// took to hold it, before it tries draining again: ltx flows whose drains
/// fall out of step each see the others' queue stand, and one that stopped
/// draining for good would grow by its additive increase while the others
/// drained and shrank, to twice their share and more.
pub(super) const COMPETE_ROUNDS: u32 = 32;

/// Watches the queue-target response: a flow that drains the queue it built
/// sees it fall; one that shares a queue with a flow that fills any buffer
/// (a loss-based TCP) does not, and would only starve itself by draining
/// again. It then competes on loss, as Coded TCP does, until the queue is
/// seen below the target again.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DrainWatch {
    /// When the last drain was.
    last: Option<Instant>,
    /// Drains in a row after which the queue stayed above the target.
    futile: u32,
    /// Whether the queue stood above the target since the last drain.
    stood: bool,
    /// Since when another flow is taken to hold the queue.
    competing: Option<Instant>,
}

impl DrainWatch {
    /// Whether a drain is allowed at `now`, given whether the standing
    /// queue is above the target.
    pub(super) fn allows(&mut self, now: Instant, above: bool, srtt: Duration) -> bool {
        if !above {
            // The queue fell below the target: the drains work.
            self.futile = 0;
            self.competing = None;
            self.stood = false;
            return false;
        }
        if self
            .competing
            .is_some_and(|since| now.saturating_duration_since(since) >= srtt * COMPETE_ROUNDS)
        {
            // Drains were futile a while ago; the flows that held the queue
            // then may have left, or be ltx flows whose drains fell out of
            // step with this one's: try again. A loss-based flow that still
            // holds it makes the next two futile too.
            self.competing = None;
            self.futile = 0;
        }
        let Some(last) = self.last else {
            return self.competing.is_none();
        };
        if now.saturating_duration_since(last) < srtt * DRAIN_ROUNDS {
            self.stood = true;
            return false;
        }
        if self.stood {
            self.futile = self.futile.saturating_add(1);
            self.stood = false;
            if self.futile >= FUTILE_DRAINS {
                self.competing = Some(now);
            }
        }
        self.competing.is_none()
    }

    /// A drain happened at `now`.
    pub(super) fn drained(&mut self, now: Instant) {
        self.last = Some(now);
        self.stood = false;
    }
}

impl Tolerant {
    /// `RTTmin / RTT`, in `[0, 1]`, where `RTT` is the standing queue (see
    /// [`StandingQueue`]); 1 without enough samples.
    pub(super) fn rtt_ratio(&self, rtt: &RttEstimator) -> f64 {
        let Some(current) = self.standing.min() else {
            return 1.0;
        };
        if current.is_zero() {
            return 1.0;
        }
        (rtt.min().as_secs_f64() / current.as_secs_f64()).clamp(0.0, 1.0)
    }

    /// The queue-target response: once a standing queue above the target
    /// has stood for a round trip or two since the last reduction, scales
    /// the window by `RTTmin / RTT`, which empties it (when this flow built
    /// it). Returns whether it did.
    pub(super) fn drain_standing_queue(&mut self, now: Instant, rtt: &RttEstimator) -> bool {
        let Some(target) = self.config.queue_target else {
            return false;
        };
        let Some(standing) = self.standing.min() else {
            return false;
        };
        let min = rtt.min();
        let limit = min + min.mul_f64(target) + rtt.queue_margin(self.config.delay_exit_extra);
        // A queue the cut's floor would leave whole is within the hosts'
        // grain (`Tolerant::delay_floor`): nothing to drain.
        let above = standing > limit && self.delay_floor(rtt) < self.window;
        if !self.drains.allows(now, above, rtt.smoothed()) || !above {
            return false;
        }
        self.scale(self.rtt_ratio(rtt), self.delay_floor(rtt));
        self.set_loss_epoch(now, rtt);
        self.drains.drained(now);
        true
    }
}
