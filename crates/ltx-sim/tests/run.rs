//! When `Network::run` returns, where virtual time then stands, and how
//! events at one instant are ordered.

mod common;

use std::time::{Duration, Instant};

use common::{Bouncer, Receiver, Sender, Timer, Toy};
use ltx_sim::{ConnectError, LinkConfig, Network, StopReason};

const MS: Duration = Duration::from_millis(1);

fn delayed(delay: Duration) -> LinkConfig {
    LinkConfig {
        delay,
        ..LinkConfig::default()
    }
}

/// 100 datagrams 10 ms apart over 300 ms each way, echoed.
fn transfer(epoch: Instant) -> (Network<Toy>, ltx_sim::NodeId, ltx_sim::NodeId) {
    Network::single_path(
        epoch,
        51,
        delayed(300 * MS),
        delayed(300 * MS),
        Sender::toy(epoch, 100, 1000, 10 * MS),
        Receiver::toy(true),
    )
    .unwrap()
}

#[test]
fn run_returns_as_soon_as_stop_says_so() {
    let epoch = Instant::now();
    let (mut net, _, b) = transfer(epoch);
    let outcome = net.run(epoch + 3600 * 1000 * MS, |net| {
        net.node(b).receiver().arrivals.len() >= 10
    });
    assert_eq!(outcome.reason, StopReason::Stopped);
    // Arrivals are 10 ms apart, one per step: stop saw exactly ten.
    assert_eq!(net.node(b).receiver().arrivals.len(), 10);
    assert_eq!(outcome.now, epoch + 390 * MS);
    assert_eq!(net.now(), outcome.now);
}

#[test]
fn run_checks_stop_before_the_first_step() {
    let epoch = Instant::now();
    let (mut net, a, _) = transfer(epoch);
    let outcome = net.run(epoch + 1000 * MS, |_| true);
    assert_eq!(
        outcome,
        ltx_sim::RunOutcome {
            now: epoch,
            reason: StopReason::Stopped
        }
    );
    // The initial poll has run: the first datagram is on its way.
    assert_eq!(net.node(a).sender().sent.len(), 1);
}

#[test]
fn run_stops_at_the_deadline_and_carries_on_from_it() {
    let epoch = Instant::now();
    let (mut net, a, b) = transfer(epoch);
    let outcome = net.run(epoch + 500 * MS, |_| false);
    assert_eq!(outcome.reason, StopReason::Deadline);
    assert_eq!(outcome.now, epoch + 500 * MS);
    // Sent at 0, 10, …, 200 ms: arrived by 500 ms, the deadline included.
    assert_eq!(net.node(b).receiver().arrivals.len(), 21);

    let outcome = net.run(epoch + 3600 * 1000 * MS, |_| false);
    assert_eq!(outcome.reason, StopReason::Idle);
    // The last datagram left at 990 ms; its ack is the last event.
    assert_eq!(outcome.now, epoch + 1590 * MS);
    assert_eq!(net.node(b).receiver().arrivals.len(), 100);
    assert_eq!(net.node(a).sender().acks.len(), 100);
}

#[test]
fn a_deadline_in_the_past_leaves_time_where_it_is() {
    let epoch = Instant::now();
    let (mut net, _, _) = transfer(epoch);
    net.run(epoch + 500 * MS, |_| false);
    let outcome = net.run(epoch + 100 * MS, |_| false);
    assert_eq!(outcome.reason, StopReason::Deadline);
    assert_eq!(outcome.now, epoch + 500 * MS);
}

#[test]
fn run_is_idle_when_nothing_is_pending() {
    let epoch = Instant::now();
    let (mut net, _, _) = Network::single_path(
        epoch,
        52,
        delayed(MS),
        delayed(MS),
        Receiver::toy(true),
        Receiver::toy(true),
    )
    .unwrap();
    let outcome = net.run(epoch + 1000 * MS, |_| false);
    assert_eq!(
        outcome,
        ltx_sim::RunOutcome {
            now: epoch,
            reason: StopReason::Idle
        }
    );
}

#[test]
fn a_timeout_in_the_past_fires_now() {
    let epoch = Instant::now();
    let mut net = Network::new(epoch, 53);
    let t = net.add_node(Timer::toy(Some(epoch + 100 * MS)));
    assert_eq!(
        net.run(epoch + 500 * MS, |_| false).reason,
        StopReason::Idle
    );
    assert_eq!(net.node(t).timer().fired, [epoch + 100 * MS]);
    assert_eq!(net.now(), epoch + 100 * MS);

    net.run(epoch + 500 * MS, |_| false);
    // Time stands at 100 ms; a timer set for 50 ms fires at once, at 100.
    net.node_mut(t).timer_mut().set(epoch + 50 * MS);
    let outcome = net.run(epoch + 500 * MS, |_| false);
    assert_eq!(outcome.reason, StopReason::Idle);
    assert_eq!(
        net.node(t).timer().fired,
        [epoch + 100 * MS, epoch + 100 * MS]
    );
}

#[test]
fn a_route_without_links_delivers_at_once_without_recursion() {
    // 199 999 bounces at one instant: recursion would overflow the stack.
    let epoch = Instant::now();
    let mut net = Network::new(epoch, 54);
    let a = net.add_node(Bouncer::toy(100_000, true));
    let b = net.add_node(Bouncer::toy(100_000, false));
    net.connect(a, b, vec![], vec![]).unwrap();
    let outcome = net.run(epoch + 1000 * MS, |_| false);
    assert_eq!(
        outcome,
        ltx_sim::RunOutcome {
            now: epoch,
            reason: StopReason::Idle
        }
    );
    // `a` served first and `b` has the last word.
    assert_eq!(net.node(a).bouncer().got, 99_999);
    assert_eq!(net.node(b).bouncer().got, 100_000);
    assert_eq!(net.node(b).bouncer().last, Some(epoch));
}

#[test]
fn a_route_crosses_its_links_in_order() {
    // Three hops of 1, 2 and 4 ms.
    let epoch = Instant::now();
    let mut net = Network::new(epoch, 55);
    let a = net.add_node(Sender::toy(epoch, 1, 100, MS));
    let b = net.add_node(Receiver::toy(true));
    let hops: Vec<_> = [1, 2, 4]
        .iter()
        .map(|&d| net.add_link(delayed(d * MS)).unwrap())
        .collect();
    let back = net.add_link(delayed(MS)).unwrap();
    net.connect(a, b, hops.clone(), vec![back]).unwrap();
    net.run(epoch + 1000 * MS, |_| false);
    assert_eq!(net.node(b).receiver().arrivals[0].1, epoch + 7 * MS);
    assert_eq!(net.node(a).sender().acks[0].1, epoch + 8 * MS);
    for hop in hops {
        assert_eq!(net.link_stats(hop).delivered, 1);
    }
}

#[test]
fn connect_refuses_bad_pairs() {
    let epoch = Instant::now();
    let mut net = Network::new(epoch, 56);
    let a = net.add_node(Receiver::toy(false));
    let b = net.add_node(Receiver::toy(false));
    let c = net.add_node(Receiver::toy(false));
    let link = net.add_link(LinkConfig::default()).unwrap();
    assert_eq!(
        net.connect(a, a, vec![], vec![]),
        Err(ConnectError::SelfLoop(a))
    );
    let mut other: Network<Toy> = Network::new(epoch, 57);
    for _ in 0..5 {
        other.add_node(Receiver::toy(false));
        other.add_link(LinkConfig::default()).unwrap();
    }
    let stranger = other.node_ids().last().unwrap();
    let far_link = other.link_ids().last().unwrap();
    assert_eq!(
        net.connect(a, stranger, vec![], vec![]),
        Err(ConnectError::UnknownNode(stranger))
    );
    assert_eq!(
        net.connect(a, b, vec![link, far_link], vec![]),
        Err(ConnectError::UnknownLink(far_link))
    );
    net.connect(a, b, vec![link], vec![link]).unwrap();
    assert_eq!(
        net.connect(c, b, vec![], vec![]),
        Err(ConnectError::AlreadyConnected(b))
    );
}

#[test]
fn an_unconnected_node_sends_into_the_void() {
    let epoch = Instant::now();
    let mut net = Network::new(epoch, 58);
    let a = net.add_node(Sender::toy(epoch, 3, 100, MS));
    assert_eq!(
        net.run(epoch + 1000 * MS, |_| false).reason,
        StopReason::Idle
    );
    assert_eq!(net.node_stats(a).unrouted_datagrams, 3);
    assert_eq!(net.node_stats(a).sent_datagrams, 0);
}

#[test]
fn a_ten_megabyte_transfer_over_600_ms() {
    // 8 000 datagrams of 1250 bytes at 50 Mbit/s (200 µs each), acked one
    // by one: the scale the loop must handle in milliseconds.
    let epoch = Instant::now();
    let (mut net, a, b) = Network::single_path(
        epoch,
        59,
        LinkConfig {
            rate: Some(ltx_sim::Rate(50_000_000)),
            ..delayed(300 * MS)
        },
        delayed(300 * MS),
        Sender::toy(epoch, 8_000, 1250, Duration::from_micros(200)),
        Receiver::toy(true),
    )
    .unwrap();
    let outcome = net.run(epoch + 3600 * 1000 * MS, |_| false);
    assert_eq!(outcome.reason, StopReason::Idle);
    assert_eq!(net.node_stats(b).received_bytes, 10_000_000);
    assert_eq!(net.node(a).sender().acks.len(), 8_000);
    // The last left at 7999 · 200 µs, arrived 300.2 ms later, acked in 300.
    assert_eq!(
        outcome.now - epoch,
        Duration::from_micros(7_999 * 200 + 600_200)
    );
}
