//! A tunnel client and server over loopback, in one process: bytes both
//! ways, half-close, and the server's refusals reaching the application
//! as resets. Every wait is bounded; nothing asserts a duration.

use std::net::SocketAddr;
use std::time::Duration;

use ltx::{Endpoint, EndpointConfig};
use ltx_tunnel::policy::Policy;
use ltx_tunnel::splice::{Broken, SpliceEnd};
use ltx_tunnel::wire::{Destination, OpenStatus};
use ltx_tunnel::{tunnel_transport, OpenError, ServerConfig, TunnelClient, TunnelServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BOUND: Duration = Duration::from_secs(30);

/// A server permitting `rules`, and a client connected to it.
async fn tunnel(rules: &[String]) -> TunnelClient {
    let mut config = EndpointConfig::server();
    config.transport = tunnel_transport();
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), config).unwrap();
    let (address, key) = (server.local_addr(), server.public_key().unwrap());
    let policy = Policy::new(rules.iter().map(|r| r.parse().unwrap()).collect());
    tokio::spawn(async move {
        TunnelServer::new(ServerConfig::new(policy))
            .serve(server)
            .await
    });
    let mut config = EndpointConfig::client();
    config.transport = tunnel_transport();
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), config).unwrap();
    TunnelClient::connect(client, address, key, BOUND)
        .await
        .unwrap()
}

/// A TCP connection whose far end is `client.forward`ed to `to`: what the
/// application holds, and the task that forwards.
async fn forwarded(
    client: &std::sync::Arc<TunnelClient>,
    to: SocketAddr,
) -> (
    TcpStream,
    tokio::task::JoinHandle<Result<ltx_tunnel::splice::Spliced, OpenError>>,
) {
    let local = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = TcpStream::connect(local.local_addr().unwrap())
        .await
        .unwrap();
    let (accepted, _) = local.accept().await.unwrap();
    let client = client.clone();
    let task = tokio::spawn(async move {
        client
            .forward(accepted, &Destination::from_socket_addr(to))
            .await
    });
    (app, task)
}

#[tokio::test]
async fn a_half_closed_request_still_gets_its_whole_reply() {
    // The destination reads the request to its end, then answers.
    let target = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let to = target.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut tcp, _) = target.accept().await.unwrap();
        let mut request = Vec::new();
        tcp.read_to_end(&mut request).await.unwrap();
        let reply: Vec<u8> = request
            .iter()
            .rev()
            .copied()
            .cycle()
            .take(1 << 20)
            .collect();
        tcp.write_all(&reply).await.unwrap();
    });
    let client = std::sync::Arc::new(tunnel(&[format!("{to}")]).await);
    let (mut app, task) = forwarded(&client, to).await;
    app.write_all(b"abc").await.unwrap();
    app.shutdown().await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(BOUND, app.read_to_end(&mut reply))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.len(), 1 << 20);
    assert!(reply.starts_with(b"cbacba"));
    let spliced = tokio::time::timeout(BOUND, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        matches!(spliced.end, SpliceEnd::Closed),
        "{:?}",
        spliced.end
    );
    assert_eq!((spliced.to_stream, spliced.to_tcp), (3, 1 << 20));
}

#[tokio::test]
async fn a_refused_or_forbidden_destination_resets_the_application_at_once() {
    // A port with nothing listening: bind, note it, close.
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let client = std::sync::Arc::new(tunnel(&[format!("{closed}")]).await);
    for (to, status) in [
        (closed, OpenStatus::Refused),
        ("127.0.0.1:9".parse().unwrap(), OpenStatus::NotPermitted),
    ] {
        let (mut app, task) = forwarded(&client, to).await;
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(BOUND, app.read(&mut byte))
            .await
            .unwrap();
        assert_eq!(
            read.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::ConnectionReset),
            "{to}"
        );
        let spliced = task.await.unwrap().unwrap();
        match spliced.end {
            SpliceEnd::Reset(Broken::NotOpened(result)) => assert_eq!(result.status, status),
            other => panic!("{to}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_open_waits_for_the_server_and_says_why_it_failed() {
    let client = tunnel(&[]).await;
    let error = client
        .open(&"localhost:22".parse().unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OpenError::NotOpened(r) if r.status == OpenStatus::NotPermitted),
        "{error}"
    );
}

#[tokio::test]
async fn a_client_that_connects_again_sends_the_first_forwarded_bytes_as_early_data() {
    // The destination echoes what it reads.
    let target = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let to = target.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut tcp, _) = target.accept().await.unwrap();
        let (mut from, mut into) = tcp.split();
        tokio::io::copy(&mut from, &mut into).await.unwrap();
    });
    let client = std::sync::Arc::new(tunnel(&[format!("{to}")]).await);
    // A server refuses early data for its first second.
    tokio::time::sleep(ltx::EARLY_DATA_AHEAD + Duration::from_millis(200)).await;
    let (generation, first) = client.current();
    assert_eq!(generation, 0);
    first.close().await.unwrap();

    let (mut app, task) = forwarded(&client, to).await;
    app.write_all(b"ping over a new connection").await.unwrap();
    app.shutdown().await.unwrap();
    let mut echoed = Vec::new();
    tokio::time::timeout(BOUND, app.read_to_end(&mut echoed))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(echoed, b"ping over a new connection");
    let (generation, second) = client.current();
    assert_eq!(generation, 1, "the tunnel did not connect again");
    let stats = second.stats();
    assert!(
        stats.early_packets_sent > 0,
        "the new connection sent no early data"
    );
    assert_eq!(stats.early_refused, 0, "the server refused the early data");
    tokio::time::timeout(BOUND, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
