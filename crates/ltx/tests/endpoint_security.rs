//! Authentication and packet protection over real UDP on loopback: a server
//! that allows one client key serves a legitimate transfer through a relay
//! that replays and bit-flips its packets, while a client without the
//! server's key and a client whose key is not allowed try to connect. Each
//! attack is refused and counted; the transfer delivers every byte.
//!
//! Every test is bounded in time by a timeout far above what it needs; no
//! test asserts a duration.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ltx::{
    generate_keypair, AllowList, CloseReason, ConnectError, Endpoint, EndpointConfig,
    HandshakeError, Security, SecurityConfig, TransportConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(120);

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().expect("a valid address")
}

/// What the relay did to the client's datagrams.
#[derive(Debug, Default, Clone, Copy)]
struct Tampering {
    replayed: u64,
    flipped: u64,
}

/// A UDP relay from one client to `server`: every datagram is forwarded;
/// every 5th is sent again 20 datagrams later (a replay), and every 7th is
/// also sent with one payload bit flipped. Returns the address clients use
/// and a handle that reports the tampering when stopped.
async fn tampering_relay(
    server: SocketAddr,
) -> (
    SocketAddr,
    tokio::task::JoinHandle<Tampering>,
    tokio::sync::oneshot::Sender<()>,
) {
    let front = UdpSocket::bind(loopback()).await.expect("bind the front");
    let back = UdpSocket::bind(loopback()).await.expect("bind the back");
    back.connect(server).await.expect("connect the back");
    let address = front.local_addr().expect("an address");
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut tampering = Tampering::default();
        let mut client: Option<SocketAddr> = None;
        let mut held: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut count = 0u64;
        let mut a = vec![0u8; 65_536];
        let mut b = vec![0u8; 65_536];
        loop {
            tokio::select! {
                _ = &mut stop_rx => return tampering,
                r = front.recv_from(&mut a) => {
                    let Ok((len, from)) = r else { return tampering };
                    client = Some(from);
                    let datagram = &a[..len];
                    count += 1;
                    let _ = back.send(datagram).await;
                    if count.is_multiple_of(5) {
                        held.push((count + 20, datagram.to_vec()));
                    }
                    if count.is_multiple_of(7) && len > 40 {
                        let mut bad = datagram.to_vec();
                        bad[len / 2] ^= 0x10;
                        let _ = back.send(&bad).await;
                        tampering.flipped += 1;
                    }
                    while let Some(i) = held.iter().position(|(due, _)| *due <= count) {
                        let (_, old) = held.swap_remove(i);
                        let _ = back.send(&old).await;
                        tampering.replayed += 1;
                    }
                }
                r = back.recv(&mut b) => {
                    let Ok(len) = r else { return tampering };
                    if let Some(client) = client {
                        let _ = front.send_to(&b[..len], client).await;
                    }
                }
            }
        }
    });
    (address, task, stop_tx)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(131) >> 3) as u8)
        .collect()
}

/// A client endpoint with its own key pair, giving up on a handshake after
/// a second.
fn quick_client(security: Security) -> EndpointConfig {
    EndpointConfig {
        security,
        transport: {
            let mut config = TransportConfig::default();
            config
                .set_idle_timeout(Duration::from_secs(1))
                .expect("a valid idle timeout");
            config
        },
        ..EndpointConfig::client()
    }
}

#[tokio::test]
async fn attacks_are_refused_and_counted_while_a_legitimate_transfer_completes() {
    timeout(BOUND, async {
        let allowed = generate_keypair();
        let server_keys = generate_keypair();
        let mut server_security = SecurityConfig::new(server_keys.clone());
        server_security.allowed_clients = Some(Arc::new(AllowList::from_iter([allowed.public()])));
        let server_config = EndpointConfig {
            security: Security::Noise(server_security),
            ..EndpointConfig::server()
        };
        let server = Endpoint::bind(loopback(), server_config).expect("bind the server");
        let (relay, relay_task, stop_relay) = tampering_relay(server.local_addr()).await;

        // A client that does not have the server's key.
        let stranger = Endpoint::bind(
            loopback(),
            quick_client(Security::Noise(SecurityConfig::new(generate_keypair()))),
        )
        .expect("bind");
        let wrong_key = generate_keypair().public();
        let refused_wrong_key = stranger.connect(server.local_addr(), wrong_key).await;
        // A client that has it, but whose own key is not allowed.
        let outsider = Endpoint::bind(
            loopback(),
            quick_client(Security::Noise(SecurityConfig::new(generate_keypair()))),
        )
        .expect("bind");
        let refused_not_allowed = outsider
            .connect(server.local_addr(), server_keys.public())
            .await;
        for refused in [&refused_wrong_key, &refused_not_allowed] {
            let error = refused.as_ref().expect_err("refused");
            assert_eq!(error, &ConnectError::Closed(CloseReason::HandshakeTimeout));
            assert!(error.to_string().contains("public key"), "{error}");
        }
        // Each copy of a first flight that found no connection is refused
        // on its own: at least one per client.
        let refusals = server.handshakes_refused();
        assert!(refusals >= 2, "{refusals}");
        // Each refusal can be logged with its reason: the stranger's first
        // message did not authenticate, the outsider's key is not allowed.
        let outsider_key = match outsider.public_key() {
            Some(key) => key,
            None => panic!("a Noise endpoint has a key"),
        };
        let (mut unauthentic, mut not_allowed) = (false, false);
        while !(unauthentic && not_allowed) {
            let refusal = server.refused_handshake().await.expect("a refusal");
            match refusal.reason {
                HandshakeError::Unauthentic => unauthentic = true,
                HandshakeError::NotAllowed(key) => {
                    assert_eq!(key, outsider_key);
                    not_allowed = true;
                }
                other => panic!("refused for {other}"),
            }
        }

        // The legitimate client, through the tampering relay.
        let data = pattern(3_000_000);
        let reader = {
            let server = server.clone();
            let len = data.len();
            tokio::spawn(async move {
                let connection = server.accept().await.expect("the allowed client");
                let (_send, mut recv) = connection.accept_stream().await.expect("a stream");
                let mut got = Vec::with_capacity(len);
                recv.read_to_end(&mut got).await.expect("read");
                (got, connection)
            })
        };
        let client = Endpoint::bind(
            loopback(),
            EndpointConfig {
                security: Security::Noise(SecurityConfig::new(allowed.clone())),
                ..EndpointConfig::client()
            },
        )
        .expect("bind the client");
        let connection = client
            .connect(relay, server_keys.public())
            .await
            .expect("the allowed client connects");
        assert_eq!(connection.peer_key(), Some(server_keys.public()));
        let (mut send, _recv) = connection.open_stream().expect("a stream");
        send.write_all(&data).await.expect("write");
        send.shutdown().await.expect("finish");
        let (got, server_side) = reader.await.expect("the reader");
        assert!(got == data, "every byte, in order");
        assert_eq!(server_side.peer_key(), Some(allowed.public()));
        connection.close().await.expect("a graceful close");

        let _ = stop_relay.send(());
        let tampering = relay_task.await.expect("the relay");
        let stats = server_side.stats();
        assert!(
            tampering.replayed > 10 && tampering.flipped > 10,
            "{tampering:?}"
        );
        // Replays of handshake packets are not counted by the connection
        // (the first ones go to the Initial's own checks), so at least all
        // but a few; flipped packets all fail authentication.
        assert!(
            stats.packets_replayed + 2 >= tampering.replayed,
            "{stats:?} {tampering:?}"
        );
        assert!(
            stats.packets_unauthentic + 2 >= tampering.flipped,
            "{stats:?} {tampering:?}"
        );
        assert!(stats.packets_replayed > 0 && stats.packets_unauthentic > 0);
        // The legitimate client was never refused.
        assert_eq!(server.handshakes_refused(), refusals);
    })
    .await
    .expect("within the bound");
}

#[tokio::test]
async fn plain_endpoints_talk_to_each_other_but_not_to_protected_ones() {
    timeout(BOUND, async {
        let plain_server = EndpointConfig {
            security: Security::Plain,
            ..EndpointConfig::server()
        };
        let server = Endpoint::bind(loopback(), plain_server).expect("bind");
        assert_eq!(server.public_key(), None);
        let plain = Endpoint::bind(loopback(), quick_client(Security::Plain)).expect("bind");
        let any_key = generate_keypair().public();
        let connection = plain
            .connect(server.local_addr(), any_key)
            .await
            .expect("plain to plain");
        assert_eq!(connection.peer_key(), None);
        connection.close().await.expect("close");
        let protected = Endpoint::bind(
            loopback(),
            quick_client(Security::Noise(SecurityConfig::new(generate_keypair()))),
        )
        .expect("bind");
        let error = protected
            .connect(server.local_addr(), any_key)
            .await
            .expect_err("a protected client never falls back to plain");
        assert_eq!(error, ConnectError::Closed(CloseReason::HandshakeTimeout));
    })
    .await
    .expect("within the bound");
}
