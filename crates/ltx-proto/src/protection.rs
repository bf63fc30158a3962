//! Packet protection: the layer that seals a packet after it is built and
//! opens it before it is parsed.
//!
//! The frame format leaves room for a [`TAG_LEN`]-byte authentication tag in
//! every packet and keeps header bits reserved, so authenticated encryption
//! can replace [`PlainProtection`] without changing the wire format.

use thiserror::Error;

/// Bytes every packet's size budget keeps for an authentication tag.
pub const TAG_LEN: usize = 16;

/// A packet that failed to open; it is dropped and counted, never acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum OpenError {
    /// Shorter than its header and tag.
    #[error("packet too short to hold its tag")]
    TooShort,
    /// The tag does not authenticate the packet.
    #[error("packet failed authentication")]
    Unauthentic,
}

/// Seals outgoing packets and opens incoming ones.
pub trait PacketProtection: Send + std::fmt::Debug {
    /// Bytes the seal appends.
    fn tag_len(&self) -> usize;
    /// Seals `packet` in place (appending the tag); its first `header_len`
    /// bytes are the header, authenticated but not encrypted.
    fn seal(&mut self, packet_number: u64, header_len: usize, packet: &mut Vec<u8>);
    /// Opens `packet` in place and returns the length of header and payload
    /// (without the tag).
    fn open(
        &mut self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, OpenError>;
}

/// No protection: packets go as they are built. For the simulator and for
/// tests that are not about security.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainProtection;

impl PacketProtection for PlainProtection {
    fn tag_len(&self) -> usize {
        0
    }

    fn seal(&mut self, _packet_number: u64, _header_len: usize, _packet: &mut Vec<u8>) {}

    fn open(
        &mut self,
        _packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, OpenError> {
        if packet.len() < header_len {
            return Err(OpenError::TooShort);
        }
        Ok(packet.len())
    }
}
