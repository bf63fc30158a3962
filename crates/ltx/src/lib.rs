//! ltx over UDP with tokio: endpoints, connections and streams of the
//! loss-tolerant transport.
//!
//! This crate only drives the sans-IO protocol of `ltx-proto`: it owns the
//! socket (through quinn-udp, with GSO/GRO batching and ECN codepoints read
//! and written, so that congestion marks reach the controller), the clock
//! and the timers, and turns the protocol's streams into tokio
//! [`AsyncRead`](tokio::io::AsyncRead) / [`AsyncWrite`](tokio::io::AsyncWrite)
//! halves. See [`Endpoint`] for a complete example.
//!
//! Every connection is authenticated and encrypted: a Noise handshake
//! proves both ends' static keys (a client names the server's public key
//! when it connects; a server may accept only the client keys on an
//! [`AllowList`]), and every packet after it is sealed with an AEAD. See
//! [`Security`].
//!
//! With the cargo feature `shim`, the module `shim` gives lossy, long-delay
//! paths on loopback without root: a UDP relay that runs the simulator's
//! link model in real time.

mod config;
mod connect;
mod connection;
mod endpoint;
mod error;
mod icmp;
mod qlog;
mod saved_paths;
#[cfg(all(unix, feature = "shim"))]
pub mod shim;
mod socket;
mod totals;

pub use bytes::Bytes;
pub use config::{generate_keypair, EndpointConfig, Security};
pub use connection::{Connection, RecvStream, SendStream};
pub use endpoint::{Endpoint, RefusedHandshake};
pub use error::{ConnectError, ConnectionError, OpenStreamError};
pub use ltx_proto::accept::AcceptStats;
pub use ltx_proto::congestion::SavedPath;
pub use ltx_proto::protection::{
    AllowList, EarlyDataRecord, HandshakeError, KeyParseError, PresharedKey, PublicKey,
    SecurityConfig, StaticKeypair, UnixMillis, WallClock, EARLY_DATA_AHEAD, EARLY_DATA_WINDOW,
};
pub use ltx_proto::{
    AcceptConfig, CloseReason, ConnectionStats, RetryPolicy, StreamId, TransportConfig,
};
pub use totals::{ClosedConnections, EndpointStats, EndpointTotals};
