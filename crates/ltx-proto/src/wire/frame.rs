//! Frames: the typed pieces a packet's payload is made of, and the parser
//! that yields them.
//!
//! A frame is one type byte and its fields, integers as varints unless
//! stated. Frames that carry bytes borrow them from the packet. The bytes
//! of a symbol frame (SOURCE, REPAIR), and of a STREAM frame of the kinds
//! that say so, run to the end of the payload that holds them and carry no
//! length: such a frame is the last of its payload. Every full packet is
//! one symbol frame and every full symbol ends in a stream frame, so this
//! saves a length field twice per packet.

use std::borrow::Cow;
use std::fmt;
use std::iter::FusedIterator;

use ltx_coding::{RepairKey, SymbolId, Window};

use super::varint::{put_varint, varint_len, Reader, Truncated, VarInt};
use super::{AckFrame, ConnectionId, StreamId, TransportParams, WireError, MAX_SYMBOL_SIZE};

/// The longest reason a close frame carries, in bytes.
pub const MAX_REASON_LEN: usize = 0x400;

/// The longest Noise message a NOISE frame carries, in bytes: a handshake
/// message with its keys, tags and a HANDSHAKE body fits in a few hundred.
pub const MAX_NOISE_MESSAGE_LEN: usize = 0x400;

/// The largest density threshold of RFC 8681 (DT = 15: every coefficient
/// non-zero).
const MAX_DENSITY: u8 = 0x0f;

/// The density byte of an XOR parity repair (every coefficient 1); the only
/// value above [`MAX_DENSITY`] a repair frame may carry.
const XOR_PARITY_DENSITY: u8 = ltx_coding::codec::XOR_PARITY_DENSITY;

/// The type byte of each frame.
mod kind {
    pub(super) const PADDING: u8 = 0x00;
    pub(super) const PING: u8 = 0x01;
    pub(super) const ACK: u8 = 0x02;
    pub(super) const SOURCE: u8 = 0x03;
    pub(super) const REPAIR: u8 = 0x04;
    pub(super) const STREAM: u8 = 0x05;
    pub(super) const STREAM_FIN: u8 = 0x06;
    pub(super) const RESET_STREAM: u8 = 0x07;
    pub(super) const STOP_SENDING: u8 = 0x08;
    pub(super) const MAX_DATA: u8 = 0x09;
    pub(super) const MAX_STREAM_DATA: u8 = 0x0a;
    pub(super) const MAX_STREAMS: u8 = 0x0b;
    pub(super) const HANDSHAKE: u8 = 0x0c;
    pub(super) const HANDSHAKE_DONE: u8 = 0x0d;
    pub(super) const CLOSE: u8 = 0x0e;
    pub(super) const NOISE: u8 = 0x0f;
    pub(super) const STREAM_TO_END: u8 = 0x10;
    pub(super) const STREAM_FIN_TO_END: u8 = 0x11;
    pub(super) const PATH_CHALLENGE: u8 = 0x12;
    pub(super) const PATH_RESPONSE: u8 = 0x13;
}

/// The bytes of a PATH_CHALLENGE, which its PATH_RESPONSE echoes.
pub const PATH_CHALLENGE_LEN: usize = 8;

/// Shows a payload by its length, so that logs of frames stay short.
struct Len<'a>(&'a [u8]);

impl fmt::Debug for Len<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{} bytes]", self.0.len())
    }
}

/// A symbol id as a SOURCE or REPAIR frame carries it: its low 6, 14, 30
/// or 62 bits, as few as tell it apart from every id the receiver's decoder
/// might then have as its end (one past the newest symbol referred to),
/// which the receiver expands it against. Packet numbers are truncated the
/// same way (see [`TruncatedPacketNumber`]); on a long fat path an id takes
/// 2 bytes where a whole varint would take 4.
///
/// [`TruncatedPacketNumber`]: super::TruncatedPacketNumber
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TruncatedSymbolId(Truncated);

impl TruncatedSymbolId {
    /// The shortest form of `id` for a receiver whose decoder end (one
    /// past the newest symbol referred to) lies in `lowest_end..=highest_end`
    /// when the frame arrives.
    pub fn truncate(
        id: SymbolId,
        lowest_end: SymbolId,
        highest_end: SymbolId,
    ) -> TruncatedSymbolId {
        let spread =
            id.0.max(highest_end.0)
                .saturating_sub(id.0.min(lowest_end.0));
        TruncatedSymbolId(Truncated::keeping(id.0, spread))
    }

    /// `id` whole, in 8 bytes: expands to itself whatever the receiver's
    /// decoder holds.
    pub fn whole(id: SymbolId) -> TruncatedSymbolId {
        TruncatedSymbolId(Truncated::whole(id.0))
    }

    /// The id with these low bits nearest to `decoder_end`, the end of the
    /// receiver's decoder (one past the newest symbol referred to).
    pub fn expand(self, decoder_end: SymbolId) -> SymbolId {
        SymbolId(self.0.expand(decoder_end.0))
    }

    /// How many bytes the id takes: 1, 2, 4 or 8.
    #[allow(clippy::len_without_is_empty)] // an id is never empty
    pub fn len(self) -> usize {
        self.0.len()
    }
}

/// A source symbol: stream data as the encoder numbered it, which the
/// receiver also feeds to its decoder. Its data runs to the end of the
/// packet's payload, so it is the packet's last frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceFrame<'a> {
    /// The symbol's id, truncated.
    pub id: TruncatedSymbolId,
    /// The symbol, at most [`MAX_SYMBOL_SIZE`] bytes; trailing zero bytes
    /// may be cut off, and the receiver pads it back to the symbol size.
    pub data: &'a [u8],
}

impl fmt::Debug for SourceFrame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceFrame")
            .field("id", &self.id)
            .field("data", &Len(self.data))
            .finish()
    }
}

/// A repair symbol: a combination of the source symbols of a window, from
/// which the receiver rebuilds lost ones. Its data runs to the end of the
/// packet's payload, so it is the packet's last frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RepairFrame<'a> {
    /// The first source symbol combined, truncated.
    pub first: TruncatedSymbolId,
    /// How many consecutive source symbols are combined, at least 1.
    pub len: u16,
    /// The key the coefficients are drawn from.
    pub key: RepairKey,
    /// The RFC 8681 density threshold DT, 0..=15, or 0x1f for XOR parity
    /// (every coefficient 1).
    pub density: u8,
    /// The repair symbol, at most [`MAX_SYMBOL_SIZE`] bytes, trailing zeros
    /// possibly cut off.
    pub data: &'a [u8],
}

impl RepairFrame<'_> {
    /// The window of source symbols combined, its first id expanded
    /// against `decoder_end` (see [`TruncatedSymbolId::expand`]). Its end
    /// does not overflow: the first id is below 2^62.
    pub fn window(&self, decoder_end: SymbolId) -> Window {
        Window::new(self.first.expand(decoder_end), self.len)
    }
}

impl fmt::Debug for RepairFrame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RepairFrame")
            .field("first", &self.first)
            .field("len", &self.len)
            .field("key", &self.key)
            .field("density", &self.density)
            .field("data", &Len(self.data))
            .finish()
    }
}

/// Bytes of a stream at an offset, and whether they are its last.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamFrame<'a> {
    /// The stream.
    pub id: StreamId,
    /// Where `data` starts in the stream; `offset + data.len()` is at most
    /// 2^62 − 1.
    pub offset: u64,
    /// Whether the stream ends after `data`.
    pub fin: bool,
    /// Whether `data` runs to the end of the payload that holds the frame
    /// (a symbol padded to the symbol size, in practice), which makes the
    /// frame the last of it: no length on the wire.
    pub to_end: bool,
    /// The bytes.
    pub data: &'a [u8],
}

impl StreamFrame<'_> {
    /// How many bytes a stream frame takes before its data, so that the
    /// packer can tell how much data fits in the room it has: for data of
    /// `len` bytes, or `None` for data that runs to the end of the payload.
    pub fn header_len(id: StreamId, offset: u64, len: Option<usize>) -> usize {
        1 + varint_len(id.0) + varint_len(offset) + len.map_or(0, |len| varint_len(len as u64))
    }

    /// Appends a stream frame's type and fields up to its data, for data
    /// of `len` bytes (`None`: that run to the end of the payload) that the
    /// caller appends next: a sender whose buffer is not one slice copies
    /// its parts straight after this, without first making it contiguous.
    pub fn emit_header(
        id: StreamId,
        offset: u64,
        fin: bool,
        len: Option<usize>,
        out: &mut Vec<u8>,
    ) {
        out.push(match (fin, len.is_some()) {
            (false, true) => kind::STREAM,
            (true, true) => kind::STREAM_FIN,
            (false, false) => kind::STREAM_TO_END,
            (true, false) => kind::STREAM_FIN_TO_END,
        });
        put_varint(out, id.0);
        put_varint(out, offset);
        if let Some(len) = len {
            put_varint(out, len as u64);
        }
    }

    /// The length field this frame carries: none if it runs to the end.
    fn len_field(&self) -> Option<usize> {
        (!self.to_end).then_some(self.data.len())
    }
}

impl fmt::Debug for StreamFrame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamFrame")
            .field("id", &self.id)
            .field("offset", &self.offset)
            .field("fin", &self.fin)
            .field("to_end", &self.to_end)
            .field("data", &Len(self.data))
            .finish()
    }
}

/// The first frame each side sends: the connection id it wants to receive
/// under and its transport parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HandshakeFrame {
    /// The connection id the peer must put in the packets it sends.
    pub source_cid: ConnectionId,
    /// The sender's limits.
    pub params: TransportParams,
}

impl HandshakeFrame {
    /// Parses the fields of a HANDSHAKE frame without its type byte, as a
    /// Noise handshake message carries them; every byte must be used.
    pub fn parse_body(bytes: &[u8]) -> Result<HandshakeFrame, WireError> {
        let mut r = Reader::new(bytes);
        let frame = HandshakeFrame {
            source_cid: ConnectionId(r.u32_be("source connection id")?),
            params: TransportParams::parse(&mut r)?,
        };
        if !r.rest().is_empty() {
            return Err(WireError::OutOfRange("handshake body length"));
        }
        Ok(frame)
    }

    /// Appends the fields that [`HandshakeFrame::parse_body`] reads.
    pub fn emit_body(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.source_cid.0.to_be_bytes());
        self.params.emit(out);
    }
}

/// The end of a connection, with a code and a reason for people.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CloseFrame<'a> {
    /// Why the connection closed, as a number for programs.
    pub code: u64,
    /// Why, for people: at most [`MAX_REASON_LEN`] bytes, meant to be UTF-8
    /// but not checked.
    pub reason: &'a [u8],
}

impl<'a> CloseFrame<'a> {
    /// The reason as text, invalid UTF-8 replaced.
    pub fn reason_lossy(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.reason)
    }
}

impl fmt::Debug for CloseFrame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloseFrame")
            .field("code", &self.code)
            .field("reason", &self.reason_lossy())
            .finish()
    }
}

/// One frame of a packet, borrowing its bytes from the packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Frame<'a> {
    /// A run of this many zero bytes, which mean nothing. A source symbol is
    /// zero-padded to the symbol size, so trailing zeros parse as padding.
    Padding(usize),
    /// Asks for an acknowledgement and nothing else.
    Ping,
    /// Acknowledges packets and reports the decoder's state.
    Ack(AckFrame),
    /// A source symbol.
    Source(SourceFrame<'a>),
    /// A repair symbol.
    Repair(RepairFrame<'a>),
    /// Stream data.
    Stream(StreamFrame<'a>),
    /// The sender abandons a stream it was sending.
    ResetStream {
        /// The stream.
        id: StreamId,
        /// Why, for the application.
        error_code: u64,
        /// How many bytes the stream had when it was abandoned.
        final_size: u64,
    },
    /// The receiver asks the sender to stop sending on a stream.
    StopSending {
        /// The stream.
        id: StreamId,
        /// Why, for the application.
        error_code: u64,
    },
    /// How many bytes, over all streams, the peer may send in all.
    MaxData(u64),
    /// How many bytes the peer may send on one stream in all.
    MaxStreamData {
        /// The stream.
        id: StreamId,
        /// The new limit on its offset.
        max: u64,
    },
    /// How many streams the peer may open in all.
    MaxStreams(u64),
    /// A connection id and transport parameters.
    Handshake(HandshakeFrame),
    /// The server confirms the handshake.
    HandshakeDone,
    /// The connection is closed.
    Close(CloseFrame<'a>),
    /// A Noise handshake message (at most [`MAX_NOISE_MESSAGE_LEN`] bytes)
    /// whose payload, once the handshake opens it, is a HANDSHAKE body.
    Noise(&'a [u8]),
    /// Asks the peer to echo these unpredictable bytes from where it
    /// receives them, proving that it does.
    PathChallenge([u8; PATH_CHALLENGE_LEN]),
    /// Echoes a PATH_CHALLENGE's bytes.
    PathResponse([u8; PATH_CHALLENGE_LEN]),
}

impl<'a> Frame<'a> {
    /// Parses the frame at the start of `bytes`, returning it and how many
    /// bytes it took. A padding frame takes every zero byte in a row.
    pub fn parse(bytes: &'a [u8]) -> Result<(Frame<'a>, usize), WireError> {
        let mut r = Reader::new(bytes);
        let frame = Frame::read(&mut r)?;
        Ok((frame, bytes.len() - r.rest().len()))
    }

    fn read(r: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
        let frame = match r.u8("frame type")? {
            kind::PADDING => Frame::Padding(1 + r.skip_zeros()),
            kind::PING => Frame::Ping,
            kind::ACK => Frame::Ack(AckFrame::parse(r)?),
            kind::SOURCE => Frame::Source(SourceFrame {
                id: TruncatedSymbolId(Truncated::parse(r, "symbol id")?),
                data: r.bytes_to_end(MAX_SYMBOL_SIZE, "source data")?,
            }),
            kind::REPAIR => {
                let first = TruncatedSymbolId(Truncated::parse(r, "window first")?);
                let len = r.varint_u16("window length")?;
                if len == 0 {
                    return Err(WireError::OutOfRange("window length"));
                }
                let key = RepairKey(r.varint_u16("repair key")?);
                let density = r.u8("density")?;
                if density > MAX_DENSITY && density != XOR_PARITY_DENSITY {
                    return Err(WireError::OutOfRange("density"));
                }
                let data = r.bytes_to_end(MAX_SYMBOL_SIZE, "repair data")?;
                Frame::Repair(RepairFrame {
                    first,
                    len,
                    key,
                    density,
                    data,
                })
            }
            t @ (kind::STREAM
            | kind::STREAM_FIN
            | kind::STREAM_TO_END
            | kind::STREAM_FIN_TO_END) => {
                let id = StreamId(r.varint("stream id")?);
                let offset = r.varint("stream offset")?;
                // A stream never reaches 2^62 bytes, so that every offset in
                // it is a varint. `offset` is one, so this cannot underflow.
                let room = VarInt::MAX.into_inner() - offset;
                let max = usize::try_from(room).unwrap_or(usize::MAX);
                let to_end = matches!(t, kind::STREAM_TO_END | kind::STREAM_FIN_TO_END);
                Frame::Stream(StreamFrame {
                    id,
                    offset,
                    fin: matches!(t, kind::STREAM_FIN | kind::STREAM_FIN_TO_END),
                    to_end,
                    data: if to_end {
                        r.bytes_to_end(max, "stream data")?
                    } else {
                        r.bytes_with_len(max, "stream data")?
                    },
                })
            }
            kind::RESET_STREAM => Frame::ResetStream {
                id: StreamId(r.varint("stream id")?),
                error_code: r.varint("error code")?,
                final_size: r.varint("final size")?,
            },
            kind::STOP_SENDING => Frame::StopSending {
                id: StreamId(r.varint("stream id")?),
                error_code: r.varint("error code")?,
            },
            kind::MAX_DATA => Frame::MaxData(r.varint("max data")?),
            kind::MAX_STREAM_DATA => Frame::MaxStreamData {
                id: StreamId(r.varint("stream id")?),
                max: r.varint("max stream data")?,
            },
            kind::MAX_STREAMS => Frame::MaxStreams(r.varint("max streams")?),
            kind::HANDSHAKE => Frame::Handshake(HandshakeFrame {
                source_cid: ConnectionId(r.u32_be("source connection id")?),
                params: TransportParams::parse(r)?,
            }),
            kind::HANDSHAKE_DONE => Frame::HandshakeDone,
            kind::CLOSE => Frame::Close(CloseFrame {
                code: r.varint("close code")?,
                reason: r.bytes_with_len(MAX_REASON_LEN, "close reason")?,
            }),
            kind::NOISE => Frame::Noise(r.bytes_with_len(MAX_NOISE_MESSAGE_LEN, "noise message")?),
            kind::PATH_CHALLENGE => Frame::PathChallenge(r.array("path challenge")?),
            kind::PATH_RESPONSE => Frame::PathResponse(r.array("path response")?),
            other => return Err(WireError::UnknownFrame(other)),
        };
        Ok(frame)
    }

    /// Appends the frame to `out`. `Padding(n)` appends `n` zero bytes.
    ///
    /// # Panics
    /// If the frame could not be parsed back: an integer field of 2^62 or
    /// more, or an [`AckFrame`] whose ranges break its rules. Frames are
    /// built by this endpoint, so that is a bug here; every frame that
    /// [`Frame::parse`] returns can be emitted.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Padding(n) => out.resize(out.len() + n, 0),
            Frame::Ping => out.push(kind::PING),
            Frame::Ack(ack) => {
                out.push(kind::ACK);
                ack.emit(out);
            }
            Frame::Source(s) => {
                out.push(kind::SOURCE);
                s.id.0.emit(out);
                out.extend_from_slice(s.data);
            }
            Frame::Repair(rep) => {
                out.push(kind::REPAIR);
                rep.first.0.emit(out);
                put_varint(out, u64::from(rep.len));
                put_varint(out, u64::from(rep.key.0));
                out.push(rep.density);
                out.extend_from_slice(rep.data);
            }
            Frame::Stream(s) => {
                StreamFrame::emit_header(s.id, s.offset, s.fin, s.len_field(), out);
                out.extend_from_slice(s.data);
            }
            Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => {
                out.push(kind::RESET_STREAM);
                put_varint(out, id.0);
                put_varint(out, *error_code);
                put_varint(out, *final_size);
            }
            Frame::StopSending { id, error_code } => {
                out.push(kind::STOP_SENDING);
                put_varint(out, id.0);
                put_varint(out, *error_code);
            }
            Frame::MaxData(max) => {
                out.push(kind::MAX_DATA);
                put_varint(out, *max);
            }
            Frame::MaxStreamData { id, max } => {
                out.push(kind::MAX_STREAM_DATA);
                put_varint(out, id.0);
                put_varint(out, *max);
            }
            Frame::MaxStreams(max) => {
                out.push(kind::MAX_STREAMS);
                put_varint(out, *max);
            }
            Frame::Handshake(h) => {
                out.push(kind::HANDSHAKE);
                out.extend_from_slice(&h.source_cid.0.to_be_bytes());
                h.params.emit(out);
            }
            Frame::HandshakeDone => out.push(kind::HANDSHAKE_DONE),
            Frame::Close(c) => {
                out.push(kind::CLOSE);
                put_varint(out, c.code);
                put_bytes(out, c.reason);
            }
            Frame::Noise(message) => {
                out.push(kind::NOISE);
                put_bytes(out, message);
            }
            Frame::PathChallenge(data) => {
                out.push(kind::PATH_CHALLENGE);
                out.extend_from_slice(data);
            }
            Frame::PathResponse(data) => {
                out.push(kind::PATH_RESPONSE);
                out.extend_from_slice(data);
            }
        }
    }

    /// How many bytes [`Frame::emit`] appends.
    pub fn encoded_len(&self) -> usize {
        let fields = match self {
            Frame::Padding(n) => return *n,
            Frame::Ping | Frame::HandshakeDone => 0,
            Frame::Ack(ack) => ack.encoded_len(),
            Frame::Source(s) => s.id.len() + s.data.len(),
            Frame::Repair(rep) => {
                rep.first.len()
                    + varint_len(u64::from(rep.len))
                    + varint_len(u64::from(rep.key.0))
                    + 1
                    + rep.data.len()
            }
            Frame::Stream(s) => {
                return StreamFrame::header_len(s.id, s.offset, s.len_field()) + s.data.len()
            }
            Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => varint_len(id.0) + varint_len(*error_code) + varint_len(*final_size),
            Frame::StopSending { id, error_code } => varint_len(id.0) + varint_len(*error_code),
            Frame::MaxData(max) | Frame::MaxStreams(max) => varint_len(*max),
            Frame::MaxStreamData { id, max } => varint_len(id.0) + varint_len(*max),
            Frame::Handshake(h) => 4 + h.params.encoded_len(),
            Frame::Close(c) => varint_len(c.code) + bytes_len(c.reason),
            Frame::Noise(message) => bytes_len(message),
            Frame::PathChallenge(_) | Frame::PathResponse(_) => PATH_CHALLENGE_LEN,
        };
        1 + fields
    }
}

/// A varint length, then the bytes.
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn bytes_len(bytes: &[u8]) -> usize {
    varint_len(bytes.len() as u64) + bytes.len()
}

/// The frames of a packet's payload, in order; after the first error it
/// yields nothing more, since the rest cannot be delimited.
#[derive(Clone)]
pub struct Frames<'a> {
    rest: &'a [u8],
}

impl fmt::Debug for Frames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frames")
            .field("rest", &Len(self.rest))
            .finish()
    }
}

impl<'a> Frames<'a> {
    /// The frames in `payload`: the bytes after the header, without the
    /// packet protection tag.
    pub fn new(payload: &'a [u8]) -> Frames<'a> {
        Frames { rest: payload }
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match Frame::parse(self.rest) {
            Ok((frame, len)) => {
                self.rest = self.rest.get(len..).unwrap_or_default();
                Some(Ok(frame))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

impl FusedIterator for Frames<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{DecoderState, EcnCounts, Side};

    fn emit(frame: &Frame<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        frame.emit(&mut out);
        assert_eq!(out.len(), frame.encoded_len(), "{frame:?}");
        out
    }

    /// Parses `bytes` as exactly one frame.
    fn parse(bytes: &[u8]) -> Result<Frame<'_>, WireError> {
        let (frame, len) = Frame::parse(bytes)?;
        assert_eq!(len, bytes.len());
        Ok(frame)
    }

    fn roundtrip(frame: Frame<'_>, hex: &[u8]) {
        let bytes = emit(&frame);
        assert_eq!(bytes, hex, "{frame:?}");
        assert_eq!(parse(&bytes), Ok(frame));
    }

    #[test]
    fn known_encodings() {
        roundtrip(Frame::Padding(3), &[0x00, 0x00, 0x00]);
        roundtrip(Frame::Ping, &[0x01]);
        roundtrip(
            Frame::Source(SourceFrame {
                id: TruncatedSymbolId::truncate(SymbolId(0x25), SymbolId(0x20), SymbolId(0x25)),
                data: b"ab",
            }),
            &[0x03, 0x25, b'a', b'b'],
        );
        roundtrip(
            Frame::Repair(RepairFrame {
                first: TruncatedSymbolId::truncate(SymbolId(0x40), SymbolId(0x20), SymbolId(0x60)),
                len: 0x10,
                key: RepairKey(0x0102),
                density: 0x0f,
                data: b"x",
            }),
            &[0x04, 0x40, 0x40, 0x10, 0x41, 0x02, 0x0f, b'x'],
        );
        roundtrip(
            Frame::Stream(StreamFrame {
                id: StreamId::new(Side::Server, 2),
                offset: 0x3fff,
                fin: false,
                to_end: false,
                data: b"hi",
            }),
            &[0x05, 0x05, 0x7f, 0xff, 0x02, b'h', b'i'],
        );
        roundtrip(
            Frame::Stream(StreamFrame {
                id: StreamId(0),
                offset: 0,
                fin: true,
                to_end: false,
                data: b"",
            }),
            &[0x06, 0x00, 0x00, 0x00],
        );
        roundtrip(
            Frame::Stream(StreamFrame {
                id: StreamId(1),
                offset: 0x25,
                fin: false,
                to_end: true,
                data: b"hi",
            }),
            &[0x10, 0x01, 0x25, b'h', b'i'],
        );
        roundtrip(
            Frame::Stream(StreamFrame {
                id: StreamId(1),
                offset: 0x25,
                fin: true,
                to_end: true,
                data: b"",
            }),
            &[0x11, 0x01, 0x25],
        );
        roundtrip(
            Frame::ResetStream {
                id: StreamId(4),
                error_code: 7,
                final_size: 0x40,
            },
            &[0x07, 0x04, 0x07, 0x40, 0x40],
        );
        roundtrip(
            Frame::StopSending {
                id: StreamId(4),
                error_code: 7,
            },
            &[0x08, 0x04, 0x07],
        );
        roundtrip(Frame::MaxData(0x25), &[0x09, 0x25]);
        roundtrip(
            Frame::MaxStreamData {
                id: StreamId(1),
                max: 0x25,
            },
            &[0x0a, 0x01, 0x25],
        );
        roundtrip(Frame::MaxStreams(0x25), &[0x0b, 0x25]);
        roundtrip(Frame::HandshakeDone, &[0x0d]);
        roundtrip(
            Frame::Close(CloseFrame {
                code: 1,
                reason: b"bye",
            }),
            &[0x0e, 0x01, 0x03, b'b', b'y', b'e'],
        );
        roundtrip(Frame::Noise(b"hs"), &[0x0f, 0x02, b'h', b's']);
        roundtrip(
            Frame::PathChallenge([1, 2, 3, 4, 5, 6, 7, 8]),
            &[0x12, 1, 2, 3, 4, 5, 6, 7, 8],
        );
        roundtrip(
            Frame::PathResponse([8, 7, 6, 5, 4, 3, 2, 1]),
            &[0x13, 8, 7, 6, 5, 4, 3, 2, 1],
        );
    }

    #[test]
    fn noise_messages_longer_than_the_limit_are_refused() {
        let longest = vec![7u8; MAX_NOISE_MESSAGE_LEN];
        let bytes = emit(&Frame::Noise(&longest));
        assert_eq!(parse(&bytes), Ok(Frame::Noise(&longest)));
        let too_long = vec![7u8; MAX_NOISE_MESSAGE_LEN + 1];
        let bytes = emit(&Frame::Noise(&too_long));
        assert_eq!(parse(&bytes), Err(WireError::OutOfRange("noise message")));
    }

    #[test]
    fn handshake_body_roundtrips_and_refuses_trailing_bytes() {
        let body = HandshakeFrame {
            source_cid: ConnectionId(9),
            params: TransportParams {
                max_datagram: 1400,
                symbol_size: 1300,
                max_window: 64,
                max_data: 1,
                max_stream_data: 2,
                max_streams: 3,
                idle_timeout_ms: 4,
            },
        };
        let mut bytes = Vec::new();
        body.emit_body(&mut bytes);
        assert_eq!(HandshakeFrame::parse_body(&bytes), Ok(body));
        bytes.push(0);
        assert!(HandshakeFrame::parse_body(&bytes).is_err());
        assert!(HandshakeFrame::parse_body(&bytes[..7]).is_err());
    }

    #[test]
    fn handshake_encoding() {
        let frame = Frame::Handshake(HandshakeFrame {
            source_cid: ConnectionId(0x0102_0304),
            params: TransportParams {
                max_datagram: 1200,
                symbol_size: 1,
                max_window: 1,
                max_data: 0,
                max_stream_data: 0,
                max_streams: 0,
                idle_timeout_ms: 0,
            },
        });
        roundtrip(
            frame,
            &[
                0x0c, 0x01, 0x02, 0x03, 0x04, 0x44, 0xb0, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00,
            ],
        );
    }

    #[test]
    fn ack_frame_roundtrips_through_frame() {
        let frame = Frame::Ack(AckFrame::new(
            [1..=3],
            10,
            EcnCounts::default(),
            DecoderState::default(),
        ));
        let bytes = emit(&frame);
        assert_eq!(bytes[0], 0x02);
        assert_eq!(parse(&bytes), Ok(frame));
    }

    #[test]
    fn unknown_frame_types_are_refused() {
        for t in [0x14, 0x15, 0x40, 0xff] {
            assert_eq!(Frame::parse(&[t]), Err(WireError::UnknownFrame(t)));
        }
    }

    #[test]
    fn padding_folds_every_zero_in_a_row() {
        let bytes = [0x01, 0x00, 0x00, 0x00, 0x01, 0x00];
        let frames: Vec<_> = Frames::new(&bytes).collect();
        assert_eq!(
            frames,
            [
                Ok(Frame::Ping),
                Ok(Frame::Padding(3)),
                Ok(Frame::Ping),
                Ok(Frame::Padding(1))
            ]
        );
    }

    #[test]
    fn frames_stop_after_the_first_error() {
        let bytes = [0x01, 0xff, 0x01, 0x01];
        let frames: Vec<_> = Frames::new(&bytes).collect();
        assert_eq!(
            frames,
            [Ok(Frame::Ping), Err(WireError::UnknownFrame(0xff))]
        );
        let frames: Vec<_> = Frames::new(&[0x01, 0x09]).collect();
        assert_eq!(
            frames,
            [Ok(Frame::Ping), Err(WireError::Truncated("max data"))]
        );
    }

    fn repair_bytes(len: u64, density: u8) -> Vec<u8> {
        let mut out = vec![kind::REPAIR, 0x00];
        put_varint(&mut out, len);
        out.extend_from_slice(&[0x00, density, 0x00]);
        out
    }

    #[test]
    fn density_15_accepted_16_refused() {
        assert!(parse(&repair_bytes(1, 15)).is_ok());
        assert_eq!(
            parse(&repair_bytes(1, 16)),
            Err(WireError::OutOfRange("density"))
        );
    }

    #[test]
    fn density_0x1f_is_xor_parity_and_its_neighbours_are_refused() {
        assert!(parse(&repair_bytes(1, 0x1f)).is_ok());
        for refused in [0x1e, 0x20, 0xff] {
            assert_eq!(
                parse(&repair_bytes(1, refused)),
                Err(WireError::OutOfRange("density"))
            );
        }
    }

    #[test]
    fn symbol_ids_take_the_bytes_the_receivers_range_needs() {
        let len = |id, lowest, highest| {
            TruncatedSymbolId::truncate(SymbolId(id), SymbolId(lowest), SymbolId(highest)).len()
        };
        // A new source symbol: the receiver's end lies between what it
        // reported and the symbol itself.
        assert_eq!(len(1_000_031, 1_000_000, 1_000_031), 1);
        assert_eq!(len(1_000_032, 1_000_000, 1_000_032), 2);
        // A repair window starting before what the receiver reported, and
        // one while the receiver may be far ahead.
        assert_eq!(len(1_000_000, 1_008_191, 1_008_191), 2);
        assert_eq!(len(1_000_000, 1_000_000, 1_008_192), 4);
        assert_eq!(len(5, 0, 1 << 40), 8);
    }

    #[test]
    fn a_repair_window_is_expanded_against_the_decoder_end() {
        let repair = RepairFrame {
            first: TruncatedSymbolId::truncate(
                SymbolId(16_380),
                SymbolId(16_000),
                SymbolId(16_400),
            ),
            len: 10,
            key: RepairKey(0),
            density: 0x0f,
            data: b"",
        };
        assert_eq!(repair.first.len(), 2);
        for end in [16_000, 16_384, 16_400] {
            assert_eq!(
                repair.window(SymbolId(end)),
                Window::new(SymbolId(16_380), 10),
                "end {end}"
            );
        }
        // The last ids there are.
        let max = VarInt::MAX.into_inner();
        let last = RepairFrame {
            first: TruncatedSymbolId::whole(SymbolId(max - 2)),
            len: u16::MAX,
            ..repair
        };
        let window = last.window(SymbolId(max));
        assert_eq!(window.first, SymbolId(max - 2));
        assert!(window.end().is_some());
    }

    #[test]
    fn window_len_0_refused_1_accepted() {
        assert_eq!(
            parse(&repair_bytes(0, 0)),
            Err(WireError::OutOfRange("window length"))
        );
        assert!(parse(&repair_bytes(1, 0)).is_ok());
    }

    #[test]
    fn window_len_up_to_u16_max() {
        assert!(parse(&repair_bytes(0xffff, 0)).is_ok());
        assert_eq!(
            parse(&repair_bytes(0x1_0000, 0)),
            Err(WireError::OutOfRange("window length"))
        );
    }

    #[test]
    fn repair_key_up_to_u16_max() {
        let bytes = |key: u64| {
            let mut out = vec![kind::REPAIR, 0x00, 0x01];
            put_varint(&mut out, key);
            out.extend_from_slice(&[0x00, 0x00]);
            out
        };
        assert!(parse(&bytes(0xffff)).is_ok());
        assert_eq!(
            parse(&bytes(0x1_0000)),
            Err(WireError::OutOfRange("repair key"))
        );
    }

    fn with_data(prefix: &[u8], len: usize) -> Vec<u8> {
        let mut out = prefix.to_vec();
        put_varint(&mut out, len as u64);
        out.resize(out.len() + len, 0xaa);
        out
    }

    fn with_data_to_end(prefix: &[u8], len: usize) -> Vec<u8> {
        let mut out = prefix.to_vec();
        out.resize(out.len() + len, 0xaa);
        out
    }

    #[test]
    fn symbols_up_to_max_symbol_size() {
        for prefix in [&[kind::SOURCE, 0x00][..], &[kind::REPAIR, 0, 1, 0, 0]] {
            assert!(parse(&with_data_to_end(prefix, MAX_SYMBOL_SIZE)).is_ok());
            assert!(matches!(
                parse(&with_data_to_end(prefix, MAX_SYMBOL_SIZE + 1)),
                Err(WireError::OutOfRange(_))
            ));
        }
    }

    #[test]
    fn symbol_frames_and_stream_frames_to_the_end_take_every_byte_left() {
        let stream = [kind::STREAM, 0x00, 0x00, 0x02, b'a', b'b'];
        let mut packet = stream.to_vec();
        packet.extend_from_slice(&[kind::STREAM_TO_END, 0x00, 0x02, b'c', 0x00, 0x00]);
        let frames: Vec<_> = Frames::new(&packet).collect();
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert_eq!(
            frames[1],
            Ok(Frame::Stream(StreamFrame {
                id: StreamId(0),
                offset: 2,
                fin: false,
                to_end: true,
                data: &[b'c', 0, 0],
            }))
        );
        let source = [kind::SOURCE, 0x07, kind::PING, 0x00];
        assert_eq!(
            Frames::new(&source).collect::<Vec<_>>(),
            vec![Ok(Frame::Source(SourceFrame {
                id: TruncatedSymbolId(Truncated::from_parts(7, 6)),
                data: &[kind::PING, 0x00],
            }))]
        );
    }

    #[test]
    fn reason_of_1024_accepted_1025_refused() {
        assert!(parse(&with_data(&[kind::CLOSE, 0x00], 1024)).is_ok());
        assert_eq!(
            parse(&with_data(&[kind::CLOSE, 0x00], 1025)),
            Err(WireError::OutOfRange("close reason"))
        );
    }

    #[test]
    fn stream_end_up_to_2_62_minus_1() {
        let max = VarInt::MAX.into_inner();
        let stream = |offset: u64, len: usize| {
            let mut prefix = vec![kind::STREAM, 0x00];
            put_varint(&mut prefix, offset);
            with_data(&prefix, len)
        };
        let stream_to_end = |offset: u64, len: usize| {
            let mut prefix = vec![kind::STREAM_TO_END, 0x00];
            put_varint(&mut prefix, offset);
            with_data_to_end(&prefix, len)
        };
        assert!(parse(&stream_to_end(max - 3, 3)).is_ok());
        assert_eq!(
            parse(&stream_to_end(max - 3, 4)),
            Err(WireError::OutOfRange("stream data"))
        );
        assert!(parse(&stream(max - 3, 3)).is_ok());
        assert_eq!(
            parse(&stream(max - 3, 4)),
            Err(WireError::OutOfRange("stream data"))
        );
        assert!(parse(&stream(max, 0)).is_ok());
        assert_eq!(
            parse(&stream(max, 1)),
            Err(WireError::OutOfRange("stream data"))
        );
    }

    #[test]
    fn stream_header_len_matches_the_encoding() {
        for (id, offset, len) in [(0, 0, 0), (0x40, 0x4000, 0x40), (0x3fff, 1 << 40, 9000)] {
            let data = vec![1; len];
            for to_end in [false, true] {
                let frame = Frame::Stream(StreamFrame {
                    id: StreamId(id),
                    offset,
                    fin: false,
                    to_end,
                    data: &data,
                });
                let len_field = (!to_end).then_some(len);
                assert_eq!(
                    StreamFrame::header_len(StreamId(id), offset, len_field) + len,
                    emit(&frame).len()
                );
            }
        }
    }

    #[test]
    fn a_length_past_the_input_is_truncated() {
        assert_eq!(
            parse(&[kind::STREAM, 0x00, 0x00, 0x03, 0xaa, 0xaa]),
            Err(WireError::Truncated("stream data"))
        );
    }

    #[test]
    fn close_reason_is_shown_lossily() {
        let close = CloseFrame {
            code: 0,
            reason: b"bad \xff byte",
        };
        assert_eq!(close.reason_lossy(), "bad \u{fffd} byte");
    }

    #[test]
    fn debug_shows_payload_lengths_not_bytes() {
        let data = [0xaa; 1000];
        let frame = Frame::Source(SourceFrame {
            id: TruncatedSymbolId::whole(SymbolId(1)),
            data: &data,
        });
        assert_eq!(
            format!("{frame:?}"),
            "Source(SourceFrame { id: TruncatedSymbolId(Truncated { low_bits: 1, bits: 62 }), \
             data: [1000 bytes] })"
        );
    }
}
