//! A real-time impairment shim on loopback: a UDP relay that carries a
//! client's datagrams to a server and the replies back through one
//! [`Link`] per direction, so that tests, demos and
//! benchmarks get lossy, long-delay, rate-limited paths without root or
//! network namespaces.
//!
//! ```text
//!  client ──▶ client-facing socket ──▶ forward link ──▶ server-facing socket ──▶ server
//!  client ◀── client-facing socket ◀── reverse link ◀── server-facing socket ◀── server
//! ```
//!
//! The links are the ones the simulator uses (`ltx-link`), fed in real
//! time: a datagram is offered to its link when the relay reads it and
//! sent on when [`Link::next_event`](ltx_link::Link::next_event) says it
//! has arrived, so emulated and simulated paths mean the same thing.
//!
//! # Timing
//!
//! The relay runs on a thread of its own (`ltx-shim`) that waits in
//! `ppoll(2)` on both sockets with a timeout in nanoseconds until the next
//! arrival, rather than on tokio, whose one-millisecond timer (four and a
//! half full-size packets at 50 Mbit/s) would release in late bursts. On
//! Linux it lowers its timer slack to 1 µs and its scheduler slice to
//! 100 µs (`ltx-realtime`), so that its wake-ups are neither coalesced nor
//! queued behind busy threads. It never spins. On other Unix systems
//! `poll(2)` rounds the timeout up to a millisecond, so releases there can
//! be up to a millisecond late.
//!
//! How late each datagram left, after the time its link scheduled, is kept
//! in [`RelayStats::lateness`]. Lateness does not accumulate: release
//! times come from the model, so a saturated link delivers its configured
//! rate. The example `shim_precision` measures a machine; figures are in
//! `docs/results.md` ("The impairment shim").
//!
//! # ECN
//!
//! The relay reads the ECN codepoint of each arriving datagram and sends it
//! on with the codepoint its link leaves, so CE marks from the link's AQM
//! reach the receiver (Linux keeps the codepoint on loopback). The endpoints
//! must set and read ECN themselves, e.g. with `quinn_udp`.
//!
//! # One client
//!
//! The shim serves one client: replies go to the address the client-facing
//! socket last received from, so a client that rebinds is followed, but two
//! clients would receive each other's replies. Datagrams that reach the
//! server-facing socket from anywhere but the server, and replies from the
//! server before any client has spoken, are discarded and counted in
//! [`RelayStats::discarded`].
//!
//! # What is counted
//!
//! [`ImpairedPath::stats`] gives each link's own counters (offered,
//! delivered, dropped by cause, marked). [`ImpairedPath::relay_stats`] adds
//! what the relay did around them: datagrams received, discarded, and those
//! the link delivered but the socket refused to send. Datagrams the kernel
//! drops because a socket's receive buffer overflowed are counted by the
//! kernel alone (`RcvbufErrors` in `/proc/net/snmp`): a sender faster than
//! the relay can read shows up as `received` below what was sent.
//!
//! The shim is Unix only: it waits on its sockets with `poll(2)`.

#![cfg(unix)]

mod relay;

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ltx_link::{DelayHistogram, Link, LinkConfig, LinkConfigError, LinkStats};
use quinn_udp::UdpSocketState;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use thiserror::Error;

use relay::{Direction, Relay, Shared};

/// What the relay asks of the kernel for each socket's buffers, so that a
/// burst at 50 Mbit/s fits while the relay is busy sending; the kernel caps
/// it at `net.core.rmem_max` / `wmem_max`.
const SOCKET_BUFFER: usize = 4 << 20;

/// Why an [`ImpairedPath`] could not start.
#[derive(Debug, Error)]
pub enum ShimError {
    /// The forward (client to server) link configuration is invalid.
    #[error("forward link: {0}")]
    Forward(LinkConfigError),
    /// The reverse (server to client) link configuration is invalid.
    #[error("reverse link: {0}")]
    Reverse(LinkConfigError),
    /// A socket or the relay thread could not be set up.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What the relay did in one direction, besides what its link counts in
/// [`LinkStats`].
#[derive(Debug, Clone, Default)]
pub struct RelayStats {
    /// Datagrams read from the ingress socket and offered to the link.
    pub received: u64,
    /// Datagrams read but not offered to the link: from an unexpected
    /// sender, or replies from the server before any client was seen.
    pub discarded: u64,
    /// Datagrams the link delivered that the egress socket failed to send
    /// (a full send buffer included): lost, though the link did not drop
    /// them.
    pub send_errors: u64,
    /// How late each datagram delivered by the link left the relay, after
    /// the time the link scheduled it for.
    pub lateness: DelayHistogram,
    /// The sum of all `lateness` samples.
    pub total_lateness: Duration,
}

impl RelayStats {
    /// The mean of `lateness`, or zero before any datagram was delivered.
    pub fn mean_lateness(&self) -> Duration {
        match u32::try_from(self.lateness.count()) {
            Ok(0) => Duration::ZERO,
            Ok(count) => self.total_lateness / count,
            Err(_) => Duration::from_secs_f64(
                self.total_lateness.as_secs_f64() / self.lateness.count() as f64,
            ),
        }
    }
}

/// A UDP relay on loopback that impairs a path between one client and a
/// server: datagrams from the client cross the `forward` link to the
/// server, the server's replies cross the `reverse` link back.
///
/// The client sends to [`client_facing_addr`](ImpairedPath::client_facing_addr)
/// instead of the server; the server sees the client as
/// [`server_facing_addr`](ImpairedPath::server_facing_addr). The relay runs
/// on its own thread until the `ImpairedPath` is dropped or
/// [shut down](ImpairedPath::shutdown); see the [module docs](self) for
/// timing, ECN and the one-client limit.
///
/// ```
/// use std::net::UdpSocket;
/// use std::time::{Duration, Instant};
/// use ltx::shim::ImpairedPath;
/// use ltx_link::LinkConfig;
///
/// let server = UdpSocket::bind("127.0.0.1:0")?;
/// server.set_read_timeout(Some(Duration::from_secs(5)))?;
/// // 20 ms each way.
/// let one_way = LinkConfig { delay: Duration::from_millis(20), ..LinkConfig::default() };
/// let path = ImpairedPath::start(server.local_addr()?, one_way.clone(), one_way, 7)?;
///
/// let client = UdpSocket::bind("127.0.0.1:0")?;
/// client.set_read_timeout(Some(Duration::from_secs(5)))?;
/// client.connect(path.client_facing_addr())?;
/// let sent = Instant::now();
/// client.send(b"ping")?;
///
/// let mut buf = [0; 64];
/// let (len, from) = server.recv_from(&mut buf)?;
/// assert_eq!(from, path.server_facing_addr());
/// server.send_to(&buf[..len], from)?;
///
/// let len = client.recv(&mut buf)?;
/// assert_eq!(&buf[..len], b"ping");
/// assert!(sent.elapsed() >= Duration::from_millis(40));
///
/// let (forward, reverse) = path.stats();
/// assert_eq!((forward.delivered, reverse.delivered), (1, 1));
/// path.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ImpairedPath {
    client_facing: SocketAddr,
    server_facing: SocketAddr,
    server: SocketAddr,
    epoch: Instant,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    /// Wakes the relay out of `ppoll` to stop; a socket pair rather than a
    /// loopback port, so nothing else can write to it.
    wake: UnixDatagram,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl std::fmt::Debug for ImpairedPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImpairedPath")
            .field("client_facing", &self.client_facing)
            .field("server_facing", &self.server_facing)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl ImpairedPath {
    /// Starts a relay to `server`, `forward` impairing the client's datagrams
    /// and `reverse` the server's. The client-facing socket is on
    /// `127.0.0.1`; the server-facing one on the server's loopback address,
    /// or on its family's unspecified address for a server elsewhere.
    /// Outages are timed from now ([`epoch`](ImpairedPath::epoch)), and
    /// `seed` seeds both links as `ltx_sim::Network::single_path` does, so
    /// the same seed and datagrams give the same losses.
    pub fn start(
        server: SocketAddr,
        forward: LinkConfig,
        reverse: LinkConfig,
        seed: u64,
    ) -> Result<ImpairedPath, ShimError> {
        forward.validate().map_err(ShimError::Forward)?;
        reverse.validate().map_err(ShimError::Reverse)?;

        let client_socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        let server_socket = UdpSocket::bind((server_facing_ip(server.ip()), 0))?;
        let client_state = relay_socket(&client_socket)?;
        let server_state = relay_socket(&server_socket)?;
        let (wake, wake_relay) = UnixDatagram::pair()?;
        wake_relay.set_nonblocking(true)?;
        let client_facing = client_socket.local_addr()?;
        let server_facing = server_socket.local_addr()?;

        let mut seeds = SmallRng::seed_from_u64(seed);
        let (forward_seed, reverse_seed) = (seeds.random(), seeds.random());
        let epoch = Instant::now();
        let forward = Link::new(forward, epoch, forward_seed).map_err(ShimError::Forward)?;
        let reverse = Link::new(reverse, epoch, reverse_seed).map_err(ShimError::Reverse)?;
        let shared = Arc::new(Mutex::new(Shared {
            forward: Direction::new(forward),
            reverse: Direction::new(reverse),
        }));
        let stop = Arc::new(AtomicBool::new(false));

        let relay = Relay {
            client_socket,
            client_state,
            server_socket,
            server_state,
            server,
            client: None,
            wake: wake_relay,
            stop: Arc::clone(&stop),
            shared: Arc::clone(&shared),
        };
        let thread = std::thread::Builder::new()
            .name("ltx-shim".into())
            .spawn(move || relay.run())?;
        Ok(ImpairedPath {
            client_facing,
            server_facing,
            server,
            epoch,
            shared,
            stop,
            wake,
            thread: Some(thread),
        })
    }

    /// The address the client sends to instead of the server's.
    pub fn client_facing_addr(&self) -> SocketAddr {
        self.client_facing
    }

    /// The address the server's datagrams come from, and where its replies
    /// must go.
    pub fn server_facing_addr(&self) -> SocketAddr {
        self.server_facing
    }

    /// The server the relay forwards to.
    pub fn server_addr(&self) -> SocketAddr {
        self.server
    }

    /// When the relay started: the links' epoch, from which their outages
    /// are timed.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// A snapshot of the links' counters: `(forward, reverse)`.
    pub fn stats(&self) -> (LinkStats, LinkStats) {
        let shared = self.lock();
        (
            shared.forward.link.stats().clone(),
            shared.reverse.link.stats().clone(),
        )
    }

    /// A snapshot of the relay's own counters: `(forward, reverse)`.
    pub fn relay_stats(&self) -> (RelayStats, RelayStats) {
        let shared = self.lock();
        (shared.forward.relay.clone(), shared.reverse.relay.clone())
    }

    /// Stops the relay, waits for its thread to end and closes its sockets;
    /// datagrams still inside the links are lost.
    ///
    /// Returns the socket error that stopped the relay early, if one did
    /// (the relay logs it too). Dropping the `ImpairedPath` does the same
    /// and ignores that error.
    pub fn shutdown(mut self) -> io::Result<()> {
        match self.stop_relay() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Stops the relay thread and joins it: its result, or its panic.
    fn stop_relay(&mut self) -> std::thread::Result<io::Result<()>> {
        let Some(thread) = self.thread.take() else {
            return Ok(Ok(()));
        };
        self.stop.store(true, Ordering::Release);
        // The relay reads the flag whenever it wakes; this makes it wake now
        // rather than at its next datagram or release. Should the send fail,
        // shutting the pair down makes the relay's end readable all the same.
        if self.wake.send(&[0]).is_err() {
            let _ = self.wake.shutdown(std::net::Shutdown::Both);
        }
        thread.join()
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // The relay holds the lock only between system calls; if it
        // panicked, the counters it left are still the best there are.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for ImpairedPath {
    /// Stops the relay and waits for its thread (a few microseconds: it is
    /// woken at once).
    fn drop(&mut self) {
        match self.stop_relay() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, "the impairment relay had stopped on an error")
            }
            // The relay's panic was reported when it happened; panicking
            // again in a destructor could abort the process.
            Err(_) => {}
        }
    }
}

/// Where the server-facing socket binds: on loopback beside a loopback
/// server, so that it is reachable from nowhere else.
fn server_facing_ip(server: IpAddr) -> IpAddr {
    match server {
        IpAddr::V4(ip) if ip.is_loopback() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(ip) if ip.is_loopback() => Ipv6Addr::LOCALHOST.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// Prepares one of the relay's sockets: ECN reception on, non-blocking,
/// large buffers.
fn relay_socket(socket: &UdpSocket) -> io::Result<UdpSocketState> {
    let state = UdpSocketState::new(socket.into())?;
    // Best effort: without privileges the kernel caps both at its maximum,
    // and a smaller buffer only makes bursts overflow sooner.
    let _ = state.set_recv_buffer_size(socket.into(), SOCKET_BUFFER);
    let _ = state.set_send_buffer_size(socket.into(), SOCKET_BUFFER);
    Ok(state)
}
