//! Connection migration: a client whose address changes (a new network, a
//! NAT that rebound its port) keeps its connection.
//!
//! The model is RFC 9000 §8.2 and §9. A server that receives the newest
//! authenticated packet from an address other than its client's sends to
//! that address from then on, but counts it unproved: it sends a
//! PATH_CHALLENGE of [`PATH_CHALLENGE_LEN`] unpredictable bytes there, and
//! until a PATH_RESPONSE echoes them it sends the new address at most
//! [`AMPLIFICATION_FACTOR`] times the bytes it received from it. A packet
//! that is not the newest (a late one from the old address) moves nothing,
//! and a replayed one is a duplicate and dropped before it is looked at. A
//! challenge unanswered for [`VALIDATION_PTOS`] probe time-outs abandons
//! the new address and returns to the old one.
//!
//! A new IP address is a new path: the congestion controller, the pacer
//! and the round-trip estimate start afresh (RFC 9000 §9.4), and get their
//! old state back if the validation fails. A new port on the same IP is a
//! NAT rebinding: the path is the same and keeps its state.
//!
//! [`AMPLIFICATION_FACTOR`]: super::AMPLIFICATION_FACTOR

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::address_validation::AmplificationLimit;
use super::{Connection, State, Timer, Transmit};
use crate::congestion::{Controller, Pacer};
use crate::event::PacketKind;
use crate::protection::TAG_LEN;
use crate::rtt::RttEstimator;
use crate::wire::{Frame, PacketType, Side, MAX_HEADER_LEN, PATH_CHALLENGE_LEN};

/// Probe time-outs (of the new path) a challenge has to be answered in;
/// a challenge goes out at the start and after each time-out but the last.
pub(super) const VALIDATION_PTOS: u32 = 3;

/// The largest packet of a path frame alone: header, frame, tag.
const PATH_FRAME_PACKET_LEN: usize = MAX_HEADER_LEN + 1 + PATH_CHALLENGE_LEN + TAG_LEN;

/// The peer's address, and a new one being validated.
pub(super) struct Paths {
    /// Where the peer's packets come from and this end's go, once a
    /// datagram arrived with its source.
    pub(super) remote: Option<SocketAddr>,
    /// A new address of the peer, not yet proved.
    pending: Option<PathValidation>,
    /// A challenge's bytes this end owes the peer an echo of.
    response_owed: Option<[u8; PATH_CHALLENGE_LEN]>,
    /// Draws the challenges' bytes.
    rng: ChaCha20Rng,
    /// How long the next silence probe waits.
    silence_gap: Duration,
}

/// The validation of a new address of the peer.
struct PathValidation {
    /// The proved address to return to if it fails.
    previous: SocketAddr,
    challenge: [u8; PATH_CHALLENGE_LEN],
    /// Whether a challenge is due to go out.
    challenge_owed: bool,
    /// Probe time-outs of the new path without an answer.
    timeouts: u32,
    /// What was received from and sent to the new address.
    limit: AmplificationLimit,
    /// The old path's state, when the new one started afresh.
    old_path: Option<PathState>,
}

/// What a path's congestion control knows of it.
struct PathState {
    controller: Box<dyn Controller>,
    pacer: Pacer,
    rtt: RttEstimator,
}

impl Paths {
    /// No address known yet; challenges drawn from `seed`.
    pub(super) fn new(seed: u64) -> Paths {
        Paths {
            remote: None,
            pending: None,
            response_owed: None,
            rng: ChaCha20Rng::seed_from_u64(seed),
            silence_gap: Duration::ZERO,
        }
    }

    /// Draws the challenges from `entropy` instead, which comes from a
    /// secure source, so that they cannot be guessed.
    pub(super) fn reseed(&mut self, entropy: [u8; 32]) {
        self.rng = ChaCha20Rng::from_seed(entropy);
    }

    /// Whether a new address is being validated.
    pub(super) fn is_validating(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether a datagram of up to `bytes` may go to the current address:
    /// an unproved one gets at most three times what came from it.
    pub(super) fn allows(&self, bytes: u64) -> bool {
        self.pending.as_ref().is_none_or(|p| p.limit.allows(bytes))
    }

    /// Counts a datagram received from `from` (before it is opened: RFC
    /// 9000 §8 counts every byte an address sent).
    pub(super) fn on_received(&mut self, from: SocketAddr, bytes: usize) {
        if self.remote.is_none() {
            self.remote = Some(from);
        }
        if let Some(pending) = self.pending.as_mut() {
            if self.remote == Some(from) {
                pending.limit.on_received(bytes);
            }
        }
    }

    /// Counts a datagram sent to the current address.
    pub(super) fn on_sent(&mut self, bytes: u64) {
        if let Some(pending) = self.pending.as_mut() {
            pending.limit.on_sent(bytes);
        }
    }
}

impl Connection {
    /// The peer's address this end sends to, once a datagram came in with
    /// its source (see [`handle_datagram_from`](Connection::handle_datagram_from)).
    pub fn remote_address(&self) -> Option<SocketAddr> {
        self.paths.remote
    }

    /// Whether the peer moved to an address that has not yet answered its
    /// challenge (what is sent there is limited until it does).
    pub fn is_validating_path(&self) -> bool {
        self.paths.is_validating()
    }

    /// The newest authenticated packet came from `from`, which may be a
    /// new address of the peer. `bytes` is the datagram's size, already
    /// counted if `from` was the one being validated.
    pub(super) fn on_peer_address(&mut self, now: Instant, from: SocketAddr, bytes: usize) {
        let Some(current) = self.paths.remote else {
            return;
        };
        if from == current || self.side != Side::Server || self.state != State::Established {
            return;
        }
        let pending = self.paths.pending.take();
        let (previous, old_path) = match pending {
            // Back at the proved address: nothing to validate.
            Some(p) if p.previous == from => {
                self.paths.remote = Some(from);
                if let Some(old) = p.old_path {
                    self.restore_path(old);
                }
                self.timers[Timer::PathValidation as usize] = None;
                return;
            }
            Some(p) => (p.previous, p.old_path),
            None => (current, None),
        };
        let old_path = match old_path {
            Some(old) => Some(old),
            // RFC 9000 §9.4: a new IP address is a new path, whose capacity
            // and round trip the old one says nothing of.
            None if previous.ip() != from.ip() => Some(self.fresh_path(now)),
            None => None,
        };
        let mut limit = AmplificationLimit::unproved();
        limit.on_received(bytes);
        self.paths.remote = Some(from);
        self.paths.pending = Some(PathValidation {
            previous,
            challenge: self.paths.rng.random(),
            challenge_owed: true,
            timeouts: 0,
            limit,
            old_path,
        });
        self.stats.path_changes += 1;
        self.set_timer(Timer::PathValidation, now + self.pto());
    }

    /// Replaces the path's congestion state with a new path's; returns the
    /// old one.
    fn fresh_path(&mut self, now: Instant) -> PathState {
        let max_datagram = self.config.max_datagram;
        let controller = self.config.congestion.build(now, max_datagram);
        PathState {
            controller: std::mem::replace(&mut self.recovery.controller, controller),
            pacer: std::mem::replace(&mut self.recovery.pacer, Pacer::new(max_datagram)),
            rtt: std::mem::replace(
                &mut self.recovery.rtt,
                RttEstimator::new(self.config.initial_rtt),
            ),
        }
    }

    fn restore_path(&mut self, old: PathState) {
        self.recovery.controller = old.controller;
        self.recovery.pacer = old.pacer;
        self.recovery.rtt = old.rtt;
    }

    /// A PATH_CHALLENGE arrived: echo it.
    pub(super) fn on_path_challenge(&mut self, data: [u8; PATH_CHALLENGE_LEN]) {
        self.paths.response_owed = Some(data);
    }

    /// A PATH_RESPONSE arrived: if it echoes the challenge, the new address
    /// is proved and the connection stays there.
    pub(super) fn on_path_response(&mut self, data: [u8; PATH_CHALLENGE_LEN]) {
        if self
            .paths
            .pending
            .as_ref()
            .is_some_and(|p| p.challenge == data)
        {
            self.paths.pending = None;
            self.timers[Timer::PathValidation as usize] = None;
            self.stats.paths_validated += 1;
        }
    }

    /// The path validation timer fired: challenge again, or give up after
    /// [`VALIDATION_PTOS`] and return to the proved address.
    pub(super) fn on_path_validation_timeout(&mut self, now: Instant) {
        let Some(pending) = self.paths.pending.as_mut() else {
            return;
        };
        pending.timeouts += 1;
        if pending.timeouts < VALIDATION_PTOS {
            pending.challenge_owed = true;
            self.set_timer(Timer::PathValidation, now + self.pto());
            return;
        }
        let Some(pending) = self.paths.pending.take() else {
            return;
        };
        self.paths.remote = Some(pending.previous);
        if let Some(old) = pending.old_path {
            self.restore_path(old);
        }
        self.stats.path_validations_failed += 1;
    }

    /// A PATH_RESPONSE or PATH_CHALLENGE owed, if any, and if the limit on
    /// an unproved address leaves room for it.
    pub(super) fn poll_path_frames(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(data) = self.paths.response_owed.take() {
            return Some(self.build_path_frame(now, Frame::PathResponse(data)));
        }
        let pending = self.paths.pending.as_mut()?;
        let size = PATH_FRAME_PACKET_LEN as u64;
        if !pending.challenge_owed
            || !pending.limit.allows(size)
            || !self.amplification.allows(size)
        {
            return None;
        }
        pending.challenge_owed = false;
        let challenge = pending.challenge;
        Some(self.build_path_frame(now, Frame::PathChallenge(challenge)))
    }

    /// A packet of `frame` alone. It is not counted in flight: the
    /// challenge has its own timer, and a response that is lost is
    /// answered by the next challenge.
    fn build_path_frame(&mut self, now: Instant, frame: Frame<'_>) -> Transmit {
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        frame.emit(&mut buf);
        self.finish_packet(now, buf, number, header_len, PacketKind::Ping, None)
    }
}

/// The longest a silence probe waits, without a keep-alive interval.
const MAX_SILENCE_GAP: Duration = Duration::from_secs(15);

impl Connection {
    /// The peer sent something that asks for an acknowledgement: the
    /// silence probe starts over.
    pub(super) fn on_peer_spoke(&mut self, now: Instant) {
        if let Some(after) = self.config.silence_probe {
            self.paths.silence_gap = after;
            self.set_timer(Timer::Silence, now + after);
        }
    }

    /// The peer has been quiet: ping it, so that a peer waiting for this
    /// end's packets at an old address hears from its new one.
    pub(super) fn on_silence(&mut self, now: Instant) {
        if self.state != State::Established {
            return;
        }
        if self.streams.open_count() > 0 {
            self.repair.probe_owed = self.repair.probe_owed.max(1);
        }
        let cap = self.config.keep_alive.unwrap_or(MAX_SILENCE_GAP);
        self.paths.silence_gap = (self.paths.silence_gap * 2).min(cap);
        self.set_timer(Timer::Silence, now + self.paths.silence_gap);
    }
}
