//! Early data (0-RTT): stream data a secured client writes before its
//! handshake completes travels in its first flight, and a server that
//! accepts the flight delivers it one one-way delay after the client
//! started, instead of after a round trip and a half.
//!
//! Every scenario runs in virtual time over a wire with a fixed one-way
//! delay; the ones with random loss are seeded and print their seed when
//! they fail. The data must arrive intact whatever happens to the early
//! packets: lost, tampered with, refused as a replay, or refused by a
//! server that started less than a window ago.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ltx_proto::protection::{
    EarlyDataRecord, SecurityConfig, StaticKeypair, UnixMillis, WallClock, EARLY_DATA_AHEAD,
    EARLY_DATA_WINDOW,
};
use ltx_proto::{Connection, EcnCodepoint, ReadOutcome, StreamId, TransportConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const ONE_WAY: Duration = Duration::from_millis(100);
/// The wall clock of both ends when the server's record was made.
const EPOCH_MS: u64 = 1_700_000_000_000;

fn keypair(n: u8) -> StaticKeypair {
    StaticKeypair::from_entropy([n; 32])
}

fn is_initial(datagram: &[u8]) -> bool {
    datagram.first().is_some_and(|b| (b >> 4) & 0x3 == 0x0)
}

fn is_early(datagram: &[u8]) -> bool {
    datagram.first().is_some_and(|b| (b >> 4) & 0x3 == 0x3) && datagram.len() > 72
}

/// One server endpoint's keys and record, from which any number of server
/// connections are made (a replay makes a new one).
struct ServerEnd {
    security: SecurityConfig,
    config: TransportConfig,
}

impl ServerEnd {
    /// A server whose record was made at `started`, the wall clock then
    /// reading [`EPOCH_MS`].
    fn new(started: Instant, early_data: bool) -> ServerEnd {
        let clock = WallClock::new(started, UnixMillis(EPOCH_MS));
        let mut security = SecurityConfig::new(keypair(2));
        security.early_data_record = Some(EarlyDataRecord::new(clock));
        let mut config = TransportConfig::default();
        config.set_early_data(early_data);
        ServerEnd { security, config }
    }

    fn connection(&self, now: Instant, seed: u64) -> Connection {
        Connection::secure_server(
            self.config.clone(),
            self.security.clone(),
            now,
            seed,
            [seed as u8; 32],
        )
        .expect("valid server")
    }
}

fn client(now: Instant, early_data: bool, clock_origin: Instant) -> Connection {
    skewed_client(now, early_data, clock_origin, 0)
}

/// A client whose wall clock is `skew_ms` ahead of the server's (behind, if negative).
fn skewed_client(
    now: Instant,
    early_data: bool,
    clock_origin: Instant,
    skew_ms: i64,
) -> Connection {
    let mut security = SecurityConfig::new(keypair(1));
    security.clock = Some(WallClock::new(
        clock_origin,
        UnixMillis(EPOCH_MS.saturating_add_signed(skew_ms)),
    ));
    let mut config = TransportConfig::default();
    config.set_early_data(early_data);
    Connection::secure_client(config, security, keypair(2).public(), now, 1, [11; 32])
        .expect("valid client")
}

/// Whether the wire loses a client datagram; it may alter it instead.
type Wire = dyn FnMut(&mut Vec<u8>) -> bool;

/// Two connections joined by a wire with a fixed one-way delay; `drop`
/// decides for each client datagram whether the wire loses it (and may
/// alter it).
struct Path {
    /// When the client started.
    start: Instant,
    now: Instant,
    client: Connection,
    server: Connection,
    wire: BTreeMap<(Instant, u64), (bool, Vec<u8>)>,
    sequence: u64,
    /// Every datagram the client sent, in order, as it left.
    client_sent: Vec<Vec<u8>>,
    drop: Box<Wire>,
    /// What the server's application read, and when the first byte came.
    received: Vec<u8>,
    first_byte_at: Option<Instant>,
    stream: Option<StreamId>,
    /// What the server's application answers on the stream once the
    /// request is in (nothing: it does not answer), and when the client
    /// read the answer's first byte.
    reply: Vec<u8>,
    reply_at: Option<Instant>,
}

impl Path {
    fn new(now: Instant, client: Connection, server: Connection) -> Path {
        Path {
            start: now,
            now,
            client,
            server,
            wire: BTreeMap::new(),
            sequence: 0,
            client_sent: Vec::new(),
            drop: Box::new(|_| false),
            received: Vec::new(),
            first_byte_at: None,
            stream: None,
            reply: Vec::new(),
            reply_at: None,
        }
    }

    fn send(&mut self) {
        while let Some(t) = self.client.poll_transmit(self.now) {
            self.client_sent.push(t.contents.clone());
            let mut bytes = t.contents;
            if !(self.drop)(&mut bytes) {
                self.sequence += 1;
                self.wire
                    .insert((self.now + ONE_WAY, self.sequence), (true, bytes));
            }
        }
        while let Some(t) = self.server.poll_transmit(self.now) {
            self.sequence += 1;
            self.wire
                .insert((self.now + ONE_WAY, self.sequence), (false, t.contents));
        }
    }

    /// The server's application reads whatever it can, at once.
    fn read(&mut self) {
        while let Some(id) = self.server.accept_stream() {
            self.stream.get_or_insert(id);
        }
        let Some(id) = self.stream else {
            return;
        };
        let mut buf = [0u8; 8192];
        while let Ok(ReadOutcome::Data(n)) = self.server.read(id, &mut buf) {
            self.first_byte_at.get_or_insert(self.now);
            self.received.extend_from_slice(&buf[..n]);
        }
        if !self.reply.is_empty() && self.first_byte_at.is_some() {
            let reply = std::mem::take(&mut self.reply);
            let written = self.server.write(id, &reply).expect("the reply is written");
            assert_eq!(written, reply.len());
        }
        if self.reply_at.is_none() {
            if let Ok(ReadOutcome::Data(_)) = self.client.read(id, &mut buf) {
                self.reply_at = Some(self.now);
            }
        }
    }

    /// Runs until `until`, delivering datagrams and firing timers in
    /// order; `feed` is called whenever the client may take more bytes.
    fn run_until(&mut self, until: Instant, feed: &mut dyn FnMut(&mut Connection)) {
        loop {
            feed(&mut self.client);
            self.send();
            let arrival = self.wire.keys().next().map(|(t, _)| *t);
            let next = [
                arrival,
                self.client.poll_timeout(),
                self.server.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|t| *t <= until) else {
                self.now = until;
                return;
            };
            self.now = self.now.max(next);
            while let Some(entry) = self.wire.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                let (to_server, bytes) = entry.remove();
                if to_server {
                    self.server
                        .handle_datagram(self.now, &bytes, EcnCodepoint::NotEct);
                    self.read();
                } else {
                    self.client
                        .handle_datagram(self.now, &bytes, EcnCodepoint::NotEct);
                }
            }
            self.client.handle_timeout(self.now);
            self.server.handle_timeout(self.now);
            self.read();
        }
    }
}

/// A message's bytes: a pattern that shows any reordering or corruption.
fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// A feeder that writes `data` on one stream, opened before the first
/// flight, and finishes it.
fn writer(data: Vec<u8>) -> impl FnMut(&mut Connection) {
    let mut stream = None;
    let mut written = 0;
    move |client: &mut Connection| {
        if stream.is_none() {
            stream = client.open_stream().ok();
        }
        let Some(id) = stream else {
            return;
        };
        if written < data.len() {
            written += client.write(id, &data[written..]).unwrap_or(0);
            if written == data.len() {
                client.finish(id).expect("finish");
            }
        }
    }
}

/// A client and a server of a record made a window and a second before,
/// the client with `early_data`; the client writes `data` before its first
/// flight. Returns the path after `run` of virtual time.
fn transfer(early_data: bool, data: &[u8], drop: Box<Wire>) -> Path {
    transfer_skewed(early_data, data, drop, 0)
}

/// [`transfer`] with the client's clock `skew_ms` ahead of the server's.
fn transfer_skewed(early_data: bool, data: &[u8], drop: Box<Wire>, skew_ms: i64) -> Path {
    let origin = Instant::now();
    let start = origin + EARLY_DATA_WINDOW + Duration::from_secs(1);
    let end = ServerEnd::new(origin, early_data);
    let mut path = Path::new(
        start,
        skewed_client(start, early_data, origin, skew_ms),
        end.connection(start, 2),
    );
    path.drop = drop;
    let mut feed = writer(data.to_vec());
    path.run_until(start + Duration::from_secs(20), &mut feed);
    path
}

/// How long after the client started the server's application read the
/// first byte.
fn delay_of_first_byte(path: &Path) -> Duration {
    path.first_byte_at.expect("the data arrived") - path.start
}

#[test]
fn an_early_message_arrives_one_one_way_delay_after_the_client_starts() {
    let hello = b"GET / HTTP/1.1\r\n\r\n".to_vec();
    let early = transfer(true, &hello, Box::new(|_| false));
    assert_eq!(early.received, hello);
    let early_delay = delay_of_first_byte(&early);
    assert_eq!(early_delay, ONE_WAY, "early data arrives with the Initial");
    assert!(early.client.stats().early_packets_sent >= 1);

    let late = transfer(false, &hello, Box::new(|_| false));
    assert_eq!(late.received, hello);
    let late_delay = delay_of_first_byte(&late);
    // Initial out, answer back, then the data: three one-way delays, and
    // at most 10 ms while the first data waits on the copies' reading.
    let hold = Duration::from_millis(10);
    assert!(
        late_delay >= ONE_WAY * 3 && late_delay <= ONE_WAY * 3 + hold,
        "without early data, the first byte came after {late_delay:?}"
    );
    assert_eq!(late.client.stats().early_packets_sent, 0);
    println!("first byte: {early_delay:?} with early data, {late_delay:?} without");
}

#[test]
fn a_server_answers_an_early_request_before_the_client_confirms_the_handshake() {
    let origin = Instant::now();
    let start = origin + EARLY_DATA_WINDOW + Duration::from_secs(1);
    let end = ServerEnd::new(origin, true);
    let mut path = Path::new(
        start,
        skewed_client(start, true, origin, 0),
        end.connection(start, 2),
    );
    path.reply = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    let mut feed = writer(b"GET / HTTP/1.1\r\n\r\n".to_vec());
    path.run_until(start + Duration::from_secs(2), &mut feed);
    let answered = path.reply_at.expect("the client read the answer") - start;
    // Request out with the Initial, answer back with the server's.
    assert_eq!(answered, ONE_WAY * 2, "the answer came after {answered:?}");
}

#[test]
fn a_write_larger_than_the_first_flight_arrives_intact_and_in_order() {
    let data = message(300_000);
    let path = transfer(true, &data, Box::new(|_| false));
    let sent = path.client.stats().early_packets_sent;
    assert!(sent >= 2, "the first flight carried {sent} early packets");
    assert!(
        sent * 1500 < 300_000,
        "the first flight is bounded by the first window ({sent} packets)"
    );
    assert_eq!(path.received.len(), data.len());
    assert!(path.received == data, "the bytes arrived altered");
    assert_eq!(path.server.stats().early_refused, 0);
    println!("first flight: {sent} early packets");
}

#[test]
fn a_lost_early_packet_is_repaired_and_the_stream_arrives_intact() {
    let data = message(20_000);
    let mut early_seen = 0;
    let path = transfer(
        true,
        &data,
        Box::new(move |d| {
            if is_early(d) {
                early_seen += 1;
                return early_seen == 2;
            }
            false
        }),
    );
    assert!(path.client.stats().early_packets_sent >= 3);
    assert!(path.received == data, "the stream arrived altered or short");
    assert_eq!(path.client.stats().early_refused, 0);
}

#[test]
fn early_data_under_random_loss_arrives_intact() {
    for seed in 0..8u64 {
        let data = message(40_000);
        let mut rng = SmallRng::seed_from_u64(seed);
        let path = transfer(true, &data, Box::new(move |_| rng.random_bool(0.1)));
        assert!(
            path.received == data,
            "seed {seed}: {} of {} bytes arrived intact",
            path.received.len(),
            data.len()
        );
    }
}

#[test]
fn a_tampered_early_packet_is_dropped_and_the_data_still_arrives() {
    let data = message(5_000);
    let mut tampered = false;
    let path = transfer(
        true,
        &data,
        Box::new(move |d| {
            if is_early(d) && !tampered {
                tampered = true;
                let last = d.len() - 20;
                d[last] ^= 0x01;
            }
            false
        }),
    );
    assert!(path.server.stats().packets_unauthentic >= 1);
    assert!(path.received == data, "the stream arrived altered or short");
}

#[test]
fn a_replayed_first_flight_does_not_deliver_its_early_data_again() {
    let origin = Instant::now();
    let start = origin + EARLY_DATA_WINDOW + Duration::from_secs(1);
    let end = ServerEnd::new(origin, true);
    let hello = b"transfer 100 to mallory".to_vec();
    let mut path = Path::new(start, client(start, true, origin), end.connection(start, 2));
    path.run_until(start + Duration::from_secs(5), &mut writer(hello.clone()));
    assert_eq!(path.received, hello);
    let first_flight: Vec<Vec<u8>> = path
        .client_sent
        .iter()
        .take_while(|d| !d.is_empty())
        .filter(|d| d[0] >> 4 & 0x3 != 0x2)
        .cloned()
        .collect();
    assert!(first_flight.iter().any(|d| is_early(d)));

    // The same datagrams again, a second later, to the same endpoint: a
    // new server connection, sharing the record.
    let mut replayed = end.connection(path.now, 3);
    let at = path.now + Duration::from_secs(1);
    for datagram in &first_flight {
        replayed.handle_datagram(at, datagram, EcnCodepoint::NotEct);
    }
    assert_eq!(replayed.accept_stream(), None, "the replay delivered data");
    assert_eq!(replayed.stats().early_refused, 1);
    let mut answered = 0;
    while replayed.poll_transmit(at).is_some() {
        answered += 1;
    }
    assert!(answered > 0, "the handshake itself is still answered");
}

#[test]
fn a_restarted_server_refuses_early_data_and_the_data_arrives_as_one_rtt_data() {
    let origin = Instant::now();
    // The server's record is made as the client starts: a restart.
    let end = ServerEnd::new(origin, true);
    let data = message(30_000);
    let mut path = Path::new(
        origin,
        client(origin, true, origin),
        end.connection(origin, 2),
    );
    path.run_until(origin + Duration::from_secs(20), &mut writer(data.clone()));
    assert!(path.client.stats().early_packets_sent >= 1);
    assert_eq!(path.server.stats().early_refused, 1);
    assert_eq!(path.client.stats().early_refused, 1);
    assert_eq!(
        path.server.stats().packets_unauthentic,
        0,
        "refused early packets are dropped, not counted as forgeries"
    );
    assert!(path.received == data, "the stream arrived altered or short");
    let delay = delay_of_first_byte(&path);
    assert!(
        delay >= ONE_WAY * 3,
        "refused early data arrived after {delay:?}"
    );
    println!("refused early data: first byte after {delay:?}");
    assert_eq!(
        path.client.stats().packets_lost,
        0,
        "refused early packets are not counted lost"
    );
    assert_eq!(path.client.stats().loss_rate, 0.0);
}

#[test]
fn a_client_without_a_clock_or_a_server_without_a_record_is_refused() {
    let now = Instant::now();
    let mut config = TransportConfig::default();
    config.set_early_data(true);
    let security = SecurityConfig::new(keypair(1));
    assert!(Connection::secure_client(
        config.clone(),
        security.clone(),
        keypair(2).public(),
        now,
        1,
        [1; 32]
    )
    .is_err());
    assert!(Connection::secure_server(config.clone(), security, now, 2, [2; 32]).is_err());
    assert!(Connection::client(config.clone(), now, 1).is_err());
    assert!(Connection::server(config, now, 2).is_err());
}

#[test]
fn a_client_clock_the_allowance_ahead_is_taken_and_one_millisecond_more_is_refused() {
    // The server reads the stamp one one-way delay after the client wrote
    // it: a skew of the allowance plus that delay puts the stamp exactly
    // the allowance ahead of the server's clock.
    let ahead = EARLY_DATA_AHEAD.as_millis() as u64 + ONE_WAY.as_millis() as u64;
    let data = message(3_000);
    let inside = transfer_skewed(true, &data, Box::new(|_| false), ahead as i64);
    assert_eq!(inside.server.stats().early_refused, 0);
    assert!(inside.received == data);
    let outside = transfer_skewed(true, &data, Box::new(|_| false), ahead as i64 + 1);
    assert_eq!(outside.server.stats().early_refused, 1);
    assert_eq!(outside.client.stats().early_refused, 1);
    assert!(
        outside.received == data,
        "refused early data arrived altered"
    );
}

#[test]
fn a_client_clock_the_window_behind_is_taken_and_one_millisecond_more_is_refused() {
    let behind = EARLY_DATA_WINDOW.as_millis() as i64 - ONE_WAY.as_millis() as i64;
    let data = message(3_000);
    let inside = transfer_skewed(true, &data, Box::new(|_| false), -behind);
    assert_eq!(inside.server.stats().early_refused, 0);
    assert!(inside.received == data);
    let outside = transfer_skewed(true, &data, Box::new(|_| false), -behind - 1);
    assert_eq!(outside.server.stats().early_refused, 1);
    assert!(
        outside.received == data,
        "refused early data arrived altered"
    );
}

#[test]
fn early_packets_that_arrive_before_the_initial_are_dropped_and_their_data_still_arrives() {
    // The first Initial flight is lost whole (its three copies and the one
    // among its early packets): its early packets reach a server that has
    // no key for them yet.
    let data = message(20_000);
    let mut initials = 0;
    let path = transfer(
        true,
        &data,
        Box::new(move |d| {
            if is_initial(d) {
                initials += 1;
                return initials <= 4;
            }
            false
        }),
    );
    let flight = path
        .client_sent
        .iter()
        .rposition(|d| is_early(d))
        .expect("early packets were sent");
    let copies = path.client_sent[..flight]
        .iter()
        .filter(|d| is_initial(d))
        .count();
    assert_eq!(
        copies, 4,
        "the first flight should hold four copies of the Initial"
    );
    let early = path.client.stats().early_packets_sent;
    assert!(early >= 2);
    assert!(path.server.stats().packets_dropped >= early);
    assert_eq!(path.server.stats().packets_unauthentic, 0);
    // The server took the flight when its Initial came, but the packets
    // that carried its data were gone by then: repair brings the data.
    assert!(path.received == data, "the stream arrived altered or short");
}

#[test]
fn a_burst_that_takes_the_initial_copies_and_the_early_packets_behind_them_costs_no_time_out() {
    // A run of loss takes the three back-to-back copies and the eight
    // early packets after them; the copy that follows those lets the rest
    // of the flight in, and the lost packets are repaired once the answer
    // comes back, a round trip after the start, not after a probe time-out.
    let data = message(30_000);
    let mut sent = 0;
    let path = transfer(
        true,
        &data,
        Box::new(move |_| {
            sent += 1;
            sent <= 11
        }),
    );
    assert!(path.received == data, "the stream arrived altered or short");
    assert_eq!(path.server.stats().early_refused, 0);
    assert!(
        path.client_sent.iter().filter(|d| is_initial(d)).count() <= 5,
        "the client sent its Initial again: it timed out"
    );
    let first = delay_of_first_byte(&path);
    assert!(
        first <= ONE_WAY * 3 + Duration::from_millis(50),
        "the first byte came {first:?} after the start"
    );
}

#[test]
fn a_server_with_smaller_datagrams_refuses_early_symbols_and_the_client_sends_them_again_resized() {
    // The client built its early symbols for 1400-byte datagrams; the
    // server takes 1250: both ends agree on the smaller symbols, and the
    // client puts the early data in them.
    let origin = Instant::now();
    let start = origin + EARLY_DATA_WINDOW + Duration::from_secs(1);
    let mut end = ServerEnd::new(origin, true);
    end.config.set_max_datagram(1250).unwrap();
    let mut security = SecurityConfig::new(keypair(1));
    security.clock = Some(WallClock::new(origin, UnixMillis(EPOCH_MS)));
    let mut config = TransportConfig::default();
    config.set_early_data(true).set_max_datagram(1400).unwrap();
    for seed in 0..4u64 {
        let client = Connection::secure_client(
            config.clone(),
            security.clone(),
            keypair(2).public(),
            start,
            1,
            [11; 32],
        )
        .expect("valid client");
        let mut path = Path::new(start, client, end.connection(start, 2));
        // Seed 0 runs on a clean wire, the others lose 10 %.
        let mut rng = SmallRng::seed_from_u64(seed);
        path.drop = Box::new(move |_| seed > 0 && rng.random_bool(0.1));
        let data = message(100_000);
        path.run_until(start + Duration::from_secs(20), &mut writer(data.clone()));
        assert!(path.client.stats().early_packets_sent >= 2, "seed {seed}");
        assert_eq!(path.server.stats().early_refused, 1, "seed {seed}");
        assert!(!path.client.is_closed(), "seed {seed}: the client gave up");
        assert!(
            path.received == data,
            "seed {seed}: {} of {} bytes arrived intact",
            path.received.len(),
            data.len()
        );
    }
}
