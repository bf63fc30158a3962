//! One path, one flow: exact timing in virtual time, random loss within its
//! statistics, and replay from the seed.

mod common;

use std::time::{Duration, Instant};

use common::{Receiver, Sender, Toy};
use ltx_sim::{Jitter, LinkConfig, LossModel, Network, QueueLimit, Rate, StopReason};

const MS: Duration = Duration::from_millis(1);

fn run_to_idle(net: &mut Network<Toy>) {
    let far = net.now() + Duration::from_secs(3600);
    let outcome = net.run(far, |_| false);
    assert_eq!(outcome.reason, StopReason::Idle, "seed {}", net.seed());
}

fn path(delay: Duration, rate: Option<Rate>) -> LinkConfig {
    LinkConfig {
        delay,
        rate,
        ..LinkConfig::default()
    }
}

#[test]
fn every_datagram_takes_the_delay_plus_its_serialization_exactly() {
    // 1250 bytes at 10 Mbit/s serialize in exactly 1 ms; sent 10 ms apart
    // they never queue, so each arrives 300 + 1 ms after it left, and its
    // 8-byte ack (reverse link without rate limit) 300 ms after that.
    let epoch = Instant::now();
    let seed = 1;
    let (mut net, a, b) = Network::single_path(
        epoch,
        seed,
        path(300 * MS, Some(Rate(10_000_000))),
        path(300 * MS, None),
        Sender::toy(epoch, 100, 1250, 10 * MS),
        Receiver::toy(true),
    )
    .unwrap();
    run_to_idle(&mut net);
    let sent = &net.node(a).sender().sent;
    let arrivals = &net.node(b).receiver().arrivals;
    assert_eq!(arrivals.len(), 100);
    for &(seq, at, len) in arrivals {
        assert_eq!(at - sent[seq as usize], 301 * MS, "seq {seq}");
        assert_eq!(len, 1250);
    }
    let acks = &net.node(a).sender().acks;
    assert_eq!(acks.len(), 100);
    for &(seq, at) in acks {
        assert_eq!(at - sent[seq as usize], 601 * MS, "seq {seq}");
    }
    assert_eq!(net.now(), sent[99] + 601 * MS);
}

#[test]
fn a_burst_arrives_spaced_by_the_serialization_time() {
    // 100 datagrams at once: the link sends one per millisecond.
    let epoch = Instant::now();
    let (mut net, _, b) = Network::single_path(
        epoch,
        2,
        path(300 * MS, Some(Rate(10_000_000))),
        path(300 * MS, None),
        Sender::toy(epoch, 100, 1250, Duration::ZERO),
        Receiver::toy(false),
    )
    .unwrap();
    run_to_idle(&mut net);
    let arrivals = &net.node(b).receiver().arrivals;
    assert_eq!(arrivals.len(), 100);
    for (k, &(seq, at, _)) in arrivals.iter().enumerate() {
        assert_eq!(seq, k as u64);
        assert_eq!(at - epoch, 300 * MS + (k as u32 + 1) * MS, "seq {seq}");
    }
}

#[test]
fn the_network_times_each_drop_of_a_full_queue() {
    // A burst of 10 datagrams 50 ms after the start, into a queue of 4
    // that sends one per millisecond: 4 are queued and the other 6 are
    // lost at the instant they arrive. Nothing is lost on the way back.
    let epoch = Instant::now();
    let seed = 4;
    let burst_at = epoch + 50 * MS;
    let forward = LinkConfig {
        queue: QueueLimit::Packets(4),
        ..path(10 * MS, Some(Rate(10_000_000)))
    };
    let (mut net, _, b) = Network::single_path(
        epoch,
        seed,
        forward,
        path(10 * MS, None),
        Sender::toy(burst_at, 10, 1250, Duration::ZERO),
        Receiver::toy(true),
    )
    .unwrap();
    run_to_idle(&mut net);
    let links: Vec<_> = net.link_ids().collect();
    assert_eq!(net.queue_drops(links[0]), &[burst_at; 6], "seed {seed}");
    assert_eq!(net.link_stats(links[0]).dropped_queue, 6, "seed {seed}");
    assert!(net.queue_drops(links[1]).is_empty(), "seed {seed}");
    assert_eq!(net.node(b).receiver().arrivals.len(), 4, "seed {seed}");
}

#[test]
fn node_counters_add_up_the_bytes_on_the_wire() {
    let epoch = Instant::now();
    let (mut net, a, b) = Network::single_path(
        epoch,
        3,
        path(10 * MS, None),
        path(10 * MS, None),
        Sender::toy(epoch, 50, 1000, MS),
        Receiver::toy(true),
    )
    .unwrap();
    run_to_idle(&mut net);
    let (sa, sb) = (*net.node_stats(a), *net.node_stats(b));
    assert_eq!((sa.sent_datagrams, sa.sent_bytes), (50, 50_000));
    assert_eq!((sb.received_datagrams, sb.received_bytes), (50, 50_000));
    assert_eq!((sb.sent_datagrams, sb.sent_bytes), (50, 400));
    assert_eq!((sa.received_datagrams, sa.received_bytes), (50, 400));
    assert_eq!(sa.unrouted_datagrams + sb.unrouted_datagrams, 0);
}

/// A loss rate `p` over `n` datagrams leaves `n(1−p)` of them, give or take
/// five standard deviations `√(np(1−p))`: a false alarm once in 3.5 million.
#[test]
fn bernoulli_loss_of_ten_percent_over_100_000_datagrams() {
    let n = 100_000;
    let p = 0.1;
    for seed in [11, 12, 13] {
        let epoch = Instant::now();
        let lossy = LinkConfig {
            loss: LossModel::Bernoulli { p },
            ..path(Duration::ZERO, None)
        };
        let (mut net, _, b) = Network::single_path(
            epoch,
            seed,
            lossy,
            path(Duration::ZERO, None),
            Sender::toy(epoch, n, 100, Duration::from_micros(1)),
            Receiver::toy(false),
        )
        .unwrap();
        run_to_idle(&mut net);
        let received = net.node(b).receiver().arrivals.len() as f64;
        let mean = n as f64 * (1.0 - p);
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (received - mean).abs() <= 5.0 * sigma,
            "seed {seed}: {received} received, expected {mean} ± {}",
            5.0 * sigma
        );
        let stats = net.link_stats(net.link_ids().next().unwrap());
        assert_eq!(stats.dropped_random + received as u64, n, "seed {seed}");
    }
}

/// The arrival log of a path with every random impairment on, timed from
/// the epoch so that runs with different epochs compare.
fn impaired_log(seed: u64) -> Vec<(u64, Duration, usize)> {
    let epoch = Instant::now();
    let impaired = LinkConfig {
        delay: 50 * MS,
        jitter: Some(Jitter {
            max: 5 * MS,
            reorder: true,
        }),
        rate: Some(Rate(20_000_000)),
        loss: LossModel::bursty(0.1, 3.0),
        duplicate: 0.01,
        corrupt: 0.01,
        ..LinkConfig::default()
    };
    let (mut net, _, b) = Network::single_path(
        epoch,
        seed,
        impaired.clone(),
        impaired,
        Sender::toy(epoch, 2_000, 1200, Duration::from_micros(300)),
        Receiver::toy(true),
    )
    .unwrap();
    run_to_idle(&mut net);
    let arrivals = &net.node(b).receiver().arrivals;
    arrivals
        .iter()
        .map(|&(seq, at, len)| (seq, at - epoch, len))
        .collect()
}

#[test]
fn the_same_seed_replays_the_same_run() {
    for seed in [21, 22] {
        let once = impaired_log(seed);
        let twice = impaired_log(seed);
        assert!(once.len() > 1_000, "seed {seed}");
        assert_eq!(once, twice, "seed {seed}");
    }
}

#[test]
fn different_seeds_give_different_runs() {
    assert_ne!(impaired_log(31), impaired_log(32));
}
