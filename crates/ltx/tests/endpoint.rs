//! The endpoint over real UDP on loopback: what an application sees.
//!
//! Every test is bounded in time by a timeout far above what it needs, so a
//! hang fails instead of stalling the suite; no test asserts a duration.

use std::net::SocketAddr;
use std::time::Duration;

use ltx::{
    CloseReason, ConnectError, Connection, ConnectionStats, Endpoint, EndpointConfig,
    TransportConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(60);

/// A public key nobody listens with.
fn some_key() -> ltx::PublicKey {
    ltx::generate_keypair().public()
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().expect("a valid address")
}

/// A pattern that differs for every stream and offset, so that bytes from
/// the wrong stream or place are caught.
fn pattern(stream: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(31) ^ stream.wrapping_mul(0x9e37_79b9)) as u8)
        .collect()
}

async fn pair() -> (Endpoint, Endpoint, Connection, Connection) {
    let server = Endpoint::bind(loopback(), EndpointConfig::server()).expect("bind server");
    let client = Endpoint::bind(loopback(), EndpointConfig::client()).expect("bind client");
    let accept = {
        let server = server.clone();
        tokio::spawn(async move { server.accept().await.expect("an incoming connection") })
    };
    let client_connection = client
        .connect(server.local_addr(), server.public_key().expect("a key"))
        .await
        .expect("the handshake completes");
    let server_connection = accept.await.expect("the accept task");
    (server, client, server_connection, client_connection)
}

#[tokio::test]
async fn many_concurrent_streams_each_deliver_their_own_bytes_both_ways() {
    timeout(BOUND, async {
        let (_server, _client, server_conn, client_conn) = pair().await;
        const STREAMS: u64 = 24;
        const LEN: usize = 300_000;
        let echo = tokio::spawn(async move {
            let mut tasks = Vec::new();
            for _ in 0..STREAMS {
                let (mut send, mut recv) = server_conn.accept_stream().await.expect("a stream");
                tasks.push(tokio::spawn(async move {
                    let mut data = Vec::new();
                    recv.read_to_end(&mut data).await.expect("read a stream");
                    data.reverse();
                    send.write_all(&data).await.expect("echo");
                    send.shutdown().await.expect("finish");
                }));
            }
            for task in tasks {
                task.await.expect("an echo task");
            }
            server_conn
        });
        let mut tasks = Vec::new();
        for stream in 0..STREAMS {
            let (mut send, mut recv) = client_conn.open_stream().expect("open a stream");
            tasks.push(tokio::spawn(async move {
                let data = pattern(stream, LEN);
                let writer = async {
                    send.write_all(&data).await.expect("write");
                    send.shutdown().await.expect("finish");
                };
                let reader = async {
                    let mut back = Vec::new();
                    recv.read_to_end(&mut back).await.expect("read the echo");
                    back
                };
                let ((), mut back) = tokio::join!(writer, reader);
                back.reverse();
                assert!(back == data, "stream {stream} came back different");
            }));
        }
        for task in tasks {
            task.await.expect("a client stream");
        }
        let _server_conn = echo.await.expect("the echo server");
        client_conn.close().await.expect("a graceful close");
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn an_empty_stream_reads_as_an_immediate_end() {
    timeout(BOUND, async {
        let (_server, _client, server_conn, client_conn) = pair().await;
        let (mut send, _recv) = client_conn.open_stream().expect("open");
        send.shutdown().await.expect("finish at once");
        let (_send, mut recv) = server_conn.accept_stream().await.expect("accept");
        let mut data = Vec::new();
        assert_eq!(recv.read_to_end(&mut data).await.expect("read"), 0);
    })
    .await
    .expect("within the bound");
}

/// Reads the first stream the peer opens on `connection` to its end, in a
/// task of its own; gives the bytes and the connection's statistics then.
fn read_first_stream(connection: Connection) -> JoinHandle<(Vec<u8>, ConnectionStats)> {
    tokio::spawn(async move {
        let (_send, mut recv) = connection.accept_stream().await.expect("accept");
        let mut got = Vec::new();
        recv.read_to_end(&mut got).await.expect("read");
        (got, connection.stats())
    })
}

#[tokio::test]
async fn a_large_transfer_arrives_whole_and_the_stats_account_for_it() {
    timeout(BOUND, async {
        let (_server, _client, server_conn, client_conn) = pair().await;
        let data = pattern(7, 32 << 20);
        let (mut send, _recv) = client_conn.open_stream().expect("open");
        let reader = read_first_stream(server_conn);
        send.write_all(&data).await.expect("write");
        send.shutdown().await.expect("finish");
        let (got, received) = reader.await.expect("the reader");
        assert!(got == data, "the bytes differ");
        let sent = client_conn.stats();
        assert_eq!(received.stream_bytes_read, 32 << 20);
        assert!(sent.bytes_sent >= 32 << 20, "{sent:?}");
        assert!(sent.source_symbols_sent >= (32 << 20) / 1400, "{sent:?}");
        assert!(sent.min_rtt > Duration::ZERO && sent.rtt >= sent.min_rtt);
        assert!(sent.cwnd > 0 && sent.pacing_rate > 0);
    })
    .await
    .expect("within the bound");
}

/// Chunks larger than the send buffer, smaller ones and copied writes
/// between them arrive whole and in order.
#[tokio::test]
async fn chunks_written_without_a_copy_arrive_whole() {
    timeout(BOUND, async {
        let (_server, _client, server_conn, client_conn) = pair().await;
        let data = ltx::Bytes::from(pattern(11, 12 << 20));
        let (mut send, _recv) = client_conn.open_stream().expect("open");
        let reader = read_first_stream(server_conn);
        let (first, rest) = (data.slice(..9 << 20), data.slice(9 << 20..));
        send.write_chunk(first)
            .await
            .expect("a chunk past the buffer");
        send.write_all(&rest[..1000]).await.expect("a copied write");
        for piece in rest.slice(1000..).chunks(100_003) {
            send.write_chunk(rest.slice_ref(piece))
                .await
                .expect("a chunk");
        }
        send.shutdown().await.expect("finish");
        let (got, _) = reader.await.expect("the reader");
        assert!(got == data, "{} bytes, or they differ", got.len());
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn garbage_sent_at_an_endpoint_is_counted_and_ignored() {
    timeout(BOUND, async {
        let (server, _client, server_conn, client_conn) = pair().await;
        let attacker = tokio::net::UdpSocket::bind(loopback()).await.expect("bind");
        let mut seed = 0x1234_5678_u64;
        for len in [0usize, 1, 17, 18, 40, 1200, 1400, 1500] {
            for _ in 0..20 {
                let junk: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed as u8
                    })
                    .collect();
                attacker
                    .send_to(&junk, server.local_addr())
                    .await
                    .expect("send junk");
            }
        }
        // The connection still works after the flood.
        let (mut send, _recv) = client_conn.open_stream().expect("open");
        send.write_all(b"still here").await.expect("write");
        send.shutdown().await.expect("finish");
        let (_send, mut recv) = server_conn.accept_stream().await.expect("accept");
        let mut got = Vec::new();
        recv.read_to_end(&mut got).await.expect("read");
        assert_eq!(got, b"still here");
        // Junk is either unroutable or, if it named the connection by
        // chance, dropped by it: never acted on.
        let counted = server.unroutable_datagrams() + server_conn.stats().packets_dropped;
        assert!(
            counted >= 150,
            "only {counted} of 160 junk datagrams were counted"
        );
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn a_peer_that_aborts_mid_transfer_is_reported_with_its_reason() {
    timeout(BOUND, async {
        let (_server, _client, server_conn, client_conn) = pair().await;
        let (mut send, _recv) = client_conn.open_stream().expect("open");
        send.write_all(&pattern(1, 1 << 20)).await.expect("write");
        let (_send, mut recv) = server_conn.accept_stream().await.expect("accept");
        let mut first = vec![0; 1000];
        recv.read_exact(&mut first).await.expect("the first bytes");
        client_conn.abort(0x10, "sender interrupted");
        let mut rest = Vec::new();
        let error = recv
            .read_to_end(&mut rest)
            .await
            .expect_err("an aborted stream is an error, not an end");
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionAborted);
        let reason = server_conn.closed().await;
        assert_eq!(
            reason,
            CloseReason::ByPeer {
                code: 0x10,
                reason: "sender interrupted".into()
            }
        );
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn connecting_where_nobody_answers_fails_with_a_handshake_timeout() {
    timeout(BOUND, async {
        // A bound socket that never answers.
        let silent = std::net::UdpSocket::bind(loopback()).expect("bind");
        let mut config = EndpointConfig::client();
        config.transport = {
            let mut config = TransportConfig::default();
            config
                .set_idle_timeout(Duration::from_secs(1))
                .expect("a valid idle timeout");
            config
        };
        let client = Endpoint::bind(loopback(), config).expect("bind");
        let error = client
            .connect(silent.local_addr().expect("its address"), some_key())
            .await
            .expect_err("nobody answers");
        assert_eq!(error, ConnectError::Closed(CloseReason::HandshakeTimeout));
        assert!(error.to_string().contains("did not answer"), "{error}");
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn connecting_to_a_closed_port_ends_at_once_naming_it() {
    // The other side of the pair above: where the host answers that
    // nothing listens (ICMP port unreachable), the handshake does not wait
    // out its time-out, however long: it ends with that answer.
    timeout(BOUND, async {
        let closed = std::net::UdpSocket::bind(loopback())
            .expect("bind")
            .local_addr()
            .expect("its address");
        let mut config = EndpointConfig::client();
        config
            .transport
            .set_idle_timeout(Duration::from_secs(3600))
            .expect("a valid idle timeout");
        let client = Endpoint::bind(loopback(), config).expect("bind");
        let error = client
            .connect(closed, some_key())
            .await
            .expect_err("nothing listens there");
        assert_eq!(
            error,
            ConnectError::Closed(CloseReason::Unreachable(ltx_proto::Unreachable::PortClosed))
        );
        assert!(error.to_string().contains("nothing listens"), "{error}");
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn a_client_only_endpoint_takes_no_connections() {
    timeout(BOUND, async {
        let not_a_server = Endpoint::bind(loopback(), EndpointConfig::client()).expect("bind");
        assert!(not_a_server.accept().await.is_none());
        let mut config = EndpointConfig::client();
        config
            .transport
            .set_idle_timeout(Duration::from_millis(500))
            .expect("a valid idle timeout");
        let client = Endpoint::bind(loopback(), config).expect("bind");
        let error = client
            .connect(
                not_a_server.local_addr(),
                not_a_server.public_key().expect("a key"),
            )
            .await
            .expect_err("a client endpoint does not answer handshakes");
        assert_eq!(error, ConnectError::Closed(CloseReason::HandshakeTimeout));
        assert!(not_a_server.unroutable_datagrams() > 0);
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn dropping_every_handle_still_delivers_what_was_written() {
    timeout(BOUND, async {
        let (_server, client, server_conn, client_conn) = pair().await;
        let data = pattern(3, 2 << 20);
        {
            let (mut send, _recv) = client_conn.open_stream().expect("open");
            send.write_all(&data).await.expect("write");
            send.shutdown().await.expect("finish");
        }
        drop(client_conn);
        let (_send, mut recv) = server_conn.accept_stream().await.expect("accept");
        let mut got = Vec::new();
        recv.read_to_end(&mut got).await.expect("read");
        assert!(got == data, "the bytes differ");
        assert_eq!(
            server_conn.closed().await,
            CloseReason::ByPeer {
                code: 0,
                reason: String::new()
            }
        );
        client.wait_idle().await;
    })
    .await
    .expect("within the bound");
}
