//! The packet and frame format.
//!
//! A datagram is a [`Header`], then [`Frame`]s, then the packet protection
//! tag, which belongs to another layer. Untrusted bytes become typed values
//! here and nowhere else: [`Header::parse`] and [`Frames`] refuse anything
//! out of range with a [`WireError`], never panic, and borrow payloads from
//! the packet instead of copying them. Everything past this boundary can
//! rely on the ranges documented on each type.
//!
//! ```
//! use ltx_proto::wire::{
//!     ConnectionId, Frame, Frames, Header, PacketNumber, PacketType, TruncatedPacketNumber,
//! };
//!
//! // Packet 1, the receiver known to have packet 0.
//! let number = TruncatedPacketNumber::truncate(PacketNumber(1), Some(PacketNumber(0)));
//! let header = Header {
//!     packet_type: PacketType::Data,
//!     key_phase: false,
//!     dcid: ConnectionId(7),
//!     number,
//! };
//! let mut packet = Vec::new();
//! header.emit(&mut packet);
//! Frame::Ping.emit(&mut packet);
//! Frame::MaxData(1 << 20).emit(&mut packet);
//!
//! let (parsed, len) = Header::parse(&packet)?;
//! assert_eq!(parsed, header);
//! assert_eq!(parsed.number.expand(Some(PacketNumber(0))), PacketNumber(1));
//! let frames = Frames::new(&packet[len..]).collect::<Result<Vec<_>, _>>()?;
//! assert_eq!(frames, [Frame::Ping, Frame::MaxData(1 << 20)]);
//! # Ok::<(), ltx_proto::wire::WireError>(())
//! ```

mod ack;
mod early;
mod error;
mod frame;
mod header;
mod ids;
mod params;
mod varint;

pub use ack::{AckFrame, DecoderState, EcnCounts, MAX_ACK_RANGES};
pub use early::{EarlyDataField, HandshakePayload};
pub use error::WireError;
pub use frame::{
    CloseFrame, Frame, Frames, HandshakeFrame, RepairFrame, SourceFrame, StreamFrame,
    TruncatedSymbolId, MAX_NOISE_MESSAGE_LEN, MAX_REASON_LEN, PATH_CHALLENGE_LEN,
};
pub use header::{
    Header, PacketType, TruncatedPacketNumber, KEY_PHASE_BIT, MAX_HEADER_LEN, VERSION,
};
pub use ids::{ConnectionId, PacketNumber, Side, StreamId};
pub use ltx_coding::codec::MAX_SYMBOL_SIZE;
pub use ltx_coding::SymbolId;
pub use params::{TransportParams, MIN_MAX_DATAGRAM};
pub use varint::{varint_len, VarInt};
