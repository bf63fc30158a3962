//! Early data (0-RTT): stream data in the client's first flight, sealed
//! with the early key in EarlyData packets, which a server that accepts
//! the flight delivers before the handshake completes.
//!
//! Early packets take packet numbers from the one space every packet
//! uses, and carry source symbols of the one encoder, so after the
//! handshake acknowledgements, loss detection and repair treat them as
//! any other: a lost early packet is repaired as a lost Data packet
//! would be. They carry source symbols only (repair waits for the
//! peer's first report) and, on the server, only SOURCE, REPAIR, PING and
//! PADDING frames are taken from them: anything else in one (an ACK of
//! packets the server has not sent, a CLOSE, path frames) is a protocol
//! violation.
//!
//! A server that refuses the flight (see
//! [`EarlyDataRecord`](crate::protection::EarlyDataRecord)) says so in
//! its Noise answer; the client then withdraws its early packets from
//! flight, neither acknowledged nor lost (the congestion controller and
//! loss estimator see nothing of them), and sends their symbols again, as
//! they were, in Data packets; if the agreed symbol size is not the one
//! the client built them for (the server's datagrams are smaller), it
//! first puts their frames in symbols of the agreed size. EarlyData packets that reach a server
//! before the Initial are dropped: the early key is not known yet, and
//! the client sends their symbols again once it learns they were lost.

use std::ops::Range;
use std::time::Instant;

use ltx_coding::codec::{Code, Encoder, EncoderConfig};
use ltx_coding::SymbolId;

use super::sent::Carried;
use super::streams::Violation;
use super::{symbol_size, Connection, State, Transmit};
use crate::accept::packet::MAX_COOKIE_LEN;
use crate::config::TransportConfig;
use crate::event::{codes, PacketKind};
use crate::protection::{AeadProtection, EarlyRefusal, FlightId, KEY_LEN, PACKET_AEAD};
use crate::protection::{OpenError, PacketProtection, TAG_LEN};
use crate::wire::{EarlyDataField, Frame, Frames, PacketType, Side, SourceFrame, StreamFrame};

/// Bytes of stream data a client may send before the handshake, over all
/// streams and on any one: it has not seen the server's limits yet, and
/// takes these as them until it does. A server whose receive windows are
/// smaller refuses early data. Most first flights are far smaller (the
/// controller's initial window); one sent at a known rate (a hint, a saved
/// path) may fill a long path's bandwidth-delay product.
pub const EARLY_MAX_DATA: u64 = 8 << 20;
/// Source symbols a client may hold unacknowledged before the handshake;
/// a server whose coding window is smaller refuses early data.
pub const EARLY_MAX_SYMBOLS: u64 = 8192;
/// Streams a client may open before the handshake.
pub const EARLY_MAX_STREAMS: u64 = 0x10;

/// What a connection keeps of early data.
#[derive(Default)]
pub(super) struct EarlyData {
    /// The early key: the client seals with it, a server that accepted
    /// the flight opens with it.
    protection: Option<AeadProtection>,
    /// Client: the packet numbers of the early packets sent.
    sent: Vec<u64>,
    /// Client: whether the server delivered the flight, once it answered.
    accepted: Option<bool>,
    /// Client: the early symbols still to send again after a refusal.
    resend: Range<u64>,
}

/// Refuses early data in a configuration where it would have no effect.
pub(super) fn refuse_early_data(
    config: &TransportConfig,
    policy: &str,
) -> Result<(), crate::ConfigError> {
    if config.early_data {
        return Err(crate::ConfigError::NoEffect {
            setting: crate::config::Setting::EarlyData,
            policy: policy.to_owned(),
        });
    }
    Ok(())
}

/// Bytes an early packet has at least: more than any retry, whose first
/// byte (`0x70`) and version it shares, so that nothing takes one for
/// the other.
const MIN_EARLY_PACKET: usize = 8 + MAX_COOKIE_LEN;

/// Pads an early packet being built in `buf` (its header written) with
/// PADDING, so that with a source frame of `data` bytes and the tag it
/// reaches [`MIN_EARLY_PACKET`].
pub(super) fn pad_early(buf: &mut Vec<u8>, data: usize) {
    // The source frame's header is at least two bytes.
    let planned = buf.len() + 2 + data + TAG_LEN;
    if planned < MIN_EARLY_PACKET {
        Frame::Padding(MIN_EARLY_PACKET - planned).emit(buf);
    }
}

fn early_protection(secret: [u8; KEY_LEN]) -> AeadProtection {
    // One direction only; the early key is never updated.
    AeadProtection::new(PACKET_AEAD, secret, secret, u64::MAX)
}

impl Connection {
    /// Whether this client may still send early data: on, keyed, and not
    /// yet answered.
    fn sends_early(&self) -> bool {
        self.side == Side::Client
            && self.state == State::Handshaking
            && self.early.protection.is_some()
            && self.early.accepted.is_none()
    }

    /// Whether a server that took the client's early data sends its own
    /// data before the client confirms the handshake (half a round trip
    /// early: an answer to a request in the first flight reaches the
    /// client one round trip after it started). Its keys are in place with
    /// its answer and the client's key is proved; the client's address is
    /// not, and the anti-amplification limit holds for it until it is.
    pub(super) fn sends_half_rtt(&self) -> bool {
        self.side == Side::Server
            && self.state == State::Handshaking
            && self.early.protection.is_some()
            && self.can_seal_data()
    }

    /// Whether streams may be opened and written now: once established;
    /// before, on a client with early data, and on a server that took a
    /// client's early data (see [`sends_half_rtt`](Self::sends_half_rtt)).
    pub(super) fn streams_usable(&self) -> bool {
        let early_server = self.side == Side::Server
            && self.state == State::Handshaking
            && self.early.protection.is_some();
        self.state == State::Established || self.sends_early() || early_server
    }

    /// A secured client with early data on wrote its first message: it
    /// keys its early packets, and builds its encoder now, with its own
    /// symbol size and window, and takes [`EARLY_MAX_DATA`] and
    /// [`EARLY_MAX_STREAMS`] as the server's limits until it hears them.
    pub(super) fn start_early_client(&mut self, secret: [u8; KEY_LEN]) {
        self.early.protection = Some(early_protection(secret));
        self.symbol_size = symbol_size(self.config.max_datagram);
        self.sender.encoder = Encoder::new(EncoderConfig {
            symbol_size: self.symbol_size,
            max_window: self.config.max_window,
            code: Code::default(),
        })
        .ok();
        self.streams
            .set_peer_limits(EARLY_MAX_DATA, EARLY_MAX_DATA, EARLY_MAX_STREAMS);
    }

    /// The next early packet of a client's first flight, if the streams
    /// have data, the controller's first window has room and the pacer
    /// lets it go: it leaves right after the Initial copies, and a first
    /// window set from a known rate (a hint, a saved path) is paced at it.
    pub(super) fn poll_early(&mut self, now: Instant) -> Option<Transmit> {
        if !self.sends_early() || !self.streams.has_pending() {
            return None;
        }
        let encoder = self.sender.encoder.as_ref()?;
        let limit = u64::from(encoder.config().max_window).min(EARLY_MAX_SYMBOLS);
        if encoder.held() >= limit {
            return None;
        }
        if !self.window_and_pacer_allow(now) {
            return None;
        }
        let number = self.recovery.next_number;
        let transmit = self.build_source(now, PacketType::EarlyData)?;
        self.early.sent.push(number);
        self.stats.early_packets_sent += 1;
        Some(transmit)
    }

    /// Early packets this client has sent.
    pub(super) fn early_packets_sent(&self) -> usize {
        self.early.sent.len()
    }

    /// Seals an early packet with the early key.
    pub(super) fn seal_early(&mut self, number: u64, header_len: usize, packet: &mut Vec<u8>) {
        if let Some(protection) = self.early.protection.as_mut() {
            protection.seal(number, header_len, packet);
        }
    }

    /// Whether EarlyData packets are opened: on a server that accepted
    /// the client's flight. Others drop them uncounted as forgeries (a
    /// server before the Initial, or that refused the flight, receives
    /// genuine ones).
    pub(super) fn opens_early(&self) -> bool {
        self.side == Side::Server && self.early.protection.is_some()
    }

    /// Opens a packet with the keys its type calls for: the early key for
    /// EarlyData (see [`opens_early`](Self::opens_early)), the
    /// connection's for the rest.
    pub(super) fn open_packet(
        &mut self,
        packet_type: PacketType,
        number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, OpenError> {
        if packet_type != PacketType::EarlyData {
            return self.protection.open(number, header_len, packet);
        }
        match self.early.protection.as_mut() {
            Some(protection) if self.side == Side::Server => {
                protection.open(number, header_len, packet)
            }
            _ => Err(OpenError::Unauthentic),
        }
    }

    /// Refuses a frame an early packet must not carry.
    pub(super) fn check_early_frame(
        packet_type: PacketType,
        frame: &Frame<'_>,
    ) -> Result<(), Violation> {
        if packet_type != PacketType::EarlyData
            || matches!(
                frame,
                Frame::Source(_) | Frame::Repair(_) | Frame::Ping | Frame::Padding(_)
            )
        {
            return Ok(());
        }
        Err(Violation {
            code: codes::PROTOCOL_VIOLATION,
            reason: format!(
                "frame {} in an early data packet",
                super::streams::frame_name(frame)
            ),
        })
    }

    /// A server read a first message that offers early data stamped
    /// `stamp`: whether it delivers it. It does if early data is on, the
    /// client's symbols fit its own (the client built them before it knew
    /// the server's datagram size), and the record admits the flight.
    pub(super) fn admit_early(
        &mut self,
        now: Instant,
        first_message: &[u8],
        offer: Option<EarlyDataField>,
        client_datagram: u16,
        secret: [u8; KEY_LEN],
    ) -> Option<EarlyDataField> {
        let Some(EarlyDataField::Offer { stamp }) = offer else {
            return None;
        };
        let verdict = self.early_verdict(now, first_message, stamp, client_datagram);
        if verdict.is_ok() {
            self.early.protection = Some(early_protection(secret));
        } else {
            self.stats.early_refused += 1;
        }
        Some(EarlyDataField::Answer {
            accepted: verdict.is_ok(),
        })
    }

    fn early_verdict(
        &self,
        now: Instant,
        first_message: &[u8],
        stamp: u64,
        client_datagram: u16,
    ) -> Result<(), EarlyRefusal> {
        let record = self
            .early_data_record()
            .filter(|_| self.config.early_data)
            .ok_or(EarlyRefusal::NotTaken)?;
        let small_windows = self.config.receive_window < EARLY_MAX_DATA
            || self.config.stream_receive_window < EARLY_MAX_DATA
            || u64::from(self.config.max_window) < EARLY_MAX_SYMBOLS;
        if client_datagram > self.config.max_datagram || small_windows {
            return Err(EarlyRefusal::NotTaken);
        }
        let id = FlightId::of(first_message).ok_or(EarlyRefusal::NotTaken)?;
        record.admit(now, id, crate::protection::UnixMillis(stamp))
    }

    /// A client's early packets met the server's answer, which said
    /// `accepted` (nothing: refused). The encoder the first flight used
    /// goes on with the server's window, if its symbols are the size both
    /// ends agreed; if not, the early symbols cannot be sent again and
    /// the connection ends.
    pub(super) fn on_early_answer(&mut self, answer: Option<EarlyDataField>) {
        if self.early.protection.is_none() || self.early.accepted.is_some() {
            return;
        }
        let accepted = matches!(answer, Some(EarlyDataField::Answer { accepted: true }));
        self.early.accepted = Some(accepted);
        if !accepted {
            for number in std::mem::take(&mut self.early.sent) {
                self.recovery.sent.withdraw(number);
            }
            let sent = self.sender.encoder.as_ref().map_or(0, |e| e.next_id().0);
            self.early.resend = 0..sent;
            self.stats.early_refused += 1;
        }
    }

    /// Rebuilds a client's early encoder for the server's window `window`
    /// and the agreed symbol size, keeping its symbols (or, if the size
    /// differs, their frames in symbols of the new size, all to be sent
    /// again: a server with another size refused them); false if they do
    /// not fit the window.
    pub(super) fn keep_early_encoder(&mut self, symbol_size: usize, window: u16) -> bool {
        let Some(old) = self.sender.encoder.take() else {
            return true;
        };
        if old.next_id().0 == 0 {
            return true;
        }
        let config = EncoderConfig {
            symbol_size,
            max_window: window,
            code: old.config().code,
        };
        if symbol_size != old.config().symbol_size {
            return self.rechunk_early(&old, config);
        }
        if old.held() > u64::from(window) {
            return false;
        }
        let Ok(mut encoder) = Encoder::starting_at(config, old.oldest()) else {
            return false;
        };
        for id in old.oldest().0..old.next_id().0 {
            let pushed = old
                .source(SymbolId(id))
                .map(|data| encoder.push(data).is_ok());
            if pushed != Some(true) {
                return false;
            }
        }
        self.sender.encoder = Some(encoder);
        true
    }

    /// Puts the frames of the early symbols of `old` in symbols of
    /// `config`'s size, stream data split where it must be, and makes
    /// them all the symbols to send again.
    fn rechunk_early(&mut self, old: &Encoder, config: EncoderConfig) -> bool {
        let Ok(mut encoder) = Encoder::new(config) else {
            return false;
        };
        let size = config.symbol_size;
        let mut symbol = Vec::with_capacity(size);
        let mut flush = |symbol: &mut Vec<u8>| {
            let pushed = symbol.is_empty() || encoder.push(symbol).is_ok();
            symbol.clear();
            pushed
        };
        for id in old.oldest().0..old.next_id().0 {
            for frame in Frames::new(old.source(SymbolId(id)).unwrap_or_default()) {
                let Ok(frame) = frame else {
                    return false;
                };
                let Frame::Stream(stream) = frame else {
                    if !matches!(frame, Frame::Padding(_)) {
                        if symbol.len() + frame.encoded_len() > size && !flush(&mut symbol) {
                            return false;
                        }
                        frame.emit(&mut symbol);
                    }
                    continue;
                };
                let (mut offset, mut data) = (stream.offset, stream.data);
                loop {
                    let room = size - symbol.len();
                    let header = StreamFrame::header_len(stream.id, offset, Some(room));
                    if room <= header {
                        if symbol.is_empty() || !flush(&mut symbol) {
                            return false;
                        }
                        continue;
                    }
                    let len = data.len().min(room.saturating_sub(header));
                    let fin = stream.fin && len == data.len();
                    StreamFrame::emit_header(stream.id, offset, fin, Some(len), &mut symbol);
                    symbol.extend_from_slice(&data[..len]);
                    (offset, data) = (offset + len as u64, &data[len..]);
                    if data.is_empty() {
                        break;
                    }
                }
            }
        }
        if !flush(&mut symbol) {
            return false;
        }
        self.early.resend = 0..encoder.next_id().0;
        self.sender.encoder = Some(encoder);
        true
    }

    /// The next early symbol the server refused, sent again as it was in
    /// a Data packet, if the controller's window has room.
    pub(super) fn poll_early_resend(&mut self, now: Instant) -> Option<Transmit> {
        let encoder = self.sender.encoder.as_ref()?;
        let id = SymbolId(self.early.resend.start);
        if self.early.resend.is_empty() || id < encoder.oldest() {
            self.early.resend = 0..0;
            return None;
        }
        let size = u64::from(self.config.max_datagram);
        if self.recovery.sent.bytes_in_flight + size > self.recovery.controller.window() {
            return None;
        }
        let mut symbol = encoder.source(id)?.to_vec();
        self.early.resend.start += 1;
        let used = symbol.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        symbol.truncate(used);
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        Frame::Source(SourceFrame {
            id: self.sender.truncate(id),
            data: &symbol,
        })
        .emit(&mut buf);
        self.stats.source_symbols_sent += 1;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{CloseFrame, TruncatedSymbolId};

    #[test]
    fn early_packets_carry_symbols_and_padding_only() {
        let source = Frame::Source(SourceFrame {
            id: TruncatedSymbolId::truncate(SymbolId(0), SymbolId(0), SymbolId(1)),
            data: b"x",
        });
        for frame in [source, Frame::Ping, Frame::Padding(3)] {
            assert!(Connection::check_early_frame(PacketType::EarlyData, &frame).is_ok());
        }
        let refused = [
            Frame::HandshakeDone,
            Frame::PathChallenge([1; 8]),
            Frame::MaxStreams(4),
            Frame::Close(CloseFrame {
                code: 0,
                reason: b"",
            }),
        ];
        for frame in refused {
            let v = Connection::check_early_frame(PacketType::EarlyData, &frame);
            assert_eq!(v.map_err(|v| v.code), Err(codes::PROTOCOL_VIOLATION));
            assert!(Connection::check_early_frame(PacketType::Data, &frame).is_ok());
        }
    }

    #[test]
    fn early_packets_are_padded_past_the_longest_retry() {
        for data in [0, 1, 40, 200] {
            let mut buf = vec![0u8; 7];
            pad_early(&mut buf, data);
            assert!(buf.len() + 2 + data + TAG_LEN >= MIN_EARLY_PACKET, "{data}");
        }
    }
}
