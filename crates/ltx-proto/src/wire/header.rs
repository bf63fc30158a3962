//! The header that starts every ltx datagram.
//!
//! ```text
//! byte 0     0 1 T T K R R R   fixed 0b01, packet type, key phase, reserved
//! byte 1     version
//! bytes 2-5  destination connection id, big-endian
//! then       packet number, varint
//! ```
//!
//! Frames follow, then the packet protection tag, which this layer does not
//! parse.

use super::varint::{put_varint, varint_len, Reader};
use super::{ConnectionId, PacketNumber, WireError};

/// The protocol version this crate speaks.
pub const VERSION: u8 = 0x01;

/// The longest a header can be: flags, version, connection id and an
/// 8-byte packet number.
pub const MAX_HEADER_LEN: usize = 1 + 1 + 4 + 8;

/// Bits 7–6 of the first byte: always `0b01`, so that a stray datagram of
/// another protocol is unlikely to pass for ltx.
const FIXED_MASK: u8 = 0xc0;
const FIXED_BITS: u8 = 0x40;
const TYPE_SHIFT: u8 = 4;
const TYPE_MASK: u8 = 0x30;
const KEY_PHASE: u8 = KEY_PHASE_BIT;
/// The key phase bit of the first byte. Packet protection sets and reads
/// it: it says which of two successive keys sealed the packet, and being
/// in the header it is authenticated with it.
pub const KEY_PHASE_BIT: u8 = 0x08;
/// Bits 2–0, kept for packet protection (which may mask them).
const RESERVED_MASK: u8 = 0x07;

/// What a packet is for, which decides the keys that protect it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum PacketType {
    /// The client's first packets, before the handshake completes.
    Initial = 0x0,
    /// The rest of the handshake.
    Handshake = 0x1,
    /// Application data, once the handshake is done.
    Data = 0x2,
}

impl PacketType {
    fn from_bits(bits: u8) -> Option<PacketType> {
        match bits {
            0x0 => Some(PacketType::Initial),
            0x1 => Some(PacketType::Handshake),
            0x2 => Some(PacketType::Data),
            _ => None,
        }
    }
}

/// The parsed header of an ltx packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// What the packet is for.
    pub packet_type: PacketType,
    /// Which of two successive keys protects the packet: set and read by
    /// the packet protection (see [`KEY_PHASE_BIT`]), not interpreted here.
    pub key_phase: bool,
    /// The connection id the receiver chose for itself.
    pub dcid: ConnectionId,
    /// The packet's number.
    pub number: PacketNumber,
}

impl Header {
    /// Parses the header at the start of `bytes`, returning it and its length
    /// in bytes (the frames start there).
    ///
    /// The fixed bits are checked first and the version next, so that a
    /// packet of a future version, whose other bits may mean something else,
    /// is reported as [`WireError::UnsupportedVersion`].
    pub fn parse(bytes: &[u8]) -> Result<(Header, usize), WireError> {
        let mut r = Reader::new(bytes);
        let flags = r.u8("header flags")?;
        if flags & FIXED_MASK != FIXED_BITS {
            return Err(WireError::FixedBits(flags));
        }
        let version = r.u8("version")?;
        if version != VERSION {
            return Err(WireError::UnsupportedVersion(version));
        }
        let type_bits = (flags & TYPE_MASK) >> TYPE_SHIFT;
        let packet_type =
            PacketType::from_bits(type_bits).ok_or(WireError::UnknownPacketType(type_bits))?;
        if flags & RESERVED_MASK != 0 {
            return Err(WireError::ReservedBits(flags));
        }
        let dcid = ConnectionId(r.u32_be("destination connection id")?);
        let number = PacketNumber(r.varint("packet number")?);
        let header = Header {
            packet_type,
            key_phase: flags & KEY_PHASE != 0,
            dcid,
            number,
        };
        Ok((header, bytes.len() - r.rest().len()))
    }

    /// Appends the header to `out`.
    ///
    /// # Panics
    /// If the packet number is 2^62 or more, which no connection reaches.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let mut flags = FIXED_BITS | (self.packet_type as u8) << TYPE_SHIFT;
        if self.key_phase {
            flags |= KEY_PHASE;
        }
        out.push(flags);
        out.push(VERSION);
        out.extend_from_slice(&self.dcid.0.to_be_bytes());
        put_varint(out, self.number.0);
    }

    /// How many bytes [`Header::emit`] appends.
    #[allow(clippy::len_without_is_empty)] // a header is never empty
    pub fn len(&self) -> usize {
        1 + 1 + 4 + varint_len(self.number.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            packet_type: PacketType::Data,
            key_phase: true,
            dcid: ConnectionId(0x0102_0304),
            number: PacketNumber(0x25),
        }
    }

    #[test]
    fn known_encoding() {
        let mut out = Vec::new();
        header().emit(&mut out);
        assert_eq!(out, [0x68, 0x01, 0x01, 0x02, 0x03, 0x04, 0x25]);
        assert_eq!(header().len(), out.len());
        // Frames follow the header; parsing stops where they start.
        out.push(0x01);
        assert_eq!(Header::parse(&out), Ok((header(), 7)));
    }

    #[test]
    fn the_longest_header_is_max_header_len() {
        let mut h = header();
        h.number = PacketNumber((1 << 62) - 1);
        let mut out = Vec::new();
        h.emit(&mut out);
        assert_eq!(out.len(), MAX_HEADER_LEN);
        assert_eq!(Header::parse(&out), Ok((h, MAX_HEADER_LEN)));
    }

    fn with_flags(flags: u8) -> Vec<u8> {
        let mut out = Vec::new();
        header().emit(&mut out);
        out[0] = flags;
        out
    }

    #[test]
    fn fixed_bits_must_be_01() {
        assert!(Header::parse(&with_flags(0x40)).is_ok());
        for flags in [0x00, 0x80, 0xc0] {
            assert_eq!(
                Header::parse(&with_flags(flags)),
                Err(WireError::FixedBits(flags))
            );
        }
    }

    #[test]
    fn packet_type_3_is_refused() {
        assert_eq!(
            Header::parse(&with_flags(0x60)).map(|(h, _)| h.packet_type),
            Ok(PacketType::Data)
        );
        assert_eq!(
            Header::parse(&with_flags(0x70)),
            Err(WireError::UnknownPacketType(3))
        );
    }

    #[test]
    fn reserved_bits_must_be_zero() {
        assert!(Header::parse(&with_flags(0x68)).is_ok());
        for flags in [0x69, 0x6a, 0x6c, 0x6f] {
            assert_eq!(
                Header::parse(&with_flags(flags)),
                Err(WireError::ReservedBits(flags))
            );
        }
    }

    #[test]
    fn key_phase_is_carried() {
        let (h, _) = Header::parse(&with_flags(0x60)).unwrap();
        assert!(!h.key_phase);
        let (h, _) = Header::parse(&with_flags(0x68)).unwrap();
        assert!(h.key_phase);
    }

    #[test]
    fn another_version_is_told_apart() {
        let mut bytes = with_flags(0x68);
        for version in [0x00, 0x02, 0xff] {
            bytes[1] = version;
            assert_eq!(
                Header::parse(&bytes),
                Err(WireError::UnsupportedVersion(version))
            );
        }
        // Even when the rest of the first byte means nothing in version 1.
        bytes[0] = 0x7f;
        assert_eq!(
            Header::parse(&bytes),
            Err(WireError::UnsupportedVersion(0xff))
        );
    }

    #[test]
    fn every_truncation_is_refused() {
        let bytes = with_flags(0x68);
        for len in 0..bytes.len() {
            assert!(
                matches!(Header::parse(&bytes[..len]), Err(WireError::Truncated(_))),
                "{len}"
            );
        }
    }
}
