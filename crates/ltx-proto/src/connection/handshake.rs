//! The handshake: the client's Initial flight in copies (their answers'
//! spacing reads the bottleneck before any data leaves), the server's
//! answer, the transport parameters both ends apply, and the first RTT
//! sample.

use std::time::{Duration, Instant};

use ltx_coding::codec::{Code, Decoder, DecoderConfig, Encoder, EncoderConfig};

use super::copy_spacing::{CopySpacing, Reading};
use super::streams::Violation;
use super::{symbol_size, Connection, State, Timer, Transmit};
use crate::accept::packet::InitialDatagram;
use crate::config::DECODER_HISTORY;
use crate::event::{codes, Event, PacketKind};
use crate::protection::PacketProtection;
use crate::protection::PlainProtection;
use crate::wire::{Frame, HandshakeFrame, PacketType, Side, TransportParams};

/// Smallest datagram a client's first packet is padded to, so that a path
/// that cannot carry full packets fails at once.
pub(crate) const MIN_INITIAL: usize = 1200;
/// Copies of the client's first Initial flight.
pub(super) const INITIAL_COPIES: u8 = 3;
/// Copies of each Initial flight after an unanswered one. Loss in bursts
/// takes back-to-back copies together: where bursts last E packets on
/// average, a flight of n copies sent into one is lost whole with
/// probability (1 − 1/E)^n, and each lost flight costs a probe time-out of
/// a second (no round trip is known yet). A first flight lost whole says
/// the path may be in such a burst: the next reaches past it (see
/// docs/design/start-up.md).
const LATER_INITIAL_COPIES: u8 = 12;
/// Handshake time-outs that do not double (see [`handshake_backoff`]).
const UNDOUBLED_HANDSHAKE_TIMEOUTS: u32 = 3;
/// After how many early packets of the first flight each further copy of
/// the Initial goes. Loss in bursts takes back-to-back copies together,
/// and early packets that reach the server before any copy are dropped;
/// a copy among them, a burst's length or more after the others, lets the
/// rest of the flight through. The gaps double, so that a short first
/// flight carries one or two and a long one (a resumed or hinted rate)
/// three.
const INTERLEAVED_AFTER: [usize; 3] = [8, 24, 56];

/// Copies of the client's Initial flight after `timeouts` probe time-outs
/// without an answer. Loss that comes in bursts takes back-to-back copies
/// together, so a flight that is lost whole says the path is in such a
/// burst, not that it is congested: the next flight is longer, to reach
/// past it (12 copies of 1200 bytes, before the server has sent anything).
pub(super) fn initial_copies(timeouts: u32) -> u8 {
    if timeouts == 0 {
        INITIAL_COPIES
    } else {
        LATER_INITIAL_COPIES
    }
}

/// How many times the probe time-out has doubled after `timeouts` time-outs
/// of the handshake: not for the first [`UNDOUBLED_HANDSHAKE_TIMEOUTS`]. A
/// flight lost whole says the path is in a burst of loss (see
/// [`initial_copies`]), and the next, longer one should follow it by one
/// time-out, not two: on a path without a round-trip sample a doubled
/// time-out waits two seconds. Unanswered past those, the handshake backs
/// off as every probe does; a flight is at most twelve 1200-byte copies,
/// so even a dead server costs a few kilobytes a second.
pub(super) fn handshake_backoff(timeouts: u32, max_backoff: u32) -> u32 {
    if timeouts < UNDOUBLED_HANDSHAKE_TIMEOUTS {
        0
    } else {
        timeouts.min(max_backoff)
    }
}

/// Where the handshake's sending stands.
#[derive(Default)]
pub(super) struct Handshake {
    /// Handshake packets to send now (the client sends each Initial flight
    /// in several copies: on a lossy path one lost Initial would cost a
    /// time-out).
    pub(super) to_send: u8,
    /// Initial packets the client has sent, not counting those
    /// interleaved with its early data.
    pub(super) attempts: u32,
    /// Copies of the first Initial interleaved with the first flight's
    /// early packets so far (see [`INTERLEAVED_AFTER`]).
    pub(super) interleaved: u8,
    /// When the client's first Initial left, for the first RTT sample.
    pub(super) sent: Option<Instant>,
    /// The copies of the client's first Initial flight, whose answers'
    /// spacing reads the bottleneck's rate, until the reading concludes.
    pub(super) copy_spacing: Option<CopySpacing>,
    /// The cookie of the server's retry, sent with every Initial after it.
    pub(super) retry_cookie: Option<Vec<u8>>,
    /// A server's first answer (its packet number and when it left), whose
    /// acknowledgement times the handshake's round trip.
    pub(super) answer: Option<(u64, Instant)>,
    /// That round trip, with the client's acknowledgement delay: a sample
    /// a server takes only to resume from a saved path
    /// ([`Connection::resume_from`]); otherwise its first sample is its
    /// first data's.
    pub(super) answer_sample: Option<(Duration, Duration)>,
    /// A saved path was given before that round trip was timed: take it
    /// as the first sample when it is.
    pub(super) resume_waiting: bool,
}

impl Connection {
    pub(super) fn transport_params(&self) -> TransportParams {
        TransportParams {
            max_datagram: self.config.max_datagram,
            symbol_size: symbol_size(self.config.max_datagram) as u16,
            max_window: self.config.max_window,
            max_data: self.config.receive_window,
            max_stream_data: self.config.stream_receive_window,
            max_streams: self.config.max_streams,
            idle_timeout_ms: self.config.idle_timeout.as_millis() as u64,
        }
    }

    /// Whether a copy of the first Initial is due among the first flight's
    /// early packets: `early_sent` of them have left, no probe time-out
    /// or retry has started a new flight, and no answer has come.
    pub(super) fn interleaved_copy_due(&self, early_sent: usize) -> bool {
        self.side == Side::Client
            && self.state == State::Handshaking
            && self.recovery.pto_count == 0
            && self.handshake.retry_cookie.is_none()
            && INTERLEAVED_AFTER
                .get(usize::from(self.handshake.interleaved))
                .is_some_and(|&after| early_sent >= after)
    }

    /// A copy of the first Initial among the first flight's early packets.
    /// It does not void the handshake's RTT sample, taken from the first
    /// copy: if only such a copy arrived, the sample is long by the time
    /// the early packets before it took to leave (a few milliseconds at
    /// most, paced at the path's rate).
    pub(super) fn build_interleaved_copy(&mut self, now: Instant) -> Transmit {
        self.handshake.interleaved += 1;
        self.build_handshake_packet(now, true)
    }

    pub(super) fn build_handshake(&mut self, now: Instant) -> Transmit {
        self.build_handshake_packet(now, false)
    }

    fn build_handshake_packet(&mut self, now: Instant, interleaved: bool) -> Transmit {
        let packet_type = match self.side {
            Side::Client => PacketType::Initial,
            Side::Server => PacketType::Handshake,
        };
        let (mut buf, number, header_len) = self.begin_packet(packet_type);
        let tag_len = match self.noise_message() {
            Some(message) => {
                Frame::Noise(&message).emit(&mut buf);
                PlainProtection.tag_len()
            }
            None => {
                if self.side == Side::Server {
                    self.emit_ack(now, &mut buf);
                }
                Frame::Handshake(HandshakeFrame {
                    source_cid: self.local_cid,
                    params: self.transport_params(),
                })
                .emit(&mut buf);
                self.protection.tag_len()
            }
        };
        if self.side == Side::Client {
            // Pad the first flight so that the path is known to carry
            // full-size datagrams (and, later, to bound amplification).
            let cookie = self
                .handshake
                .retry_cookie
                .as_deref()
                .map_or(0, InitialDatagram::cookie_overhead);
            let target = MIN_INITIAL.saturating_sub(tag_len + cookie);
            buf.resize(buf.len().max(target), 0);
            if !interleaved {
                self.handshake.attempts += 1;
                // The copies of the first flight leave together: an answer
                // to either is an RTT sample. After a retransmission it is
                // ambiguous.
                if self.handshake.attempts == 1 {
                    self.handshake.sent = Some(now);
                } else if self.handshake.attempts > u32::from(INITIAL_COPIES) {
                    self.handshake.sent = None;
                }
                self.set_timer(Timer::Probe, now + self.pto());
            }
        }
        let mut transmit =
            self.finish_packet(now, buf, number, header_len, PacketKind::Handshake, None);
        if let (Side::Client, Some(cookie)) = (self.side, self.handshake.retry_cookie.as_deref()) {
            transmit.contents = InitialDatagram::wrap(cookie, &transmit.contents);
            let overhead = InitialDatagram::cookie_overhead(cookie) as u64;
            self.stats.bytes_sent += overhead;
        }
        if self.side == Side::Client {
            if !interleaved {
                self.on_copy_sent(now, number, transmit.contents.len() as u64);
            }
        } else if self.handshake.answer.is_none() && !self.recovery.rtt.has_sample() {
            self.handshake.answer = Some((number, now));
        }
        transmit
    }

    /// An acknowledgement on a server that has no RTT sample yet: if it
    /// covers the first answer, it times the handshake's round trip (the
    /// client's Initial was not timed here), kept for careful resume.
    pub(super) fn on_answer_acked(&mut self, now: Instant, ack: &crate::wire::AckFrame) {
        if self.side != Side::Server || self.recovery.rtt.has_sample() {
            return;
        }
        let Some((number, sent)) = self.handshake.answer else {
            return;
        };
        if !ack.contains(crate::wire::PacketNumber(number)) {
            return;
        }
        self.handshake.answer = None;
        let ack_delay = Duration::from_micros(ack.ack_delay_us).min(self.config.max_ack_delay);
        self.handshake.answer_sample = Some((ack_delay, now.saturating_duration_since(sent)));
        if self.handshake.resume_waiting {
            self.take_answer_sample(now);
        }
    }

    /// Takes the handshake's timed round trip as the first RTT sample.
    pub(super) fn take_answer_sample(&mut self, now: Instant) {
        self.handshake.resume_waiting = false;
        let Some((ack_delay, sample)) = self.handshake.answer_sample.take() else {
            return;
        };
        if !self.recovery.rtt.has_sample() {
            self.recovery.rtt.update(ack_delay, sample);
            self.recovery
                .controller
                .on_rtt_sample(now, &self.recovery.rtt);
        }
    }

    /// A copy of the client's Initial, packet `number` of `bytes`, left at
    /// `now`: the first flight's copies, sent together, are read by the
    /// spacing of their answers.
    pub(super) fn on_copy_sent(&mut self, now: Instant, number: u64, bytes: u64) {
        if self.handshake.attempts == 1 {
            self.handshake.copy_spacing = Some(CopySpacing::new(number, bytes, now));
        } else if !self
            .handshake
            .copy_spacing
            .as_mut()
            .is_some_and(|spacing| spacing.on_copy(number, bytes, now))
        {
            self.handshake.copy_spacing = None;
        }
    }

    /// An acknowledgement of packets up to `largest` arrived at `now`: if it
    /// answers a copy of the first Initial, the copies' spacing may give
    /// the controller the bottleneck's rate.
    pub(super) fn on_copy_answer(&mut self, now: Instant, largest: u64) {
        let Some(spacing) = self.handshake.copy_spacing.as_mut() else {
            return;
        };
        let checking = spacing.is_checking();
        match spacing.on_ack(largest, now) {
            Reading::Pending => {}
            Reading::Rate(rate) => {
                if !spacing.is_checking() {
                    self.handshake.copy_spacing = None;
                }
                if !checking {
                    self.recovery
                        .controller
                        .on_handshake_spacing(now, rate, &self.recovery.rtt);
                }
            }
            Reading::Withdrawn => {
                self.handshake.copy_spacing = None;
                self.recovery.controller.on_handshake_spacing_withdrawn(now);
            }
            Reading::None => self.handshake.copy_spacing = None,
        }
    }

    /// Until when the first data waits for the copies' reading, if it does.
    pub(super) fn first_data_hold(&mut self, now: Instant) -> Option<Instant> {
        let spacing = self.handshake.copy_spacing.as_mut()?;
        let hold = spacing.hold(now);
        if spacing.is_concluded() && !spacing.is_checking() {
            self.handshake.copy_spacing = None;
        }
        hold
    }

    pub(super) fn on_handshake(
        &mut self,
        now: Instant,
        packet_type: PacketType,
        handshake: &HandshakeFrame,
    ) -> Result<(), Violation> {
        let expected = match self.side {
            Side::Server => PacketType::Initial,
            Side::Client => PacketType::Handshake,
        };
        if packet_type != expected {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: "handshake in the wrong packet type".into(),
            });
        }
        if self.state == State::Established {
            // A repeated client Initial: our answer was lost; send it again.
            if self.side == Side::Server && handshake.source_cid == self.remote_cid {
                self.handshake.to_send = 1;
            }
            return Ok(());
        }
        self.apply_handshake(now, handshake, true)
    }

    /// Takes the peer's connection id and transport parameters. A secured
    /// server is `established` only later, when the client confirms.
    pub(super) fn apply_handshake(
        &mut self,
        now: Instant,
        handshake: &HandshakeFrame,
        established: bool,
    ) -> Result<(), Violation> {
        let params = handshake.params;
        self.remote_cid = handshake.source_cid;
        let datagram = params.max_datagram.min(self.config.max_datagram);
        self.symbol_size = symbol_size(datagram);
        let code = Code::default();
        let encoder = Encoder::new(EncoderConfig {
            symbol_size: self.symbol_size,
            max_window: params.max_window,
            code,
        });
        let decoder = Decoder::new(DecoderConfig {
            symbol_size: self.symbol_size,
            max_window: self.config.max_window + DECODER_HISTORY,
            code,
        });
        let (Ok(encoder), Ok(decoder)) = (encoder, decoder) else {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: "transport parameters out of range".into(),
            });
        };
        // A client's first flight built its encoder already: it goes on,
        // with the server's window, if its symbols fit.
        let early = self.side == Side::Client
            && self
                .sender
                .encoder
                .as_ref()
                .is_some_and(|e| e.next_id().0 > 0);
        if !early {
            self.sender.encoder = Some(encoder);
        } else if !self.keep_early_encoder(self.symbol_size, params.max_window) {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: "early symbols do not fit the transport parameters".into(),
            });
        }
        self.receiver.decoder = Some(decoder);
        self.sender.peer.window = u64::from(params.max_window);
        self.repair.scheme = self
            .config
            .scheme
            .build(&self.config.repair, params.max_window);
        self.streams
            .set_peer_limits(params.max_data, params.max_stream_data, params.max_streams);
        if established {
            self.state = State::Established;
        }
        self.recovery.pto_count = 0;
        self.timers[Timer::Probe as usize] = None;
        if self.side == Side::Server {
            self.handshake.to_send = 1;
        }
        if let Some(sent) = self.handshake.sent.take() {
            // Unambiguous only if the Initial went once.
            self.recovery
                .rtt
                .update(Duration::ZERO, now.saturating_duration_since(sent));
            self.recovery
                .controller
                .on_rtt_sample(now, &self.recovery.rtt);
        }
        if self.side == Side::Client && established {
            // The copies' answers are read only by a controller that asks,
            // and only with the handshake's round trip to bound the wait.
            if self.recovery.controller.reads_handshake_spacing() && self.recovery.rtt.has_sample()
            {
                if let Some(spacing) = self.handshake.copy_spacing.as_mut() {
                    if spacing
                        .on_established(now, self.recovery.rtt.latest())
                        .is_none()
                    {
                        self.handshake.copy_spacing = None;
                    }
                }
            } else {
                self.handshake.copy_spacing = None;
            }
        }
        if established {
            self.events.push_back(Event::Connected);
        }
        Ok(())
    }
}
