//! Whatever the configuration and traffic, every packet is accounted for:
//! delivered, dropped for a counted cause, or still on its way — and never
//! delivered before it was sent plus the propagation delay.

use std::time::{Duration, Instant};

use ltx_link::{
    Admission, Aqm, Datagram, Ecn, Jitter, Link, LinkConfig, LossModel, Outage, QueueLimit, Rate,
};
use proptest::prelude::*;

fn loss_model() -> impl Strategy<Value = LossModel> {
    prop_oneof![
        Just(LossModel::None),
        (0.0f64..=1.0).prop_map(|p| LossModel::Bernoulli { p }),
        (0.0f64..0.9, 1.0f64..20.0).prop_map(|(l, e)| LossModel::bursty(l, e)),
        (
            0.0f64..0.5,
            0.0f64..0.5,
            0.0f64..0.5,
            0.0f64..1.0,
            0.0f64..0.5
        )
            .prop_map(|(p13, p31, p32, p23, p14)| LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14
            }),
    ]
}

fn config() -> impl Strategy<Value = LinkConfig> {
    (
        0u64..200,
        proptest::option::of((1u64..20, any::<bool>())),
        proptest::option::of(100_000u64..1_000_000_000),
        prop_oneof![
            (1usize..100).prop_map(QueueLimit::Packets),
            (1usize..200_000).prop_map(QueueLimit::Bytes),
            Just(QueueLimit::Unlimited)
        ],
        proptest::option::of(prop_oneof![
            Just(Aqm::codel()),
            (1u64..20, 20u64..100, 1u8..100).prop_map(|(min, max, p)| Aqm::Red {
                min: Duration::from_millis(min),
                max: Duration::from_millis(max),
                max_p_percent: p,
            })
        ]),
        loss_model(),
        (0.0f64..0.5, 0.0f64..0.5),
        proptest::option::of((0u64..500, 0u64..500)),
    )
        .prop_map(
            |(delay, jitter, rate, queue, aqm, loss, (duplicate, corrupt), outage)| LinkConfig {
                delay: Duration::from_millis(delay),
                jitter: jitter.map(|(ms, reorder)| Jitter {
                    max: Duration::from_millis(ms),
                    reorder,
                }),
                rate: rate.map(Rate),
                queue,
                aqm,
                loss,
                duplicate,
                corrupt,
                outages: outage
                    .map(|(start, len)| Outage {
                        start: Duration::from_millis(start),
                        end: Duration::from_millis(start + len),
                    })
                    .into_iter()
                    .collect(),
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_packet_is_delivered_dropped_or_on_its_way(
        config in config(),
        seed: u64,
        gaps in proptest::collection::vec((0u64..3000, 1usize..1500, 0u8..4), 1..400),
    ) {
        let epoch = Instant::now();
        let delay = config.delay;
        let mut link = Link::new(config, epoch, seed).unwrap();
        let mut now = epoch;
        let mut delivered = 0u64;
        for (gap_us, len, ecn) in gaps {
            now += Duration::from_micros(gap_us);
            let ecn = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce][usize::from(ecn)];
            if let Admission::Scheduled { at, .. } = link.enqueue(now, Datagram { payload: vec![0; len], ecn }) {
                prop_assert!(at >= now + delay, "delivered before the propagation delay");
            }
            while let Some(at) = link.next_event() {
                if at > now {
                    break;
                }
                prop_assert!(link.dequeue_ready(now).is_some());
                delivered += 1;
            }
        }
        let stats = link.stats().clone();
        prop_assert_eq!(stats.delivered, delivered);
        prop_assert_eq!(
            stats.offered + stats.duplicated,
            stats.delivered + stats.dropped() + link.in_flight() as u64
        );
        prop_assert!(stats.marked <= stats.offered + stats.duplicated);
    }
}
