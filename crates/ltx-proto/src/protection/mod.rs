//! Packet protection: the layer that seals a packet after it is built and
//! opens it before it is parsed, and the handshake that gives it its keys.
//!
//! A connection made with a [`SecurityConfig`] runs a Noise `IK`
//! handshake (`IKpsk1` with a pre-shared key) in its Initial and Handshake
//! packets: both ends prove their static keys, the client already knowing
//! the server's, and a server may accept only the clients on an
//! [`AllowList`]. Every packet after it is sealed by [`AeadProtection`]:
//! the packet number is in the nonce, the header is authenticated, a
//! replay window refuses duplicates and old packets, and keys are updated
//! after a bounded number of packets. A packet that fails is dropped and
//! counted, never acted on.
//!
//! [`PlainProtection`] is a checksum only, for the simulator and for tests
//! that are not about security. The handshake packets themselves carry it
//! too: what they say that matters travels inside Noise messages, which
//! authenticate themselves, and nothing else in them is acted on.

use std::sync::Arc;

use thiserror::Error;

mod aead;
mod early;
mod keys;
pub(crate) mod noise;
mod replay;

pub use aead::{AeadAlgorithm, AeadProtection, PACKET_AEAD};
pub use early::{
    EarlyDataRecord, EarlyRefusal, FlightId, UnixMillis, WallClock, EARLY_DATA_AHEAD,
    EARLY_DATA_RECORD_CAPACITY, EARLY_DATA_WINDOW, FLIGHT_ID_LEN,
};
pub use keys::{AllowList, KeyParseError, PresharedKey, PublicKey, StaticKeypair, KEY_LEN};
pub use replay::REPLAY_WINDOW;

/// Packets sealed under one key before the sender moves to the next, by
/// default: 2^22, half the 2^23 packets RFC 9001 (§6.6) allows AES-GCM
/// under one key, and at most 2^22 × 64 KiB of data.
pub const KEY_UPDATE_PACKETS: u64 = 0x40_0000;

/// Who an endpoint is, whom it accepts, and how often its keys change.
#[derive(Debug, Clone)]
pub struct SecurityConfig {
    /// This end's static key pair.
    pub keypair: StaticKeypair,
    /// A secret both ends were given, mixed into the handshake; both must
    /// have the same one, or none.
    pub psk: Option<PresharedKey>,
    /// On a server, the only client keys it accepts; `None` accepts any
    /// client that knows the server's public key (and the pre-shared key,
    /// if there is one). A client ignores it: it names its server per
    /// connection.
    pub allowed_clients: Option<Arc<AllowList>>,
    /// Packets sealed under one key before the next (at least 1).
    pub key_update_packets: u64,
    /// The driver's wall clock: a client with early data on stamps its
    /// first message with it, for the server's replay check.
    pub clock: Option<WallClock>,
    /// On a server with early data on, the record of first flights that
    /// refuses a replayed one's early data. Clones share it: give every
    /// connection of an endpoint the same one.
    pub early_data_record: Option<EarlyDataRecord>,
}

impl SecurityConfig {
    /// This key pair, no pre-shared key, any client, the default key
    /// update interval.
    pub fn new(keypair: StaticKeypair) -> SecurityConfig {
        SecurityConfig {
            keypair,
            psk: None,
            allowed_clients: None,
            key_update_packets: KEY_UPDATE_PACKETS,
            clock: None,
            early_data_record: None,
        }
    }
}

/// Why a handshake message was refused. The peer is never told: a
/// refused client sees no answer at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum HandshakeError {
    /// The message did not open: the client does not have this server's
    /// key (or the right pre-shared key), or the message was forged or
    /// corrupted.
    #[error("the handshake message did not authenticate")]
    Unauthentic,
    /// The client proved a key the server's allow list does not hold.
    #[error("the client key {0} is not allowed")]
    NotAllowed(PublicKey),
    /// The message opened but its payload is not a handshake body.
    #[error("the handshake payload is malformed")]
    Malformed,
    /// The Noise library refused a step it should not refuse.
    #[error("the handshake failed internally")]
    Internal,
}

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
    /// The packet authenticated but its number was accepted before, or is
    /// older than the replay window.
    #[error("packet replayed or too old")]
    Replayed,
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
    /// Key updates so far, both directions together.
    fn key_updates(&self) -> u64 {
        0
    }
}

/// Bytes of the plain layer's checksum.
const CHECKSUM_LEN: usize = 4;

/// No secrecy and no authentication, only an integrity check: a CRC-32C of
/// the packet number and the whole packet, so that a corrupted packet is
/// dropped rather than decoded into wrong bytes, and so is one that arrives
/// so late that its truncated number expands to another (see
/// [`TruncatedPacketNumber`](crate::wire::TruncatedPacketNumber)). For the
/// simulator and for tests that are not about security.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainProtection;

impl PacketProtection for PlainProtection {
    fn tag_len(&self) -> usize {
        CHECKSUM_LEN
    }

    fn seal(&mut self, packet_number: u64, _header_len: usize, packet: &mut Vec<u8>) {
        let crc = plain_checksum(packet_number, packet);
        packet.extend_from_slice(&crc.to_be_bytes());
    }

    fn open(
        &mut self,
        packet_number: u64,
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
        if plain_checksum(packet_number, body).to_be_bytes() != tag {
            return Err(OpenError::Unauthentic);
        }
        Ok(end)
    }
}

/// The plain layer's checksum of a packet's bytes and its whole number.
fn plain_checksum(packet_number: u64, body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&packet_number.to_be_bytes()), body)
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
    fn plain_layer_drops_a_packet_opened_under_another_number() {
        let mut layer = PlainProtection;
        let mut packet = b"header and payload".to_vec();
        layer.seal(7, 6, &mut packet);
        assert_eq!(layer.open(7, 6, &mut packet.clone()), Ok(18));
        for number in [0, 6, 8, 7 + 64, 7 + (1 << 14)] {
            assert_eq!(
                layer.open(number, 6, &mut packet.clone()),
                Err(OpenError::Unauthentic),
                "number {number}"
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
