//! Building packets: the encoder of this end's symbols, what the peer's
//! decoder has reported of them, and the packets that carry symbols,
//! acknowledgements, pings and closes.

use std::time::{Duration, Instant};

use ltx_coding::codec::{Code, EncodeError, Encoder};
use ltx_coding::{RepairKey, SymbolId, Window};

use super::early::pad_early;
use super::sent::BLIND_AFTER_PTOS;
use super::sent::{Carried, SentPacket};
use super::streams::Violation;
use super::{Connection, EcnCodepoint, Timer, Transmit};
use crate::event::{codes, CloseReason, Event, PacketKind, TraceEvent};
use crate::protection::{PacketProtection, PlainProtection, REPLAY_WINDOW};
use crate::recovery::{RepairPlan, RepairRange, RepairReason};
use crate::wire::{
    AckFrame, CloseFrame, DecoderState, Frame, Header, PacketNumber, PacketType, RepairFrame,
    SourceFrame, TruncatedPacketNumber, TruncatedSymbolId,
};

/// Ranges an ACK carries: enough to cover the packets in flight at any loss
/// rate that matters, few enough that acknowledgements stay small.
const ACK_RANGES: usize = 16;

/// The sending side of the coding.
#[derive(Default)]
pub(super) struct SymbolSender {
    /// The encoder (created at the handshake).
    pub(super) encoder: Option<Encoder>,
    /// The peer's decoder, as its acknowledgements report it.
    pub(super) peer: PeerDecoder,
    /// The key of the next repair symbol.
    next_repair_key: u16,
    /// The first source symbol sent since the encoder last held none the
    /// peer had not decoded: where the transfer under way began.
    pub(super) busy_since: SymbolId,
    /// A symbol's buffer, kept between packets.
    scratch: Vec<u8>,
    /// Packet buffers given back by [`Connection::recycle`], for the next
    /// packets: an allocation and a free less per packet.
    spare_packets: Vec<Vec<u8>>,
}

/// The length of `symbol` without its trailing zeros, which need not
/// travel.
fn trimmed_len(symbol: &[u8]) -> usize {
    symbol.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
}

/// Packet buffers [`Connection::recycle`] keeps at most: a caller that
/// gives each back before it polls the next needs one, and an idle
/// connection should hold little.
const SPARE_PACKETS: usize = 2;

/// The peer's decoder, as its latest acknowledgements report it.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PeerDecoder {
    /// Source symbols the peer may hold beyond its first unknown one.
    pub(super) window: u64,
    /// The peer's first unknown source symbol.
    pub(super) decoded_through: SymbolId,
    /// One past the newest symbol the peer has seen.
    pub(super) end: SymbolId,
    /// The largest end the peer has reported: its decoder's end is never
    /// below it, which truncated symbol ids rely on.
    pub(super) largest_end: SymbolId,
    /// Unknown source symbols the peer reported.
    pub(super) missing: u64,
    /// Repair equations the peer holds that it could not yet solve with.
    pub(super) rank: u64,
}

impl SymbolSender {
    /// Source symbols sent that the peer has not yet reported decoded.
    pub(super) fn unconfirmed(&self) -> u64 {
        self.encoder.as_ref().map_or(0, |e| {
            e.next_id().0 - self.peer.decoded_through.0.min(e.next_id().0)
        })
    }

    /// The peer reported its decoder in its newest acknowledgement: the
    /// encoder forgets what the peer has decoded. A peer that reports a
    /// symbol never sent violates the protocol.
    pub(super) fn on_decoder_report(&mut self, state: &DecoderState) -> Result<(), Violation> {
        if state.decoded_through > self.peer.decoded_through {
            self.peer.decoded_through = state.decoded_through;
        }
        if let Some(encoder) = self.encoder.as_mut() {
            if state.end > encoder.next_id() {
                return Err(Violation {
                    code: codes::PROTOCOL_VIOLATION,
                    reason: format!("peer reports symbol {} never sent", state.end),
                });
            }
            encoder.acknowledge(self.peer.decoded_through);
        }
        self.peer.end = state.end;
        self.peer.largest_end = self.peer.largest_end.max(state.end);
        self.peer.missing = state.missing;
        self.peer.rank = state.rank;
        Ok(())
    }

    /// `id` in as few bytes as the peer's decoder needs to expand it: its
    /// end when the frame arrives is at least the largest it reported, and
    /// at most one past the newest symbol sent, plus what packets sent
    /// after this one but received before it add (the peer accepts none
    /// [`REPLAY_WINDOW`] or more behind its newest, and each packet carries
    /// at most one new symbol).
    pub(super) fn truncate(&self, id: SymbolId) -> TruncatedSymbolId {
        let sent_end = self.encoder.as_ref().map_or(id, |e| e.next_id());
        let highest_end = SymbolId(sent_end.0.saturating_add(REPLAY_WINDOW));
        TruncatedSymbolId::truncate(id, self.peer.largest_end, highest_end)
    }
}

impl Connection {
    /// Gives back the buffer of a [`Transmit`] once its bytes have been
    /// sent or copied, for a later packet to be built in: a sender at
    /// gigabits otherwise allocates and frees one per datagram. Buffers
    /// beyond two, or too small for a datagram, are dropped.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        let spare = &mut self.sender.spare_packets;
        if spare.len() < SPARE_PACKETS && buf.capacity() >= usize::from(self.config.max_datagram) {
            buf.clear();
            spare.push(buf);
        }
    }

    /// Source symbols sent that the peer has not yet reported decoded.
    pub(super) fn unconfirmed_symbols(&self) -> u64 {
        self.sender.unconfirmed()
    }

    /// A packet's header, with the next packet number: the buffer, the
    /// number and the header's length.
    pub(super) fn begin_packet(&mut self, packet_type: PacketType) -> (Vec<u8>, u64, usize) {
        let number = self.recovery.next_number;
        self.recovery.next_number += 1;
        let mut buf = self
            .sender
            .spare_packets
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(usize::from(self.config.max_datagram)));
        let header = Header {
            packet_type,
            key_phase: false,
            dcid: self.remote_cid,
            number: TruncatedPacketNumber::truncate(
                PacketNumber(number),
                self.recovery.largest_acked.map(PacketNumber),
            ),
        };
        header.emit(&mut buf);
        let header_len = buf.len();
        (buf, number, header_len)
    }

    /// Gives back packet `number`, begun and left empty: the next packet
    /// takes its number.
    fn abandon_packet(&mut self, number: u64, buf: Vec<u8>) {
        debug_assert_eq!(self.recovery.next_number, number + 1);
        self.recovery.next_number = number;
        self.recycle(buf);
    }

    /// Seals the packet and accounts for it: in flight (with what it
    /// `carried`) for recovery, the probe and keep-alive timers, counters
    /// and traces.
    pub(super) fn finish_packet(
        &mut self,
        now: Instant,
        mut buf: Vec<u8>,
        number: u64,
        header_len: usize,
        kind: PacketKind,
        carried: Option<Carried>,
    ) -> Transmit {
        if PacketType::of_first_byte(buf[0]) == Some(PacketType::EarlyData) {
            self.seal_early(number, header_len, &mut buf);
        } else if kind == PacketKind::Handshake && self.handshake_sealed_apart() {
            PlainProtection.seal(number, header_len, &mut buf);
        } else {
            self.protection.seal(number, header_len, &mut buf);
        }
        let size = buf.len() as u64;
        self.amplification.on_sent(size);
        self.paths.on_sent(size);
        if let Some(carried) = carried {
            let packet = SentPacket {
                time: now,
                size,
                in_flight: true,
                carried,
                app_limited: self.is_app_limited(size),
                blind: self.recovery.pto_count >= BLIND_AFTER_PTOS,
            };
            self.recovery.on_packet_sent(now, number, packet);
            if self.timers[Timer::Probe as usize].is_none() {
                self.set_timer(Timer::Probe, now + self.pto());
            }
        }
        if let Some(keep_alive) = self.config.keep_alive {
            self.set_timer(Timer::KeepAlive, now + keep_alive);
        }
        self.stats.bytes_sent += size;
        self.stats.packets_sent += 1;
        if self.config.trace {
            self.events.push_back(Event::Trace(TraceEvent::PacketSent {
                number: PacketNumber(number),
                bytes: buf.len(),
                kind,
            }));
        }
        Transmit {
            contents: buf,
            ecn: EcnCodepoint::Ect0,
            destination: self.paths.remote,
        }
    }

    /// Whether a packet of `size` bytes leaves application-limited: no
    /// stream data waits behind it, and the window would still hold a full
    /// datagram more.
    fn is_app_limited(&self, size: u64) -> bool {
        let room = self.recovery.controller.window();
        let after = self.recovery.sent.bytes_in_flight + size;
        !self.streams.has_pending() && after + u64::from(self.config.max_datagram) <= room
    }

    /// A CLOSE with `code` and `reason`.
    pub(super) fn build_close(&mut self, code: u64, reason: &str) -> Transmit {
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        Frame::Close(CloseFrame {
            code,
            reason: reason.as_bytes(),
        })
        .emit(&mut buf);
        let now = self.recovery.last_sent;
        self.finish_packet(now, buf, number, header_len, PacketKind::Close, None)
    }

    /// A PING: ack-eliciting, carrying nothing.
    pub(super) fn build_ping(&mut self, now: Instant) -> Transmit {
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        Frame::Ping.emit(&mut buf);
        self.finish_packet(
            now,
            buf,
            number,
            header_len,
            PacketKind::Ping,
            Some(Carried::Other),
        )
    }

    /// Writes an ACK of the packets received, with the decoder's state, if
    /// any were.
    pub(super) fn emit_ack(&mut self, now: Instant, buf: &mut Vec<u8>) {
        let ranges = self.acks.received.ranges(ACK_RANGES);
        if ranges.is_empty() {
            return;
        }
        let delay = self
            .acks
            .largest_received_time
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        let ack = AckFrame {
            ranges,
            ack_delay_us: delay.as_micros() as u64,
            ecn: self.acks.ecn,
            decoder: self.receiver.state(),
        };
        Frame::Ack(ack).emit(buf);
        self.acks.eliciting_unacked = 0;
        self.timers[Timer::Ack as usize] = None;
    }

    /// A packet with an ACK alone.
    pub(super) fn build_ack(&mut self, now: Instant) -> Transmit {
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        self.emit_ack(now, &mut buf);
        self.finish_packet(now, buf, number, header_len, PacketKind::Ack, None)
    }

    /// A new source symbol filled from the streams, if they have data, in
    /// a packet of `packet_type` (Data, or EarlyData in a first flight).
    pub(super) fn build_source(
        &mut self,
        now: Instant,
        packet_type: PacketType,
    ) -> Option<Transmit> {
        let next_id = self.sender.encoder.as_ref()?.next_id();
        // The stream bytes go straight into the packet, after the source
        // frame's header, and from there into the encoder: one copy less
        // than building the symbol apart. An early packet's padding depends
        // on the symbol's length, so it is built apart.
        let (buf, number, header_len, data_start) = if packet_type == PacketType::EarlyData {
            let mut symbol = std::mem::take(&mut self.sender.scratch);
            symbol.clear();
            self.streams.fill(
                &mut symbol,
                self.symbol_size,
                &mut self.events,
                self.config.trace,
            );
            if symbol.is_empty() {
                self.sender.scratch = symbol;
                return None;
            }
            let (mut buf, number, header_len) = self.begin_packet(packet_type);
            let used = trimmed_len(&symbol);
            pad_early(&mut buf, used);
            Frame::Source(SourceFrame {
                id: self.sender.truncate(next_id),
                data: &[],
            })
            .emit(&mut buf);
            let data_start = buf.len();
            buf.extend_from_slice(&symbol[..used]);
            self.sender.scratch = symbol;
            (buf, number, header_len, data_start)
        } else {
            let (mut buf, number, header_len) = self.begin_packet(packet_type);
            Frame::Source(SourceFrame {
                id: self.sender.truncate(next_id),
                data: &[],
            })
            .emit(&mut buf);
            let data_start = buf.len();
            self.streams.fill(
                &mut buf,
                self.symbol_size,
                &mut self.events,
                self.config.trace,
            );
            if buf.len() == data_start {
                self.abandon_packet(number, buf);
                return None;
            }
            (buf, number, header_len, data_start)
        };
        let encoder = self.sender.encoder.as_mut()?;
        let idle = encoder.next_id() == encoder.oldest();
        let id = match encoder.push(&buf[data_start..]) {
            Ok(id) => id,
            Err(EncodeError::IdsExhausted) => {
                self.abandon_packet(number, buf);
                self.start_close(
                    now,
                    codes::PROTOCOL_VIOLATION,
                    "symbol ids exhausted".into(),
                    CloseReason::LocallyAborted {
                        code: codes::PROTOCOL_VIOLATION,
                        reason: "symbol ids exhausted".into(),
                    },
                );
                return None;
            }
            Err(e) => unreachable!("the window was checked before building: {e}"),
        };
        debug_assert_eq!(id, next_id);
        if idle {
            self.sender.busy_since = id;
        }
        // Trailing zeros need not travel: the receiver pads the symbol back.
        let mut buf = buf;
        buf.truncate(data_start + trimmed_len(&buf[data_start..]));
        self.stats.source_symbols_sent += 1;
        let estimate = self.recovery.loss.estimate();
        let horizon = self.horizon();
        self.repair.on_source_sent(id, &estimate, &horizon);
        let next = SymbolId(id.0 + 1);
        let message = self.streams.take_message_sent();
        if !self.streams.has_pending()
            || !self
                .repair
                .scheme
                .may_send_source(next, self.sender.peer.decoded_through)
        {
            self.arm_tail(&estimate);
        } else {
            let guard = message && self.repair.scheme.guards_messages();
            self.repair
                .guards
                .on_source_sent(id, number, guard, &estimate);
        }
        self.repair.scheme.on_source_sent(number, id);
        Some(self.finish_packet(
            now,
            buf,
            number,
            header_len,
            PacketKind::Source(id),
            Some(Carried::Source),
        ))
    }

    /// A repair symbol for `reason`, over the window and in the code the
    /// redundancy scheme plans (the default: the newest symbols held for
    /// proactive repair, the peer's oldest gaps otherwise).
    pub(super) fn build_repair(&mut self, now: Instant, reason: RepairReason) -> Option<Transmit> {
        let span = self.repair_span();
        let encoder = self.sender.encoder.as_ref()?;
        if encoder.next_id() == encoder.oldest() {
            return None;
        }
        let range = RepairRange {
            oldest: encoder.oldest(),
            next: encoder.next_id(),
            peer_end: self.sender.peer.end,
            max_span: span,
            reach_flight: false,
        };
        let plan = self.repair.plan(reason, range)?;
        let carried = if reason == RepairReason::Proactive {
            Carried::Repair
        } else {
            Carried::WideRepair
        };
        self.send_repair(now, reason, plan, carried)
    }

    /// A message's guard: a repair over source symbol `id` alone, which
    /// covers no gap but its own, so it is not counted among the repairs
    /// in flight.
    pub(super) fn build_guard(&mut self, now: Instant, id: SymbolId) -> Option<Transmit> {
        let plan = RepairPlan {
            window: Window { first: id, len: 1 },
            code: Code::default(),
        };
        self.send_repair(now, RepairReason::Tail, plan, Carried::Other)
    }

    /// A packet carrying the repair `plan`, sent for `reason`, or `None` if
    /// the encoder no longer holds its window.
    fn send_repair(
        &mut self,
        now: Instant,
        reason: RepairReason,
        plan: RepairPlan,
        carried: Carried,
    ) -> Option<Transmit> {
        let key = RepairKey(self.sender.next_repair_key);
        self.sender.next_repair_key = self.sender.next_repair_key.wrapping_add(1);
        let mut data = std::mem::take(&mut self.sender.scratch);
        data.resize(self.symbol_size, 0);
        let encoder = self.sender.encoder.as_mut()?;
        if encoder
            .repair_with(plan.code, plan.window, key, &mut data)
            .is_err()
        {
            self.sender.scratch = data;
            return None;
        }
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        Frame::Repair(RepairFrame {
            first: self.sender.truncate(plan.window.first),
            len: plan.window.len,
            key,
            density: plan.code.density_byte(),
            data: &data,
        })
        .emit(&mut buf);
        self.sender.scratch = data;
        self.stats.repair_symbols_sent += 1;
        self.repair.scheme.on_repair_sent(number, reason, &plan);
        Some(self.finish_packet(
            now,
            buf,
            number,
            header_len,
            PacketKind::Repair {
                reason,
                window: plan.window,
            },
            Some(carried),
        ))
    }
}
