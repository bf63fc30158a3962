//! Acknowledgement and loss processing: the sender's record of its
//! packets, the round trip, the loss estimate, and the congestion
//! controller and pacer they feed; and the probe time-out.
//!
//! An acknowledgement goes through one pipeline ([`Recovery::on_ack`]):
//! mark the packets it names, take an RTT sample, feed the loss estimator
//! and the controller, answer ECN marks, then detect losses. What else the
//! connection keeps per packet (the redundancy scheme following its own
//! packets, counters, traces) it learns through a [`Context`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::loss_round::LossRound;
use super::sent::{AckOutcome, Carried, SentPacket, SentPackets};
use super::streams::Violation;
use super::{handshake_backoff, initial_copies, Connection, ConnectionStats, State, Timer};
use crate::config::TransportConfig;
use crate::congestion::{Controller, Pacer};
use crate::event::{codes, Event, TraceEvent};
use crate::recovery::{Feedback, LossEstimator, RedundancyScheme};
use crate::rtt::RttEstimator;
use crate::wire::{AckFrame, PacketNumber, Side};

/// Probe time-outs double at most this many times.
const MAX_PTO_BACKOFF: u32 = 1;
/// Repair symbols sent at each probe time-out: several, so that a burst of
/// loss does not cost another time-out each time (a path in a bad state
/// loses packets in runs, and a lone probe would wait out each run).
const PROBES: u32 = 4;
/// Each probe time-out in a row sends [`PROBES`] more, up to this many
/// times as many: a run of loss long enough to take a whole round of probes
/// is likely longer than that round, and the next must reach past it.
const MAX_PROBE_GROWTH: u32 = 4;

/// Loss recovery and congestion control of one connection.
pub(super) struct Recovery {
    /// The number the next packet takes.
    pub(super) next_number: u64,
    /// The packets in flight.
    pub(super) sent: SentPackets,
    /// The largest packet number the peer has acknowledged.
    pub(super) largest_acked: Option<u64>,
    /// Probe time-outs in a row without an acknowledgement.
    pub(super) pto_count: u32,
    /// Whether the peer has acknowledged a packet that carried a symbol:
    /// until then the probe time-out is shorter (see `Connection::pto`).
    pub(super) symbols_acked: bool,
    /// Losses and RTT samples per round trip, for the baseline test.
    pub(super) loss_round: LossRound,
    pub(super) rtt: RttEstimator,
    pub(super) loss: LossEstimator,
    pub(super) controller: Box<dyn Controller>,
    pub(super) pacer: Pacer,
    /// When the last packet in flight left.
    pub(super) last_sent: Instant,
    /// ECN-CE marks the peer has reported so far.
    pub(super) peer_ce: u64,
}

/// What the rest of the connection learns of each packet's fate.
pub(super) trait Context {
    /// Packet `number` was acknowledged.
    fn on_packet_acked(&mut self, number: u64);
    /// Packet `number` was declared lost.
    fn on_packet_lost(&mut self, number: u64);
    /// The peer reported `newly` more ECN-CE marks.
    fn on_ce_marks(&mut self, newly: u64);
}

/// What an acknowledgement did, for what the connection does next.
#[derive(Debug, Clone, Copy)]
pub(super) struct AckProcessed {
    /// Whether it acknowledged the largest packet number so far: only then
    /// is its report of the peer's decoder news.
    pub(super) newest: bool,
    /// When the next packet in flight is declared lost by time, if any.
    pub(super) loss_timer: Option<Instant>,
}

impl Recovery {
    /// Nothing sent yet, with `controller` built for the connection.
    pub(super) fn new(
        config: &TransportConfig,
        controller: Box<dyn Controller>,
        now: Instant,
    ) -> Recovery {
        Recovery {
            next_number: 0,
            sent: SentPackets::default(),
            largest_acked: None,
            pto_count: 0,
            symbols_acked: false,
            loss_round: LossRound::default(),
            rtt: RttEstimator::new(config.initial_rtt),
            loss: match config.expected_loss {
                Some(rate) => LossEstimator::new().with_prior(rate),
                None => LossEstimator::new(),
            },
            controller,
            pacer: Pacer::new(config.max_datagram),
            last_sent: now,
            peer_ce: 0,
        }
    }

    /// A packet counted in flight left at `now`.
    pub(super) fn on_packet_sent(&mut self, now: Instant, number: u64, packet: SentPacket) {
        let size = packet.size;
        self.sent.on_sent(number, packet);
        self.controller
            .on_sent(now, size, self.sent.bytes_in_flight);
        self.pacer.on_sent(now, size);
        self.last_sent = now;
    }

    /// The pacing rate, bytes per second: the controller's, or 1.25
    /// windows per smoothed round trip.
    pub(super) fn pacing_rate(&self) -> u64 {
        self.controller.pacing_rate(&self.rtt).unwrap_or_else(|| {
            let srtt = self.rtt.smoothed().as_secs_f64().max(1e-6);
            ((self.controller.window() as f64 * 1.25) / srtt) as u64
        })
    }

    /// Processes an acknowledgement received at `now`: the packets it
    /// names, an RTT sample from the largest (its delay capped at
    /// `max_ack_delay`), the loss estimator and the controller, ECN marks,
    /// then loss detection. A peer that acknowledges a packet never sent
    /// violates the protocol.
    pub(super) fn on_ack(
        &mut self,
        now: Instant,
        ack: &AckFrame,
        max_ack_delay: Duration,
        context: &mut impl Context,
    ) -> Result<Option<AckProcessed>, Violation> {
        let Some(largest) = ack.largest() else {
            return Ok(None);
        };
        let largest = largest.0;
        if largest >= self.next_number {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("acknowledgement of packet {largest}, never sent"),
            });
        }
        let mut outcome = AckOutcome::default();
        for range in &ack.ranges {
            self.sent
                .on_ack_range(*range.start(), *range.end(), &mut outcome);
        }
        let newest = self.largest_acked.is_none_or(|l| largest >= l);
        if newest {
            // The sample is taken when the largest is newly acknowledged and
            // the acknowledgement covers a packet counted in flight: from
            // the largest if it is one, else from the newest that is (the
            // largest may be a bare acknowledgement, which is not timed; a
            // peer holds such a sample at most its acknowledgement delay
            // longer). Ranges come newest first, so the newest packet is
            // looked for, not taken as the last one found.
            let timed = outcome.acked.iter().max_by_key(|(number, _)| *number);
            let newly = self.largest_acked.is_none_or(|l| largest > l);
            if let (Some(&(_, packet)), true) = (timed, newly) {
                let ack_delay = Duration::from_micros(ack.ack_delay_us).min(max_ack_delay);
                self.take_rtt_sample(now, ack_delay, packet.time);
            }
            self.largest_acked = Some(largest);
        }
        self.loss_round
            .on_acked(now, self.rtt.smoothed(), outcome.acked.len() as u64);
        for &(number, packet) in &outcome.acked {
            self.symbols_acked |= packet.carried != Carried::Other;
            if !packet.blind {
                self.loss.on_delivered(number);
            }
            context.on_packet_acked(number);
            self.controller
                .on_ack(now, packet.time, packet.size, packet.app_limited, &self.rtt);
        }
        for &number in &outcome.spurious {
            self.loss.on_spurious(number);
        }
        if ack.ecn.ce > self.peer_ce {
            let newly = ack.ecn.ce - self.peer_ce;
            self.peer_ce = ack.ecn.ce;
            context.on_ce_marks(newly);
            let sent = outcome.acked.last().map_or(now, |(_, p)| p.time);
            self.controller.on_ecn_ce(now, sent, newly, &self.rtt);
        }
        if !outcome.acked.is_empty() {
            self.pto_count = 0;
        }
        let loss_timer = self.detect_losses(now, context);
        Ok(Some(AckProcessed { newest, loss_timer }))
    }

    /// An RTT sample of a packet sent at `sent`, acknowledged at `now`
    /// after `ack_delay` at the peer.
    fn take_rtt_sample(&mut self, now: Instant, ack_delay: Duration, sent: Instant) {
        self.rtt
            .update(ack_delay, now.saturating_duration_since(sent));
        self.loss_round
            .on_rtt_sample(now, self.rtt.smoothed(), self.rtt.latest());
        self.controller.on_rtt_sample(now, &self.rtt);
    }

    /// Declares lost the packets acknowledged past by three, or sent more
    /// than 9/8 of a round trip before one acknowledged; tells the loss
    /// estimator, the context and the controller (one call per packet,
    /// with its own send time: controllers that measure the bottleneck need
    /// to know where each loss fell). Returns when the next packet in
    /// flight would be declared lost by time.
    pub(super) fn detect_losses(
        &mut self,
        now: Instant,
        context: &mut impl Context,
    ) -> Option<Instant> {
        let largest = self.largest_acked?;
        let rtt = self.rtt.latest().max(self.rtt.smoothed());
        let loss_delay = (rtt * 9 / 8).max(Duration::from_millis(1));
        let (lost, next) = self.sent.detect_losses(now, largest, loss_delay);
        if lost.is_empty() {
            return next;
        }
        for &(number, packet) in &lost {
            if !packet.blind {
                self.loss.on_lost(number);
            }
            context.on_packet_lost(number);
        }
        self.loss_round
            .on_lost(now, self.rtt.smoothed(), lost.len() as u64);
        let above = self
            .loss_round
            .above_baseline(&self.loss.estimate(), &self.rtt);
        for &(_, packet) in &lost {
            self.controller
                .on_loss(now, packet.time, packet.size, above, &self.rtt);
        }
        next
    }
}

/// The connection's [`Context`]: the redundancy scheme follows its own
/// packets, the counters count, and losses are traced when asked for.
pub(super) struct PacketFates<'a> {
    pub(super) scheme: &'a mut dyn RedundancyScheme,
    pub(super) stats: &'a mut ConnectionStats,
    pub(super) events: &'a mut VecDeque<Event>,
    pub(super) trace: bool,
}

impl Context for PacketFates<'_> {
    fn on_packet_acked(&mut self, number: u64) {
        self.scheme.on_packet_acked(number);
    }

    fn on_packet_lost(&mut self, number: u64) {
        self.scheme.on_packet_lost(number);
        self.stats.packets_lost += 1;
        if self.trace {
            self.events.push_back(Event::Trace(TraceEvent::PacketLost {
                number: PacketNumber(number),
            }));
        }
    }

    fn on_ce_marks(&mut self, newly: u64) {
        self.stats.ce_marks += newly;
    }
}

impl Connection {
    /// An ACK frame arrived: loss recovery processes it; if it is the
    /// newest, its report of the peer's decoder frees what the peer has
    /// and is answered with repair.
    pub(super) fn on_ack(&mut self, now: Instant, ack: &AckFrame) -> Result<(), Violation> {
        let mut fates = PacketFates {
            scheme: self.repair.scheme.as_mut(),
            stats: &mut self.stats,
            events: &mut self.events,
            trace: self.config.trace,
        };
        let processed = self
            .recovery
            .on_ack(now, ack, self.config.max_ack_delay, &mut fates)?;
        let Some(processed) = processed else {
            return Ok(());
        };
        self.set_loss_timer(processed.loss_timer);
        if processed.newest {
            self.on_decoder_report(ack)?;
        }
        if self.config.trace {
            self.trace_metrics();
        }
        if self.unconfirmed_symbols() == 0 {
            self.repair.tail_owed = 0;
        }
        self.arm_probe(now);
        self.maybe_finish_close(now);
        Ok(())
    }

    /// Runs loss detection and arms (or clears) the loss timer.
    pub(super) fn detect_losses(&mut self, now: Instant) {
        let mut fates = PacketFates {
            scheme: self.repair.scheme.as_mut(),
            stats: &mut self.stats,
            events: &mut self.events,
            trace: self.config.trace,
        };
        let next = self.recovery.detect_losses(now, &mut fates);
        self.set_loss_timer(next);
    }

    /// Arms the loss timer at `at`, or clears it.
    pub(super) fn set_loss_timer(&mut self, at: Option<Instant>) {
        self.timers[Timer::Loss as usize] = at;
    }

    /// The probe time-out fired: the client sends its Initial flight again;
    /// an established connection sends probes (repairs over everything the
    /// peer may lack, or pings) and answers the peer's last deficit again
    /// in full.
    pub(super) fn on_probe_timeout(&mut self, now: Instant) {
        self.recovery.pto_count = self.recovery.pto_count.saturating_add(1);
        match self.state {
            State::Handshaking if self.side == Side::Client => {
                self.handshake.to_send = initial_copies(self.recovery.pto_count);
            }
            State::Established => {
                let mut probes = PROBES * self.recovery.pto_count.clamp(1, MAX_PROBE_GROWTH);
                if self.recovery.pto_count == 1
                    && !self.recovery.symbols_acked
                    && self.recovery.rtt.has_sample()
                {
                    // Not one packet of the first flight of symbols came
                    // back within a measured round trip: it most likely
                    // fell whole into a run of loss. Probes enough to
                    // replace it whole (each covers every symbol) decode it
                    // if a round of them gets through. Without a sample the
                    // round trip is a guess, and the time-out may only have
                    // come early. Once only: a probe round lost whole too is
                    // more likely behind an outage, which the small growing
                    // rounds wait out more cheaply.
                    let flight = u32::try_from(self.unconfirmed_symbols()).unwrap_or(u32::MAX);
                    probes = probes.max(flight);
                }
                self.repair.owe_probes(probes);
                self.detect_losses(now);
                // The repairs that answered the peer's last reported deficit
                // have had their time: take them as lost and answer it
                // again in full, rather than one probe at a time.
                let deficit = self
                    .sender
                    .peer
                    .missing
                    .saturating_sub(self.sender.peer.rank);
                if deficit > 0 {
                    let estimate = self.recovery.loss.estimate();
                    // Nothing is taken as coming: answer all of it.
                    let feedback = Feedback {
                        deficit,
                        settled: deficit,
                        repairs_in_flight: 0,
                        sent_since_report: 0,
                        horizon: self.horizon(),
                        decoded_through: self.sender.peer.decoded_through,
                        end: self.sender.peer.decoded_through,
                        covered: None,
                    };
                    self.repair.answer_again(&feedback, &estimate);
                }
            }
            _ => {}
        }
        self.arm_probe(now);
    }

    /// The probe time-out, before its back-off: RFC 9002's, except for a
    /// first flight of symbols. Until the peer acknowledges a packet that
    /// carried one, the round-trip estimate is the handshake's one sample,
    /// and RFC 9002 takes half of it for its variance: three round trips
    /// before the first probe. A first flight that got no acknowledgement
    /// within `RTT × 5/4` (and the peer's acknowledgement delay) most
    /// likely fell whole into a run of loss, and its probes are repairs
    /// that cost a few datagrams if it did not.
    pub(super) fn pto(&self) -> Duration {
        let first_flight = self.state == State::Established
            && !self.recovery.symbols_acked
            && self.unconfirmed_symbols() > 0;
        let rtt_part = if first_flight {
            self.recovery.rtt.smoothed() * 5 / 4
        } else {
            self.recovery.rtt.pto_base()
        };
        let base = rtt_part + self.config.max_ack_delay;
        // Back off, but not for long: on a lossy path a run of lost probes
        // is bad luck more often than congestion, and a probe that waits
        // minutes would turn an outage of seconds into a failed transfer.
        let backoff = if self.state == State::Handshaking {
            handshake_backoff(self.recovery.pto_count, MAX_PTO_BACKOFF)
        } else {
            self.recovery.pto_count.min(MAX_PTO_BACKOFF)
        };
        base * 2u32.pow(backoff)
    }

    /// Arms the probe timer while anything is outstanding, clears it
    /// otherwise.
    pub(super) fn arm_probe(&mut self, now: Instant) {
        let outstanding = self.recovery.sent.ack_eliciting_in_flight > 0
            || self.state == State::Handshaking
            || self.unconfirmed_symbols() > 0;
        if outstanding {
            // A server held back by the anti-amplification limit sends no
            // probe, so its last send cannot time the next one.
            let max_datagram = u64::from(self.config.max_datagram);
            let held_back =
                !self.amplification.allows(max_datagram) || !self.paths.allows(max_datagram);
            let from = if self.state == State::Handshaking || held_back {
                now
            } else {
                self.recovery.last_sent
            };
            self.set_timer(Timer::Probe, from + self.pto());
        } else {
            self.timers[Timer::Probe as usize] = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ignored;

    impl Context for Ignored {
        fn on_packet_acked(&mut self, _: u64) {}
        fn on_packet_lost(&mut self, _: u64) {}
        fn on_ce_marks(&mut self, _: u64) {}
    }

    fn recovery(now: Instant) -> Recovery {
        let config = TransportConfig::default();
        let controller = config.congestion.build(now, config.max_datagram);
        Recovery::new(&config, controller, now)
    }

    fn sent(recovery: &mut Recovery, now: Instant, number: u64) {
        recovery.next_number = number + 1;
        let packet = SentPacket {
            time: now,
            size: 1200,
            in_flight: true,
            carried: Carried::Source,
            app_limited: true,
            blind: false,
        };
        recovery.on_packet_sent(now, number, packet);
    }

    fn ack(ranges: Vec<std::ops::RangeInclusive<u64>>) -> AckFrame {
        AckFrame {
            ranges,
            ack_delay_us: 0,
            ecn: Default::default(),
            decoder: Default::default(),
        }
    }

    /// A packet counted in flight, then bare acknowledgements (numbers 8
    /// and 9, never timed): the peer's acknowledgement of all three still
    /// times the first.
    #[test]
    fn an_acknowledgement_whose_largest_was_bare_still_times_the_newest_packet_in_flight() {
        let start = Instant::now();
        let mut recovery = recovery(start);
        sent(&mut recovery, start, 7);
        recovery.next_number = 10;
        let now = start + Duration::from_millis(600);
        let max_ack_delay = Duration::from_millis(25);
        let frame = ack(vec![7..=9]);
        recovery
            .on_ack(now, &frame, max_ack_delay, &mut Ignored)
            .expect("a valid acknowledgement");
        assert!(recovery.rtt.has_sample());
        assert_eq!(recovery.rtt.latest(), Duration::from_millis(600));
    }

    /// Ranges come newest first: the sample is the newest packet's even
    /// when an older range is acknowledged in the same frame.
    #[test]
    fn the_sample_is_the_newest_packet_when_an_older_range_fills_in() {
        let start = Instant::now();
        let mut recovery = recovery(start);
        sent(&mut recovery, start, 1);
        sent(&mut recovery, start + Duration::from_millis(100), 5);
        let now = start + Duration::from_millis(700);
        let frame = ack(vec![5..=5, 1..=1]);
        recovery
            .on_ack(now, &frame, Duration::from_millis(25), &mut Ignored)
            .expect("a valid acknowledgement");
        assert_eq!(recovery.rtt.latest(), Duration::from_millis(600));
    }
}
