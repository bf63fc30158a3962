//! Connecting to a server: after the handshake, or at once with early
//! data (0-RTT).

use std::future::poll_fn;
use std::net::SocketAddr;
use std::task::Poll;
use std::time::Instant;

use ltx_proto::protection::PublicKey;

use crate::connection::Connection;
use crate::endpoint::{entropy, with_unused_cid, ConnectionKey, Endpoint, Phase, Security};
use crate::error::ConnectError;

impl Endpoint {
    /// Connects to a server whose static public key is `server_key` (unused
    /// with [`Security::Plain`]) and completes the handshake. A server that
    /// is not there, or refused this client (it never says why), shows as
    /// [`ConnectError::Closed`] with [`CloseReason::HandshakeTimeout`](crate::CloseReason::HandshakeTimeout)
    /// after the transport's idle timeout.
    pub async fn connect(
        &self,
        server: SocketAddr,
        server_key: PublicKey,
    ) -> Result<Connection, ConnectError> {
        let (connection, key) = self.start_connect(server, server_key)?;
        let shared = self.handle.client_shard();
        poll_fn(|cx| {
            let mut state = shared.lock();
            let slot = state.slots.get_mut(&key).expect("a handle keeps its slot");
            match &slot.phase {
                Phase::Established => Poll::Ready(Ok(())),
                Phase::Closed(reason) => Poll::Ready(Err(ConnectError::Closed(reason.clone()))),
                Phase::Handshaking => {
                    slot.wakers.established.push(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await?;
        Ok(connection)
    }

    /// Starts connecting to a server whose static public key is
    /// `server_key` and returns the connection at once, before the
    /// handshake. With early data on
    /// ([`TransportConfig::set_early_data`](crate::TransportConfig::set_early_data)),
    /// streams opened and written on it before the handshake completes
    /// leave in the first flight and reach a server that accepts them one
    /// one-way delay after this call; data the server refuses (a replay,
    /// or a server that started less than a second ago) is sent again
    /// after the handshake. Without early data, opening a stream fails
    /// until the handshake completes. A handshake that fails closes the
    /// connection: its streams' reads and writes fail with the reason.
    ///
    /// Early data has no forward secrecy against a later compromise of
    /// the server's static key: see `docs/security.md`.
    ///
    /// ```
    /// use ltx::{Endpoint, EndpointConfig};
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut server_config = EndpointConfig::server();
    /// server_config.transport.set_early_data(true);
    /// let server = Endpoint::bind("127.0.0.1:0".parse()?, server_config)?;
    /// let mut client_config = EndpointConfig::client();
    /// client_config.transport.set_early_data(true);
    /// let client = Endpoint::bind("127.0.0.1:0".parse()?, client_config)?;
    /// let (addr, key) = (server.local_addr(), server.public_key().expect("a key"));
    /// tokio::spawn(async move {
    ///     let connection = server.accept().await.expect("a client connects");
    ///     let (_send, mut recv) = connection.accept_stream().await.expect("a stream");
    ///     let mut request = Vec::new();
    ///     recv.read_to_end(&mut request).await?;
    ///     assert_eq!(request, b"GET /");
    ///     connection.closed().await;
    ///     Ok::<(), std::io::Error>(())
    /// });
    /// // No waiting for the handshake: the request goes in the first flight.
    /// let connection = client.connect_early(addr, key)?;
    /// let (mut send, _recv) = connection.open_stream()?;
    /// send.write_all(b"GET /").await?;
    /// send.shutdown().await?;
    /// connection.close().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn connect_early(
        &self,
        server: SocketAddr,
        server_key: PublicKey,
    ) -> Result<Connection, ConnectError> {
        self.start_connect(server, server_key)
            .map(|(connection, _)| connection)
    }

    /// Makes a client connection towards `server` and its handle, and
    /// wakes the driver to send its first flight.
    fn start_connect(
        &self,
        server: SocketAddr,
        server_key: PublicKey,
    ) -> Result<(Connection, ConnectionKey), ConnectError> {
        let shared = self.handle.client_shard();
        let key = {
            let mut state = shared.lock();
            if let Some(reason) = &state.failed {
                return Err(ConnectError::EndpointFailed(reason.clone()));
            }
            if state.slots.len() >= state.config.max_connections {
                return Err(ConnectError::TooManyConnections);
            }
            let now = Instant::now();
            let fields = &mut *state;
            let proto = with_unused_cid(&mut fields.rng, &fields.by_cid, fields.shard, |seed| {
                let transport = fields.config.transport.clone();
                match &fields.config.security {
                    Security::Noise(security) => {
                        let entropy = entropy().ok_or_else(|| {
                            ConnectError::EndpointFailed("no operating system randomness".into())
                        })?;
                        ltx_proto::Connection::secure_client(
                            transport,
                            security.clone(),
                            server_key,
                            now,
                            seed,
                            entropy,
                        )
                    }
                    Security::Plain => ltx_proto::Connection::client(transport, now, seed),
                }
                .map_err(ConnectError::Config)
            })?
            .ok_or(ConnectError::TooManyConnections)?;
            let key = state.insert(proto, server, None);
            state.slots.get_mut(&key).expect("just inserted").handed_out = true;
            key
        };
        // The handle exists before the handshake, so that a cancelled
        // connect drops it and closes the half-made connection.
        let connection = Connection::new(shared.clone(), key);
        shared.wake_driver.notify_one();
        Ok((connection, key))
    }
}
