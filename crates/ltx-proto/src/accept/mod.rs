//! A server's admission of new connections, sans IO: for a datagram from
//! an address that no connection claims, whether to answer with a retry,
//! refuse it, or create a connection.
//!
//! The [`Acceptor`] keeps no state per client. A retry carries a cookie
//! (see [`packet`]) bound to the client's address, port and Initial
//! connection id, with an expiry, authenticated with the server's secret;
//! the client sends its first flight again with the cookie, and only then
//! does the server create a connection, whose address is then proved (no
//! anti-amplification limit). When to ask for a retry is the
//! [`RetryPolicy`]; the [`AcceptConfig`] limits bound how many
//! connections exist whatever arrives.
//!
//! The driver owns the connections: it routes a datagram to the
//! connection its ids name, and hands only the rest to
//! [`Acceptor::handle`], with the [`ServerLoad`] it counts.
//!
//! ```
//! use std::time::Instant;
//! use ltx_proto::accept::{Acceptor, Decision, ServerLoad};
//! use ltx_proto::config::{AcceptConfig, RetryPolicy};
//! use ltx_proto::{Connection, TransportConfig};
//!
//! let now = Instant::now();
//! let config = AcceptConfig { retry: RetryPolicy::Always, ..AcceptConfig::default() };
//! let mut acceptor = Acceptor::new(config, [7; 32], now);
//! let mut client = Connection::client(TransportConfig::default(), now, 1)?;
//! let from = "192.0.2.1:4433".parse()?;
//!
//! // The first Initial gets a retry, and the server keeps nothing.
//! let first = client.poll_transmit(now).expect("an initial");
//! let Decision::Retry(retry) = acceptor.handle(now, from, &first.contents, ServerLoad::default())
//! else { panic!("a retry") };
//! client.handle_datagram(now, &retry, first.ecn);
//!
//! // The client sends its Initial again, with the cookie: accepted.
//! let again = client.poll_transmit(now).expect("the initial again");
//! let Decision::Accept(accepted) = acceptor.handle(now, from, &again.contents, ServerLoad::default())
//! else { panic!("accepted") };
//! assert!(accepted.address_validated);
//! let mut server = Connection::server(TransportConfig::default(), now, 2)?;
//! server.validate_address();
//! server.handle_datagram(now, accepted.packet, again.ecn);
//! assert!(server.poll_transmit(now).is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cookie;
pub mod packet;

use std::net::SocketAddr;
use std::time::Instant;

use crate::config::{AcceptConfig, RetryPolicy};
use crate::connection::MIN_INITIAL;
use crate::wire::ConnectionId;
pub use cookie::CookieError;
use cookie::CookieKey;
use packet::{InitialDatagram, RetryPacket};

/// What the driver counts of its connections, for one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerLoad {
    /// Server connections created whose handshake is not complete.
    pub half_open: usize,
    /// Connections (any state) with the sender's IP address.
    pub from_same_ip: usize,
}

/// An Initial the acceptor took: make a server connection and hand it the
/// packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted<'a> {
    /// The Initial packet, without the cookie: what the connection reads.
    pub packet: &'a [u8],
    /// Its destination connection id, with the address the route of the
    /// client's further Initials until the handshake gives it another.
    pub dcid: ConnectionId,
    /// Whether a cookie proved the address: then call
    /// [`Connection::validate_address`](crate::Connection::validate_address)
    /// on the new connection.
    pub address_validated: bool,
}

/// Why a datagram made no connection. Nothing is sent back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not an Initial packet (nor one with a cookie).
    #[error("not an initial packet")]
    NotInitial,
    /// An Initial datagram smaller than a client's padded first flight:
    /// answering it could amplify a spoofed sender's traffic.
    #[error("initial datagram of {0} bytes, below the minimum")]
    TooShort(usize),
    /// A cookie that was not this server's for this address, or expired.
    #[error(transparent)]
    Cookie(#[from] CookieError),
    /// As many handshakes as allowed are half-open.
    #[error("too many half-open handshakes")]
    HalfOpenLimit,
    /// As many connections as allowed come from the sender's IP address.
    #[error("too many connections from one address")]
    AddressLimit,
}

/// What to do with a datagram no connection claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<'a> {
    /// Create a connection.
    Accept(Accepted<'a>),
    /// Send this retry to the sender, and keep nothing.
    Retry(Vec<u8>),
    /// Drop it, and keep nothing.
    Refuse(Refusal),
}

/// What an acceptor decided, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AcceptStats {
    /// Retries sent.
    pub retries_sent: u64,
    /// Connections accepted without a cookie (address not yet proved).
    pub accepted_unvalidated: u64,
    /// Connections accepted with a valid cookie.
    pub accepted_with_cookie: u64,
    /// Cookies refused as not authentic: forged, corrupted, or sent from
    /// another address or for another connection than they were made for.
    pub cookies_invalid: u64,
    /// Cookies refused as expired.
    pub cookies_expired: u64,
    /// Datagrams that were not Initials.
    pub not_initial: u64,
    /// Initial datagrams refused as too short.
    pub too_short: u64,
    /// Initials refused at the half-open limit.
    pub half_open_limit: u64,
    /// Initials refused at the per-address limit.
    pub address_limit: u64,
}

/// Decides, without state per client, what becomes of a datagram that no
/// connection claimed.
pub struct Acceptor {
    config: AcceptConfig,
    cookies: CookieKey,
    stats: AcceptStats,
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("config", &self.config)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Acceptor {
    /// An acceptor with `config`, whose cookies are authenticated with
    /// `secret` (32 bytes from a secure random source, kept for the life
    /// of the server) and expire relative to `now`.
    pub fn new(config: AcceptConfig, secret: [u8; 32], now: Instant) -> Acceptor {
        Acceptor {
            config,
            cookies: CookieKey::new(secret, now),
            stats: AcceptStats::default(),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &AcceptConfig {
        &self.config
    }

    /// What it decided so far.
    pub fn stats(&self) -> AcceptStats {
        self.stats
    }

    /// Decides what becomes of `datagram` from `from`, which no connection
    /// claimed, given the driver's `load`.
    pub fn handle<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &'a [u8],
        load: ServerLoad,
    ) -> Decision<'a> {
        match self.decide(now, from, datagram, load) {
            Ok(decision) => decision,
            Err(refusal) => {
                let counter = match refusal {
                    Refusal::NotInitial => &mut self.stats.not_initial,
                    Refusal::TooShort(_) => &mut self.stats.too_short,
                    Refusal::Cookie(CookieError::Invalid) => &mut self.stats.cookies_invalid,
                    Refusal::Cookie(CookieError::Expired) => &mut self.stats.cookies_expired,
                    Refusal::HalfOpenLimit => &mut self.stats.half_open_limit,
                    Refusal::AddressLimit => &mut self.stats.address_limit,
                };
                *counter += 1;
                Decision::Refuse(refusal)
            }
        }
    }

    fn decide<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &'a [u8],
        load: ServerLoad,
    ) -> Result<Decision<'a>, Refusal> {
        let initial = InitialDatagram::parse(datagram).ok_or(Refusal::NotInitial)?;
        // Even a retry must not answer a small datagram: with the client's
        // padding every answer is far smaller than what it answers.
        if datagram.len() < MIN_INITIAL {
            return Err(Refusal::TooShort(datagram.len()));
        }
        if load.from_same_ip >= self.config.max_connections_per_ip {
            return Err(Refusal::AddressLimit);
        }
        let accepted = |address_validated| Accepted {
            packet: initial.packet,
            dcid: initial.dcid,
            address_validated,
        };
        if let Some(cookie) = initial.cookie {
            self.cookies.verify(now, from, initial.dcid, cookie)?;
            if load.half_open >= self.config.max_half_open {
                return Err(Refusal::HalfOpenLimit);
            }
            self.stats.accepted_with_cookie += 1;
            return Ok(Decision::Accept(accepted(true)));
        }
        let retry = match self.config.retry {
            RetryPolicy::Never => false,
            RetryPolicy::Always => true,
            RetryPolicy::AboveHalfOpen(threshold) => load.half_open >= threshold,
        };
        if retry {
            let cookie = self
                .cookies
                .mint(now, self.config.cookie_lifetime, from, initial.dcid);
            let mut out = Vec::new();
            RetryPacket {
                initial_dcid: initial.dcid,
                cookie: &cookie,
            }
            .emit(&mut out);
            self.stats.retries_sent += 1;
            return Ok(Decision::Retry(out));
        }
        if load.half_open >= self.config.max_half_open {
            return Err(Refusal::HalfOpenLimit);
        }
        self.stats.accepted_unvalidated += 1;
        Ok(Decision::Accept(accepted(false)))
    }
}
