//! Roaming: a client whose address changes keeps its connection. The
//! server validates the new address with a challenge, sends it at most
//! three times what it received from it until the answer comes, and moves
//! there; a packet that is late, replayed, or diverted through an address
//! that does not answer does not move it for good. An outage shorter than
//! the idle time-out loses nothing.
//!
//! Every scenario runs in virtual time over a small seeded network: one
//! bottleneck each way (10 Mbit/s, 20 ms one way, 1% random loss), with
//! the tunnel's idle time-out (5 min) and silence probe (1 s).
//! A failing test prints its seed.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ltx_proto::{
    Connection, EcnCodepoint, ReadOutcome, StreamId, TransportConfig, AMPLIFICATION_FACTOR,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const RATE_BYTES_PER_SEC: u64 = 10_000_000 / 8;
const ONE_WAY: Duration = Duration::from_millis(20);
const LOSS: f64 = 0.01;
const DOWNLOAD: usize = 2_000_000;

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("an address")
}

/// A datagram on the wire.
struct InFlight {
    at: Instant,
    from: SocketAddr,
    to: SocketAddr,
    bytes: Vec<u8>,
}

/// What a scenario does to the client's traffic.
#[derive(Default)]
struct Script {
    /// The client's address changes to this at this time.
    moves: Option<(Duration, SocketAddr)>,
    /// Nothing gets through either way in this span.
    blackout: Option<(Duration, Duration)>,
    /// The client's first datagram after this time is held back and
    /// delivered again, from this address, at the later time.
    replay: Option<(Duration, SocketAddr, Duration)>,
    /// The client's first datagram after this time goes through this
    /// address instead of its own (a diversion).
    divert: Option<(Duration, SocketAddr)>,
}

/// What a scenario saw.
#[derive(Debug, Default)]
struct Report {
    /// The client's bytes, read whole.
    received: Vec<u8>,
    /// When the download completed, from the start.
    done_at: Option<Duration>,
    /// The most the server sent to an address that had not answered its
    /// challenge, and what it had received from it then.
    unproved_sent: u64,
    unproved_received: u64,
    /// The first time a server datagram reached the client after the
    /// blackout, counted from its end.
    back_after_blackout: Option<Duration>,
}

struct Sim {
    rng: SmallRng,
    start: Instant,
    now: Instant,
    client: Connection,
    server: Connection,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    wire: Vec<InFlight>,
    /// When each direction's bottleneck is free (client → server, back).
    free: [Instant; 2],
    script: Script,
    held: Option<Vec<u8>>,
    /// Bytes the server sent to each address while it was not proved, and
    /// received from it in all.
    unproved: Vec<(SocketAddr, u64, u64)>,
    report: Report,
}

fn config() -> TransportConfig {
    let mut config = TransportConfig::default();
    config
        .set_idle_timeout(Duration::from_secs(300))
        .expect("a valid time-out");
    // As a tunnel's: a client that only downloads pings after a second
    // without news, so that a server sending to its old address learns
    // the new one.
    config.set_silence_probe(Some(Duration::from_secs(1)));
    config
}

impl Sim {
    fn new(seed: u64, script: Script) -> Sim {
        let start = Instant::now();
        let mut rng = SmallRng::seed_from_u64(seed);
        let client = Connection::client(config(), start, rng.random()).expect("valid");
        let server = Connection::server(config(), start, rng.random()).expect("valid");
        Sim {
            rng,
            start,
            now: start,
            client,
            server,
            client_addr: addr("10.0.0.1:4000"),
            server_addr: addr("10.9.0.1:443"),
            wire: Vec::new(),
            free: [start; 2],
            script,
            held: None,
            unproved: Vec::new(),
            report: Report::default(),
        }
    }

    fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    fn dark(&self, at: Instant) -> bool {
        self.script
            .blackout
            .is_some_and(|(from, to)| at >= self.start + from && at < self.start + to)
    }

    fn put_on_wire(&mut self, direction: usize, from: SocketAddr, to: SocketAddr, bytes: Vec<u8>) {
        if self.dark(self.now) || self.rng.random_bool(LOSS) {
            return;
        }
        let serialise =
            Duration::from_nanos(bytes.len() as u64 * 1_000_000_000 / RATE_BYTES_PER_SEC);
        let leaves = self.free[direction].max(self.now) + serialise;
        self.free[direction] = leaves;
        self.wire.push(InFlight {
            at: leaves + ONE_WAY,
            from,
            to,
            bytes,
        });
    }

    fn poll(&mut self) {
        if let Some((at, new)) = self.script.moves {
            if self.elapsed() >= at {
                self.client_addr = new;
                self.script.moves = None;
            }
        }
        while let Some(t) = self.client.poll_transmit(self.now) {
            let mut from = self.client_addr;
            if let Some((at, via)) = self.script.divert {
                if self.elapsed() >= at {
                    from = via;
                    self.script.divert = None;
                }
            }
            if let Some((at, _, _)) = self.script.replay {
                if self.elapsed() >= at && self.held.is_none() {
                    self.held = Some(t.contents.clone());
                }
            }
            let to = t.destination.unwrap_or(self.server_addr);
            self.put_on_wire(0, from, to, t.contents);
        }
        if let Some((_, via, when)) = self.script.replay {
            if self.elapsed() >= when {
                if let Some(bytes) = self.held.take() {
                    self.script.replay = None;
                    self.wire.push(InFlight {
                        at: self.now,
                        from: via,
                        to: self.server_addr,
                        bytes,
                    });
                }
            }
        }
        while let Some(t) = self.server.poll_transmit(self.now) {
            let to = t
                .destination
                .expect("the server knows its client's address");
            if self.server.is_validating_path() {
                let entry = self.unproved_entry(to);
                entry.1 += t.contents.len() as u64;
                let (sent, received) = (entry.1, entry.2);
                if sent > self.report.unproved_sent {
                    self.report.unproved_sent = sent;
                    self.report.unproved_received = received;
                }
            }
            self.put_on_wire(1, self.server_addr, to, t.contents);
        }
        while self.client.poll_event().is_some() {}
        while self.server.poll_event().is_some() {}
    }

    fn unproved_entry(&mut self, to: SocketAddr) -> &mut (SocketAddr, u64, u64) {
        let i = match self.unproved.iter().position(|e| e.0 == to) {
            Some(i) => i,
            None => {
                self.unproved.push((to, 0, 0));
                self.unproved.len() - 1
            }
        };
        &mut self.unproved[i]
    }

    /// Runs until the download is read whole or `limit` has passed.
    fn run(mut self, limit: Duration) -> (Report, Sim) {
        let mut stream: Option<StreamId> = None;
        let mut written = 0;
        let data = payload();
        let mut buf = vec![0u8; 65536];
        for step in 0.. {
            assert!(
                step < 5_000_000,
                "the simulation spins at {:?}",
                self.elapsed()
            );
            self.poll();
            if stream.is_none() && self.server.is_established() {
                stream = self.server.open_stream().ok();
            }
            if let Some(id) = stream {
                if written < data.len() {
                    written += self.server.write(id, &data[written..]).unwrap_or(0);
                    if written == data.len() {
                        self.server.finish(id).expect("an open stream");
                    }
                }
            }
            while let Some(id) = self.client.accept_stream() {
                let _ = id;
            }
            if let Some(id) = stream {
                loop {
                    match self.client.read(id, &mut buf) {
                        Ok(ReadOutcome::Data(n)) => {
                            self.report.received.extend_from_slice(&buf[..n])
                        }
                        Ok(ReadOutcome::Finished) => {
                            self.report.done_at = Some(self.elapsed());
                            return (std::mem::take(&mut self.report), self);
                        }
                        _ => break,
                    }
                }
            }
            self.poll();
            let next_packet = self.wire.iter().map(|p| p.at).min();
            let next = [
                next_packet,
                self.client.poll_timeout(),
                self.server.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else { break };
            if next > self.start + limit {
                break;
            }
            self.now = self.now.max(next);
            let due: VecDeque<InFlight> = {
                let (due, later) = std::mem::take(&mut self.wire)
                    .into_iter()
                    .partition(|p| p.at <= self.now);
                self.wire = later;
                let mut due: Vec<InFlight> = due;
                due.sort_by_key(|p| p.at);
                due.into()
            };
            for p in due {
                if p.to == self.server_addr {
                    self.unproved_entry(p.from).2 += p.bytes.len() as u64;
                    self.server.handle_datagram_from(
                        self.now,
                        p.from,
                        &p.bytes,
                        EcnCodepoint::NotEct,
                    );
                } else if p.to == self.client_addr {
                    if let Some((_, end)) = self.script.blackout {
                        let end = self.start + end;
                        if self.now >= end && self.report.back_after_blackout.is_none() {
                            self.report.back_after_blackout = Some(self.now - end);
                        }
                    }
                    self.client.handle_datagram_from(
                        self.now,
                        p.from,
                        &p.bytes,
                        EcnCodepoint::NotEct,
                    );
                }
                // Anything else went to an address nobody holds.
            }
            for c in [&mut self.client, &mut self.server] {
                if c.poll_timeout().is_some_and(|t| t <= self.now) {
                    c.handle_timeout(self.now);
                }
            }
        }
        (std::mem::take(&mut self.report), self)
    }
}

fn payload() -> Vec<u8> {
    (0..DOWNLOAD).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn seeds() -> impl Iterator<Item = u64> {
    let base = std::env::var("LTX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0035);
    base..base + 4
}

fn completes_intact(seed: u64, report: &Report) {
    assert!(
        report.done_at.is_some(),
        "seed {seed}: the download did not complete ({} of {DOWNLOAD} bytes)",
        report.received.len()
    );
    assert!(
        report.received == payload(),
        "seed {seed}: the download arrived altered ({} bytes)",
        report.received.len()
    );
}

#[test]
fn a_client_that_changes_address_mid_download_completes_it_intact() {
    for seed in seeds() {
        let script = Script {
            moves: Some((Duration::from_millis(600), addr("10.7.0.5:5123"))),
            ..Script::default()
        };
        let (report, sim) = Sim::new(seed, script).run(Duration::from_secs(60));
        completes_intact(seed, &report);
        let stats = sim.server.stats();
        eprintln!(
            "seed {seed}: done at {:?}; {} bytes sent to the new address for {} received before it answered",
            report.done_at, report.unproved_sent, report.unproved_received
        );
        assert_eq!(stats.path_changes, 1, "seed {seed}: {stats:?}");
        assert_eq!(stats.paths_validated, 1, "seed {seed}: {stats:?}");
        assert_eq!(sim.server.remote_address(), Some(addr("10.7.0.5:5123")));
        assert!(report.unproved_sent > 0, "seed {seed}: the server waited");
        assert!(
            report.unproved_sent <= AMPLIFICATION_FACTOR * report.unproved_received,
            "seed {seed}: {} bytes sent to an unproved address that sent {}",
            report.unproved_sent,
            report.unproved_received
        );
    }
}

#[test]
fn a_nat_rebinding_keeps_the_path_and_completes() {
    for seed in seeds() {
        let script = Script {
            moves: Some((Duration::from_millis(600), addr("10.0.0.1:4999"))),
            ..Script::default()
        };
        let (report, sim) = Sim::new(seed, script).run(Duration::from_secs(60));
        completes_intact(seed, &report);
        let stats = sim.server.stats();
        assert_eq!(stats.paths_validated, 1, "seed {seed}: {stats:?}");
        assert_eq!(sim.server.remote_address(), Some(addr("10.0.0.1:4999")));
    }
}

#[test]
fn a_replayed_packet_from_a_third_address_moves_nothing() {
    for seed in seeds() {
        let script = Script {
            replay: Some((
                Duration::from_millis(400),
                addr("192.0.2.66:6666"),
                Duration::from_millis(800),
            )),
            ..Script::default()
        };
        let (report, sim) = Sim::new(seed, script).run(Duration::from_secs(60));
        completes_intact(seed, &report);
        let stats = sim.server.stats();
        assert_eq!(stats.path_changes, 0, "seed {seed}: {stats:?}");
        assert_eq!(sim.server.remote_address(), Some(addr("10.0.0.1:4000")));
    }
}

#[test]
fn a_packet_diverted_through_a_silent_address_moves_the_connection_only_until_the_next() {
    for seed in seeds() {
        let script = Script {
            divert: Some((Duration::from_millis(500), addr("192.0.2.66:6666"))),
            ..Script::default()
        };
        let (report, sim) = Sim::new(seed, script).run(Duration::from_secs(60));
        completes_intact(seed, &report);
        let stats = sim.server.stats();
        assert!(stats.path_changes <= 1, "seed {seed}: {stats:?}");
        assert_eq!(stats.paths_validated, 0, "seed {seed}: {stats:?}");
        assert_eq!(sim.server.remote_address(), Some(addr("10.0.0.1:4000")));
        assert!(
            report.unproved_sent <= AMPLIFICATION_FACTOR * report.unproved_received,
            "seed {seed}: {} bytes sent to an unproved address that sent {}",
            report.unproved_sent,
            report.unproved_received
        );
    }
}

#[test]
fn a_diverted_packet_then_silence_fails_validation_and_returns_to_the_old_address() {
    for seed in seeds() {
        let script = Script {
            divert: Some((Duration::from_millis(500), addr("192.0.2.66:6666"))),
            blackout: Some((Duration::from_millis(501), Duration::from_secs(10))),
            ..Script::default()
        };
        let (report, sim) = Sim::new(seed, script).run(Duration::from_secs(90));
        completes_intact(seed, &report);
        let stats = sim.server.stats();
        eprintln!("seed {seed}: {stats:?}");
        assert_eq!(sim.server.remote_address(), Some(addr("10.0.0.1:4000")));
        assert_eq!(stats.paths_validated, 0, "seed {seed}: {stats:?}");
    }
}

#[test]
fn a_twenty_second_outage_mid_download_loses_nothing() {
    for seed in seeds() {
        let (baseline, _) = Sim::new(seed, Script::default()).run(Duration::from_secs(60));
        completes_intact(seed, &baseline);
        let script = Script {
            blackout: Some((Duration::from_millis(600), Duration::from_millis(20_600))),
            ..Script::default()
        };
        let (report, sim) = Sim::new(seed, script).run(Duration::from_secs(120));
        completes_intact(seed, &report);
        let back = report
            .back_after_blackout
            .expect("the server sent after the outage");
        let baseline_done = baseline.done_at.expect("completed");
        let done = report.done_at.expect("completed");
        eprintln!(
            "seed {seed}: without an outage done at {baseline_done:?}; with a 20 s one at {done:?}; first packet {back:?} after it ended; {:?}",
            sim.server.stats()
        );
        // Probes keep going out at a bounded interval through the outage,
        // so the first comes within a few round trips of its end; and the
        // transfer then runs at the speed it had, not a crawl.
        assert!(
            back < Duration::from_secs(2),
            "seed {seed}: back after {back:?}"
        );
        assert!(
            done < baseline_done + Duration::from_secs(20) + baseline_done,
            "seed {seed}: done at {done:?}, {baseline_done:?} without the outage"
        );
        // What was sent into the dead path is not loss the path deals: the
        // estimate stays near the link's 1 %, not the outage's 100 %.
        let loss = sim.server.stats().loss_rate;
        assert!(
            loss < 0.1,
            "seed {seed}: loss estimate {loss} after the outage"
        );
    }
}
