//! Flows sharing one bottleneck: together they get exactly its capacity,
//! and each flow's own access delay shows in its timing.

mod common;

use std::time::{Duration, Instant};

use common::{Receiver, Sender};
use ltx_sim::metrics::jain;
use ltx_sim::{Access, LinkConfig, Network, Rate, StopReason};

const MS: Duration = Duration::from_millis(1);

fn bottleneck(delay: Duration, rate: Option<Rate>) -> LinkConfig {
    LinkConfig {
        delay,
        rate,
        ..LinkConfig::default()
    }
}

#[test]
fn two_saturating_flows_share_exactly_the_bottleneck_rate() {
    // Two senders each offer 10 Mbit/s to a 10 Mbit/s bottleneck (1250-byte
    // datagrams, 1 ms each on the wire): the queue never empties after the
    // start, so over any second the receivers together get 1.25 MB, within
    // a datagram per flow for the ones cut by the window's edges.
    let epoch = Instant::now();
    let seed = 41;
    let flows = vec![
        (
            Sender::toy(epoch, 3_000, 1250, MS),
            Receiver::toy(true),
            Access::default(),
        ),
        (
            Sender::toy(epoch, 3_000, 1250, MS),
            Receiver::toy(true),
            Access::delay(20 * MS),
        ),
    ];
    let (mut net, ids) = Network::dumbbell(
        epoch,
        seed,
        bottleneck(10 * MS, Some(Rate(10_000_000))),
        bottleneck(10 * MS, None),
        flows,
    )
    .unwrap();
    let outcome = net.run(epoch + 2 * 1000 * MS, |_| false);
    assert_eq!(outcome.reason, StopReason::Deadline, "seed {seed}");
    assert_eq!(outcome.now, epoch + 2000 * MS);

    let (from, to) = (epoch + 500 * MS, epoch + 1500 * MS);
    let shares: Vec<f64> = ids
        .iter()
        .map(|&(_, b)| net.node(b).receiver().bytes_between(from, to) as f64)
        .collect();
    let total: f64 = shares.iter().sum();
    let capacity = 10e6 / 8.0 * 1.0;
    assert!(
        (total - capacity).abs() <= 2.0 * 1250.0,
        "seed {seed}: {total} bytes in a second, expected {capacity}"
    );
    // FIFO serves the two equal offered loads equally.
    assert!(jain(&shares).unwrap() > 0.99, "seed {seed}: {shares:?}");
}

#[test]
fn each_flow_sees_its_own_access_delay() {
    // One datagram per flow, no load: a→b takes the access delay, 1 ms of
    // serialization and the 100 ms bottleneck; the ack comes back over the
    // 100 ms reverse bottleneck and the access delay again.
    let epoch = Instant::now();
    let access = [Duration::ZERO, 10 * MS, 45 * MS];
    let flows = access
        .iter()
        .map(|&d| {
            (
                Sender::toy(epoch, 1, 1250, MS),
                Receiver::toy(true),
                Access::delay(d),
            )
        })
        .collect();
    let (mut net, ids) = Network::dumbbell(
        epoch,
        42,
        bottleneck(100 * MS, Some(Rate(10_000_000))),
        bottleneck(100 * MS, None),
        flows,
    )
    .unwrap();
    assert_eq!(
        net.run(epoch + 1000 * MS, |_| false).reason,
        StopReason::Idle
    );
    for (&(a, b), &d) in ids.iter().zip(&access) {
        let arrivals = &net.node(b).receiver().arrivals;
        assert_eq!(arrivals.len(), 1);
        // The access delays are more than a serialization time apart, so
        // no datagram waits behind another at the bottleneck.
        assert_eq!(arrivals[0].1 - epoch, d + 101 * MS, "access delay {d:?}");
        let acks = &net.node(a).sender().acks;
        assert_eq!(acks.len(), 1);
        assert_eq!(acks[0].1 - epoch, 2 * d + 201 * MS, "access delay {d:?}");
    }
}

#[test]
fn the_bottleneck_is_one_link_shared_by_all_flows() {
    let epoch = Instant::now();
    let flows = (0..3)
        .map(|_| {
            (
                Sender::toy(epoch, 10, 100, MS),
                Receiver::toy(true),
                Access::delay(MS),
            )
        })
        .collect();
    let (mut net, _) =
        Network::dumbbell(epoch, 43, bottleneck(MS, None), bottleneck(MS, None), flows).unwrap();
    net.run(epoch + 1000 * MS, |_| false);
    let links: Vec<_> = net.link_ids().collect();
    // Forward and reverse bottleneck first, then two access links per flow.
    assert_eq!(links.len(), 2 + 3 * 2);
    assert_eq!(net.link_stats(links[0]).delivered, 30);
    assert_eq!(net.link_stats(links[1]).delivered, 30);
    for &access in &links[2..] {
        assert_eq!(net.link_stats(access).delivered, 10);
    }
}

/// The gaps between one flow's consecutive arrivals at its receiver.
fn arrival_gaps(net: &Network<common::Toy>, b: ltx_sim::NodeId) -> Vec<Duration> {
    let arrivals = &net.node(b).receiver().arrivals;
    arrivals.windows(2).map(|w| w[1].1 - w[0].1).collect()
}

#[test]
fn bursts_sent_together_reach_the_bottleneck_interleaved_through_rated_access_links() {
    // Two flows each send 10 datagrams of 1250 bytes at one instant into a
    // 10 Mbit/s bottleneck (1 ms each). Access links at 100 Mbit/s pass
    // one datagram per 0.1 ms, so the bottleneck takes the flows' datagrams
    // in turn and each flow's arrive 2 ms apart; access links without a
    // rate hand over each burst at once, and the first flow's whole burst
    // goes ahead of the second's, 1 ms apart.
    for (rate, gap) in [(Some(Rate(100_000_000)), 2 * MS), (None, MS)] {
        let epoch = Instant::now();
        let flows = (0..2)
            .map(|_| {
                (
                    Sender::toy(epoch, 10, 1250, Duration::ZERO),
                    Receiver::toy(false),
                    Access { delay: MS, rate },
                )
            })
            .collect();
        let (mut net, ids) = Network::dumbbell(
            epoch,
            44,
            bottleneck(10 * MS, Some(Rate(10_000_000))),
            bottleneck(10 * MS, None),
            flows,
        )
        .unwrap();
        assert_eq!(
            net.run(epoch + 1000 * MS, |_| false).reason,
            StopReason::Idle
        );
        for &(_, b) in &ids {
            let gaps = arrival_gaps(&net, b);
            assert_eq!(gaps.len(), 9, "access rate {rate:?}");
            assert!(
                gaps.iter().all(|&g| g == gap),
                "access rate {rate:?}: gaps {gaps:?}"
            );
        }
    }
}
