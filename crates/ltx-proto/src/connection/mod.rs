//! A connection: the sans-IO state machine of one ltx association.

mod address_validation;
mod copy_spacing;
mod decoder_report;
mod early;
mod guard;
mod handshake;
mod input;
mod loss_round;
mod migration;
mod reassembly;
mod receive;
mod received;
mod recovery;
mod repair;
mod secure;
mod send;
mod send_buffer;
mod sent;
mod spare_buffer;
mod stats;
mod streams;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::config::TransportConfig;
use crate::event::{codes, CloseReason, Event, Unreachable};
use crate::protection::{
    PacketProtection, PlainProtection, PublicKey, SecurityConfig, KEY_LEN, TAG_LEN,
};
use crate::wire::{ConnectionId, Side, StreamId, MAX_HEADER_LEN};

use address_validation::AmplificationLimit;
pub use address_validation::AMPLIFICATION_FACTOR;
use early::{refuse_early_data, EarlyData};
pub use early::{EARLY_MAX_DATA, EARLY_MAX_STREAMS, EARLY_MAX_SYMBOLS};
pub(crate) use handshake::MIN_INITIAL;
use handshake::{handshake_backoff, initial_copies, Handshake, INITIAL_COPIES};
use migration::Paths;
use receive::Receiver;
use received::AckState;
use recovery::Recovery;
use repair::RepairScheduler;
use secure::{KeysPending, SecureHandshake};
use send::SymbolSender;
pub use stats::ConnectionStats;
pub use streams::{ReadOutcome, StreamError};
use streams::{StreamLimits, Streams, Violation};

/// The ECN codepoint of a datagram, as the driver reads and writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum EcnCodepoint {
    /// Not ECN-capable.
    #[default]
    NotEct,
    /// ECT(0).
    Ect0,
    /// ECT(1).
    Ect1,
    /// Congestion experienced.
    Ce,
}

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The UDP payload.
    pub contents: Vec<u8>,
    /// The ECN codepoint to send it with.
    pub ecn: EcnCodepoint,
    /// Where to send it: the peer's address as the connection last learned
    /// it from [`Connection::handle_datagram_from`] (it follows a peer that
    /// moves), or `None` before any datagram came in that way, for the
    /// address the driver connected to.
    pub destination: Option<SocketAddr>,
}

/// Bytes a packet spends on its largest symbol frame before the symbol (a
/// repair: type, window, key, density; the symbol runs to the packet's
/// end).
const SYMBOL_FRAME_OVERHEAD: usize = 1 + 8 + 4 + 4 + 1;
/// Packets acknowledged one by one at the start of a connection, so that
/// the sender's start-up sees the bottleneck's spacing in the first flights
/// (a lone last packet would otherwise wait for the ack delay).
const QUICK_ACKS: u64 = 128;
/// Longest a connection lingers after a close to absorb the peer's
/// packets, in PTOs.
const DRAIN_PTOS: u32 = 3;

/// The symbol size for a datagram size: what fits with the largest header,
/// the largest symbol frame header and an authentication tag. Both ends use
/// the one for the smaller of their two datagram sizes.
pub fn symbol_size(max_datagram: u16) -> usize {
    usize::from(max_datagram).saturating_sub(MAX_HEADER_LEN + SYMBOL_FRAME_OVERHEAD + TAG_LEN)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Handshaking,
    Established,
    /// CLOSE sent (or received); absorbing packets until the time given.
    Draining(Instant),
    Closed,
}

/// The connection's timers, one slot each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    Idle = 0,
    Ack = 1,
    Loss = 2,
    Probe = 3,
    Pacing = 4,
    KeepAlive = 5,
    PathValidation = 6,
    Silence = 7,
    /// Nothing received for a while: the decoder's history can go.
    Quiet = 8,
}

const TIMERS: usize = 9;

/// Probe time-outs without a packet from the peer after which the decoder
/// keeps no history below its first unknown symbol: by then every repair
/// the peer built over those symbols has arrived or is lost, and what it
/// sends next starts at what it knows to be acknowledged. An idle
/// connection so holds no symbol buffers.
const QUIET_AFTER_PTOS: u32 = 4;
const ALL_TIMERS: [Timer; TIMERS] = [
    Timer::Idle,
    Timer::Ack,
    Timer::Loss,
    Timer::Probe,
    Timer::Pacing,
    Timer::KeepAlive,
    Timer::PathValidation,
    Timer::Silence,
    Timer::Quiet,
];

/// A close asked for by the application, or sent or received.
#[derive(Default)]
struct Closing {
    /// The CLOSE frame to send (code, reason).
    to_send: Option<(u64, String)>,
    /// Whether the application asked for a graceful close.
    requested: bool,
    /// Why the connection ends, once it does.
    reason: Option<CloseReason>,
}

/// One ltx connection: a sans-IO state machine.
///
/// Its methods are of four kinds, as in quinn-proto:
/// - getters ([`stats`](Connection::stats), [`side`](Connection::side), ...);
/// - inputs: [`handle_datagram`](Connection::handle_datagram) and
///   [`handle_timeout`](Connection::handle_timeout);
/// - application commands: streams ([`open_stream`](Connection::open_stream),
///   [`write`](Connection::write), [`read`](Connection::read), ...) and
///   [`close`](Connection::close) / [`abort`](Connection::abort);
/// - outputs: [`poll_transmit`](Connection::poll_transmit),
///   [`poll_timeout`](Connection::poll_timeout),
///   [`poll_event`](Connection::poll_event).
///
/// **Poll order.** After every input or command, the driver calls
/// `poll_transmit` until it returns `None` (sending each datagram), then
/// `poll_event` until `None`, then `poll_timeout` to learn when to call
/// `handle_timeout` next. Time only ever comes in as `now`.
///
/// ```
/// use std::time::Instant;
/// use ltx_proto::{Connection, ReadOutcome, TransportConfig};
///
/// let now = Instant::now();
/// let mut client = Connection::client(TransportConfig::default(), now, 1)?;
/// let mut server = Connection::server(TransportConfig::default(), now, 2)?;
/// // A perfect network: hand every datagram straight across.
/// let mut pump = |a: &mut Connection, b: &mut Connection| {
///     while let Some(t) = a.poll_transmit(now) {
///         b.handle_datagram(now, &t.contents, t.ecn);
///     }
/// };
/// pump(&mut client, &mut server);
/// pump(&mut server, &mut client);
/// let stream = client.open_stream()?;
/// client.write(stream, b"hello")?;
/// client.finish(stream)?;
/// pump(&mut client, &mut server);
/// let id = server.accept_stream().expect("the client opened a stream");
/// let mut buf = [0u8; 16];
/// assert_eq!(server.read(id, &mut buf)?, ReadOutcome::Data(5));
/// assert_eq!(&buf[..5], b"hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Connection {
    side: Side,
    config: TransportConfig,
    state: State,
    local_cid: ConnectionId,
    remote_cid: ConnectionId,
    protection: Box<dyn PacketProtection>,
    /// The handshake of a connection made with a [`SecurityConfig`].
    secure: Option<Box<SecureHandshake>>,
    /// The handshake's packets, copies and first RTT sample.
    handshake: Handshake,
    /// Stream data in the client's first flight.
    early: EarlyData,
    amplification: AmplificationLimit,
    /// The peer's address, and a new one being validated.
    paths: Paths,
    /// A close asked for, sent or received.
    closing: Closing,
    /// The packets this end sent: numbers, acknowledgements, losses, round
    /// trip, congestion control and pacing.
    recovery: Recovery,
    /// What this end owes the peer in acknowledgements.
    acks: AckState,
    /// The symbol size both ends agreed on (0 before the handshake).
    symbol_size: usize,
    /// The encoder and what the peer's decoder reported of it.
    sender: SymbolSender,
    /// When to send repair, and which: the redundancy scheme and what it
    /// has asked for.
    repair: RepairScheduler,
    /// The decoder of the peer's symbols.
    receiver: Receiver,
    streams: Streams,
    timers: [Option<Instant>; TIMERS],
    events: VecDeque<Event>,
    /// A datagram's copy being opened, kept between packets.
    opened: Vec<u8>,
    stats: ConnectionStats,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("side", &self.side)
            .field("state", &self.state)
            .field("local_cid", &self.local_cid)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A client connection; its first `poll_transmit` starts the handshake.
    /// `seed` feeds every random choice (connection ids).
    pub fn client(
        config: TransportConfig,
        now: Instant,
        seed: u64,
    ) -> Result<Connection, crate::ConfigError> {
        refuse_early_data(&config, "a connection without security")?;
        Connection::new_client(config, now, seed)
    }

    fn new_client(
        config: TransportConfig,
        now: Instant,
        seed: u64,
    ) -> Result<Connection, crate::ConfigError> {
        let mut connection = Connection::new(Side::Client, config, now, seed)?;
        connection.remote_cid = ConnectionId(connection_rng(seed).random());
        connection.handshake.to_send = INITIAL_COPIES;
        Ok(connection)
    }

    /// A client connection that authenticates with `security`'s key pair
    /// to the server whose static public key is `server` (Noise `IK`), and
    /// seals every packet after the handshake. `entropy` must come from a
    /// secure random source: it makes the handshake's ephemeral key. With
    /// [early data](TransportConfig::early_data) on, `security` must have
    /// a [`clock`](SecurityConfig::clock).
    pub fn secure_client(
        config: TransportConfig,
        security: SecurityConfig,
        server: PublicKey,
        now: Instant,
        seed: u64,
        entropy: [u8; KEY_LEN],
    ) -> Result<Connection, crate::ConfigError> {
        if security.clock.is_none() {
            refuse_early_data(&config, "a client without a wall clock")?;
        }
        let mut connection = Connection::new_client(config, now, seed)?;
        connection.paths.reseed(entropy);
        connection.secure = Some(Box::new(SecureHandshake::new(security, entropy)));
        connection.protection = Box::new(KeysPending);
        connection
            .start_secure_client(now, server)
            .map_err(crate::ConfigError::Handshake)?;
        Ok(connection)
    }

    /// A server connection waiting for a client's first packet, which
    /// must prove a key `security` accepts; see
    /// [`secure_client`](Connection::secure_client). With
    /// [early data](TransportConfig::early_data) on, `security` must have
    /// an [`early_data_record`](SecurityConfig::early_data_record).
    pub fn secure_server(
        config: TransportConfig,
        security: SecurityConfig,
        now: Instant,
        seed: u64,
        entropy: [u8; KEY_LEN],
    ) -> Result<Connection, crate::ConfigError> {
        if security.early_data_record.is_none() {
            refuse_early_data(&config, "a server without an early data record")?;
        }
        let mut connection = Connection::new(Side::Server, config, now, seed)?;
        connection.paths.reseed(entropy);
        connection.secure = Some(Box::new(SecureHandshake::new(security, entropy)));
        connection.protection = Box::new(KeysPending);
        Ok(connection)
    }

    /// A server connection waiting for a client's first packet.
    pub fn server(
        config: TransportConfig,
        now: Instant,
        seed: u64,
    ) -> Result<Connection, crate::ConfigError> {
        refuse_early_data(&config, "a connection without security")?;
        Connection::new(Side::Server, config, now, seed)
    }

    fn new(
        side: Side,
        config: TransportConfig,
        now: Instant,
        seed: u64,
    ) -> Result<Connection, crate::ConfigError> {
        config.validate()?;
        let mut rng = connection_rng(seed ^ 0x5eed);
        let mut controller = config.congestion.build(now, config.max_datagram);
        if let Some(rate) = config.rate_hint {
            controller.on_rate_hint(now, rate);
        }
        if let Some(saved) = config
            .saved_path
            .filter(|_| config.congestion.reads_rate_hint())
        {
            controller.on_saved_path(now, saved);
        }
        let limits = StreamLimits {
            receive_window: config.receive_window,
            stream_receive_window: config.stream_receive_window,
            send_buffer: config.send_buffer,
            max_streams: config.max_streams,
        };
        let mut connection = Connection {
            side,
            state: State::Handshaking,
            local_cid: ConnectionId(rng.random()),
            remote_cid: ConnectionId(0),
            protection: Box::new(PlainProtection),
            secure: None,
            handshake: Handshake::default(),
            early: EarlyData::default(),
            amplification: match side {
                Side::Client => AmplificationLimit::none(),
                Side::Server => AmplificationLimit::unproved(),
            },
            paths: Paths::new(seed ^ 0x9a7e),
            closing: Closing::default(),
            recovery: Recovery::new(&config, controller, now),
            acks: AckState::default(),
            symbol_size: 0,
            sender: SymbolSender::default(),
            repair: RepairScheduler::new(config.scheme.build(&config.repair, config.max_window)),
            receiver: Receiver::default(),
            streams: Streams::new(side, limits),
            timers: [None; TIMERS],
            events: VecDeque::new(),
            opened: Vec::new(),
            stats: ConnectionStats::default(),
            config,
        };
        connection.set_timer(Timer::Idle, now + connection.config.idle_timeout);
        Ok(connection)
    }

    /// Replaces the packet protection (the default is plain; a secured
    /// connection installs its own when the handshake completes).
    pub fn set_protection(&mut self, protection: Box<dyn PacketProtection>) {
        self.protection = protection;
    }

    // ---- getters ----

    /// Which end this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// This end's connection id (the destination id of incoming packets).
    pub fn local_cid(&self) -> ConnectionId {
        self.local_cid
    }

    /// Whether the handshake is complete and the connection not closed.
    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    // ---- application commands ----

    /// Opens a bidirectional stream.
    ///
    /// A client with [early data](TransportConfig::early_data) may open
    /// and write streams before the handshake completes.
    pub fn open_stream(&mut self) -> Result<StreamId, StreamError> {
        if !self.streams_usable() || self.closing.requested {
            return Err(StreamError::NotConnected);
        }
        self.streams.open()
    }

    /// The next stream the peer opened, if any.
    pub fn accept_stream(&mut self) -> Option<StreamId> {
        self.streams.accept()
    }

    /// Queues bytes on a stream; returns how many were taken (fewer than
    /// offered when the send buffer is full: a `StreamWritable` event
    /// follows when there is room).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        if !self.streams_usable() {
            return Err(StreamError::NotConnected);
        }
        self.streams.write(id, data)
    }

    /// Queues a chunk on a stream without copying it: takes what fits from
    /// the front of `chunk` and returns how many bytes that was (as
    /// [`write`](Self::write) does). The bytes are copied once, into the
    /// packet; `write` copies them into the send buffer first.
    pub fn write_chunk(&mut self, id: StreamId, chunk: &mut Bytes) -> Result<usize, StreamError> {
        if !self.streams_usable() {
            return Err(StreamError::NotConnected);
        }
        self.streams.write_chunk(id, chunk)
    }

    /// Ends a stream: the peer reads to the end, then `Finished`.
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        self.streams.finish(id)
    }

    /// Abandons sending on a stream.
    pub fn reset_stream(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.reset(id, code)
    }

    /// Asks the peer to stop sending on a stream.
    pub fn stop_sending(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.stop_sending(id, code)
    }

    /// Reads in-order bytes from a stream.
    pub fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<ReadOutcome, StreamError> {
        let outcome = self.streams.read(id, buf)?;
        if let ReadOutcome::Data(n) = outcome {
            self.stats.stream_bytes_read += n as u64;
        }
        Ok(outcome)
    }

    /// Closes gracefully: once every byte written has been delivered to the
    /// peer's decoder, a CLOSE goes out and the connection ends with
    /// [`CloseReason::LocallyClosed`].
    pub fn close(&mut self, now: Instant) {
        self.closing.requested = true;
        self.maybe_finish_close(now);
    }

    /// Closes at once with an error code and reason for the peer.
    pub fn abort(&mut self, now: Instant, code: u64, reason: &str) {
        self.start_close(
            now,
            code,
            reason.to_owned(),
            CloseReason::LocallyAborted {
                code,
                reason: reason.to_owned(),
            },
        );
    }

    // ---- outputs ----

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When `handle_timeout` must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let (drain, controller) = match self.state {
            State::Draining(until) => (Some(until), None),
            // A draining connection sends nothing more: the controller's
            // time no longer matters.
            _ => (None, self.recovery.controller.deadline()),
        };
        self.timers
            .iter()
            .flatten()
            .copied()
            .chain(drain)
            .chain(controller)
            .min()
    }

    /// The driver learned from an ICMP error that the peer's address is
    /// unreachable. A client still in its handshake ends at once (nothing
    /// was established that the error could be a forgery against); once
    /// established, the error is ignored: it is unauthenticated, and the
    /// protocol's own timers tell a dead peer from a lost packet.
    pub fn handle_unreachable(&mut self, now: Instant, why: Unreachable) {
        if self.side != Side::Client || self.state != State::Handshaking {
            return;
        }
        let _ = now;
        self.state = State::Closed;
        self.timers = [None; TIMERS];
        self.events
            .push_back(Event::Closed(CloseReason::Unreachable(why)));
    }

    /// Handles the expiry of timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.streams.age_spares(now);
        if let State::Draining(until) = self.state {
            if now >= until {
                self.state = State::Closed;
                let reason = self
                    .closing
                    .reason
                    .take()
                    .unwrap_or(CloseReason::LocallyClosed);
                self.events.push_back(Event::Closed(reason));
                self.timers = [None; TIMERS];
            }
            return;
        }
        if self.state == State::Closed {
            return;
        }
        if self
            .recovery
            .controller
            .deadline()
            .is_some_and(|deadline| deadline <= now)
        {
            self.recovery
                .controller
                .on_deadline(now, &self.recovery.rtt);
            if self.config.trace {
                self.trace_metrics();
            }
        }
        for timer in ALL_TIMERS {
            if self.timers[timer as usize].is_none_or(|t| t > now) {
                continue;
            }
            self.timers[timer as usize] = None;
            match timer {
                Timer::Idle => {
                    let reason = if self.state == State::Handshaking {
                        CloseReason::HandshakeTimeout
                    } else {
                        CloseReason::IdleTimeout
                    };
                    self.state = State::Closed;
                    self.timers = [None; TIMERS];
                    self.events.push_back(Event::Closed(reason));
                    return;
                }
                Timer::Ack => self.acks.needed = true,
                Timer::Loss => self.detect_losses(now),
                Timer::Probe => self.on_probe_timeout(now),
                Timer::Pacing => {}
                Timer::KeepAlive => self.repair.probe_owed = self.repair.probe_owed.max(1),
                Timer::PathValidation => self.on_path_validation_timeout(now),
                Timer::Silence => self.on_silence(now),
                Timer::Quiet => {
                    self.receiver.forget_history();
                    self.streams.release_spares();
                }
            }
        }
    }

    fn set_timer(&mut self, timer: Timer, at: Instant) {
        self.timers[timer as usize] = Some(at);
    }

    /// The next datagram to send, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        match self.state {
            State::Closed => return None,
            State::Draining(_) => {
                let (code, reason) = self.closing.to_send.take()?;
                if !self.can_seal_data() {
                    // No keys yet: the peer could not open it.
                    return None;
                }
                return Some(self.build_close(code, &reason));
            }
            _ => {}
        }
        if self.state == State::Established {
            // Small, and sent first: a new address gets its challenge even
            // when what it sent leaves no room for a full datagram.
            if let Some(transmit) = self.poll_path_frames(now) {
                return Some(transmit);
            }
        }
        let max_datagram = u64::from(self.config.max_datagram);
        if !self.amplification.allows(max_datagram) || !self.paths.allows(max_datagram) {
            self.stats.amplification_limited += 1;
            return None;
        }
        if self.handshake.to_send > 0 {
            self.handshake.to_send -= 1;
            return Some(self.build_handshake(now));
        }
        if self.state != State::Established && !self.sends_half_rtt() {
            if self.interleaved_copy_due(self.early_packets_sent()) {
                return Some(self.build_interleaved_copy(now));
            }
            return self.poll_early(now);
        }
        if self.acks.needed {
            self.acks.needed = false;
            return Some(self.build_ack(now));
        }
        if let Some(transmit) = self.poll_early_resend(now) {
            return Some(transmit);
        }
        if let Some(transmit) = self.poll_symbol(now) {
            return Some(transmit);
        }
        if self.repair.probe_owed > 0 {
            self.repair.probe_owed -= 1;
            return Some(self.build_ping(now));
        }
        None
    }

    /// The largest packet number this end has received, which the next
    /// packet's truncated number is expanded against.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn largest_received(&self) -> Option<crate::wire::PacketNumber> {
        self.acks.received.largest().map(crate::wire::PacketNumber)
    }

    // ---- closing ----

    fn start_close(&mut self, now: Instant, code: u64, reason: String, why: CloseReason) {
        if matches!(self.state, State::Draining(_) | State::Closed) {
            return;
        }
        if self.state == State::Established || self.side == Side::Client {
            self.closing.to_send = Some((code, reason));
        }
        self.closing.reason = Some(why);
        self.recovery.last_sent = now;
        self.state = State::Draining(now + self.pto() * DRAIN_PTOS);
        self.timers = [None; TIMERS];
    }

    fn maybe_finish_close(&mut self, now: Instant) {
        if !self.closing.requested || self.state != State::Established {
            return;
        }
        let delivered = self
            .sender
            .encoder
            .as_ref()
            .is_none_or(|e| self.sender.peer.decoded_through >= e.next_id());
        if delivered && self.streams.all_sent() {
            self.start_close(
                now,
                codes::NO_ERROR,
                String::new(),
                CloseReason::LocallyClosed,
            );
        }
    }

    fn violation(&mut self, now: Instant, v: Violation) {
        let reason = v.reason.clone();
        self.start_close(
            now,
            v.code,
            v.reason,
            CloseReason::ProtocolViolation(reason),
        );
    }
}

fn connection_rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}
