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
    /// The tag does not authenticate the packet (or, with the plain
    /// layer, the packet was corrupted on the way).
    #[error("packet failed its integrity check")]
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

/// Bytes of the plain layer's checksum.
const CHECKSUM_LEN: usize = 4;

/// No secrecy and no authentication, only an integrity check: a CRC-32C of
/// the whole packet, so that a corrupted packet is dropped rather than
/// decoded into wrong bytes. For the simulator and for tests that are not
/// about security.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainProtection;

impl PacketProtection for PlainProtection {
    fn tag_len(&self) -> usize {
        CHECKSUM_LEN
    }

    fn seal(&mut self, _packet_number: u64, _header_len: usize, packet: &mut Vec<u8>) {
        let crc = crc32c::crc32c(packet);
        packet.extend_from_slice(&crc.to_be_bytes());
    }

    fn open(
        &mut self,
        _packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, OpenError> {
        let Some(end) = packet.len().checked_sub(CHECKSUM_LEN) else {
            return Err(OpenError::TooShort);
        };
        if end < header_len {
            return Err(OpenError::TooShort);
        }
        let (body, tag) = packet.split_at(end);
        if crc32c::crc32c(body).to_be_bytes() != tag {
            return Err(OpenError::Unauthentic);
        }
        Ok(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_layer_drops_any_flipped_bit() {
        let mut layer = PlainProtection;
        let mut packet = b"header and payload".to_vec();
        layer.seal(7, 6, &mut packet);
        assert_eq!(packet.len(), 18 + CHECKSUM_LEN);
        assert_eq!(layer.open(7, 6, &mut packet.clone()), Ok(18));
        for bit in 0..packet.len() * 8 {
            let mut bad = packet.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                layer.open(7, 6, &mut bad),
                Err(OpenError::Unauthentic),
                "bit {bit}"
            );
        }
    }

    #[test]
    fn plain_layer_refuses_packets_shorter_than_header_and_tag() {
        let mut layer = PlainProtection;
        assert_eq!(layer.open(0, 6, &mut [0u8; 9]), Err(OpenError::TooShort));
        assert_eq!(layer.open(0, 6, &mut [0u8; 3]), Err(OpenError::TooShort));
        let mut ok = vec![0u8; 6];
        layer.seal(0, 6, &mut ok);
        assert_eq!(layer.open(0, 6, &mut ok), Ok(6));
    }
}
