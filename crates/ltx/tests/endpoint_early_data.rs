//! Early data (0-RTT) over real UDP on loopback: a client that connects
//! with `connect_early` writes on a stream before its handshake completes,
//! and the server's application reads it, whether the server accepted the
//! first flight or refused it (a server that started less than a second
//! ago refuses every flight).
//!
//! Every test is bounded in time by a timeout far above what it needs; no
//! test asserts a duration.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ltx::{EarlyDataRecord, Endpoint, EndpointConfig, Security, UnixMillis, WallClock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(60);

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().expect("a valid address")
}

fn system_clock() -> WallClock {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as u64;
    WallClock::new(Instant::now(), UnixMillis(ms))
}

/// A server endpoint with early data on; `window` is its record's window
/// (the record starts now, so it refuses flights for one window).
fn server(window: Option<Duration>) -> Endpoint {
    let mut config = EndpointConfig::server();
    config.transport.set_early_data(true);
    if let (Some(window), Security::Noise(security)) = (window, &mut config.security) {
        let clock = system_clock();
        security.early_data_record = Some(EarlyDataRecord::with_limits(clock, window, 1024));
    }
    Endpoint::bind(loopback(), config).expect("bind server")
}

fn client() -> Endpoint {
    let mut config = EndpointConfig::client();
    config.transport.set_early_data(true);
    Endpoint::bind(loopback(), config).expect("bind client")
}

/// The client writes `request` before its handshake completes; the server
/// echoes it back reversed. Returns the client's early packets sent and
/// flights refused.
async fn echo_early(server: Endpoint, request: Vec<u8>) -> (u64, u64) {
    let client = client();
    let echo = {
        let server = server.clone();
        tokio::spawn(async move {
            let connection = server.accept().await.expect("an incoming connection");
            let (mut send, mut recv) = connection.accept_stream().await.expect("a stream");
            let mut data = Vec::new();
            recv.read_to_end(&mut data).await.expect("read the request");
            data.reverse();
            send.write_all(&data).await.expect("write the answer");
            send.shutdown().await.expect("finish the answer");
            connection.closed().await;
        })
    };
    let key = server.public_key().expect("a key");
    let connection = client
        .connect_early(server.local_addr(), key)
        .expect("a connection at once");
    let (mut send, mut recv) = connection
        .open_stream()
        .expect("a stream before the handshake");
    send.write_all(&request).await.expect("write early");
    send.shutdown().await.expect("finish early");
    let mut answer = Vec::new();
    recv.read_to_end(&mut answer)
        .await
        .expect("read the answer");
    let mut expected = request.clone();
    expected.reverse();
    assert!(answer == expected, "the answer came back altered");
    let stats = connection.stats();
    connection.close().await.expect("close");
    echo.await.expect("the echo task");
    (stats.early_packets_sent, stats.early_refused)
}

#[tokio::test]
async fn early_data_written_before_the_handshake_is_read_and_answered() {
    timeout(BOUND, async {
        // A short window, so that the record accepts flights soon after it
        // starts; loopback keeps the clocks within it.
        let window = Duration::from_millis(200);
        let server = server(Some(window));
        tokio::time::sleep(window * 2).await;
        let (sent, refused) = echo_early(server, b"GET /index.html".to_vec()).await;
        assert!(sent >= 1, "no early packet left");
        assert_eq!(refused, 0, "the server refused the first flight");
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn a_server_that_just_started_refuses_early_data_and_it_still_arrives() {
    timeout(BOUND, async {
        let request: Vec<u8> = (0..50_000u32).map(|i| (i * 13 + i / 256) as u8).collect();
        let (sent, refused) = echo_early(server(None), request).await;
        assert!(sent >= 1, "no early packet left");
        assert_eq!(refused, 1, "a fresh record accepted a flight");
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn early_data_without_security_is_refused_at_bind() {
    let mut config = EndpointConfig::client();
    config.transport.set_early_data(true);
    config.security = Security::Plain;
    assert!(Endpoint::bind(loopback(), config).is_err());
}
