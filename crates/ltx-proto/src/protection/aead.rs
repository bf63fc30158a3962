//! Authenticated encryption of every packet after the handshake, with key
//! updates and a replay window.
//!
//! Each direction has its own secret from the handshake. From a secret
//! come, by HKDF-SHA256, the AEAD key, a 12-byte IV and the next secret.
//! A packet's nonce is the IV with its packet number XORed into the last
//! eight bytes, so no nonce repeats under a key (packet numbers are never
//! reused); the header is the associated data, so it is authenticated,
//! key phase bit included.
//!
//! **Key updates.** The sender moves to the next secret after
//! [`SecurityConfig::key_update_packets`](super::SecurityConfig) packets
//! and flips the header's key phase bit; the receiver follows on the
//! first packet that opens with the next key. Each direction updates on
//! its own, so nothing needs to be agreed. The receiver keeps the previous
//! key for packets sent before the update that arrive after it (their
//! number is below the first one of the new phase).

use aws_lc_rs::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey, NONCE_LEN};
use aws_lc_rs::hkdf;

use super::replay::ReplayWindow;
use super::{OpenError, PacketProtection, TAG_LEN};
use crate::wire::KEY_PHASE_BIT;

/// The AEADs a packet can be sealed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AeadAlgorithm {
    /// ChaCha20-Poly1305 (RFC 8439).
    ChaCha20Poly1305,
    /// AES-256 in Galois/Counter Mode.
    Aes256Gcm,
}

/// The AEAD ltx seals packets with: AES-256-GCM, the faster of the two on
/// CPUs with AES instructions (`cargo run --release -p ltx-proto --example
/// aead_throughput` compares them). Both ends must use the same one, so it
/// is one constant, not a setting.
pub const PACKET_AEAD: AeadAlgorithm = AeadAlgorithm::Aes256Gcm;

impl AeadAlgorithm {
    fn aead(self) -> &'static aead::Algorithm {
        match self {
            AeadAlgorithm::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
            AeadAlgorithm::Aes256Gcm => &aead::AES_256_GCM,
        }
    }
}

/// An HKDF output length.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn expand(secret: &[u8; 32], label: &[u8], out: &mut [u8]) {
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, secret);
    prk.expand(&[label], Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("HKDF-SHA256 expands to 32 bytes or fewer");
}

/// A secret drawn from `secret` under `label` (HKDF-SHA256), for a key
/// that must differ from every other key drawn from the same secret.
pub(crate) fn derive_secret(secret: &[u8; 32], label: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    expand(secret, label, &mut out);
    out
}

/// The key and IV of one phase of one direction.
struct PhaseKey {
    key: LessSafeKey,
    iv: [u8; NONCE_LEN],
    secret: [u8; 32],
}

impl PhaseKey {
    fn new(algorithm: AeadAlgorithm, secret: [u8; 32]) -> PhaseKey {
        let mut key = [0u8; 32];
        expand(&secret, b"ltx key", &mut key[..algorithm.aead().key_len()]);
        let mut iv = [0u8; NONCE_LEN];
        expand(&secret, b"ltx iv", &mut iv);
        let unbound = UnboundKey::new(algorithm.aead(), &key[..algorithm.aead().key_len()])
            .expect("the key has the algorithm's length");
        PhaseKey {
            key: LessSafeKey::new(unbound),
            iv,
            secret,
        }
    }

    fn next(&self, algorithm: AeadAlgorithm) -> PhaseKey {
        let mut secret = [0u8; 32];
        expand(&self.secret, b"ltx key update", &mut secret);
        PhaseKey::new(algorithm, secret)
    }

    fn nonce(&self, packet_number: u64) -> Nonce {
        let mut nonce = self.iv;
        for (n, p) in nonce[NONCE_LEN - 8..]
            .iter_mut()
            .zip(packet_number.to_be_bytes())
        {
            *n ^= p;
        }
        Nonce::assume_unique_for_key(nonce)
    }
}

/// Seals and opens packets with an AEAD, updating keys as it goes and
/// refusing replays.
pub struct AeadProtection {
    algorithm: AeadAlgorithm,
    update_after: u64,
    send: PhaseKey,
    send_phase: bool,
    sealed_in_phase: u64,
    receive: PhaseKey,
    receive_phase: bool,
    /// The smallest packet number opened with the current receive key.
    receive_phase_start: u64,
    receive_next: PhaseKey,
    receive_previous: Option<PhaseKey>,
    window: ReplayWindow,
    key_updates: u64,
}

impl std::fmt::Debug for AeadProtection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AeadProtection")
            .field("algorithm", &self.algorithm)
            .field("send_phase", &self.send_phase)
            .field("receive_phase", &self.receive_phase)
            .field("key_updates", &self.key_updates)
            .finish_non_exhaustive()
    }
}

impl AeadProtection {
    /// Protection from the two secrets of a handshake: `send` for this
    /// end's packets, `receive` for the peer's. The sender moves to a new
    /// key after `update_after` packets (at least 1).
    pub fn new(
        algorithm: AeadAlgorithm,
        send: [u8; 32],
        receive: [u8; 32],
        update_after: u64,
    ) -> AeadProtection {
        let receive = PhaseKey::new(algorithm, receive);
        AeadProtection {
            algorithm,
            update_after: update_after.max(1),
            send: PhaseKey::new(algorithm, send),
            send_phase: false,
            sealed_in_phase: 0,
            receive_next: receive.next(algorithm),
            receive,
            receive_phase: false,
            receive_phase_start: 0,
            receive_previous: None,
            window: ReplayWindow::default(),
            key_updates: 0,
        }
    }
}

impl PacketProtection for AeadProtection {
    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn seal(&mut self, packet_number: u64, header_len: usize, packet: &mut Vec<u8>) {
        if self.sealed_in_phase >= self.update_after {
            self.send = self.send.next(self.algorithm);
            self.send_phase = !self.send_phase;
            self.sealed_in_phase = 0;
            self.key_updates += 1;
        }
        self.sealed_in_phase += 1;
        if self.send_phase {
            packet[0] |= KEY_PHASE_BIT;
        } else {
            packet[0] &= !KEY_PHASE_BIT;
        }
        let (header, payload) = packet.split_at_mut(header_len);
        let tag = self
            .send
            .key
            .seal_in_place_separate_tag(
                self.send.nonce(packet_number),
                Aad::from(&*header),
                payload,
            )
            .expect("a packet is far below the AEAD's length limit");
        packet.extend_from_slice(tag.as_ref());
    }

    fn open(
        &mut self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, OpenError> {
        let Some(end) = packet.len().checked_sub(TAG_LEN) else {
            return Err(OpenError::TooShort);
        };
        if end < header_len || header_len == 0 {
            return Err(OpenError::TooShort);
        }
        let phase = packet[0] & KEY_PHASE_BIT != 0;
        enum Which {
            Current,
            Next,
            Previous,
        }
        let which = if phase == self.receive_phase {
            Which::Current
        } else if packet_number >= self.receive_phase_start {
            Which::Next
        } else {
            Which::Previous
        };
        let key = match which {
            Which::Current => &self.receive,
            Which::Next => &self.receive_next,
            Which::Previous => self
                .receive_previous
                .as_ref()
                .ok_or(OpenError::Unauthentic)?,
        };
        let (header, payload) = packet.split_at_mut(header_len);
        key.key
            .open_in_place(key.nonce(packet_number), Aad::from(&*header), payload)
            .map_err(|_| OpenError::Unauthentic)?;
        if !self.window.accept(packet_number) {
            return Err(OpenError::Replayed);
        }
        if let Which::Next = which {
            let next = self.receive_next.next(self.algorithm);
            let current = std::mem::replace(&mut self.receive_next, next);
            self.receive_previous = Some(std::mem::replace(&mut self.receive, current));
            self.receive_phase = phase;
            self.receive_phase_start = packet_number;
            self.key_updates += 1;
        }
        Ok(end)
    }

    fn key_updates(&self) -> u64 {
        self.key_updates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ConnectionId, Header, PacketNumber, PacketType, TruncatedPacketNumber};

    fn pair(update_after: u64) -> (AeadProtection, AeadProtection) {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        (
            AeadProtection::new(PACKET_AEAD, a, b, update_after),
            AeadProtection::new(PACKET_AEAD, b, a, update_after),
        )
    }

    fn packet(sender: &mut AeadProtection, number: u64, body: &[u8]) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        Header {
            packet_type: PacketType::Data,
            key_phase: false,
            dcid: ConnectionId(7),
            number: TruncatedPacketNumber::whole(PacketNumber(number)),
        }
        .emit(&mut out);
        let header_len = out.len();
        out.extend_from_slice(body);
        sender.seal(number, header_len, &mut out);
        (out, header_len)
    }

    #[test]
    fn a_sealed_packet_opens_once_and_hides_its_payload() {
        for algorithm in [AeadAlgorithm::ChaCha20Poly1305, AeadAlgorithm::Aes256Gcm] {
            let mut a = AeadProtection::new(algorithm, [1; 32], [2; 32], 100);
            let mut b = AeadProtection::new(algorithm, [2; 32], [1; 32], 100);
            let (sealed, header_len) = packet(&mut a, 3, b"secret payload");
            assert!(!sealed.windows(6).any(|w| w == b"secret"));
            let mut copy = sealed.clone();
            let end = b.open(3, header_len, &mut copy).unwrap();
            assert_eq!(&copy[header_len..end], b"secret payload");
            let mut again = sealed.clone();
            assert_eq!(b.open(3, header_len, &mut again), Err(OpenError::Replayed));
        }
    }

    #[test]
    fn every_flipped_bit_fails_authentication() {
        let (mut a, mut b) = pair(100);
        let (sealed, header_len) = packet(&mut a, 1, b"payload");
        for bit in 0..sealed.len() * 8 {
            let mut bad = sealed.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                b.open(1, header_len, &mut bad),
                Err(OpenError::Unauthentic),
                "bit {bit}"
            );
        }
        // The forgeries moved nothing: the real packet still opens.
        assert!(b.open(1, header_len, &mut sealed.clone()).is_ok());
    }

    #[test]
    fn a_packet_under_another_number_fails_authentication() {
        let (mut a, mut b) = pair(100);
        let (mut sealed, header_len) = packet(&mut a, 5, b"payload");
        assert_eq!(
            b.open(6, header_len, &mut sealed),
            Err(OpenError::Unauthentic)
        );
    }

    #[test]
    fn keys_update_after_the_bound_and_late_packets_of_the_old_phase_still_open() {
        let (mut a, mut b) = pair(4);
        let packets: Vec<_> = (0..13).map(|n| packet(&mut a, n, b"x")).collect();
        // Phases of 4 packets: the bit flips at 4, 8 and 12.
        let phases: Vec<bool> = packets
            .iter()
            .map(|(p, _)| p[0] & KEY_PHASE_BIT != 0)
            .collect();
        assert_eq!(
            phases,
            [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1].map(|p| p == 1)
        );
        assert_eq!(a.key_updates(), 3);
        // 3 arrives after 4 and 5 (reordered across the update).
        for n in [0, 1, 2, 4, 5, 3, 6, 7, 9, 8, 10, 11, 12] {
            let (p, h) = &packets[n];
            assert!(b.open(n as u64, *h, &mut p.clone()).is_ok(), "packet {n}");
        }
        assert_eq!(b.key_updates(), 3);
    }

    #[test]
    fn a_forged_key_phase_does_not_move_the_receiver() {
        let (mut a, mut b) = pair(1000);
        let (mut sealed, header_len) = packet(&mut a, 1, b"x");
        sealed[0] ^= KEY_PHASE_BIT;
        assert_eq!(
            b.open(1, header_len, &mut sealed),
            Err(OpenError::Unauthentic)
        );
        assert_eq!(b.key_updates(), 0);
        let (mut next, header_len) = packet(&mut a, 2, b"y");
        assert!(b.open(2, header_len, &mut next).is_ok());
    }
}
