//! The two datagrams of a stateless retry, beside the packet format.
//!
//! Both use packet type `0b11`; the low bits of the first byte (reserved
//! in ordinary packets) say which one it is. An Initial with a cookie
//! (`0x71`) is no ordinary packet; a retry's first byte (`0x70`) is an
//! EarlyData packet's too, but early packets go only to servers and are
//! always longer than any retry, so neither is taken for the other.
//!
//! ```text
//! Retry, server to client:
//! byte 0      0x70
//! byte 1      version
//! bytes 2-5   the destination connection id of the client's Initial
//! byte 6      cookie length, 1 to MAX_COOKIE_LEN
//! then        the cookie
//!
//! An Initial that carries a cookie, client to server:
//! byte 0      0x71
//! byte 1      version
//! byte 2      cookie length, 1 to MAX_COOKIE_LEN
//! then        the cookie, then the Initial datagram unchanged
//! ```
//!
//! A retry is not authenticated: it echoes the connection id the client
//! chose at random, which only a host that saw the Initial knows, and a
//! client follows at most one. The cookie is opaque to the client.

use crate::wire::{ConnectionId, Header, PacketType, VERSION};

/// The first byte of a retry.
const RETRY_FLAGS: u8 = 0x70;
/// The first byte of an Initial that carries a cookie.
const COOKIE_FLAGS: u8 = 0x71;
/// The longest cookie either datagram carries.
pub const MAX_COOKIE_LEN: usize = 64;

/// A server's retry: the client's Initial connection id and the cookie to
/// send back, parsed from untrusted bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPacket<'a> {
    /// The destination connection id of the Initial it answers.
    pub initial_dcid: ConnectionId,
    /// The cookie, 1 to [`MAX_COOKIE_LEN`] bytes.
    pub cookie: &'a [u8],
}

impl<'a> RetryPacket<'a> {
    /// Reads a retry; `None` if `bytes` is not one.
    pub fn parse(bytes: &'a [u8]) -> Option<RetryPacket<'a>> {
        let (&[flags, version], rest) = bytes.split_first_chunk::<2>()?;
        if flags != RETRY_FLAGS || version != VERSION {
            return None;
        }
        let (dcid, rest) = rest.split_first_chunk::<4>()?;
        let (&len, cookie) = rest.split_first()?;
        let len = usize::from(len);
        if len == 0 || len > MAX_COOKIE_LEN || cookie.len() != len {
            return None;
        }
        Some(RetryPacket {
            initial_dcid: ConnectionId(u32::from_be_bytes(*dcid)),
            cookie,
        })
    }

    /// Appends the retry to `out`.
    ///
    /// # Panics
    /// If the cookie is empty or longer than [`MAX_COOKIE_LEN`].
    pub fn emit(&self, out: &mut Vec<u8>) {
        assert!((1..=MAX_COOKIE_LEN).contains(&self.cookie.len()));
        out.extend_from_slice(&[RETRY_FLAGS, VERSION]);
        out.extend_from_slice(&self.initial_dcid.0.to_be_bytes());
        out.push(self.cookie.len() as u8);
        out.extend_from_slice(self.cookie);
    }
}

/// A client's Initial datagram as the server's acceptor reads it: the
/// packet, and the cookie it carries if it answers a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitialDatagram<'a> {
    /// The destination connection id of the Initial packet.
    pub dcid: ConnectionId,
    /// The cookie sent back, if any.
    pub cookie: Option<&'a [u8]>,
    /// The Initial packet, without the cookie: what the connection reads.
    pub packet: &'a [u8],
}

impl<'a> InitialDatagram<'a> {
    /// Reads an Initial, with or without a cookie; `None` if `bytes` is
    /// neither (another packet type, or malformed).
    pub fn parse(bytes: &'a [u8]) -> Option<InitialDatagram<'a>> {
        let (cookie, packet) = match bytes {
            [COOKIE_FLAGS, version, len, rest @ ..] => {
                let len = usize::from(*len);
                if *version != VERSION || len == 0 || len > MAX_COOKIE_LEN || rest.len() < len {
                    return None;
                }
                let (cookie, packet) = rest.split_at(len);
                (Some(cookie), packet)
            }
            _ => (None, bytes),
        };
        let (header, _) = Header::parse(packet).ok()?;
        if header.packet_type != PacketType::Initial {
            return None;
        }
        Some(InitialDatagram {
            dcid: header.dcid,
            cookie,
            packet,
        })
    }

    /// Bytes the cookie adds in front of an Initial.
    pub fn cookie_overhead(cookie: &[u8]) -> usize {
        3 + cookie.len()
    }

    /// Puts `cookie` in front of the Initial `packet`.
    ///
    /// # Panics
    /// If the cookie is empty or longer than [`MAX_COOKIE_LEN`].
    pub fn wrap(cookie: &[u8], packet: &[u8]) -> Vec<u8> {
        assert!((1..=MAX_COOKIE_LEN).contains(&cookie.len()));
        let mut out = Vec::with_capacity(Self::cookie_overhead(cookie) + packet.len());
        out.extend_from_slice(&[COOKIE_FLAGS, VERSION, cookie.len() as u8]);
        out.extend_from_slice(cookie);
        out.extend_from_slice(packet);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{PacketNumber, TruncatedPacketNumber};

    fn initial(dcid: u32) -> Vec<u8> {
        let mut out = Vec::new();
        Header {
            packet_type: PacketType::Initial,
            key_phase: false,
            dcid: ConnectionId(dcid),
            number: TruncatedPacketNumber::truncate(PacketNumber(0), None),
        }
        .emit(&mut out);
        out.extend_from_slice(&[0; 20]);
        out
    }

    #[test]
    fn a_retry_round_trips_and_is_no_ordinary_packet() {
        let retry = RetryPacket {
            initial_dcid: ConnectionId(0x0102_0304),
            cookie: &[9; 24],
        };
        let mut out = Vec::new();
        retry.emit(&mut out);
        assert_eq!(out.len(), 7 + 24);
        assert_eq!(RetryPacket::parse(&out), Some(retry));
        assert_eq!(InitialDatagram::parse(&out), None);
        // Any truncation or extension is refused.
        for len in 0..out.len() {
            assert_eq!(RetryPacket::parse(&out[..len]), None, "{len}");
        }
        out.push(0);
        assert_eq!(RetryPacket::parse(&out), None);
    }

    #[test]
    fn an_initial_reads_the_same_with_and_without_a_cookie() {
        let packet = initial(77);
        let plain = InitialDatagram::parse(&packet).expect("an initial");
        assert_eq!((plain.dcid, plain.cookie), (ConnectionId(77), None));
        let wrapped = InitialDatagram::wrap(&[5; 24], &packet);
        assert_eq!(
            wrapped.len(),
            packet.len() + InitialDatagram::cookie_overhead(&[5; 24])
        );
        assert!(Header::parse(&wrapped).is_err());
        let read = InitialDatagram::parse(&wrapped).expect("an initial with a cookie");
        assert_eq!(read.cookie, Some(&[5u8; 24][..]));
        assert_eq!(read.packet, &packet[..]);
        for len in 0..wrapped.len() - packet.len() + 6 {
            assert_eq!(InitialDatagram::parse(&wrapped[..len]), None, "{len}");
        }
    }
}
