//! The server end: takes clients' connections, reads each stream's open
//! request, applies the [policy](crate::policy), connects the destination
//! and copies both ways.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ltx::{Connection, Endpoint, RecvStream, SendStream};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::rate_limit::{ClientBuckets, RateLimit};

use crate::message_io::{read_message, write_message};
use crate::policy::{Decision, Policy};
use crate::remote::{serve_listen, ListenContext};
use crate::splice::{self, SpliceEnd, Start};
use crate::wire::{
    Destination, Host, OpenResult, OpenStatus, StreamRequest, MAX_STREAM_REQUEST_LEN,
};

/// How a tunnel server behaves: whom it connects to, and its limits.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    policy: Policy,
    max_streams: usize,
    connect_timeout: Duration,
    request_timeout: Duration,
    rate_limit: Option<RateLimit>,
    listen_policy: Policy,
}

impl ServerConfig {
    /// Streams one client may have open at once, by default.
    pub const DEFAULT_MAX_STREAMS: usize = 256;

    /// A server that connects what `policy` permits, with the default
    /// limits.
    pub fn new(policy: Policy) -> ServerConfig {
        ServerConfig {
            policy,
            max_streams: Self::DEFAULT_MAX_STREAMS,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            rate_limit: None,
            listen_policy: Policy::new(Vec::new()),
        }
    }

    /// Where clients may ask the server to listen for them (`-R`): the
    /// addresses and ports its rules permit; nowhere by default.
    pub fn listen_policy(&self) -> &Policy {
        &self.listen_policy
    }

    /// Sets [`listen_policy`](Self::listen_policy).
    pub fn set_listen_policy(&mut self, policy: Policy) -> &mut Self {
        self.listen_policy = policy;
        self
    }

    /// The bytes per second each client may move each way, over all its
    /// TCP connections; `None` (the default) for no limit.
    pub fn rate_limit(&self) -> Option<RateLimit> {
        self.rate_limit
    }

    /// Sets [`rate_limit`](Self::rate_limit).
    pub fn set_rate_limit(&mut self, limit: Option<RateLimit>) -> &mut Self {
        self.rate_limit = limit;
        self
    }

    /// The permit rules.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Streams one client may have open at once; more are answered
    /// [`OpenStatus::LimitReached`]. Default 256.
    pub fn max_streams(&self) -> usize {
        self.max_streams
    }

    /// Sets [`max_streams`](Self::max_streams).
    pub fn set_max_streams(&mut self, streams: usize) -> &mut Self {
        self.max_streams = streams;
        self
    }

    /// How long a connection to a destination may take before it counts
    /// as unreachable. Default 10 s.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// Sets [`connect_timeout`](Self::connect_timeout).
    pub fn set_connect_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a new stream's open request may take to arrive before the
    /// stream is dropped. Default 30 s.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Sets [`request_timeout`](Self::request_timeout).
    pub fn set_request_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.request_timeout = timeout;
        self
    }
}

/// A tunnel server: serves the clients' connections of an endpoint.
///
/// ```no_run
/// use ltx::{Endpoint, EndpointConfig};
/// use ltx_tunnel::{policy::Policy, ServerConfig, TunnelServer};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let policy = Policy::new(vec!["127.0.0.1:22".parse()?]);
/// let endpoint = Endpoint::bind("0.0.0.0:7000".parse()?, EndpointConfig::server())?;
/// TunnelServer::new(ServerConfig::new(policy)).serve(endpoint).await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TunnelServer {
    config: Arc<ServerConfig>,
}

impl TunnelServer {
    /// A server with this configuration.
    pub fn new(config: ServerConfig) -> TunnelServer {
        TunnelServer {
            config: Arc::new(config),
        }
    }

    /// Serves every client that connects to `endpoint`, each in a task of
    /// its own; returns when the endpoint takes no more connections.
    pub async fn serve(&self, endpoint: Endpoint) {
        while let Some(connection) = endpoint.accept().await {
            let server = self.clone();
            tokio::spawn(async move { server.serve_connection(connection).await });
        }
    }

    /// Serves one client's connection until it ends: each stream it opens
    /// in a task of its own.
    pub async fn serve_connection(&self, connection: Connection) {
        let client = Client::of(&connection);
        tracing::info!(client = %client.address, key = %client.key, "client connected");
        let streams = Arc::new(Semaphore::new(self.config.max_streams));
        let buckets = self
            .config
            .rate_limit
            .map(|l| Arc::new(ClientBuckets::new(l)));
        let reason = loop {
            let (send, recv) = match connection.accept_stream().await {
                Ok(halves) => halves,
                Err(e) => break e,
            };
            let permit = streams.clone().try_acquire_owned().ok();
            let stream = StreamContext {
                config: self.config.clone(),
                client: client.clone(),
                connection: connection.clone(),
                streams: streams.clone(),
                limits: buckets.clone(),
            };
            tokio::spawn(async move {
                serve_stream(stream, send, recv, permit.is_some()).await;
                drop(permit);
            });
        };
        tracing::info!(client = %client.address, "client gone: {reason}");
    }
}

/// Who a connection is from, for logs.
#[derive(Debug, Clone)]
struct Client {
    address: SocketAddr,
    key: String,
}

impl Client {
    fn of(connection: &Connection) -> Client {
        Client {
            address: connection.remote_address(),
            key: connection
                .peer_key()
                .map_or_else(|| "none".to_owned(), |k| k.to_string()),
        }
    }
}

/// What a stream's task needs of its connection.
struct StreamContext {
    config: Arc<ServerConfig>,
    client: Client,
    connection: Connection,
    streams: Arc<Semaphore>,
    limits: Option<Arc<ClientBuckets>>,
}

/// One stream: its request, the policy's decision, the connection to the
/// destination, then the copying (or, for a listen request, the remote
/// forward).
async fn serve_stream(
    stream: StreamContext,
    mut send: SendStream,
    mut recv: RecvStream,
    within_limit: bool,
) {
    let (config, client) = (&*stream.config, &stream.client);
    let limits = stream.limits.as_deref();
    let read = read_message(&mut recv, MAX_STREAM_REQUEST_LEN, StreamRequest::parse);
    let request = match tokio::time::timeout(config.request_timeout, read).await {
        Ok(Ok(request)) => request,
        Ok(Err(e)) => {
            tracing::warn!(client = %client.address, "a stream without a valid open request: {e}");
            let refusal = OpenResult::new(OpenStatus::Failed, &format!("bad open request: {e}"));
            refuse(&mut send, &mut recv, &refusal).await;
            return;
        }
        Err(_) => {
            tracing::warn!(client = %client.address, "no open request in {:?}", config.request_timeout);
            return;
        }
    };
    let request = match request {
        StreamRequest::Open(request) => request,
        StreamRequest::Listen(listen) => {
            let context = ListenContext {
                config,
                client: client.address,
                connection: stream.connection.clone(),
                streams: stream.streams.clone(),
                limits: stream.limits.clone(),
            };
            serve_listen(context, listen, send, recv).await;
            return;
        }
    };
    let destination = request.destination;
    if !within_limit {
        tracing::warn!(
            client = %client.address,
            "{destination}: refused, the client has {} streams open (--max-streams)",
            config.max_streams
        );
        let refusal = OpenResult::new(
            OpenStatus::LimitReached,
            &format!("at most {} streams at once", config.max_streams),
        );
        refuse(&mut send, &mut recv, &refusal).await;
        return;
    }
    let tcp = match connect(config, &destination).await {
        Ok(tcp) => tcp,
        Err(refusal) => {
            if refusal.status == OpenStatus::NotPermitted {
                tracing::warn!(client = %client.address, key = %client.key, "{destination}: not permitted");
            } else {
                tracing::info!(client = %client.address, "{destination}: {refusal}");
            }
            refuse(&mut send, &mut recv, &refusal).await;
            return;
        }
    };
    if let Err(e) = write_message(&mut send, |out| OpenResult::connected().emit(out)).await {
        tracing::debug!(client = %client.address, "{destination}: the stream failed at once: {e}");
        splice::reset_tcp(&tcp);
        return;
    }
    tracing::debug!(client = %client.address, "{destination}: connected");
    let spliced = splice::run(tcp, send, recv, Start::Now, limits).await;
    match spliced.end {
        SpliceEnd::Closed => tracing::debug!(
            client = %client.address,
            "{destination}: closed, {} bytes up, {} down",
            spliced.to_tcp,
            spliced.to_stream
        ),
        SpliceEnd::Reset(why) => {
            tracing::debug!(client = %client.address, "{destination}: reset: {why}")
        }
    }
}

/// Answers a stream that will not be connected, and ends it.
async fn refuse(send: &mut SendStream, recv: &mut RecvStream, result: &OpenResult) {
    let _ = recv.stop(splice::codes::NOT_OPENED);
    if write_message(send, |out| result.emit(out)).await.is_ok() {
        let _ = send.finish();
    }
}

/// Connects `destination` if the policy permits it; the refusal to send
/// back if not, or if it cannot be reached.
async fn connect(
    config: &ServerConfig,
    destination: &Destination,
) -> Result<TcpStream, OpenResult> {
    let not_permitted = || {
        OpenResult::new(
            OpenStatus::NotPermitted,
            &format!("{destination} is not permitted"),
        )
    };
    let decision = config.policy.decide(destination);
    let addresses = match decision {
        Decision::Denied => return Err(not_permitted()),
        Decision::Connect(address) => vec![address],
        Decision::ResolveAny | Decision::ResolveThenCheck => {
            let Host::Domain(name) = &destination.host else {
                return Err(not_permitted());
            };
            let resolved: Vec<SocketAddr> = tokio::time::timeout(
                config.connect_timeout,
                tokio::net::lookup_host((name.as_str(), destination.port)),
            )
            .await
            .map_err(|_| {
                OpenResult::new(
                    OpenStatus::Unreachable,
                    &format!("{name} did not resolve in time"),
                )
            })?
            .map_err(|e| {
                OpenResult::new(
                    OpenStatus::Unreachable,
                    &format!("{name} does not resolve: {e}"),
                )
            })?
            .collect();
            let checked = decision == Decision::ResolveThenCheck;
            let permitted: Vec<SocketAddr> = resolved
                .iter()
                .copied()
                .filter(|a| !checked || config.policy.permits_address(*a))
                .collect();
            if permitted.is_empty() {
                return Err(if resolved.is_empty() {
                    OpenResult::new(OpenStatus::Unreachable, &format!("{name} has no address"))
                } else {
                    OpenResult::new(
                        OpenStatus::NotPermitted,
                        &format!("{destination} resolves to no permitted address"),
                    )
                });
            }
            permitted
        }
    };
    let mut last_error = None;
    for address in addresses {
        match tokio::time::timeout(config.connect_timeout, TcpStream::connect(address)).await {
            Ok(Ok(tcp)) => {
                let _ = tcp.set_nodelay(true);
                return Ok(tcp);
            }
            Ok(Err(e)) => last_error = Some((address, e)),
            Err(_) => {
                last_error = Some((
                    address,
                    io::Error::new(io::ErrorKind::TimedOut, "no answer in time"),
                ));
            }
        }
    }
    Err(match last_error {
        Some((address, error)) => {
            OpenResult::new(status_of(&error), &format!("{address}: {error}"))
        }
        None => OpenResult::new(
            OpenStatus::Unreachable,
            &format!("{destination} has no address"),
        ),
    })
}

/// The status a failed TCP connect reports.
fn status_of(error: &io::Error) -> OpenStatus {
    match error.kind() {
        io::ErrorKind::ConnectionRefused => OpenStatus::Refused,
        io::ErrorKind::HostUnreachable
        | io::ErrorKind::NetworkUnreachable
        | io::ErrorKind::TimedOut => OpenStatus::Unreachable,
        _ => OpenStatus::Failed,
    }
}
