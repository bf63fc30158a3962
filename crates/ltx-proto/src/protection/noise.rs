//! The authenticated handshake: Noise `IK` (or `IKpsk1` with a pre-shared
//! key) over Curve25519, ChaCha20-Poly1305 and BLAKE2s, through `snow`.
//!
//! The client knows the server's static key, so its first message already
//! carries its own static key and a payload encrypted to the server
//! (`e, es, s, ss`); the server's one answer (`e, ee, se`) completes the
//! handshake. Each message's payload is a HANDSHAKE body (connection id and
//! transport parameters), so those are authenticated too. One round trip,
//! as without protection.
//!
//! The pre-shared key goes in at the end of the first message (`psk1`,
//! not WireGuard's `psk2`), so a server refuses a client without it on its
//! first message, as it refuses a client key it does not allow: no answer,
//! nothing kept.
//!
//! Nothing here holds a long-lived `snow` state: the client's first message
//! is a pure function of its keys, its payload and the entropy it was given,
//! so to read the answer the initiator is built again and writes the same
//! message. A forged answer that fails to open then leaves nothing damaged,
//! and the client keeps waiting for the real one.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};
use snow::{Builder, HandshakeState};

use super::early::early_data_secret;
use super::keys::{PresharedKey, PublicKey, StaticKeypair, KEY_LEN};
use super::HandshakeError;

const NOISE_IK: &str = "Noise_IK_25519_ChaChaPoly_BLAKE2s";
const NOISE_IK_PSK: &str = "Noise_IKpsk1_25519_ChaChaPoly_BLAKE2s";
/// Mixed into the handshake hash: a handshake of another protocol or
/// version cannot be taken for an ltx one.
const PROLOGUE: &[u8] = b"ltx v1 handshake";
/// Room for a handshake message: keys, tags and a HANDSHAKE body.
const MESSAGE_CAPACITY: usize = 512;

/// A CSPRNG seeded from entropy the driver supplied.
pub(crate) struct SeededRandom(ChaCha20Rng);

impl SeededRandom {
    pub(crate) fn new(entropy: [u8; KEY_LEN]) -> SeededRandom {
        SeededRandom(ChaCha20Rng::from_seed(entropy))
    }

    pub(crate) fn fill(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest);
    }
}

impl Random for SeededRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill_bytes(dest);
        Ok(())
    }
}

/// snow's own primitives, with randomness from the given entropy.
struct SeededResolver([u8; KEY_LEN]);

impl CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(SeededRandom::new(self.0)))
    }

    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        DefaultResolver.resolve_dh(choice)
    }

    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }

    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}

/// The secrets a completed handshake leaves, one per direction.
#[derive(Clone)]
pub(crate) struct TrafficSecrets {
    pub(crate) send: [u8; KEY_LEN],
    pub(crate) receive: [u8; KEY_LEN],
}

fn builder<'a>(
    keypair: &'a StaticKeypair,
    psk: Option<&'a PresharedKey>,
    entropy: [u8; KEY_LEN],
) -> Result<Builder<'a>, HandshakeError> {
    let pattern = if psk.is_some() {
        NOISE_IK_PSK
    } else {
        NOISE_IK
    };
    let params = pattern.parse().map_err(|_| HandshakeError::Internal)?;
    let mut builder = Builder::with_resolver(params, Box::new(SeededResolver(entropy)))
        .prologue(PROLOGUE)
        .and_then(|b| b.local_private_key(keypair.private_bytes()))
        .map_err(|_| HandshakeError::Internal)?;
    if let Some(psk) = psk {
        builder = builder
            .psk(1, &psk.0)
            .map_err(|_| HandshakeError::Internal)?;
    }
    Ok(builder)
}

fn split(state: &mut HandshakeState, initiator: bool) -> TrafficSecrets {
    let (to_responder, to_initiator) = state.dangerously_get_raw_split();
    if initiator {
        TrafficSecrets {
            send: to_responder,
            receive: to_initiator,
        }
    } else {
        TrafficSecrets {
            send: to_initiator,
            receive: to_responder,
        }
    }
}

/// The client's side of the handshake.
pub(crate) struct ClientHandshake {
    keypair: StaticKeypair,
    psk: Option<PresharedKey>,
    server: PublicKey,
    entropy: [u8; KEY_LEN],
    payload: Vec<u8>,
    /// The first message, sent in every copy of the client's Initial.
    first_message: Vec<u8>,
    /// The secret both ends share once the server reads the first message.
    early_secret: [u8; KEY_LEN],
}

impl ClientHandshake {
    /// Writes the first message, carrying `payload`, to `server`.
    pub(crate) fn start(
        keypair: StaticKeypair,
        psk: Option<PresharedKey>,
        server: PublicKey,
        entropy: [u8; KEY_LEN],
        payload: Vec<u8>,
    ) -> Result<ClientHandshake, HandshakeError> {
        let mut handshake = ClientHandshake {
            keypair,
            psk,
            server,
            entropy,
            payload,
            first_message: Vec::new(),
            early_secret: [0; KEY_LEN],
        };
        let (mut state, message) = handshake.initiator()?;
        handshake.first_message = message;
        handshake.early_secret = early_secret(&mut state);
        Ok(handshake)
    }

    fn initiator(&self) -> Result<(HandshakeState, Vec<u8>), HandshakeError> {
        let mut state = builder(&self.keypair, self.psk.as_ref(), self.entropy)?
            .remote_public_key(self.server.as_bytes())
            .and_then(|b| b.build_initiator())
            .map_err(|_| HandshakeError::Internal)?;
        let mut message = vec![0u8; MESSAGE_CAPACITY];
        let len = state
            .write_message(&self.payload, &mut message)
            .map_err(|_| HandshakeError::Internal)?;
        message.truncate(len);
        Ok((state, message))
    }

    /// The server's key the handshake was started towards.
    pub(crate) fn server(&self) -> PublicKey {
        self.server
    }

    /// The first message.
    pub(crate) fn first_message(&self) -> &[u8] {
        &self.first_message
    }

    /// The secret early data is sealed under.
    pub(crate) fn early_secret(&self) -> [u8; KEY_LEN] {
        self.early_secret
    }

    /// Reads the server's answer: its payload and the traffic secrets, or
    /// an error if it does not open (a forgery, or a server without the
    /// key the client expects), which leaves the handshake as it was.
    pub(crate) fn read_answer(
        &self,
        message: &[u8],
    ) -> Result<(Vec<u8>, TrafficSecrets), HandshakeError> {
        let (mut state, _) = self.initiator()?;
        let mut payload = vec![0u8; message.len()];
        let len = state
            .read_message(message, &mut payload)
            .map_err(|_| HandshakeError::Unauthentic)?;
        payload.truncate(len);
        if !state.is_handshake_finished() {
            return Err(HandshakeError::Internal);
        }
        Ok((payload, split(&mut state, true)))
    }
}

/// The secret early data is sealed under, from a state that has written or
/// read the first message: the chaining key after `es` and `ss` (and the
/// pre-shared key), bound to the client's fresh ephemeral key and both
/// static keys. Splitting does not change the state.
fn early_secret(state: &mut HandshakeState) -> [u8; KEY_LEN] {
    let (to_responder, _) = state.dangerously_get_raw_split();
    early_data_secret(&to_responder)
}

/// What the server learns from a client's first message.
pub(crate) struct ClientHello {
    state: HandshakeState,
    /// The secret the client's early data is sealed under.
    pub(crate) early_secret: [u8; KEY_LEN],
    /// The client's static key, authenticated.
    pub(crate) client: PublicKey,
    /// The client's payload.
    pub(crate) payload: Vec<u8>,
}

/// Reads a client's first message with the server's keys.
pub(crate) fn read_hello(
    keypair: &StaticKeypair,
    psk: Option<&PresharedKey>,
    entropy: [u8; KEY_LEN],
    message: &[u8],
) -> Result<ClientHello, HandshakeError> {
    let mut state = builder(keypair, psk, entropy)?
        .build_responder()
        .map_err(|_| HandshakeError::Internal)?;
    let mut payload = vec![0u8; message.len()];
    let len = state
        .read_message(message, &mut payload)
        .map_err(|_| HandshakeError::Unauthentic)?;
    payload.truncate(len);
    let client = state
        .get_remote_static()
        .and_then(|k| <[u8; KEY_LEN]>::try_from(k).ok())
        .map(PublicKey::from_bytes)
        .ok_or(HandshakeError::Unauthentic)?;
    Ok(ClientHello {
        early_secret: early_secret(&mut state),
        state,
        client,
        payload,
    })
}

impl ClientHello {
    /// Writes the server's answer carrying `payload`; returns it and the
    /// traffic secrets.
    pub(crate) fn answer(
        mut self,
        payload: &[u8],
    ) -> Result<(Vec<u8>, TrafficSecrets), HandshakeError> {
        let mut message = vec![0u8; MESSAGE_CAPACITY];
        let len = self
            .state
            .write_message(payload, &mut message)
            .map_err(|_| HandshakeError::Internal)?;
        message.truncate(len);
        if !self.state.is_handshake_finished() {
            return Err(HandshakeError::Internal);
        }
        Ok((message, split(&mut self.state, false)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(n: u8) -> StaticKeypair {
        StaticKeypair::from_entropy([n; KEY_LEN])
    }

    #[test]
    fn both_ends_derive_crossed_secrets_and_see_each_others_payload() {
        let (client, server) = (pair(1), pair(2));
        let hello =
            ClientHandshake::start(client.clone(), None, server.public(), [9; 32], b"c".into())
                .unwrap();
        let read = read_hello(&server, None, [8; 32], hello.first_message()).unwrap();
        assert_eq!(read.client, client.public());
        assert_eq!(read.payload, b"c");
        let (answer, server_secrets) = read.answer(b"s").unwrap();
        let (payload, client_secrets) = hello.read_answer(&answer).unwrap();
        assert_eq!(payload, b"s");
        assert_eq!(client_secrets.send, server_secrets.receive);
        assert_eq!(client_secrets.receive, server_secrets.send);
        assert_ne!(client_secrets.send, client_secrets.receive);
    }

    #[test]
    fn both_ends_share_an_early_secret_apart_from_the_traffic_secrets() {
        let (client, server) = (pair(1), pair(2));
        let hello =
            ClientHandshake::start(client.clone(), None, server.public(), [9; 32], vec![]).unwrap();
        let read = read_hello(&server, None, [8; 32], hello.first_message()).unwrap();
        assert_eq!(read.early_secret, hello.early_secret());
        let early = read.early_secret;
        let (answer, server_secrets) = read.answer(&[]).unwrap();
        let (_, client_secrets) = hello.read_answer(&answer).unwrap();
        assert_eq!(client_secrets.send, server_secrets.receive);
        assert_ne!(early, client_secrets.send);
        assert_ne!(early, client_secrets.receive);
        let other =
            ClientHandshake::start(client, None, server.public(), [10; 32], vec![]).unwrap();
        assert_ne!(other.early_secret(), early);
    }

    #[test]
    fn the_first_message_is_the_same_in_every_copy_and_fresh_per_entropy() {
        let (client, server) = (pair(1), pair(2));
        let start = |entropy| {
            ClientHandshake::start(client.clone(), None, server.public(), entropy, vec![])
                .unwrap()
                .first_message()
                .to_vec()
        };
        assert_eq!(start([5; 32]), start([5; 32]));
        assert_ne!(start([5; 32]), start([6; 32]));
    }

    #[test]
    fn a_client_with_the_wrong_server_key_or_psk_is_refused() {
        let (client, server, other) = (pair(1), pair(2), pair(3));
        let hello =
            ClientHandshake::start(client.clone(), None, other.public(), [9; 32], vec![]).unwrap();
        assert!(matches!(
            read_hello(&server, None, [8; 32], hello.first_message()),
            Err(HandshakeError::Unauthentic)
        ));
        let psk = PresharedKey::from_bytes([4; 32]);
        let wrong = PresharedKey::from_bytes([5; 32]);
        let hello =
            ClientHandshake::start(client, Some(psk.clone()), server.public(), [9; 32], vec![])
                .unwrap();
        assert!(matches!(
            read_hello(&server, Some(&wrong), [8; 32], hello.first_message()),
            Err(HandshakeError::Unauthentic)
        ));
        let read = read_hello(&server, Some(&psk), [8; 32], hello.first_message()).unwrap();
        let (answer, _) = read.answer(&[]).unwrap();
        assert!(hello.read_answer(&answer).is_ok());
    }

    #[test]
    fn a_forged_answer_is_refused_and_the_real_one_still_opens() {
        let (client, server) = (pair(1), pair(2));
        let hello = ClientHandshake::start(client, None, server.public(), [9; 32], vec![]).unwrap();
        let read = read_hello(&server, None, [8; 32], hello.first_message()).unwrap();
        let (answer, _) = read.answer(b"ok").unwrap();
        for bit in [0, 100, answer.len() * 8 - 1] {
            let mut forged = answer.clone();
            forged[bit / 8] ^= 1 << (bit % 8);
            assert!(hello.read_answer(&forged).is_err(), "bit {bit}");
        }
        assert!(hello.read_answer(&answer[..10]).is_err());
        assert_eq!(hello.read_answer(&answer).unwrap().0, b"ok");
    }
}
