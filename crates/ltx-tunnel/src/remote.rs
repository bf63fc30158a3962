//! Remote forwards (`-R`): the server listens on a TCP port for the
//! client and carries each connection it accepts there back to the
//! client, which connects it to a destination on its side (see
//! [`wire::ListenRequest`](crate::wire::ListenRequest) for the messages).
//!
//! The server listens only where its listen policy permits (nothing by
//! default), for as long as the client keeps the listen stream open; the
//! client answers only streams for addresses it asked to listen on.

use std::net::SocketAddr;
use std::sync::Arc;

use ltx::{Connection, RecvStream, SendStream};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::client::{OpenError, TunnelClient};
use crate::message_io::{read_message, write_message};
use crate::rate_limit::ClientBuckets;
use crate::splice::{self, Spliced, Start};
use crate::wire::{
    Destination, Host, ListenRequest, OpenRequest, OpenResult, OpenStatus, MAX_REQUEST_LEN,
    MAX_RESULT_LEN,
};
use crate::ServerConfig;

/// What the server needs to serve one listen request.
pub(crate) struct ListenContext<'a> {
    pub(crate) config: &'a ServerConfig,
    pub(crate) client: SocketAddr,
    pub(crate) connection: Connection,
    pub(crate) streams: Arc<Semaphore>,
    pub(crate) limits: Option<Arc<ClientBuckets>>,
}

/// Serves a listen request on the server: checks it, listens, and carries
/// each accepted connection to the client until the client ends the
/// listen stream (or the connection ends).
pub(crate) async fn serve_listen(
    context: ListenContext<'_>,
    request: ListenRequest,
    mut send: SendStream,
    mut recv: RecvStream,
) {
    let address = request.address;
    let client = context.client;
    if !context.config.listen_policy().permits_address(address) {
        tracing::warn!(%client, "-R {address}: not permitted (--permit-listen)");
        let result = OpenResult::new(
            OpenStatus::NotPermitted,
            &format!("listening on {address} is not permitted"),
        );
        answer_and_end(&mut send, &mut recv, &result).await;
        return;
    }
    let listener = match TcpListener::bind(address).await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!(%client, "-R {address}: {e}");
            let result = OpenResult::new(
                OpenStatus::Failed,
                &format!("cannot listen on {address}: {e}"),
            );
            answer_and_end(&mut send, &mut recv, &result).await;
            return;
        }
    };
    let bound = listener.local_addr().unwrap_or(address);
    let connected = OpenResult::new(OpenStatus::Connected, &format!("listening on {bound}"));
    if write_message(&mut send, |out| connected.emit(out))
        .await
        .is_err()
    {
        return;
    }
    tracing::info!(%client, "-R: listening on {bound} for the client");
    let mut ended = [0u8; 64];
    loop {
        tokio::select! {
            // The client ends the forward by finishing or resetting its
            // stream; the connection's end does the same.
            read = recv.read(&mut ended) => {
                if !matches!(read, Ok(n) if n > 0) {
                    break;
                }
            }
            accepted = listener.accept() => {
                let Ok((tcp, from)) = accepted else { continue };
                let Ok(permit) = context.streams.clone().try_acquire_owned() else {
                    tracing::warn!(%client, "-R {bound}: {from} refused, the client has {} streams open (--max-streams)", context.config.max_streams());
                    splice::reset_tcp(&tcp);
                    continue;
                };
                let connection = context.connection.clone();
                let limits = context.limits.clone();
                tokio::spawn(async move {
                    carry_to_client(connection, tcp, address, limits.as_deref()).await;
                    drop(permit);
                });
            }
        }
    }
    tracing::info!(%client, "-R: no longer listening on {bound}");
}

/// Opens a stream to the client for `tcp`, naming the address the client
/// asked to listen on, and copies once the client says it connected.
async fn carry_to_client(
    connection: Connection,
    tcp: TcpStream,
    requested: SocketAddr,
    limits: Option<&ClientBuckets>,
) {
    let _ = tcp.set_nodelay(true);
    let Ok((mut send, recv)) = connection.open_stream() else {
        splice::reset_tcp(&tcp);
        return;
    };
    let request = OpenRequest {
        destination: Destination {
            host: Host::Ip(requested.ip()),
            port: requested.port(),
        },
    };
    if write_message(&mut send, |out| request.emit(out))
        .await
        .is_err()
    {
        splice::reset_tcp(&tcp);
        return;
    }
    let spliced = splice::run(tcp, send, recv, Start::AfterOpenResult, limits).await;
    tracing::debug!(
        "-R {requested}: {} bytes to the client, {} from it",
        spliced.to_stream,
        spliced.to_tcp
    );
}

async fn answer_and_end(send: &mut SendStream, recv: &mut RecvStream, result: &OpenResult) {
    let _ = recv.stop(splice::codes::NOT_OPENED);
    if write_message(send, |out| result.emit(out)).await.is_ok() {
        let _ = send.finish();
    }
}

/// A remote forward the server has taken on: it listens while this is
/// kept, and stops when it is dropped or the connection ends.
#[derive(Debug)]
pub struct RemoteListener {
    send: SendStream,
    recv: RecvStream,
    /// What the server said: the address it listens on.
    pub result: OpenResult,
}

impl RemoteListener {
    /// Waits until the forward ends: the server stopped listening, or the
    /// connection ended.
    pub async fn ended(&mut self) {
        let mut buf = [0u8; 64];
        while let Ok(1..) = self.recv.read(&mut buf).await {}
    }
}

impl Drop for RemoteListener {
    fn drop(&mut self) {
        let _ = self.send.finish();
    }
}

impl TunnelClient {
    /// Asks the server to listen on `address` for this client (`-R`); the
    /// connections it accepts there arrive as streams that
    /// [`serve_remote_streams`] answers. A refusal is
    /// [`OpenError::NotOpened`].
    pub async fn listen(&self, address: SocketAddr) -> Result<RemoteListener, OpenError> {
        let (mut send, mut recv) = self.open_stream().await?;
        let request = ListenRequest { address };
        write_message(&mut send, |out| request.emit(out)).await?;
        let result = read_message(&mut recv, MAX_RESULT_LEN, OpenResult::parse).await?;
        if result.status != OpenStatus::Connected {
            return Err(OpenError::NotOpened(result));
        }
        Ok(RemoteListener { send, recv, result })
    }
}

/// Where a remote forward goes on the client's side, by the address the
/// client asked the server to listen on; `None` for one it never asked for.
pub type RemoteRoute = Arc<dyn Fn(&Destination) -> Option<Destination> + Send + Sync>;

/// Answers the streams the server opens on `connection` for remote
/// forwards: each names the address the client asked the server to
/// listen on; `route` gives where that forward goes on this side (`None`
/// for an address this client never asked for: the stream is refused).
/// Returns when the connection ends.
pub async fn serve_remote_streams(connection: Connection, route: RemoteRoute) {
    while let Ok((send, recv)) = connection.accept_stream().await {
        let route = route.clone();
        tokio::spawn(async move { answer_remote_stream(send, recv, &*route).await });
    }
}

/// One stream from the server: the forward it belongs to, the local
/// connection, the answer, the copying.
async fn answer_remote_stream(
    mut send: SendStream,
    mut recv: RecvStream,
    route: &(dyn Fn(&Destination) -> Option<Destination> + Send + Sync),
) -> Option<Spliced> {
    let request = read_message(&mut recv, MAX_REQUEST_LEN, OpenRequest::parse)
        .await
        .ok()?;
    let Some(target) = route(&request.destination) else {
        let refusal = OpenResult::new(
            OpenStatus::NotPermitted,
            &format!(
                "{} is not a remote forward of this client",
                request.destination
            ),
        );
        answer_and_end(&mut send, &mut recv, &refusal).await;
        return None;
    };
    let tcp = match TcpStream::connect(target.to_string()).await {
        Ok(tcp) => tcp,
        Err(e) => {
            tracing::warn!("-R {} -> {target}: {e}", request.destination);
            let status = if e.kind() == std::io::ErrorKind::ConnectionRefused {
                OpenStatus::Refused
            } else {
                OpenStatus::Unreachable
            };
            let refusal = OpenResult::new(status, &format!("{target}: {e}"));
            answer_and_end(&mut send, &mut recv, &refusal).await;
            return None;
        }
    };
    let _ = tcp.set_nodelay(true);
    write_message(&mut send, |out| OpenResult::connected().emit(out))
        .await
        .ok()?;
    Some(splice::run(tcp, send, recv, Start::Now, None).await)
}
