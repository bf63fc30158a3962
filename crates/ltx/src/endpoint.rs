//! The endpoint: one UDP socket, the connections on it, and the task that
//! drives them.

use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use ltx_proto::accept::Acceptor;
use ltx_proto::protection::{HandshakeError, PublicKey};
use ltx_proto::wire::ConnectionId;
use ltx_proto::{CloseReason, Event, Side, StreamId};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::Notify;

pub(crate) use crate::config::{entropy, prepare_early_data, EndpointConfig, Security};
use crate::connection::Connection;
use crate::qlog::QlogFile;
use crate::saved_paths::SavedPaths;
use crate::socket::{RecvBuffers, SendQueue, UdpIo};
use crate::totals::{EndpointStats, EndpointTotals};

mod cid;
mod incoming;
mod shards;

pub(crate) use cid::{with_unused_cid, Shard};
use shards::{DriversLeft, Inbox, Router, CLIENT_SHARD};

/// Identifies a connection among the endpoint's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ConnectionKey(u64);

/// Where a connection stands, as its handles see it.
#[derive(Debug, Clone)]
pub(crate) enum Phase {
    Handshaking,
    Established,
    Closed(CloseReason),
}

/// Tasks waiting on a connection.
#[derive(Debug, Default)]
pub(crate) struct Wakers {
    pub(crate) established: Vec<Waker>,
    pub(crate) accept_stream: Option<Waker>,
    pub(crate) read: HashMap<StreamId, Waker>,
    pub(crate) write: HashMap<StreamId, Waker>,
    pub(crate) closed: Vec<Waker>,
}

impl Wakers {
    fn wake_all(&mut self) {
        self.established.drain(..).for_each(Waker::wake);
        self.closed.drain(..).for_each(Waker::wake);
        self.accept_stream.take().into_iter().for_each(Waker::wake);
        self.read.drain().for_each(|(_, w)| w.wake());
        self.write.drain().for_each(|(_, w)| w.wake());
    }
}

/// One connection and what its handles wait on.
pub(crate) struct Slot {
    pub(crate) proto: ltx_proto::Connection,
    pub(crate) remote: SocketAddr,
    pub(crate) phase: Phase,
    pub(crate) wakers: Wakers,
    /// Live `Connection` handles (streams hold one each).
    pub(crate) handles: usize,
    /// Whether a handle was ever given out: a server connection waiting
    /// in the accept queue has none yet and must not be closed for it.
    pub(crate) handed_out: bool,
    /// The Initial route of a server connection, removed with it.
    initial_route: Option<(SocketAddr, ConnectionId)>,
    /// Its qlog file, when the endpoint writes them.
    qlog: Option<QlogFile>,
}

/// Everything behind the endpoint's lock.
pub(crate) struct State {
    pub(crate) slots: HashMap<ConnectionKey, Slot>,
    next_key: u64,
    pub(crate) by_cid: HashMap<ConnectionId, ConnectionKey>,
    by_initial: HashMap<(SocketAddr, ConnectionId), ConnectionKey>,
    incoming: VecDeque<ConnectionKey>,
    accept_wakers: Vec<Waker>,
    pub(crate) config: EndpointConfig,
    acceptor: Acceptor,
    pub(crate) rng: SmallRng,
    /// Every `Endpoint` handle was dropped: the driver ends once its
    /// connections have.
    handles_gone: bool,
    /// The socket failed; the reason, for everyone waiting.
    pub(crate) failed: Option<String>,
    /// Datagrams dropped before reaching a connection.
    pub(crate) unroutable: u64,
    /// Clients whose handshake a server connection refused.
    handshakes_refused: u64,
    /// The latest refusals, for [`Endpoint::refused_handshake`].
    refused: VecDeque<RefusedHandshake>,
    refused_wakers: Vec<Waker>,
    /// The socket's address, for qlog files.
    local_addr: SocketAddr,
    /// Counts over the connections already removed, and the events of
    /// all.
    retired: EndpointTotals,
    /// The paths of clients' past connections (servers with
    /// [`EndpointConfig::remember_paths`]), shared by the endpoint's
    /// drivers.
    saved_paths: Arc<Mutex<SavedPaths>>,
    /// Which of the endpoint's drivers this is.
    pub(crate) shard: Shard,
    /// With several drivers: where the reader sends a client's first
    /// packets.
    router: Option<Arc<Router>>,
}

/// A client's handshake that this server refused: from where, and why
/// (its key not allowed, or a first message that did not authenticate:
/// another key for this server, or another pre-shared key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedHandshake {
    /// The client's address.
    pub from: SocketAddr,
    /// Why it was refused.
    pub reason: HandshakeError,
}

/// Refusals kept for [`Endpoint::refused_handshake`] until read; older
/// ones are dropped (they are still counted), so that a flood of bad
/// handshakes costs bounded memory.
const REFUSALS_KEPT: usize = 64;

/// What the endpoint's handles and its driver share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Wakes the driver after an application call that may have something
    /// to send (data written, flow-control credit from a read, a close).
    pub(crate) wake_driver: Notify,
    local_addr: SocketAddr,
    /// With several drivers: what the reader handed to this one, behind a
    /// lock of its own, so that the reader never waits for the driver's
    /// protocol work.
    inbox: Mutex<Inbox>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held leaves the state as it was at a
        // call boundary of the protocol, which stays consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An ltx endpoint: a UDP socket on which connections are made and
/// accepted. Clones share the socket; the socket closes when every clone
/// and every connection is gone.
///
/// ```
/// use ltx::{Endpoint, EndpointConfig};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Endpoint::bind("127.0.0.1:0".parse()?, EndpointConfig::server())?;
/// let client = Endpoint::bind("127.0.0.1:0".parse()?, EndpointConfig::client())?;
/// let (server_addr, server_key) = (server.local_addr(), server.public_key().expect("a key"));
/// tokio::spawn(async move {
///     let connection = server.accept().await.expect("a client connects");
///     let (mut send, mut recv) = connection.accept_stream().await.expect("a stream");
///     let mut message = Vec::new();
///     recv.read_to_end(&mut message).await?;
///     send.write_all(&message).await?;
///     send.shutdown().await?;
///     connection.closed().await;
///     Ok::<(), std::io::Error>(())
/// });
/// let connection = client.connect(server_addr, server_key).await?;
/// let (mut send, mut recv) = connection.open_stream()?;
/// send.write_all(b"over a lossy sky").await?;
/// send.shutdown().await?;
/// let mut echo = Vec::new();
/// recv.read_to_end(&mut echo).await?;
/// assert_eq!(echo, b"over a lossy sky");
/// connection.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Endpoint {
    pub(crate) handle: Arc<EndpointHandle>,
}

pub(crate) struct EndpointHandle {
    /// Each driver's share of the endpoint; the first also holds the
    /// endpoint's client connections.
    pub(crate) shards: Vec<Arc<Shared>>,
}

impl EndpointHandle {
    /// The driver that holds the endpoint's client connections.
    pub(crate) fn client_shard(&self) -> &Arc<Shared> {
        &self.shards[CLIENT_SHARD]
    }
}

impl Drop for EndpointHandle {
    fn drop(&mut self) {
        for shared in &self.shards {
            let mut state = shared.lock();
            state.handles_gone = true;
            state.accept_wakers.drain(..).for_each(Waker::wake);
            drop(state);
            shared.wake_driver.notify_one();
        }
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local_addr", &self.local_addr())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Binds a UDP socket to `addr` and starts the endpoint's driver tasks
    /// ([`EndpointConfig::drivers`]) on the current tokio runtime.
    ///
    /// Fails if the socket cannot be bound or the transport settings are
    /// invalid; must be called inside a tokio runtime.
    pub fn bind(addr: SocketAddr, mut config: EndpointConfig) -> io::Result<Endpoint> {
        if let Some(dir) = &config.qlog_dir {
            if !dir.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("the qlog directory {} does not exist", dir.display()),
                ));
            }
            config.transport.set_trace(true);
        }
        config
            .transport
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        prepare_early_data(&mut config)?;
        let secret = entropy().ok_or_else(|| {
            io::Error::other("the operating system has no random source for the retry secret")
        })?;
        let socket = Arc::new(UdpIo::bind(addr)?);
        let local_addr = socket.local_addr()?;
        let count = config.drivers.max(1);
        let router = (count > 1).then(|| Arc::new(Router::new(count)));
        let saved_paths = Arc::new(Mutex::new(SavedPaths::default()));
        let shards: Vec<Arc<Shared>> = (0..count)
            .map(|index| {
                let config = config.for_one_of(count);
                Arc::new(Shared {
                    state: Mutex::new(State {
                        slots: HashMap::new(),
                        next_key: 0,
                        by_cid: HashMap::new(),
                        by_initial: HashMap::new(),
                        incoming: VecDeque::new(),
                        accept_wakers: Vec::new(),
                        acceptor: Acceptor::new(config.accept.clone(), secret, Instant::now()),
                        config,
                        rng: SmallRng::from_os_rng(),
                        handles_gone: false,
                        failed: None,
                        unroutable: 0,
                        handshakes_refused: 0,
                        refused: VecDeque::new(),
                        refused_wakers: Vec::new(),
                        local_addr,
                        retired: EndpointTotals::default(),
                        saved_paths: saved_paths.clone(),
                        shard: Shard { index, count },
                        router: router.clone(),
                    }),
                    wake_driver: Notify::new(),
                    local_addr,
                    inbox: Mutex::new(Inbox::default()),
                })
            })
            .collect();
        let buffers = socket.recv_buffers();
        match router {
            None => {
                tokio::spawn(drive(shards[0].clone(), socket, Some(buffers), None));
            }
            Some(router) => {
                let left = Arc::new(DriversLeft::new(count));
                for shard in &shards {
                    let driver = drive(shard.clone(), socket.clone(), None, Some(left.clone()));
                    tokio::spawn(driver);
                }
                let reader = shards::read(shards.clone(), socket, buffers, router, left);
                tokio::spawn(reader);
            }
        }
        Ok(Endpoint {
            handle: Arc::new(EndpointHandle { shards }),
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.handle.client_shard().local_addr
    }

    /// Datagrams that reached the socket but no connection: malformed,
    /// unknown connection, or first packets the endpoint would not take
    /// (and, with several drivers, those that came while their driver had
    /// thousands waiting).
    pub fn unroutable_datagrams(&self) -> u64 {
        self.sum(|state| state.unroutable)
    }

    /// Clients whose handshake this endpoint refused: they did not have
    /// its public key (or the pre-shared key), or their key is not on its
    /// allow list. They were sent nothing, and nothing of them was kept.
    pub fn handshakes_refused(&self) -> u64 {
        self.sum(|state| state.handshakes_refused)
    }

    /// `count` summed over the drivers.
    fn sum(&self, count: impl Fn(&State) -> u64) -> u64 {
        self.handle.shards.iter().map(|s| count(&s.lock())).sum()
    }

    /// Waits for the next client handshake this server refuses, for a log
    /// that tells an administrator who was turned away and why; `None` once
    /// the endpoint's socket failed. Only the latest 64 unread refusals are
    /// kept.
    pub async fn refused_handshake(&self) -> Option<RefusedHandshake> {
        poll_fn(|cx| {
            for shared in &self.handle.shards {
                let mut state = shared.lock();
                if let Some(refusal) = state.refused.pop_front() {
                    return Poll::Ready(Some(refusal));
                }
                if state.failed.is_some() {
                    return Poll::Ready(None);
                }
            }
            for shared in &self.handle.shards {
                register(&mut shared.lock().refused_wakers, cx.waker());
            }
            Poll::Pending
        })
        .await
    }

    /// What this endpoint holds and what it refused.
    pub fn stats(&self) -> EndpointStats {
        let mut stats = EndpointStats::default();
        for shared in &self.handle.shards {
            let state = shared.lock();
            stats.connections += state.slots.len();
            stats.connections_per_driver.push(state.slots.len());
            stats.half_open += state.half_open();
            stats.unroutable += state.unroutable;
            stats.handshakes_refused += state.handshakes_refused;
            crate::totals::add_accept_stats(&mut stats.accept, &state.acceptor.stats());
            stats.totals.merge(&state.totals());
            stats
                .open
                .extend(state.slots.values().map(|s| s.proto.stats()));
        }
        stats
    }

    /// This endpoint's static public key, which clients must be given to
    /// connect to it; `None` with [`Security::Plain`].
    pub fn public_key(&self) -> Option<PublicKey> {
        match &self.handle.client_shard().lock().config.security {
            Security::Noise(security) => Some(security.keypair.public()),
            Security::Plain => None,
        }
    }

    /// Waits for the next incoming connection (handshake done, or with
    /// early data its first stream opened before that); `None`
    /// once the endpoint takes no more (it is not a server, or its socket
    /// failed).
    pub async fn accept(&self) -> Option<Connection> {
        let shards = &self.handle.shards;
        poll_fn(|cx| {
            for (index, shared) in shards.iter().enumerate() {
                let mut state = shared.lock();
                if let Some(key) = state.incoming.pop_front() {
                    let slot = state.slots.get_mut(&key).expect("queued slots live");
                    slot.handed_out = true;
                    return Poll::Ready(Some((index, key)));
                }
                if !state.config.accept_incoming || state.failed.is_some() {
                    return Poll::Ready(None);
                }
            }
            for shared in shards {
                register(&mut shared.lock().accept_wakers, cx.waker());
            }
            Poll::Pending
        })
        .await
        .map(|(index, key)| Connection::new(shards[index].clone(), key))
    }

    /// Waits until every connection of this endpoint has closed (its last
    /// packets sent), for a clean exit.
    pub async fn wait_idle(&self) {
        // The driver does not announce idleness; polling is simple and
        // costs nothing that matters beside a transfer.
        while self
            .handle
            .shards
            .iter()
            .any(|s| !s.lock().slots.is_empty())
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl State {
    pub(crate) fn insert(
        &mut self,
        proto: ltx_proto::Connection,
        remote: SocketAddr,
        initial_route: Option<(SocketAddr, ConnectionId)>,
    ) -> ConnectionKey {
        let key = ConnectionKey(self.next_key);
        self.next_key += 1;
        match proto.side() {
            Side::Client => self.retired.connections_opened += 1,
            Side::Server => self.retired.connections_accepted += 1,
        }
        let qlog = self.config.qlog_dir.as_deref().and_then(|dir| {
            let side = proto.side();
            QlogFile::create(dir, key.0, side, self.local_addr, remote, Instant::now())
                .map_err(|e| tracing::warn!("no qlog file in {}: {e}", dir.display()))
                .ok()
        });
        self.by_cid.insert(proto.local_cid(), key);
        if let Some(route) = initial_route {
            self.by_initial.insert(route, key);
        }
        self.slots.insert(
            key,
            Slot {
                proto,
                remote,
                phase: Phase::Handshaking,
                wakers: Wakers::default(),
                handles: 0,
                handed_out: false,
                initial_route,
                qlog,
            },
        );
        key
    }

    fn remove(&mut self, key: ConnectionKey) {
        if let Some(slot) = self.slots.remove(&key) {
            if self.config.remember_paths && slot.proto.side() == Side::Server {
                if let (Some(client), Some(saved)) =
                    (slot.proto.peer_key(), slot.proto.path_to_save())
                {
                    let mut saved_paths =
                        self.saved_paths.lock().unwrap_or_else(|e| e.into_inner());
                    saved_paths.put(client, saved, Instant::now());
                }
            }
            self.retired.add(&slot.proto.stats());
            self.by_cid.remove(&slot.proto.local_cid());
            if let Some(route) = slot.initial_route {
                self.by_initial.remove(&route);
                if let Some(router) = &self.router {
                    router.forget(route, self.shard.index);
                }
            }
            self.incoming.retain(|k| *k != key);
        }
    }

    /// The totals of the removed connections and of those held now.
    fn totals(&self) -> EndpointTotals {
        let mut totals = self.retired;
        for slot in self.slots.values() {
            totals.add(&slot.proto.stats());
        }
        totals
    }

    /// Server connections whose handshake is not complete, or whose
    /// client has not yet proved its address (a plain server counts itself
    /// connected on the first packet, which anyone can spoof).
    fn half_open(&self) -> usize {
        self.slots
            .values()
            .filter(|s| {
                s.proto.side() == Side::Server
                    && (matches!(s.phase, Phase::Handshaking) || !s.proto.is_address_validated())
            })
            .count()
    }

    /// ICMP errors for datagrams sent to `destination`s: a client
    /// connection still in its handshake with one of them ends at once.
    fn on_icmp_errors(&mut self, now: Instant, errors: Vec<crate::icmp::IcmpError>) {
        for error in errors {
            for slot in self.slots.values_mut() {
                if slot.remote == error.destination {
                    slot.proto.handle_unreachable(now, error.why);
                }
            }
        }
    }

    /// Collects what every connection has to send, hands its events to the
    /// tasks waiting on them, and drops connections that are over. Returns
    /// the earliest timer.
    fn poll_connections(
        &mut self,
        now: Instant,
        out: &mut SendQueue,
        max_segments: usize,
    ) -> Option<Instant> {
        let mut earliest: Option<Instant> = None;
        let mut finished = Vec::new();
        for (key, slot) in &mut self.slots {
            if slot.proto.poll_timeout().is_some_and(|t| t <= now) {
                slot.proto.handle_timeout(now);
            }
            while let Some(transmit) = slot.proto.poll_transmit(now) {
                // The connection follows a peer that moved (and returns if
                // the new address does not answer its challenge); so do ICMP
                // matching, the per-address counts and the logs.
                if let Some(to) = transmit.destination.filter(|to| *to != slot.remote) {
                    tracing::info!(from = %slot.remote, %to, "the peer's address changed");
                    slot.remote = to;
                }
                out.push(slot.remote, transmit.ecn, &transmit.contents, max_segments);
                slot.proto.recycle(transmit.contents);
            }
            while let Some(event) = slot.proto.poll_event() {
                match event {
                    Event::Connected => {
                        self.retired.handshakes_completed += 1;
                        slot.phase = Phase::Established;
                        slot.wakers.established.drain(..).for_each(Waker::wake);
                        if slot.proto.side() == Side::Server {
                            let saved = slot
                                .proto
                                .peer_key()
                                .filter(|_| self.config.remember_paths)
                                .and_then(|client| {
                                    let saved_paths =
                                        self.saved_paths.lock().unwrap_or_else(|e| e.into_inner());
                                    saved_paths.get(&client, now)
                                });
                            if let Some(saved) = saved {
                                slot.proto.resume_from(now, saved);
                            }
                        }
                        if slot.proto.side() == Side::Server
                            && !slot.handed_out
                            && !self.incoming.contains(key)
                        {
                            self.incoming.push_back(*key);
                            self.accept_wakers.drain(..).for_each(Waker::wake);
                        }
                    }
                    Event::StreamOpened(_) => {
                        if let Some(w) = slot.wakers.accept_stream.take() {
                            w.wake();
                        }
                        // Early data: the application takes the connection
                        // with its first stream, before the handshake ends.
                        let early = slot.proto.side() == Side::Server
                            && matches!(slot.phase, Phase::Handshaking);
                        if early && !slot.handed_out && !self.incoming.contains(key) {
                            self.incoming.push_back(*key);
                            self.accept_wakers.drain(..).for_each(Waker::wake);
                        }
                    }
                    Event::StreamReadable(id) | Event::StreamReset { id, .. } => {
                        if let Some(w) = slot.wakers.read.remove(&id) {
                            w.wake();
                        }
                    }
                    Event::StreamWritable(id) | Event::StopSending { id, .. } => {
                        if let Some(w) = slot.wakers.write.remove(&id) {
                            w.wake();
                        }
                    }
                    Event::Closed(reason) => {
                        self.retired.closed.count(&reason);
                        if let CloseReason::HandshakeRefused(why) = &reason {
                            self.handshakes_refused += 1;
                            if self.refused.len() == REFUSALS_KEPT {
                                self.refused.pop_front();
                            }
                            self.refused.push_back(RefusedHandshake {
                                from: slot.remote,
                                reason: *why,
                            });
                            self.refused_wakers.drain(..).for_each(Waker::wake);
                        }
                        if let Some(qlog) = &mut slot.qlog {
                            if let Err(e) = qlog.closed(now, &reason) {
                                tracing::warn!("writing {}: {e}", qlog.path().display());
                            }
                        }
                        slot.phase = Phase::Closed(reason);
                        slot.wakers.wake_all();
                    }
                    Event::Trace(event) => {
                        if let Some(qlog) = &mut slot.qlog {
                            if let Err(e) = qlog.event(now, &event) {
                                tracing::warn!(
                                    "writing {}: {e}; its trace stops",
                                    qlog.path().display()
                                );
                                slot.qlog = None;
                            }
                        }
                    }
                }
            }
            let unheld = slot.handed_out && slot.handles == 0;
            let closed = matches!(slot.phase, Phase::Closed(_));
            if closed && (unheld || !slot.handed_out) {
                finished.push(*key);
            }
            if let Some(t) = slot.proto.poll_timeout() {
                earliest = Some(earliest.map_or(t, |e| e.min(t)));
            }
        }
        for key in finished {
            self.remove(key);
        }
        earliest
    }
}
/// A driver task: runs its connections' timers, hands them their
/// datagrams, and sends what they produce. With `reading`, it reads the
/// socket itself (an endpoint with one driver); otherwise the endpoint's
/// reader fills its inbox, and it tells `left` when it ends.
async fn drive(
    shared: Arc<Shared>,
    socket: Arc<UdpIo>,
    mut reading: Option<RecvBuffers>,
    left: Option<Arc<DriversLeft>>,
) {
    let max_segments = socket.max_gso_segments();
    let mut out = SendQueue::default();
    let mut timer: Option<Instant> = None;
    let mut inbox = Inbox::default();
    loop {
        ask_for_prompt_wakeups();
        let sleep = async {
            match timer {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        let readable = tokio::select! {
            r = socket.readable(), if reading.is_some() => Some(r),
            _ = shared.wake_driver.notified() => None,
            _ = sleep => None,
        };
        if let Some(Err(e)) = readable {
            fail(&shared, &e);
            break;
        }
        let now = Instant::now();
        {
            let mut state = shared.lock();
            if let (Some(buffers), Some(_)) = (&mut reading, &readable) {
                let received = socket.try_recv(buffers, |datagram| {
                    state.handle_datagram(
                        now,
                        datagram.from,
                        datagram.bytes,
                        datagram.ecn,
                        &mut out,
                        max_segments,
                    );
                });
                match received {
                    // Woken for an ICMP error rather than a datagram, or
                    // told of one by the call: the error queue says which
                    // destination did not take our datagrams.
                    Ok(0) => state.on_icmp_errors(now, socket.take_icmp_errors()),
                    Ok(_) => {}
                    Err(e) if crate::icmp::is_icmp_error(&e) => {
                        state.on_icmp_errors(now, socket.take_icmp_errors());
                    }
                    Err(e) => {
                        drop(state);
                        fail(&shared, &e);
                        break;
                    }
                }
            }
            shared.take_inbox(&mut inbox);
            state.unroutable += std::mem::take(&mut inbox.overflowed);
            for datagram in inbox.datagrams.drain(..) {
                state.handle_datagram(
                    now,
                    datagram.from,
                    &datagram.bytes,
                    datagram.ecn,
                    &mut out,
                    max_segments,
                );
            }
            timer = state.poll_connections(now, &mut out, max_segments);
            let over = state.handles_gone && state.slots.is_empty();
            if over || state.failed.is_some() {
                break;
            }
        }
        if !out.is_empty() {
            for batch in out.take() {
                let sent = socket
                    .send(batch.destination, batch.ecn, &batch.contents, batch.segment)
                    .await;
                // A datagram that cannot be sent (no route, a refused
                // destination) is a lost packet: the protocol's repair and
                // timers handle it like any other loss.
                if let Err(e) = sent {
                    tracing::debug!("send to {} failed: {e}", batch.destination);
                }
                out.recycle(batch.contents);
            }
        }
    }
    if let Some(left) = left {
        left.one_done();
    }
}

/// Asks, once per driver thread, for `ltx-realtime`'s short time slice and
/// timer slack: every wait for the CPU between a datagram's arrival and its
/// handling ends up in the RTT samples, which the controller reads as a
/// standing queue (measured in `docs/results.md`, "Earlier emulated runs").
/// It only moves wake-ups earlier; a thread under another policy keeps its own.
fn ask_for_prompt_wakeups() {
    thread_local! {
        static ASKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    ASKED.with(|asked| {
        if !asked.replace(true) {
            ltx_realtime::prefer_prompt_wakeups();
        }
    });
}

/// Adds `waker` to `wakers` unless it is there already: a task waiting on
/// every driver is woken by one, and its waker stays on the others' lists
/// until they wake, so that without the check those lists would grow by
/// one each time the task waits again.
fn register(wakers: &mut Vec<Waker>, waker: &Waker) {
    if !wakers.iter().any(|w| w.will_wake(waker)) {
        wakers.push(waker.clone());
    }
}

/// Closes every connection of an endpoint whose socket failed.
fn fail(shared: &Shared, error: &io::Error) {
    let mut state = shared.lock();
    let reason = format!("socket error: {error}");
    state.failed = Some(reason.clone());
    for slot in state.slots.values_mut() {
        slot.phase = Phase::Closed(CloseReason::LocallyAborted {
            code: ltx_proto::event::codes::APPLICATION,
            reason: reason.clone(),
        });
        slot.wakers.wake_all();
    }
    state.accept_wakers.drain(..).for_each(Waker::wake);
    state.refused_wakers.drain(..).for_each(Waker::wake);
    drop(state);
    // A driver fed by the endpoint's reader learns of it here, and ends.
    shared.wake_driver.notify_one();
}
