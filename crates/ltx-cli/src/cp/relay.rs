//! The UDP relay of a pull, and the small socket helpers both ends use.
//!
//! A pull runs `ltx send` on the remote host and `ltx recv` here, yet the
//! remote end must be the one that listens: the local machine is the one
//! usually behind NAT, and the remote end's port is the one the user opens.
//! So each end relays between its ltx child on loopback and one UDP socket
//! that the local side's check has already connected through any NAT:
//!
//! ```text
//! remote ltx send -> loopback -> remote end's port ==UDP==> local socket -> loopback -> ltx recv
//! ```
//!
//! The relay forwards datagrams as they are; ltx's own handshake
//! authenticates both ends through it. ECN marks do not cross it.

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::control::{Check, Token};

/// How often a relay thread looks at its stop flag.
const POLL: Duration = Duration::from_millis(100);

/// The relay's socket buffers: a flight of a fast path must not overflow
/// them while a relay thread waits to be scheduled (the kernel may cap it).
const SOCKET_BUFFER: libc::c_int = 4 << 20;

/// The largest UDP payload.
const DATAGRAM: usize = 1 << 16;

/// A running relay, stopped (and its threads joined) on drop.
pub(super) struct Relay {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Relay {
    /// Relays between `outer`, connected to the other end, and the ltx
    /// child on loopback behind `inner`: the child at `child` if known,
    /// else whoever sends to `inner` first. Check datagrams of `token`
    /// that arrive late on `outer` are dropped, not relayed.
    pub(super) fn start(
        outer: UdpSocket,
        inner: UdpSocket,
        child: Option<SocketAddr>,
        token: Token,
    ) -> anyhow::Result<Relay> {
        for socket in [&outer, &inner] {
            enlarge_buffers(socket);
            socket
                .set_read_timeout(Some(POLL))
                .context("setting a relay socket's time-out")?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let peer = Arc::new(OnceLock::new());
        if let Some(child) = child {
            let _ = peer.set(child);
        }
        let outer = Arc::new(outer);
        let inner = Arc::new(inner);
        let inward = {
            let (outer, inner, peer, stop) =
                (outer.clone(), inner.clone(), peer.clone(), stop.clone());
            std::thread::Builder::new()
                .name("ltx-cp-inward".into())
                .spawn(move || {
                    let mut buf = vec![0; DATAGRAM];
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(n) = outer.recv(&mut buf) else {
                            continue;
                        };
                        let datagram = &buf[..n];
                        if token.is(Check::Hello, datagram) || token.is(Check::Ack, datagram) {
                            continue;
                        }
                        if let Some(child) = peer.get() {
                            let _ = inner.send_to(datagram, child);
                        }
                    }
                })
                .context("starting a relay thread")?
        };
        let outward = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("ltx-cp-outward".into())
                .spawn(move || {
                    let mut buf = vec![0; DATAGRAM];
                    while !stop.load(Ordering::Relaxed) {
                        let Ok((n, from)) = inner.recv_from(&mut buf) else {
                            continue;
                        };
                        if *peer.get_or_init(|| from) == from {
                            let _ = outer.send(&buf[..n]);
                        }
                    }
                })
                .context("starting a relay thread")?
        };
        Ok(Relay {
            stop,
            threads: vec![inward, outward],
        })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Asks for large socket buffers; a refusal only costs burst tolerance.
pub(super) fn enlarge_buffers(socket: &UdpSocket) {
    for option in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: the descriptor is open for the socket's lifetime, and the
        // value is a c_int whose size is passed with it.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&SOCKET_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Every address of one family, port 0: what a socket binds to reach
/// anywhere.
pub(super) fn any_address(ipv6: bool) -> SocketAddr {
    let ip: IpAddr = if ipv6 {
        Ipv6Addr::UNSPECIFIED.into()
    } else {
        Ipv4Addr::UNSPECIFIED.into()
    };
    SocketAddr::new(ip, 0)
}

/// A loopback UDP port that was free a moment ago.
pub(super) fn free_loopback_port() -> anyhow::Result<SocketAddr> {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|s| s.local_addr())
        .context("finding a free loopback port")
}

/// Waits until something listens on UDP `addr`, or `child` exits (an
/// error that says so), for at most `within`. A datagram sent to a port
/// where nothing listens draws an ICMP "port unreachable", which a
/// connected socket reports; one that draws nothing has a listener, which
/// drops a one-byte datagram as it drops any that is not ltx's.
pub(super) fn wait_listening(
    addr: SocketAddr,
    child: &mut std::process::Child,
    within: Duration,
) -> anyhow::Result<()> {
    let target = if addr.ip().is_unspecified() {
        let loopback: IpAddr = if addr.is_ipv6() {
            Ipv6Addr::LOCALHOST.into()
        } else {
            Ipv4Addr::LOCALHOST.into()
        };
        SocketAddr::new(loopback, addr.port())
    } else {
        addr
    };
    let probe = UdpSocket::bind(any_address(addr.is_ipv6()))
        .and_then(|s| s.connect(target).map(|()| s))
        .and_then(|s| {
            s.set_read_timeout(Some(Duration::from_millis(30)))
                .map(|()| s)
        })
        .context("a socket to see whether ltx listens")?;
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().context("waiting for ltx")? {
            bail!("ltx ended before it listened on {addr} ({status})");
        }
        let refused = match probe.send(&[0]).and_then(|_| probe.recv(&mut [0; 1])) {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
            Ok(_) => false,
            Err(e) => return Err(e).context("seeing whether ltx listens"),
        };
        if !refused {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("ltx did not listen on {addr} within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
