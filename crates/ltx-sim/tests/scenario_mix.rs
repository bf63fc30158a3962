//! Flows of one scenario running different transport configurations: each
//! flow runs its own controller over the shared bottleneck.

use std::time::Duration;

use ltx_presets::Profile;
use ltx_sim::scenario::Scenario;
use ltx_sim::units::QueueSpec;

fn lossy_pair(per_flow: Vec<Profile>, seed: u64) -> Vec<f64> {
    let scenario = Scenario {
        rate_bps: 20_000_000,
        rtt: Duration::from_millis(40),
        loss: 0.03,
        size: 2_000_000,
        seed,
        flows: 2,
        queue: QueueSpec::Bdp(1.0),
        per_flow: per_flow
            .into_iter()
            .map(Profile::transport_config)
            .collect(),
        ..Scenario::default()
    };
    let result = scenario.run().expect("a valid scenario");
    assert!(result.verified, "seed {seed}: {:?}", result.flows);
    result.flows.iter().map(|f| f.goodput_bps).collect()
}

#[test]
fn a_loss_based_flow_beside_ltx_gets_less_on_a_lossy_path() {
    // 3 % random loss: NewReno halves on every round trip of losses, ltx
    // repairs them and keeps its window, so the two flows, sharing the
    // same bottleneck, part very unequally.
    let seed = 5;
    let goodputs = lossy_pair(vec![Profile::NewReno, Profile::Ltx], seed);
    assert!(
        goodputs[1] > 2.0 * goodputs[0],
        "seed {seed}: newreno {} bit/s, ltx {} bit/s",
        goodputs[0],
        goodputs[1]
    );
}

#[test]
fn two_flows_of_one_profile_part_evenly() {
    // The other side: the same path and seed, both flows ltx.
    let seed = 5;
    let goodputs = lossy_pair(vec![Profile::Ltx], seed);
    let ratio = goodputs[0] / goodputs[1];
    assert!(
        (0.5..2.0).contains(&ratio),
        "seed {seed}: goodputs {goodputs:?}"
    );
}
