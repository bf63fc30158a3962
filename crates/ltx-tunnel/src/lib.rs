//! TCP over ltx: port forwarding and a SOCKS5 front end, for unmodified
//! applications on lossy, long-delay paths.
//!
//! A tunnel client keeps one ltx connection to a tunnel server. Each TCP
//! connection the client accepts (on a `-L` forward's port, or through its
//! SOCKS5 front end) becomes one ltx stream, opened at once, whose first
//! bytes are an [`OpenRequest`](wire::OpenRequest) naming the destination.
//! The server checks it against its [`Policy`](policy::Policy) (nothing is
//! permitted unless a rule says so), connects, answers with an
//! [`OpenResult`](wire::OpenResult), and from then on the stream carries
//! the TCP connection's bytes both ways, its half-closes and its resets
//! ([`splice`]).
//!
//! - [`wire`]: the stream header and the SOCKS5 messages, parsed from
//!   untrusted bytes without panics;
//! - [`policy`]: the server's permit rules;
//! - [`TunnelClient`], [`TunnelServer`]: the two ends, over `ltx`
//!   endpoints;
//! - [`serve_socks5`]: the client's SOCKS5 front end;
//! - [`tunnel_transport`]: the transport settings of a tunnel's
//!   connections.

mod client;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod message_io;
pub mod policy;
mod rate_limit;
mod remote;
mod server;
mod socks;
pub mod splice;
mod transport;
pub mod wire;

pub use client::{OpenError, TunnelClient, TunnelStream};
pub use message_io::MessageError;
pub use rate_limit::RateLimit;
pub use remote::{serve_remote_streams, RemoteListener, RemoteRoute};
pub use server::{ServerConfig, TunnelServer};
pub use socks::{
    reply_code, serve_socks5, SocksFailure, SocksUsers, UsersError, SOCKS_HANDSHAKE_TIMEOUT,
};
pub use transport::{
    tunnel_transport, TUNNEL_IDLE_TIMEOUT, TUNNEL_KEEP_ALIVE, TUNNEL_RECEIVE_WINDOW,
    TUNNEL_SILENCE_PROBE, TUNNEL_STREAMS_PER_CONNECTION, TUNNEL_STREAM_WINDOW,
};
