//! Denial of service over real UDP on loopback: a thousand first packets
//! from a thousand source addresses (127.0.0.0/8 is all loopback, so each
//! comes from its own address without raw sockets) that never answer, and
//! retry cookies abused from the wrong address or for the wrong
//! connection. The server's state stays bounded, every abuse is counted,
//! and a legitimate client still connects (through a retry) and transfers.
//!
//! Assertions are on the endpoint's counters, never on durations; the
//! timeouts only bound a test that would otherwise hang.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use ltx::{generate_keypair, Endpoint, EndpointConfig, EndpointStats, RetryPolicy, SecurityConfig};
use ltx_proto::accept::packet::{InitialDatagram, RetryPacket};
use ltx_proto::protection::PublicKey;
use ltx_proto::{Connection, TransportConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(120);

/// The `n`-th spoofed source: its own loopback address.
async fn source(n: u32) -> UdpSocket {
    let ip = Ipv4Addr::new(127, 1, (n / 250) as u8, (n % 250 + 1) as u8);
    UdpSocket::bind((ip, 0))
        .await
        .expect("bind a loopback address")
}

/// A client's first Initial to a server with `server_key`.
fn first_initial(server_key: PublicKey, n: u64) -> Vec<u8> {
    let mut entropy = [0u8; 32];
    entropy[..8].copy_from_slice(&n.to_le_bytes());
    let mut client = Connection::secure_client(
        TransportConfig::default(),
        SecurityConfig::new(generate_keypair()),
        server_key,
        Instant::now(),
        n,
        entropy,
    )
    .expect("valid config");
    client
        .poll_transmit(Instant::now())
        .expect("an initial")
        .contents
}

/// First packets the acceptor has decided on.
fn decided(stats: &EndpointStats) -> u64 {
    let a = stats.accept;
    a.retries_sent
        + a.accepted_unvalidated
        + a.accepted_with_cookie
        + a.cookies_invalid
        + a.cookies_expired
        + a.not_initial
        + a.too_short
        + a.half_open_limit
        + a.address_limit
}

async fn wait_for_decisions(server: &Endpoint, count: u64) -> EndpointStats {
    loop {
        let stats = server.stats();
        if decided(&stats) >= count {
            return stats;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

#[tokio::test]
async fn a_thousand_spoofed_handshakes_leave_the_server_bounded_and_a_client_transfers() {
    timeout(BOUND, async {
        let config = EndpointConfig::server();
        let RetryPolicy::AboveHalfOpen(threshold) = config.accept.retry else {
            panic!("the default retries under load");
        };
        let server = Endpoint::bind("127.0.0.1:0".parse().expect("an address"), config)
            .expect("bind the server");
        let server_addr = server.local_addr();
        let server_key = server.public_key().expect("a key");

        // Built before any is sent: in an unoptimised build, building them
        // one by one between sends spreads the flood past the half-open
        // connections' handshake time-out.
        let initials: Vec<Vec<u8>> = (0..1000u64).map(|n| first_initial(server_key, n)).collect();
        let mut most = EndpointStats::default();
        for n in 0..1000u32 {
            let socket = source(n).await;
            socket
                .send_to(&initials[n as usize], server_addr)
                .await
                .expect("send");
            if n % 50 == 49 {
                // Let the server read them before its socket buffer fills.
                let stats = wait_for_decisions(&server, u64::from(n) + 1).await;
                most.connections = most.connections.max(stats.connections);
                most.half_open = most.half_open.max(stats.half_open);
            }
        }
        let stats = wait_for_decisions(&server, 1000).await;
        // The first `threshold` spoofed first packets made half-open
        // connections; every later one a stateless retry, never answered.
        assert_eq!(most.half_open, threshold, "{stats:?}");
        assert_eq!(most.connections, threshold, "{stats:?}");
        assert_eq!(
            stats.accept.accepted_unvalidated, threshold as u64,
            "{stats:?}"
        );
        assert_eq!(
            stats.accept.retries_sent,
            1000 - threshold as u64,
            "{stats:?}"
        );

        // A legitimate client: through a retry, transparently.
        let data = pattern(1_000_000);
        let reader = {
            let server = server.clone();
            let len = data.len();
            tokio::spawn(async move {
                let connection = server.accept().await.expect("the client");
                let (_send, mut recv) = connection.accept_stream().await.expect("a stream");
                let mut got = Vec::with_capacity(len);
                recv.read_to_end(&mut got).await.expect("read");
                (got, connection)
            })
        };
        let client = Endpoint::bind(
            "127.0.0.1:0".parse().expect("an address"),
            EndpointConfig::client(),
        )
        .expect("bind the client");
        let connection = client
            .connect(server_addr, server_key)
            .await
            .expect("the client connects");
        assert_eq!(connection.stats().retries, 1);
        let (mut send, _recv) = connection.open_stream().expect("a stream");
        send.write_all(&data).await.expect("write");
        send.shutdown().await.expect("finish");
        let (got, _server_side) = reader.await.expect("the reader");
        assert!(got == data, "every byte, in order");
        connection.close().await.expect("a graceful close");
        let after = server.stats();
        assert_eq!(after.accept.accepted_with_cookie, 1, "{after:?}");
        assert!(after.connections <= threshold + 1, "{after:?}");
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn abused_cookies_are_refused_and_counted_and_create_nothing() {
    timeout(BOUND, async {
        let config = EndpointConfig {
            accept: ltx::AcceptConfig {
                retry: RetryPolicy::Always,
                ..ltx::AcceptConfig::default()
            },
            ..EndpointConfig::server()
        };
        let server = Endpoint::bind("127.0.0.1:0".parse().expect("an address"), config)
            .expect("bind the server");
        let server_addr: SocketAddr = server.local_addr();
        let server_key = server.public_key().expect("a key");
        let (a, b) = (source(0).await, source(1).await);

        // a gets a retry for its Initial.
        let initial = first_initial(server_key, 1);
        a.send_to(&initial, server_addr).await.expect("send");
        let mut buf = [0u8; 2048];
        let (len, _) = a.recv_from(&mut buf).await.expect("a retry");
        let cookie = RetryPacket::parse(&buf[..len])
            .expect("a retry")
            .cookie
            .to_vec();
        assert_eq!(server.stats().connections, 0, "a retry keeps nothing");

        // The cookie from another address (a spoofer that saw it), with
        // another connection's Initial, or corrupted: refused.
        b.send_to(&InitialDatagram::wrap(&cookie, &initial), server_addr)
            .await
            .expect("send");
        let other = first_initial(server_key, 2);
        a.send_to(&InitialDatagram::wrap(&cookie, &other), server_addr)
            .await
            .expect("send");
        let mut forged = cookie.clone();
        forged[0] ^= 0x80;
        a.send_to(&InitialDatagram::wrap(&forged, &initial), server_addr)
            .await
            .expect("send");
        let stats = wait_for_decisions(&server, 4).await;
        assert_eq!(stats.accept.cookies_invalid, 3, "{stats:?}");
        assert_eq!(stats.connections, 0, "{stats:?}");

        // The cookie from its own address, twice: one connection, whose
        // copies go to it.
        let with_cookie = InitialDatagram::wrap(&cookie, &initial);
        a.send_to(&with_cookie, server_addr).await.expect("send");
        a.send_to(&with_cookie, server_addr).await.expect("send");
        let stats = wait_for_decisions(&server, 5).await;
        assert_eq!(stats.accept.accepted_with_cookie, 1, "{stats:?}");
        // The copy never reached the acceptor: it went to the connection.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let stats = server.stats();
        assert_eq!(decided(&stats), 5, "{stats:?}");
        assert_eq!(stats.connections, 1, "{stats:?}");
    })
    .await
    .expect("within the bound");
}
