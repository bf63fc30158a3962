//! Early data (0-RTT) over real UDP on loopback: a client that connects
//! with `connect_early` writes on a stream before its handshake completes,
//! and the server's application reads it, whether the server accepted the
//! first flight or refused it (a server that started less than a second
//! ago refuses every flight).
//!
//! Every test is bounded in time by a timeout far above what it needs; no
//! test asserts a duration.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ltx::{
    EarlyDataRecord, Endpoint, EndpointConfig, Security, UnixMillis, WallClock, EARLY_DATA_AHEAD,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
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

/// A relay between a client and `server` on loopback that forwards every
/// datagram both ways and keeps a copy of each the client sent before the
/// server's first answer came back: the client's first flight.
async fn recording_relay(
    server: SocketAddr,
) -> (SocketAddr, Arc<UdpSocket>, Arc<Mutex<Vec<Vec<u8>>>>) {
    let socket = Arc::new(UdpSocket::bind(loopback()).await.expect("bind relay"));
    let address = socket.local_addr().expect("the relay's address");
    let flight = Arc::new(Mutex::new(Vec::new()));
    let (relay, recorded) = (socket.clone(), flight.clone());
    tokio::spawn(async move {
        let mut buf = vec![0; 65_536];
        let mut client = None;
        let mut answered = false;
        while let Ok((n, from)) = relay.recv_from(&mut buf).await {
            if from == server {
                answered = true;
                if let Some(client) = client {
                    let _ = relay.send_to(&buf[..n], client).await;
                }
                continue;
            }
            client = Some(from);
            if !answered {
                recorded.lock().expect("the flight").push(buf[..n].to_vec());
            }
            let _ = relay.send_to(&buf[..n], server).await;
        }
    });
    (address, socket, flight)
}

/// A first flight captured on the wire and sent again, from the same
/// address and from another, opens no connection the application sees,
/// delivers nothing a second time, and each replay is counted.
#[tokio::test]
async fn a_replayed_first_flight_delivers_nothing_twice_and_is_counted() {
    timeout(BOUND, async {
        let server = server(Some(Duration::from_secs(5)));
        tokio::time::sleep(EARLY_DATA_AHEAD + Duration::from_millis(200)).await;
        let (relay_address, relay, flight) = recording_relay(server.local_addr()).await;
        let client = client();
        let key = server.public_key().expect("a key");
        let connection = client
            .connect_early(relay_address, key)
            .expect("a connection at once");
        let (mut send, _recv) = connection.open_stream().expect("a stream");
        let request = b"transfer 100 to account 7".to_vec();
        send.write_all(&request).await.expect("write early");
        send.shutdown().await.expect("finish early");
        let accepted = server.accept().await.expect("the original connection");
        let (_answer, mut recv) = accepted.accept_stream().await.expect("its stream");
        let mut delivered = Vec::new();
        recv.read_to_end(&mut delivered).await.expect("read");
        assert!(delivered == request, "the original arrived altered");
        assert_eq!(
            connection.stats().early_refused,
            0,
            "the original was refused"
        );
        connection.close().await.expect("close");
        accepted.closed().await;
        drop((connection, accepted, send, recv, _answer));
        let captured = flight.lock().expect("the flight").clone();
        assert!(
            captured.len() >= 2,
            "the first flight had {} datagrams",
            captured.len()
        );
        let refused_before = server.stats().totals.early_data_refused;
        // Once the original connection is gone: while it drains, datagrams
        // from its address with its identifiers are its own, and dropped.
        while server.stats().connections > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // Sent again from the relay's address, then from another.
        let other = UdpSocket::bind(loopback()).await.expect("bind another");
        for replayer in [&*relay, &other] {
            for datagram in &captured {
                replayer
                    .send_to(datagram, server.local_addr())
                    .await
                    .expect("replay");
            }
        }
        // Neither replay becomes a connection the application is given.
        let second = tokio::time::timeout(Duration::from_secs(2), server.accept()).await;
        assert!(second.is_err(), "a replay was accepted as a connection");
        let refused = server.stats().totals.early_data_refused - refused_before;
        assert_eq!(refused, 2, "replays refused and counted: {refused}");
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
