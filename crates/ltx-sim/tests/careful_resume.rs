//! Careful resume in the simulator: a connection given the path an
//! earlier one measured starts at half its rate and finishes sooner; one
//! given a rate the path no longer has retreats and still finishes, with
//! little lost to the jump.

use std::time::Duration;

use ltx_proto::congestion::SavedPath;
use ltx_sim::scenario::{Scenario, ScenarioResult};

/// 4 MB over 50 Mbit/s with a 600 ms round trip.
fn long_delay(loss: f64, seed: u64, saved: Option<SavedPath>) -> Scenario {
    let mut scenario = Scenario {
        rate_bps: 50_000_000,
        rtt: Duration::from_millis(600),
        loss,
        burst: 1.0,
        size: 4_000_000,
        seed,
        ..Scenario::default()
    };
    scenario.transport.set_saved_path(saved);
    scenario
}

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

/// The path as an earlier connection would have saved it: the
/// bottleneck's rate scaled by `factor`.
fn saved(factor: f64) -> SavedPath {
    SavedPath {
        rate: (50e6 / 8.0 * factor) as u64,
        min_rtt: Duration::from_millis(600),
    }
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
