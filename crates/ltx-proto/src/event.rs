//! What a connection tells its driver through `poll_event`.

use crate::recovery::RepairReason;
use crate::wire::{PacketNumber, StreamId};
use ltx_coding::{SymbolId, Window};

/// Something the application or driver should know.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The handshake completed: streams can be used.
    Connected,
    /// The peer opened a stream; take it with `accept_stream`.
    StreamOpened(StreamId),
    /// A stream has data (or its end) to read.
    StreamReadable(StreamId),
    /// A stream that refused data has room again.
    StreamWritable(StreamId),
    /// The peer reset a stream: its data will not all arrive.
    StreamReset {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        code: u64,
    },
    /// The peer asked us to stop sending on a stream.
    StopSending {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        code: u64,
    },
    /// The connection ended; nothing more will happen.
    Closed(CloseReason),
    /// A trace event (only with `TransportConfig::set_trace`).
    Trace(TraceEvent),
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// This end closed it gracefully, after all its data was delivered.
    LocallyClosed,
    /// This end aborted it.
    LocallyAborted {
        /// The code sent to the peer.
        code: u64,
        /// The reason sent to the peer.
        reason: String,
    },
    /// The peer closed it (code 0 is a graceful close).
    ByPeer {
        /// The peer's code.
        code: u64,
        /// The peer's reason.
        reason: String,
    },
    /// Nothing was received for the idle timeout.
    IdleTimeout,
    /// The peer did not answer the handshake.
    HandshakeTimeout,
    /// The peer's address could not be reached during the handshake: its
    /// host answered that nothing listens on that port, or that it cannot
    /// be reached (an ICMP error, which the driver reports through
    /// `Connection::handle_unreachable`).
    Unreachable(Unreachable),
    /// The peer broke the protocol; the connection was closed with this
    /// reason sent to it.
    ProtocolViolation(String),
    /// A server refused a client's handshake (its key, or the key it
    /// expected of the server, or the pre-shared key, did not match; or
    /// its key is not allowed). Nothing was sent to the client.
    HandshakeRefused(crate::protection::HandshakeError),
}

/// Why a peer's address could not be reached, from the ICMP error its
/// host or a router sent back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unreachable {
    /// Nothing listens on the port (ICMP port unreachable).
    PortClosed,
    /// The host or its network cannot be reached (ICMP host, network or
    /// administratively prohibited unreachable).
    HostUnreachable,
}

/// Error codes carried in CLOSE frames.
pub mod codes {
    /// Graceful close.
    pub const NO_ERROR: u64 = 0x00;
    /// The peer broke the protocol.
    pub const PROTOCOL_VIOLATION: u64 = 0x01;
    /// The peer sent more than flow control allowed.
    pub const FLOW_CONTROL: u64 = 0x02;
    /// The peer opened more streams than allowed.
    pub const STREAM_LIMIT: u64 = 0x03;
    /// The application aborted.
    pub const APPLICATION: u64 = 0x10;
}

/// What a packet carried, for traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketKind {
    /// Handshake.
    Handshake,
    /// A source symbol.
    Source(SymbolId),
    /// A repair symbol over `window`, sent for `reason`.
    Repair {
        /// Why it was sent.
        reason: RepairReason,
        /// The source symbols it combines.
        window: Window,
    },
    /// Acknowledgements only.
    Ack,
    /// A ping (probe or keep-alive).
    Ping,
    /// A close.
    Close,
}

/// A trace event: what `ltx-qlog` writes as qlog.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceEvent {
    /// A packet left.
    PacketSent {
        /// Its number.
        number: PacketNumber,
        /// Bytes on the wire.
        bytes: usize,
        /// What it carried.
        kind: PacketKind,
    },
    /// A packet arrived and opened.
    PacketReceived {
        /// Its number.
        number: PacketNumber,
        /// Bytes on the wire.
        bytes: usize,
    },
    /// A packet was declared lost.
    PacketLost {
        /// Its number.
        number: PacketNumber,
    },
    /// A source symbol that never arrived was decoded from repair symbols.
    SymbolRecovered(SymbolId),
    /// Stream bytes were put in a symbol for the first time.
    StreamDataSent {
        /// The stream.
        id: StreamId,
        /// First byte's offset.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// The sender's state after an acknowledgement.
    Metrics(Metrics),
}

/// The sender's congestion and recovery state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
    /// Smoothed RTT, seconds.
    pub srtt: f64,
    /// Minimum RTT, seconds.
    pub min_rtt: f64,
    /// The latest RTT sample, seconds.
    pub latest_rtt: f64,
    /// The pacing rate, bytes per second.
    pub pacing_rate: u64,
    /// Estimated random loss rate.
    pub loss_rate: f64,
    /// Estimated mean loss burst, packets.
    pub burst: f64,
    /// Proactive repair symbols per source symbol.
    pub redundancy: f64,
    /// The peer's first undecoded symbol, as last reported.
    pub peer_decoded_through: u64,
    /// Symbols the peer lacks, as last reported.
    pub peer_missing: u64,
    /// Equations the peer holds over them.
    pub peer_rank: u64,
    /// Source symbols sent so far.
    pub next_symbol: u64,
}
