//! One direction of a path: loss, a rate-limited FIFO queue with optional
//! AQM, propagation delay with jitter, duplication, corruption and outages.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use thiserror::Error;

use crate::aqm::{Aqm, AqmState};
use crate::histogram::DelayHistogram;
use crate::loss::{LossModel, LossState};
use crate::packet::LinkPacket;

/// A link rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    /// `n` megabits (10^6 bits) per second.
    pub fn mbit(n: f64) -> Rate {
        Rate((n * 1e6) as u64)
    }

    /// The time to put `bytes` on the wire at this rate.
    pub fn serialization(self, bytes: usize) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        Duration::from_nanos(((bytes as u128 * 8 * 1_000_000_000) / u128::from(self.0)) as u64)
    }
}

/// How much the bottleneck queue holds before it drops arrivals (drop-tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    /// At most this many packets, the one being sent included.
    Packets(usize),
    /// At most this many bytes, the packet being sent included.
    Bytes(usize),
    /// Never full.
    Unlimited,
}

/// Extra delay per packet on top of the propagation delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jitter {
    /// Each packet is delayed by a further uniform draw from `0..=max`.
    pub max: Duration,
    /// Whether a packet may overtake an earlier one; if not, it waits for it.
    pub reorder: bool,
}

/// The link is down from `start` to `end`, measured from the link's epoch:
/// packets offered in between are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// When the link goes down.
    pub start: Duration,
    /// When it comes back.
    pub end: Duration,
}

/// Everything that describes one direction of a path.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Optional random extra delay.
    pub jitter: Option<Jitter>,
    /// Bottleneck rate; `None` sends every packet at once (no queue forms).
    pub rate: Option<Rate>,
    /// Drop-tail limit of the bottleneck queue.
    pub queue: QueueLimit,
    /// Optional active queue management (marks ECN-capable packets, drops others).
    pub aqm: Option<Aqm>,
    /// Random loss of the medium.
    pub loss: LossModel,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Probability that one random bit of a packet is flipped.
    pub corrupt: f64,
    /// Times the link is down.
    pub outages: Vec<Outage>,
}

impl Default for LinkConfig {
    /// A perfect link: no delay, no rate limit, no loss.
    fn default() -> LinkConfig {
        LinkConfig {
            delay: Duration::ZERO,
            jitter: None,
            rate: None,
            queue: QueueLimit::Unlimited,
            aqm: None,
            loss: LossModel::None,
            duplicate: 0.0,
            corrupt: 0.0,
            outages: Vec::new(),
        }
    }
}

/// A link configuration that cannot be simulated.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LinkConfigError {
    /// A probability outside 0..=1.
    #[error("{name} = {value} is not a probability (0 to 1)")]
    NotAProbability {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// A four-state loss model whose transitions out of a state exceed 1.
    #[error("four-state loss model: the transitions out of state {state} add up to more than 1")]
    TransitionsExceedOne {
        /// The state, 1 or 3.
        state: u8,
    },
    /// A rate of zero bits per second.
    #[error("the link rate must be above zero")]
    ZeroRate,
    /// An outage that ends before it starts.
    #[error("outage from {start:?} to {end:?} ends before it starts")]
    BackwardsOutage {
        /// Its start.
        start: Duration,
        /// Its end.
        end: Duration,
    },
}

impl LinkConfig {
    /// Checks every parameter.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        self.loss.validate()?;
        for (name, value) in [("duplicate", self.duplicate), ("corrupt", self.corrupt)] {
            if !(0.0..=1.0).contains(&value) {
                return Err(LinkConfigError::NotAProbability { name, value });
            }
        }
        if self.rate == Some(Rate(0)) {
            return Err(LinkConfigError::ZeroRate);
        }
        if let Some(outage) = self.outages.iter().find(|o| o.end < o.start) {
            return Err(LinkConfigError::BackwardsOutage {
                start: outage.start,
                end: outage.end,
            });
        }
        Ok(())
    }
}

/// Why the link dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// The loss model erased it.
    Random,
    /// The queue was full.
    QueueFull,
    /// The AQM dropped it (it was not ECN-capable).
    Aqm,
    /// The link was down.
    Outage,
}

/// What happened to an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// It will be delivered at this time (with CE set if `marked`).
    Scheduled {
        /// When it reaches the far end.
        at: Instant,
        /// Whether the AQM marked it CE.
        marked: bool,
    },
    /// It was dropped.
    Dropped(DropCause),
}

/// Counters of a link.
#[derive(Debug, Clone, Default)]
pub struct LinkStats {
    /// Packets offered to the link (duplicates not counted).
    pub offered: u64,
    /// Packets handed out by `dequeue_ready`, duplicates included.
    pub delivered: u64,
    /// Bytes handed out.
    pub delivered_bytes: u64,
    /// Packets lost to the loss model.
    pub dropped_random: u64,
    /// Packets dropped by a full queue.
    pub dropped_queue: u64,
    /// Packets dropped by the AQM.
    pub dropped_aqm: u64,
    /// Packets dropped during an outage.
    pub dropped_outage: u64,
    /// Packets marked CE by the AQM.
    pub marked: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Packets with a flipped bit.
    pub corrupted: u64,
    /// Packets scheduled and not yet handed out: still in the queue or
    /// crossing the medium when counted.
    pub in_flight: u64,
    /// Time each packet that went through the queue waited before being sent.
    pub queue_delay: DelayHistogram,
}

impl LinkStats {
    /// All drops, whatever the cause.
    pub fn dropped(&self) -> u64 {
        self.dropped_random + self.dropped_queue + self.dropped_aqm + self.dropped_outage
    }

    /// Every copy that entered the link: the offered packets and the
    /// extra copies the link made of them.
    pub fn copies(&self) -> u64 {
        self.offered + self.duplicated
    }

    /// Whether every copy is accounted for: delivered, dropped, or still
    /// in flight. The counters always balance; a report can show it.
    pub fn balances(&self) -> bool {
        self.copies() == self.delivered + self.dropped() + self.in_flight
    }

    fn count_drop(&mut self, cause: DropCause) {
        match cause {
            DropCause::Random => self.dropped_random += 1,
            DropCause::QueueFull => self.dropped_queue += 1,
            DropCause::Aqm => self.dropped_aqm += 1,
            DropCause::Outage => self.dropped_outage += 1,
        }
    }
}

/// A packet on its way to the far end.
struct InFlight<P> {
    at: Instant,
    order: u64,
    packet: P,
}

impl<P> PartialEq for InFlight<P> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl<P> Eq for InFlight<P> {}
impl<P> PartialOrd for InFlight<P> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for InFlight<P> {
    /// Reversed, so that the heap's top is the earliest delivery.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

/// One direction of a path. Sans-IO: time comes in as `now`, randomness
/// from the seed it was built with, so the same inputs give the same outputs.
///
/// Offer packets with [`enqueue`](Link::enqueue); ask
/// [`next_event`](Link::next_event) when the next one arrives at the far
/// end, and collect arrivals with [`dequeue_ready`](Link::dequeue_ready).
pub struct Link<P> {
    config: LinkConfig,
    epoch: Instant,
    rng: SmallRng,
    loss: LossState,
    aqm: Option<AqmState>,
    /// When the bottleneck finishes sending what it holds.
    busy_until: Instant,
    /// Packets not yet fully sent: (end of transmission, bytes).
    queued: VecDeque<(Instant, usize)>,
    queued_bytes: usize,
    last_arrival: Instant,
    order: u64,
    in_flight: BinaryHeap<InFlight<P>>,
    stats: LinkStats,
}

impl<P: LinkPacket> Link<P> {
    /// A link whose outages are timed from `epoch`, drawing its randomness
    /// from `seed`.
    pub fn new(config: LinkConfig, epoch: Instant, seed: u64) -> Result<Link<P>, LinkConfigError> {
        config.validate()?;
        let aqm = config.aqm.map(AqmState::new);
        Ok(Link {
            config,
            epoch,
            rng: SmallRng::seed_from_u64(seed),
            loss: LossState::start(),
            aqm,
            busy_until: epoch,
            queued: VecDeque::new(),
            queued_bytes: 0,
            last_arrival: epoch,
            order: 0,
            in_flight: BinaryHeap::new(),
            stats: LinkStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The counters so far.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Packets offered and not yet handed out or dropped.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Offers a packet to the link at `now`.
    pub fn enqueue(&mut self, now: Instant, packet: P) -> Admission {
        self.stats.offered += 1;
        let admission = self.admit(now, packet.clone());
        if self.config.duplicate > 0.0 && self.rng.random_bool(self.config.duplicate) {
            self.stats.duplicated += 1;
            self.admit(now, packet);
        }
        admission
    }

    fn admit(&mut self, now: Instant, mut packet: P) -> Admission {
        let since_epoch = now.saturating_duration_since(self.epoch);
        let down = self
            .config
            .outages
            .iter()
            .any(|o| since_epoch >= o.start && since_epoch < o.end);
        if down {
            return self.drop(DropCause::Outage);
        }

        // The bottleneck: a FIFO sending at `rate`.
        while self.queued.front().is_some_and(|&(end, _)| end <= now) {
            let (_, bytes) = self.queued.pop_front().expect("checked");
            self.queued_bytes -= bytes;
        }
        let size = packet.wire_len();
        let full = match self.config.queue {
            QueueLimit::Packets(limit) => self.queued.len() >= limit,
            QueueLimit::Bytes(limit) => self.queued_bytes + size > limit,
            QueueLimit::Unlimited => false,
        };
        if full {
            return self.drop(DropCause::QueueFull);
        }
        let (start, end) = match self.config.rate {
            Some(rate) => {
                let start = self.busy_until.max(now);
                (start, start + rate.serialization(size))
            }
            None => (now, now),
        };
        let sojourn = start - now;
        let mut marked = false;
        if let Some(aqm) = &mut self.aqm {
            if aqm.signal(start, sojourn, self.queued_bytes, &mut self.rng) {
                if packet.ecn().is_capable() {
                    packet.mark_ce();
                    marked = true;
                    self.stats.marked += 1;
                } else {
                    return self.drop(DropCause::Aqm);
                }
            }
        }
        self.busy_until = end;
        if end > now {
            self.queued.push_back((end, size));
            self.queued_bytes += size;
        }
        self.stats.queue_delay.record(sojourn);

        // The medium erases packets as they cross it, after the bottleneck
        // has spent their transmission time: a lost packet used its slot, as
        // on a radio or satellite link, so the path carries at most
        // rate · (1 − loss) of useful packets.
        if self.loss.next_lost(&self.config.loss, &mut self.rng) {
            return self.drop(DropCause::Random);
        }

        if self.config.corrupt > 0.0 && self.rng.random_bool(self.config.corrupt) {
            let bits = packet.corruptible_bits();
            if bits > 0 {
                packet.flip_bit(self.rng.random_range(0..bits));
                self.stats.corrupted += 1;
            }
        }

        let mut at = end + self.config.delay;
        // A jitter of zero draws nothing, so that its runs lose the same
        // packets as runs without jitter.
        if let Some(jitter) = self.config.jitter.filter(|j| !j.max.is_zero()) {
            let extra = self.rng.random_range(0..=jitter.max.as_nanos() as u64);
            at += Duration::from_nanos(extra);
            if !jitter.reorder {
                at = at.max(self.last_arrival);
            }
        }
        self.last_arrival = self.last_arrival.max(at);
        self.order += 1;
        self.stats.in_flight += 1;
        self.in_flight.push(InFlight {
            at,
            order: self.order,
            packet,
        });
        Admission::Scheduled { at, marked }
    }

    fn drop(&mut self, cause: DropCause) -> Admission {
        self.stats.count_drop(cause);
        Admission::Dropped(cause)
    }

    /// When the next packet reaches the far end, if any is on its way.
    pub fn next_event(&self) -> Option<Instant> {
        self.in_flight.peek().map(|p| p.at)
    }

    /// The next packet that has reached the far end by `now`, in arrival order.
    pub fn dequeue_ready(&mut self, now: Instant) -> Option<P> {
        if self.in_flight.peek()?.at > now {
            return None;
        }
        let packet = self.in_flight.pop()?.packet;
        self.stats.in_flight -= 1;
        self.stats.delivered += 1;
        self.stats.delivered_bytes += packet.wire_len() as u64;
        Some(packet)
    }
}
