//! Careful resume in the simulator, one scenario per phase of
//! draft-ietf-tsvwg-careful-resume: a connection given the path an earlier
//! one measured starts at half its rate and finishes sooner; one given a
//! rate five times what the path has overflows the bottleneck's queue for
//! no more than a round trip; one whose saved round trip no longer matches,
//! or that has no saved path at all, starts as a first contact; one given
//! a rate below the path's finishes no later than a first contact; and one
//! that joins three running flows with the rate it saw alone takes no more
//! than its share.
//!
//! Thresholds come from the path (its round trip) or from a first-contact
//! connection on the same path and seed. A failure prints its seed; the
//! scenario replays from it.

use std::time::{Duration, Instant};

use ltx_proto::congestion::SavedPath;
use ltx_proto::{Connection, TransportConfig};
use ltx_sim::metrics::jain;
use ltx_sim::scenario::{Scenario, ScenarioResult, ACCESS_SPEEDUP};
use ltx_sim::transfer::TransferNode;
use ltx_sim::{Access, LinkConfig, Network};

/// A path and the transfer made over it.
#[derive(Debug, Clone, Copy)]
struct Path {
    /// Bottleneck rate, bits per second.
    rate_bps: u64,
    /// Round-trip propagation delay.
    rtt: Duration,
    /// Bytes transferred.
    size: u64,
}

/// 4 MB over 50 Mbit/s with a 600 ms round trip: a satellite hop.
const LONG_DELAY: Path = Path {
    rate_bps: 50_000_000,
    rtt: Duration::from_millis(600),
    size: 4_000_000,
};

/// 20 MB over the long-delay path: more than its pipe and queue hold
/// together (7.5 MB), so a jump at 2.5 times its rate overflows the queue.
const LONG_DELAY_20_MB: Path = Path {
    size: 20_000_000,
    ..LONG_DELAY
};

/// 4 MB over 50 Mbit/s with a 20 ms round trip: a terrestrial path, whose
/// one bandwidth-delay product of queue (125 kB) a jump overflows at once.
const SHORT_DELAY: Path = Path {
    rtt: Duration::from_millis(20),
    ..LONG_DELAY
};

impl Path {
    /// The path with random loss `loss`, and the connection given `saved`.
    fn scenario(self, loss: f64, seed: u64, saved: Option<SavedPath>) -> Scenario {
        let mut scenario = Scenario {
            rate_bps: self.rate_bps,
            rtt: self.rtt,
            loss,
            burst: 1.0,
            size: self.size,
            seed,
            ..Scenario::default()
        };
        scenario.transport.set_saved_path(saved);
        scenario
    }

    /// The path as an earlier connection would have saved it: the
    /// bottleneck's rate scaled by `factor`, and its round trip.
    fn saved(self, factor: f64) -> SavedPath {
        SavedPath {
            rate: (self.rate_bps as f64 / 8.0 * factor) as u64,
            min_rtt: self.rtt,
        }
    }

    /// The round trip, seconds.
    fn rtt_s(self) -> f64 {
        self.rtt.as_secs_f64()
    }
}

/// 4 MB over the long-delay path, with random loss `loss`.
fn long_delay(loss: f64, seed: u64, saved: Option<SavedPath>) -> Scenario {
    LONG_DELAY.scenario(loss, seed, saved)
}

/// Runs `scenario`, which must deliver intact; its completion time in
/// seconds and its figures.
fn completion(scenario: &Scenario) -> (f64, ScenarioResult) {
    let result = scenario.run().expect("the scenario builds");
    assert!(
        result.verified,
        "seed {}: not delivered intact: {:?}",
        scenario.seed, result.flows[0].error
    );
    let seconds = result.flows[0]
        .completion_s
        .expect("a verified transfer has a completion time");
    (seconds, result)
}

/// 4 MB over the long-delay path with the saved rate scaled by `factor`.
fn saved(factor: f64) -> SavedPath {
    LONG_DELAY.saved(factor)
}

#[test]
fn a_resumed_connection_finishes_sooner_than_a_first_one() {
    for (loss, seed) in [(0.0, 1u64), (0.05, 2), (0.2, 3)] {
        let (fresh, _) = completion(&long_delay(loss, seed, None));
        let (resumed, _) = completion(&long_delay(loss, seed, Some(saved(1.0))));
        eprintln!("loss {loss} seed {seed}: fresh {fresh:.3} s, resumed {resumed:.3} s");
        assert!(
            resumed < fresh - 0.2,
            "seed {seed}, loss {loss}: resumed {resumed:.3} s, first {fresh:.3} s"
        );
    }
}

#[test]
fn a_saved_rate_the_path_no_longer_has_costs_little() {
    for (loss, seed) in [(0.0, 4u64), (0.05, 5)] {
        let (fresh, fresh_result) = completion(&long_delay(loss, seed, None));
        let (wrong, wrong_result) = completion(&long_delay(loss, seed, Some(saved(4.0))));
        eprintln!(
            "loss {loss} seed {seed}: fresh {fresh:.3} s overhead {:.3}, saved 4x {wrong:.3} s overhead {:.3}",
            fresh_result.flows[0].overhead, wrong_result.flows[0].overhead
        );
        assert!(
            wrong < fresh * 1.25,
            "seed {seed}, loss {loss}: {wrong:.3} s against {fresh:.3} s"
        );
        assert!(
            wrong_result.flows[0].overhead < fresh_result.flows[0].overhead + 0.3,
            "seed {seed}, loss {loss}: overhead {:.3} against {:.3}",
            wrong_result.flows[0].overhead,
            fresh_result.flows[0].overhead
        );
    }
}

#[test]
fn a_saved_rate_below_the_paths_costs_no_more_than_a_first_contact() {
    // A path that got faster since it was saved. The jump is paced at half
    // the saved rate, so its ACK train shows no more than that: careful
    // resume sent the first round trip at half the saved rate and the
    // second at the saved rate, and took 1.16-1.41 times a first contact's
    // time from a saved rate of a quarter or a half of the path's. The
    // jump now leads with the initial window at once, whose pairs read the
    // path's rate as a first contact's first flight does, and a path that
    // shows the saved rate or more ends resume there.
    let mut over = Vec::new();
    for (loss, seed) in [(0.0, 1u64), (0.05, 2)] {
        let (fresh, _) = completion(&long_delay(loss, seed, None));
        for factor in [0.1, 0.25, 0.5] {
            let (resumed, _) = completion(&long_delay(loss, seed, Some(saved(factor))));
            eprintln!(
                "loss {loss} seed {seed}: first contact {fresh:.3} s, saved {factor}x {resumed:.3} s, \
                 {:.2}x",
                resumed / fresh
            );
            if resumed > fresh * 1.05 {
                over.push(format!(
                    "loss {loss}, seed {seed}, saved {factor}x: {resumed:.3} s against {fresh:.3} s"
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "slower than a first contact:\n{}",
        over.join("\n")
    );
}

/// The runs of the rate-fell-five-times scenarios: clean, and at 5 %
/// random loss on two seeds.
const FELL_RUNS: [(f64, u64); 3] = [(0.0, 11), (0.05, 12), (0.05, 13)];

/// A connection on `path` given a saved rate five times the path's (it
/// fell from 250 to 50 Mbit/s since it was saved), beside a first contact
/// on the same path and seed.
struct RateFell {
    /// The first contact's completion, seconds.
    fresh: f64,
    /// Its figures.
    fresh_result: ScenarioResult,
    /// The resumed connection's completion, seconds.
    resumed: f64,
    /// Its figures.
    resumed_result: ScenarioResult,
}

impl RateFell {
    /// Runs both connections on `path`.
    fn run(path: Path, loss: f64, seed: u64) -> RateFell {
        let (fresh, fresh_result) = completion(&path.scenario(loss, seed, None));
        let (resumed, resumed_result) =
            completion(&path.scenario(loss, seed, Some(path.saved(5.0))));
        let drops = &resumed_result.queue_drops_s;
        let overflow = match (drops.first(), drops.last()) {
            (Some(first), Some(last)) => format!(
                "{} queue drops from {first:.3} s to {last:.3} s",
                drops.len()
            ),
            _ => "no queue drops".to_owned(),
        };
        eprintln!(
            "{} B, {} ms, loss {loss}, seed {seed}: first contact {fresh:.3} s, {} queue drops; \
             saved 5x {resumed:.3} s, {overflow}",
            path.size,
            path.rtt.as_millis(),
            fresh_result.queue_drops_s.len(),
        );
        RateFell {
            fresh,
            fresh_result,
            resumed,
            resumed_result,
        }
    }
}

#[test]
fn a_saved_rate_five_times_too_high_overflows_the_queue_for_at_most_a_round_trip() {
    // The jump is half the saved rate, 2.5 times the path's; its ACK train
    // shows the path's rate and the controller retreats to it within a
    // round trip of data. Whatever the queue drops must come in that one
    // round trip, and within the first three of the connection (the
    // handshake's, the jump's and the retreat's); after it the queue
    // drops no more than it does under a first contact in the same time.
    for path in [LONG_DELAY, LONG_DELAY_20_MB, SHORT_DELAY] {
        let rtt = path.rtt_s();
        for (loss, seed) in FELL_RUNS {
            let run = RateFell::run(path, loss, seed);
            let drops = &run.resumed_result.queue_drops_s;
            let (Some(&first), Some(&last)) = (drops.first(), drops.last()) else {
                continue;
            };
            assert!(
                last - first <= rtt,
                "seed {seed}, {} ms, loss {loss}: queue drops from {first:.3} s to {last:.3} s, \
                 longer than a {rtt} s round trip",
                path.rtt.as_millis()
            );
            assert!(
                last <= 3.0 * rtt,
                "seed {seed}, {} ms, loss {loss}: a queue drop at {last:.3} s, after the first \
                 three round trips",
                path.rtt.as_millis()
            );
            let after = |drops: &[f64]| drops.iter().filter(|&&t| t > first + rtt).count();
            assert!(
                after(drops) <= after(&run.fresh_result.queue_drops_s),
                "seed {seed}, {} ms, loss {loss}: {} queue drops after {:.3} s, first contact {}",
                path.rtt.as_millis(),
                after(drops),
                first + rtt,
                after(&run.fresh_result.queue_drops_s)
            );
        }
    }
}

/// Asserts that a saved rate five times the path's delays `path`'s
/// transfer by no more than one round trip against a first contact, on
/// every run of [`FELL_RUNS`], and names every run that it delays more.
fn assert_rate_fell_costs_at_most_a_round_trip(path: Path) {
    let late: Vec<String> = FELL_RUNS
        .into_iter()
        .filter_map(|(loss, seed)| {
            let run = RateFell::run(path, loss, seed);
            (run.resumed > run.fresh + path.rtt_s()).then(|| {
                format!(
                    "seed {seed}, loss {loss}: saved 5x {:.3} s, first contact {:.3} s, \
                     {:.2} round trips later",
                    run.resumed,
                    run.fresh,
                    (run.resumed - run.fresh) / path.rtt_s()
                )
            })
        })
        .collect();
    assert!(
        late.is_empty(),
        "{} B over {} ms, more than a round trip later than a first contact:\n{}",
        path.size,
        path.rtt.as_millis(),
        late.join("\n")
    );
}

#[test]
fn a_saved_rate_five_times_too_high_costs_at_most_a_round_trip_on_a_long_path() {
    // 4 MB fit in the long path's pipe and queue: the jump overflows
    // nothing, and the transfer rides the queue it builds.
    assert_rate_fell_costs_at_most_a_round_trip(LONG_DELAY);
}

#[test]
fn a_saved_rate_five_times_too_high_costs_at_most_a_round_trip_on_a_short_path() {
    // The jump overflows the short path's queue at once; the retreat keeps
    // the window at the rate the train showed rather than scaling it down
    // again for the queue the jump's excess drains by itself.
    assert_rate_fell_costs_at_most_a_round_trip(SHORT_DELAY);
}

#[test]
fn a_saved_rate_five_times_too_high_costs_at_most_a_round_trip_when_it_overflows_a_long_path() {
    // 1385 packets of the jump are lost at the queue and repaired once
    // declared lost, a round trip and the queue's delay later; after that
    // the transfer runs at the path's rate, not at a window scaled below it.
    assert_rate_fell_costs_at_most_a_round_trip(LONG_DELAY_20_MB);
}

#[test]
fn a_saved_round_trip_the_path_no_longer_has_starts_as_a_first_contact() {
    // The route changed since the path was saved: a 150 ms round trip
    // saved for a 600 ms path (a satellite hop added), 600 ms saved for a
    // 100 ms path (one removed). The handshake's round trip does not match
    // and the saved rate is dropped before any data is sent: the transfer
    // takes within a few per cent of a first contact's time and the queue
    // drops no more.
    let changed = [
        (LONG_DELAY, Duration::from_millis(150)),
        (
            Path {
                rtt: Duration::from_millis(100),
                ..LONG_DELAY
            },
            Duration::from_millis(600),
        ),
    ];
    for (path, saved_rtt) in changed {
        for (loss, seed) in [(0.0, 21u64), (0.2, 22)] {
            let saved = SavedPath {
                min_rtt: saved_rtt,
                ..path.saved(1.0)
            };
            let (fresh, fresh_result) = completion(&path.scenario(loss, seed, None));
            let (resumed, resumed_result) = completion(&path.scenario(loss, seed, Some(saved)));
            eprintln!(
                "{} ms path, saved {} ms, loss {loss}, seed {seed}: first contact {fresh:.3} s, \
                 {} queue drops; resumed {resumed:.3} s, {} queue drops",
                path.rtt.as_millis(),
                saved_rtt.as_millis(),
                fresh_result.queue_drops_s.len(),
                resumed_result.queue_drops_s.len()
            );
            assert!(
                (resumed - fresh).abs() <= 0.03 * fresh,
                "seed {seed}, loss {loss}, {} ms path saved as {} ms: {resumed:.3} s against \
                 {fresh:.3} s",
                path.rtt.as_millis(),
                saved_rtt.as_millis()
            );
            assert!(
                resumed_result.queue_drops_s.len() <= fresh_result.queue_drops_s.len(),
                "seed {seed}, loss {loss}: {} queue drops against {}",
                resumed_result.queue_drops_s.len(),
                fresh_result.queue_drops_s.len()
            );
        }
    }
}

#[test]
fn no_saved_path_is_a_first_contact_exactly() {
    // An application whose saved path expired clears it: the connection is
    // then a first contact, bit for bit. The same connection with the path
    // kept finishes at another time, so the comparison can tell them apart.
    for (path, loss, seed) in [
        (LONG_DELAY, 0.0, 31u64),
        (LONG_DELAY, 0.2, 32),
        (SHORT_DELAY, 0.05, 33),
    ] {
        let (fresh, fresh_result) = completion(&path.scenario(loss, seed, None));
        let mut expired = path.scenario(loss, seed, Some(path.saved(1.0)));
        let (kept, _) = completion(&expired);
        expired.transport.set_saved_path(None);
        let (cleared, cleared_result) = completion(&expired);
        eprintln!(
            "{} ms, loss {loss}, seed {seed}: first contact {fresh:.6} s, saved path cleared \
             {cleared:.6} s, kept {kept:.6} s",
            path.rtt.as_millis()
        );
        assert_eq!(cleared, fresh, "seed {seed}, loss {loss}");
        assert_eq!(
            cleared_result.overhead, fresh_result.overhead,
            "seed {seed}, loss {loss}"
        );
        assert_eq!(
            cleared_result.queue_drops_s, fresh_result.queue_drops_s,
            "seed {seed}, loss {loss}"
        );
        assert_ne!(
            kept, fresh,
            "seed {seed}, loss {loss}: the saved path did nothing"
        );
    }
}

/// Three first-contact flows share a bottleneck of `rate_bps` and `rtt`
/// (one bandwidth-delay product of queue) from the start; at `join` a
/// fourth of `size` bytes starts, given `saved`. Each flow reaches the
/// bottleneck through access links of its own, [`ACCESS_SPEEDUP`] times
/// its rate, as in a [`Scenario`] of several flows.
struct LateJoiner {
    rate_bps: u64,
    rtt: Duration,
    join: Duration,
    size: u64,
}

/// What the flows on a shared bottleneck carried while a late joiner
/// transferred.
struct Shares {
    /// How long the late joiner took, from its start to its last byte,
    /// seconds.
    transfer_s: f64,
    /// Each flow's goodput over that time, bits per second, the late
    /// joiner last.
    goodputs_bps: Vec<f64>,
    /// The bottleneck's queue drops in that time.
    queue_drops: usize,
}

/// The stream bytes `receiver` had read by `at`.
fn read_by(receiver: &TransferNode, at: Instant) -> u64 {
    receiver
        .read_log()
        .iter()
        .take_while(|&&(_, read_at)| read_at <= at)
        .last()
        .map_or(0, |&(offset, _)| offset)
}

/// A sender and receiver of `size` bytes running `transport`, started at
/// `now`, seeded as a [`Scenario`] seeds its flows.
fn transfer_pair(
    transport: &TransportConfig,
    now: Instant,
    seed: u64,
    size: u64,
) -> (TransferNode, TransferNode) {
    let client = Connection::client(transport.clone(), now, seed).expect("a valid configuration");
    let server =
        Connection::server(transport.clone(), now, seed ^ 0xa5a5).expect("a valid configuration");
    let payload_seed = seed ^ 0x0070_6179;
    (
        TransferNode::sender(client, size, payload_seed),
        TransferNode::receiver(server, size, payload_seed),
    )
}

impl LateJoiner {
    /// Runs the bottleneck until the late joiner has its last byte.
    fn run(&self, seed: u64, saved: Option<SavedPath>) -> Shares {
        // The first three flows have more than the run carries: they are
        // still sending when the late joiner finishes.
        const ENDLESS: u64 = 1 << 40;
        let shared = Scenario {
            rate_bps: self.rate_bps,
            rtt: self.rtt,
            size: self.size,
            flows: 4,
            seed,
            ..Scenario::default()
        };
        let (forward, reverse) = shared.links();
        let access = Access {
            delay: Duration::ZERO,
            rate: Some(ltx_sim::Rate(self.rate_bps * ACCESS_SPEEDUP)),
        };
        let epoch = Instant::now();
        let flow_seed = |flow: u64| seed.wrapping_mul(1000).wrapping_add(flow);
        let running = (0..3)
            .map(|flow| {
                let (sender, receiver) =
                    transfer_pair(&shared.transport, epoch, flow_seed(flow), ENDLESS);
                (sender, receiver, access)
            })
            .collect();
        let (mut net, mut ids) =
            Network::dumbbell(epoch, seed, forward, reverse, running).expect("valid links");
        let start = epoch + self.join;
        net.run(start, |_| false);

        // The fourth flow, wired as `Network::dumbbell` wires the others:
        // its own access links, then the bottleneck (links 0 and 1).
        let bottleneck: Vec<_> = net.link_ids().take(2).collect();
        let mut transport = shared.transport.clone();
        transport.set_saved_path(saved);
        let (sender, receiver) = transfer_pair(&transport, start, flow_seed(3), self.size);
        let (a, b) = (net.add_node(sender), net.add_node(receiver));
        let access_link = LinkConfig {
            delay: access.delay,
            rate: access.rate,
            ..LinkConfig::default()
        };
        let access_in = net.add_link(access_link.clone()).expect("a valid link");
        let access_out = net.add_link(access_link).expect("a valid link");
        net.connect(
            a,
            b,
            vec![access_in, bottleneck[0]],
            vec![bottleneck[1], access_out],
        )
        .expect("fresh nodes and links");
        ids.push((a, b));
        let drops_before = net.queue_drops(bottleneck[0]).len();
        let deadline = start + shared.ideal().saturating_mul(20) + Duration::from_secs(60);
        net.run(deadline, |net| net.node(b).is_done());

        let delivery = net.node(b).delivery().expect("a receiver");
        assert!(
            delivery.intact && delivery.read == self.size,
            "seed {seed}: the late joiner did not deliver intact: {:?}",
            net.node(a).closed()
        );
        let end = delivery.finished_at.expect("an intact delivery finished");
        let transfer_s = (end - start).as_secs_f64();
        let goodputs_bps = ids
            .iter()
            .map(|&(_, r)| {
                let node = net.node(r);
                (read_by(node, end) - read_by(node, start)) as f64 * 8.0 / transfer_s
            })
            .collect();
        for &(_, r) in &ids[..3] {
            assert!(
                net.node(r)
                    .delivery()
                    .is_some_and(|d| d.finished_at.is_none()),
                "seed {seed}: a running flow finished before the late joiner"
            );
        }
        Shares {
            transfer_s,
            goodputs_bps,
            queue_drops: net.queue_drops(bottleneck[0]).len() - drops_before,
        }
    }
}

#[test]
fn a_flow_resumed_at_the_whole_bottleneck_rate_takes_only_its_share() {
    // 50 Mbit/s and 100 ms shared by three flows for 5 s (50 round trips),
    // then a fourth with 20 MB resumes from the path it saved when it had
    // the bottleneck alone: a jump to half the whole rate, on a link
    // already full. Over its transfer (some 130 round trips at its share)
    // the four flows' goodputs must have a Jain index of at least 0.9. A
    // first-contact fourth flow is run too, for comparison only.
    let late = LateJoiner {
        rate_bps: 50_000_000,
        rtt: Duration::from_millis(100),
        join: Duration::from_secs(5),
        size: 20_000_000,
    };
    let alone = SavedPath {
        rate: late.rate_bps / 8,
        min_rtt: late.rtt,
    };
    for seed in [41u64, 42, 43] {
        let resumed = late.run(seed, Some(alone));
        let fresh = late.run(seed, None);
        let fairness = |shares: &Shares| jain(&shares.goodputs_bps).expect("flows carried bytes");
        let mbits = |shares: &Shares| {
            shares
                .goodputs_bps
                .iter()
                .map(|g| format!("{:.2}", g / 1e6))
                .collect::<Vec<_>>()
                .join(", ")
        };
        eprintln!(
            "seed {seed}: resumed fourth flow {:.3} s, goodputs [{}] Mbit/s, Jain {:.4}, \
             {} queue drops; first-contact fourth flow {:.3} s, [{}] Mbit/s, Jain {:.4}, \
             {} queue drops",
            resumed.transfer_s,
            mbits(&resumed),
            fairness(&resumed),
            resumed.queue_drops,
            fresh.transfer_s,
            mbits(&fresh),
            fairness(&fresh),
            fresh.queue_drops,
        );
        assert!(
            fairness(&resumed) >= 0.9,
            "seed {seed}: Jain {:.4} over goodputs [{}] Mbit/s",
            fairness(&resumed),
            mbits(&resumed)
        );
    }
}
