//! Early data in the simulator: with it on, both ends are secured and the
//! sender's first flight carries the transfer's first bytes, so a small
//! transfer arrives a one-way delay after the start instead of a round
//! trip and a half, and a larger one saves the handshake's round trip.
//! Thresholds come from the path's round trip. A failure prints its seed;
//! the scenario replays from it.

use std::time::Duration;

use ltx_proto::congestion::SavedPath;
use ltx_sim::scenario::Scenario;

const RTT: Duration = Duration::from_millis(600);

/// `size` bytes over 50 Mbit/s and 600 ms, with early data `early`.
fn scenario(size: u64, loss: f64, seed: u64, early: bool) -> Scenario {
    let mut scenario = Scenario {
        rtt: RTT,
        size,
        loss,
        seed,
        ..Scenario::default()
    };
    scenario.transport.set_early_data(early);
    scenario
}

/// Seconds from the start to the last byte read; the transfer must be
/// intact.
fn completion(scenario: &Scenario) -> f64 {
    let result = scenario.run().expect("the scenario builds");
    assert!(
        result.verified,
        "seed {}: not delivered intact: {:?}",
        scenario.seed, result.flows[0].error
    );
    result.completion_s.expect("a verified transfer completed")
}

#[test]
fn a_small_transfer_arrives_with_the_first_flight() {
    let rtt = RTT.as_secs_f64();
    for seed in 1..=3 {
        let early = completion(&scenario(10_000, 0.0, seed, true));
        let late = completion(&scenario(10_000, 0.0, seed, false));
        eprintln!("seed {seed}: early data {early:.3} s, without {late:.3} s");
        assert!(
            early < rtt * 0.6,
            "seed {seed}: 10 kB with early data took {early:.3} s, over a one-way delay"
        );
        assert!(
            late > rtt * 1.4,
            "seed {seed}: 10 kB without early data took {late:.3} s"
        );
    }
}

#[test]
fn early_data_saves_a_resumed_transfer_the_handshakes_round_trip() {
    let rtt = RTT.as_secs_f64();
    let saved = SavedPath {
        rate: 50_000_000 / 8,
        min_rtt: RTT,
    };
    for (loss, seed) in [(0.0, 1u64), (0.1, 2)] {
        let mut early = scenario(4_000_000, loss, seed, true);
        early.transport.set_saved_path(Some(saved));
        let mut late = scenario(4_000_000, loss, seed, false);
        late.transport.set_saved_path(Some(saved));
        let result = early.run().expect("the scenario builds");
        let (early_s, late_s) = (completion(&early), completion(&late));
        eprintln!(
            "loss {loss} seed {seed}: early data {early_s:.3} s (T/T*0 {:.3}), without {late_s:.3} s",
            result.ratio.unwrap_or(f64::NAN)
        );
        assert!(
            early_s < late_s - rtt * 0.75,
            "seed {seed}, loss {loss}: {early_s:.3} s with early data, {late_s:.3} s without"
        );
    }
}
