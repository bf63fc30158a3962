//! Input: a datagram from the peer, opened in a buffer the connection
//! keeps, its frames handled, and its acknowledgement planned.

use std::net::SocketAddr;
use std::time::Instant;

use super::streams::{frame_name, Violation};
use super::{
    Connection, EcnCodepoint, State, Timer, DRAIN_PTOS, QUICK_ACKS, QUIET_AFTER_PTOS, TIMERS,
};
use crate::accept::packet::RetryPacket;
use crate::event::{codes, CloseReason, Event, TraceEvent};
use crate::wire::{Frame, Frames, Header, PacketNumber, PacketType, Side};

impl Connection {
    /// Handles a datagram that arrived with the given ECN codepoint, from
    /// the address the connection sends to.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8], ecn: EcnCodepoint) {
        self.handle_datagram_on(now, None, datagram, ecn);
    }

    /// Handles a datagram that arrived from `from` with the given ECN
    /// codepoint. A server whose client's newest packet comes from a new
    /// address validates it and moves there (see
    /// [`is_validating_path`](Connection::is_validating_path)); the
    /// transmits carry the address to send to.
    pub fn handle_datagram_from(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
        ecn: EcnCodepoint,
    ) {
        self.handle_datagram_on(now, Some(from), datagram, ecn);
    }

    fn handle_datagram_on(
        &mut self,
        now: Instant,
        from: Option<SocketAddr>,
        datagram: &[u8],
        ecn: EcnCodepoint,
    ) {
        if self.state == State::Closed {
            return;
        }
        if let Some(from) = from {
            self.paths.on_received(from, datagram.len());
        }
        self.amplification.on_received(datagram.len());
        if let Some(retry) = RetryPacket::parse(datagram) {
            return self.handle_retry(now, retry);
        }
        let Ok((header, header_len)) = Header::parse(datagram) else {
            self.stats.packets_dropped += 1;
            return;
        };
        let number = header
            .number
            .expand(self.acks.received.largest().map(PacketNumber));
        let handshake_packet =
            !matches!(header.packet_type, PacketType::Data | PacketType::EarlyData);
        if handshake_packet && self.handshake_sealed_apart() {
            return self.handle_secure_handshake(now, header, number, header_len, datagram);
        }
        if header.packet_type == PacketType::EarlyData && !self.opens_early() {
            // Before the Initial, or refused: not a forgery to count.
            self.stats.packets_dropped += 1;
            return;
        }
        // Opened in a buffer kept between packets: no allocation per packet.
        let mut packet = std::mem::take(&mut self.opened);
        packet.clear();
        packet.extend_from_slice(datagram);
        'handled: {
            let end = match self.open_packet(header.packet_type, number.0, header_len, &mut packet)
            {
                Ok(end) => end,
                Err(e) => {
                    self.count_refused(e);
                    break 'handled;
                }
            };
            if header.packet_type == PacketType::Data {
                self.confirm_handshake();
            }
            let accepted = match (self.side, header.packet_type) {
                // Opened with the early key: the flight was accepted.
                (Side::Server, PacketType::Initial | PacketType::EarlyData) => true,
                (Side::Client, PacketType::Handshake) => header.dcid == self.local_cid,
                (_, PacketType::Data) => {
                    header.dcid == self.local_cid && self.state != State::Handshaking
                }
                _ => false,
            };
            let previous_largest = self.acks.received.largest();
            if !accepted || !self.acks.received.insert(number.0) {
                self.stats.packets_dropped += 1;
                break 'handled;
            }
            if header.packet_type == PacketType::Data {
                // Opened, and addressed to the id only the recipient of this
                // end's handshake answer knows: the peer receives there.
                self.amplification.validate();
            }
            self.stats.packets_received += 1;
            self.stats.bytes_received += datagram.len() as u64;
            match ecn {
                EcnCodepoint::Ect0 => self.acks.ecn.ect0 += 1,
                EcnCodepoint::Ect1 => self.acks.ecn.ect1 += 1,
                EcnCodepoint::Ce => self.acks.ecn.ce += 1,
                EcnCodepoint::NotEct => {}
            }
            if self.acks.received.largest() == Some(number.0) {
                self.acks.largest_received_time = Some(now);
                // Only the newest packet can move the connection: a late one
                // from the old address must not take it back.
                if let Some(from) = from.filter(|_| header.packet_type == PacketType::Data) {
                    self.on_peer_address(now, from, datagram.len());
                }
            }
            if self.config.trace {
                self.events
                    .push_back(Event::Trace(TraceEvent::PacketReceived {
                        number,
                        bytes: datagram.len(),
                    }));
            }
            if let State::Draining(_) = self.state {
                break 'handled;
            }
            self.set_timer(Timer::Idle, now + self.config.idle_timeout);
            let quiet =
                (self.recovery.rtt.pto_base() + self.config.max_ack_delay) * QUIET_AFTER_PTOS;
            self.set_timer(Timer::Quiet, now + quiet);
            let payload = &packet[header_len..end];
            let mut ack_eliciting = false;
            for frame in Frames::new(payload) {
                let frame = match frame {
                    Ok(frame) => frame,
                    Err(e) => {
                        self.violation(
                            now,
                            Violation {
                                code: codes::PROTOCOL_VIOLATION,
                                reason: format!("malformed frame: {e}"),
                            },
                        );
                        break 'handled;
                    }
                };
                if !matches!(frame, Frame::Ack(_) | Frame::Padding(_) | Frame::Close(_)) {
                    ack_eliciting = true;
                }
                let handled = Connection::check_early_frame(header.packet_type, &frame)
                    .and_then(|()| self.handle_frame(now, header.packet_type, frame));
                if let Err(v) = handled {
                    self.violation(now, v);
                    break 'handled;
                }
                if matches!(self.state, State::Draining(_) | State::Closed) {
                    break 'handled;
                }
            }
            // A gap (or a late packet) is news: acknowledge at once, so that the
            // sender's loss estimate, repair and rate measurement are not held
            // up by the acknowledgement delay.
            let in_order = previous_largest.is_none_or(|l| l.checked_add(1) == Some(number.0));
            if ack_eliciting {
                self.on_peer_spoke(now);
                self.acks.eliciting_unacked += 1;
                let quick = self.stats.packets_received <= QUICK_ACKS;
                if self.acks.eliciting_unacked >= self.config.ack_frequency || !in_order || quick {
                    self.acks.needed = true;
                } else if self.timers[Timer::Ack as usize].is_none() {
                    let delay = self
                        .config
                        .max_ack_delay
                        .min(self.recovery.rtt.smoothed() / 4);
                    self.set_timer(Timer::Ack, now + delay);
                }
            }
            self.maybe_finish_close(now);
        }
        self.opened = packet;
    }

    fn handle_frame(
        &mut self,
        now: Instant,
        packet_type: PacketType,
        frame: Frame<'_>,
    ) -> Result<(), Violation> {
        match frame {
            Frame::Padding(_) | Frame::Ping => {}
            Frame::Handshake(handshake) => self.on_handshake(now, packet_type, &handshake)?,
            Frame::HandshakeDone => {}
            Frame::Ack(ack) => {
                if let Some(largest) = ack.largest() {
                    self.on_copy_answer(now, largest.0);
                }
                self.on_answer_acked(now, &ack);
                if self.state == State::Established {
                    self.on_ack(now, &ack)?;
                }
            }
            Frame::Source(source) => self.on_source(&source)?,
            Frame::PathChallenge(data) => self.on_path_challenge(data),
            Frame::PathResponse(data) => self.on_path_response(data),
            Frame::Repair(repair) => self.on_repair(&repair)?,
            Frame::Close(close) => {
                let reason = CloseReason::ByPeer {
                    code: close.code,
                    reason: close.reason_lossy().into_owned(),
                };
                self.closing.reason = Some(reason);
                self.state = State::Draining(now + self.pto() * DRAIN_PTOS);
                self.timers = [None; TIMERS];
            }
            other => {
                return Err(Violation {
                    code: codes::PROTOCOL_VIOLATION,
                    reason: format!("frame {} outside a symbol", frame_name(&other)),
                })
            }
        }
        Ok(())
    }
}
