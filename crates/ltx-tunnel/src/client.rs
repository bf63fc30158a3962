//! The client end: one ltx connection to the tunnel server, one stream on
//! it per TCP connection.

use std::io;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use ltx::{
    CloseReason, ConnectError, Connection, Endpoint, OpenStreamError, PublicKey, RecvStream,
    SendStream,
};
use tokio::net::TcpStream;

use crate::message_io::{read_message, write_message, MessageError};
use crate::splice::{self, Spliced, Start};
use crate::wire::{Destination, OpenRequest, OpenResult, OpenStatus, WireError, MAX_RESULT_LEN};

/// Why a stream to a destination could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No connection to the server could be made.
    #[error("connecting to the tunnel server: {0}")]
    Connect(#[from] ConnectError),
    /// The server did not connect the destination.
    #[error("{0}")]
    NotOpened(OpenResult),
    /// The stream failed before the server's answer.
    #[error("the tunnel stream failed: {0}")]
    Stream(#[from] io::Error),
    /// The server's answer was not an open result.
    #[error("the server's answer was not understood: {0}")]
    BadResult(WireError),
}

impl From<MessageError<WireError>> for OpenError {
    fn from(error: MessageError<WireError>) -> OpenError {
        match error {
            MessageError::Io(e) => OpenError::Stream(e),
            MessageError::Malformed(e) => OpenError::BadResult(e),
        }
    }
}

/// A tunnel client: the ltx connection to one server, and the streams it
/// opens on it. A connection that ends (the server restarted, the path
/// was down past the idle time-out) or has opened as many streams as the
/// server allows over its life is replaced by a new one when the next
/// stream is wanted; the streams on the old one carry on until they end.
///
/// ```no_run
/// use ltx::{Endpoint, EndpointConfig, PublicKey};
/// use ltx_tunnel::TunnelClient;
/// use std::time::Duration;
///
/// # async fn example(server_key: PublicKey) -> Result<(), Box<dyn std::error::Error>> {
/// let endpoint = Endpoint::bind("0.0.0.0:0".parse()?, EndpointConfig::client())?;
/// let server = "192.0.2.1:7000".parse()?;
/// let client = TunnelClient::connect(endpoint, server, server_key, Duration::from_secs(30)).await?;
/// // `ssh -L 2222:db.internal:22`, over ltx.
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:2222").await?;
/// let client = std::sync::Arc::new(client);
/// let destination: ltx_tunnel::wire::Destination = "db.internal:22".parse()?;
/// loop {
///     let (tcp, _) = listener.accept().await?;
///     let (client, destination) = (client.clone(), destination.clone());
///     tokio::spawn(async move { client.forward(tcp, &destination).await });
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct TunnelClient {
    endpoint: Endpoint,
    server: SocketAddr,
    server_key: PublicKey,
    connect_timeout: Duration,
    /// The connection new streams go on, and how many connections came
    /// before it (so that tasks that found it spent replace it once).
    current: Mutex<(u64, Connection)>,
    /// Held while a replacement connection is made.
    reconnecting: tokio::sync::Mutex<()>,
}

impl TunnelClient {
    /// Connects to the server at `server`, whose public key is
    /// `server_key`, through `endpoint`; a handshake that has not completed
    /// within `connect_timeout` fails with
    /// [`CloseReason::HandshakeTimeout`] (a server that refuses this
    /// client's key does not answer).
    pub async fn connect(
        endpoint: Endpoint,
        server: SocketAddr,
        server_key: PublicKey,
        connect_timeout: Duration,
    ) -> Result<TunnelClient, ConnectError> {
        let connection = connect(&endpoint, server, server_key, connect_timeout).await?;
        Ok(TunnelClient {
            endpoint,
            server,
            server_key,
            connect_timeout,
            current: Mutex::new((0, connection)),
            reconnecting: tokio::sync::Mutex::new(()),
        })
    }

    /// The connection new streams go on now.
    pub fn connection(&self) -> Connection {
        self.lock().1.clone()
    }

    /// The connection new streams go on now, with how many connections
    /// came before it (a new one replaces a connection that ended).
    pub fn current(&self) -> (u64, Connection) {
        self.lock().clone()
    }

    /// The server's address.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Connection)> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a stream, on a new connection if the current one is spent.
    pub(crate) async fn open_stream(&self) -> Result<(SendStream, RecvStream), ConnectError> {
        let (generation, connection) = self.lock().clone();
        match connection.open_stream() {
            Ok(halves) => return Ok(halves),
            Err(OpenStreamError::StreamLimit) => {
                tracing::info!(
                    "the connection to {} has opened all the streams it may; making another",
                    self.server
                );
            }
            Err(OpenStreamError::Connection(e)) => {
                tracing::warn!(
                    "the connection to {} ended ({e}); reconnecting",
                    self.server
                );
            }
        }
        let _one_at_a_time = self.reconnecting.lock().await;
        let (latest, connection) = self.lock().clone();
        if latest != generation {
            if let Ok(halves) = connection.open_stream() {
                return Ok(halves);
            }
        }
        let (connection, halves) = self.reconnect().await?;
        *self.lock() = (latest + 1, connection);
        Ok(halves)
    }

    /// Carries `tcp` to `destination` through the server (a `-L`
    /// forward): opens a stream, asks for the destination, and copies both
    /// ways until the connection ends (see [`splice`](crate::splice)).
    /// The application's first bytes go out with the request, before the
    /// server answers; if the server does not connect, `tcp` is reset at
    /// once and the result says why ([`Broken::NotOpened`](crate::splice::Broken)).
    pub async fn forward(
        &self,
        tcp: TcpStream,
        destination: &Destination,
    ) -> Result<Spliced, OpenError> {
        let _ = tcp.set_nodelay(true);
        let (mut send, recv) = match self.open_stream().await {
            Ok(halves) => halves,
            Err(e) => {
                splice::reset_tcp(&tcp);
                return Err(e.into());
            }
        };
        let request = OpenRequest {
            destination: destination.clone(),
        };
        if let Err(e) = write_message(&mut send, |out| request.emit(out)).await {
            splice::reset_tcp(&tcp);
            return Err(e.into());
        }
        Ok(splice::run(tcp, send, recv, Start::AfterOpenResult, None).await)
    }

    /// Opens a stream to `destination` and waits for the server to connect
    /// it; a refusal is [`OpenError::NotOpened`]. For front ends that must
    /// answer their application before any data (SOCKS).
    pub async fn open(&self, destination: &Destination) -> Result<TunnelStream, OpenError> {
        let (mut send, mut recv) = self.open_stream().await?;
        let request = OpenRequest {
            destination: destination.clone(),
        };
        write_message(&mut send, |out| request.emit(out)).await?;
        let result = read_message(&mut recv, MAX_RESULT_LEN, OpenResult::parse).await?;
        if result.status != OpenStatus::Connected {
            let _ = recv.stop(splice::codes::NOT_OPENED);
            return Err(OpenError::NotOpened(result));
        }
        Ok(TunnelStream { send, recv })
    }
}

impl TunnelClient {
    /// A new connection to the server and a stream on it. With early data
    /// on, the stream opens at once and what the application sends first
    /// (with the open request) leaves in the connection's first flight,
    /// a round trip sooner; the handshake is still bounded by the connect
    /// time-out, past which the connection is given up.
    async fn reconnect(&self) -> Result<(Connection, (SendStream, RecvStream)), ConnectError> {
        let connection = self.endpoint.connect_early(self.server, self.server_key)?;
        let halves = match connection.open_stream() {
            Ok(halves) => {
                let (watched, limit, server) =
                    (connection.clone(), self.connect_timeout, self.server);
                tokio::spawn(async move {
                    if tokio::time::timeout(limit, watched.established())
                        .await
                        .is_err()
                    {
                        tracing::warn!("no handshake with {server} within {limit:?}");
                        watched.abort(
                            HANDSHAKE_TIMED_OUT,
                            "no handshake within the connect time-out",
                        );
                    }
                });
                halves
            }
            Err(_) => {
                tokio::time::timeout(self.connect_timeout, connection.established())
                    .await
                    .map_err(|_| ConnectError::Closed(CloseReason::HandshakeTimeout))??;
                connection
                    .open_stream()
                    .map_err(|e| ConnectError::Closed(close_reason(e)))?
            }
        };
        tracing::info!("connected to {} again", self.server);
        Ok((connection, halves))
    }
}

/// The code a client aborts a connection with whose handshake did not
/// complete within its connect time-out.
const HANDSHAKE_TIMED_OUT: u64 = 0x1;

/// Connects with a bound on the handshake's time.
async fn connect(
    endpoint: &Endpoint,
    server: SocketAddr,
    server_key: PublicKey,
    timeout: Duration,
) -> Result<Connection, ConnectError> {
    match tokio::time::timeout(timeout, endpoint.connect(server, server_key)).await {
        Ok(connected) => connected,
        Err(_) => Err(ConnectError::Closed(CloseReason::HandshakeTimeout)),
    }
}

fn close_reason(error: OpenStreamError) -> CloseReason {
    match error {
        OpenStreamError::Connection(e) => e.reason,
        OpenStreamError::StreamLimit => {
            CloseReason::ProtocolViolation("the server allows no stream on a new connection".into())
        }
    }
}

/// A stream the server has connected to its destination, not yet joined
/// to a TCP connection.
#[derive(Debug)]
pub struct TunnelStream {
    send: SendStream,
    recv: RecvStream,
}

impl TunnelStream {
    /// Copies between `tcp` and the stream until both end (see
    /// [`splice`](crate::splice)).
    pub async fn splice(self, tcp: TcpStream) -> Spliced {
        let _ = tcp.set_nodelay(true);
        splice::run(tcp, self.send, self.recv, Start::Now, None).await
    }

    /// The stream's two halves, for a caller that is its own application
    /// rather than a TCP connection (a load generator, a test).
    pub fn into_streams(self) -> (SendStream, RecvStream) {
        (self.send, self.recv)
    }
}
