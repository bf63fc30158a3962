//! The authenticated handshake of a connection made with a
//! [`SecurityConfig`]: Noise messages in the Initial and Handshake packets,
//! then [`AeadProtection`] on every packet.
//!
//! The handshake packets carry one NOISE frame (and the client's padding)
//! under the plain checksum; nothing else in them is read, since nothing
//! else in them is authenticated. The HANDSHAKE body (connection id and
//! transport parameters) travels inside the Noise messages.
//!
//! A server that cannot open a client's first message, or whose allow list
//! does not hold the client's key, closes at once without a word (the
//! client sees no answer at all, as from a server that is not there) with
//! [`CloseReason::HandshakeRefused`], and its driver drops it. A server
//! that accepts answers, but counts the connection as established only
//! when the first packet sealed with the new keys arrives: a replayed
//! first message yields an answer nobody can use, never a connection.

use std::time::Instant;

use super::{Connection, State, Timer};
use crate::event::{CloseReason, Event};
use crate::protection::noise::{self, ClientHandshake, TrafficSecrets};
use crate::protection::{
    AeadProtection, EarlyDataRecord, HandshakeError, OpenError, PacketProtection, PlainProtection,
    PublicKey, SecurityConfig, KEY_LEN, PACKET_AEAD, TAG_LEN,
};
use crate::wire::{
    EarlyDataField, Frame, Frames, HandshakeFrame, HandshakePayload, Header, PacketNumber,
    PacketType, Side,
};

/// What a secured connection keeps of its handshake.
pub(super) struct SecureHandshake {
    config: SecurityConfig,
    entropy: [u8; KEY_LEN],
    /// The client's handshake, until the server's answer opens.
    client: Option<ClientHandshake>,
    /// On a server: the client's first message (to know its copies) and
    /// the answer, sent again for each copy until the client confirms.
    first_message: Vec<u8>,
    answer: Vec<u8>,
    /// The peer's static key, once proved.
    peer: Option<PublicKey>,
    /// Keys are in place for data packets.
    keyed: bool,
    /// A server has answered and waits for the client's first sealed packet.
    awaiting_confirmation: bool,
}

/// The protection of data packets before the handshake gave keys: nothing
/// opens, and what it seals (nothing should be) no peer can open.
#[derive(Debug)]
pub(super) struct KeysPending;

impl PacketProtection for KeysPending {
    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn seal(&mut self, _packet_number: u64, _header_len: usize, packet: &mut Vec<u8>) {
        packet.extend_from_slice(&[0; TAG_LEN]);
    }

    fn open(&mut self, _: u64, _: usize, _: &mut [u8]) -> Result<usize, OpenError> {
        Err(OpenError::Unauthentic)
    }
}

impl SecureHandshake {
    pub(super) fn new(config: SecurityConfig, entropy: [u8; KEY_LEN]) -> SecureHandshake {
        SecureHandshake {
            config,
            entropy,
            client: None,
            first_message: Vec::new(),
            answer: Vec::new(),
            peer: None,
            keyed: false,
            awaiting_confirmation: false,
        }
    }
}

impl Connection {
    /// Starts a client's handshake towards `server` at `now`; with early
    /// data on, its first message offers it, stamped with the wall clock.
    pub(super) fn start_secure_client(
        &mut self,
        now: Instant,
        server: PublicKey,
    ) -> Result<(), HandshakeError> {
        let mut payload = Vec::new();
        self.handshake_body().emit_body(&mut payload);
        let Some(secure) = self.secure.as_mut() else {
            return Err(HandshakeError::Internal);
        };
        let clock = secure.config.clock.filter(|_| self.config.early_data);
        if let Some(clock) = clock {
            let stamp = clock.at(now).0;
            EarlyDataField::Offer { stamp }.emit(&mut payload);
        }
        let client = ClientHandshake::start(
            secure.config.keypair.clone(),
            secure.config.psk.clone(),
            server,
            secure.entropy,
            payload,
        )?;
        let early_secret = client.early_secret();
        secure.client = Some(client);
        if clock.is_some() {
            self.start_early_client(early_secret);
        }
        Ok(())
    }

    /// The server's record of first flights, if it has one.
    pub(super) fn early_data_record(&self) -> Option<&EarlyDataRecord> {
        self.secure.as_ref()?.config.early_data_record.as_ref()
    }

    fn handshake_body(&self) -> HandshakeFrame {
        HandshakeFrame {
            source_cid: self.local_cid,
            params: self.transport_params(),
        }
    }

    /// The Noise message this end's handshake packets carry, if secured.
    pub(super) fn noise_message(&self) -> Option<Vec<u8>> {
        let secure = self.secure.as_ref()?;
        Some(match self.side {
            Side::Client => secure
                .client
                .as_ref()
                .map(|c| c.first_message().to_vec())
                .unwrap_or_default(),
            Side::Server => secure.answer.clone(),
        })
    }

    /// Whether handshake packets are sealed apart from data packets (with
    /// the plain checksum).
    pub(super) fn handshake_sealed_apart(&self) -> bool {
        self.secure.is_some()
    }

    /// Whether data packets can be sealed for the peer to open.
    pub(super) fn can_seal_data(&self) -> bool {
        self.secure.as_ref().is_none_or(|s| s.keyed)
    }

    /// The peer's static public key, proved in the handshake; `None` before
    /// it completes, or on a connection without security.
    pub fn peer_key(&self) -> Option<PublicKey> {
        self.secure.as_ref().and_then(|s| s.peer)
    }

    /// A server's first data packet from the client opened: the client has
    /// the keys, so the handshake is complete.
    pub(super) fn confirm_handshake(&mut self) {
        let Some(secure) = self.secure.as_mut() else {
            return;
        };
        if !secure.awaiting_confirmation || self.state != State::Handshaking {
            return;
        }
        secure.awaiting_confirmation = false;
        self.state = State::Established;
        self.events.push_back(Event::Connected);
    }

    /// Counts a packet that did not open.
    pub(super) fn count_refused(&mut self, error: OpenError) {
        self.stats.packets_dropped += 1;
        match error {
            OpenError::Unauthentic => self.stats.packets_unauthentic += 1,
            OpenError::Replayed => self.stats.packets_replayed += 1,
            OpenError::TooShort => {}
        }
    }

    /// An Initial or Handshake packet of a secured connection.
    pub(super) fn handle_secure_handshake(
        &mut self,
        now: Instant,
        header: Header,
        number: PacketNumber,
        header_len: usize,
        datagram: &[u8],
    ) {
        let mut packet = datagram.to_vec();
        let end = match PlainProtection.open(number.0, header_len, &mut packet) {
            Ok(end) => end,
            Err(e) => return self.count_refused(e),
        };
        let expected = match self.side {
            Side::Server => PacketType::Initial,
            Side::Client => PacketType::Handshake,
        };
        let for_us = self.side == Side::Server || header.dcid == self.local_cid;
        if header.packet_type != expected || !for_us {
            self.stats.packets_dropped += 1;
            return;
        }
        let mut message = None;
        for frame in Frames::new(&packet[header_len..end]) {
            match frame {
                Ok(Frame::Noise(m)) if message.is_none() => message = Some(m),
                Ok(Frame::Padding(_)) => {}
                _ => {
                    self.stats.packets_dropped += 1;
                    return;
                }
            }
        }
        let Some(message) = message else {
            self.stats.packets_dropped += 1;
            return;
        };
        match self.side {
            Side::Server => self.on_client_hello(now, message, datagram.len()),
            Side::Client => self.on_server_answer(now, message, datagram.len()),
        }
    }

    fn install_keys(&mut self, secrets: TrafficSecrets, peer: PublicKey) {
        let Some(secure) = self.secure.as_mut() else {
            return;
        };
        self.protection = Box::new(AeadProtection::new(
            PACKET_AEAD,
            secrets.send,
            secrets.receive,
            secure.config.key_update_packets,
        ));
        secure.keyed = true;
        secure.peer = Some(peer);
        secure.client = None;
    }

    fn on_client_hello(&mut self, now: Instant, message: &[u8], bytes: usize) {
        let Some(secure) = self.secure.as_ref() else {
            return;
        };
        if secure.keyed {
            // A copy of the first message: the answer may have been lost.
            if secure.awaiting_confirmation && secure.first_message == message {
                self.handshake.to_send = 1;
                self.stats.packets_received += 1;
            } else {
                self.stats.packets_dropped += 1;
            }
            return;
        }
        let hello = match noise::read_hello(
            &secure.config.keypair,
            secure.config.psk.as_ref(),
            secure.entropy,
            message,
        ) {
            Ok(hello) => hello,
            Err(e) => return self.refuse_handshake(e),
        };
        if let Some(allowed) = &secure.config.allowed_clients {
            if !allowed.contains(&hello.client) {
                return self.refuse_handshake(HandshakeError::NotAllowed(hello.client));
            }
        }
        let Ok(HandshakePayload { body, early }) = HandshakePayload::parse(&hello.payload) else {
            return self.refuse_handshake(HandshakeError::Malformed);
        };
        let client = hello.client;
        let mut payload = Vec::new();
        self.handshake_body().emit_body(&mut payload);
        let answer = self.admit_early(
            now,
            message,
            early,
            body.params.max_datagram,
            hello.early_secret,
        );
        if let Some(answer) = answer {
            answer.emit(&mut payload);
        }
        let (answer, secrets) = match hello.answer(&payload) {
            Ok(done) => done,
            Err(e) => return self.refuse_handshake(e),
        };
        self.install_keys(secrets, client);
        if let Some(secure) = self.secure.as_mut() {
            secure.first_message = message.to_vec();
            secure.answer = answer;
            secure.awaiting_confirmation = true;
        }
        self.stats.packets_received += 1;
        self.stats.bytes_received += bytes as u64;
        self.set_timer(Timer::Idle, now + self.config.idle_timeout);
        if let Err(v) = self.apply_handshake(now, &body, false) {
            self.violation(now, v);
        }
    }

    fn on_server_answer(&mut self, now: Instant, message: &[u8], bytes: usize) {
        let Some(secure) = self.secure.as_ref() else {
            return;
        };
        let Some(client) = secure.client.as_ref().filter(|_| !secure.keyed) else {
            // A copy of an answer already read.
            self.stats.packets_dropped += 1;
            return;
        };
        let server = client.server();
        let (payload, secrets) = match client.read_answer(message) {
            Ok(done) => done,
            Err(_) => return self.count_refused(OpenError::Unauthentic),
        };
        let Ok(HandshakePayload { body, early }) = HandshakePayload::parse(&payload) else {
            self.stats.packets_dropped += 1;
            return;
        };
        self.install_keys(secrets, server);
        self.on_early_answer(early);
        self.stats.packets_received += 1;
        self.stats.bytes_received += bytes as u64;
        self.set_timer(Timer::Idle, now + self.config.idle_timeout);
        if let Err(v) = self.apply_handshake(now, &body, true) {
            return self.violation(now, v);
        }
        // Copies of the Initial still queued would be ignored by now.
        self.handshake.to_send = 0;
        // The server counts the handshake complete on the first sealed
        // packet: send one even if the application has nothing to say.
        self.repair.probe_owed = self.repair.probe_owed.max(1);
    }

    /// Ends a server connection whose client was refused, sending nothing.
    fn refuse_handshake(&mut self, error: HandshakeError) {
        self.stats.packets_dropped += 1;
        if error == HandshakeError::Unauthentic {
            self.stats.packets_unauthentic += 1;
        }
        self.state = State::Closed;
        self.timers = Default::default();
        self.events
            .push_back(Event::Closed(CloseReason::HandshakeRefused(error)));
    }
}
