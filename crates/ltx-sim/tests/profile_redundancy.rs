//! Every preset, with its seed's redundancy scheme, delivers a verified
//! transfer through random and bursty loss in the simulator.
//!
//! 1 MB over 20 Mbit/s and a 100 ms round trip, through 10 % and 30 %
//! i.i.d. loss and Gilbert–Elliott bursts of mean length E = 5 at the same
//! rates. Delivery within the scenario's deadline (20 × T* + 60 s) and byte
//! for byte is the requirement; how fast is the measurements' business.

use std::time::Duration;

use ltx_presets::Profile;
use ltx_sim::scenario::{Scenario, ScenarioResult};

fn transfer(profile: Profile, loss: f64, burst: f64, seed: u64) -> ScenarioResult {
    let scenario = Scenario {
        rate_bps: 20_000_000,
        rtt: Duration::from_millis(100),
        loss,
        burst,
        size: 1_000_000,
        seed,
        transport: profile.transport_config(),
        ..Scenario::default()
    };
    scenario.run().expect("a valid scenario")
}

fn delivers_through(loss: f64, burst: f64) {
    let seed = 1;
    for profile in Profile::ALL {
        let result = transfer(profile, loss, burst, seed);
        assert!(
            result.verified,
            "{profile}, loss {loss}, burst {burst}, seed {seed}: {:?}",
            result.flows
        );
        let flow = &result.flows[0];
        // Each repair that arrives decodes at most one source symbol, or
        // comes too late, or solves nothing: never more than were sent.
        let [.., stale, redundant] = flow.repair_kinds;
        assert!(
            flow.symbols_repaired + stale + redundant <= flow.repair_sent,
            "{profile}, loss {loss}, seed {seed}: {} repaired, {stale} stale, \
             {redundant} redundant of {} repairs sent",
            flow.symbols_repaired,
            flow.repair_sent
        );
        assert!(
            flow.symbols_repaired > 0,
            "{profile}, loss {loss}, seed {seed}: nothing was repaired"
        );
    }
}

#[test]
fn every_preset_delivers_through_10_percent_iid_loss() {
    delivers_through(0.1, 1.0);
}

#[test]
fn every_preset_delivers_through_30_percent_iid_loss() {
    delivers_through(0.3, 1.0);
}

#[test]
fn every_preset_delivers_through_10_percent_loss_in_bursts_of_5() {
    delivers_through(0.1, 5.0);
}

#[test]
fn every_preset_delivers_through_30_percent_loss_in_bursts_of_5() {
    delivers_through(0.3, 5.0);
}

#[test]
fn dfec_parities_are_sent_ahead_and_repair_at_the_receiver() {
    // XOR parity is proactive repair in dfec; the receiver decodes it
    // through the same decoder as every other repair.
    let seed = 2;
    let result = transfer(Profile::Dfec, 0.05, 1.0, seed);
    assert!(result.verified, "seed {seed}: {:?}", result.flows);
    let flow = &result.flows[0];
    let [proactive, ..] = flow.repair_kinds;
    assert!(proactive > 0, "seed {seed}: {:?}", flow.repair_kinds);
    assert!(flow.symbols_repaired > 0, "seed {seed}");
}

#[test]
fn fectcp_repairs_only_after_the_block_is_sent() {
    // No proactive or reactive repair: the whole block's repairs follow
    // its source symbols, until the receiver reports it recovered.
    let seed = 3;
    let result = transfer(Profile::Fectcp, 0.1, 1.0, seed);
    assert!(result.verified, "seed {seed}: {:?}", result.flows);
    let [proactive, reactive, tail, ..] = result.flows[0].repair_kinds;
    assert_eq!((proactive, reactive), (0, 0), "seed {seed}");
    assert!(tail > 0, "seed {seed}");
}

#[test]
fn repairs_that_arrive_with_nothing_to_solve_are_counted() {
    // ltx at 30 % i.i.d.: the sliding window's proactive repairs over spans
    // that lost less than their margin, and the tail's after the last gap
    // closed, reach a decoder with nothing left to solve.
    let seed = 1;
    let result = transfer(Profile::Ltx, 0.3, 1.0, seed);
    assert!(result.verified, "seed {seed}: {:?}", result.flows);
    let flow = &result.flows[0];
    let [.., redundant] = flow.repair_kinds;
    assert!(redundant > 0, "seed {seed}: {:?}", flow.repair_kinds);
    assert!(
        redundant < flow.repair_sent,
        "seed {seed}: {:?}",
        flow.repair_kinds
    );
}
