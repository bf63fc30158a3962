//! A connection: the sans-IO state machine of one ltx association.

mod address_validation;
mod copy_spacing;
mod handshake;
mod loss_round;
mod receive;
mod received;
mod recovery;
mod repair;
mod secure;
mod send;
mod sent;
mod streams;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ltx_coding::codec::{
    Code, Decoder, DecoderConfig, EncodeError, Encoder, EncoderConfig, Outcome,
};
use ltx_coding::{RepairKey, SymbolId};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::accept::packet::{InitialDatagram, RetryPacket};
use crate::config::{TransportConfig, DECODER_HISTORY};
use crate::event::{codes, CloseReason, Event, Metrics, PacketKind, TraceEvent};
use crate::protection::{
    PacketProtection, PlainProtection, PublicKey, SecurityConfig, KEY_LEN, REPLAY_WINDOW, TAG_LEN,
};
use crate::recovery::{Feedback, Flight, Horizon, LossEstimate, RepairRange, RepairReason};
use crate::wire::{
    AckFrame, CloseFrame, ConnectionId, DecoderState, Frame, Frames, HandshakeFrame, Header,
    PacketNumber, PacketType, RepairFrame, Side, SourceFrame, StreamId, TransportParams,
    TruncatedPacketNumber, TruncatedSymbolId, MAX_HEADER_LEN,
};

use address_validation::AmplificationLimit;
pub use address_validation::AMPLIFICATION_FACTOR;
use copy_spacing::{CopySpacing, Reading};
use handshake::Handshake;
use receive::Receiver;
use received::AckState;
use recovery::Recovery;
use repair::RepairScheduler;
use secure::{KeysPending, SecureHandshake};
use send::SymbolSender;
use sent::{AckOutcome, Carried, SentPacket};
use streams::{frame_name, StreamLimits, Streams, Violation};
pub use streams::{ReadOutcome, StreamError};

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
}

/// Bytes a packet spends on its largest symbol frame before the symbol (a
/// repair: type, window, key, density; the symbol runs to the packet's
/// end).
const SYMBOL_FRAME_OVERHEAD: usize = 1 + 8 + 4 + 4 + 1;
/// Smallest datagram a client's first packet is padded to, so that a path
/// that cannot carry full packets fails at once.
pub(crate) const MIN_INITIAL: usize = 1200;
/// Ranges an ACK carries: enough to cover the packets in flight at any loss
/// rate that matters, few enough that acknowledgements stay small.
const ACK_RANGES: usize = 16;
/// Packets acknowledged one by one at the start of a connection, so that
/// the sender's start-up sees the bottleneck's spacing in the first flights
/// (a lone last packet would otherwise wait for the ack delay).
const QUICK_ACKS: u64 = 128;
/// Copies of the client's first Initial flight.
const INITIAL_COPIES: u8 = 3;
/// Each flight after an unanswered one carries [`INITIAL_COPIES`] more, up
/// to this many times as many.
const MAX_INITIAL_FLIGHT_GROWTH: u8 = 4;

/// Copies of the client's Initial flight after `timeouts` probe time-outs
/// without an answer. Loss that comes in bursts takes back-to-back copies
/// together, so a flight that is lost whole says the path is in such a
/// burst, not that it is congested: the next flight is longer, to reach
/// past it (at most 12 copies of 1200 bytes, before the server has sent
/// anything).
fn initial_copies(timeouts: u32) -> u8 {
    let growth = timeouts
        .saturating_add(1)
        .min(u32::from(MAX_INITIAL_FLIGHT_GROWTH)) as u8;
    INITIAL_COPIES * growth
}
/// Probe time-outs double at most this many times.
const MAX_PTO_BACKOFF: u32 = 1;
/// Repair symbols sent at each probe time-out: several, so that a burst of
/// loss does not cost another time-out each time (a path in a bad state
/// loses packets in runs, and a lone probe would wait out each run).
const PROBES: u32 = 4;
/// Each probe time-out in a row sends [`PROBES`] more, up to this many
/// times as many: a run of loss long enough to take a whole round of probes
/// is likely longer than that round, and the next must reach past it.
const MAX_PROBE_GROWTH: u32 = 4;
/// The most unconfirmed symbols a scheme is told of when the data runs
/// out, for tails sized by them (the default sizes its tail by the whole
/// flight instead). The symbols before them had a round trip or more of
/// proactive repair behind them.
const TAIL_SPAN: u64 = 256;
/// The narrowest span of a proactive repair, in source symbols, when the
/// configuration allows it (see `Connection::repair_span`): on a short path
/// a round trip carries few symbols, and a narrower window would need a
/// wider margin for the same residual.
const MIN_REPAIR_SPAN: u64 = 256;
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
}

const TIMERS: usize = 6;
const ALL_TIMERS: [Timer; TIMERS] = [
    Timer::Idle,
    Timer::Ack,
    Timer::Loss,
    Timer::Probe,
    Timer::Pacing,
    Timer::KeepAlive,
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

/// Counters and estimates of a connection, for `stats()`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ConnectionStats {
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Minimum round-trip time seen.
    pub min_rtt: Duration,
    /// Estimated random loss rate of the path towards the peer.
    pub loss_rate: f64,
    /// Estimated mean loss burst, packets.
    pub loss_burst: f64,
    /// Proactive repair symbols per source symbol now.
    pub redundancy: f64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Pacing rate, bytes per second.
    pub pacing_rate: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Datagrams sent.
    pub packets_sent: u64,
    /// Datagrams received and accepted.
    pub packets_received: u64,
    /// Datagrams dropped: malformed, duplicate, unauthenticated or late.
    pub packets_dropped: u64,
    /// Of those, packets that failed authentication (the AEAD tag, a
    /// handshake message, or the plain layer's checksum): never acted on.
    pub packets_unauthentic: u64,
    /// Of those, packets that authenticated but were replays (a number
    /// already accepted, or older than the replay window).
    pub packets_replayed: u64,
    /// Key updates of the packet protection, both directions together.
    pub key_updates: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Source symbols sent.
    pub source_symbols_sent: u64,
    /// Repair symbols sent, all kinds.
    pub repair_symbols_sent: u64,
    /// Of those, sent ahead of need from the loss estimate.
    pub repair_proactive: u64,
    /// Of those, sent in answer to the peer's reported deficit.
    pub repair_reactive: u64,
    /// Of those, sent to protect the tail of a burst of data.
    pub repair_tail: u64,
    /// Of those, sent as probes when feedback stopped.
    pub repair_probe: u64,
    /// Source symbols of the peer decoded from repair symbols (never
    /// received as such).
    pub symbols_repaired: u64,
    /// Repair symbols from the peer that came too late to be used.
    pub repairs_stale: u64,
    /// Repair symbols from the peer that arrived with nothing to solve:
    /// every symbol they cover was known already, or they combined only
    /// equations the decoder held.
    pub repairs_redundant: u64,
    /// ECN-CE marks reported by the peer.
    pub ce_marks: u64,
    /// Retries the client followed (at most one).
    pub retries: u64,
    /// Calls of `poll_transmit` a server answered with nothing because its
    /// client's address was not proved and the anti-amplification limit
    /// left no room for a full datagram (whether or not it had one to send).
    pub amplification_limited: u64,
    /// Stream bytes the application has read.
    pub stream_bytes_read: u64,
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
    amplification: AmplificationLimit,
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
        let mut connection = Connection::new(Side::Client, config, now, seed)?;
        connection.remote_cid = ConnectionId(connection_rng(seed).random());
        connection.handshake.to_send = INITIAL_COPIES;
        Ok(connection)
    }

    /// A client connection that authenticates with `security`'s key pair
    /// to the server whose static public key is `server` (Noise `IK`), and
    /// seals every packet after the handshake. `entropy` must come from a
    /// secure random source: it makes the handshake's ephemeral key.
    pub fn secure_client(
        config: TransportConfig,
        security: SecurityConfig,
        server: PublicKey,
        now: Instant,
        seed: u64,
        entropy: [u8; KEY_LEN],
    ) -> Result<Connection, crate::ConfigError> {
        let mut connection = Connection::client(config, now, seed)?;
        connection.secure = Some(Box::new(SecureHandshake::new(security, entropy)));
        connection.protection = Box::new(KeysPending);
        connection
            .start_secure_client(server)
            .map_err(crate::ConfigError::Handshake)?;
        Ok(connection)
    }

    /// A server connection waiting for a client's first packet, which
    /// must prove a key `security` accepts; see
    /// [`secure_client`](Connection::secure_client).
    pub fn secure_server(
        config: TransportConfig,
        security: SecurityConfig,
        now: Instant,
        seed: u64,
        entropy: [u8; KEY_LEN],
    ) -> Result<Connection, crate::ConfigError> {
        let mut connection = Connection::server(config, now, seed)?;
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
        let controller = config.congestion.build(now, config.max_datagram);
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
            amplification: match side {
                Side::Client => AmplificationLimit::none(),
                Side::Server => AmplificationLimit::unproved(),
            },
            closing: Closing::default(),
            recovery: Recovery::new(&config, controller, now),
            acks: AckState::default(),
            symbol_size: 0,
            sender: SymbolSender::default(),
            repair: RepairScheduler::new(
                config.scheme.build(&config.redundancy, config.max_window),
            ),
            receiver: Receiver::default(),
            streams: Streams::new(side, limits),
            timers: [None; TIMERS],
            events: VecDeque::new(),
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

    /// Counters and estimates.
    pub fn stats(&self) -> ConnectionStats {
        let estimate = self.recovery.loss.estimate();
        ConnectionStats {
            rtt: self.recovery.rtt.smoothed(),
            min_rtt: self.recovery.rtt.min(),
            loss_rate: estimate.rate,
            loss_burst: estimate.burst,
            redundancy: self
                .repair
                .scheme
                .proactive_ratio(&estimate, &self.horizon()),
            cwnd: self.recovery.controller.window(),
            pacing_rate: self.pacing_rate(),
            bytes_in_flight: self.recovery.sent.bytes_in_flight,
            key_updates: self.protection.key_updates(),
            ..self.stats
        }
    }

    // ---- application commands ----

    /// Opens a bidirectional stream.
    pub fn open_stream(&mut self) -> Result<StreamId, StreamError> {
        if self.state != State::Established || self.closing.requested {
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
        if self.state != State::Established {
            return Err(StreamError::NotConnected);
        }
        self.streams.write(id, data)
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
        let drain = match self.state {
            State::Draining(until) => Some(until),
            _ => None,
        };
        self.timers.iter().flatten().copied().chain(drain).min()
    }

    /// Handles the expiry of timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
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
            }
        }
    }

    fn on_probe_timeout(&mut self, now: Instant) {
        self.recovery.pto_count = self.recovery.pto_count.saturating_add(1);
        match self.state {
            State::Handshaking if self.side == Side::Client => {
                self.handshake.to_send = initial_copies(self.recovery.pto_count);
            }
            State::Established => {
                // No feedback for a while: send a repair over everything the
                // peer may lack (it stands in for any lost symbol), or a
                // ping if there is nothing to repair.
                let mut probes = PROBES * self.recovery.pto_count.clamp(1, MAX_PROBE_GROWTH);
                if self.recovery.pto_count == 1
                    && !self.recovery.symbols_acked
                    && self.recovery.rtt.has_sample()
                {
                    // Not one packet of the first flight of symbols came
                    // back within a measured round trip: it most likely
                    // fell whole into a run of loss, and the peer lacks all
                    // of it. Probes enough to replace it whole (each covers
                    // every symbol) make a round of them that gets through
                    // decode it, instead of only bringing back the report
                    // that asks for it. Without a sample (the handshake's
                    // was ambiguous) the round trip is RFC 9002's initial
                    // guess, and the time-out may only have come early.
                    // Once only: a flight whose whole probe round is lost
                    // too is more likely behind an outage, which the small
                    // growing rounds wait out more cheaply.
                    let flight = u32::try_from(self.unconfirmed_symbols()).unwrap_or(u32::MAX);
                    probes = probes.max(flight);
                }
                self.repair.probe_owed = self.repair.probe_owed.max(probes);
                self.detect_losses(now);
                // The repairs that answered the peer's last reported deficit
                // have had their time: take them as lost and answer it
                // again in full, rather than one probe at a time.
                let deficit = self
                    .sender
                    .peer
                    .missing
                    .saturating_sub(self.sender.peer.rank);
                if deficit > 0 {
                    let estimate = self.recovery.loss.estimate();
                    // Nothing is taken as coming: answer all of it.
                    let feedback = Feedback {
                        deficit,
                        settled: deficit,
                        repairs_in_flight: 0,
                        sent_since_report: 0,
                        horizon: self.horizon(),
                        decoded_through: self.sender.peer.decoded_through,
                        covered: None,
                    };
                    self.repair.reactive_owed = self
                        .repair
                        .reactive_owed
                        .max(self.repair.scheme.reactive_repairs(&feedback, &estimate));
                }
            }
            _ => {}
        }
        self.arm_probe(now);
    }

    /// The probe time-out, before its back-off: RFC 9002's, except for a
    /// first flight of symbols. Until the peer acknowledges a packet that
    /// carried one, the round-trip estimate is the handshake's one sample, and
    /// RFC 9002 takes half of it for its variance: three round trips
    /// before the first probe. A first flight that got no acknowledgement
    /// within `RTT × 5/4` (and the peer's acknowledgement delay) most
    /// likely fell whole into a run of loss, and its probes are repairs that
    /// cost a few datagrams if it did not; at 600 ms and 50 % loss in bursts
    /// of 10, a flight and its first probes lost whole waited 1.8 s for
    /// each round of probes, and 10 MB took 2.67 times the ideal (seed 8;
    /// 2.17 with this).
    fn pto(&self) -> Duration {
        let first_flight = self.state == State::Established
            && !self.recovery.symbols_acked
            && self.unconfirmed_symbols() > 0;
        let rtt_part = if first_flight {
            self.recovery.rtt.smoothed() * 5 / 4
        } else {
            self.recovery.rtt.pto_base()
        };
        let base = rtt_part + self.config.max_ack_delay;
        // Back off, but not for long: on a lossy path a run of lost probes
        // is bad luck more often than congestion, and a probe that waits
        // minutes would turn an outage of seconds into a failed transfer.
        base * 2u32.pow(self.recovery.pto_count.min(MAX_PTO_BACKOFF))
    }

    fn arm_probe(&mut self, now: Instant) {
        let outstanding = self.recovery.sent.ack_eliciting_in_flight > 0
            || self.state == State::Handshaking
            || self.unconfirmed_symbols() > 0;
        if outstanding {
            // A server held back by the anti-amplification limit sends no
            // probe, so its last send cannot time the next one.
            let held_back = !self
                .amplification
                .allows(u64::from(self.config.max_datagram));
            let from = if self.state == State::Handshaking || held_back {
                now
            } else {
                self.recovery.last_sent
            };
            self.set_timer(Timer::Probe, from + self.pto());
        } else {
            self.timers[Timer::Probe as usize] = None;
        }
    }

    /// How many of the newest source symbols a proactive repair covers: the
    /// symbols a round trip carries (the congestion window in datagrams), so
    /// that the repairs of a whole flight can make up any loss in it, within
    /// [`MIN_REPAIR_SPAN`] and [`TransportConfig::max_repair_span`]: the
    /// coding cost per repair grows with the span.
    fn repair_span(&self) -> u64 {
        let max = u64::from(self.config.max_repair_span);
        let flight = self.recovery.controller.window() / u64::from(self.config.max_datagram).max(1);
        flight.clamp(MIN_REPAIR_SPAN.min(max), max)
    }

    /// What proactive repair is sized for now.
    fn horizon(&self) -> Horizon {
        Horizon {
            span: self.repair_span(),
            rtt: self.recovery.rtt.smoothed(),
        }
    }

    /// What is in flight, if every repair in flight covers the peer's first
    /// unknown symbol: so it is when the symbols the peer has not decoded
    /// fit in one repair span, since a proactive repair covers the span
    /// before it and the wide ones reach back to the first unknown symbol.
    /// The source symbols counted are those sent before the newest repair
    /// in flight: the ones after it are for repairs not yet sent.
    fn flight_covering_gaps(&self) -> Option<Flight> {
        let encoder = self.sender.encoder.as_ref()?;
        let unconfirmed = encoder
            .next_id()
            .0
            .saturating_sub(self.sender.peer.decoded_through.0);
        (unconfirmed <= self.repair_span()).then(|| Flight {
            sources: self.recovery.sent.sources_in_flight
                - self.recovery.sent.sources_after_last_repair(),
            repairs: self.recovery.sent.repairs_in_flight + self.recovery.sent.proactive_in_flight,
            rtt: self.recovery.rtt.smoothed(),
            at_stake: encoder.next_id().0.saturating_sub(self.sender.busy_since.0),
        })
    }

    /// Source symbols sent that the peer has not yet reported decoded.
    fn unconfirmed_symbols(&self) -> u64 {
        self.sender.encoder.as_ref().map_or(0, |e| {
            e.next_id().0 - self.sender.peer.decoded_through.0.min(e.next_id().0)
        })
    }

    fn set_timer(&mut self, timer: Timer, at: Instant) {
        self.timers[timer as usize] = Some(at);
    }

    fn pacing_rate(&self) -> u64 {
        self.recovery
            .controller
            .pacing_rate(&self.recovery.rtt)
            .unwrap_or_else(|| {
                let srtt = self.recovery.rtt.smoothed().as_secs_f64().max(1e-6);
                ((self.recovery.controller.window() as f64 * 1.25) / srtt) as u64
            })
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
        if !self
            .amplification
            .allows(u64::from(self.config.max_datagram))
        {
            self.stats.amplification_limited += 1;
            return None;
        }
        if self.handshake.to_send > 0 {
            self.handshake.to_send -= 1;
            return Some(self.build_handshake(now));
        }
        if self.state != State::Established {
            return None;
        }
        if self.acks.needed {
            self.acks.needed = false;
            return Some(self.build_ack(now));
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

    fn poll_symbol(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(until) = self.first_data_hold(now) {
            self.set_timer(Timer::Pacing, until);
            return None;
        }
        let encoder = self.sender.encoder.as_ref()?;
        let held = encoder.next_id().0 - encoder.oldest().0;
        let window_open = encoder.next_id().0
            < self.sender.peer.decoded_through.0 + self.sender.peer.window
            && held < u64::from(encoder.config().max_window)
            && self
                .repair
                .scheme
                .may_send_source(encoder.next_id(), self.sender.peer.decoded_through);
        let probe = self.repair.probe_owed > 0 && held > 0;
        let data = window_open && self.streams.has_pending();
        let want_repair = held > 0
            && (self.repair.reactive_owed > 0
                || self.repair.credit >= 1.0
                || self.repair.tail_owed > 0);
        if !(probe || data || want_repair) {
            return None;
        }
        if !probe {
            let size = usize::from(self.config.max_datagram) as u64;
            if self.recovery.sent.bytes_in_flight + size > self.recovery.controller.window() {
                return None;
            }
            let rate = self.pacing_rate();
            let window = self.recovery.controller.window();
            let bucket = self
                .recovery
                .controller
                .pacing_burst(&self.recovery.rtt)
                .map_or(window, |burst| burst.min(window));
            if let Some(at) = self.recovery.pacer.delay(now, size, rate, bucket) {
                self.set_timer(Timer::Pacing, at);
                return None;
            }
        }
        if probe || self.repair.reactive_owed > 0 {
            let reason = if probe {
                self.repair.probe_owed -= 1;
                self.stats.repair_probe += 1;
                RepairReason::Probe
            } else {
                self.repair.reactive_owed -= 1;
                self.stats.repair_reactive += 1;
                RepairReason::Reactive
            };
            return self.build_repair(now, reason);
        }
        if self.repair.credit >= 1.0 && held > 0 {
            self.repair.credit -= 1.0;
            self.stats.repair_proactive += 1;
            return self.build_repair(now, RepairReason::Proactive);
        }
        if data {
            return self.build_source(now);
        }
        if self.repair.tail_owed > 0 {
            self.repair.tail_owed -= 1;
            self.stats.repair_tail += 1;
            return self.build_repair(now, RepairReason::Tail);
        }
        None
    }

    /// The largest packet number this end has received, which the next
    /// packet's truncated number is expanded against.
    pub(crate) fn largest_received(&self) -> Option<PacketNumber> {
        self.acks.received.largest().map(PacketNumber)
    }

    // ---- building packets ----

    /// `id` in as few bytes as the peer's decoder needs to expand it: its
    /// end when the frame arrives is at least the largest it reported, and
    /// at most one past the newest symbol sent, plus what packets sent
    /// after this one but received before it add (the peer accepts none
    /// [`REPLAY_WINDOW`] or more behind its newest, and each packet carries
    /// at most one new symbol).
    fn truncate_symbol_id(&self, id: SymbolId) -> TruncatedSymbolId {
        let sent_end = self.sender.encoder.as_ref().map_or(id, |e| e.next_id());
        let highest_end = SymbolId(sent_end.0.saturating_add(REPLAY_WINDOW));
        TruncatedSymbolId::truncate(id, self.sender.peer.largest_end, highest_end)
    }

    fn begin_packet(&mut self, packet_type: PacketType) -> (Vec<u8>, u64, usize) {
        let number = self.recovery.next_number;
        self.recovery.next_number += 1;
        let mut buf = Vec::with_capacity(usize::from(self.config.max_datagram));
        let header = Header {
            packet_type,
            key_phase: false,
            dcid: self.remote_cid,
            number: TruncatedPacketNumber::truncate(
                PacketNumber(number),
                self.recovery.largest_acked.map(PacketNumber),
            ),
        };
        header.emit(&mut buf);
        let header_len = buf.len();
        (buf, number, header_len)
    }

    fn finish_packet(
        &mut self,
        now: Instant,
        mut buf: Vec<u8>,
        number: u64,
        header_len: usize,
        kind: PacketKind,
        carried: Option<Carried>,
    ) -> Transmit {
        if kind == PacketKind::Handshake && self.handshake_sealed_apart() {
            PlainProtection.seal(number, header_len, &mut buf);
        } else {
            self.protection.seal(number, header_len, &mut buf);
        }
        let size = buf.len() as u64;
        self.amplification.on_sent(size);
        if let Some(carried) = carried {
            self.recovery.sent.on_sent(
                number,
                SentPacket {
                    time: now,
                    size,
                    in_flight: true,
                    carried,
                },
            );
            self.recovery
                .controller
                .on_sent(now, size, self.recovery.sent.bytes_in_flight);
            self.recovery.pacer.on_sent(now, size);
            self.recovery.last_sent = now;
            if self.timers[Timer::Probe as usize].is_none() {
                self.set_timer(Timer::Probe, now + self.pto());
            }
        }
        if let Some(keep_alive) = self.config.keep_alive {
            self.set_timer(Timer::KeepAlive, now + keep_alive);
        }
        self.stats.bytes_sent += size;
        self.stats.packets_sent += 1;
        if self.config.trace {
            self.events.push_back(Event::Trace(TraceEvent::PacketSent {
                number: PacketNumber(number),
                bytes: buf.len(),
                kind,
            }));
        }
        Transmit {
            contents: buf,
            ecn: EcnCodepoint::Ect0,
        }
    }

    fn transport_params(&self) -> TransportParams {
        TransportParams {
            max_datagram: self.config.max_datagram,
            symbol_size: symbol_size(self.config.max_datagram) as u16,
            max_window: self.config.max_window,
            max_data: self.config.receive_window,
            max_stream_data: self.config.stream_receive_window,
            max_streams: self.config.max_streams,
            idle_timeout_ms: self.config.idle_timeout.as_millis() as u64,
        }
    }

    fn build_handshake(&mut self, now: Instant) -> Transmit {
        let packet_type = match self.side {
            Side::Client => PacketType::Initial,
            Side::Server => PacketType::Handshake,
        };
        let (mut buf, number, header_len) = self.begin_packet(packet_type);
        let tag_len = match self.noise_message() {
            Some(message) => {
                Frame::Noise(&message).emit(&mut buf);
                PlainProtection.tag_len()
            }
            None => {
                if self.side == Side::Server {
                    self.emit_ack(now, &mut buf);
                }
                Frame::Handshake(HandshakeFrame {
                    source_cid: self.local_cid,
                    params: self.transport_params(),
                })
                .emit(&mut buf);
                self.protection.tag_len()
            }
        };
        if self.side == Side::Client {
            // Pad the first flight so that the path is known to carry
            // full-size datagrams (and, later, to bound amplification).
            let cookie = self
                .handshake
                .retry_cookie
                .as_deref()
                .map_or(0, InitialDatagram::cookie_overhead);
            let target = MIN_INITIAL.saturating_sub(tag_len + cookie);
            buf.resize(buf.len().max(target), 0);
            self.handshake.attempts += 1;
            // The copies of the first flight leave together: an answer to
            // either is an RTT sample. After a retransmission it is ambiguous.
            if self.handshake.attempts == 1 {
                self.handshake.sent = Some(now);
            } else if self.handshake.attempts > u32::from(INITIAL_COPIES) {
                self.handshake.sent = None;
            }
            self.set_timer(Timer::Probe, now + self.pto());
        }
        let mut transmit =
            self.finish_packet(now, buf, number, header_len, PacketKind::Handshake, None);
        if let (Side::Client, Some(cookie)) = (self.side, self.handshake.retry_cookie.as_deref()) {
            transmit.contents = InitialDatagram::wrap(cookie, &transmit.contents);
            let overhead = InitialDatagram::cookie_overhead(cookie) as u64;
            self.stats.bytes_sent += overhead;
        }
        if self.side == Side::Client {
            self.on_copy_sent(now, number, transmit.contents.len() as u64);
        }
        transmit
    }

    /// A copy of the client's Initial, packet `number` of `bytes`, left at
    /// `now`: the first flight's copies, sent together, are read by the
    /// spacing of their answers.
    fn on_copy_sent(&mut self, now: Instant, number: u64, bytes: u64) {
        if self.handshake.attempts == 1 {
            self.handshake.copy_spacing = Some(CopySpacing::new(number, bytes, now));
        } else if !self
            .handshake
            .copy_spacing
            .as_mut()
            .is_some_and(|spacing| spacing.on_copy(number, bytes, now))
        {
            self.handshake.copy_spacing = None;
        }
    }

    /// An acknowledgement of packets up to `largest` arrived at `now`: if it
    /// answers a copy of the first Initial, the copies' spacing may give
    /// the controller the bottleneck's rate.
    fn on_copy_answer(&mut self, now: Instant, largest: u64) {
        let Some(spacing) = self.handshake.copy_spacing.as_mut() else {
            return;
        };
        match spacing.on_ack(largest, now) {
            Reading::Pending => {}
            Reading::Rate(rate) => {
                self.handshake.copy_spacing = None;
                self.recovery
                    .controller
                    .on_handshake_spacing(now, rate, &self.recovery.rtt);
            }
            Reading::None => self.handshake.copy_spacing = None,
        }
    }

    /// Until when the first data waits for the copies' reading, if it does.
    fn first_data_hold(&mut self, now: Instant) -> Option<Instant> {
        let spacing = self.handshake.copy_spacing.as_mut()?;
        let hold = spacing.hold(now);
        if spacing.is_concluded() {
            self.handshake.copy_spacing = None;
        }
        hold
    }

    fn build_close(&mut self, code: u64, reason: &str) -> Transmit {
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        Frame::Close(CloseFrame {
            code,
            reason: reason.as_bytes(),
        })
        .emit(&mut buf);
        let now = self.recovery.last_sent;
        self.finish_packet(now, buf, number, header_len, PacketKind::Close, None)
    }

    fn build_ping(&mut self, now: Instant) -> Transmit {
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        Frame::Ping.emit(&mut buf);
        self.finish_packet(
            now,
            buf,
            number,
            header_len,
            PacketKind::Ping,
            Some(Carried::Other),
        )
    }

    fn decoder_state(&mut self) -> DecoderState {
        match self.receiver.decoder.as_mut() {
            Some(decoder) => {
                let decoded_through = decoder.next_missing();
                DecoderState {
                    decoded_through,
                    end: decoder_end(decoder),
                    missing: decoder.missing(),
                    rank: decoder.rank() as u64,
                    settled: decoder.deficit_before(self.receiver.newest_window_start),
                }
            }
            None => DecoderState {
                decoded_through: SymbolId(0),
                end: SymbolId(0),
                missing: 0,
                rank: 0,
                settled: 0,
            },
        }
    }

    fn emit_ack(&mut self, now: Instant, buf: &mut Vec<u8>) {
        let ranges = self.acks.received.ranges(ACK_RANGES);
        if ranges.is_empty() {
            return;
        }
        let delay = self
            .acks
            .largest_received_time
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        let ack = AckFrame {
            ranges,
            ack_delay_us: delay.as_micros() as u64,
            ecn: self.acks.ecn,
            decoder: self.decoder_state(),
        };
        Frame::Ack(ack).emit(buf);
        self.acks.eliciting_unacked = 0;
        self.timers[Timer::Ack as usize] = None;
    }

    fn build_ack(&mut self, now: Instant) -> Transmit {
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        self.emit_ack(now, &mut buf);
        self.finish_packet(now, buf, number, header_len, PacketKind::Ack, None)
    }

    fn build_source(&mut self, now: Instant) -> Option<Transmit> {
        let mut symbol = std::mem::take(&mut self.sender.scratch);
        symbol.clear();
        self.streams.fill(
            &mut symbol,
            self.symbol_size,
            &mut self.events,
            self.config.trace,
        );
        if symbol.is_empty() {
            self.sender.scratch = symbol;
            return None;
        }
        let encoder = self.sender.encoder.as_mut()?;
        let idle = encoder.next_id() == encoder.oldest();
        let id = match encoder.push(&symbol) {
            Ok(id) => id,
            Err(EncodeError::IdsExhausted) => {
                self.sender.scratch = symbol;
                self.start_close(
                    now,
                    codes::PROTOCOL_VIOLATION,
                    "symbol ids exhausted".into(),
                    CloseReason::LocallyAborted {
                        code: codes::PROTOCOL_VIOLATION,
                        reason: "symbol ids exhausted".into(),
                    },
                );
                return None;
            }
            Err(e) => unreachable!("the window was checked before building: {e}"),
        };
        if idle {
            self.sender.busy_since = id;
        }
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        // Trailing zeros need not travel: the receiver pads the symbol back.
        let used = symbol.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        Frame::Source(SourceFrame {
            id: self.truncate_symbol_id(id),
            data: &symbol[..used],
        })
        .emit(&mut buf);
        self.sender.scratch = symbol;
        self.stats.source_symbols_sent += 1;
        let estimate = self.recovery.loss.estimate();
        let horizon = self.horizon();
        self.repair.credit =
            self.repair
                .scheme
                .credit_after_source(id, self.repair.credit, &estimate, &horizon);
        // More data followed: the tail was not the end after all.
        self.repair.tail_owed = 0;
        self.repair.tail_armed = true;
        let next = SymbolId(id.0 + 1);
        if !self.streams.has_pending()
            || !self
                .repair
                .scheme
                .may_send_source(next, self.sender.peer.decoded_through)
        {
            self.arm_tail(&estimate);
        }
        self.repair.scheme.on_source_sent(number, id);
        Some(self.finish_packet(
            now,
            buf,
            number,
            header_len,
            PacketKind::Source(id),
            Some(Carried::Source),
        ))
    }

    /// The sender ran out of new data: protect the symbols whose fate is
    /// not known yet, so the tail does not wait for a time-out.
    fn arm_tail(&mut self, estimate: &LossEstimate) {
        if !self.repair.tail_armed {
            return;
        }
        self.repair.tail_armed = false;
        let Some(encoder) = self.sender.encoder.as_ref() else {
            return;
        };
        let reported = self.sender.peer.end.max(self.sender.peer.decoded_through);
        let unconfirmed = encoder
            .next_id()
            .0
            .saturating_sub(reported.0)
            .min(TAIL_SPAN);
        // The link would idle otherwise: protect the last symbols on top of
        // their proactive repairs, so that the last gap rarely waits for a
        // round trip of feedback.
        let flight = Flight {
            sources: self.recovery.sent.sources_in_flight,
            repairs: self.recovery.sent.proactive_in_flight,
            rtt: self.recovery.rtt.smoothed(),
            at_stake: encoder.next_id().0.saturating_sub(self.sender.busy_since.0),
        };
        let tail = self
            .repair
            .scheme
            .tail_repairs(unconfirmed, encoder.next_id(), estimate)
            .max(
                self.repair
                    .scheme
                    .tail_repairs_for_flight(&flight, estimate),
            );
        let credit = self.repair.credit.ceil() as u64;
        self.repair.tail_owed = self.repair.tail_owed.max(tail.max(credit));
        self.repair.credit = 0.0;
    }

    /// A repair symbol for `reason`, over the window and in the code the
    /// redundancy scheme plans (the default: the newest symbols held for
    /// proactive repair, the peer's oldest gaps otherwise).
    fn build_repair(&mut self, now: Instant, reason: RepairReason) -> Option<Transmit> {
        let span = self.repair_span();
        let encoder = self.sender.encoder.as_mut()?;
        if encoder.next_id() == encoder.oldest() {
            return None;
        }
        let range = RepairRange {
            oldest: encoder.oldest(),
            next: encoder.next_id(),
            peer_end: self.sender.peer.end,
            max_span: span,
        };
        let plan = self.repair.scheme.plan_repair(reason, &range)?;
        let key = RepairKey(self.sender.next_repair_key);
        self.sender.next_repair_key = self.sender.next_repair_key.wrapping_add(1);
        let mut data = std::mem::take(&mut self.sender.scratch);
        data.resize(self.symbol_size, 0);
        if encoder
            .repair_with(plan.code, plan.window, key, &mut data)
            .is_err()
        {
            self.sender.scratch = data;
            return None;
        }
        let (mut buf, number, header_len) = self.begin_packet(PacketType::Data);
        Frame::Repair(RepairFrame {
            first: self.truncate_symbol_id(plan.window.first),
            len: plan.window.len,
            key,
            density: plan.code.density_byte(),
            data: &data,
        })
        .emit(&mut buf);
        self.sender.scratch = data;
        self.stats.repair_symbols_sent += 1;
        self.repair.scheme.on_repair_sent(number, reason, &plan);
        Some(self.finish_packet(
            now,
            buf,
            number,
            header_len,
            PacketKind::Repair,
            Some(if reason == RepairReason::Proactive {
                Carried::Repair
            } else {
                Carried::WideRepair
            }),
        ))
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

    // ---- input ----

    /// Handles a datagram that arrived with the given ECN codepoint.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8], ecn: EcnCodepoint) {
        if self.state == State::Closed {
            return;
        }
        self.amplification.on_received(datagram.len());
        if let Some(retry) = RetryPacket::parse(datagram) {
            return self.handle_retry(now, retry);
        }
        let Ok((header, header_len)) = Header::parse(datagram) else {
            self.stats.packets_dropped += 1;
            return;
        };
        let number = header
            .number
            .expand(self.acks.received.largest().map(PacketNumber));
        if header.packet_type != PacketType::Data && self.handshake_sealed_apart() {
            return self.handle_secure_handshake(now, header, number, header_len, datagram);
        }
        let mut packet = datagram.to_vec();
        let end = match self.protection.open(number.0, header_len, &mut packet) {
            Ok(end) => end,
            Err(e) => return self.count_refused(e),
        };
        if header.packet_type == PacketType::Data {
            self.confirm_handshake();
        }
        let accepted = match (self.side, header.packet_type) {
            (Side::Server, PacketType::Initial) => true,
            (Side::Client, PacketType::Handshake) => header.dcid == self.local_cid,
            (_, PacketType::Data) => {
                header.dcid == self.local_cid && self.state != State::Handshaking
            }
            _ => false,
        };
        let previous_largest = self.acks.received.largest();
        if !accepted || !self.acks.received.insert(number.0) {
            self.stats.packets_dropped += 1;
            return;
        }
        if header.packet_type == PacketType::Data {
            // Opened, and addressed to the id only the recipient of this
            // end's handshake answer knows: the peer receives there.
            self.amplification.validate();
        }
        self.stats.packets_received += 1;
        self.stats.bytes_received += datagram.len() as u64;
        match ecn {
            EcnCodepoint::Ect0 => self.acks.ecn.ect0 += 1,
            EcnCodepoint::Ect1 => self.acks.ecn.ect1 += 1,
            EcnCodepoint::Ce => self.acks.ecn.ce += 1,
            EcnCodepoint::NotEct => {}
        }
        if self.acks.received.largest() == Some(number.0) {
            self.acks.largest_received_time = Some(now);
        }
        if self.config.trace {
            self.events
                .push_back(Event::Trace(TraceEvent::PacketReceived {
                    number,
                    bytes: datagram.len(),
                }));
        }
        if let State::Draining(_) = self.state {
            return;
        }
        self.set_timer(Timer::Idle, now + self.config.idle_timeout);
        let payload = &packet[header_len..end];
        let mut ack_eliciting = false;
        for frame in Frames::new(payload) {
            let frame = match frame {
                Ok(frame) => frame,
                Err(e) => {
                    self.violation(
                        now,
                        Violation {
                            code: codes::PROTOCOL_VIOLATION,
                            reason: format!("malformed frame: {e}"),
                        },
                    );
                    return;
                }
            };
            if !matches!(frame, Frame::Ack(_) | Frame::Padding(_) | Frame::Close(_)) {
                ack_eliciting = true;
            }
            if let Err(v) = self.handle_frame(now, header.packet_type, frame) {
                self.violation(now, v);
                return;
            }
            if matches!(self.state, State::Draining(_) | State::Closed) {
                return;
            }
        }
        // A gap (or a late packet) is news: acknowledge at once, so that the
        // sender's loss estimate, repair and rate measurement are not held
        // up by the acknowledgement delay.
        let in_order = previous_largest.is_none_or(|l| l.checked_add(1) == Some(number.0));
        if ack_eliciting {
            self.acks.eliciting_unacked += 1;
            let quick = self.stats.packets_received <= QUICK_ACKS;
            if self.acks.eliciting_unacked >= self.config.ack_frequency || !in_order || quick {
                self.acks.needed = true;
            } else if self.timers[Timer::Ack as usize].is_none() {
                let delay = self
                    .config
                    .max_ack_delay
                    .min(self.recovery.rtt.smoothed() / 4);
                self.set_timer(Timer::Ack, now + delay);
            }
        }
        self.maybe_finish_close(now);
    }

    fn handle_frame(
        &mut self,
        now: Instant,
        packet_type: PacketType,
        frame: Frame<'_>,
    ) -> Result<(), Violation> {
        match frame {
            Frame::Padding(_) | Frame::Ping => {}
            Frame::Handshake(handshake) => self.on_handshake(now, packet_type, &handshake)?,
            Frame::HandshakeDone => {}
            Frame::Ack(ack) => {
                if let Some(largest) = ack.largest() {
                    self.on_copy_answer(now, largest.0);
                }
                if self.state == State::Established {
                    self.on_ack(now, &ack)?;
                }
            }
            Frame::Source(source) => self.on_source(&source)?,
            Frame::Repair(repair) => self.on_repair(&repair)?,
            Frame::Close(close) => {
                let reason = CloseReason::ByPeer {
                    code: close.code,
                    reason: close.reason_lossy().into_owned(),
                };
                self.closing.reason = Some(reason);
                self.state = State::Draining(now + self.pto() * DRAIN_PTOS);
                self.timers = [None; TIMERS];
            }
            other => {
                return Err(Violation {
                    code: codes::PROTOCOL_VIOLATION,
                    reason: format!("frame {} outside a symbol", frame_name(&other)),
                })
            }
        }
        Ok(())
    }

    fn on_handshake(
        &mut self,
        now: Instant,
        packet_type: PacketType,
        handshake: &HandshakeFrame,
    ) -> Result<(), Violation> {
        let expected = match self.side {
            Side::Server => PacketType::Initial,
            Side::Client => PacketType::Handshake,
        };
        if packet_type != expected {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: "handshake in the wrong packet type".into(),
            });
        }
        if self.state == State::Established {
            // A repeated client Initial: our answer was lost; send it again.
            if self.side == Side::Server && handshake.source_cid == self.remote_cid {
                self.handshake.to_send = 1;
            }
            return Ok(());
        }
        self.apply_handshake(now, handshake, true)
    }

    /// Takes the peer's connection id and transport parameters. A secured
    /// server is `established` only later, when the client confirms.
    fn apply_handshake(
        &mut self,
        now: Instant,
        handshake: &HandshakeFrame,
        established: bool,
    ) -> Result<(), Violation> {
        let params = handshake.params;
        self.remote_cid = handshake.source_cid;
        let datagram = params.max_datagram.min(self.config.max_datagram);
        self.symbol_size = symbol_size(datagram);
        let code = Code::default();
        let encoder = Encoder::new(EncoderConfig {
            symbol_size: self.symbol_size,
            max_window: params.max_window,
            code,
        });
        let decoder = Decoder::new(DecoderConfig {
            symbol_size: self.symbol_size,
            max_window: self.config.max_window + DECODER_HISTORY,
            code,
        });
        let (Ok(encoder), Ok(decoder)) = (encoder, decoder) else {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: "transport parameters out of range".into(),
            });
        };
        self.sender.encoder = Some(encoder);
        self.receiver.decoder = Some(decoder);
        self.sender.peer.window = u64::from(params.max_window);
        self.repair.scheme = self
            .config
            .scheme
            .build(&self.config.redundancy, params.max_window);
        self.streams
            .set_peer_limits(params.max_data, params.max_stream_data, params.max_streams);
        if established {
            self.state = State::Established;
        }
        self.recovery.pto_count = 0;
        self.timers[Timer::Probe as usize] = None;
        if self.side == Side::Server {
            self.handshake.to_send = 1;
        }
        if let Some(sent) = self.handshake.sent.take() {
            // Unambiguous only if the Initial went once.
            self.recovery
                .rtt
                .update(Duration::ZERO, now.saturating_duration_since(sent));
            self.recovery
                .controller
                .on_rtt_sample(now, &self.recovery.rtt);
        }
        if self.side == Side::Client && established {
            // The copies' answers are read only by a controller that asks,
            // and only with the handshake's round trip to bound the wait.
            if self.recovery.controller.reads_handshake_spacing() && self.recovery.rtt.has_sample()
            {
                if let Some(spacing) = self.handshake.copy_spacing.as_mut() {
                    if spacing
                        .on_established(now, self.recovery.rtt.latest())
                        .is_none()
                    {
                        self.handshake.copy_spacing = None;
                    }
                }
            } else {
                self.handshake.copy_spacing = None;
            }
        }
        if established {
            self.events.push_back(Event::Connected);
        }
        Ok(())
    }

    fn on_source(&mut self, source: &SourceFrame<'_>) -> Result<(), Violation> {
        if source.data.len() > self.symbol_size {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("source symbol of {} bytes", source.data.len()),
            });
        }
        let Some(decoder) = self.receiver.decoder.as_mut() else {
            return Ok(());
        };
        let id = source.id.expand(decoder_end(decoder));
        let announced = announced_end(decoder, self.config.max_window);
        if id >= announced {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!(
                    "source symbol {id} beyond the announced window, which ends before {announced}",
                ),
            });
        }
        let mut padded = std::mem::take(&mut self.receiver.scratch);
        padded.clear();
        padded.extend_from_slice(source.data);
        padded.resize(self.symbol_size, 0);
        let result = decoder.receive_source(id, &padded);
        self.receiver.scratch = padded;
        match result {
            Ok(_) => {}
            Err(ltx_coding::codec::DecodeError::Duplicate(_))
            | Err(ltx_coding::codec::DecodeError::BeforeWindow { .. }) => return Ok(()),
            Err(e) => {
                return Err(Violation {
                    code: codes::PROTOCOL_VIOLATION,
                    reason: format!("source symbol refused: {e}"),
                })
            }
        }
        self.deliver_symbols(Some(id))
    }

    fn on_repair(&mut self, repair: &RepairFrame<'_>) -> Result<(), Violation> {
        if repair.data.len() != self.symbol_size {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("repair symbol of {} bytes", repair.data.len()),
            });
        }
        let Some(decoder) = self.receiver.decoder.as_mut() else {
            return Ok(());
        };
        let announced = announced_end(decoder, self.config.max_window);
        let window = repair.window(decoder_end(decoder));
        let Some(window_end) = window.end().filter(|end| *end <= announced) else {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!(
                    "repair symbol over {}+{}, beyond the announced window, which ends before {announced}",
                    window.first, window.len
                ),
            });
        };
        self.receiver.newest_window_start = self.receiver.newest_window_start.max(window.first);
        if window_end <= decoder.next_missing() {
            // Everything it covers is known: nothing to learn.
            self.stats.repairs_redundant += 1;
            return Ok(());
        }
        if window.first < decoder.base() {
            self.stats.repairs_stale += 1;
            return Ok(());
        }
        let code = Code::from_density_byte(repair.density).map_err(|e| Violation {
            code: codes::PROTOCOL_VIOLATION,
            reason: e.to_string(),
        })?;
        let mut coefficients = vec![0u8; usize::from(window.len)];
        if code
            .coefficients(window, repair.key, &mut coefficients)
            .is_err()
        {
            return Ok(());
        }
        match decoder.receive_combination(window.first, &coefficients, repair.data) {
            Ok(Outcome::Innovative { .. }) => {}
            Ok(Outcome::Redundant) => self.stats.repairs_redundant += 1,
            Err(ltx_coding::codec::DecodeError::ZeroCoefficients(_))
            | Err(ltx_coding::codec::DecodeError::BeforeWindow { .. }) => return Ok(()),
            Err(e) => {
                return Err(Violation {
                    code: codes::PROTOCOL_VIOLATION,
                    reason: format!("repair symbol refused: {e}"),
                })
            }
        }
        self.deliver_symbols(None)
    }

    /// Hands every newly known symbol's frames to the streams, then lets
    /// the decoder forget what lies well behind its first unknown symbol.
    fn deliver_symbols(&mut self, received: Option<SymbolId>) -> Result<(), Violation> {
        let Some(mut decoder) = self.receiver.decoder.take() else {
            return Ok(());
        };
        let mut result = Ok(());
        while let Some(id) = decoder.poll_decoded() {
            if Some(id) != received {
                self.stats.symbols_repaired += 1;
                if self.config.trace {
                    self.events
                        .push_back(Event::Trace(TraceEvent::SymbolRecovered(id)));
                }
            }
            let Some(symbol) = decoder.symbol(id) else {
                continue;
            };
            for frame in Frames::new(symbol) {
                let applied = match frame {
                    Ok(frame) => self.streams.on_frame(&frame, &mut self.events),
                    Err(e) => Err(Violation {
                        code: codes::PROTOCOL_VIOLATION,
                        reason: format!("malformed frame in symbol {id}: {e}"),
                    }),
                };
                if let Err(v) = applied {
                    result = Err(v);
                    break;
                }
            }
            if result.is_err() {
                break;
            }
        }
        let first_unknown = decoder.next_missing();
        let keep_from = SymbolId(first_unknown.0.saturating_sub(u64::from(DECODER_HISTORY)));
        if keep_from > decoder.base() {
            decoder.consume(keep_from);
        }
        self.receiver.decoder = Some(decoder);
        result
    }

    fn on_ack(&mut self, now: Instant, ack: &AckFrame) -> Result<(), Violation> {
        let Some(largest) = ack.largest() else {
            return Ok(());
        };
        let largest = largest.0;
        if largest >= self.recovery.next_number {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("acknowledgement of packet {largest}, never sent"),
            });
        }
        let mut outcome = AckOutcome::default();
        for range in &ack.ranges {
            self.recovery
                .sent
                .on_ack_range(*range.start(), *range.end(), &mut outcome);
        }
        let newest = self.recovery.largest_acked.is_none_or(|l| largest >= l);
        if newest {
            if let Some(&(number, packet)) = outcome.acked.last() {
                if number == largest {
                    let ack_delay =
                        Duration::from_micros(ack.ack_delay_us).min(self.config.max_ack_delay);
                    self.recovery
                        .rtt
                        .update(ack_delay, now.saturating_duration_since(packet.time));
                    self.recovery.loss_round.on_rtt_sample(
                        now,
                        self.recovery.rtt.smoothed(),
                        self.recovery.rtt.latest(),
                    );
                    self.recovery
                        .controller
                        .on_rtt_sample(now, &self.recovery.rtt);
                }
            }
            self.recovery.largest_acked = Some(largest);
        }
        self.recovery.loss_round.on_acked(
            now,
            self.recovery.rtt.smoothed(),
            outcome.acked.len() as u64,
        );
        for &(number, packet) in &outcome.acked {
            self.recovery.symbols_acked |= packet.carried != Carried::Other;
            self.recovery.loss.on_delivered(number);
            self.repair.scheme.on_packet_acked(number);
            self.recovery.controller.on_ack(
                now,
                packet.time,
                packet.size,
                false,
                &self.recovery.rtt,
            );
        }
        for &number in &outcome.spurious {
            self.recovery.loss.on_spurious(number);
        }
        if ack.ecn.ce > self.recovery.peer_ce {
            let newly = ack.ecn.ce - self.recovery.peer_ce;
            self.recovery.peer_ce = ack.ecn.ce;
            self.stats.ce_marks += newly;
            let sent = outcome.acked.last().map_or(now, |(_, p)| p.time);
            self.recovery
                .controller
                .on_ecn_ce(now, sent, newly, &self.recovery.rtt);
        }
        if !outcome.acked.is_empty() {
            self.recovery.pto_count = 0;
        }
        self.detect_losses(now);

        // The peer's decoder: free what it has, and answer its deficit.
        if newest {
            let state = ack.decoder;
            if state.decoded_through > self.sender.peer.decoded_through {
                self.sender.peer.decoded_through = state.decoded_through;
            }
            if let Some(encoder) = self.sender.encoder.as_mut() {
                if state.end > encoder.next_id() {
                    return Err(Violation {
                        code: codes::PROTOCOL_VIOLATION,
                        reason: format!("peer reports symbol {} never sent", state.end),
                    });
                }
                encoder.acknowledge(self.sender.peer.decoded_through);
            }
            self.sender.peer.end = state.end;
            self.sender.peer.largest_end = self.sender.peer.largest_end.max(state.end);
            self.sender.peer.missing = state.missing;
            self.sender.peer.rank = state.rank;
            let estimate = self.recovery.loss.estimate();
            // The decoder lacks `missing − rank` equations: repairs it holds
            // but could not yet solve with count already.
            let deficit = state.missing.saturating_sub(state.rank);
            let next = self
                .sender
                .encoder
                .as_ref()
                .map_or(state.end, |e| e.next_id());
            let feedback = Feedback {
                deficit,
                settled: state.settled,
                repairs_in_flight: self.recovery.sent.repairs_in_flight,
                sent_since_report: next.0.saturating_sub(state.end.0),
                horizon: self.horizon(),
                decoded_through: self.sender.peer.decoded_through,
                // Nothing to answer without a deficit, and finding the
                // flight walks the packets in flight.
                covered: (deficit > 0).then(|| self.flight_covering_gaps()).flatten(),
            };
            let mut owed = self.repair.scheme.reactive_repairs(&feedback, &estimate);
            if owed > 0 && !self.streams.has_pending() {
                // Nothing else to send: the link is ours, and another round
                // trip for the last gap costs more than a few repairs.
                owed *= 2;
            }
            self.repair.reactive_owed = owed;
        }
        if self.config.trace {
            let estimate = self.recovery.loss.estimate();
            self.events
                .push_back(Event::Trace(TraceEvent::Metrics(Metrics {
                    cwnd: self.recovery.controller.window(),
                    bytes_in_flight: self.recovery.sent.bytes_in_flight,
                    srtt: self.recovery.rtt.smoothed().as_secs_f64(),
                    min_rtt: self.recovery.rtt.min().as_secs_f64(),
                    loss_rate: estimate.rate,
                    burst: estimate.burst,
                    redundancy: self
                        .repair
                        .scheme
                        .proactive_ratio(&estimate, &self.horizon()),
                    peer_decoded_through: self.sender.peer.decoded_through.0,
                    peer_missing: self.sender.peer.missing,
                    peer_rank: self.sender.peer.rank,
                    next_symbol: self.sender.encoder.as_ref().map_or(0, |e| e.next_id().0),
                })));
        }
        if self.unconfirmed_symbols() == 0 {
            self.repair.tail_owed = 0;
        }
        self.arm_probe(now);
        self.maybe_finish_close(now);
        Ok(())
    }

    fn detect_losses(&mut self, now: Instant) {
        let Some(largest) = self.recovery.largest_acked else {
            return;
        };
        let rtt = self.recovery.rtt.latest().max(self.recovery.rtt.smoothed());
        let loss_delay = (rtt * 9 / 8).max(Duration::from_millis(1));
        let (lost, next) = self.recovery.sent.detect_losses(now, largest, loss_delay);
        match next {
            Some(at) => self.set_timer(Timer::Loss, at),
            None => self.timers[Timer::Loss as usize] = None,
        }
        if lost.is_empty() {
            return;
        }
        for &(number, _) in &lost {
            self.recovery.loss.on_lost(number);
            self.repair.scheme.on_packet_lost(number);
            if self.config.trace {
                self.events.push_back(Event::Trace(TraceEvent::PacketLost {
                    number: PacketNumber(number),
                }));
            }
        }
        self.stats.packets_lost += lost.len() as u64;
        self.recovery
            .loss_round
            .on_lost(now, self.recovery.rtt.smoothed(), lost.len() as u64);
        let above = self
            .recovery
            .loss_round
            .above_baseline(&self.recovery.loss.estimate(), &self.recovery.rtt);
        // One call per packet, with its own send time: controllers that
        // measure the bottleneck need to know where each loss fell.
        for &(_, packet) in &lost {
            self.recovery.controller.on_loss(
                now,
                packet.time,
                packet.size,
                above,
                &self.recovery.rtt,
            );
        }
    }
}

/// One past the newest source symbol the peer may have sent: it sends
/// none beyond `max_window` past the first one this end reported it lacks,
/// and its reports only lag this end's decoder.
fn announced_end(decoder: &mut Decoder, max_window: u16) -> SymbolId {
    let next = decoder.next_missing();
    SymbolId(next.0.saturating_add(u64::from(max_window)))
}

/// The end this end's decoder reports (one past the newest symbol referred
/// to, at least its first unknown one), which the peer truncates symbol ids
/// against and this end expands them against.
fn decoder_end(decoder: &mut Decoder) -> SymbolId {
    decoder.end().max(decoder.next_missing())
}

fn connection_rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}
