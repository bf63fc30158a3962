//! The link against its own definition: loss statistics over 10^6 packets
//! within statistical bounds, exact timing of the bottleneck, queue limits
//! from both sides, AQM, outages, jitter, duplication and corruption.

use std::time::{Duration, Instant};

use ltx_link::{
    Admission, Aqm, Datagram, DropCause, Ecn, Jitter, Link, LinkConfig, LinkConfigError, LossModel,
    Outage, QueueLimit, Rate,
};

const PACKETS: usize = 1_000_000;

fn packet(len: usize, ecn: Ecn) -> Datagram {
    Datagram {
        payload: vec![0xA5; len],
        ecn,
    }
}

/// Offers `PACKETS` packets to a link with only `loss`, and returns the
/// measured loss rate and mean burst length (runs of consecutive losses).
fn measure(loss: LossModel, seed: u64) -> (f64, f64) {
    let epoch = Instant::now();
    let config = LinkConfig {
        loss,
        ..LinkConfig::default()
    };
    let mut link = Link::new(config, epoch, seed).unwrap();
    let (mut lost, mut bursts, mut previous_lost) = (0usize, 0usize, false);
    for _ in 0..PACKETS {
        let dropped = matches!(
            link.enqueue(epoch, packet(1, Ecn::NotEct)),
            Admission::Dropped(_)
        );
        while link.dequeue_ready(epoch).is_some() {}
        if dropped {
            lost += 1;
            if !previous_lost {
                bursts += 1;
            }
        }
        previous_lost = dropped;
    }
    (
        lost as f64 / PACKETS as f64,
        lost as f64 / bursts.max(1) as f64,
    )
}

#[test]
fn bernoulli_loss_rate_is_within_five_sigma_of_p() {
    for (p, seed) in [(0.01, 1), (0.1, 2), (0.5, 3)] {
        let (rate, _) = measure(LossModel::Bernoulli { p }, seed);
        let sigma = (p * (1.0 - p) / PACKETS as f64).sqrt();
        assert!(
            (rate - p).abs() < 5.0 * sigma,
            "p = {p}: measured {rate} (seed {seed})"
        );
    }
}

#[test]
fn gilbert_elliott_meets_its_mean_loss_and_burst_length() {
    for (mean_loss, mean_burst, seed) in [(0.05, 2.0, 4), (0.1, 5.0, 5), (0.3, 10.0, 6)] {
        let model = LossModel::bursty(mean_loss, mean_burst);
        assert!((model.mean_loss() - mean_loss).abs() < 1e-12);
        let (rate, burst) = measure(model, seed);
        // Correlation inflates the variance of the rate by (1 + ρ) / (1 − ρ),
        // ρ = 1 − p − r; bursts are geometric with variance E(E − 1).
        let LossModel::GilbertElliott { p, r, .. } = model else {
            unreachable!()
        };
        let rho = 1.0 - p - r;
        let sigma =
            (mean_loss * (1.0 - mean_loss) / PACKETS as f64 * (1.0 + rho) / (1.0 - rho)).sqrt();
        assert!(
            (rate - mean_loss).abs() < 5.0 * sigma,
            "L = {mean_loss}, E = {mean_burst}: loss {rate} (seed {seed})"
        );
        let bursts = PACKETS as f64 * mean_loss / mean_burst;
        let burst_sigma = (mean_burst * (mean_burst - 1.0) / bursts).sqrt();
        assert!(
            (burst - mean_burst).abs() < 5.0 * burst_sigma,
            "L = {mean_loss}, E = {mean_burst}: burst {burst} (seed {seed})"
        );
    }
}

#[test]
fn a_burst_length_of_one_means_independent_loss() {
    assert_eq!(LossModel::bursty(0.2, 1.0), LossModel::Bernoulli { p: 0.2 });
    assert_eq!(LossModel::bursty(0.0, 5.0), LossModel::None);
}

#[test]
fn the_four_state_model_matches_its_stationary_loss() {
    // With p14 = p23 = p32 = 0 it is the Gilbert model: loss p13 / (p13 + p31).
    let gilbert_like = LossModel::FourState {
        p13: 0.02,
        p31: 0.25,
        p32: 0.0,
        p23: 0.0,
        p14: 0.0,
    };
    assert!((gilbert_like.mean_loss() - 0.02 / 0.27).abs() < 1e-12);
    let (rate, burst) = measure(gilbert_like, 7);
    assert!((rate - 0.02 / 0.27).abs() < 0.004, "loss {rate}");
    assert!((burst - 4.0).abs() < 0.15, "burst {burst}");

    // The full chain, with isolated losses and receptions inside bursts.
    let full = LossModel::FourState {
        p13: 0.01,
        p31: 0.3,
        p32: 0.2,
        p23: 0.4,
        p14: 0.02,
    };
    let (rate, _) = measure(full, 8);
    assert!(
        (rate - full.mean_loss()).abs() < 0.003,
        "loss {rate} vs {}",
        full.mean_loss()
    );
}

fn bottleneck(queue: QueueLimit) -> LinkConfig {
    LinkConfig {
        delay: Duration::from_millis(10),
        // 1500-byte packets take exactly 1 ms.
        rate: Some(Rate(12_000_000)),
        queue,
        ..LinkConfig::default()
    }
}

#[test]
fn the_bottleneck_serialises_packets_in_order() {
    let epoch = Instant::now();
    let mut link = Link::new(bottleneck(QueueLimit::Unlimited), epoch, 1).unwrap();
    for _ in 0..5 {
        link.enqueue(epoch, packet(1500, Ecn::NotEct));
    }
    let mut arrivals = Vec::new();
    while let Some(at) = link.next_event() {
        assert!(link.dequeue_ready(at - Duration::from_nanos(1)).is_none());
        link.dequeue_ready(at).unwrap();
        arrivals.push((at - epoch).as_micros());
    }
    assert_eq!(arrivals, [11_000, 12_000, 13_000, 14_000, 15_000]);
    // The k-th packet waited k ms; the p95 of 0..=4 ms is 4 ms.
    let p95 = link.stats().queue_delay.quantile(0.95);
    assert!(
        p95 >= Duration::from_micros(3960) && p95 <= Duration::from_millis(4),
        "{p95:?}"
    );
}

#[test]
fn a_packet_limit_drops_the_arrival_that_would_exceed_it() {
    let epoch = Instant::now();
    let mut link = Link::new(bottleneck(QueueLimit::Packets(5)), epoch, 1).unwrap();
    for _ in 0..5 {
        assert!(matches!(
            link.enqueue(epoch, packet(1500, Ecn::NotEct)),
            Admission::Scheduled { .. }
        ));
    }
    assert_eq!(
        link.enqueue(epoch, packet(1500, Ecn::NotEct)),
        Admission::Dropped(DropCause::QueueFull)
    );
    // One millisecond later the first has left: room for one more.
    let later = epoch + Duration::from_millis(1);
    assert!(matches!(
        link.enqueue(later, packet(1500, Ecn::NotEct)),
        Admission::Scheduled { .. }
    ));
    assert_eq!(link.stats().dropped_queue, 1);
}

#[test]
fn a_byte_limit_admits_up_to_the_byte() {
    let epoch = Instant::now();
    let mut link = Link::new(bottleneck(QueueLimit::Bytes(3000)), epoch, 1).unwrap();
    assert!(matches!(
        link.enqueue(epoch, packet(1500, Ecn::NotEct)),
        Admission::Scheduled { .. }
    ));
    assert!(matches!(
        link.enqueue(epoch, packet(1500, Ecn::NotEct)),
        Admission::Scheduled { .. }
    ));
    assert_eq!(
        link.enqueue(epoch, packet(1, Ecn::NotEct)),
        Admission::Dropped(DropCause::QueueFull)
    );
}

/// Offers `load` × the link rate for two seconds; returns the link and
/// when the first packet it signalled started transmission (the moment
/// CoDel decides, at the head of the queue).
fn offer_load(aqm: Option<Aqm>, ecn: Ecn, load: f64) -> (Link<Datagram>, Option<Duration>) {
    let epoch = Instant::now();
    let config = LinkConfig {
        aqm,
        queue: QueueLimit::Packets(10_000),
        ..bottleneck(QueueLimit::Unlimited)
    };
    let mut link = Link::new(config, epoch, 9).unwrap();
    let gap = Duration::from_secs_f64(0.001 / load);
    let mut first_signal = None;
    for i in 0..(2000.0 * load) as u32 {
        let now = epoch + gap * i;
        let admission = link.enqueue(now, packet(1500, ecn));
        if let Admission::Scheduled { at, marked: true } = admission {
            // Arrival at the far end, less propagation and serialisation.
            let sent = at - epoch - Duration::from_millis(10) - Duration::from_millis(1);
            first_signal.get_or_insert(sent);
        }
        while link.dequeue_ready(now).is_some() {}
    }
    (link, first_signal)
}

fn overload(aqm: Option<Aqm>, ecn: Ecn) -> Link<Datagram> {
    offer_load(aqm, ecn, 2.0).0
}

#[test]
fn codel_is_silent_below_the_link_rate_and_signals_a_standing_queue() {
    let (calm, first) = offer_load(Some(Aqm::codel()), Ecn::Ect0, 0.9);
    assert_eq!((calm.stats().marked, first), (0, None));

    // At twice the rate the sojourn time passes the 5 ms target with the
    // packet that arrives at 5 ms and leaves the queue at 10 ms; CoDel may
    // signal only once it has stayed above for its 100 ms interval.
    let (busy, first) = offer_load(Some(Aqm::codel()), Ecn::Ect0, 2.0);
    let first = first.expect("a standing queue is signalled");
    assert!(
        first >= Duration::from_millis(104),
        "first mark at {first:?}"
    );
    assert!(
        first <= Duration::from_millis(120),
        "first mark at {first:?}"
    );
    assert!(busy.stats().marked > 10);
    assert_eq!(
        busy.stats().dropped(),
        0,
        "ECN-capable packets are marked, not dropped"
    );
}

#[test]
fn codel_drops_what_it_cannot_mark_and_shortens_the_queue() {
    let plain = overload(None, Ecn::NotEct);
    let codel = overload(Some(Aqm::codel()), Ecn::NotEct);
    assert_eq!(plain.stats().dropped_aqm, 0);
    assert!(codel.stats().dropped_aqm > 0);
    assert_eq!(codel.stats().marked, 0);
    // Against traffic that does not slow down, CoDel's drop rate grows only
    // with the square root of its count, so the queue still grows, but less.
    let p95_plain = plain.stats().queue_delay.quantile(0.95);
    let p95_codel = codel.stats().queue_delay.quantile(0.95);
    assert!(p95_codel < p95_plain, "{p95_codel:?} vs {p95_plain:?}");
}

#[test]
fn red_signals_nothing_below_its_minimum_and_everything_above_its_maximum() {
    let red = Aqm::Red {
        min: Duration::from_millis(5),
        max: Duration::from_millis(50),
        max_p_percent: 10,
    };
    let link = overload(Some(red), Ecn::NotEct);
    let stats = link.stats();
    assert!(stats.dropped_aqm > 0);
    // Delay above 50 ms is never reached: everything beyond it is dropped.
    assert!(
        stats.queue_delay.max() <= Duration::from_millis(51),
        "{:?}",
        stats.queue_delay.max()
    );
}

#[test]
fn packets_offered_during_an_outage_are_dropped() {
    let epoch = Instant::now();
    let config = LinkConfig {
        outages: vec![Outage {
            start: Duration::from_secs(1),
            end: Duration::from_secs(2),
        }],
        ..LinkConfig::default()
    };
    let mut link = Link::new(config, epoch, 1).unwrap();
    let offer = |link: &mut Link<Datagram>, ms: u64| {
        link.enqueue(epoch + Duration::from_millis(ms), packet(10, Ecn::NotEct))
    };
    assert!(matches!(offer(&mut link, 999), Admission::Scheduled { .. }));
    assert_eq!(
        offer(&mut link, 1000),
        Admission::Dropped(DropCause::Outage)
    );
    assert_eq!(
        offer(&mut link, 1999),
        Admission::Dropped(DropCause::Outage)
    );
    assert!(matches!(
        offer(&mut link, 2000),
        Admission::Scheduled { .. }
    ));
}

fn arrival_order(reorder: bool) -> Vec<usize> {
    let epoch = Instant::now();
    let config = LinkConfig {
        delay: Duration::from_millis(20),
        jitter: Some(Jitter {
            max: Duration::from_millis(10),
            reorder,
        }),
        ..LinkConfig::default()
    };
    let mut link = Link::new(config, epoch, 3).unwrap();
    for i in 0..1000u64 {
        let mut p = packet(8, Ecn::NotEct);
        p.payload = i.to_le_bytes().to_vec();
        link.enqueue(epoch + Duration::from_micros(100 * i), p);
    }
    let mut order = Vec::new();
    while let Some(at) = link.next_event() {
        let p = link.dequeue_ready(at).unwrap();
        order.push(u64::from_le_bytes(p.payload.try_into().unwrap()) as usize);
    }
    order
}

#[test]
fn jitter_reorders_only_when_allowed() {
    let kept = arrival_order(false);
    assert_eq!(kept, (0..1000).collect::<Vec<_>>());
    let shuffled = arrival_order(true);
    assert_eq!(shuffled.len(), 1000);
    assert!(
        shuffled.windows(2).any(|w| w[0] > w[1]),
        "no packet overtook another"
    );
}

/// A jitter of zero is no jitter: the same packets are lost and each
/// arrives when it would without it.
#[test]
fn a_jitter_of_zero_changes_nothing() {
    let epoch = Instant::now();
    let schedule = |jitter: Option<Jitter>| {
        let config = LinkConfig {
            delay: Duration::from_millis(20),
            loss: LossModel::Bernoulli { p: 0.2 },
            jitter,
            ..LinkConfig::default()
        };
        let mut link = Link::new(config, epoch, 5).unwrap();
        (0..2000u64)
            .map(|i| {
                match link.enqueue(
                    epoch + Duration::from_micros(50 * i),
                    packet(64, Ecn::NotEct),
                ) {
                    Admission::Scheduled { at, .. } => Some(at),
                    Admission::Dropped(_) => None,
                }
            })
            .collect::<Vec<_>>()
    };
    let zero = Jitter {
        max: Duration::ZERO,
        reorder: false,
    };
    let without = schedule(None);
    assert!(without.iter().any(Option::is_none), "the loss drops some");
    assert_eq!(schedule(Some(zero)), without);
}

#[test]
fn duplication_and_corruption_happen_at_their_rates() {
    let epoch = Instant::now();
    let config = LinkConfig {
        duplicate: 0.1,
        corrupt: 0.2,
        ..LinkConfig::default()
    };
    let mut link = Link::new(config, epoch, 11).unwrap();
    let n = 100_000;
    let mut flipped = 0;
    for _ in 0..n {
        link.enqueue(epoch, packet(16, Ecn::NotEct));
        while let Some(p) = link.dequeue_ready(epoch) {
            let bits: u32 = p.payload.iter().map(|&b| (b ^ 0xA5).count_ones()).sum();
            assert!(bits <= 1, "a corrupted packet has exactly one flipped bit");
            flipped += bits as usize;
        }
    }
    let stats = link.stats();
    let dup = stats.duplicated as f64 / n as f64;
    assert!((dup - 0.1).abs() < 0.005, "duplicated {dup}");
    assert_eq!(stats.delivered, n as u64 + stats.duplicated);
    let corrupt = stats.corrupted as f64 / stats.delivered as f64;
    assert!((corrupt - 0.2).abs() < 0.01, "corrupted {corrupt}");
    assert_eq!(flipped as u64, stats.corrupted);
}

#[test]
fn the_same_seed_gives_the_same_link() {
    let run = |seed| {
        let epoch = Instant::now();
        let config = LinkConfig {
            loss: LossModel::bursty(0.2, 3.0),
            jitter: Some(Jitter {
                max: Duration::from_millis(5),
                reorder: true,
            }),
            ..bottleneck(QueueLimit::Packets(50))
        };
        let mut link = Link::new(config, epoch, seed).unwrap();
        (0..2000u64)
            .map(|i| {
                match link.enqueue(
                    epoch + Duration::from_micros(700 * i),
                    packet(1500, Ecn::NotEct),
                ) {
                    Admission::Scheduled { at, .. } => Some(at - epoch),
                    Admission::Dropped(_) => None,
                }
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn bad_configurations_are_refused() {
    let epoch = Instant::now();
    let bad = |config: LinkConfig| Link::<Datagram>::new(config, epoch, 0).err();
    assert_eq!(
        bad(LinkConfig {
            loss: LossModel::Bernoulli { p: 1.5 },
            ..LinkConfig::default()
        }),
        Some(LinkConfigError::NotAProbability {
            name: "p",
            value: 1.5
        })
    );
    assert!(bad(LinkConfig {
        loss: LossModel::Bernoulli { p: 1.0 },
        ..LinkConfig::default()
    })
    .is_none());
    assert_eq!(
        bad(LinkConfig {
            rate: Some(Rate(0)),
            ..LinkConfig::default()
        }),
        Some(LinkConfigError::ZeroRate)
    );
    assert!(bad(LinkConfig {
        duplicate: -0.1,
        ..LinkConfig::default()
    })
    .is_some());
    assert!(bad(LinkConfig {
        outages: vec![Outage {
            start: Duration::from_secs(2),
            end: Duration::from_secs(1)
        }],
        ..LinkConfig::default()
    })
    .is_some());
}

/// Every copy that entered the link is delivered, dropped for one cause, or
/// still on its way — at every moment, with every impairment at once.
#[test]
fn the_counters_account_for_every_packet() {
    let seed = 17;
    let epoch = Instant::now();
    let config = LinkConfig {
        loss: LossModel::bursty(0.1, 2.0),
        duplicate: 0.05,
        corrupt: 0.01,
        aqm: Some(Aqm::CoDel {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
        }),
        outages: vec![Outage {
            start: Duration::from_millis(300),
            end: Duration::from_millis(400),
        }],
        ..bottleneck(QueueLimit::Packets(40))
    };
    let mut link = Link::new(config, epoch, seed).unwrap();
    let mut seen = std::collections::HashSet::new();
    for i in 0..5000u64 {
        // Offered at 1.5 times the rate, so the queue fills and the AQM acts.
        let now = epoch + Duration::from_micros(666 * i);
        let ecn = if i % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
        if let Admission::Dropped(cause) = link.enqueue(now, packet(1500, ecn)) {
            seen.insert(cause);
        }
        if i % 7 == 0 {
            while link.dequeue_ready(now).is_some() {}
        }
        let stats = link.stats();
        assert!(
            stats.balances(),
            "after packet {i}: {stats:?} (seed {seed})"
        );
        assert_eq!(stats.in_flight, link.in_flight() as u64);
    }
    assert_eq!(
        seen.len(),
        4,
        "every drop cause occurred: {seen:?} (seed {seed})"
    );
    assert!(link.stats().in_flight > 0);
    while link
        .dequeue_ready(epoch + Duration::from_secs(60))
        .is_some()
    {}
    let stats = link.stats();
    assert_eq!(stats.in_flight, 0);
    assert_eq!(stats.copies(), stats.delivered + stats.dropped());
}
