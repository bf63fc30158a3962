//! A server endpoint with several drivers ([`EndpointConfig::drivers`]),
//! over real UDP on loopback: clients spread over the drivers, each
//! client's bytes arrive whole (early data included), a client whose
//! address changes stays with its connection, garbage is counted, and the
//! socket closes once the endpoint is dropped.
//!
//! Every test is bounded in time by a timeout far above what it needs; no
//! test asserts a duration.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ltx::{Connection, Endpoint, EndpointConfig, PublicKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(60);

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().expect("a valid address")
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64).wrapping_mul(31).wrapping_add(seed * 7) as u8)
        .collect()
}

fn server(drivers: usize) -> Endpoint {
    let mut config = EndpointConfig::server();
    config.drivers = drivers;
    config.transport.set_early_data(true);
    Endpoint::bind(loopback(), config).expect("bind server")
}

fn client() -> Endpoint {
    let mut config = EndpointConfig::client();
    config.transport.set_early_data(true);
    Endpoint::bind(loopback(), config).expect("bind client")
}

/// Echoes every stream of every connection the server accepts.
fn serve_echo(server: &Endpoint) {
    let server = server.clone();
    tokio::spawn(async move {
        while let Some(connection) = server.accept().await {
            tokio::spawn(async move {
                while let Ok((mut send, mut recv)) = connection.accept_stream().await {
                    tokio::spawn(async move {
                        let mut message = Vec::new();
                        recv.read_to_end(&mut message).await?;
                        send.write_all(&message).await?;
                        send.shutdown().await?;
                        Ok::<_, std::io::Error>(())
                    });
                }
            });
        }
    });
}

/// Sends `len` bytes on a new stream and checks the echo.
async fn echo(connection: &Connection, seed: u64, len: usize) {
    let (mut send, mut recv) = connection.open_stream().expect("a stream");
    let message = pattern(seed, len);
    send.write_all(&message).await.expect("write");
    send.shutdown().await.expect("finish");
    let mut back = Vec::new();
    recv.read_to_end(&mut back).await.expect("read the echo");
    assert!(back == message, "stream {seed}: another echo than was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_spread_over_the_drivers_and_every_echo_arrives_whole() {
    timeout(BOUND, async {
        let server = server(3);
        serve_echo(&server);
        let key = server.public_key().expect("a key");
        let mut clients = Vec::new();
        for i in 0..6u64 {
            let endpoint = client();
            // Half the clients send their first bytes in the first flight.
            let connection = if i % 2 == 0 {
                endpoint.connect(server.local_addr(), key).await
            } else {
                endpoint.connect_early(server.local_addr(), key)
            }
            .expect("connect");
            echo(&connection, i, 10).await;
            clients.push((endpoint, connection));
        }
        assert_eq!(server.stats().connections_per_driver, vec![2, 2, 2]);
        let mut transfers = tokio::task::JoinSet::new();
        for (i, (_, connection)) in clients.iter().enumerate() {
            for stream in 0..3u64 {
                let connection = connection.clone();
                let seed = 100 + i as u64 * 10 + stream;
                transfers.spawn(async move { echo(&connection, seed, 200_000).await });
            }
        }
        while let Some(done) = transfers.join_next().await {
            done.expect("a transfer");
        }
        let stats = server.stats();
        assert_eq!(stats.connections, 6);
        assert_eq!(stats.totals.connections_accepted, 6);
        assert_eq!(stats.totals.handshakes_completed, 6);
        for (_, connection) in &clients {
            connection.close().await.expect("close");
        }
    })
    .await
    .expect("bounded");
}

/// A relay between one client and `server` that forwards the client's
/// datagrams from one of two sockets, the second once `moved` is set (as a
/// NAT that rebinds would), and the server's answers to either back to the
/// client.
async fn rebinding_relay(server: SocketAddr, moved: Arc<AtomicBool>) -> SocketAddr {
    let front = Arc::new(UdpSocket::bind(loopback()).await.expect("bind relay"));
    let address = front.local_addr().expect("the relay's address");
    let backs = [
        Arc::new(UdpSocket::bind(loopback()).await.expect("bind relay")),
        Arc::new(UdpSocket::bind(loopback()).await.expect("bind relay")),
    ];
    let client = Arc::new(std::sync::Mutex::new(None::<SocketAddr>));
    for back in &backs {
        let (back, front, client) = (back.clone(), front.clone(), client.clone());
        tokio::spawn(async move {
            let mut buf = vec![0; 65_536];
            while let Ok((n, _)) = back.recv_from(&mut buf).await {
                let to = *client.lock().expect("the client");
                if let Some(to) = to {
                    let _ = front.send_to(&buf[..n], to).await;
                }
            }
        });
    }
    tokio::spawn(async move {
        let mut buf = vec![0; 65_536];
        while let Ok((n, from)) = front.recv_from(&mut buf).await {
            *client.lock().expect("the client") = Some(from);
            let back = &backs[usize::from(moved.load(Ordering::Relaxed))];
            let _ = back.send_to(&buf[..n], server).await;
        }
    });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_address_changes_stays_with_its_connection() {
    timeout(BOUND, async {
        let server = server(2);
        let key: PublicKey = server.public_key().expect("a key");
        let moved = Arc::new(AtomicBool::new(false));
        let relay = rebinding_relay(server.local_addr(), moved.clone()).await;
        let read = Arc::new(AtomicUsize::new(0));
        let len = 2_000_000;
        let reader = {
            let (server, read) = (server.clone(), read.clone());
            tokio::spawn(async move {
                let connection = server.accept().await.expect("a client");
                let (mut send, mut recv) = connection.accept_stream().await.expect("a stream");
                let mut got = Vec::new();
                let mut buf = vec![0; 65_536];
                loop {
                    let n = recv.read(&mut buf).await.expect("read");
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                    read.store(got.len(), Ordering::Relaxed);
                }
                send.write_all(b"all here").await.expect("answer");
                send.shutdown().await.expect("finish");
                connection.closed().await;
                got
            })
        };
        let endpoint = client();
        let connection = endpoint.connect(relay, key).await.expect("connect");
        let (mut send, mut recv) = connection.open_stream().expect("a stream");
        let message = pattern(9, len);
        let writer = {
            let message = message.clone();
            tokio::spawn(async move {
                send.write_all(&message).await.expect("write");
                send.shutdown().await.expect("finish");
            })
        };
        while read.load(Ordering::Relaxed) < len / 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        moved.store(true, Ordering::Relaxed);
        writer.await.expect("the writer");
        let mut answer = Vec::new();
        recv.read_to_end(&mut answer).await.expect("the answer");
        assert_eq!(answer, b"all here");
        connection.close().await.expect("close");
        let got = reader.await.expect("the reader");
        assert!(got == message, "the server read other bytes than were sent");
        assert_eq!(server.stats().totals.connections_accepted, 1);
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_is_counted_and_the_socket_closes_once_the_endpoint_is_gone() {
    timeout(BOUND, async {
        let server = server(2);
        let address = server.local_addr();
        let sender = UdpSocket::bind(loopback()).await.expect("bind");
        for len in [0usize, 1, 20, 1200] {
            sender
                .send_to(&vec![0xee; len], address)
                .await
                .expect("send");
        }
        while server.unroutable_datagrams() < 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let one = {
            let server = server.clone();
            tokio::spawn(async move {
                let connection = server.accept().await.expect("a client");
                let (mut send, mut recv) = connection.accept_stream().await.expect("a stream");
                let mut message = Vec::new();
                recv.read_to_end(&mut message).await.expect("read");
                send.write_all(&message).await.expect("echo");
                send.shutdown().await.expect("finish");
                connection.closed().await;
            })
        };
        let endpoint = client();
        let connection = endpoint
            .connect(address, server.public_key().expect("a key"))
            .await
            .expect("connect");
        echo(&connection, 1, 1000).await;
        connection.close().await.expect("close");
        drop(connection);
        one.await.expect("the server's side");
        server.wait_idle().await;
        drop(server);
        // The reader and the drivers end, and with them the socket.
        while std::net::UdpSocket::bind(address).is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("bounded");
}
