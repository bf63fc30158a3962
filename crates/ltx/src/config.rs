//! How an endpoint is set up: its keys and how its packets are protected,
//! its connections' transport settings, what it admits, where its traces
//! go.

use std::io;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ltx_proto::protection::{
    EarlyDataRecord, SecurityConfig, StaticKeypair, UnixMillis, WallClock, KEY_LEN,
};
use ltx_proto::{AcceptConfig, TransportConfig};
use rand::rngs::OsRng;
use rand::TryRngCore;

/// How an endpoint's connections authenticate their peers and protect
/// their packets.
#[derive(Debug, Clone)]
pub enum Security {
    /// A Noise `IK` handshake that proves both ends' static keys, then
    /// AES-256-GCM on every packet, with key updates and a replay window
    /// (see [`ltx_proto::protection`]).
    Noise(SecurityConfig),
    /// A checksum only: no authentication and no secrecy. For measuring
    /// what protection costs, on loopback, and for tests that are not
    /// about security; never for a network path. Both ends must use it.
    Plain,
}

/// A fresh static key pair from the operating system's random source.
///
/// # Panics
/// If the operating system has no random source to give.
pub fn generate_keypair() -> StaticKeypair {
    StaticKeypair::from_entropy(entropy().expect("the operating system's random source"))
}

/// 32 bytes from the operating system's random source.
pub(crate) fn entropy() -> Option<[u8; KEY_LEN]> {
    let mut bytes = [0u8; KEY_LEN];
    OsRng.try_fill_bytes(&mut bytes).ok()?;
    Some(bytes)
}

/// With early data on, gives a secured endpoint the wall clock its first
/// messages are stamped with and, if it takes connections, the record of
/// first flights all its connections share (each unless already set);
/// refuses early data without security.
pub(crate) fn prepare_early_data(config: &mut EndpointConfig) -> io::Result<()> {
    if !config.transport.early_data() {
        return Ok(());
    }
    let Security::Noise(security) = &mut config.security else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "early data needs Security::Noise",
        ));
    };
    let clock = *security.clock.get_or_insert_with(system_clock);
    if config.accept_incoming && security.early_data_record.is_none() {
        security.early_data_record = Some(EarlyDataRecord::new(clock));
    }
    Ok(())
}

/// The system's wall clock now, read on from there by the monotonic clock.
fn system_clock() -> WallClock {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    WallClock::new(Instant::now(), UnixMillis(unix))
}

/// How an endpoint behaves: the transport settings of its connections,
/// its keys, and whether it takes connections from others.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// The settings of every connection of this endpoint.
    pub transport: TransportConfig,
    /// Its key pair and whom it accepts. The constructors make a fresh key
    /// pair that lives as long as the configuration: set one read from a
    /// file for a server that clients must recognise, or a client that a
    /// server's allow list must name.
    pub security: Security,
    /// Whether peers may connect to this endpoint (a server); a client-only
    /// endpoint ignores their first packets.
    pub accept_incoming: bool,
    /// Connections that completed their handshake but were not yet taken
    /// with [`Endpoint::accept`](crate::Endpoint::accept); first packets beyond it are ignored, so a
    /// flood of handshakes cannot grow memory without bound.
    pub max_pending_incoming: usize,
    /// Connections open at once; more are refused (incoming: ignored;
    /// outgoing: [`ConnectError::TooManyConnections`](crate::ConnectError::TooManyConnections)).
    pub max_connections: usize,
    /// How a server admits clients: when it asks for a stateless retry,
    /// and its limits on half-open handshakes and connections per address
    /// (see [`AcceptConfig`] for the defaults and why).
    pub accept: AcceptConfig,
    /// A directory to write each connection's trace to, as a qlog file
    /// (`.sqlog`, JSON-SEQ) that qvis and other qlog tools open; `None`
    /// writes none and costs nothing.
    pub qlog_dir: Option<PathBuf>,
    /// Whether a server remembers, in memory for an hour, the path each
    /// client's connection measured (keyed by the client's public key),
    /// and starts that client's next connection from it (careful resume:
    /// half the saved rate, confirmed within the first round trip). On for
    /// [`EndpointConfig::server`]; a client keeps its own saved paths
    /// ([`Connection::path_to_save`](crate::Connection::path_to_save)).
    pub remember_paths: bool,
    /// Driver tasks that share the endpoint's connections, each on its own
    /// core when the tokio runtime has as many workers: with more than one,
    /// a reader task hands each datagram to the driver that holds its
    /// connection (a server spreading its clients over the cores). The
    /// limits above are shared out among them, except the per-address one.
    /// Default 1: one task reads the socket and drives every connection,
    /// without a hand-off.
    pub drivers: usize,
}

impl EndpointConfig {
    /// A client endpoint: it connects to others and takes no connections.
    /// Its key pair is fresh (see [`EndpointConfig::security`]).
    pub fn client() -> EndpointConfig {
        EndpointConfig {
            transport: TransportConfig::default(),
            security: Security::Noise(SecurityConfig::new(generate_keypair())),
            accept_incoming: false,
            max_pending_incoming: 64,
            max_connections: 1024,
            accept: AcceptConfig::default(),
            qlog_dir: None,
            remember_paths: false,
            drivers: 1,
        }
    }

    /// A server endpoint: it takes connections (and may also connect), from
    /// any client that knows its public key. Its key pair is fresh (see
    /// [`EndpointConfig::security`]).
    pub fn server() -> EndpointConfig {
        EndpointConfig {
            accept_incoming: true,
            remember_paths: true,
            ..EndpointConfig::client()
        }
    }
}

impl EndpointConfig {
    /// The configuration of one of `count` drivers: the endpoint's limits
    /// shared out (rounded up), the per-address limit kept whole (the
    /// drivers count a client's connections together).
    pub(crate) fn for_one_of(&self, count: usize) -> EndpointConfig {
        let share = |limit: usize| limit.div_ceil(count.max(1));
        let mut config = self.clone();
        config.max_connections = share(self.max_connections);
        config.max_pending_incoming = share(self.max_pending_incoming);
        config.accept.max_half_open = share(self.accept.max_half_open);
        if let ltx_proto::RetryPolicy::AboveHalfOpen(n) = self.accept.retry {
            config.accept.retry = ltx_proto::RetryPolicy::AboveHalfOpen(share(n));
        }
        config
    }
}

impl Default for EndpointConfig {
    /// A client endpoint.
    fn default() -> EndpointConfig {
        EndpointConfig::client()
    }
}
