//! The impairment shim on loopback: a perfect link relays both ways, and
//! each impairment (delay, random loss, rate, outage, ECN marking) shows
//! at the far end as the link model says it should. Times are asserted
//! with generous bounds, since these machines are noisy; every test names
//! its seed.

#![cfg(unix)]

use std::collections::BTreeSet;
use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ltx::shim::{ImpairedPath, ShimError};
use ltx_link::{
    Admission, Aqm, Datagram, Ecn, Link, LinkConfig, LossModel, Outage, QueueLimit, Rate,
};
use quinn_udp::{EcnCodepoint, RecvMeta, Transmit, UdpSocketState};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How long a test waits for a datagram that should come.
const WAIT: Duration = Duration::from_secs(5);

/// How far above its expected time a datagram may arrive before the test
/// calls it absurd rather than noise.
const SLACK: Duration = Duration::from_secs(1);

fn socket(read_timeout: Duration) -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(read_timeout)).unwrap();
    socket
}

/// A server socket, a path to it and a client socket connected to the path.
fn path(
    forward: LinkConfig,
    reverse: LinkConfig,
    seed: u64,
) -> (ImpairedPath, UdpSocket, UdpSocket) {
    let server = socket(WAIT);
    let path = ImpairedPath::start(server.local_addr().unwrap(), forward, reverse, seed)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let client = socket(WAIT);
    client.connect(path.client_facing_addr()).unwrap();
    (path, server, client)
}

/// A datagram that carries its index.
fn numbered(index: u32, len: usize) -> Vec<u8> {
    let mut payload = vec![0x5A; len.max(4)];
    payload[..4].copy_from_slice(&index.to_be_bytes());
    payload
}

fn index_of(payload: &[u8]) -> u32 {
    u32::from_be_bytes(payload[..4].try_into().unwrap())
}

/// Reads `n` datagrams, each within `WAIT`: their indices and when each
/// arrived.
fn collect(socket: &UdpSocket, n: usize, seed: u64) -> Vec<(u32, Instant)> {
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let mut buf = vec![0; 1 << 16];
    (0..n)
        .map(|k| {
            let len = socket
                .recv(&mut buf)
                .unwrap_or_else(|e| panic!("seed {seed}: datagram {k} of {n}: {e}"));
            (index_of(&buf[..len]), Instant::now())
        })
        .collect()
}

/// Waits until the forward link has been offered `n` datagrams and has
/// delivered or dropped each: from then on, whatever the server has not
/// read is in its socket's buffer.
fn wait_until_forwarded(path: &ImpairedPath, n: u64, seed: u64) {
    let start = Instant::now();
    loop {
        let (stats, _) = path.stats();
        if stats.offered == n && stats.delivered + stats.dropped() == n {
            return;
        }
        assert!(
            start.elapsed() < WAIT,
            "seed {seed}: the link was offered {} of {n} datagrams, delivered {}, dropped {}",
            stats.offered,
            stats.delivered,
            stats.dropped()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads what `socket` holds once nothing more is coming.
fn drain(socket: &UdpSocket) -> Vec<u32> {
    // The relay counts a datagram delivered just before it sends it.
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = vec![0; 1 << 16];
    let mut received = Vec::new();
    while let Ok(len) = socket.recv(&mut buf) {
        received.push(index_of(&buf[..len]));
    }
    received
}

/// A blocking socket that sends and reads ECN codepoints.
struct EcnSocket {
    socket: UdpSocket,
    state: UdpSocketState,
}

impl EcnSocket {
    fn bind() -> EcnSocket {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let state = UdpSocketState::new((&socket).into()).unwrap();
        // quinn-udp makes the socket non-blocking; a read timeout is simpler
        // in a test. One buffer per read keeps `recvmmsg` from waiting for more.
        socket.set_nonblocking(false).unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        EcnSocket { socket, state }
    }

    fn addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    fn send(&self, to: SocketAddr, payload: &[u8], ecn: Option<EcnCodepoint>) {
        let transmit = Transmit {
            destination: to,
            ecn,
            contents: payload,
            segment_size: None,
            src_ip: None,
        };
        self.state
            .try_send((&self.socket).into(), &transmit)
            .unwrap();
    }

    fn recv(&self) -> Option<(Vec<u8>, SocketAddr, Option<EcnCodepoint>)> {
        let mut buf = vec![0; 1 << 16];
        let mut meta = [RecvMeta::default()];
        let count = self
            .state
            .recv(
                (&self.socket).into(),
                &mut [IoSliceMut::new(&mut buf)],
                &mut meta,
            )
            .ok()?;
        assert_eq!(count, 1);
        buf.truncate(meta[0].len);
        Some((buf, meta[0].addr, meta[0].ecn))
    }
}

#[test]
fn a_perfect_link_relays_every_datagram_both_ways_unchanged() {
    let seed = 1;
    let (path, server, client) = path(LinkConfig::default(), LinkConfig::default(), seed);
    let sizes = [1, 4, 100, 1200, 1472, 9000, 60_000];
    let mut buf = vec![0; 1 << 16];
    for (i, &size) in sizes.iter().enumerate() {
        let sent = numbered(i as u32, size);
        client.send(&sent).unwrap();
        let (len, from) = server.recv_from(&mut buf).unwrap();
        assert_eq!(from, path.server_facing_addr(), "seed {seed}");
        assert_eq!(&buf[..len], &sent[..], "seed {seed}: forward, {size} bytes");
        server.send_to(&buf[..len], from).unwrap();
        let len = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], &sent[..], "seed {seed}: reverse, {size} bytes");
    }
    let n = sizes.len() as u64;
    let (forward, reverse) = path.stats();
    for stats in [&forward, &reverse] {
        assert_eq!((stats.offered, stats.delivered, stats.dropped()), (n, n, 0));
    }
    let (forward, reverse) = path.relay_stats();
    for relay in [&forward, &reverse] {
        assert_eq!(
            (relay.received, relay.discarded, relay.send_errors),
            (n, 0, 0)
        );
        assert_eq!(relay.lateness.count(), n);
    }
    path.shutdown().unwrap();
}

#[test]
fn delay_adds_at_least_the_configured_one_way_delay_each_way() {
    let seed = 2;
    let (forward_delay, reverse_delay) = (Duration::from_millis(100), Duration::from_millis(60));
    let forward = LinkConfig {
        delay: forward_delay,
        ..LinkConfig::default()
    };
    let reverse = LinkConfig {
        delay: reverse_delay,
        ..LinkConfig::default()
    };
    let (path, server, client) = path(forward, reverse, seed);
    let mut buf = [0; 64];
    for i in 0..5 {
        let sent = Instant::now();
        client.send(&numbered(i, 32)).unwrap();
        let (len, from) = server.recv_from(&mut buf).unwrap();
        let at_server = Instant::now();
        server.send_to(&buf[..len], from).unwrap();
        client.recv(&mut buf).unwrap();
        let back = Instant::now();

        let there = at_server - sent;
        let again = back - at_server;
        assert!(
            there >= forward_delay && there < forward_delay + SLACK,
            "seed {seed}: forward took {there:?}, configured {forward_delay:?}"
        );
        assert!(
            again >= reverse_delay && again < reverse_delay + SLACK,
            "seed {seed}: reverse took {again:?}, configured {reverse_delay:?}"
        );
    }
    path.shutdown().unwrap();
}

#[test]
fn a_datagram_does_not_arrive_before_its_delay() {
    let seed = 3;
    let delay = Duration::from_millis(300);
    let forward = LinkConfig {
        delay,
        ..LinkConfig::default()
    };
    let (path, server, client) = path(forward, LinkConfig::default(), seed);
    client.send(b"early?").unwrap();
    // The other side of the boundary is the test above: it does arrive
    // after the delay.
    server.set_read_timeout(Some(delay / 2)).unwrap();
    let mut buf = [0; 16];
    assert!(
        server.recv(&mut buf).is_err(),
        "seed {seed}: arrived within half the delay"
    );
    server.set_read_timeout(Some(WAIT)).unwrap();
    assert!(server.recv(&mut buf).is_ok(), "seed {seed}: never arrived");
    path.shutdown().unwrap();
}

#[test]
fn bernoulli_loss_drops_within_statistical_bounds_and_as_the_model_does() {
    const SENT: u32 = 5000;
    const P: f64 = 0.3;
    let seed = 0x5eed_0004;
    let forward = LinkConfig {
        loss: LossModel::Bernoulli { p: P },
        ..LinkConfig::default()
    };
    let (path, server, client) = path(forward.clone(), LinkConfig::default(), seed);
    // The server reads as the datagrams come, so that its buffer never
    // overflows, until told that nothing more is coming.
    let done = Arc::new(AtomicBool::new(false));
    let receiver = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut received = Vec::new();
            loop {
                let more = drain(&server);
                if more.is_empty() && done.load(Ordering::Acquire) {
                    return received;
                }
                received.extend(more);
            }
        })
    };
    for i in 0..SENT {
        client.send(&numbered(i, 100)).unwrap();
        // Bursts small enough for the default receive buffer (about 200
        // datagrams) of the relay and of the server, even if either is
        // descheduled for a while, so that the kernel drops nothing.
        if i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    wait_until_forwarded(&path, u64::from(SENT), seed);
    done.store(true, Ordering::Release);
    let received: BTreeSet<u32> = receiver.join().unwrap().into_iter().collect();
    let (stats, _) = path.stats();
    assert_eq!(
        stats.offered,
        u64::from(SENT),
        "seed {seed}: the relay read {} of {SENT} datagrams",
        stats.offered
    );
    assert_eq!(received.len() as u64, stats.delivered, "seed {seed}");
    assert_eq!(
        stats.dropped_random,
        stats.offered - stats.delivered,
        "seed {seed}"
    );

    // 4.5 standard deviations: about one failure in 150 000 seeds.
    let measured = stats.dropped_random as f64 / f64::from(SENT);
    let sigma = (P * (1.0 - P) / f64::from(SENT)).sqrt();
    assert!(
        (measured - P).abs() <= 4.5 * sigma,
        "seed {seed}: measured loss {measured:.4}, configured {P}"
    );

    // The same seed, fed the same datagrams in virtual time, loses the
    // same ones: the shim runs the simulator's model, not a look-alike.
    let mut seeds = SmallRng::seed_from_u64(seed);
    let forward_seed = seeds.random();
    let epoch = Instant::now();
    let mut model: Link<Datagram> = Link::new(forward, epoch, forward_seed).unwrap();
    let expected: BTreeSet<u32> = (0..SENT)
        .filter(|&i| {
            let datagram = Datagram {
                payload: numbered(i, 100),
                ecn: Ecn::NotEct,
            };
            matches!(model.enqueue(epoch, datagram), Admission::Scheduled { .. })
        })
        .collect();
    assert!(
        received == expected,
        "seed {seed}: other datagrams lost than the model's"
    );
    path.shutdown().unwrap();
}

#[test]
fn a_rate_limit_spreads_a_burst() {
    const N: u32 = 50;
    const SIZE: usize = 1000;
    let seed = 5;
    let rate = Rate::mbit(10.0);
    let serialization = rate.serialization(SIZE); // 800 µs
    let forward = LinkConfig {
        rate: Some(rate),
        ..LinkConfig::default()
    };
    let (path, server, client) = path(forward, LinkConfig::default(), seed);
    let start = Instant::now();
    for i in 0..N {
        client.send(&numbered(i, SIZE)).unwrap();
    }
    let received = collect(&server, N as usize, seed);
    // The link sends the k-th datagram of the burst no sooner than k
    // datagrams' time after the burst began, and the relay never releases
    // early: each arrival is held back, not only the burst delayed.
    for (k, &(index, at)) in received.iter().enumerate() {
        assert_eq!(index, k as u32, "seed {seed}: out of order");
        let paced = serialization * (k as u32 + 1);
        assert!(
            at - start >= paced,
            "seed {seed}: datagram {k} arrived after {:?}, before its {paced:?}",
            at - start
        );
    }
    let whole = serialization * N;
    let took = received[N as usize - 1].1 - start;
    assert!(
        took < whole + SLACK,
        "seed {seed}: the burst took {took:?} to cross, {whole:?} expected"
    );
    path.shutdown().unwrap();
}

#[test]
fn an_outage_drops_what_is_offered_during_it_and_nothing_after() {
    let seed = 6;
    let outage = Outage {
        start: Duration::ZERO,
        end: Duration::from_millis(400),
    };
    let forward = LinkConfig {
        outages: vec![outage],
        ..LinkConfig::default()
    };
    let (path, server, client) = path(forward, LinkConfig::default(), seed);
    for i in 0..10 {
        client.send(&numbered(i, 32)).unwrap();
    }
    let during = path.epoch().elapsed();
    assert!(
        during < outage.end,
        "seed {seed}: too slow to send within the outage"
    );
    std::thread::sleep((outage.end + Duration::from_millis(200)).saturating_sub(during));
    for i in 10..20 {
        client.send(&numbered(i, 32)).unwrap();
    }
    wait_until_forwarded(&path, 20, seed);
    assert_eq!(drain(&server), (10..20).collect::<Vec<_>>(), "seed {seed}");
    let (stats, _) = path.stats();
    assert_eq!(
        (stats.dropped_outage, stats.delivered),
        (10, 10),
        "seed {seed}"
    );
    path.shutdown().unwrap();
}

#[test]
fn a_segmented_send_is_relayed_as_its_datagrams() {
    let seed = 14;
    let server = socket(WAIT);
    let path = ImpairedPath::start(
        server.local_addr().unwrap(),
        LinkConfig::default(),
        LinkConfig::default(),
        seed,
    )
    .unwrap();
    let client = EcnSocket::bind();
    if client.state.max_gso_segments() < 3 {
        // Nothing to test: the client cannot send segmented.
        eprintln!("no UDP segmentation offload here; test skipped");
        return;
    }
    // One send of three 100-byte datagrams and a short last one, which the
    // relay's socket may receive as one buffer (GRO) and must split.
    let contents: Vec<u8> = (0..4u32).flat_map(|i| numbered(i, 100)).take(340).collect();
    let transmit = Transmit {
        destination: path.client_facing_addr(),
        ecn: None,
        contents: &contents,
        segment_size: Some(100),
        src_ip: None,
    };
    client
        .state
        .try_send((&client.socket).into(), &transmit)
        .unwrap();
    let mut buf = [0; 1 << 16];
    for (i, len) in [(0, 100), (1, 100), (2, 100), (3, 40)] {
        let got = server.recv(&mut buf).unwrap();
        assert_eq!(got, len, "seed {seed}: datagram {i}");
        assert_eq!(index_of(&buf[..got]), i, "seed {seed}");
    }
    assert_eq!(path.stats().0.offered, 4, "seed {seed}");
    path.shutdown().unwrap();
}

#[test]
fn ecn_codepoints_cross_the_relay_both_ways() {
    let seed = 7;
    let server = EcnSocket::bind();
    let path = ImpairedPath::start(
        server.addr(),
        LinkConfig::default(),
        LinkConfig::default(),
        seed,
    )
    .unwrap();
    let client = EcnSocket::bind();
    let codepoints = [
        None,
        Some(EcnCodepoint::Ect0),
        Some(EcnCodepoint::Ect1),
        Some(EcnCodepoint::Ce),
    ];
    for ecn in codepoints {
        client.send(path.client_facing_addr(), b"forward", ecn);
        let (_, from, got) = server.recv().expect("forward datagram");
        assert_eq!(got, ecn, "seed {seed}: forward");
        server.send(from, b"reverse", ecn);
        let (_, _, got) = client.recv().expect("reverse datagram");
        assert_eq!(got, ecn, "seed {seed}: reverse");
    }
    path.shutdown().unwrap();
}

/// Sends a burst of `N` datagrams with `ecn` through a 10 Mbit/s link whose
/// RED signals every packet that waited over 2 ms; returns the codepoints
/// received and the link's counters.
fn burst_through_red(
    ecn: Option<EcnCodepoint>,
    seed: u64,
) -> (Vec<Option<EcnCodepoint>>, ltx_link::LinkStats) {
    const N: usize = 50;
    let server = EcnSocket::bind();
    let forward = LinkConfig {
        rate: Some(Rate::mbit(10.0)),
        queue: QueueLimit::Unlimited,
        aqm: Some(Aqm::Red {
            min: Duration::from_millis(1),
            max: Duration::from_millis(2),
            max_p_percent: 100,
        }),
        ..LinkConfig::default()
    };
    let path = ImpairedPath::start(server.addr(), forward, LinkConfig::default(), seed).unwrap();
    let client = EcnSocket::bind();
    for _ in 0..N {
        client.send(path.client_facing_addr(), &[0; 1000], ecn);
    }
    wait_until_forwarded(&path, N as u64, seed);
    // All of it is in the server's buffer now.
    let quiet = Some(Duration::from_millis(200));
    server.socket.set_read_timeout(quiet).unwrap();
    let mut received = Vec::new();
    while let Some((_, _, got)) = server.recv() {
        received.push(got);
    }
    let (stats, _) = path.stats();
    path.shutdown().unwrap();
    (received, stats)
}

#[test]
fn aqm_marks_on_ecn_capable_datagrams_reach_the_receiver() {
    let seed = 8;
    let (received, stats) = burst_through_red(Some(EcnCodepoint::Ect0), seed);
    let ce = received
        .iter()
        .filter(|&&e| e == Some(EcnCodepoint::Ce))
        .count() as u64;
    assert_eq!(
        received.len(),
        50,
        "seed {seed}: an ECN-capable datagram was dropped"
    );
    assert!(stats.marked > 0, "seed {seed}: the queue never marked");
    assert_eq!(ce, stats.marked, "seed {seed}: CE received against marked");
    assert!(
        received
            .iter()
            .all(|&e| matches!(e, Some(EcnCodepoint::Ect0 | EcnCodepoint::Ce))),
        "seed {seed}: {received:?}"
    );
}

#[test]
fn the_same_aqm_drops_datagrams_that_are_not_ecn_capable() {
    let seed = 9;
    let (received, stats) = burst_through_red(None, seed);
    assert!(
        stats.dropped_aqm > 0,
        "seed {seed}: the queue never dropped"
    );
    assert_eq!(stats.marked, 0, "seed {seed}");
    assert_eq!(received.len() as u64, 50 - stats.dropped_aqm, "seed {seed}");
    assert!(
        received.iter().all(Option::is_none),
        "seed {seed}: {received:?}"
    );
}

#[test]
fn the_server_facing_socket_carries_only_the_servers_replies_to_a_known_client() {
    let seed = 10;
    let (path, server, client) = path(LinkConfig::default(), LinkConfig::default(), seed);
    // Before the client has spoken, the server has no one to reply to.
    server
        .send_to(b"too early", path.server_facing_addr())
        .unwrap();
    // A stranger is not the server.
    let stranger = socket(WAIT);
    stranger
        .send_to(b"not the server", path.server_facing_addr())
        .unwrap();
    // The relay cannot tell which of its sockets a datagram reached first:
    // let it discard both before the client speaks.
    let waiting = Instant::now();
    while path.relay_stats().1.discarded < 2 {
        assert!(
            waiting.elapsed() < WAIT,
            "seed {seed}: the relay read neither datagram"
        );
        std::thread::sleep(Duration::from_millis(1));
    }

    client.send(b"hello").unwrap();
    let mut buf = [0; 64];
    let (_, from) = server.recv_from(&mut buf).unwrap();
    server.send_to(b"reply", from).unwrap();
    let len = client.recv(&mut buf).unwrap();
    assert_eq!(&buf[..len], b"reply", "seed {seed}");

    let (_, reverse) = path.relay_stats();
    assert_eq!((reverse.discarded, reverse.received), (2, 1), "seed {seed}");
    path.shutdown().unwrap();
}

#[test]
fn replies_follow_a_client_that_moves() {
    let seed = 11;
    let (path, server, first) = path(LinkConfig::default(), LinkConfig::default(), seed);
    let second = socket(WAIT);
    second.connect(path.client_facing_addr()).unwrap();
    let mut buf = [0; 64];
    for (client, name) in [(&first, &b"first"[..]), (&second, &b"second"[..])] {
        client.send(name).unwrap();
        let (len, from) = server.recv_from(&mut buf).unwrap();
        server.send_to(&buf[..len], from).unwrap();
        let len = client.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], name, "seed {seed}");
    }
    path.shutdown().unwrap();
}

#[test]
fn dropping_the_path_stops_the_relay_at_once_and_releases_its_ports() {
    let seed = 12;
    // Datagrams ten seconds from arriving must not hold the relay up.
    let forward = LinkConfig {
        delay: Duration::from_secs(10),
        ..LinkConfig::default()
    };
    let (path, server, client) = path(forward, LinkConfig::default(), seed);
    for i in 0..5 {
        client.send(&numbered(i, 100)).unwrap();
    }
    let (client_facing, server_facing) = (path.client_facing_addr(), path.server_facing_addr());
    let dropping = Instant::now();
    drop(path);
    assert!(
        dropping.elapsed() < SLACK,
        "seed {seed}: took {:?}",
        dropping.elapsed()
    );
    // Only the relay thread held these sockets: with it gone, they are free.
    UdpSocket::bind(client_facing).unwrap();
    UdpSocket::bind(server_facing).unwrap();
    drop(server);
}

#[test]
fn an_invalid_link_is_refused_with_its_direction() {
    let server = socket(WAIT);
    let bad = LinkConfig {
        loss: LossModel::Bernoulli { p: 1.5 },
        ..LinkConfig::default()
    };
    let addr = server.local_addr().unwrap();
    let forward = ImpairedPath::start(addr, bad.clone(), LinkConfig::default(), 13);
    assert!(matches!(forward, Err(ShimError::Forward(_))));
    let reverse = ImpairedPath::start(addr, LinkConfig::default(), bad, 13);
    assert!(matches!(reverse, Err(ShimError::Reverse(_))));
}
