//! Start-up: the window jumps to the bandwidth-delay product measured from
//! the spacing of the first flights' ACKs (packet pairs and trains), then
//! paces at that rate with a small probe burst per round, and ends on a
//! queue, a mark, a loss above the random baseline or a rate that stopped
//! growing — never on random loss. The reasoning and the alternatives
//! weighed are in `docs/design/start-up.md`.

use std::time::{Duration, Instant};

use super::bottleneck_rate::{
    PairDispersion, RoundJitter, Train, EARLY_PAIR_SAMPLES, JITTER_SPANS,
};
use super::delivery_rate::DeliveryRate;
use super::Tolerant;
use crate::congestion::Controller;
use crate::rtt::RttEstimator;

/// The ACKs a start-up round's train must hold, with none of its packets
/// lost, for its rate to be sent at where the round gave no pair samples:
/// half the initial window. A short or lossy train read through a slow,
/// jittery or lossy ACK path can be far below the bottleneck, and sending
/// at it would hold start-up there.
const TRUSTED_TRAIN_ACKS: u64 = 16;

/// Start-up rounds in a row whose measured rate grew by less than
/// [`PLATEAU_GROWTH`] before start-up ends: the rate has been found, and a
/// path whose queue is too shallow to show a delay (one bandwidth-delay
/// product or less behind a flow that started late) stops growing the window
/// on this instead.
const PLATEAU_ROUNDS: u32 = 3;

/// Start-up rounds without any rate measured before start-up ends.
const NO_RATE_ROUNDS: u32 = 8;

/// The growth of the measured rate that counts as still finding it.
const PLATEAU_GROWTH: f64 = 1.1;

/// How far above a train's acknowledged rate a pair estimate may go: far
/// enough for the loss a path may have (a train at 50 % loss acknowledges
/// half the bottleneck's rate, and a burst of loss at its start shortens
/// it more), not so far that bunched ACKs read as a path many times faster
/// than it is.
const PAIR_OVER_TRAIN: f64 = 3.0;

/// How far above a train's rate, lost slots counted, a pair estimate may go:
/// enough for a rate the train, sent no faster than the last estimate,
/// could not show, one round's growth at a time.
const PAIR_OVER_SLOTS: f64 = 1.25;

/// The largest jitter of a round's RTT samples, as a fraction of RTTmin,
/// for which start-up sends at the rate the round's pairs measured (see
/// [`RoundJitter`]): a path whose delay jitters, or a receiver that
/// acknowledges in batches, scatters the ACKs, and the median of their
/// spacing can fall far below the path's rate.
const STEADY_JITTER: f64 = 0.125;

/// How many consecutive RTT samples must show a queue to end start-up.
pub(super) const QUEUE_SAMPLES: usize = 8;

/// The start-up phase's own state: its round, the bottleneck-rate
/// estimators and what they have measured so far.
#[derive(Debug, Clone)]
pub(super) struct Startup {
    /// When the current start-up round began: at its first ACK.
    pub(super) round_start: Option<Instant>,
    pub(super) train: Option<Train>,
    /// How long the current train waits for its next ACK before it ends:
    /// a quarter of RTTmin, as of its last ACK.
    train_gap: Duration,
    /// The ACKs of the last train that ended on its own time (see
    /// [`Tolerant::clean_train_acks`]), for the end of its round.
    ended_clean_acks: Option<u64>,
    /// The last RTT samples of start-up, a ring.
    recent_rtts: [Duration; QUEUE_SAMPLES],
    /// How many samples `recent_rtts` has taken.
    rtt_samples: u64,
    /// The largest rate of the start-up rounds before this one and of every
    /// ACK train so far.
    pub(super) settled_rate: Option<u64>,
    /// This start-up round's packet-pair rate so far: the median of all its
    /// pair samples, which replaces the one taken from its first few.
    round_pair_rate: Option<u64>,
    /// The rate at which the measured rate last grew by
    /// [`PLATEAU_GROWTH`], and the start-up rounds since.
    plateau: Option<(u64, u32)>,
    /// Start-up rounds that ended without any rate measured.
    rounds_without_rate: u32,
    /// Whether this round had an ACK of a packet sent with data waiting
    /// behind it: a round of application-limited packets alone (an
    /// interactive session, a keep-alive) says nothing of whether the
    /// rate has stopped growing.
    round_window_limited: bool,
    /// The acknowledged rate of the last ACK train that had one.
    last_train_rate: Option<u64>,
    /// The rate of the last ACK train that had one, lost slots counted.
    last_train_slots: Option<u64>,
    /// When the first packet of the train behind `last_train_slots` was
    /// sent.
    last_train_sent: Option<Instant>,
    /// The last train's [`Train::rate_within_jitter`].
    last_train_within_jitter: Option<u64>,
    /// Packet-pair dispersion: the ACK group being gathered (all ACKs at one
    /// instant) and the one before it.
    pairs: PairDispersion,
    /// Datagrams of this start-up round's probe burst still to send.
    pub(super) burst_left: u64,
    /// The RTT samples' jitter in this start-up round.
    jitter: RoundJitter,
    /// The bottleneck's rate read from the handshake's answers, where the
    /// initial window is more than the path holds: the first flight is
    /// paced at it until start-up measures a rate of its own.
    pub(super) first_flight_rate: Option<u64>,
    /// Whether the rate was measured on a path steady enough to send at it
    /// (a jitter of the round's RTT samples within [`STEADY_JITTER`] of
    /// RTTmin); otherwise start-up grows the window until a queue shows.
    pub(super) measured: bool,
    /// Whether a start-up train came back in clumps ([`Train::clumped`]):
    /// the path holds packets behind delayed ones, pairs of ACKs measure
    /// its jitter, and only a train the bottleneck spread out
    /// ([`Train::dispersed`]) measures its rate.
    pub(super) held_in_clumps: bool,
    /// The longest span of a train that came back in clumps: how far the
    /// path's jitter moves an ACK, which a train must span many times over
    /// for its spread to be the bottleneck's.
    clumps_span: Duration,
    /// A rate, bytes per second, whose product the window does not grow
    /// past while no rate is measured: after a careful-resume retreat
    /// without a queue, the saved rate.
    pub(super) growth_limit: Option<u64>,
}

impl Startup {
    /// A start-up that has measured nothing.
    pub(super) fn new() -> Startup {
        Startup {
            round_start: None,
            train: None,
            train_gap: Duration::ZERO,
            ended_clean_acks: None,
            recent_rtts: [Duration::ZERO; QUEUE_SAMPLES],
            rtt_samples: 0,
            settled_rate: None,
            round_pair_rate: None,
            last_train_rate: None,
            last_train_slots: None,
            last_train_sent: None,
            last_train_within_jitter: None,
            plateau: None,
            rounds_without_rate: 0,
            round_window_limited: false,
            pairs: PairDispersion::default(),
            burst_left: 0,
            jitter: RoundJitter::default(),
            first_flight_rate: None,
            measured: false,
            held_in_clumps: false,
            clumps_span: Duration::ZERO,
            growth_limit: None,
        }
    }
}

impl Startup {
    /// The rate the current ACK train shows, or else the last one's, lost
    /// slots counted.
    pub(super) fn measured_rate(&self) -> Option<u64> {
        self.train
            .as_ref()
            .and_then(Train::rate)
            .or(self.last_train_slots)
    }

    /// The rate a paced flight's ACK train shows, allowing for the jitter
    /// of its RTT samples ([`Train::rate_within_jitter`]), from a train
    /// whose packets were all sent at or after `since`: the current train,
    /// or else the last one. `None` while no train can tell.
    pub(super) fn jump_reading(&self, since: Option<Instant>) -> Option<u64> {
        let after = |sent: Instant| since.is_none_or(|since| sent >= since);
        let current = self
            .train
            .as_ref()
            .filter(|train| after(train.first_sent))
            .and_then(Train::rate_within_jitter);
        current.or_else(|| {
            self.last_train_within_jitter
                .filter(|_| self.last_train_sent.is_some_and(after))
        })
    }

    /// Forgets every rate measured or given for `rate`.
    pub(super) fn forget_rate(&mut self, rate: Option<u64>) {
        self.settled_rate = rate;
        self.round_pair_rate = None;
    }

    /// Takes a known rate, bytes per second, as measured.
    pub(super) fn take_rate_hint(&mut self, bytes_per_second: u64) {
        self.settled_rate = Some(bytes_per_second);
    }
}

impl Tolerant {
    /// An acknowledgement in start-up: the round, the rate estimators, the
    /// window's growth up to the measured product, and the delay exit.
    pub(super) fn on_startup_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        match self.startup.round_start {
            Some(start) if sent >= start => {
                self.end_round(now, rtt);
                if !self.in_startup {
                    return;
                }
                self.startup.round_start = Some(now);
                self.startup.burst_left = self.probe_burst(rtt);
                self.startup.jitter = RoundJitter::default();
            }
            Some(_) => {}
            None => self.startup.round_start = Some(now),
        }
        self.startup.round_window_limited |= !app_limited;
        self.startup.pairs.on_ack(now, sent, bytes);
        self.startup.jitter.on_ack(now, rtt.latest());
        // A long first flight gives enough pairs before its round ends: use
        // them at once rather than a round trip later, and the round's later
        // samples as they come. The median of all of them replaces that of
        // the first few: where flows start together, the first packets of a
        // flight meet an empty bottleneck, and the later ones share it with
        // the other flows' flights.
        if let Some(rate) = self.startup.pairs.early_median() {
            self.take_pair_rate(rate, rtt);
            if let Some(bdp) = self.bdp(rtt) {
                self.window = self.window.max(bdp);
            }
        }
        let max_gap = rtt.min() / 4;
        self.startup.train_gap = max_gap;
        if self
            .startup
            .train
            .as_ref()
            .is_some_and(|train| now.saturating_duration_since(train.last) > max_gap)
        {
            self.close_train();
        }
        // Only an unpaced flight has a head the sender spaced by accident:
        // a paced one (a resumed jump, a hinted rate) is spaced throughout.
        let unpaced = self.max_rate.is_none();
        if let Some(train) = &mut self.startup.train {
            if unpaced && train.spaced_by_sender(now, sent) {
                *train = Train::starting(
                    now,
                    sent,
                    rtt.latest(),
                    train.head_dropped.saturating_add(1),
                );
                return self.after_train_ack(now, app_limited, bytes, rtt);
            }
        }
        match &mut self.startup.train {
            Some(train) => {
                train.longest_gap = train
                    .longest_gap
                    .max(now.saturating_duration_since(train.last));
                train.last = train.last.max(now);
                train.last_sent = train.last_sent.max(sent);
                train.acks = train.acks.saturating_add(1);
                train.packets = train.packets.saturating_add(1);
                train.bytes_after_first = train.bytes_after_first.saturating_add(bytes);
                train.acked_after_first = train.acked_after_first.saturating_add(bytes);
                train.on_rtt_sample(rtt.latest());
            }
            None => self.startup.train = Some(Train::starting(now, sent, rtt.latest(), 0)),
        }
        self.after_train_ack(now, app_limited, bytes, rtt);
    }

    /// When the current start-up train ends if no ACK comes first: a gap
    /// of a quarter of RTTmin after its last ACK.
    pub(super) fn train_deadline(&self) -> Option<Instant> {
        let train = self.startup.train.as_ref()?;
        Some(train.last + self.startup.train_gap)
    }

    /// The current train's gap has passed with no ACK: the train is over,
    /// and its rate is taken now rather than at the next ACK, a round trip
    /// later where a flight's tail was lost. Where a lost flight left the
    /// window at what its few ACKs grew it to, that round trip holds the
    /// whole transfer back (`docs/design/start-up.md`).
    pub(super) fn end_train(&mut self, now: Instant, rtt: &RttEstimator) {
        if self.train_deadline().is_none_or(|deadline| now < deadline) {
            return;
        }
        let clean_train_acks = self.clean_train_acks();
        self.startup.ended_clean_acks = Some(clean_train_acks);
        self.close_train();
        let paired = self.startup.pairs.has_median();
        self.trust_clean_train(paired, clean_train_acks, rtt);
        if let Some(bdp) = self.bdp(rtt) {
            self.window = self.window.max(bdp);
        }
    }

    /// A round without pair samples (a fast path, whose ACKs come too
    /// close together for four of them) measured the rate by its train
    /// alone: where the train is long and lost nothing, the same test as
    /// for pairs says whether to send at it. A train that came back in
    /// clumps ([`Train::clumped`]) measured the path's jitter, not its
    /// rate: start-up keeps growing the window rather than send at it.
    fn trust_clean_train(&mut self, paired: bool, clean_train_acks: u64, rtt: &RttEstimator) {
        if (!paired || self.startup.held_in_clumps)
            && clean_train_acks >= TRUSTED_TRAIN_ACKS
            && self.max_rate.is_some()
        {
            self.startup.measured = self.steady(rtt);
        }
    }

    /// The ACKs of the current train where it could measure the rate for
    /// start-up to send at: it lost nothing, came back neither in clumps
    /// nor at the rate it was sent, and spans the path's jitter several
    /// times over; otherwise 0.
    fn clean_train_acks(&self) -> u64 {
        self.startup
            .train
            .as_ref()
            .filter(|train| {
                train.packets == train.acks
                    && !train.clumped()
                    && train.dispersed(self.startup.clumps_span)
                    && train.span() >= self.startup.clumps_span * JITTER_SPANS
            })
            .map_or(0, |train| train.acks)
    }

    /// The rest of an ACK in start-up, once the train has taken it: the
    /// resumed jump's judgement, the queue samples, the window's growth
    /// and the exit on a queue.
    fn after_train_ack(&mut self, now: Instant, app_limited: bool, bytes: u64, rtt: &RttEstimator) {
        // The jump is judged as soon as its train is long enough to trust.
        if self.resume_unvalidated()
            && !app_limited
            && self
                .startup
                .train
                .as_ref()
                .is_some_and(|train| train.acks >= TRUSTED_TRAIN_ACKS)
        {
            self.validate_resume(now, rtt);
        }
        let slot = (self.startup.rtt_samples % QUEUE_SAMPLES as u64) as usize;
        self.startup.recent_rtts[slot] = rtt.latest();
        self.startup.rtt_samples = self.startup.rtt_samples.saturating_add(1);
        if !app_limited {
            self.window = self.window.saturating_add(bytes);
            // Once the bottleneck is measured, the window grows only a
            // little past its bandwidth-delay product: the rate measured
            // so far plus the headroom that lets a higher rate show.
            if let Some(cap) = self.startup_cap(rtt) {
                self.window = self.window.min(cap.max(self.initial_window()));
            }
        }
        if self.queueing(rtt) {
            let own = self.own_burst_queue(rtt).max(self.own_excess_queue(rtt));
            let retreating = self.resume_unvalidated() || self.resume_retreated();
            self.exit_startup(now, rtt);
            if !retreating {
                self.drain_startup_queue(rtt, own);
            }
        }
    }

    /// A loss in start-up, for the rate estimators: a loss declared within
    /// a train (by an ACK of the train, as packet-threshold detection does)
    /// of a packet sent after the train's first took its slot in it, and
    /// its bytes count; one declared by a time-out, after the train's last
    /// ACK, says nothing of its spacing and must not stretch it.
    pub(super) fn on_startup_loss(&mut self, now: Instant, largest_sent: Instant, lost_bytes: u64) {
        self.startup.pairs.on_loss(largest_sent, lost_bytes);
        if let Some(train) = &mut self.startup.train {
            if now <= train.last && largest_sent > train.first_sent {
                train.bytes_after_first = train.bytes_after_first.saturating_add(lost_bytes);
                train.packets = train.packets.saturating_add(1);
            }
        }
    }

    /// The most the window grows to in start-up once a rate is measured:
    /// the measured bandwidth-delay product and room for the probe burst.
    pub(super) fn startup_cap(&self, rtt: &RttEstimator) -> Option<u64> {
        if !self.startup.measured {
            let limit = self.startup.growth_limit?;
            let product = u128::from(limit) * rtt.min().as_nanos() / 1_000_000_000;
            return Some(u64::try_from(product).unwrap_or(u64::MAX));
        }
        if self.config.probe_burst == 0 {
            return None;
        }
        let bdp = self.bdp(rtt)?;
        let burst = self.config.probe_burst.saturating_mul(self.max_datagram);
        Some(bdp.saturating_add(burst))
    }

    /// Whether the last RTT samples all show a queue.
    pub(super) fn queueing(&self, rtt: &RttEstimator) -> bool {
        if self.startup.rtt_samples < QUEUE_SAMPLES as u64 {
            return false;
        }
        let recent_min = self
            .startup
            .recent_rtts
            .iter()
            .min()
            .copied()
            .unwrap_or_default();
        let threshold = rtt.min().mul_f64(self.config.delay_exit_ratio)
            + rtt.queue_margin(self.config.delay_exit_extra);
        recent_min >= threshold
    }

    /// Ends the current train, taking its rate if it spans at least 4
    /// packets, 2 of them acknowledged.
    pub(super) fn close_train(&mut self) {
        let Some(train) = self.startup.train.take() else {
            return;
        };
        if train.clumped() {
            self.startup.held_in_clumps = true;
            self.startup.clumps_span = self.startup.clumps_span.max(train.span());
            // Pairs read before the clumps showed measured them, not the
            // path: start-up grows the window on, unless a rate was given
            // (a hint, a saved path's jump) or a clean train confirms one.
            // A train shorter than one start-up would trust may owe its gap
            // to a burst of loss not yet declared.
            if !self.hinted && train.acks >= TRUSTED_TRAIN_ACKS {
                self.startup.measured = false;
            }
        }
        if let Some(acked) = train.acked_rate() {
            self.startup.last_train_rate = Some(acked);
        }
        if let Some(rate) = train.rate() {
            self.startup.last_train_slots = Some(rate);
            self.startup.last_train_sent = Some(train.first_sent);
            self.startup.last_train_within_jitter = train.rate_within_jitter();
            self.startup.settled_rate =
                Some(self.startup.settled_rate.map_or(rate, |max| max.max(rate)));
            self.update_max_rate();
        }
    }

    pub(super) fn update_max_rate(&mut self) {
        self.max_rate = self.startup.settled_rate.max(self.startup.round_pair_rate);
    }

    /// Takes a packet-pair estimate, capped by the rate of the current (or
    /// last) ACK train: a host that acknowledges in batches bunches ACKs,
    /// and a pair median then reads a multiple of the path's rate, while a
    /// train spans the whole flight (`docs/design/start-up.md`).
    pub(super) fn take_pair_rate(&mut self, rate: u64, rtt: &RttEstimator) {
        if !self.startup.held_in_clumps {
            self.startup.measured = self.steady(rtt);
        }
        let current = self.startup.train.as_ref();
        let acked = current
            .and_then(Train::acked_rate)
            .or(self.startup.last_train_rate);
        let slots = current
            .and_then(Train::rate)
            .or(self.startup.last_train_slots);
        let mut rate = rate;
        if let Some(acked) = acked {
            rate = rate.min((acked as f64 * PAIR_OVER_TRAIN) as u64);
        }
        if let Some(slots) = slots {
            rate = rate.min((slots as f64 * PAIR_OVER_SLOTS) as u64);
        }
        self.startup.round_pair_rate = Some(rate);
        self.update_max_rate();
    }

    /// The datagrams a start-up round sends back to back to measure the
    /// bottleneck: the configured burst, but at most half the measured
    /// bandwidth-delay product (and at least 2): the burst stands in the
    /// queue whole, and a queue of one product that holds fewer datagrams
    /// than the burst would drop its tail every round.
    pub(super) fn probe_burst(&self, rtt: &RttEstimator) -> u64 {
        let configured = self.config.probe_burst;
        match self.bdp(rtt) {
            Some(bdp) => configured.min((bdp / self.max_datagram.max(1) / 2).max(2)),
            None => configured,
        }
    }

    /// The datagrams the first flight sends back to back, paced at `rate`
    /// (the handshake's reading) after them: as the probe burst, at most
    /// half the bandwidth-delay product, but enough for the pair samples
    /// that give a rate at once. Without them the first round's rate is its
    /// train's, not trusted from so few ACKs, and start-up paces at twice
    /// the window, which overflows a small path's queue.
    pub(super) fn first_flight_burst(&self, rate: u64, rtt: &RttEstimator) -> u64 {
        let bdp = u128::from(rate) * rtt.min().as_nanos() / 1_000_000_000;
        let half = u64::try_from(bdp / 2).unwrap_or(u64::MAX) / self.max_datagram.max(1);
        let floor = EARLY_PAIR_SAMPLES as u64 + 1;
        half.clamp(floor, floor.max(self.config.probe_burst))
    }

    /// Start-up's own burst in datagrams, and the rate the rest of its
    /// round is paced at: the probe burst once a rate is measured and sent
    /// at, the first flight's burst while it is paced at the handshake's
    /// reading.
    pub(super) fn own_burst(&self, rtt: &RttEstimator) -> Option<(u64, u64)> {
        if !self.in_startup || self.config.probe_burst == 0 {
            return None;
        }
        match (self.max_rate, self.startup.first_flight_rate) {
            (Some(rate), _) if self.startup.measured => Some((self.probe_burst(rtt), rate)),
            (None, Some(rate)) => Some((self.first_flight_burst(rate, rtt), rate)),
            _ => None,
        }
    }

    /// How long the bytes this flow has in flight beyond the measured
    /// bandwidth-delay product stand in the queue, at the measured rate.
    pub(super) fn own_excess_queue(&self, rtt: &RttEstimator) -> Duration {
        let (Some(rate), Some(bdp)) = (self.max_rate, self.bdp(rtt)) else {
            return Duration::ZERO;
        };
        let excess = u128::from(self.in_flight.saturating_sub(bdp));
        let nanos = excess * 1_000_000_000 / u128::from(rate.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// How long start-up's own burst stands in the queue.
    pub(super) fn own_burst_queue(&self, rtt: &RttEstimator) -> Duration {
        let Some((datagrams, rate)) = self.own_burst(rtt) else {
            return Duration::ZERO;
        };
        let bytes = u128::from(datagrams.saturating_mul(self.max_datagram));
        let nanos = bytes * 1_000_000_000 / u128::from(rate.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Whether this start-up round's RTT samples jitter little enough
    /// (within [`STEADY_JITTER`] of RTTmin) for start-up to send at the
    /// rate it measured.
    pub(super) fn steady(&self, rtt: &RttEstimator) -> bool {
        self.startup.jitter.jitter() <= rtt.min().mul_f64(STEADY_JITTER)
    }

    /// Ends a start-up round: the window is at least the measured BDP, and
    /// start-up ends if the rate has stopped growing.
    pub(super) fn end_round(&mut self, now: Instant, rtt: &RttEstimator) {
        let paired = match self.startup.pairs.take_median() {
            Some(rate) => {
                self.take_pair_rate(rate, rtt);
                true
            }
            None => false,
        };
        let clean_train_acks = self
            .clean_train_acks()
            .max(self.startup.ended_clean_acks.take().unwrap_or(0));
        self.close_train();
        if self.startup.round_window_limited {
            self.validate_resume(now, rtt);
        }
        self.trust_clean_train(paired, clean_train_acks, rtt);
        self.startup.settled_rate = self.max_rate;
        self.startup.round_pair_rate = None;
        if let Some(bdp) = self.bdp(rtt) {
            self.window = self.window.max(bdp);
        }
        if !std::mem::take(&mut self.startup.round_window_limited) {
            // Nothing in the round was sent with data waiting: its rate is
            // the application's, not the path's.
            return;
        }
        let Some(rate) = self.max_rate else {
            // Too few ACKs come back for a train or a pair: a path that
            // loses nearly everything (an overflowing queue too shallow to
            // show a delay) would keep start-up growing the window forever.
            self.startup.rounds_without_rate = self.startup.rounds_without_rate.saturating_add(1);
            if self.startup.rounds_without_rate >= NO_RATE_ROUNDS {
                self.exit_startup(now, rtt);
            }
            return;
        };
        match self.startup.plateau {
            Some((found, _)) if rate as f64 >= found as f64 * PLATEAU_GROWTH => {
                self.startup.plateau = Some((rate, 0));
            }
            Some((found, rounds)) => {
                let rounds = rounds.saturating_add(1);
                self.startup.plateau = Some((found, rounds));
                if rounds >= PLATEAU_ROUNDS {
                    self.exit_startup(now, rtt);
                }
            }
            None => self.startup.plateau = Some((rate, 0)),
        }
    }

    /// Leaves start-up at `now`. The exit is a reduction: losses and marks of
    /// packets sent before it met the queue start-up built, and are answered.
    pub(super) fn exit_startup(&mut self, now: Instant, rtt: &RttEstimator) {
        // A congestion signal while the jump is unconfirmed: retreat,
        // unless the path has shown the jump's rate.
        self.validate_resume(now, rtt);
        if self.resume_unvalidated() {
            self.retreat(rtt);
        }
        // The train under way counts: it is the flight that met the queue,
        // sent faster than any before it.
        self.close_train();
        self.in_startup = false;
        // Start-up's rounds, sent from a window still growing, say less of
        // the path than the rounds after it.
        self.delivered = DeliveryRate::default();
        self.acked_towards_increase = 0;
        match self.bdp(rtt) {
            Some(bdp) => self.window = bdp.max(self.delay_floor(rtt)),
            None => self.scale(self.rtt_ratio(rtt), self.delay_floor(rtt)),
        }
        self.set_loss_epoch(now, rtt);
        self.ecn_epoch = Some(now);
    }

    /// After start-up ends on a queue: scales the window by `RTTmin / RTT`,
    /// RTT the smallest of the samples that showed the queue less `own`,
    /// the queue start-up's own burst, or its bytes in flight beyond the
    /// product the window is set to, keeps. Flows that start together
    /// measure the bottleneck at different moments and their rates add up
    /// to more than it has; scaled so, together they keep in flight what the
    /// path holds, and the queue empties (`docs/design/start-up.md`).
    pub(super) fn drain_startup_queue(&mut self, rtt: &RttEstimator, own: Duration) {
        let Some(&queued) = self.startup.recent_rtts.iter().min() else {
            return;
        };
        let queued = queued.saturating_sub(own).max(rtt.min());
        if queued.is_zero() {
            return;
        }
        self.scale(
            rtt.min().as_secs_f64() / queued.as_secs_f64(),
            self.delay_floor(rtt),
        );
    }
}
