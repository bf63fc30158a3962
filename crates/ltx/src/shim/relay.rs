//! The relay thread: two sockets, two links and one `ppoll` loop that
//! releases what the links deliver and offers them what the sockets read.

use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ltx_link::{Datagram, Ecn, Link};
use quinn_udp::{EcnCodepoint, RecvMeta, Transmit, UdpSocketState};
use rustix::event::{PollFd, PollFlags, Timespec};

use super::RelayStats;

/// Datagrams read per system call.
const BATCH: usize = 8;

/// Room for one read: the largest UDP payload, or a GRO batch of
/// datagrams, which the kernel keeps under the same limit.
const READ_BUFFER: usize = 1 << 16;

/// Reads per wake-up before the relay goes back to its releases, so that a
/// flood on one socket cannot hold back datagrams that are due.
const READS_PER_WAKE: usize = 4;

/// What the relay thread and the handle share: the links and the counters.
pub(super) struct Shared {
    pub(super) forward: Direction,
    pub(super) reverse: Direction,
}

/// One direction: its link and what the relay counted around it.
pub(super) struct Direction {
    pub(super) link: Link<Datagram>,
    pub(super) relay: RelayStats,
}

impl Direction {
    pub(super) fn new(link: Link<Datagram>) -> Direction {
        Direction {
            link,
            relay: RelayStats::default(),
        }
    }
}

/// Which socket a datagram came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

/// The relay thread's state.
pub(super) struct Relay {
    pub(super) client_socket: UdpSocket,
    pub(super) client_state: UdpSocketState,
    pub(super) server_socket: UdpSocket,
    pub(super) server_state: UdpSocketState,
    pub(super) server: SocketAddr,
    /// Where replies go: the last address the client-facing socket read from.
    pub(super) client: Option<SocketAddr>,
    pub(super) wake: UnixDatagram,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) shared: Arc<Mutex<Shared>>,
}

impl Relay {
    /// Runs until told to stop, or until a socket fails for good.
    pub(super) fn run(mut self) -> io::Result<()> {
        ltx_realtime::prefer_prompt_wakeups();
        let mut buffer = vec![0u8; BATCH * READ_BUFFER];
        let result = self.relay(&mut buffer);
        if let Err(error) = &result {
            tracing::error!(%error, "the impairment relay stopped");
        }
        result
    }

    fn relay(&mut self, buffer: &mut [u8]) -> io::Result<()> {
        loop {
            if self.stop.load(Ordering::Acquire) {
                return Ok(());
            }
            let timeout = match self.release_due() {
                Some(next) => {
                    let wait = next.saturating_duration_since(Instant::now());
                    if wait.is_zero() {
                        continue;
                    }
                    Some(wait)
                }
                None => None,
            };
            let (client, server, woken) = match self.wait(timeout) {
                Ok(ready) => ready,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if woken {
                // Only the handle writes here, and only to stop, which the
                // loop checks next.
                let _ = self.wake.recv(&mut [0; 1]);
            }
            if client {
                self.receive(Side::Client, buffer)?;
            }
            if server {
                self.receive(Side::Server, buffer)?;
            }
        }
    }

    /// Waits until a socket is readable or `timeout` has passed: which of
    /// the client-facing socket, the server-facing socket and the wake-up
    /// pair are ready.
    fn wait(&self, timeout: Option<Duration>) -> io::Result<(bool, bool, bool)> {
        let flags = PollFlags::IN;
        let mut fds = [
            PollFd::new(&self.client_socket, flags),
            PollFd::new(&self.server_socket, flags),
            PollFd::new(&self.wake, flags),
        ];
        // A timeout too long for a timespec is as good as none.
        let timeout = timeout.and_then(|t| Timespec::try_from(t).ok());
        rustix::event::poll(&mut fds, timeout.as_ref())?;
        // An error or hang-up is reported as ready too: the read that
        // follows is what finds out what it is.
        let ready = |fd: &PollFd<'_>| !fd.revents().is_empty();
        Ok((ready(&fds[0]), ready(&fds[1]), ready(&fds[2])))
    }

    /// Sends every datagram the links have delivered by now; returns when
    /// the next one is due.
    fn release_due(&mut self) -> Option<Instant> {
        let mut shared = lock(&self.shared);
        let now = Instant::now();
        // Nothing is released before the client has spoken (the server's
        // datagrams are discarded until then), so `client` is known for
        // every reverse release.
        if let Some(client) = self.client {
            release(
                &mut shared.reverse,
                now,
                &self.client_socket,
                &self.client_state,
                client,
            );
        }
        release(
            &mut shared.forward,
            now,
            &self.server_socket,
            &self.server_state,
            self.server,
        );
        match (
            shared.forward.link.next_event(),
            shared.reverse.link.next_event(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Reads what `side`'s socket holds, a few batches at most, and offers
    /// it to the link of its direction.
    fn receive(&mut self, side: Side, buffer: &mut [u8]) -> io::Result<()> {
        let (socket, state) = match side {
            Side::Client => (&self.client_socket, &self.client_state),
            Side::Server => (&self.server_socket, &self.server_state),
        };
        let mut meta = [RecvMeta::default(); BATCH];
        for _ in 0..READS_PER_WAKE {
            let mut chunks = buffer.chunks_mut(READ_BUFFER);
            let mut slices: [IoSliceMut<'_>; BATCH] =
                std::array::from_fn(|_| IoSliceMut::new(chunks.next().expect("BATCH chunks")));
            let count = match state.recv(socket.into(), &mut slices, &mut meta) {
                Ok(count) => count,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(error) if transient(&error) => continue,
                Err(error) => return Err(error),
            };
            let now = Instant::now();
            let mut shared = lock(&self.shared);
            for (meta, chunk) in meta.iter().zip(buffer.chunks(READ_BUFFER)).take(count) {
                // With GRO, one read holds several datagrams of `stride`
                // bytes each, the last one possibly shorter.
                let stride = meta.stride.max(1);
                for payload in chunk[..meta.len].chunks(stride) {
                    let datagram = Datagram {
                        payload: payload.to_vec(),
                        ecn: from_quinn(meta.ecn),
                    };
                    let direction = match side {
                        Side::Client => {
                            self.client = Some(meta.addr);
                            &mut shared.forward
                        }
                        Side::Server => {
                            let from_server = same_endpoint(meta.addr, self.server);
                            if !from_server || self.client.is_none() {
                                shared.reverse.relay.discarded += 1;
                                continue;
                            }
                            &mut shared.reverse
                        }
                    };
                    direction.relay.received += 1;
                    direction.link.enqueue(now, datagram);
                }
            }
            // A short batch emptied the socket: another read would only
            // cost a system call to learn so.
            if count < BATCH {
                break;
            }
        }
        Ok(())
    }
}

/// Sends what `direction`'s link has delivered by `now` to `to`.
fn release(
    direction: &mut Direction,
    now: Instant,
    socket: &UdpSocket,
    state: &UdpSocketState,
    to: SocketAddr,
) {
    while let Some(due) = direction.link.next_event().filter(|&at| at <= now) {
        let Some(datagram) = direction.link.dequeue_ready(now) else {
            break;
        };
        let transmit = Transmit {
            destination: to,
            ecn: to_quinn(datagram.ecn),
            contents: &datagram.payload,
            segment_size: None,
            src_ip: None,
        };
        let lateness = Instant::now().saturating_duration_since(due);
        direction.relay.lateness.record(lateness);
        direction.relay.total_lateness += lateness;
        // A datagram the socket refuses is lost, not retried: the link has
        // already decided when it arrives, and sending it later would make
        // it arrive at another time.
        if let Err(error) = state.try_send(socket.into(), &transmit) {
            direction.relay.send_errors += 1;
            tracing::debug!(%error, %to, "the relay could not send a datagram");
        }
    }
}

/// Errors a read may return for an earlier datagram's sake (an ICMP
/// error reported on the socket), after which the socket still works.
fn transient(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
    )
}

/// Whether `a` and `b` name the same endpoint, an IPv4-mapped IPv6
/// address being the same as its IPv4 address.
fn same_endpoint(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

fn from_quinn(ecn: Option<EcnCodepoint>) -> Ecn {
    match ecn {
        None => Ecn::NotEct,
        Some(EcnCodepoint::Ect0) => Ecn::Ect0,
        Some(EcnCodepoint::Ect1) => Ecn::Ect1,
        Some(EcnCodepoint::Ce) => Ecn::Ce,
    }
}

fn to_quinn(ecn: Ecn) -> Option<EcnCodepoint> {
    match ecn {
        Ecn::NotEct => None,
        Ecn::Ect0 => Some(EcnCodepoint::Ect0),
        Ecn::Ect1 => Some(EcnCodepoint::Ect1),
        Ecn::Ce => Some(EcnCodepoint::Ce),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecn_codepoints_convert_both_ways() {
        for ecn in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
            assert_eq!(from_quinn(to_quinn(ecn)), ecn);
        }
    }

    #[test]
    fn an_ipv4_mapped_address_is_its_ipv4_address() {
        let v4: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:4433".parse().unwrap();
        let other_port: SocketAddr = "127.0.0.1:4434".parse().unwrap();
        assert!(same_endpoint(v4, mapped));
        assert!(!same_endpoint(v4, other_port));
    }
}
