//! Address validation: a server's anti-amplification limit until the
//! client's address is proved, and a client's answer to a retry.
//!
//! A server that answers a spoofed first packet sends to a host that never
//! asked. Until the client proves it receives at its address (a retry
//! cookie came back, or a packet arrived that only the recipient of the
//! server's answer could have made), the server sends at most
//! [`AMPLIFICATION_FACTOR`] times the bytes it received from it, so a
//! spoofer gains little by reflecting off it.

use std::time::Instant;

use super::{Connection, State, INITIAL_COPIES};
use crate::accept::packet::RetryPacket;
use crate::wire::Side;

/// Bytes a server may send to an unproved address per byte received from
/// it (RFC 9000 §8 uses the same factor).
pub const AMPLIFICATION_FACTOR: u64 = 3;

/// What a server has received from and sent to its client's address while
/// the address is not proved.
#[derive(Debug, Clone, Copy)]
pub(super) struct AmplificationLimit {
    validated: bool,
    received: u64,
    sent: u64,
}

impl AmplificationLimit {
    /// No limit: a client's own connection, whose peer it chose.
    pub(super) fn none() -> AmplificationLimit {
        AmplificationLimit {
            validated: true,
            received: 0,
            sent: 0,
        }
    }

    /// A server's connection, until its client's address is proved.
    pub(super) fn unproved() -> AmplificationLimit {
        AmplificationLimit {
            validated: false,
            ..AmplificationLimit::none()
        }
    }

    pub(super) fn on_received(&mut self, bytes: usize) {
        if !self.validated {
            self.received += bytes as u64;
        }
    }

    pub(super) fn on_sent(&mut self, bytes: u64) {
        if !self.validated {
            self.sent += bytes;
        }
    }

    pub(super) fn validate(&mut self) {
        self.validated = true;
    }

    pub(super) fn is_validated(&self) -> bool {
        self.validated
    }

    /// Whether a datagram of up to `bytes` may be sent. The connection asks
    /// before it builds a packet, with the largest it could build.
    pub(super) fn allows(&self, bytes: u64) -> bool {
        self.validated || self.sent + bytes <= self.received * AMPLIFICATION_FACTOR
    }
}

impl Connection {
    /// Declares the peer's address proved: a server's driver calls it on a
    /// connection made from an Initial that brought back a valid retry
    /// cookie (see [`crate::accept`]). The anti-amplification limit no
    /// longer applies.
    pub fn validate_address(&mut self) {
        self.amplification.validate();
    }

    /// Whether the peer's address is proved, so that what this end sends
    /// is not limited to [`AMPLIFICATION_FACTOR`] times what it received
    /// (always, on a client).
    pub fn is_address_validated(&self) -> bool {
        self.amplification.is_validated()
    }

    /// A retry from the server: send the first flight again with its
    /// cookie. A client follows one retry, and only one that answers its
    /// Initial before anything else came from the server.
    pub(super) fn handle_retry(&mut self, now: Instant, retry: RetryPacket<'_>) {
        let fresh = self.side == Side::Client
            && self.state == State::Handshaking
            && self.handshake.retry_cookie.is_none()
            && self.stats.packets_received == 0
            && retry.initial_dcid == self.remote_cid;
        if !fresh {
            self.stats.packets_dropped += 1;
            return;
        }
        self.handshake.retry_cookie = Some(retry.cookie.to_vec());
        self.stats.retries += 1;
        self.handshake.to_send = INITIAL_COPIES;
        // The next flight is the one to time for the first RTT sample.
        self.handshake.attempts = 0;
        self.handshake.sent = None;
        self.arm_probe(now);
    }
}
