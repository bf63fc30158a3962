//! The counters and estimates a connection reports.

use std::time::Duration;

/// Counters and estimates of a connection, for `stats()`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ConnectionStats {
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Whether `rtt` and `min_rtt` come from a measurement. An end that
    /// only receives (it sends nothing that is acknowledged) may never
    /// take one; its figures are then the configured initial RTT.
    pub rtt_measured: bool,
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
    /// EarlyData packets a client sent in its first flight.
    pub early_packets_sent: u64,
    /// First flights whose early data the server refused: counted by the
    /// server that refused and by the client it told.
    pub early_refused: u64,
    /// Key updates of the packet protection, both directions together.
    pub key_updates: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// The peer's packets that did not arrive: gaps in the packet numbers
    /// received (a packet still on its way counts until it comes). With
    /// `packets_received`, the loss this end sees on the path towards it.
    pub packets_missing: u64,
    /// Source symbols sent.
    pub source_symbols_sent: u64,
    /// Repair symbols sent, all kinds.
    pub repair_symbols_sent: u64,
    /// Of those, sent ahead of need from the loss estimate.
    pub repair_proactive: u64,
    /// Of those, sent in answer to the peer's reported deficit.
    pub repair_reactive: u64,
    /// Of those, sent to protect the tail of a burst of data, or a message
    /// sent in the middle of other data.
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
    /// Streams with a half still in use (data or an end to send or to
    /// read); closed and reset streams do not count.
    pub streams_open: u64,
    /// Times the peer's newest packet came from a new address, which this
    /// end then validated.
    pub path_changes: u64,
    /// New addresses of the peer that answered their challenge.
    pub paths_validated: u64,
    /// New addresses of the peer that did not answer in time, abandoned
    /// for the one before.
    pub path_validations_failed: u64,
}

impl ConnectionStats {
    /// The fraction of the peer's packets that did not arrive, from the
    /// gaps in their numbers: the loss of the path towards this end as it
    /// was dealt (`loss_rate` estimates the other direction's).
    pub fn incoming_loss(&self) -> f64 {
        let numbered = self.packets_missing + self.packets_received;
        if numbered == 0 {
            return 0.0;
        }
        self.packets_missing as f64 / numbered as f64
    }
}

impl super::Connection {
    /// Counters and estimates.
    pub fn stats(&self) -> ConnectionStats {
        let estimate = self.recovery.loss.estimate();
        ConnectionStats {
            rtt: self.recovery.rtt.smoothed(),
            rtt_measured: self.recovery.rtt.has_sample(),
            min_rtt: self.recovery.rtt.min(),
            loss_rate: estimate.rate,
            loss_burst: estimate.burst,
            redundancy: self
                .repair
                .scheme
                .proactive_ratio(&estimate, &self.horizon()),
            cwnd: self.recovery.controller.window(),
            pacing_rate: self.recovery.pacing_rate(),
            bytes_in_flight: self.recovery.sent.bytes_in_flight,
            key_updates: self.protection.key_updates(),
            packets_missing: self.acks.received.missing(),
            streams_open: self.streams.open_count(),
            ..self.stats
        }
    }
}
