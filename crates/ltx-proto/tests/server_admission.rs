//! A server's admission of clients, sans IO: stateless retries with
//! address-bound cookies, the retry policy, the half-open and per-address
//! limits, and a flood of spoofed first packets that leaves the server's
//! state bounded while a legitimate client still connects and transfers.
//!
//! The server here is a small driver around [`Acceptor`] and
//! [`Connection`]s, routing as the tokio endpoint does: by connection id,
//! then by (address, Initial connection id), then through the acceptor.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use ltx_proto::accept::packet::{InitialDatagram, RetryPacket};
use ltx_proto::accept::CookieError;
use ltx_proto::accept::{AcceptStats, Acceptor, Decision, Refusal, ServerLoad};
use ltx_proto::protection::{SecurityConfig, StaticKeypair};
use ltx_proto::wire::{ConnectionId, Header};
use proptest::prelude::*;

use ltx_proto::{
    AcceptConfig, Connection, EcnCodepoint, ReadOutcome, RetryPolicy, TransportConfig,
    AMPLIFICATION_FACTOR,
};

const SERVER_KEY: [u8; 32] = [2; 32];

fn address(n: u32) -> SocketAddr {
    // 10.0.0.0/8: one address per client, as a spoofer would pick them.
    SocketAddr::from((Ipv4Addr::from(0x0a00_0000 + n), 4000))
}

fn secure_client(now: Instant, n: u64) -> Connection {
    let mut entropy = [0u8; 32];
    entropy[..8].copy_from_slice(&n.to_le_bytes());
    Connection::secure_client(
        TransportConfig::default(),
        SecurityConfig::new(StaticKeypair::from_entropy(entropy)),
        StaticKeypair::from_entropy(SERVER_KEY).public(),
        now,
        n,
        entropy,
    )
    .expect("valid config")
}

/// One connection the server holds.
struct Served {
    remote: SocketAddr,
    initial_dcid: ConnectionId,
    conn: Connection,
}

/// The server: an acceptor and the connections it made.
struct Server {
    acceptor: Acceptor,
    security: SecurityConfig,
    connections: Vec<Served>,
    seeds: u64,
    /// Bytes received from and sent to each address, all connections and
    /// retries together.
    received: HashMap<SocketAddr, u64>,
    sent: HashMap<SocketAddr, u64>,
    /// Connections ever created.
    created: usize,
}

impl Server {
    fn new(config: AcceptConfig, now: Instant) -> Server {
        Server {
            acceptor: Acceptor::new(config, [9; 32], now),
            security: SecurityConfig::new(StaticKeypair::from_entropy(SERVER_KEY)),
            connections: Vec::new(),
            seeds: 1000,
            received: HashMap::new(),
            sent: HashMap::new(),
            created: 0,
        }
    }

    fn half_open(&self) -> usize {
        self.connections
            .iter()
            .filter(|s| !s.conn.is_established() && !s.conn.is_closed())
            .count()
    }

    fn load(&self, from: SocketAddr) -> ServerLoad {
        ServerLoad {
            half_open: self.half_open(),
            from_same_ip: self
                .connections
                .iter()
                .filter(|s| s.remote.ip() == from.ip())
                .count(),
        }
    }

    /// Takes a datagram; returns the retry to send back, if any.
    fn receive(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
        *self.received.entry(from).or_default() += bytes.len() as u64;
        if let Ok((header, _)) = Header::parse(bytes) {
            if let Some(s) = self
                .connections
                .iter_mut()
                .find(|s| s.conn.local_cid() == header.dcid)
            {
                s.conn.handle_datagram(now, bytes, EcnCodepoint::Ect0);
                return None;
            }
        }
        if let Some(initial) = InitialDatagram::parse(bytes) {
            if let Some(s) = self
                .connections
                .iter_mut()
                .find(|s| s.remote == from && s.initial_dcid == initial.dcid)
            {
                s.conn
                    .handle_datagram(now, initial.packet, EcnCodepoint::Ect0);
                return None;
            }
        }
        let load = self.load(from);
        match self.acceptor.handle(now, from, bytes, load) {
            Decision::Accept(accepted) => {
                self.seeds += 1;
                let mut conn = Connection::secure_server(
                    TransportConfig::default(),
                    self.security.clone(),
                    now,
                    self.seeds,
                    [self.seeds as u8; 32],
                )
                .expect("valid config");
                if accepted.address_validated {
                    conn.validate_address();
                }
                conn.handle_datagram(now, accepted.packet, EcnCodepoint::Ect0);
                self.connections.push(Served {
                    remote: from,
                    initial_dcid: accepted.dcid,
                    conn,
                });
                self.created += 1;
                None
            }
            Decision::Retry(retry) => {
                *self.sent.entry(from).or_default() += retry.len() as u64;
                Some(retry)
            }
            Decision::Refuse(_) => None,
        }
    }

    /// What the connections send, with its destination; closed ones go.
    fn poll(&mut self, now: Instant) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut out = Vec::new();
        for s in &mut self.connections {
            if s.conn.poll_timeout().is_some_and(|t| t <= now) {
                s.conn.handle_timeout(now);
            }
            while let Some(t) = s.conn.poll_transmit(now) {
                *self.sent.entry(s.remote).or_default() += t.contents.len() as u64;
                out.push((s.remote, t.contents));
            }
            while s.conn.poll_event().is_some() {}
        }
        self.connections.retain(|s| !s.conn.is_closed());
        out
    }

    fn next_timeout(&self) -> Option<Instant> {
        self.connections
            .iter()
            .filter_map(|s| s.conn.poll_timeout())
            .min()
    }

    fn stats(&self) -> AcceptStats {
        self.acceptor.stats()
    }
}

/// Runs a legitimate client at `at` against the server until it has sent
/// `len` bytes on a stream and the server read them all; datagrams to any
/// other address are lost (they went to spoofed senders). Returns the
/// bytes the server read.
fn connect_and_transfer(
    now: &mut Instant,
    server: &mut Server,
    client: &mut Connection,
    at: SocketAddr,
    len: usize,
) -> Vec<u8> {
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let mut written = 0;
    let mut stream = None;
    let mut received = Vec::new();
    let mut accepted = None;
    for _ in 0..100_000 {
        if stream.is_none() && client.is_established() {
            stream = client.open_stream().ok();
        }
        if let Some(id) = stream {
            if written < len {
                written += client.write(id, &data[written..]).unwrap_or(0);
                if written == len {
                    client.finish(id).expect("an open stream");
                }
            }
        }
        let mut moved = false;
        while let Some(t) = client.poll_transmit(*now) {
            moved = true;
            if let Some(retry) = server.receive(*now, at, &t.contents) {
                client.handle_datagram(*now, &retry, EcnCodepoint::NotEct);
            }
        }
        for (to, datagram) in server.poll(*now) {
            if to == at {
                moved = true;
                client.handle_datagram(*now, &datagram, EcnCodepoint::Ect0);
            }
        }
        if let Some(s) = server.connections.iter_mut().find(|s| s.remote == at) {
            if accepted.is_none() {
                accepted = s.conn.accept_stream();
            }
            let mut buf = [0u8; 4096];
            while let Some(Ok(ReadOutcome::Data(n))) = accepted.map(|id| s.conn.read(id, &mut buf))
            {
                received.extend_from_slice(&buf[..n]);
            }
        }
        if received.len() == len {
            return received;
        }
        if !moved {
            let next = [client.poll_timeout(), server.next_timeout()]
                .into_iter()
                .flatten()
                .min()
                .expect("a timer runs");
            *now = next.max(*now);
            client.handle_timeout(*now);
        }
    }
    panic!(
        "the transfer did not finish: {} of {len} bytes",
        received.len()
    );
}

#[test]
fn a_client_follows_one_retry_transparently_and_transfers() {
    let mut now = Instant::now();
    let config = AcceptConfig {
        retry: RetryPolicy::Always,
        ..AcceptConfig::default()
    };
    let mut server = Server::new(config, now);
    let mut client = secure_client(now, 1);
    let received = connect_and_transfer(&mut now, &mut server, &mut client, address(1), 50_000);
    assert_eq!(received.len(), 50_000);
    // The retry came back before the first flight's other copies left:
    // they carried the cookie already.
    let stats = server.stats();
    assert_eq!(stats.retries_sent, 1, "{stats:?}");
    assert_eq!(client.stats().retries, 1);
    // Its copies with the cookie made one connection, address proved.
    assert_eq!(stats.accepted_with_cookie, 1, "{stats:?}");
    assert_eq!(server.created, 1);
    assert!(server.connections[0].conn.is_address_validated());
}

/// The first Initial of a fresh client, and the retry it gets.
fn initial_and_retry(
    now: Instant,
    acceptor: &mut Acceptor,
    from: SocketAddr,
    n: u64,
) -> (Connection, Vec<u8>) {
    let mut client = secure_client(now, n);
    let initial = client.poll_transmit(now).expect("an initial").contents;
    let Decision::Retry(retry) = acceptor.handle(now, from, &initial, ServerLoad::default()) else {
        panic!("a retry");
    };
    (client, retry)
}

#[test]
fn forged_misplaced_and_expired_cookies_are_refused_and_counted() {
    let now = Instant::now();
    let lifetime = Duration::from_secs(10);
    let config = AcceptConfig {
        retry: RetryPolicy::Always,
        cookie_lifetime: lifetime,
        ..AcceptConfig::default()
    };
    let mut acceptor = Acceptor::new(config, [9; 32], now);
    let (a, b) = (address(1), address(2));
    let (mut client, retry) = initial_and_retry(now, &mut acceptor, a, 1);
    let cookie = RetryPacket::parse(&retry).expect("a retry").cookie.to_vec();
    client.handle_datagram(now, &retry, EcnCodepoint::NotEct);
    let with_cookie = client
        .poll_transmit(now)
        .expect("the initial again")
        .contents;
    let packet = InitialDatagram::parse(&with_cookie)
        .expect("an initial")
        .packet;

    // Replayed from a spoofed address: the cookie is bound to a's.
    assert_eq!(
        acceptor.handle(now, b, &with_cookie, ServerLoad::default()),
        Decision::Refuse(Refusal::Cookie(CookieError::Invalid))
    );
    // Carried by another connection's Initial from the right address.
    let (mut other, _) = (secure_client(now, 2), ());
    let other_initial = other.poll_transmit(now).expect("an initial").contents;
    let moved = InitialDatagram::wrap(&cookie, &other_initial);
    assert_eq!(
        acceptor.handle(now, a, &moved, ServerLoad::default()),
        Decision::Refuse(Refusal::Cookie(CookieError::Invalid))
    );
    // Forged: any flipped bit of the cookie.
    let mut forged = with_cookie.clone();
    forged[3] ^= 0x01;
    assert_eq!(
        acceptor.handle(now, a, &forged, ServerLoad::default()),
        Decision::Refuse(Refusal::Cookie(CookieError::Invalid))
    );
    // Expired: the pair on each side of the lifetime.
    let late = now + lifetime;
    assert_eq!(
        acceptor.handle(late, a, &with_cookie, ServerLoad::default()),
        Decision::Refuse(Refusal::Cookie(CookieError::Expired))
    );
    let in_time = now + lifetime - Duration::from_millis(1);
    let Decision::Accept(accepted) =
        acceptor.handle(in_time, a, &with_cookie, ServerLoad::default())
    else {
        panic!("a valid cookie is accepted");
    };
    assert!(accepted.address_validated);
    assert_eq!(accepted.packet, packet);
    let stats = acceptor.stats();
    assert_eq!(
        (
            stats.cookies_invalid,
            stats.cookies_expired,
            stats.accepted_with_cookie
        ),
        (3, 1, 1),
        "{stats:?}"
    );
}

#[test]
fn a_retry_that_does_not_answer_the_clients_initial_is_ignored() {
    let now = Instant::now();
    let config = AcceptConfig {
        retry: RetryPolicy::Always,
        ..AcceptConfig::default()
    };
    let mut acceptor = Acceptor::new(config, [9; 32], now);
    let (mut client, _) = initial_and_retry(now, &mut acceptor, address(1), 1);
    // An off-path forger does not know the Initial's connection id.
    let mut forged = Vec::new();
    RetryPacket {
        initial_dcid: ConnectionId(0x1234),
        cookie: &[1; 24],
    }
    .emit(&mut forged);
    client.handle_datagram(now, &forged, EcnCodepoint::NotEct);
    assert_eq!(client.stats().retries, 0);
    assert_eq!(client.stats().packets_dropped, 1);
    // Its next Initial carries no cookie.
    let next = client.poll_transmit(now).expect("a copy of the initial");
    assert_eq!(
        InitialDatagram::parse(&next.contents).map(|i| i.cookie),
        Some(None)
    );
}

#[test]
fn a_client_follows_one_retry_and_drops_the_next() {
    let now = Instant::now();
    let config = AcceptConfig {
        retry: RetryPolicy::Always,
        ..AcceptConfig::default()
    };
    let mut acceptor = Acceptor::new(config, [9; 32], now);
    let from = address(1);
    let mut client = secure_client(now, 1);
    // The three copies of the first flight each get a retry.
    let copies: Vec<_> = std::iter::from_fn(|| client.poll_transmit(now))
        .map(|t| t.contents)
        .collect();
    assert_eq!(copies.len(), 3);
    let retries: Vec<_> = copies
        .iter()
        .map(
            |c| match acceptor.handle(now, from, c, ServerLoad::default()) {
                Decision::Retry(r) => r,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    let later = now + Duration::from_millis(5);
    for retry in &retries {
        client.handle_datagram(later, retry, EcnCodepoint::NotEct);
    }
    assert_eq!(client.stats().retries, 1);
    assert_eq!(client.stats().packets_dropped, copies.len() as u64 - 1);
    let first_cookie = RetryPacket::parse(&retries[0]).expect("a retry").cookie;
    let again: Vec<_> = std::iter::from_fn(|| client.poll_transmit(later))
        .map(|t| t.contents)
        .collect();
    assert_eq!(again.len(), copies.len(), "a flight as long as the first");
    for datagram in &again {
        let initial = InitialDatagram::parse(datagram).expect("an initial");
        assert_eq!(initial.cookie, Some(first_cookie));
        assert!(matches!(
            acceptor.handle(later, from, datagram, ServerLoad::default()),
            Decision::Accept(a) if a.address_validated
        ));
    }
}

#[test]
fn retry_policies_and_limits_decide_at_their_thresholds() {
    let now = Instant::now();
    let mut client = secure_client(now, 1);
    let initial = client.poll_transmit(now).expect("an initial").contents;
    let from = address(1);
    let decide = |config: AcceptConfig, half_open: usize, from_same_ip: usize| {
        let mut acceptor = Acceptor::new(config, [9; 32], now);
        let load = ServerLoad {
            half_open,
            from_same_ip,
        };
        match acceptor.handle(now, from, &initial, load) {
            Decision::Accept(_) => "accept",
            Decision::Retry(_) => "retry",
            Decision::Refuse(Refusal::HalfOpenLimit) => "half-open limit",
            Decision::Refuse(Refusal::AddressLimit) => "address limit",
            Decision::Refuse(other) => panic!("{other}"),
        }
    };
    let under_load = AcceptConfig {
        retry: RetryPolicy::AboveHalfOpen(16),
        max_half_open: 256,
        max_connections_per_ip: 4,
        ..AcceptConfig::default()
    };
    assert_eq!(decide(under_load.clone(), 15, 0), "accept");
    assert_eq!(decide(under_load.clone(), 16, 0), "retry");
    assert_eq!(decide(under_load.clone(), 0, 3), "accept");
    assert_eq!(decide(under_load.clone(), 0, 4), "address limit");
    let always = AcceptConfig {
        retry: RetryPolicy::Always,
        ..under_load.clone()
    };
    assert_eq!(decide(always, 0, 0), "retry");
    let never = AcceptConfig {
        retry: RetryPolicy::Never,
        ..under_load
    };
    assert_eq!(decide(never.clone(), 255, 0), "accept");
    assert_eq!(decide(never, 256, 0), "half-open limit");
}

#[test]
fn an_initial_below_the_padded_size_gets_no_answer_at_all() {
    let now = Instant::now();
    let config = AcceptConfig {
        retry: RetryPolicy::Always,
        ..AcceptConfig::default()
    };
    let mut acceptor = Acceptor::new(config, [9; 32], now);
    let mut client = secure_client(now, 1);
    let initial = client.poll_transmit(now).expect("an initial").contents;
    assert_eq!(initial.len(), 1200);
    let from = address(1);
    assert_eq!(
        acceptor.handle(now, from, &initial[..1199], ServerLoad::default()),
        Decision::Refuse(Refusal::TooShort(1199))
    );
    assert!(matches!(
        acceptor.handle(now, from, &initial, ServerLoad::default()),
        Decision::Retry(r) if r.len() * 3 < initial.len()
    ));
    // With a cookie, the whole datagram is still the padded size.
    let Decision::Retry(retry) = acceptor.handle(now, from, &initial, ServerLoad::default()) else {
        panic!("a retry");
    };
    client.handle_datagram(now, &retry, EcnCodepoint::NotEct);
    let again = client
        .poll_transmit(now)
        .expect("the initial again")
        .contents;
    assert_eq!(again.len(), 1200);
    let stats = acceptor.stats();
    assert_eq!((stats.too_short, stats.retries_sent), (1, 2));
}

/// Sends the first Initial of `count` clients, each from its own spoofed
/// address, and drives the server over their handshake timeout. Nothing
/// goes back to the spoofed senders. Returns the largest number of
/// connections the server held at once.
fn flood(now: &mut Instant, server: &mut Server, count: u32) -> usize {
    let mut most = 0;
    for n in 0..count {
        let mut spoofed = secure_client(*now, u64::from(n) + 100);
        let initial = spoofed.poll_transmit(*now).expect("an initial").contents;
        server.receive(*now, address(1000 + n), &initial);
        server.poll(*now);
        most = most.max(server.connections.len());
        *now += Duration::from_millis(1);
    }
    most
}

#[test]
fn a_thousand_spoofed_handshakes_leave_the_server_bounded_and_a_client_connects() {
    let mut now = Instant::now();
    let config = AcceptConfig::default();
    let RetryPolicy::AboveHalfOpen(threshold) = config.retry else {
        panic!("the default retries under load");
    };
    let mut server = Server::new(config, now);
    let most = flood(&mut now, &mut server, 1000);

    // The first `threshold` made half-open connections; every later one
    // got a stateless retry that its spoofed sender never answered.
    let stats = server.stats();
    assert_eq!(most, threshold, "{stats:?}");
    assert_eq!(server.half_open(), threshold);
    assert_eq!(stats.accepted_unvalidated, threshold as u64);
    assert_eq!(stats.retries_sent, 1000 - threshold as u64);
    // No spoofed address was sent more than three times what it sent.
    for (to, sent) in &server.sent {
        let received = server.received.get(to).copied().unwrap_or(0);
        assert!(
            sent <= &(received * AMPLIFICATION_FACTOR),
            "{to}: {sent} > 3 × {received}"
        );
    }

    // A legitimate client connects (through a retry, the server being
    // under load) and transfers.
    let at = address(1);
    let mut client = secure_client(now, 1);
    let received = connect_and_transfer(&mut now, &mut server, &mut client, at, 100_000);
    assert_eq!(received.len(), 100_000);
    assert_eq!(client.stats().retries, 1);
    assert_eq!(server.stats().accepted_with_cookie, 1);
    assert!(server.connections.len() <= threshold + 1);

    // The half-open connections time out, and with them all their state.
    let end = now + TransportConfig::default().idle_timeout() + Duration::from_secs(1);
    while let Some(next) = server.next_timeout().filter(|t| *t <= end) {
        now = next.max(now);
        server.poll(now);
        client.handle_timeout(now);
    }
    assert_eq!(server.half_open(), 0);
}

#[test]
fn without_retry_the_half_open_limit_bounds_memory_but_shuts_out_clients() {
    // Why the default retries under load: the limit alone holds memory,
    // but a flood fills it and a real client is refused until the
    // spoofed handshakes time out.
    let mut now = Instant::now();
    let config = AcceptConfig {
        retry: RetryPolicy::Never,
        max_half_open: 64,
        ..AcceptConfig::default()
    };
    let mut server = Server::new(config, now);
    let most = flood(&mut now, &mut server, 1000);
    let stats = server.stats();
    assert_eq!(most, 64);
    assert_eq!(stats.half_open_limit, 1000 - 64, "{stats:?}");
    let mut client = secure_client(now, 1);
    let initial = client.poll_transmit(now).expect("an initial").contents;
    assert_eq!(server.receive(now, address(1), &initial), None);
    assert_eq!(server.stats().half_open_limit, 1000 - 64 + 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever arrives from whichever address, the acceptor decides
    /// without panicking, and a retry it sends is always far smaller than
    /// what it answers.
    #[test]
    fn arbitrary_datagrams_never_panic_the_acceptor(
        bytes in prop::collection::vec(any::<u8>(), 0..1500),
        cookie_prefix in any::<bool>(),
        n in 0u32..1000,
    ) {
        let now = Instant::now();
        let config = AcceptConfig { retry: RetryPolicy::Always, ..AcceptConfig::default() };
        let mut acceptor = Acceptor::new(config, [9; 32], now);
        let datagram = if cookie_prefix && !bytes.is_empty() {
            InitialDatagram::wrap(&bytes[..bytes.len().min(64)], &bytes)
        } else {
            bytes
        };
        if let Decision::Retry(retry) = acceptor.handle(now, address(n), &datagram, ServerLoad::default()) {
            prop_assert!(retry.len() * 3 <= datagram.len());
        }
        let _ = RetryPacket::parse(&datagram);
        let mut client = secure_client(now, 1);
        client.handle_datagram(now, &datagram, EcnCodepoint::Ect0);
    }

    /// A real first Initial, perhaps with a real cookie, with bytes
    /// overwritten: still no panic, and a cookie that was touched is
    /// never accepted.
    #[test]
    fn mutated_initials_never_panic_the_acceptor(
        with_cookie in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let now = Instant::now();
        let config = AcceptConfig { retry: RetryPolicy::Always, ..AcceptConfig::default() };
        let mut acceptor = Acceptor::new(config, [9; 32], now);
        let from = address(1);
        let mut client = secure_client(now, 1);
        let mut datagram = client.poll_transmit(now).expect("an initial").contents;
        if with_cookie {
            let Decision::Retry(retry) = acceptor.handle(now, from, &datagram, ServerLoad::default())
            else {
                panic!("a retry");
            };
            client.handle_datagram(now, &retry, EcnCodepoint::NotEct);
            datagram = client.poll_transmit(now).expect("the initial again").contents;
        }
        let original = datagram.clone();
        for (at, value) in &edits {
            let i = at.index(datagram.len());
            datagram[i] = *value;
        }
        let cookie_end = InitialDatagram::parse(&original)
            .and_then(|i| i.cookie.map(|c| 3 + c.len()))
            .unwrap_or(0);
        let cookie_touched = datagram[..cookie_end] != original[..cookie_end];
        let decision = acceptor.handle(now, from, &datagram, ServerLoad::default());
        if cookie_touched {
            let accepted = matches!(decision, Decision::Accept(_));
            prop_assert!(!accepted, "a touched cookie was accepted");
        }
    }
}
