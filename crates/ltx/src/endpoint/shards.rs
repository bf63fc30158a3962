//! An endpoint with several drivers: one task reads the socket and hands
//! each datagram to the driver that holds its connection, so that the
//! protocol's work (decryption, decoding, repair) for different clients
//! runs on different cores.
//!
//! A connection's local id names its driver ([`Shard::of`]), so packets
//! after the handshake, from whatever address (a roaming client), need no
//! table. A client's first packets carry an id of its choosing: the
//! [`Router`] sends the first of them to the driver with the fewest server
//! connections and remembers the choice, so that the copies and early data
//! that follow meet the connection they made.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use ltx_proto::accept::packet::{InitialDatagram, RetryPacket};
use ltx_proto::wire::{ConnectionId, Header, PacketType};
use ltx_proto::EcnCodepoint;
use tokio::sync::Notify;

use super::cid::Shard;
use super::{fail, Shared};
use crate::socket::{RecvBuffers, UdpIo};

/// Datagrams a driver may have waiting from the reader; beyond it the
/// reader drops them (counted as unroutable), as a full socket buffer
/// would, rather than queue without bound behind a driver that fell behind.
pub(crate) const INBOX_LIMIT: usize = 8192;

/// The driver that holds the endpoint's own client connections, and so
/// reads the retries and handshake answers sent to them.
pub(crate) const CLIENT_SHARD: usize = 0;

/// What the reader handed to a driver and the driver has not yet taken.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    pub(crate) datagrams: Vec<Inbound>,
    /// Datagrams dropped because the inbox was full: unroutable, to the
    /// endpoint's counts.
    pub(crate) overflowed: u64,
}

impl Shared {
    fn lock_inbox(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `batch` to this driver's inbox, dropping what does not fit.
    fn deliver(&self, batch: &mut Vec<Inbound>) {
        let mut inbox = self.lock_inbox();
        let room = INBOX_LIMIT.saturating_sub(inbox.datagrams.len());
        if batch.len() > room {
            inbox.overflowed += (batch.len() - room) as u64;
            batch.truncate(room);
        }
        inbox.datagrams.append(batch);
    }

    /// Swaps the inbox's contents into `into` (emptied by the last turn),
    /// so that the reader fills the other vector meanwhile.
    pub(crate) fn take_inbox(&self, into: &mut Inbox) {
        std::mem::swap(&mut *self.lock_inbox(), into);
    }
}

/// A datagram the reader handed to a driver.
#[derive(Debug)]
pub(crate) struct Inbound {
    pub(crate) from: SocketAddr,
    pub(crate) ecn: EcnCodepoint,
    pub(crate) bytes: Vec<u8>,
}

/// Which driver a client's first packets go to, for as long as the
/// connection they made lives (or until it is refused).
#[derive(Debug)]
pub(crate) struct Router {
    count: usize,
    inner: Mutex<Routes>,
}

#[derive(Debug, Default)]
struct Routes {
    by_initial: HashMap<(SocketAddr, ConnectionId), usize>,
    /// Routes held by each driver: its server connections and the first
    /// packets on their way to it.
    held: Vec<usize>,
}

impl Router {
    /// A router over `count` drivers.
    pub(crate) fn new(count: usize) -> Router {
        Router {
            count,
            inner: Mutex::new(Routes {
                by_initial: HashMap::new(),
                held: vec![0; count],
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The driver for a datagram `bytes` from `from`.
    pub(crate) fn driver_for(&self, from: SocketAddr, bytes: &[u8]) -> usize {
        if RetryPacket::parse(bytes).is_some() {
            return CLIENT_SHARD;
        }
        if let Ok((header, _)) = Header::parse(bytes) {
            match header.packet_type {
                PacketType::Initial => {}
                PacketType::EarlyData => {
                    // Early data follows its flight's Initial; before the
                    // Initial it is dropped where it lands.
                    let routes = self.lock();
                    return match routes.by_initial.get(&(from, header.dcid)) {
                        Some(&driver) => driver,
                        None => Shard::of(header.dcid, self.count),
                    };
                }
                PacketType::Handshake | PacketType::Data => {
                    return Shard::of(header.dcid, self.count)
                }
            }
        }
        let Some(initial) = InitialDatagram::parse(bytes) else {
            // Counted as unroutable by the driver it lands on.
            return CLIENT_SHARD;
        };
        let mut routes = self.lock();
        if let Some(&driver) = routes.by_initial.get(&(from, initial.dcid)) {
            return driver;
        }
        let driver = (0..self.count)
            .min_by_key(|&d| routes.held[d])
            .unwrap_or(CLIENT_SHARD);
        routes.by_initial.insert((from, initial.dcid), driver);
        routes.held[driver] += 1;
        driver
    }

    /// Driver `driver` made a connection from the first packet of `route`:
    /// the route stays (or becomes) its until [`Router::forget`].
    pub(crate) fn claim(&self, route: (SocketAddr, ConnectionId), driver: usize) {
        let mut routes = self.lock();
        if let Some(previous) = routes.by_initial.insert(route, driver) {
            routes.held[previous] -= 1;
        }
        routes.held[driver] += 1;
    }

    /// Driver `driver` made no connection from `route`'s first packet, or
    /// removed the connection it made: the route goes, if it was its.
    pub(crate) fn forget(&self, route: (SocketAddr, ConnectionId), driver: usize) {
        let mut routes = self.lock();
        if routes.by_initial.get(&route) == Some(&driver) {
            routes.by_initial.remove(&route);
            routes.held[driver] -= 1;
        }
    }

    /// Server connections (made or on their way) from `ip` on every
    /// driver, other than `route`'s: the per-address limit counts them all.
    pub(crate) fn held_from(&self, ip: IpAddr, route: (SocketAddr, ConnectionId)) -> usize {
        self.lock()
            .by_initial
            .keys()
            .filter(|r| r.0.ip() == ip && **r != route)
            .count()
    }
}

/// Tells the reader when the last driver has ended.
#[derive(Debug)]
pub(crate) struct DriversLeft {
    left: AtomicUsize,
    all_done: Notify,
}

impl DriversLeft {
    pub(crate) fn new(count: usize) -> DriversLeft {
        DriversLeft {
            left: AtomicUsize::new(count),
            all_done: Notify::new(),
        }
    }

    /// One driver ended.
    pub(crate) fn one_done(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            // A stored permit: the reader sees it even if it is busy now.
            self.all_done.notify_one();
        }
    }
}

/// The reader of an endpoint with several drivers: reads the socket and
/// hands each datagram to its driver's inbox; ends when every driver has.
pub(crate) async fn read(
    shards: Vec<Arc<Shared>>,
    socket: Arc<UdpIo>,
    mut buffers: RecvBuffers,
    router: Arc<Router>,
    drivers_left: Arc<DriversLeft>,
) {
    let mut batches: Vec<Vec<Inbound>> = shards.iter().map(|_| Vec::new()).collect();
    loop {
        let readable = tokio::select! {
            r = socket.readable() => r,
            _ = drivers_left.all_done.notified() => return,
        };
        if let Err(e) = readable {
            shards.iter().for_each(|shard| fail(shard, &e));
            return;
        }
        let received = socket.try_recv(&mut buffers, |datagram| {
            let driver = router.driver_for(datagram.from, datagram.bytes);
            batches[driver].push(Inbound {
                from: datagram.from,
                ecn: datagram.ecn,
                bytes: datagram.bytes.to_vec(),
            });
        });
        let icmp = match received {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) if crate::icmp::is_icmp_error(&e) => true,
            Err(e) => {
                shards.iter().for_each(|shard| fail(shard, &e));
                return;
            }
        };
        let errors = if icmp {
            socket.take_icmp_errors()
        } else {
            Vec::new()
        };
        let now = Instant::now();
        for (shard, batch) in shards.iter().zip(&mut batches) {
            if batch.is_empty() && errors.is_empty() {
                continue;
            }
            if !batch.is_empty() {
                shard.deliver(batch);
            }
            if !errors.is_empty() {
                // Rare: the driver's state, not its inbox.
                shard.lock().on_icmp_errors(now, errors.clone());
            }
            shard.wake_driver.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn data_goes_to_the_driver_its_connection_id_names_from_any_address() {
        let router = Router::new(3);
        for cid in [0u32, 1, 2, 7, 0xffff_fffe] {
            let mut packet = Vec::new();
            Header {
                packet_type: PacketType::Data,
                key_phase: false,
                dcid: ConnectionId(cid),
                number: ltx_proto::wire::TruncatedPacketNumber::whole(
                    ltx_proto::wire::PacketNumber(5),
                ),
            }
            .emit(&mut packet);
            packet.extend_from_slice(&[0; 40]);
            for port in [1000, 2000] {
                assert_eq!(router.driver_for(from(port), &packet), cid as usize % 3);
            }
        }
    }

    #[test]
    fn first_packets_go_to_the_least_held_driver_and_stay_there_until_forgotten() {
        let router = Router::new(2);
        let a = (from(1), ConnectionId(10));
        let b = (from(2), ConnectionId(10));
        router.claim(a, 0);
        // The next new route goes to driver 1, the least held.
        router.claim(b, 1);
        assert_eq!(router.held_from(from(9).ip(), a), 1);
        router.forget(a, 1); // not driver 1's: kept
        assert_eq!(router.lock().by_initial.get(&a), Some(&0));
        router.forget(a, 0);
        assert_eq!(router.lock().by_initial.get(&a), None);
        assert_eq!(router.lock().held, vec![0, 1]);
        router.forget(b, 1);
        assert_eq!(router.lock().held, vec![0, 0]);
    }

    #[test]
    fn a_task_waiting_on_every_driver_is_listed_once_per_driver() {
        struct Task;
        impl std::task::Wake for Task {
            fn wake(self: Arc<Self>) {}
        }
        let mut wakers = Vec::new();
        let waker = std::task::Waker::from(Arc::new(Task));
        for _ in 0..3 {
            super::super::register(&mut wakers, &waker.clone());
        }
        assert_eq!(wakers.len(), 1);
        // Another task is listed beside it.
        let other = std::task::Waker::from(Arc::new(Task));
        super::super::register(&mut wakers, &other);
        assert_eq!(wakers.len(), 2);
    }

    #[test]
    fn the_last_driver_to_end_tells_the_reader() {
        let left = DriversLeft::new(2);
        left.one_done();
        assert_eq!(left.left.load(Ordering::Acquire), 1);
        left.one_done();
        assert_eq!(left.left.load(Ordering::Acquire), 0);
    }
}
