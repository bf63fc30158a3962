//! Every transfer delivers exactly the bytes sent, whatever the path does:
//! randomized seeded scenarios with loss up to 60 %, bursts up to 20,
//! reordering, duplication, corruption and outages of several round trips.
//! A failing case prints its seed; `LTX_SIM_SEED=<seed>` replays it alone.

use std::time::Duration;

use ltx_sim::scenario::{Faults, Scenario};
use ltx_sim::units::QueueSpec;
use ltx_sim::{Jitter, Outage};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Scenarios per test run.
const CASES: u64 = 500;

fn random_scenario(seed: u64) -> Scenario {
    let mut rng = SmallRng::seed_from_u64(seed);
    let rtt = Duration::from_micros(rng.random_range(1_000..=600_000));
    let rate_bps = rng.random_range(2_000_000..=100_000_000);
    let loss = if rng.random_bool(0.2) {
        0.0
    } else {
        rng.random_range(0.0..=0.6)
    };
    let burst = if rng.random_bool(0.4) {
        1.0
    } else {
        rng.random_range(1.0..=20.0)
    };
    let mut faults = Faults::default();
    if rng.random_bool(0.3) {
        faults.jitter = Some(Jitter {
            max: rtt / rng.random_range(2..=8),
            reorder: rng.random_bool(0.5),
        });
    }
    if rng.random_bool(0.3) {
        faults.duplicate = rng.random_range(0.0..=0.05);
    }
    if rng.random_bool(0.3) {
        faults.corrupt = rng.random_range(0.0..=0.05);
    }
    if rng.random_bool(0.2) {
        faults.reverse_loss = rng.random_range(0.0..=0.3);
    }
    if rng.random_bool(0.2) {
        // Down for several round trips, early in the transfer.
        let start = rtt * rng.random_range(1..=4);
        let length = rtt * rng.random_range(2..=8);
        faults.outages.push(Outage {
            start,
            end: start + length,
        });
    }
    let size = match rng.random_range(0..4) {
        0 => rng.random_range(1..=2_000),
        1 => rng.random_range(2_000..=50_000),
        _ => rng.random_range(50_000..=400_000),
    };
    Scenario {
        rate_bps,
        rtt,
        loss,
        burst,
        size,
        seed,
        queue: if rng.random_bool(0.5) {
            QueueSpec::Bdp(rng.random_range(0.25..=2.0))
        } else {
            QueueSpec::Unlimited
        },
        faults,
        // Correctness, not speed: a slow transfer must still finish intact.
        deadline: Some(Duration::from_secs(3600)),
        ..Scenario::default()
    }
}

fn check(seed: u64) {
    let scenario = random_scenario(seed);
    let result = scenario.run().expect("scenario builds");
    let flow = &result.flows[0];
    assert!(
        result.verified,
        "seed {seed}: not delivered intact ({:?}); scenario {scenario:?}",
        flow.error
    );
}

#[test]
fn random_paths_deliver_every_byte() {
    if let Some(seed) = std::env::var("LTX_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        check(seed);
        return;
    }
    for seed in 0..CASES {
        check(seed);
    }
}

#[test]
#[ignore]
fn trace_one() {
    let seed: u64 = std::env::var("LTX_SIM_SEED").unwrap().parse().unwrap();
    let mut scenario = random_scenario(seed);
    scenario.trace = true;
    let result = scenario.run().unwrap();
    for (t, e) in &result.trace {
        println!("{t:.4} {e:?}");
    }
    println!("{:?}", result.flows[0].error);
}
