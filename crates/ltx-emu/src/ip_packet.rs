//! The packets the emulator carries: whole IP packets as a TUN device
//! hands them out, with the ECN codepoint read from and written to their
//! header.

use ltx_link::{Ecn, LinkPacket};

/// The shortest IPv4 header (no options), bytes.
const IPV4_MIN_HEADER: usize = 20;
/// The fixed IPv6 header, bytes.
const IPV6_HEADER: usize = 40;
/// Offset of the IPv4 header checksum.
const IPV4_CHECKSUM: usize = 10;

/// Where a packet's IP header ends and what it is, as far as the link
/// needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Header {
    /// An IPv4 header of this many bytes.
    V4(usize),
    /// An IPv6 header (extension headers are payload here).
    V6,
    /// Too short, or neither version: carried as opaque bytes.
    Unknown,
}

/// One IP packet, IPv4 or IPv6, as read from a TUN device opened without
/// packet information. Any bytes are accepted: a packet whose header
/// cannot be read is carried unchanged, as not ECN-capable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpPacket {
    bytes: Vec<u8>,
}

impl IpPacket {
    /// Wraps the bytes of one packet.
    pub fn new(bytes: Vec<u8>) -> IpPacket {
        IpPacket { bytes }
    }

    /// The packet's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn header(&self) -> Header {
        match self.bytes.first().map(|b| b >> 4) {
            Some(4) => {
                let len = usize::from(self.bytes[0] & 0x0f) * 4;
                if len >= IPV4_MIN_HEADER && len <= self.bytes.len() {
                    Header::V4(len)
                } else {
                    Header::Unknown
                }
            }
            Some(6) if self.bytes.len() >= IPV6_HEADER => Header::V6,
            _ => Header::Unknown,
        }
    }

    fn header_len(&self) -> usize {
        match self.header() {
            Header::V4(len) => len,
            Header::V6 => IPV6_HEADER,
            Header::Unknown => 0,
        }
    }

    /// The IPv4 header checksum over the header's first `len` bytes, the
    /// checksum field counted as zero.
    fn ipv4_checksum(&self, len: usize) -> u16 {
        let mut sum: u32 = 0;
        for (i, pair) in self.bytes[..len].chunks_exact(2).enumerate() {
            if i * 2 != IPV4_CHECKSUM {
                sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
            }
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }
}

fn ecn_of(bits: u8) -> Ecn {
    match bits & 0b11 {
        0b00 => Ecn::NotEct,
        0b01 => Ecn::Ect1,
        0b10 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

impl LinkPacket for IpPacket {
    fn wire_len(&self) -> usize {
        self.bytes.len()
    }

    fn ecn(&self) -> Ecn {
        match self.header() {
            // The ECN field is the low two bits of the traffic class: of
            // the TOS byte in IPv4, of the nibbles split over bytes 0 and 1
            // in IPv6.
            Header::V4(_) => ecn_of(self.bytes[1]),
            Header::V6 => ecn_of(self.bytes[1] >> 4),
            Header::Unknown => Ecn::NotEct,
        }
    }

    /// Sets CE on an ECN-capable packet, fixing the IPv4 header checksum;
    /// a packet that is not ECN-capable (RFC 3168 forbids marking it) or
    /// not IP is left alone.
    fn mark_ce(&mut self) {
        if !self.ecn().is_capable() {
            return;
        }
        match self.header() {
            Header::V4(len) => {
                self.bytes[1] |= 0b11;
                let checksum = self.ipv4_checksum(len);
                self.bytes[IPV4_CHECKSUM..IPV4_CHECKSUM + 2]
                    .copy_from_slice(&checksum.to_be_bytes());
            }
            Header::V6 => self.bytes[1] |= 0b11 << 4,
            Header::Unknown => {}
        }
    }

    /// Flips a bit after the IP header, so that the packet still reaches
    /// the far end's transport, which finds the damage by its checksum, as
    /// it would on a real path.
    fn flip_bit(&mut self, bit: usize) {
        let offset = self.header_len() + bit / 8;
        if let Some(byte) = self.bytes.get_mut(offset) {
            *byte ^= 1 << (bit % 8);
        }
    }

    fn corruptible_bits(&self) -> usize {
        (self.bytes.len() - self.header_len()) * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 28-byte IPv4 UDP packet from 10.77.0.1 to 10.77.0.2 with the given
    /// TOS byte and a correct header checksum.
    fn ipv4(tos: u8) -> IpPacket {
        let mut bytes = vec![
            0x45, tos, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 77, 0, 1,
            10, 77, 0, 2, 0x30, 0x39, 0x30, 0x39, 0x00, 0x08, 0x00, 0x00,
        ];
        let checksum = IpPacket::new(bytes.clone()).ipv4_checksum(20);
        bytes[10..12].copy_from_slice(&checksum.to_be_bytes());
        IpPacket::new(bytes)
    }

    /// Whether the IPv4 header sums to 0xffff, as a receiver checks it.
    fn header_checksum_holds(packet: &IpPacket) -> bool {
        let mut sum: u32 = packet.as_bytes()[..20]
            .chunks_exact(2)
            .map(|p| u32::from(u16::from_be_bytes([p[0], p[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    #[test]
    fn the_ipv4_ecn_field_is_read_from_the_tos_byte() {
        assert_eq!(ipv4(0x00).ecn(), Ecn::NotEct);
        assert_eq!(ipv4(0x01).ecn(), Ecn::Ect1);
        assert_eq!(ipv4(0xb8 | 0x02).ecn(), Ecn::Ect0);
        assert_eq!(ipv4(0x03).ecn(), Ecn::Ce);
    }

    #[test]
    fn marking_an_ect_ipv4_packet_sets_ce_and_keeps_the_checksum_valid() {
        for tos in [0x01, 0x02, 0xb8 | 0x02] {
            let mut packet = ipv4(tos);
            assert!(header_checksum_holds(&packet));
            packet.mark_ce();
            assert_eq!(packet.ecn(), Ecn::Ce);
            assert_eq!(packet.as_bytes()[1] & !0b11, tos & !0b11, "DSCP kept");
            assert!(header_checksum_holds(&packet), "tos {tos:#x}");
        }
    }

    #[test]
    fn a_not_ect_packet_is_never_marked() {
        let mut packet = ipv4(0x00);
        let before = packet.clone();
        packet.mark_ce();
        assert_eq!(packet, before);
    }

    #[test]
    fn the_ipv6_ecn_field_is_read_and_marked_in_the_traffic_class() {
        let mut bytes = vec![0u8; 48];
        // Version 6, traffic class 0xb9 (DSCP 46, ECT(1)).
        bytes[0] = 0x6b;
        bytes[1] = 0x90;
        let mut packet = IpPacket::new(bytes);
        assert_eq!(packet.ecn(), Ecn::Ect1);
        packet.mark_ce();
        assert_eq!(packet.ecn(), Ecn::Ce);
        assert_eq!(packet.as_bytes()[..2], [0x6b, 0xb0]);
    }

    #[test]
    fn corruption_spares_the_ip_header() {
        let mut packet = ipv4(0x02);
        assert_eq!(packet.corruptible_bits(), 8 * 8);
        packet.flip_bit(0);
        assert_eq!(packet.as_bytes()[20], 0x30 ^ 1);
        assert!(header_checksum_holds(&packet));
    }

    #[test]
    fn truncated_and_foreign_bytes_are_carried_as_they_are() {
        for bytes in [
            vec![],
            vec![0x45],
            vec![0x4f, 0x02, 0, 0],
            vec![0x60; 39],
            vec![0x12; 100],
        ] {
            let mut packet = IpPacket::new(bytes.clone());
            assert_eq!(packet.ecn(), Ecn::NotEct);
            packet.mark_ce();
            for bit in 0..packet.corruptible_bits() + 16 {
                packet.flip_bit(bit);
                packet.flip_bit(bit);
            }
            assert_eq!(packet.as_bytes(), &bytes[..]);
        }
    }

    proptest::proptest! {
        /// Whatever the bytes, reading and marking them does not panic,
        /// corruption stays in bounds, and a packet marked CE that was an
        /// IPv4 packet with a valid checksum still has one.
        #[test]
        fn any_bytes_are_handled(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120),
            bit in 0usize..2000,
        ) {
            let mut packet = IpPacket::new(bytes.clone());
            let was_valid_ipv4 = packet.header() != Header::Unknown
                && bytes[0] >> 4 == 4
                && header_checksum_holds_over(&bytes, usize::from(bytes[0] & 0x0f) * 4);
            let ecn = packet.ecn();
            packet.mark_ce();
            proptest::prop_assert_eq!(packet.wire_len(), bytes.len());
            if ecn.is_capable() {
                proptest::prop_assert_eq!(packet.ecn(), Ecn::Ce);
            } else {
                proptest::prop_assert_eq!(packet.as_bytes(), &bytes[..]);
            }
            if was_valid_ipv4 {
                let len = usize::from(bytes[0] & 0x0f) * 4;
                proptest::prop_assert!(header_checksum_holds_over(packet.as_bytes(), len));
            }
            // The same bytes made a valid IPv4 header: marking keeps it valid.
            if bytes.len() >= IPV4_MIN_HEADER {
                let mut v4 = bytes.clone();
                v4[0] = 0x45;
                let checksum = IpPacket::new(v4.clone()).ipv4_checksum(IPV4_MIN_HEADER);
                v4[IPV4_CHECKSUM..IPV4_CHECKSUM + 2].copy_from_slice(&checksum.to_be_bytes());
                let mut v4 = IpPacket::new(v4);
                v4.mark_ce();
                proptest::prop_assert!(header_checksum_holds_over(v4.as_bytes(), IPV4_MIN_HEADER));
            }
            let before = packet.clone();
            packet.flip_bit(bit);
            let changed = packet != before;
            proptest::prop_assert_eq!(changed, bit < packet.corruptible_bits());
        }
    }

    fn header_checksum_holds_over(bytes: &[u8], len: usize) -> bool {
        let mut sum: u32 = bytes[..len]
            .chunks_exact(2)
            .map(|p| u32::from(u16::from_be_bytes([p[0], p[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }
}
