//! What an endpoint reports about itself: what it holds now, and counts
//! over every connection it has held, closed ones included, so that they
//! never go back (what a metrics exporter needs).

use ltx_proto::accept::AcceptStats;
use ltx_proto::{CloseReason, ConnectionStats};

/// What an endpoint holds and what it refused, for watching it under load.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndpointStats {
    /// Connections it holds, in any state.
    pub connections: usize,
    /// Of those, how many each of its drivers holds
    /// ([`EndpointConfig::drivers`](crate::EndpointConfig::drivers)).
    pub connections_per_driver: Vec<usize>,
    /// Of those, server connections whose handshake is not complete (or
    /// whose client's address is not yet proved).
    pub half_open: usize,
    /// Datagrams that reached the socket but no connection (see
    /// [`Endpoint::unroutable_datagrams`](crate::Endpoint::unroutable_datagrams)).
    pub unroutable: u64,
    /// Clients whose handshake a server connection refused (see
    /// [`Endpoint::handshakes_refused`](crate::Endpoint::handshakes_refused)).
    pub handshakes_refused: u64,
    /// What its acceptor decided about first packets: retries sent,
    /// cookies refused, limits reached.
    pub accept: AcceptStats,
    /// Counts over every connection it has held, closed ones included.
    pub totals: EndpointTotals,
    /// The statistics of each connection it holds now.
    pub open: Vec<ConnectionStats>,
}

/// What an endpoint's connections did, summed over all of them since the
/// endpoint was bound (see [`EndpointStats::totals`](crate::EndpointStats)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EndpointTotals {
    /// Connections this endpoint opened (as a client).
    pub connections_opened: u64,
    /// Connections it accepted a first packet for (as a server).
    pub connections_accepted: u64,
    /// Handshakes that completed.
    pub handshakes_completed: u64,
    /// Retries a client followed.
    pub retries: u64,
    /// How the connections that ended, ended.
    pub closed: ClosedConnections,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Datagrams sent.
    pub packets_sent: u64,
    /// Datagrams received and accepted.
    pub packets_received: u64,
    /// Datagrams that failed authentication.
    pub packets_unauthentic: u64,
    /// Datagrams that authenticated but were replays.
    pub packets_replayed: u64,
    /// First flights whose early data was refused: a server counts each
    /// flight it refused (a replay, a stamp outside the window, a record
    /// full or just started), a client each of its flights refused.
    pub early_data_refused: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Source symbols sent.
    pub source_symbols_sent: u64,
    /// Repair symbols sent ahead of loss.
    pub repair_proactive: u64,
    /// Repair symbols sent for a deficit the peer reported.
    pub repair_reactive: u64,
    /// Repair symbols sent for the tail of the data.
    pub repair_tail: u64,
    /// Repair symbols sent at a probe time-out.
    pub repair_probe: u64,
    /// The peer's source symbols decoded from repair symbols.
    pub symbols_repaired: u64,
    /// Stream bytes the application read.
    pub stream_bytes_read: u64,
    /// Key updates of the packet protection, both directions.
    pub key_updates: u64,
}

/// Connections that ended, by how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClosedConnections {
    /// Closed gracefully by either end (an abort with code 0, "no error",
    /// included).
    pub clean: u64,
    /// Aborted by either end's application, with an error code.
    pub aborted: u64,
    /// Nothing heard for the idle time-out.
    pub idle_timeout: u64,
    /// The handshake got no answer.
    pub handshake_timeout: u64,
    /// The peer's address answered that nothing listens, or could not be
    /// reached.
    pub unreachable: u64,
    /// The peer broke the protocol.
    pub protocol_violation: u64,
    /// A server refused the client's handshake.
    pub handshake_refused: u64,
}

impl ClosedConnections {
    /// Counts one connection that ended for `reason`.
    pub(crate) fn count(&mut self, reason: &CloseReason) {
        let counter = match reason {
            CloseReason::LocallyClosed
            | CloseReason::ByPeer { code: 0, .. }
            | CloseReason::LocallyAborted { code: 0, .. } => &mut self.clean,
            CloseReason::ByPeer { .. } | CloseReason::LocallyAborted { .. } => &mut self.aborted,
            CloseReason::IdleTimeout => &mut self.idle_timeout,
            CloseReason::HandshakeTimeout => &mut self.handshake_timeout,
            CloseReason::Unreachable(_) => &mut self.unreachable,
            CloseReason::ProtocolViolation(_) => &mut self.protocol_violation,
            CloseReason::HandshakeRefused(_) => &mut self.handshake_refused,
        };
        *counter += 1;
    }
}

impl ClosedConnections {
    /// Adds `other`'s counts.
    fn merge(&mut self, other: &ClosedConnections) {
        self.clean += other.clean;
        self.aborted += other.aborted;
        self.idle_timeout += other.idle_timeout;
        self.handshake_timeout += other.handshake_timeout;
        self.unreachable += other.unreachable;
        self.protocol_violation += other.protocol_violation;
        self.handshake_refused += other.handshake_refused;
    }
}

/// Adds `other`'s counts to `into` (the acceptors of an endpoint's
/// drivers, summed).
pub(crate) fn add_accept_stats(into: &mut AcceptStats, other: &AcceptStats) {
    into.retries_sent += other.retries_sent;
    into.accepted_unvalidated += other.accepted_unvalidated;
    into.accepted_with_cookie += other.accepted_with_cookie;
    into.cookies_invalid += other.cookies_invalid;
    into.cookies_expired += other.cookies_expired;
    into.not_initial += other.not_initial;
    into.too_short += other.too_short;
    into.half_open_limit += other.half_open_limit;
    into.address_limit += other.address_limit;
}

impl EndpointTotals {
    /// Adds `other`'s counts (those of another of the endpoint's drivers).
    pub(crate) fn merge(&mut self, other: &EndpointTotals) {
        self.connections_opened += other.connections_opened;
        self.connections_accepted += other.connections_accepted;
        self.handshakes_completed += other.handshakes_completed;
        self.closed.merge(&other.closed);
        self.retries += other.retries;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.packets_sent += other.packets_sent;
        self.packets_received += other.packets_received;
        self.packets_unauthentic += other.packets_unauthentic;
        self.packets_replayed += other.packets_replayed;
        self.early_data_refused += other.early_data_refused;
        self.packets_lost += other.packets_lost;
        self.source_symbols_sent += other.source_symbols_sent;
        self.repair_proactive += other.repair_proactive;
        self.repair_reactive += other.repair_reactive;
        self.repair_tail += other.repair_tail;
        self.repair_probe += other.repair_probe;
        self.symbols_repaired += other.symbols_repaired;
        self.stream_bytes_read += other.stream_bytes_read;
        self.key_updates += other.key_updates;
    }

    /// Adds the counters of one connection's `stats`.
    pub(crate) fn add(&mut self, stats: &ConnectionStats) {
        self.retries += stats.retries;
        self.bytes_sent += stats.bytes_sent;
        self.bytes_received += stats.bytes_received;
        self.packets_sent += stats.packets_sent;
        self.packets_received += stats.packets_received;
        self.packets_unauthentic += stats.packets_unauthentic;
        self.packets_replayed += stats.packets_replayed;
        self.early_data_refused += stats.early_refused;
        self.packets_lost += stats.packets_lost;
        self.source_symbols_sent += stats.source_symbols_sent;
        self.repair_proactive += stats.repair_proactive;
        self.repair_reactive += stats.repair_reactive;
        self.repair_tail += stats.repair_tail;
        self.repair_probe += stats.repair_probe;
        self.symbols_repaired += stats.symbols_repaired;
        self.stream_bytes_read += stats.stream_bytes_read;
        self.key_updates += stats.key_updates;
    }
}
