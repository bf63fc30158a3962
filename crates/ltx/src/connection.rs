//! A connection's handle and its streams' halves.

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::Bytes;
use ltx_proto::protection::PublicKey;
use ltx_proto::{CloseReason, ConnectionStats, ReadOutcome, StreamError, StreamId};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::endpoint::{ConnectionKey, Phase, Shared, Slot, State};
use crate::error::{ConnectionError, OpenStreamError};

/// An established ltx connection. Clones are handles to the same
/// connection; when the last handle (streams included) is dropped, the
/// connection closes gracefully: what was written is still delivered.
///
/// ```
/// use ltx::{Endpoint, EndpointConfig};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Endpoint::bind("127.0.0.1:0".parse()?, EndpointConfig::server())?;
/// let client = Endpoint::bind("127.0.0.1:0".parse()?, EndpointConfig::client())?;
/// let server_key = server.public_key().expect("a server has a key");
/// let connection = client.connect(server.local_addr(), server_key).await?;
/// let incoming = server.accept().await.expect("the client's connection");
///
/// // Two streams at once, each with its own order.
/// let (mut a, _) = connection.open_stream()?;
/// let (mut b, _) = connection.open_stream()?;
/// a.write_all(b"first").await?;
/// b.write_all(b"second").await?;
/// a.shutdown().await?;
/// b.shutdown().await?;
/// for _ in 0..2 {
///     let (_, mut recv) = incoming.accept_stream().await?;
///     let mut text = String::new();
///     recv.read_to_string(&mut text).await?;
///     assert!(text == "first" || text == "second");
/// }
/// let stats = connection.stats();
/// assert!(stats.packets_sent > 0 && stats.rtt > std::time::Duration::ZERO);
/// connection.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Connection {
    handle: Arc<ConnectionHandle>,
}

struct ConnectionHandle {
    shared: Arc<Shared>,
    key: ConnectionKey,
}

impl Drop for ConnectionHandle {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if let Some(slot) = state.slots.get_mut(&self.key) {
            slot.handles -= 1;
            if slot.handles == 0 && !matches!(slot.phase, Phase::Closed(_)) {
                slot.proto.close(Instant::now());
            }
        }
        drop(state);
        self.shared.wake_driver.notify_one();
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("remote", &self.remote_address())
            .finish_non_exhaustive()
    }
}

impl Connection {
    pub(crate) fn new(shared: Arc<Shared>, key: ConnectionKey) -> Connection {
        shared
            .lock()
            .slots
            .get_mut(&key)
            .expect("a new handle's slot exists")
            .handles += 1;
        Connection {
            handle: Arc::new(ConnectionHandle { shared, key }),
        }
    }

    /// Runs `f` on the connection's slot under the endpoint's lock, then
    /// wakes the driver (a command may have given it something to send).
    fn with<T>(&self, f: impl FnOnce(&mut Slot) -> T) -> T {
        let mut state = self.handle.shared.lock();
        let slot = slot(&mut state, self.handle.key);
        let result = f(slot);
        drop(state);
        self.handle.shared.wake_driver.notify_one();
        result
    }

    /// The peer's address: where this end sends. On a server it follows
    /// a client whose address changed (see `docs/tunnel.md`, Roaming).
    pub fn remote_address(&self) -> SocketAddr {
        let mut state = self.handle.shared.lock();
        slot(&mut state, self.handle.key).remote
    }

    /// The peer's static public key, proved in the handshake (`None` with
    /// [`Security::Plain`](crate::Security::Plain)).
    pub fn peer_key(&self) -> Option<PublicKey> {
        let mut state = self.handle.shared.lock();
        slot(&mut state, self.handle.key).proto.peer_key()
    }

    /// The connection's counters and estimates: RTT, minimum RTT, loss
    /// and burst estimates, redundancy, congestion window, pacing rate,
    /// bytes sent and delivered, symbols repaired.
    pub fn stats(&self) -> ConnectionStats {
        let mut state = self.handle.shared.lock();
        slot(&mut state, self.handle.key).proto.stats()
    }

    /// Waits for the handshake to complete: at once on a connection from
    /// [`Endpoint::connect`](crate::Endpoint::connect) or
    /// [`Endpoint::accept`](crate::Endpoint::accept), after the server's
    /// answer on one from [`Endpoint::connect_early`](crate::Endpoint::connect_early),
    /// whose streams may carry data before it. A handshake that failed (no
    /// answer, a refused client) gives the reason.
    pub async fn established(&self) -> Result<(), crate::ConnectError> {
        poll_fn(|cx| {
            let mut state = self.handle.shared.lock();
            let slot = slot(&mut state, self.handle.key);
            match &slot.phase {
                Phase::Established => Poll::Ready(Ok(())),
                Phase::Closed(reason) => {
                    Poll::Ready(Err(crate::ConnectError::Closed(reason.clone())))
                }
                Phase::Handshaking => {
                    slot.wakers.established.push(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }

    /// What the connection has measured of its path (bottleneck rate,
    /// minimum round trip), to give the next connection to the same peer
    /// for careful resume
    /// ([`TransportConfig::set_saved_path`](ltx_proto::TransportConfig::set_saved_path));
    /// `None` until a rate is measured.
    pub fn path_to_save(&self) -> Option<ltx_proto::congestion::SavedPath> {
        let mut state = self.handle.shared.lock();
        slot(&mut state, self.handle.key).proto.path_to_save()
    }

    /// Opens a bidirectional stream. The peer learns of it when the first
    /// data (or the end) is sent.
    pub fn open_stream(&self) -> Result<(SendStream, RecvStream), OpenStreamError> {
        let id = self.with(|slot| {
            closed_error(slot)?;
            slot.proto.open_stream().map_err(|e| match e {
                StreamError::StreamLimit => OpenStreamError::StreamLimit,
                _ => OpenStreamError::Connection(connection_error(slot)),
            })
        })?;
        Ok(self.halves(id))
    }

    /// Waits for the peer to open a stream.
    pub async fn accept_stream(&self) -> Result<(SendStream, RecvStream), ConnectionError> {
        let id = poll_fn(|cx| {
            let mut state = self.handle.shared.lock();
            let slot = slot(&mut state, self.handle.key);
            if let Some(id) = slot.proto.accept_stream() {
                return Poll::Ready(Ok(id));
            }
            if let Phase::Closed(reason) = &slot.phase {
                return Poll::Ready(Err(ConnectionError {
                    reason: reason.clone(),
                }));
            }
            slot.wakers.accept_stream = Some(cx.waker().clone());
            Poll::Pending
        })
        .await?;
        Ok(self.halves(id))
    }

    fn halves(&self, id: StreamId) -> (SendStream, RecvStream) {
        (
            SendStream {
                connection: self.clone(),
                id,
                finished: false,
            },
            RecvStream {
                connection: self.clone(),
                id,
                finished: false,
            },
        )
    }

    /// Closes the connection gracefully: everything written is delivered
    /// (decoded by the peer) first, then both ends close. Resolves when the
    /// connection has ended; an error if it ended otherwise than by this
    /// close or the peer's graceful one.
    pub async fn close(&self) -> Result<(), ConnectionError> {
        self.with(|slot| slot.proto.close(Instant::now()));
        match self.closed().await {
            CloseReason::LocallyClosed | CloseReason::ByPeer { code: 0, .. } => Ok(()),
            reason => Err(ConnectionError { reason }),
        }
    }

    /// Ends the connection at once with an error code and reason for the
    /// peer; data not yet delivered is abandoned.
    pub fn abort(&self, code: u64, reason: &str) {
        self.with(|slot| slot.proto.abort(Instant::now(), code, reason));
    }

    /// Waits until the connection has ended, and says how.
    pub async fn closed(&self) -> CloseReason {
        poll_fn(|cx| {
            let mut state = self.handle.shared.lock();
            let slot = slot(&mut state, self.handle.key);
            if let Phase::Closed(reason) = &slot.phase {
                return Poll::Ready(reason.clone());
            }
            slot.wakers.closed.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// How the connection ended, if it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        let mut state = self.handle.shared.lock();
        match &slot(&mut state, self.handle.key).phase {
            Phase::Closed(reason) => Some(reason.clone()),
            _ => None,
        }
    }
}

fn slot(state: &mut State, key: ConnectionKey) -> &mut Slot {
    state
        .slots
        .get_mut(&key)
        .expect("a connection's slot lives as long as its handles")
}

fn connection_error(slot: &Slot) -> ConnectionError {
    let reason = match &slot.phase {
        Phase::Closed(reason) => reason.clone(),
        _ => CloseReason::LocallyClosed,
    };
    ConnectionError { reason }
}

fn closed_error(slot: &Slot) -> Result<(), ConnectionError> {
    match &slot.phase {
        Phase::Closed(reason) => Err(ConnectionError {
            reason: reason.clone(),
        }),
        _ => Ok(()),
    }
}

/// The I/O error for a stream error: the kind says what happened; a
/// connection's end carries its [`ConnectionError`] inside (find it with
/// `get_ref().and_then(|e| e.downcast_ref())`).
fn stream_io_error(error: StreamError, slot: &Slot) -> io::Error {
    match error {
        StreamError::Reset { code, .. } => io::Error::new(
            io::ErrorKind::ConnectionReset,
            format!("the peer reset the stream (code {code:#x})"),
        ),
        StreamError::Stopped { code, .. } => io::Error::new(
            io::ErrorKind::BrokenPipe,
            format!("the peer stopped reading the stream (code {code:#x})"),
        ),
        StreamError::ClosedForWriting(_) => io::Error::new(
            io::ErrorKind::BrokenPipe,
            "the stream was finished or reset by this end",
        ),
        StreamError::NotConnected | StreamError::UnknownStream(_) | StreamError::StreamLimit => {
            io::Error::new(io::ErrorKind::ConnectionAborted, connection_error(slot))
        }
    }
}

/// The sending half of a stream: an [`AsyncWrite`]. `shutdown` finishes
/// the stream (the peer reads its end after the last byte). Dropped
/// unfinished, it resets the stream, so that a writer that failed halfway
/// is never mistaken for a complete one.
#[derive(Debug)]
pub struct SendStream {
    connection: Connection,
    id: StreamId,
    finished: bool,
}

impl SendStream {
    /// The stream's id.
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Writes all of `chunk` without copying it into the send buffer: the
    /// bytes are copied once, into the packets. Returns when the stream has
    /// taken the last byte (the send buffer had room), as `write_all` does.
    pub async fn write_chunk(&mut self, mut chunk: Bytes) -> io::Result<()> {
        let id = self.id;
        poll_fn(|cx| {
            self.connection.with(|slot| loop {
                if chunk.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                match slot.proto.write_chunk(id, &mut chunk) {
                    Ok(0) => {
                        register(&mut slot.wakers.write, id, cx.waker());
                        return Poll::Pending;
                    }
                    Ok(_) => {}
                    Err(e) => return Poll::Ready(Err(stream_io_error(e, slot))),
                }
            })
        })
        .await
    }

    /// Ends the stream: the peer reads its end after the last byte written.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        let id = self.id;
        self.connection
            .with(|slot| slot.proto.finish(id).map_err(|e| stream_io_error(e, slot)))?;
        self.finished = true;
        Ok(())
    }

    /// Abandons the stream: unsent data is dropped and the peer's reads
    /// fail with `code`.
    pub fn reset(&mut self, code: u64) -> io::Result<()> {
        let id = self.id;
        self.finished = true;
        self.connection.with(|slot| {
            slot.proto
                .reset_stream(id, code)
                .map_err(|e| stream_io_error(e, slot))
        })
    }
}

impl AsyncWrite for SendStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let id = self.id;
        let waker = cx.waker();
        self.connection
            .with(|slot| match slot.proto.write(id, buf) {
                Ok(0) => {
                    register(&mut slot.wakers.write, id, waker);
                    Poll::Pending
                }
                Ok(n) => Poll::Ready(Ok(n)),
                Err(e) => Poll::Ready(Err(stream_io_error(e, slot))),
            })
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Written bytes are the connection's to deliver from the moment
        // `write` takes them; there is no buffer here to flush.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.finish())
    }
}

impl Drop for SendStream {
    fn drop(&mut self) {
        if !self.finished {
            let id = self.id;
            self.connection.with(|slot| {
                // The stream may already be gone with its connection.
                let _ = slot.proto.reset_stream(id, 0);
            });
        }
    }
}

/// The receiving half of a stream: an [`AsyncRead`] that reads the peer's
/// bytes in order and ends (reads 0) when the peer finished the stream.
/// A stream that ends any other way (reset, connection lost) is an error,
/// never a short read.
#[derive(Debug)]
pub struct RecvStream {
    connection: Connection,
    id: StreamId,
    finished: bool,
}

impl RecvStream {
    /// The stream's id.
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Asks the peer to stop sending on this stream.
    pub fn stop(&mut self, code: u64) -> io::Result<()> {
        let id = self.id;
        self.finished = true;
        self.connection.with(|slot| {
            slot.proto
                .stop_sending(id, code)
                .map_err(|e| stream_io_error(e, slot))
        })
    }
}

impl AsyncRead for RecvStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.finished {
            return Poll::Ready(Ok(()));
        }
        let id = self.id;
        let waker = cx.waker();
        let outcome = self.connection.with(|slot| {
            let unfilled = buf.initialize_unfilled();
            match slot.proto.read(id, unfilled) {
                Ok(ReadOutcome::Data(n)) => {
                    buf.advance(n);
                    Poll::Ready(Ok(false))
                }
                Ok(ReadOutcome::Finished) => Poll::Ready(Ok(true)),
                Ok(ReadOutcome::Blocked) => {
                    if matches!(slot.phase, Phase::Closed(_)) {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::ConnectionAborted,
                            connection_error(slot),
                        )));
                    }
                    register(&mut slot.wakers.read, id, waker);
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(stream_io_error(e, slot))),
            }
        });
        match outcome {
            Poll::Ready(Ok(true)) => {
                self.finished = true;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Ok(false)) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        if !self.finished {
            let id = self.id;
            self.connection.with(|slot| {
                let _ = slot.proto.stop_sending(id, 0);
            });
        }
    }
}

fn register(wakers: &mut std::collections::HashMap<StreamId, Waker>, id: StreamId, waker: &Waker) {
    match wakers.get_mut(&id) {
        Some(existing) if existing.will_wake(waker) => {}
        Some(existing) => existing.clone_from(waker),
        None => {
            wakers.insert(id, waker.clone());
        }
    }
}
