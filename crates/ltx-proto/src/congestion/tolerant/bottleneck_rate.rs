//! The bottleneck's rate as start-up reads it from the spacing of ACKs:
//! trains of ACKs, packet pairs, and how much a round's RTT samples jitter
//! (which says whether the spacing can be trusted). The reasoning is in
//! `docs/design/start-up.md`.

use std::time::{Duration, Instant};

/// A train of ACKs in start-up: ACKs with no gap longer than a quarter of
/// RTTmin between them, whose spacing is the bottleneck's.
#[derive(Debug, Clone)]
pub(super) struct Train {
    pub(super) first: Instant,
    /// When the packet of the first ACK was sent: a lost packet sent after
    /// it had its slot inside the train.
    pub(super) first_sent: Instant,
    /// When the latest packet acknowledged in it was sent.
    pub(super) last_sent: Instant,
    pub(super) last: Instant,
    /// The longest time between two of its ACKs.
    pub(super) longest_gap: Duration,
    pub(super) acks: u64,
    /// ACKs and losses: the packets whose slots the train spans.
    pub(super) packets: u64,
    /// Bytes acknowledged or declared lost after the first ACK: dispersion
    /// counts the gaps, and a lost packet took its slot at the bottleneck.
    pub(super) bytes_after_first: u64,
    /// Of those, the bytes acknowledged: what certainly went through.
    pub(super) acked_after_first: u64,
    /// ACKs dropped from its head as spaced by the sender
    /// ([`Train::spaced_by_sender`]).
    pub(super) head_dropped: u8,
    /// The smallest and the largest RTT sample its ACKs carried.
    pub(super) rtt_range: (Duration, Duration),
}

impl Train {
    /// A train that begins with the ACK at `now` of a packet sent at `sent`,
    /// whose RTT sample was `rtt`.
    pub(super) fn starting(now: Instant, sent: Instant, rtt: Duration, head_dropped: u8) -> Train {
        Train {
            first: now,
            first_sent: sent,
            last_sent: sent,
            last: now,
            longest_gap: Duration::ZERO,
            acks: 1,
            packets: 1,
            bytes_after_first: 0,
            acked_after_first: 0,
            head_dropped,
            rtt_range: (rtt, rtt),
        }
    }

    /// Takes the RTT sample an ACK of the train carried.
    pub(super) fn on_rtt_sample(&mut self, rtt: Duration) {
        let (lo, hi) = self.rtt_range;
        self.rtt_range = (lo.min(rtt), hi.max(rtt));
    }

    /// The most the rate of a paced flight may be, as the train shows it
    /// through a delay that jitters: its rate ([`Train::rate`]) over its
    /// span less the spread of its RTT samples, by which the jitter may have
    /// lengthened it. Only once the train spans [`JITTER_SPANS`] times that
    /// spread (the bound is then within a third of the reading): a shorter
    /// train on such a path (a paced flight's first ACKs, held in clumps)
    /// reads the jitter, not the rate it was sent at. A queue the train
    /// builds widens the spread as jitter does: a flight sent faster than
    /// the path drains gets a reading only once its ACKs show at least
    /// three quarters of its rate.
    pub(super) fn rate_within_jitter(&self) -> Option<u64> {
        let (lo, hi) = self.rtt_range;
        let spread = hi.saturating_sub(lo);
        let span = self.span();
        if span < spread * JITTER_SPANS {
            return None;
        }
        let rate = self.rate()?;
        let stretch = span.as_secs_f64() / span.saturating_sub(spread).as_secs_f64().max(1e-9);
        // `as` saturates; the stretch is at most 4/3.
        Some((rate as f64 * stretch) as u64)
    }

    /// Whether the ACK at `now` of a packet sent at `sent` shows the train
    /// so far to be the sender's spacing rather than the bottleneck's: it
    /// holds no more than [`HEAD_ACKS`] ACKs, and this packet left at
    /// least [`MIN_PAIR_GAP`] and a quarter of the ACKs' gap after its
    /// last (as a pair sample would not count). An application that writes
    /// a few bytes and the rest a few milliseconds later sends one
    /// datagram ahead of its burst, and from that datagram's ACK a train
    /// reads the sender's milliseconds as the path's. The train then
    /// starts again from this ACK, at most [`HEAD_ACKS`] times, so that a
    /// paced train still forms.
    pub(super) fn spaced_by_sender(&self, now: Instant, sent: Instant) -> bool {
        let send_gap = sent.saturating_duration_since(self.last_sent);
        let ack_gap = now.saturating_duration_since(self.last);
        self.acks <= HEAD_ACKS
            && u64::from(self.head_dropped) < HEAD_ACKS
            && send_gap >= MIN_PAIR_GAP
            && send_gap >= ack_gap / 4
    }

    /// `bytes` over the train's span, once it spans at least 4 packets, 2
    /// of them acknowledged, and [`MIN_PAIR_GAP`].
    fn rate_of(&self, bytes: u64) -> Option<u64> {
        let span = self.last.saturating_duration_since(self.first).as_nanos();
        if self.packets < 4 || self.acks < 2 || span < MIN_PAIR_GAP.as_nanos() {
            return None;
        }
        let rate = u128::from(bytes) * 1_000_000_000 / span;
        Some(u64::try_from(rate).unwrap_or(u64::MAX))
    }

    /// The bottleneck's rate as the train shows it: every slot it spans,
    /// lost packets' included — but no more than [`TRAIN_OVER_ACKED`] times
    /// the acknowledged rate: random loss takes a bounded share of a train,
    /// while a queue that overflows drops without bound, and counting
    /// those drops would read the sender's own rate as the path's.
    pub(super) fn rate(&self) -> Option<u64> {
        let counted = self.rate_of(self.bytes_after_first)?;
        let acked = self.acked_rate()?;
        Some(counted.min((acked as f64 * TRAIN_OVER_ACKED) as u64))
    }

    /// The time from its first ACK to its last.
    pub(super) fn span(&self) -> Duration {
        self.last.saturating_duration_since(self.first)
    }

    /// Whether the train came back in clumps rather than at a spacing:
    /// one gap between its ACKs holds a quarter of its span, more than
    /// twice the slots of the packets it lost would leave, and the span
    /// is time enough for [`EARLY_PAIR_SAMPLES`] pairs of ACKs at least
    /// [`MIN_PAIR_GAP`] apart. A path that holds packets in order behind a
    /// delayed one returns a flight so; the train's span is then the
    /// delay's jitter, not the bottleneck's spacing. A burst of loss
    /// leaves a gap too, of its packets' slots.
    pub(super) fn clumped(&self) -> bool {
        let span = self.span();
        let slot = span / u32::try_from(self.packets.max(1)).unwrap_or(u32::MAX);
        let lost = u32::try_from(self.packets.saturating_sub(self.acks)).unwrap_or(u32::MAX);
        span >= MIN_PAIR_GAP * EARLY_PAIR_SAMPLES as u32
            && self.longest_gap >= span / 4
            && self.longest_gap > slot * lost.saturating_add(1).saturating_mul(2)
    }

    /// Whether the bottleneck spread the train out: its ACKs span at least
    /// [`DISPERSION`] times the time its packets took to leave, beyond
    /// `jitter`, the most a path's delay jitter may have stretched them (the
    /// span of a flight that came back in clumps). A train sent slower than
    /// the path drains comes back at the rate it was sent: its rate is the
    /// sender's, a floor under the path's, not a measure of it.
    pub(super) fn dispersed(&self, jitter: Duration) -> bool {
        let acks = self.last.saturating_duration_since(self.first);
        let sent = self.last_sent.saturating_duration_since(self.first_sent);
        acks.saturating_sub(jitter).as_secs_f64() >= sent.as_secs_f64() * DISPERSION
    }

    /// The rate of what was acknowledged alone: below the bottleneck's by
    /// the loss rate, and never above it, however the ACKs bunch.
    pub(super) fn acked_rate(&self) -> Option<u64> {
        self.rate_of(self.acked_after_first)
    }
}

/// How many times the jitter a path showed a train must span for its
/// spread to measure the bottleneck: the jitter then moves its ends by a
/// quarter of its span at most.
pub(super) const JITTER_SPANS: u32 = 4;

/// ACKs at a train's head that may be dropped as the sender's spacing
/// ([`Train::spaced_by_sender`]).
pub(super) const HEAD_ACKS: u64 = 3;

/// How far above its acknowledged rate a train's rate may go: as far as the
/// loss a path may have, at most half its packets in random loss, and a
/// burst of loss at a train's end lengthens it no more.
pub(super) const TRAIN_OVER_ACKED: f64 = 3.0;

/// How much longer than its packets took to leave a train's ACKs must
/// span for [`Train::dispersed`]: more than jitter of the ACK path moves
/// the ends of a train sent at the rate it comes back at.
pub(super) const DISPERSION: f64 = 1.25;

/// ACKs that arrive at one instant, for packet-pair dispersion.
#[derive(Debug, Clone, Copy)]
struct AckGroup {
    at: Instant,
    bytes: u64,
    first_sent: Instant,
    last_sent: Instant,
}

/// Bottleneck rate from the spacing of ACKs of packets sent back to back:
/// two packets that left together arrive as far apart as the bottleneck
/// takes to send the second. Each pair of consecutive ACK groups whose
/// packets left much closer together than the ACKs came back is one
/// sample; a round's median is robust to losses (a gap looks slow) and to
/// ACK compression (a burst looks fast).
#[derive(Debug, Clone, Default)]
pub(super) struct PairDispersion {
    previous: Option<AckGroup>,
    current: Option<AckGroup>,
    samples: Vec<PairSample>,
    /// How many samples the round had when `early_median` last gave a rate.
    early_samples: usize,
}

/// One pair sample: the bytes that crossed the bottleneck between two ACK
/// groups, over the time between them. Packets sent in between that were
/// lost took their slots too; they are declared lost a few ACKs later and
/// added then, until the round's median is taken.
#[derive(Debug, Clone, Copy)]
struct PairSample {
    ack_gap: Duration,
    bytes: u64,
    /// The send times the sample spans: after `after`, up to `through`.
    after: Instant,
    through: Instant,
}

impl PairSample {
    /// Whether a packet sent at `sent` took its slot in this sample's gap.
    fn spans(&self, sent: Instant) -> bool {
        (sent > self.after && sent <= self.through) || sent == self.through
    }

    fn rate(&self) -> u64 {
        let rate = u128::from(self.bytes) * 1_000_000_000 / self.ack_gap.as_nanos().max(1);
        u64::try_from(rate).unwrap_or(u64::MAX)
    }
}

/// The shortest time a pair sample spans: real endpoints read and answer
/// datagrams in batches, which moves an ACK by up to a few hundred
/// microseconds, so shorter spans measure the batching, not the path.
pub(super) const MIN_PAIR_GAP: Duration = Duration::from_micros(500);

/// Pair samples that give a rate as soon as they are in.
pub(super) const EARLY_PAIR_SAMPLES: usize = 4;

/// Samples a round needs before its median is trusted.
const MIN_PAIR_SAMPLES: usize = 4;

impl PairDispersion {
    pub(super) fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64) {
        let previous_at = self.previous.map(|p| p.at);
        match &mut self.current {
            // ACKs at one instant are one group; so are ACKs until the group
            // spans MIN_PAIR_GAP from the one before, so that a sample is
            // never the jitter of a receiver or a sender that reads and
            // acknowledges datagrams in batches.
            Some(group)
                if group.at == now
                    || previous_at
                        .is_some_and(|p| group.at.saturating_duration_since(p) < MIN_PAIR_GAP) =>
            {
                group.at = now;
                group.bytes = group.bytes.saturating_add(bytes);
                group.first_sent = group.first_sent.min(sent);
                group.last_sent = group.last_sent.max(sent);
                return;
            }
            _ => {}
        }
        self.close_group();
        self.current = Some(AckGroup {
            at: now,
            bytes,
            first_sent: sent,
            last_sent: sent,
        });
    }

    /// A packet sent at `sent` was declared lost: it took its slot at the
    /// bottleneck in the gap of a sample whose packets it left among, and its
    /// bytes count there (at a high loss rate, leaving them out would read
    /// the bottleneck as slower by the share of slots lost). Of the samples
    /// that span its send time, the newest: packets sent at one instant
    /// cannot be told apart by it, and a loss is declared a few packets after
    /// its slot, so the newest sample is the nearest.
    pub(super) fn on_loss(&mut self, sent: Instant, bytes: u64) {
        if let Some(sample) = self.samples.iter_mut().rev().find(|s| s.spans(sent)) {
            sample.bytes = sample.bytes.saturating_add(bytes);
        }
    }

    fn close_group(&mut self) {
        let Some(group) = self.current.take() else {
            return;
        };
        if let Some(previous) = self.previous {
            let ack_gap = group.at.saturating_duration_since(previous.at);
            let send_gap = group
                .last_sent
                .saturating_duration_since(previous.last_sent);
            if ack_gap >= MIN_PAIR_GAP && send_gap < ack_gap / 4 {
                self.samples.push(PairSample {
                    ack_gap,
                    bytes: group.bytes,
                    after: previous.last_sent,
                    through: group.last_sent,
                });
            }
        }
        self.previous = Some(group);
    }

    /// The median sample of the round, and a new round.
    pub(super) fn take_median(&mut self) -> Option<u64> {
        self.close_group();
        let median = self.median();
        self.samples.clear();
        self.early_samples = 0;
        median
    }

    /// The median of the round's samples so far, once it has
    /// [`EARLY_PAIR_SAMPLES`] more than when this last gave one.
    pub(super) fn early_median(&mut self) -> Option<u64> {
        if self.samples.len() < self.early_samples + EARLY_PAIR_SAMPLES {
            return None;
        }
        self.early_samples = self.samples.len();
        self.median()
    }

    /// Whether the round has samples enough for a median so far.
    pub(super) fn has_median(&self) -> bool {
        self.samples.len() >= MIN_PAIR_SAMPLES
    }

    fn median(&self) -> Option<u64> {
        if self.samples.len() < MIN_PAIR_SAMPLES {
            return None;
        }
        let mut rates: Vec<u64> = self.samples.iter().map(PairSample::rate).collect();
        rates.sort_unstable();
        Some(rates[rates.len() / 2])
    }
}

/// How much a start-up round's RTT samples wander beyond what its own
/// sending explains. Packets sent together come back with RTTs that grow by
/// the bottleneck's spacing along the train, so the spread of the samples,
/// less the span of the ACKs, is the jitter of the path and of the
/// receiver's acknowledging: where it is large, ACK spacing says little of
/// the bottleneck.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RoundJitter {
    /// The first and last ACK of the round.
    acks: Option<(Instant, Instant)>,
    /// The smallest and largest RTT sample of the round.
    samples: Option<(Duration, Duration)>,
}

impl RoundJitter {
    pub(super) fn on_ack(&mut self, now: Instant, sample: Duration) {
        self.acks = Some(self.acks.map_or((now, now), |(first, _)| (first, now)));
        self.samples = Some(self.samples.map_or((sample, sample), |(lo, hi)| {
            (lo.min(sample), hi.max(sample))
        }));
    }

    /// The jitter seen so far this round.
    pub(super) fn jitter(&self) -> Duration {
        match (self.acks, self.samples) {
            (Some((first, last)), Some((lo, hi))) => {
                (hi - lo).saturating_sub(last.saturating_duration_since(first))
            }
            _ => Duration::ZERO,
        }
    }
}
