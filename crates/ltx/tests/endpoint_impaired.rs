//! Endpoints over the impairment shim: a lossy path delivers every byte,
//! and CE marks set by the path's queue reach the sender's controller.
//!
//! Bounded in time; no test asserts a duration.

#![cfg(unix)]

use std::time::Duration;

use ltx::shim::ImpairedPath;
use ltx::{Endpoint, EndpointConfig};
use ltx_link::{Aqm, LinkConfig, LossModel, QueueLimit, Rate};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(120);

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Sends `data` from a client to a server through a shim with the given
/// links; returns what the server read and the sender's stats.
async fn transfer(
    data: Vec<u8>,
    forward: LinkConfig,
    reverse: LinkConfig,
    seed: u64,
) -> (Vec<u8>, ltx::ConnectionStats) {
    let loopback = "127.0.0.1:0".parse().expect("an address");
    let server = Endpoint::bind(loopback, EndpointConfig::server()).expect("bind");
    let client = Endpoint::bind(loopback, EndpointConfig::client()).expect("bind");
    let path = ImpairedPath::start(server.local_addr(), forward, reverse, seed).expect("a shim");
    let server_key = server.public_key().expect("a key");
    let reader = tokio::spawn(async move {
        let connection = server.accept().await.expect("a connection");
        let (_send, mut recv) = connection.accept_stream().await.expect("a stream");
        let mut got = Vec::new();
        recv.read_to_end(&mut got).await.expect("read");
        got
    });
    let connection = client
        .connect(path.client_facing_addr(), server_key)
        .await
        .expect("a handshake through the shim");
    let (mut send, _recv) = connection.open_stream().expect("open");
    send.write_all(&data).await.expect("write");
    send.shutdown().await.expect("finish");
    let got = reader.await.expect("the reader");
    let stats = connection.stats();
    (got, stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_losing_a_fifth_of_its_packets_in_bursts_delivers_every_byte() {
    let seed = 7;
    timeout(BOUND, async {
        let forward = LinkConfig {
            delay: Duration::from_millis(20),
            rate: Some(Rate::mbit(20.0)),
            queue: QueueLimit::Packets(200),
            loss: LossModel::bursty(0.2, 3.0),
            ..LinkConfig::default()
        };
        let reverse = LinkConfig {
            delay: Duration::from_millis(20),
            ..LinkConfig::default()
        };
        let data = pattern(4 << 20, seed);
        let (got, stats) = transfer(data.clone(), forward, reverse, seed).await;
        assert!(got == data, "seed {seed}: the bytes differ");
        assert!(
            stats.repair_symbols_sent > 0 && stats.packets_lost > 0,
            "seed {seed}: a lossy path needs repair: {stats:?}"
        );
    })
    .await
    .expect("within the bound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn congestion_marks_set_by_the_path_reach_the_sender() {
    let seed = 8;
    timeout(BOUND, async {
        // A slow bottleneck with CoDel marking: the transfer builds a queue,
        // and the queue marks instead of dropping ECN-capable packets. A
        // tight CoDel (1 ms for 20 ms): the sender's queue target keeps the
        // standing queue near a quarter of the RTT, drained every few round
        // trips, which the RFC's 5 ms for 100 ms would rarely see.
        let forward = LinkConfig {
            delay: Duration::from_millis(10),
            rate: Some(Rate::mbit(10.0)),
            queue: QueueLimit::Packets(1000),
            aqm: Some(Aqm::CoDel {
                target: Duration::from_millis(1),
                interval: Duration::from_millis(20),
            }),
            ..LinkConfig::default()
        };
        let reverse = LinkConfig {
            delay: Duration::from_millis(10),
            ..LinkConfig::default()
        };
        let data = pattern(3 << 20, seed);
        let (got, stats) = transfer(data.clone(), forward, reverse, seed).await;
        assert!(got == data, "seed {seed}: the bytes differ");
        assert!(
            stats.ce_marks > 0,
            "seed {seed}: no CE mark reached the sender: {stats:?}"
        );
    })
    .await
    .expect("within the bound");
}
