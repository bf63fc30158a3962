//! Properties over random inputs: the parsers never panic and read back
//! what was written; the network loses no datagram it does not account for.

mod common;

use std::time::{Duration, Instant};

use common::{Receiver, Sender};
use ltx_sim::units::{parse_duration, parse_fraction, parse_queue, parse_rate, parse_size};
use ltx_sim::{LinkConfig, LossModel, Network, Rate, StopReason};
use proptest::prelude::*;

/// Runs every unit parser on `input`; each may refuse it, none may panic.
fn parse_all(input: &str) {
    let _ = parse_rate(input);
    let _ = parse_duration(input);
    let _ = parse_fraction(input);
    let _ = parse_size(input);
    let _ = parse_queue(input);
}

proptest! {
    #[test]
    fn parsers_never_panic(input in "\\PC{0,24}") {
        parse_all(&input);
    }

    #[test]
    fn parsers_never_panic_on_number_like_input(input in "-?[0-9.]{0,30}[a-zA-Z%µ]{0,8}") {
        parse_all(&input);
    }

    #[test]
    fn sizes_and_rates_read_back(n in 1u64..=u64::MAX) {
        prop_assert_eq!(parse_size(&format!("{n}")), Ok(n));
        prop_assert_eq!(parse_size(&format!("{n}B")), Ok(n));
        prop_assert_eq!(parse_rate(&format!("{n}bit")), Ok(n));
        let mebibytes = parse_size(&format!("{n}MiB"));
        match n.checked_mul(1 << 20) {
            Some(bytes) => prop_assert_eq!(mebibytes, Ok(bytes)),
            None => prop_assert!(mebibytes.is_err()),
        }
    }

    #[test]
    fn durations_read_back(ns in 0u64..=u64::MAX) {
        prop_assert_eq!(parse_duration(&format!("{ns}ns")), Ok(Duration::from_nanos(ns)));
        let text = format!("{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000);
        prop_assert_eq!(parse_duration(&text), Ok(Duration::from_nanos(ns)));
    }

    /// Every datagram offered to a link is delivered, dropped, or (for a
    /// duplicate) delivered twice; the nodes' counters match the links'.
    #[test]
    fn every_datagram_is_accounted_for(
        seed in any::<u64>(),
        loss in 0.0..0.5f64,
        duplicate in 0.0..0.2f64,
        count in 1u64..400,
        queue in 1usize..50,
    ) {
        let epoch = Instant::now();
        let link = LinkConfig {
            delay: Duration::from_millis(20),
            rate: Some(Rate(1_000_000)),
            queue: ltx_sim::QueueLimit::Packets(queue),
            loss: LossModel::Bernoulli { p: loss },
            duplicate,
            ..LinkConfig::default()
        };
        let (mut net, a, b) = Network::single_path(
            epoch,
            seed,
            link.clone(),
            link,
            Sender::toy(epoch, count, 200, Duration::from_micros(500)),
            Receiver::toy(true),
        )
        .unwrap();
        let outcome = net.run(epoch + Duration::from_secs(3600), |_| false);
        prop_assert_eq!(outcome.reason, StopReason::Idle, "seed {}", seed);
        let ids: Vec<_> = net.link_ids().collect();
        for (&link, (from, to)) in ids.iter().zip([(a, b), (b, a)]) {
            let s = net.link_stats(link);
            prop_assert_eq!(s.offered, net.node_stats(from).sent_datagrams, "seed {}", seed);
            prop_assert_eq!(s.delivered, net.node_stats(to).received_datagrams, "seed {}", seed);
            prop_assert_eq!(
                s.delivered + s.dropped(),
                s.offered + s.duplicated,
                "seed {}", seed
            );
        }
    }
}

/// The receiver counts the sender's packets that never came from the gaps
/// in their numbers: what it reports is the loss the forward link dealt,
/// not its own (loss-free) direction's estimate.
#[test]
fn the_receiver_sees_the_loss_the_forward_link_dealt() {
    for (loss, burst, seed) in [(0.1, 1.0, 3), (0.2, 5.0, 4)] {
        let scenario = ltx_sim::scenario::Scenario {
            rate_bps: 20_000_000,
            rtt: Duration::from_millis(100),
            loss,
            burst,
            size: 5_000_000,
            seed,
            ..ltx_sim::scenario::Scenario::default()
        };
        let result = scenario.run().expect("a valid scenario");
        assert!(result.verified, "seed {seed}");
        let dealt = result.random_loss + result.queue_loss;
        let seen = result.flows[0].incoming_loss;
        assert!(
            (seen - dealt).abs() < 0.005,
            "seed {seed}: the link dropped {dealt:.4}, the receiver saw {seen:.4}"
        );
    }
}
