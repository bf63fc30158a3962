//! When to send repair, and which: the redundancy scheme, what it has
//! asked for, and the order in which the sender serves it.
//!
//! Every datagram the sender may send goes, in this order, to: a probe
//! (after a probe time-out), a reactive repair (the peer's reported
//! deficit), a message's guard (see [`guard`](super::guard)), a proactive
//! repair (a whole unit of credit, earned by source symbols), a new source
//! symbol, a tail repair (the data ran out).
//! [`RepairScheduler::next`] applies the order; the scheme decides only
//! how many of each, and over which window.

use std::time::Instant;

use ltx_coding::SymbolId;

use super::guard::MessageGuards;
use super::{Connection, Timer, Transmit};
use crate::recovery::{
    Feedback, Flight, Horizon, LossEstimate, RedundancyScheme, RepairPlan, RepairRange,
    RepairReason,
};
use crate::wire::PacketType;

/// The most unconfirmed symbols a scheme is told of when the data runs
/// out, for tails sized by them (the default sizes its tail by the whole
/// flight instead). The symbols before them had a round trip or more of
/// proactive repair behind them.
const TAIL_SPAN: u64 = 256;
/// The narrowest span of a proactive repair, in source symbols, when the
/// configuration allows it (see `Connection::repair_span`): on a short path
/// a round trip carries few symbols, and a narrower window would need a
/// wider margin for the same residual.
const MIN_REPAIR_SPAN: u64 = 256;

/// What to send next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// A repair symbol, for this reason.
    Repair(RepairReason),
    /// A new source symbol.
    Source,
    /// A repair over this source symbol alone: a message's guard.
    Guard(SymbolId),
}

/// The repair the scheme has asked for and the sender has yet to send.
pub(super) struct RepairScheduler {
    pub(super) scheme: Box<dyn RedundancyScheme>,
    /// Proactive credit: one repair per whole unit, earned by source
    /// symbols.
    credit: f64,
    /// Repairs that answer the peer's reported deficit.
    reactive_owed: u64,
    /// Whether the last answer was sized for the whole flight's losses, so
    /// its repairs may reach the newest symbol sent.
    answer_reaches_flight: bool,
    /// Repairs that protect the tail of the data sent.
    pub(super) tail_owed: u64,
    /// Whether data was sent since the tail was last armed.
    tail_armed: bool,
    /// Probes owed after a probe time-out (repairs, or pings with nothing
    /// to repair).
    pub(super) probe_owed: u32,
    /// Repairs owed to messages sent in the middle of other data.
    pub(super) guards: MessageGuards,
}

impl RepairScheduler {
    /// Nothing owed yet, spending what `scheme` decides.
    pub(super) fn new(scheme: Box<dyn RedundancyScheme>) -> RepairScheduler {
        RepairScheduler {
            scheme,
            credit: 0.0,
            reactive_owed: 0,
            answer_reaches_flight: false,
            tail_owed: 0,
            tail_armed: false,
            probe_owed: 0,
            guards: MessageGuards::default(),
        }
    }

    /// Whether there is anything to send in packet `number`, given `held`
    /// symbols the encoder holds and whether new `data` may go:
    /// `Some(true)` for a probe, which neither the congestion window nor
    /// the pacer holds back.
    pub(super) fn pending(&self, number: u64, held: u64, data: bool) -> Option<bool> {
        let probe = self.probe_owed > 0 && held > 0;
        let repair = held > 0
            && (self.reactive_owed > 0
                || self.guards.due(number, data)
                || self.credit >= 1.0
                || self.tail_owed > 0);
        (probe || data || repair).then_some(probe)
    }

    /// Takes the next thing to send in packet `number` in the order probe >
    /// reactive > guard > proactive > data > tail, counting a repair as
    /// spent; `probe` as [`pending`](Self::pending) said.
    pub(super) fn next(&mut self, number: u64, probe: bool, held: u64, data: bool) -> Option<Next> {
        if probe {
            self.probe_owed -= 1;
            return Some(Next::Repair(RepairReason::Probe));
        }
        if self.reactive_owed > 0 {
            self.reactive_owed -= 1;
            return Some(Next::Repair(RepairReason::Reactive));
        }
        if held > 0 && self.guards.due(number, data) {
            if let Some(id) = self.guards.take() {
                return Some(Next::Guard(id));
            }
        }
        if self.credit >= 1.0 && held > 0 {
            self.credit -= 1.0;
            return Some(Next::Repair(RepairReason::Proactive));
        }
        if data {
            return Some(Next::Source);
        }
        if self.tail_owed > 0 {
            self.tail_owed -= 1;
            return Some(Next::Repair(RepairReason::Tail));
        }
        None
    }

    /// Source symbol `id` was sent: it earns proactive credit, and the tail
    /// armed before it was not the end after all.
    pub(super) fn on_source_sent(
        &mut self,
        id: SymbolId,
        estimate: &LossEstimate,
        horizon: &Horizon,
    ) {
        self.credit = self
            .scheme
            .credit_after_source(id, self.credit, estimate, horizon);
        self.tail_owed = 0;
        self.tail_armed = true;
    }

    /// Whether the tail is armed (data went since it was last sized); it
    /// is disarmed by this call.
    pub(super) fn disarm_tail(&mut self) -> bool {
        std::mem::take(&mut self.tail_armed)
    }

    /// The data ran out with `unconfirmed` source symbols before `next`
    /// unreported and `flight` in flight: the tail owes the larger of what
    /// the scheme asks for and the credit left, which it takes.
    pub(super) fn size_tail(
        &mut self,
        unconfirmed: u64,
        next: SymbolId,
        flight: &Flight,
        estimate: &LossEstimate,
    ) {
        let tail = self
            .scheme
            .tail_repairs(unconfirmed.min(TAIL_SPAN), next, estimate)
            .max(self.scheme.tail_repairs_for_flight(flight, estimate));
        let credit = self.credit.ceil() as u64;
        self.tail_owed = self.tail_owed.max(tail.max(credit));
        self.credit = 0.0;
    }

    /// The peer's acknowledgement reported its decoder: the repairs that
    /// answer `feedback` replace those still owed, twice as many when
    /// `link_idle` (nothing else to send: another round trip for the last
    /// gap costs more than a few repairs).
    pub(super) fn on_feedback(
        &mut self,
        feedback: &Feedback,
        estimate: &LossEstimate,
        link_idle: bool,
    ) {
        let mut owed = self.scheme.reactive_repairs(feedback, estimate);
        self.answer_reaches_flight = self.scheme.answer_reaches_flight(feedback);
        if owed > 0 && link_idle {
            owed *= 2;
        }
        self.reactive_owed = owed;
    }

    /// At a probe time-out: at least `probes` probes.
    pub(super) fn owe_probes(&mut self, probes: u32) {
        self.probe_owed = self.probe_owed.max(probes);
    }

    /// At a probe time-out, the repairs that answered the peer's deficit
    /// are taken as lost: `feedback` is answered again, in full.
    pub(super) fn answer_again(&mut self, feedback: &Feedback, estimate: &LossEstimate) {
        let owed = self.scheme.reactive_repairs(feedback, estimate);
        self.answer_reaches_flight = self.scheme.answer_reaches_flight(feedback);
        self.reactive_owed = self.reactive_owed.max(owed);
    }

    /// The window and code of a repair for `reason` within `range`, as the
    /// scheme plans it; a reactive repair may reach the flight where the
    /// last answer was sized for it.
    pub(super) fn plan(
        &mut self,
        reason: RepairReason,
        mut range: RepairRange,
    ) -> Option<RepairPlan> {
        range.reach_flight = reason == RepairReason::Reactive && self.answer_reaches_flight;
        self.scheme.plan_repair(reason, &range)
    }

    /// Proactive repair symbols per source symbol now.
    pub(super) fn proactive_ratio(&self, estimate: &LossEstimate, horizon: &Horizon) -> f64 {
        self.scheme.proactive_ratio(estimate, horizon)
    }
}

impl Connection {
    /// The next symbol to send, if the window, the pacer and the scheme
    /// allow one.
    pub(super) fn poll_symbol(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(until) = self.first_data_hold(now) {
            self.set_timer(Timer::Pacing, until);
            return None;
        }
        let encoder = self.sender.encoder.as_ref()?;
        self.repair.guards.forget_before(encoder.oldest());
        let held = encoder.next_id().0 - encoder.oldest().0;
        let window_open = encoder.next_id().0
            < self.sender.peer.decoded_through.0 + self.sender.peer.window
            && held < u64::from(encoder.config().max_window)
            && self
                .repair
                .scheme
                .may_send_source(encoder.next_id(), self.sender.peer.decoded_through);
        let data = window_open && self.streams.has_pending();
        let number = self.recovery.next_number;
        let probe = self.repair.pending(number, held, data)?;
        if !probe && !self.window_and_pacer_allow(now) {
            return None;
        }
        let reason = match self.repair.next(number, probe, held, data)? {
            Next::Source => return self.build_source(now, PacketType::Data),
            Next::Guard(id) => {
                self.stats.repair_tail += 1;
                return self.build_guard(now, id);
            }
            Next::Repair(reason) => reason,
        };
        match reason {
            RepairReason::Probe => self.stats.repair_probe += 1,
            RepairReason::Reactive => self.stats.repair_reactive += 1,
            RepairReason::Proactive => self.stats.repair_proactive += 1,
            RepairReason::Tail => self.stats.repair_tail += 1,
        }
        self.build_repair(now, reason)
    }

    /// Whether the congestion window has room for a full datagram and the
    /// pacer lets it go now; if only the pacer holds it, the pacing timer
    /// is set for when it will.
    pub(super) fn window_and_pacer_allow(&mut self, now: Instant) -> bool {
        let size = u64::from(self.config.max_datagram);
        let window = self.recovery.controller.window();
        if self.recovery.sent.bytes_in_flight + size > window {
            return false;
        }
        let rate = self.recovery.pacing_rate();
        let bucket = self
            .recovery
            .controller
            .pacing_burst(&self.recovery.rtt)
            .map_or(window, |burst| burst.min(window));
        if let Some(at) = self.recovery.pacer.delay(now, size, rate, bucket) {
            self.set_timer(Timer::Pacing, at);
            return false;
        }
        true
    }

    /// The sender ran out of new data: protect the symbols whose fate is
    /// not known yet, on top of their proactive repairs, while the link
    /// would otherwise idle, so that the last gap rarely waits for a round
    /// trip of feedback.
    pub(super) fn arm_tail(&mut self, estimate: &LossEstimate) {
        if !self.repair.disarm_tail() {
            return;
        }
        let Some(encoder) = self.sender.encoder.as_ref() else {
            return;
        };
        let reported = self.sender.peer.end.max(self.sender.peer.decoded_through);
        let unconfirmed = encoder.next_id().0.saturating_sub(reported.0);
        let flight = Flight {
            sources: self.recovery.sent.sources_in_flight,
            repairs: self.recovery.sent.proactive_in_flight,
            rtt: self.recovery.rtt.smoothed(),
            at_stake: encoder.next_id().0.saturating_sub(self.sender.busy_since.0),
            owed: self
                .sender
                .peer
                .missing
                .saturating_sub(self.sender.peer.rank),
            answers: self.recovery.sent.repairs_in_flight,
            span: self.repair_span(),
        };
        let next = encoder.next_id();
        self.repair.size_tail(unconfirmed, next, &flight, estimate);
    }

    /// How many of the newest source symbols a proactive repair covers: the
    /// symbols a round trip carries (the congestion window in datagrams), so
    /// that the repairs of a whole flight can make up any loss in it, within
    /// [`MIN_REPAIR_SPAN`] and the configured `max_repair_span`: the coding
    /// cost per repair grows with the span.
    pub(super) fn repair_span(&self) -> u64 {
        let max = u64::from(self.config.repair.max_repair_span);
        let flight = self.recovery.controller.window() / u64::from(self.config.max_datagram).max(1);
        flight.clamp(MIN_REPAIR_SPAN.min(max), max)
    }

    /// What proactive repair is sized for now.
    pub(super) fn horizon(&self) -> Horizon {
        Horizon {
            span: self.repair_span(),
            rtt: self.recovery.rtt.smoothed(),
        }
    }

    /// What is in flight, if every repair in flight covers the peer's first
    /// unknown symbol: so it is when the symbols the peer has not decoded
    /// fit in one repair span, since a proactive repair covers the span
    /// before it and the wide ones reach back to the first unknown symbol.
    /// The source symbols counted are those sent before the newest repair
    /// in flight: the ones after it are for repairs not yet sent.
    pub(super) fn flight_covering_gaps(&self) -> Option<Flight> {
        let encoder = self.sender.encoder.as_ref()?;
        let unconfirmed = encoder
            .next_id()
            .0
            .saturating_sub(self.sender.peer.decoded_through.0);
        (unconfirmed <= self.repair_span()).then(|| Flight {
            sources: self.recovery.sent.sources_in_flight
                - self.recovery.sent.sources_after_last_repair(),
            repairs: self.recovery.sent.repairs_in_flight + self.recovery.sent.proactive_in_flight,
            rtt: self.recovery.rtt.smoothed(),
            at_stake: encoder.next_id().0.saturating_sub(self.sender.busy_since.0),
            owed: 0,
            answers: 0,
            span: 0,
        })
    }
}
