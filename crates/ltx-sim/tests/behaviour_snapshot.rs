//! ltx's measured behaviour, pinned: a small set of simulator scenarios
//! whose key figures are kept in a reviewed snapshot
//! (`tests/snapshots/behaviour_snapshot__*.snap`) and compared on every
//! test run. A change to what the protocol does shows here as a diff in
//! review, not as a figure in a comment.
//!
//! After a deliberate change, look at the diff and accept it:
//! `INSTA_UPDATE=always cargo test -p ltx-sim --profile checked --test
//! behaviour_snapshot` (or `cargo insta review`), and say in the commit why
//! the figures moved.
//!
//! Figures: T/T* (completion over the physical limit, one-way delay plus
//! the bytes at erasure capacity), wire bytes per byte delivered, the 99th
//! percentile of the added delivery delay, the bottleneck's 95th
//! percentile queueing delay and the share of offered packets its queue
//! dropped; with several flows, Jain's fairness index.

use std::fmt::Write;
use std::time::Duration;

use ltx_presets::Profile;
use ltx_proto::congestion::SavedPath;
use ltx_sim::scenario::{Scenario, ScenarioResult};

/// One row of a snapshot: a scenario and what it measured.
fn row(name: &str, scenario: &Scenario) -> String {
    let result: ScenarioResult = scenario.run().expect("the scenario builds");
    let mut line = format!("{name:<34}");
    match result.ratio {
        Some(ratio) => write!(line, " T/T* {ratio:>7.4}"),
        None => write!(line, " T/T*     DNF"),
    }
    .expect("a string takes any write");
    write!(
        line,
        "  bytes/byte {:.4}  delay p99 {:>7.1} ms  queue p95 {:>6.1} ms  queue loss {:>6.3} %",
        result.overhead,
        result.delay_p99_ms,
        result.queue_delay_p95_ms,
        result.queue_loss * 100.0,
    )
    .expect("a string takes any write");
    if let Some(jain) = result.jain {
        write!(line, "  jain {jain:.4}").expect("a string takes any write");
    }
    assert!(
        result.verified || result.ratio.is_none(),
        "{name}: a completed transfer must arrive intact (seed {})",
        scenario.seed
    );
    line
}

fn path(rate_mbit: u64, rtt_ms: u64, loss: f64, burst: f64, size: u64) -> Scenario {
    Scenario {
        rate_bps: rate_mbit * 1_000_000,
        rtt: Duration::from_millis(rtt_ms),
        loss,
        burst,
        size,
        seed: 1,
        ..Scenario::default()
    }
}

fn with_profile(profile: Profile, scenario: Scenario) -> Scenario {
    Scenario {
        transport: profile.transport_config(),
        ..scenario
    }
}

#[test]
fn ltx_on_the_seed_paths() {
    // The two tables of seed 000 (LT-TCP): 100 Mbit/s at 20 ms and
    // 50 Mbit/s at 600 ms, 10 MB, clean, independent and bursty loss.
    let cases = [
        ("20 ms, 0 %", path(100, 20, 0.0, 1.0, 10_000_000)),
        ("20 ms, 20 %", path(100, 20, 0.2, 1.0, 10_000_000)),
        (
            "20 ms, 10 % in bursts of 5",
            path(100, 20, 0.1, 5.0, 10_000_000),
        ),
        ("600 ms, 0 %", path(50, 600, 0.0, 1.0, 10_000_000)),
        ("600 ms, 10 %", path(50, 600, 0.1, 1.0, 10_000_000)),
        (
            "600 ms, 20 % in bursts of 10",
            path(50, 600, 0.2, 10.0, 10_000_000),
        ),
        ("600 ms, 50 %", path(50, 600, 0.5, 1.0, 10_000_000)),
    ];
    let table: Vec<String> = cases.iter().map(|(name, s)| row(name, s)).collect();
    insta::assert_snapshot!(table.join("\n"));
}

#[test]
fn careful_resume_on_the_long_delay_path() {
    // 4 MB over 50 Mbit/s and 600 ms, clean and at 20 % independent loss:
    // a first contact, and a connection resumed from the path as an
    // earlier one saved it (its rate and round trip).
    let resumed = |mut scenario: Scenario| {
        scenario.transport.set_saved_path(Some(SavedPath {
            rate: scenario.rate_bps / 8,
            min_rtt: scenario.rtt,
        }));
        scenario
    };
    let cases = [
        ("first contact, 0 %", path(50, 600, 0.0, 1.0, 4_000_000)),
        ("resumed, 0 %", resumed(path(50, 600, 0.0, 1.0, 4_000_000))),
        ("first contact, 20 %", path(50, 600, 0.2, 1.0, 4_000_000)),
        ("resumed, 20 %", resumed(path(50, 600, 0.2, 1.0, 4_000_000))),
    ];
    let table: Vec<String> = cases.iter().map(|(name, s)| row(name, s)).collect();
    insta::assert_snapshot!(table.join("\n"));
}

#[test]
fn ltx_start_up_on_small_and_fast_paths() {
    // Paths whose bandwidth-delay product is less than the initial window
    // (the first flight is paced from the handshake's reading), and a fast
    // one whose first ACKs come too close together for packet pairs.
    let cases = [
        (
            "web object, 10 Mbit/s, 25 ms",
            path(10, 25, 0.0, 1.0, 1080 * 1024),
        ),
        ("2 Mbit/s, 50 ms", path(2, 50, 0.0, 1.0, 1_000_000)),
        ("1 Mbit/s, 200 ms", path(1, 200, 0.0, 1.0, 1_000_000)),
        ("500 Mbit/s, 10 ms", path(500, 10, 0.0, 1.0, 20_000_000)),
    ];
    let table: Vec<String> = cases.iter().map(|(name, s)| row(name, s)).collect();
    insta::assert_snapshot!(table.join("\n"));
}

#[test]
fn ltx_flows_sharing_a_bottleneck() {
    // Four flows starting together on 100 Mbit/s, 20 ms and a queue of one
    // bandwidth-delay product, drop-tail and with CoDel marking ECN.
    let shared = Scenario {
        flows: 4,
        ..path(100, 20, 0.0, 1.0, 10_000_000)
    };
    let marked = Scenario {
        ecn: true,
        ..shared.clone()
    };
    let table = [
        row("4 flows, drop-tail", &shared),
        row("4 flows, ECN", &marked),
    ];
    insta::assert_snapshot!(table.join("\n"));
}

#[test]
fn every_preset_on_one_lossy_path() {
    // The seeds' reproductions and the baselines, 5 MB over 100 Mbit/s,
    // 20 ms and 2 % independent loss: what each preset does is pinned too.
    let table: Vec<String> = Profile::ALL
        .into_iter()
        .map(|profile| {
            let scenario = with_profile(profile, path(100, 20, 0.02, 1.0, 5_000_000));
            row(profile.name(), &scenario)
        })
        .collect();
    insta::assert_snapshot!(table.join("\n"));
}
