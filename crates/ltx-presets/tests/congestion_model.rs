//! Model-based test of every controller: random sequences of sent, acked,
//! lost, ECN-marked, time-passes and RTT-changes events, with invariants
//! checked after every event (window at least the minimum, a positive
//! pacing rate, in-flight accounting consistent). The overflow checks of the `checked` profile turn any
//! wrapping arithmetic into a failure.

use std::time::{Duration, Instant};

use ltx_presets::congestion::{
    BbrConfig, CcpConfig, CodedTcpConfig, CubicConfig, FectcpConfig, LtTcpConfig, NewRenoConfig,
};
use ltx_proto::congestion::{Controller, ControllerFactory, Pacer, TolerantConfig};
use ltx_proto::rtt::RttEstimator;
use proptest::prelude::*;
use proptest::sample::Index;

#[derive(Debug, Clone)]
enum Event {
    Send(u16),
    Ack {
        which: Index,
        app_limited: bool,
    },
    Lose {
        which: Index,
        above_baseline: bool,
    },
    Ce {
        which: Index,
        marks: u64,
    },
    Wait(Duration),
    RttSample {
        ack_delay: Duration,
        sample: Duration,
    },
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => (1u16..=u16::MAX).prop_map(Event::Send),
        4 => (any::<Index>(), any::<bool>()).prop_map(|(which, app_limited)| Event::Ack { which, app_limited }),
        2 => (any::<Index>(), any::<bool>()).prop_map(|(which, above_baseline)| Event::Lose { which, above_baseline }),
        1 => (any::<Index>(), 0u64..1000).prop_map(|(which, marks)| Event::Ce { which, marks }),
        2 => (0u64..2_000_000).prop_map(|us| Event::Wait(Duration::from_micros(us))),
        2 => (0u64..50_000, 1_000u64..2_000_000).prop_map(|(delay, us)| Event::RttSample {
            ack_delay: Duration::from_micros(delay),
            sample: Duration::from_micros(us),
        }),
    ]
}

/// The test's own accounting of what is in flight.
struct Model {
    /// Outstanding packets: (sent, bytes).
    outstanding: Vec<(Instant, u64)>,
    sent: u64,
    acked: u64,
    lost: u64,
}

impl Model {
    fn in_flight(&self) -> u64 {
        self.outstanding.iter().map(|(_, b)| b).sum()
    }
}

fn check(
    cc: &dyn Controller,
    rtt: &RttEstimator,
    max_datagram: u64,
    model: &Model,
) -> Result<(), TestCaseError> {
    prop_assert!(
        cc.window() >= 2 * max_datagram,
        "window {} below minimum",
        cc.window()
    );
    let rate = cc.pacing_rate(rtt);
    prop_assert!(rate.is_some_and(|r| r > 0), "pacing rate {rate:?}");
    let accounted = model.sent.checked_sub(model.acked + model.lost);
    prop_assert_eq!(accounted, Some(model.in_flight()));
    Ok(())
}

/// Every controller, under its name, with the initial window in datagrams
/// it must start from; a non-default configuration of each where one
/// changes what the controller reacts to.
fn controllers() -> Vec<(&'static str, u64, Box<dyn ControllerFactory>)> {
    let mut lt_tcp_loss = LtTcpConfig::default();
    lt_tcp_loss.answer_congestion_loss(true);
    let mut ccp_high = CcpConfig::default();
    ccp_high.operating_point(1.0).gain(1.0);
    let mut fectcp_tight = FectcpConfig::default();
    fectcp_tight.beta(0.0);
    vec![
        ("ltx", 32, Box::new(TolerantConfig::default())),
        ("ctcp", 10, Box::new(CodedTcpConfig::default())),
        ("newreno", 10, Box::new(NewRenoConfig::default())),
        ("cubic", 10, Box::new(CubicConfig::default())),
        ("lt-tcp", 10, Box::new(LtTcpConfig::default())),
        ("lt-tcp", 10, Box::new(lt_tcp_loss)),
        ("ccp", 10, Box::new(CcpConfig::default())),
        ("ccp", 10, Box::new(ccp_high)),
        ("fectcp", 2, Box::new(FectcpConfig::default())),
        ("fectcp", 2, Box::new(fectcp_tight)),
        ("bbr", 10, Box::new(BbrConfig::default())),
    ]
}

/// Drives one controller through `events`, checking the invariants after
/// each.
fn drive(
    name: &str,
    initial_packets: u64,
    factory: &dyn ControllerFactory,
    max_datagram: u16,
    events: &[Event],
) -> Result<(), TestCaseError> {
    let epoch = Instant::now();
    let mut now = epoch;
    let mut cc = factory.build(now, max_datagram);
    let mtu = u64::from(max_datagram);
    prop_assert_eq!(cc.initial_window(), initial_packets * mtu);
    prop_assert_eq!(cc.window(), cc.initial_window());
    prop_assert_eq!(cc.name(), name);
    let mut rtt = RttEstimator::new(Duration::from_millis(333));
    let mut pacer = Pacer::new(max_datagram);
    let mut model = Model {
        outstanding: Vec::new(),
        sent: 0,
        acked: 0,
        lost: 0,
    };
    for event in events {
        match event.clone() {
            Event::Send(bytes) => {
                let bytes = u64::from(bytes);
                let rate = cc.pacing_rate(&rtt).unwrap_or(1);
                if let Some(at) = pacer.delay(now, bytes, rate, cc.window()) {
                    prop_assert!(at > now);
                }
                pacer.on_sent(now, bytes);
                model.outstanding.push((now, bytes));
                model.sent += bytes;
                cc.on_sent(now, bytes, model.in_flight());
            }
            Event::Ack { which, app_limited } => {
                if !model.outstanding.is_empty() {
                    let (sent, bytes) = model
                        .outstanding
                        .remove(which.index(model.outstanding.len()));
                    model.acked += bytes;
                    cc.on_ack(now, sent, bytes, app_limited, &rtt);
                }
            }
            Event::Lose {
                which,
                above_baseline,
            } => {
                if !model.outstanding.is_empty() {
                    let (sent, bytes) = model
                        .outstanding
                        .remove(which.index(model.outstanding.len()));
                    model.lost += bytes;
                    cc.on_loss(now, sent, bytes, above_baseline, &rtt);
                }
            }
            Event::Ce { which, marks } => {
                if !model.outstanding.is_empty() {
                    let (sent, _) = model.outstanding[which.index(model.outstanding.len())];
                    cc.on_ecn_ce(now, sent, marks, &rtt);
                }
            }
            Event::Wait(d) => now += d,
            Event::RttSample { ack_delay, sample } => {
                rtt.update(ack_delay, sample);
                cc.on_rtt_sample(now, &rtt);
            }
        }
        check(cc.as_ref(), &rtt, mtu, &model)?;
    }
    // A clone carries the state.
    let copy = cc.clone_box();
    prop_assert_eq!(copy.window(), cc.window());
    prop_assert_eq!(copy.pacing_rate(&rtt), cc.pacing_rate(&rtt));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_controller_keeps_its_invariants(
        max_datagram in 1200u16..=u16::MAX,
        events in prop::collection::vec(event(), 1..400),
    ) {
        for (name, initial, factory) in controllers() {
            drive(name, initial, factory.as_ref(), max_datagram, &events)
                .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        }
    }

    /// Absurd inputs (byte counts near u64::MAX, zero-length RTTs) must not
    /// overflow or break the minimum window either.
    #[test]
    fn absurd_inputs(bytes in prop::collection::vec(any::<u64>(), 1..50), above in any::<bool>()) {
        for (name, _, factory) in controllers() {
            let epoch = Instant::now();
            let mut cc = factory.build(epoch, u16::MAX);
            let mut rtt = RttEstimator::new(Duration::ZERO);
            let mut now = epoch;
            for (i, b) in bytes.iter().copied().enumerate() {
                now += Duration::from_nanos(i as u64);
                rtt.update(Duration::MAX, Duration::from_nanos(i as u64 % 3));
                cc.on_sent(now, b, b);
                cc.on_ack(now, epoch, b, false, &rtt);
                cc.on_loss(now, now, b, above, &rtt);
                cc.on_ecn_ce(now, now, b, &rtt);
                prop_assert!(cc.window() >= 2 * u64::from(u16::MAX), "{}", name);
                prop_assert!(cc.pacing_rate(&rtt).is_some_and(|r| r > 0), "{}", name);
            }
        }
    }
}
