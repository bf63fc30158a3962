//! The header that starts every ltx datagram.
//!
//! ```text
//! byte 0     0 1 T T K R R R   fixed 0b01, packet type, key phase, reserved
//! byte 1     version (every packet but Data)
//! 4 bytes    destination connection id, big-endian
//! then       packet number, truncated: its low 6, 14, 30 or 62 bits as a
//!            varint of 1, 2, 4 or 8 bytes (see [`TruncatedPacketNumber`])
//! ```
//!
//! The handshake settles the version, so Data packets, which carry
//! everything after it, leave it out, as QUIC's short header does: a byte
//! less on every packet of a transfer.
//!
//! Frames follow, then the packet protection tag, which this layer does not
//! parse.

use super::varint::{Reader, Truncated};
use super::{ConnectionId, PacketNumber, WireError};

/// The protocol version this crate speaks.
pub const VERSION: u8 = 0x01;

/// The longest a header can be: flags, version, connection id and a packet
/// number sent whole, in 8 bytes (a Data packet's is a byte shorter).
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
    /// A client's stream data in its first flight, sealed with the early
    /// key before the handshake completes (see
    /// [`protection`](crate::protection)).
    EarlyData = 0x3,
}

impl PacketType {
    /// The type a packet's first byte names, without checking the rest.
    pub(crate) fn of_first_byte(byte: u8) -> Option<PacketType> {
        PacketType::from_bits((byte & TYPE_MASK) >> TYPE_SHIFT)
    }

    fn from_bits(bits: u8) -> Option<PacketType> {
        match bits {
            0x0 => Some(PacketType::Initial),
            0x1 => Some(PacketType::Handshake),
            0x2 => Some(PacketType::Data),
            0x3 => Some(PacketType::EarlyData),
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
    /// The packet's number, as much of it as the wire carries; the
    /// receiver expands it against the largest number it has received.
    pub number: TruncatedPacketNumber,
}

/// A packet number as a header carries it: its low 6, 14, 30 or 62 bits, in
/// a varint of 1, 2, 4 or 8 bytes whose length prefix says which.
///
/// The sender keeps enough bits to tell the number apart from every other
/// number the receiver may still expect: twice as many values as packets
/// it has sent since the largest one acknowledged ([`Self::truncate`]).
/// The receiver takes the number with those low bits nearest to the one
/// after the largest it has received ([`Self::expand`]). This is RFC 9000's
/// rule (§17.1, appendix A), with the length in the varint's prefix instead
/// of the first byte. A packet that arrives so late that it expands to the
/// wrong number fails its protection (the number is in the nonce, or in
/// the plain checksum) and is dropped.
///
/// On a long fat path the number takes 2 bytes where a whole varint would
/// take 4, on every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TruncatedPacketNumber(Truncated);

impl TruncatedPacketNumber {
    /// The shortest form of `number` that a receiver which has received
    /// `largest_acked` (or nothing, if `None`) expands correctly.
    pub fn truncate(
        number: PacketNumber,
        largest_acked: Option<PacketNumber>,
    ) -> TruncatedPacketNumber {
        // The receiver expects the number after its largest, which lies
        // between the largest acknowledged and this one: at most this far
        // from it.
        let spread = match largest_acked {
            Some(acked) => number.0.saturating_sub(acked.0).saturating_sub(1),
            None => number.0,
        };
        TruncatedPacketNumber(Truncated::keeping(number.0, spread))
    }

    /// `number` whole, in 8 bytes: expands to itself whatever the receiver
    /// has seen.
    pub fn whole(number: PacketNumber) -> TruncatedPacketNumber {
        TruncatedPacketNumber(Truncated::whole(number.0))
    }

    /// The number these bits stand for at a receiver whose largest
    /// received number is `largest_received` (`None`: nothing yet): the
    /// one nearest to the number after it.
    pub fn expand(self, largest_received: Option<PacketNumber>) -> PacketNumber {
        let expected = largest_received.map_or(0, |l| l.0.saturating_add(1));
        PacketNumber(self.0.expand(expected))
    }

    /// How many bytes the number takes in a header: 1, 2, 4 or 8.
    #[allow(clippy::len_without_is_empty)] // a number is never empty
    pub fn len(self) -> usize {
        self.0.len()
    }
}

impl Header {
    /// Parses the header at the start of `bytes`, returning it and its length
    /// in bytes (the frames start there).
    ///
    /// The fixed bits are checked first and, in any packet but Data, the
    /// version next, so that a packet of a future version, whose other bits
    /// may mean something else, is reported as
    /// [`WireError::UnsupportedVersion`].
    pub fn parse(bytes: &[u8]) -> Result<(Header, usize), WireError> {
        let mut r = Reader::new(bytes);
        let flags = r.u8("header flags")?;
        if flags & FIXED_MASK != FIXED_BITS {
            return Err(WireError::FixedBits(flags));
        }
        let type_bits = (flags & TYPE_MASK) >> TYPE_SHIFT;
        if type_bits != PacketType::Data as u8 {
            let version = r.u8("version")?;
            if version != VERSION {
                return Err(WireError::UnsupportedVersion(version));
            }
        }
        let packet_type =
            PacketType::from_bits(type_bits).ok_or(WireError::UnknownPacketType(type_bits))?;
        if flags & RESERVED_MASK != 0 {
            return Err(WireError::ReservedBits(flags));
        }
        let dcid = ConnectionId(r.u32_be("destination connection id")?);
        let number = TruncatedPacketNumber(Truncated::parse(&mut r, "packet number")?);
        let header = Header {
            packet_type,
            key_phase: flags & KEY_PHASE != 0,
            dcid,
            number,
        };
        Ok((header, bytes.len() - r.rest().len()))
    }

    /// Appends the header to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let mut flags = FIXED_BITS | (self.packet_type as u8) << TYPE_SHIFT;
        if self.key_phase {
            flags |= KEY_PHASE;
        }
        out.push(flags);
        if self.packet_type != PacketType::Data {
            out.push(VERSION);
        }
        out.extend_from_slice(&self.dcid.0.to_be_bytes());
        self.number.0.emit(out);
    }

    /// How many bytes [`Header::emit`] appends.
    #[allow(clippy::len_without_is_empty)] // a header is never empty
    pub fn len(&self) -> usize {
        let version = usize::from(self.packet_type != PacketType::Data);
        1 + version + 4 + self.number.len()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn header() -> Header {
        Header {
            packet_type: PacketType::Data,
            key_phase: true,
            dcid: ConnectionId(0x0102_0304),
            number: TruncatedPacketNumber::truncate(PacketNumber(0x25), Some(PacketNumber(0x20))),
        }
    }

    #[test]
    fn known_encoding() {
        let mut out = Vec::new();
        header().emit(&mut out);
        // A Data packet: no version.
        assert_eq!(out, [0x68, 0x01, 0x02, 0x03, 0x04, 0x25]);
        assert_eq!(header().len(), out.len());
        // Frames follow the header; parsing stops where they start.
        out.push(0x01);
        assert_eq!(Header::parse(&out), Ok((header(), 6)));
        // The handshake's packets carry the version after the flags.
        for (packet_type, flags) in [(PacketType::Initial, 0x48), (PacketType::Handshake, 0x58)] {
            let h = Header {
                packet_type,
                ..header()
            };
            let mut out = Vec::new();
            h.emit(&mut out);
            assert_eq!(out, [flags, VERSION, 0x01, 0x02, 0x03, 0x04, 0x25]);
            assert_eq!(h.len(), out.len());
            assert_eq!(Header::parse(&out), Ok((h, 7)));
        }
    }

    fn truncated_len(number: u64, largest_acked: Option<u64>) -> usize {
        TruncatedPacketNumber::truncate(PacketNumber(number), largest_acked.map(PacketNumber)).len()
    }

    #[test]
    fn the_number_keeps_twice_the_bits_of_the_packets_in_flight() {
        // Nothing acknowledged: the receiver expects 0.
        assert_eq!(truncated_len(31, None), 1);
        assert_eq!(truncated_len(32, None), 2);
        // Up to 32 unacknowledged in 6 bits, 8192 in 14, 2^29 in 30.
        assert_eq!(truncated_len(1_000_032, Some(1_000_000)), 1);
        assert_eq!(truncated_len(1_000_033, Some(1_000_000)), 2);
        assert_eq!(truncated_len(1_008_192, Some(1_000_000)), 2);
        assert_eq!(truncated_len(1_008_193, Some(1_000_000)), 4);
        assert_eq!(truncated_len(1 << 40, Some((1 << 40) - (1 << 29))), 4);
        assert_eq!(truncated_len(1 << 40, Some((1 << 40) - (1 << 29) - 1)), 8);
        // A number at or below the largest acknowledged (a peer that acked
        // more than was sent is refused elsewhere) still encodes.
        assert_eq!(truncated_len(5, Some(9)), 1);
    }

    #[test]
    fn known_expansions() {
        let expand = |low_bits, bits, largest: Option<u64>| {
            TruncatedPacketNumber(Truncated::from_parts(low_bits, bits))
                .expand(largest.map(PacketNumber))
                .0
        };
        // Across a wrap of the 14 low bits, forwards and backwards.
        assert_eq!(expand(6, 14, Some(16_380)), 16_390);
        assert_eq!(expand(16_380, 14, Some(16_390)), 16_380);
        // The nearest to the expected number, 20_001.
        assert_eq!(expand(3617, 14, Some(20_000)), 20_001);
        assert_eq!(expand(3617 + 8191, 14, Some(20_000)), 20_001 + 8191);
        assert_eq!(
            expand(3617 + 8193, 14, Some(20_000)),
            20_001 + 8193 - 16_384
        );
        // Nothing received: the receiver expects 0.
        assert_eq!(expand(31, 6, None), 31);
        // Whole numbers expand to themselves.
        assert_eq!(expand(12, 62, Some(1 << 50)), 12);
        // No expansion leaves the varint range.
        let max = crate::wire::VarInt::MAX.into_inner();
        assert_eq!(expand(0x3f, 6, Some(max - 1)), max);
        assert!(expand(0, 6, Some(max - 1)) <= max);
    }

    proptest! {
        /// Whatever the receiver has received, between the largest number
        /// acknowledged and the packet's own, the packet's number comes back.
        #[test]
        fn every_truncated_number_expands_back(
            number in 0u64..(1 << 62),
            acked_back in prop::option::of(0u64..(1 << 31)),
            received_back in any::<u64>(),
        ) {
            let acked = acked_back.and_then(|back| number.checked_sub(back.max(1)));
            let truncated =
                TruncatedPacketNumber::truncate(PacketNumber(number), acked.map(PacketNumber));
            // The receiver's largest lies between what the sender knows it
            // has and the number before this one (or nothing, if nothing
            // was acknowledged and it has seen nothing yet).
            let low = acked.unwrap_or(0);
            let largest = match (acked, number) {
                (None, 0) => None,
                (_, 0) => Some(0),
                _ => Some(low + received_back % (number - low).max(1)),
            };
            let largest = if acked.is_none() && received_back % 3 == 0 { None } else { largest };
            prop_assert_eq!(truncated.expand(largest.map(PacketNumber)), PacketNumber(number));
            // And the bytes carry it.
            let mut out = Vec::new();
            truncated.0.emit(&mut out);
            prop_assert_eq!(out.len(), truncated.len());
            let mut r = Reader::new(&out);
            prop_assert_eq!(Truncated::parse(&mut r, "number"), Ok(truncated.0));
        }
    }

    #[test]
    fn the_longest_header_is_max_header_len() {
        let mut h = header();
        h.packet_type = PacketType::Handshake;
        h.number = TruncatedPacketNumber::whole(PacketNumber((1 << 62) - 1));
        let mut out = Vec::new();
        h.emit(&mut out);
        assert_eq!(out.len(), MAX_HEADER_LEN);
        assert_eq!(Header::parse(&out), Ok((h, MAX_HEADER_LEN)));
    }

    /// A header whose first byte is `flags`, laid out for the packet type
    /// they say (type 3 as the handshake's packets are).
    fn with_flags(flags: u8) -> Vec<u8> {
        let packet_type =
            PacketType::from_bits((flags & TYPE_MASK) >> TYPE_SHIFT).unwrap_or(PacketType::Initial);
        let mut out = Vec::new();
        Header {
            packet_type,
            ..header()
        }
        .emit(&mut out);
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
    fn packet_type_3_is_early_data_with_a_version() {
        assert_eq!(
            Header::parse(&with_flags(0x60)).map(|(h, _)| h.packet_type),
            Ok(PacketType::Data)
        );
        let mut out = Vec::new();
        let early = Header {
            packet_type: PacketType::EarlyData,
            ..header()
        };
        early.emit(&mut out);
        assert_eq!(out[..2], [0x78, VERSION]);
        assert_eq!(Header::parse(&out), Ok((early, early.len())));
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
        let mut bytes = with_flags(0x58);
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
        for flags in [0x48, 0x58, 0x68] {
            let bytes = with_flags(flags);
            for len in 0..bytes.len() {
                assert!(
                    matches!(Header::parse(&bytes[..len]), Err(WireError::Truncated(_))),
                    "{flags:#x}: {len}"
                );
            }
        }
    }
}
