//! How a server admits new connections.

/// When a server answers a client's first packet with a retry (a cookie
/// the client must send back) instead of starting a handshake.
///
/// A retry proves that the client receives at its address before the
/// server keeps anything for it, so spoofed first packets cost the server
/// no memory. It also costs every client one round trip more, which on the
/// long, lossy paths ltx is made for is the most expensive thing a
/// handshake can spend; hence the default asks for it only under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryPolicy {
    /// Never: every acceptable first packet starts a handshake (still
    /// bounded by the half-open and per-address limits, and by the
    /// anti-amplification limit until the address is proved).
    Never,
    /// Always: no first packet without a valid cookie creates state.
    Always,
    /// Only while at least this many handshakes are half-open: below it,
    /// clients connect in one round trip; above it, a flood of spoofed
    /// first packets gets stateless retries, which it cannot answer.
    AboveHalfOpen(usize),
}

/// How a server admits new connections: the retry policy and the limits
/// that bound its memory whatever first packets arrive.
///
/// The server keeps nothing for a first packet it answers with a retry or
/// refuses; the state of the connections it does create is bounded per
/// connection by [`TransportConfig`](super::TransportConfig), and their number by these limits
/// and the endpoint's total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptConfig {
    /// When to answer with a retry. Default: above 16 half-open
    /// handshakes, a few times what a busy server sees at once from real
    /// clients (a handshake is half-open for one round trip), so normal
    /// load never pays the extra round trip and a flood is cut off early.
    pub retry: RetryPolicy,
    /// How long a retry cookie stays valid. Default: 10 s, many round
    /// trips of even a geostationary path, short enough that a cookie
    /// seen on the path is soon worthless.
    pub cookie_lifetime: std::time::Duration,
    /// Handshakes half-open at once (created, not yet confirmed by the
    /// client); first packets beyond it are refused, even with a cookie.
    /// Default: 256. Each holds a connection without stream data (a few
    /// KiB, the decoder is allocated on first use) until the idle timeout.
    pub max_half_open: usize,
    /// Connections (half-open or established) from one IP address; ports
    /// do not count apart, since a sender chooses them freely. Default:
    /// 64, room for a NAT with many users, far below the endpoint's total.
    pub max_connections_per_ip: usize,
}

impl Default for AcceptConfig {
    fn default() -> AcceptConfig {
        AcceptConfig {
            retry: RetryPolicy::AboveHalfOpen(16),
            cookie_lifetime: std::time::Duration::from_secs(10),
            max_half_open: 256,
            max_connections_per_ip: 64,
        }
    }
}
