//! A real-time link emulator for Linux: two network namespaces, a client
//! and a server, joined by TUN devices through a user-space forwarder that
//! runs one [`ltx_link::Link`] per direction, so that kernel TCP and any
//! other program cross the same impaired path the simulator models.
//!
//! ```text
//!  client namespace                                        server namespace
//!  10.77.0.1 ── ltx0 (TUN) ──▶ forward link ──▶ ltx0 (TUN) ── 10.77.0.2
//!            ◀─────────────── reverse link ◀──────────────
//! ```
//!
//! Each namespace is named uniquely per process and run
//! (`ltx<pid>-<n>c`, `ltx<pid>-<n>s`), so parallel emulators and leftovers
//! of killed ones never collide, and is deleted when the [`Emulator`] is
//! dropped. Each TUN device has an MTU of 1500 and a transmit queue of
//! [`TUN_QUEUE_PACKETS`] packets; packets it drops because the forwarder
//! did not read them in time are counted
//! ([`DirectionStats::ingress`]). Without `IFF_VNET_HDR` the kernel
//! segments TCP before it reaches the device, so the forwarder only ever
//! sees packets of at most the MTU, and none is refused for its size.
//!
//! The links mark CE by rewriting the ECN field of IPv4 (with its header
//! checksum) and IPv6 packets, only for ECN-capable ones.
//!
//! ```no_run
//! use std::io::{Read, Write};
//! use std::net::{TcpListener, TcpStream};
//! use std::time::Duration;
//! use ltx_emu::{Emulator, EmulatorConfig, SERVER_ADDR};
//! use ltx_link::{LinkConfig, Rate};
//!
//! let one_way = LinkConfig {
//!     delay: Duration::from_millis(20),
//!     rate: Some(Rate::mbit(20.0)),
//!     ..LinkConfig::default()
//! };
//! let emulator = Emulator::start(EmulatorConfig::symmetric(one_way, 1))?;
//! let listener = emulator.server().run_inside(|| TcpListener::bind((SERVER_ADDR, 5000)))??;
//! let mut client = emulator.client().run_inside(|| TcpStream::connect((SERVER_ADDR, 5000)))??;
//! let (mut accepted, _) = listener.accept()?;
//! client.write_all(b"hello")?;
//! let mut got = [0; 5];
//! accepted.read_exact(&mut got)?;
//! let stats = emulator.stats();
//! assert!(stats.forward.link.delivered >= 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Linux only, as root: see [`missing`] for what is checked.

#![cfg(target_os = "linux")]

mod commands;
mod forwarder;
mod ip_packet;
mod namespace;
mod preflight;
mod tun;

use std::io;
use std::net::{Ipv4Addr, Shutdown};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use ltx_link::{Link, LinkConfig, LinkConfigError, LinkStats};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use thiserror::Error;

pub use commands::{CommandOutcome, ServerWait};
pub use forwarder::ForwarderStats;
pub use ip_packet::IpPacket;
pub use namespace::NetNamespace;
pub use preflight::{missing, Missing};
pub use tun::InterfaceCounters;

use forwarder::{lock, DirectionState, Forwarder};
use tun::Tun;

/// The client's address, in the client namespace.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The server's address, in the server namespace.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// The name of the TUN device in each namespace.
pub const TUN_NAME: &str = "ltx0";
/// The TUN devices' MTU.
pub const MTU: u32 = 1500;
/// The TUN devices' transmit queue, packets (`txqueuelen`): long, so that
/// a burst the forwarder has not read yet waits instead of being dropped
/// (the kernel's default is 500).
pub const TUN_QUEUE_PACKETS: u32 = 10_000;

/// Why the emulator could not start or run.
#[derive(Debug, Error)]
pub enum EmuError {
    /// The machine or process lacks something the emulator needs.
    #[error("the emulator cannot run here; missing: {}", list(.0))]
    Missing(Vec<Missing>),
    /// The forward (client to server) link configuration is invalid.
    #[error("forward link: {0}")]
    Forward(LinkConfigError),
    /// The reverse (server to client) link configuration is invalid.
    #[error("reverse link: {0}")]
    Reverse(LinkConfigError),
    /// An `ip` command failed.
    #[error("`ip {args}` failed: {detail}")]
    Ip {
        /// Its arguments.
        args: String,
        /// Its exit status and message, or why it could not run.
        detail: String,
    },
    /// A thread could not enter a namespace.
    #[error("cannot enter network namespace {namespace}: {error}")]
    Enter {
        /// The namespace.
        namespace: String,
        /// The error.
        error: io::Error,
    },
    /// A TUN device could not be created.
    #[error("cannot create the TUN device in {namespace}: {error}")]
    Tun {
        /// The namespace.
        namespace: String,
        /// The error.
        error: io::Error,
    },
    /// A command could not be started or waited for.
    #[error("{what}: {error}")]
    Command {
        /// Which command, and what was being done.
        what: String,
        /// The error.
        error: io::Error,
    },
    /// A forwarder thread could not start.
    #[error("cannot start the forwarder: {0}")]
    Thread(io::Error),
}

fn list(missing: &[Missing]) -> String {
    missing
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The two directions of an emulated path.
#[derive(Debug, Clone, PartialEq)]
pub struct EmulatorConfig {
    /// Client to server.
    pub forward: LinkConfig,
    /// Server to client.
    pub reverse: LinkConfig,
    /// Where the links' randomness comes from: a `SmallRng` seeded with it
    /// gives the forward link's seed, then the reverse link's, as the
    /// simulator and the shim seed a single path.
    pub seed: u64,
}

impl EmulatorConfig {
    /// The same link both ways.
    pub fn symmetric(link: LinkConfig, seed: u64) -> EmulatorConfig {
        EmulatorConfig {
            forward: link.clone(),
            reverse: link,
            seed,
        }
    }
}

/// What happened in one direction.
#[derive(Debug, Clone)]
pub struct DirectionStats {
    /// The link's own counters: offered, delivered, dropped by cause,
    /// marked, duplicated, queueing delay.
    pub link: LinkStats,
    /// The forwarder's: packets read and written, write errors, lateness.
    pub forwarder: ForwarderStats,
    /// The ingress TUN device's counters in the sending namespace; its
    /// `tx_dropped` are packets lost before the link saw them. `None` if
    /// they could not be read.
    pub ingress: Option<InterfaceCounters>,
}

/// What happened on the path: both directions.
#[derive(Debug, Clone)]
pub struct PathStats {
    /// Client to server.
    pub forward: DirectionStats,
    /// Server to client.
    pub reverse: DirectionStats,
}

/// A running emulated path. Dropping it stops the forwarder and deletes
/// the namespaces (processes still inside keep theirs alive, unnamed,
/// until they exit).
pub struct Emulator {
    epoch: Instant,
    /// Shut down to make the forwarder threads' ends readable: they stop.
    stop: UnixStream,
    threads: Vec<JoinHandle<io::Result<()>>>,
    forward: Arc<Mutex<DirectionState>>,
    reverse: Arc<Mutex<DirectionState>>,
    client_tun: Mutex<Tun>,
    server_tun: Mutex<Tun>,
    // Declared last, so dropped after the devices are closed.
    client: NetNamespace,
    server: NetNamespace,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("client", &self.client)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Emulator {
    /// Checks the machine, creates the namespaces and their TUN devices,
    /// and starts forwarding. The links' outages are timed from now.
    pub fn start(config: EmulatorConfig) -> Result<Emulator, EmuError> {
        let missing = missing();
        if !missing.is_empty() {
            return Err(EmuError::Missing(missing));
        }
        config.forward.validate().map_err(EmuError::Forward)?;
        config.reverse.validate().map_err(EmuError::Reverse)?;

        let (client, server) = NetNamespace::create_pair()?;
        let client_tun = Tun::open(&client, TUN_NAME)?;
        let server_tun = Tun::open(&server, TUN_NAME)?;
        configure(&client, CLIENT_ADDR, SERVER_ADDR)?;
        configure(&server, SERVER_ADDR, CLIENT_ADDR)?;

        let mut seeds = SmallRng::seed_from_u64(config.seed);
        let (forward_seed, reverse_seed) = (seeds.random(), seeds.random());
        let epoch = Instant::now();
        let forward = Link::new(config.forward, epoch, forward_seed).map_err(EmuError::Forward)?;
        let reverse = Link::new(config.reverse, epoch, reverse_seed).map_err(EmuError::Reverse)?;
        let forward = Arc::new(Mutex::new(DirectionState {
            link: forward,
            forwarder: ForwarderStats::default(),
        }));
        let reverse = Arc::new(Mutex::new(DirectionState {
            link: reverse,
            forwarder: ForwarderStats::default(),
        }));

        let client_fd = Arc::new(client_tun.fd.try_clone().map_err(EmuError::Thread)?);
        let server_fd = Arc::new(server_tun.fd.try_clone().map_err(EmuError::Thread)?);
        let (stop, stopped) = UnixStream::pair().map_err(EmuError::Thread)?;
        let mut emulator = Emulator {
            epoch,
            stop,
            threads: Vec::new(),
            forward: Arc::clone(&forward),
            reverse: Arc::clone(&reverse),
            client_tun: Mutex::new(client_tun),
            server_tun: Mutex::new(server_tun),
            client,
            server,
        };
        let directions = [
            ("ltx-emu-fwd", &client_fd, &server_fd, forward),
            ("ltx-emu-rev", &server_fd, &client_fd, reverse),
        ];
        for (name, ingress, egress, state) in directions {
            let forwarder = Forwarder {
                ingress: Arc::clone(ingress),
                egress: Arc::clone(egress),
                stop: stopped.try_clone().map_err(EmuError::Thread)?,
                state,
            };
            // On an error here, dropping `emulator` stops the thread
            // already started and deletes the namespaces.
            let thread = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || forwarder.run())
                .map_err(EmuError::Thread)?;
            emulator.threads.push(thread);
        }
        Ok(emulator)
    }

    /// The client's namespace.
    pub fn client(&self) -> &NetNamespace {
        &self.client
    }

    /// The server's namespace.
    pub fn server(&self) -> &NetNamespace {
        &self.server
    }

    /// When forwarding started: the links' epoch, from which their outages
    /// are timed.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// A snapshot of both directions' counters.
    pub fn stats(&self) -> PathStats {
        let counters = |tun: &Mutex<Tun>| {
            let mut tun = tun
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            tun.counters()
                .inspect_err(|error| tracing::debug!(%error, "cannot read TUN counters"))
                .ok()
        };
        let direction = |state: &Mutex<DirectionState>, tun: &Mutex<Tun>| {
            let ingress = counters(tun);
            let state = lock(state);
            DirectionStats {
                link: state.link.stats().clone(),
                forwarder: state.forwarder.clone(),
                ingress,
            }
        };
        PathStats {
            forward: direction(&self.forward, &self.client_tun),
            reverse: direction(&self.reverse, &self.server_tun),
        }
    }

    /// Stops forwarding (packets still on the links are lost), deletes the
    /// namespaces, and returns the final counters.
    pub fn shutdown(mut self) -> PathStats {
        self.stop_forwarding();
        self.stats()
    }

    fn stop_forwarding(&mut self) {
        let _ = self.stop.shutdown(Shutdown::Both);
        for thread in self.threads.drain(..) {
            match thread.join() {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::warn!(%error, "a forwarder thread had stopped"),
                // Reported when it happened; panicking again in a
                // destructor could abort the process.
                Err(_) => {}
            }
        }
    }
}

impl Drop for Emulator {
    /// Stops the forwarder threads, then closes the devices and deletes
    /// the namespaces.
    fn drop(&mut self) {
        self.stop_forwarding();
    }
}

/// Gives `namespace`'s TUN device its address, MTU and queue, and brings it
/// up; no IPv6 link-local address, so that the path carries nothing the
/// programs under test did not send.
fn configure(namespace: &NetNamespace, local: Ipv4Addr, peer: Ipv4Addr) -> Result<(), EmuError> {
    namespace.ip_batch(&format!(
        "link set dev {TUN_NAME} mtu {MTU} txqueuelen {TUN_QUEUE_PACKETS} addrgenmode none\n\
         addr add {local} peer {peer} dev {TUN_NAME}\n\
         link set dev {TUN_NAME} up\n"
    ))
}
