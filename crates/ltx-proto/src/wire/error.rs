//! Why a packet or frame was refused.

use thiserror::Error;

/// Why bytes from the network were refused as an ltx header or frame.
///
/// Every variant names what was wrong, so that a connection can close with a
/// useful reason; none of them is caused by anything but the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum WireError {
    /// The input ended inside a field.
    #[error("input ends inside the {0}")]
    Truncated(&'static str),
    /// The two fixed bits of the first byte are not `0b01`: not an ltx packet.
    #[error("not an ltx packet (first byte {0:#04x})")]
    FixedBits(u8),
    /// A packet of a version this endpoint does not speak.
    #[error("unsupported version {0:#04x}")]
    UnsupportedVersion(u8),
    /// A packet type this version does not define.
    #[error("unknown packet type {0}")]
    UnknownPacketType(u8),
    /// Reserved bits of the first byte are set.
    #[error("reserved bits set in first byte {0:#04x}")]
    ReservedBits(u8),
    /// A frame type this version does not define.
    #[error("unknown frame type {0:#04x}")]
    UnknownFrame(u8),
    /// A field whose value is outside what the protocol allows, or that
    /// overflows when combined with another field.
    #[error("{0} out of range")]
    OutOfRange(&'static str),
}
