//! The fault-injection soak (issue 7): a thousand seeded transfers over
//! random hostile paths, each of which must deliver exactly the bytes sent
//! or end with a clear error. A failing run prints its seed; `ltx sim soak
//! --replay SEED` replays it, and `LTX_SOAK_SEED=SEED` runs it alone here.

use std::time::Duration;

use ltx_proto::CloseReason;
use ltx_sim::soak::{run_many, SoakCase, SoakOutcome, SoakSummary, MAX_OUTAGE, MAX_SIZE};
use ltx_sim::{Outage, QueueLimit};

/// Runs per test run: the issue asks CI for at least a thousand.
const RUNS: u64 = 1000;
/// The first seed; runs take the seeds after it (the same runs as `ltx sim
/// soak --runs 1000 --seed 1`).
const FIRST_SEED: u64 = 1;

#[test]
fn a_thousand_hostile_paths_deliver_or_fail_cleanly() {
    if let Some(seed) = std::env::var("LTX_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        let case = SoakCase::draw(seed);
        let report = case.run();
        assert!(!report.outcome.is_failure(), "{case}\n{}", report.outcome);
        return;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut summary = SoakSummary::default();
    let mut failures = Vec::new();
    run_many(FIRST_SEED, RUNS, threads, None, |report| {
        if report.outcome.is_failure() {
            failures.push(format!("seed {}: {}", report.seed, report.outcome));
        }
        summary.add(&report);
    });
    assert_eq!(summary.runs, RUNS);
    assert!(
        failures.is_empty(),
        "{} of {RUNS} runs failed; replay with `ltx sim soak --replay SEED`:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Most paths are survivable: a soak whose runs mostly end in errors
    // would test little of the data path.
    assert!(
        summary.delivered * 10 >= RUNS * 8,
        "only {} of {RUNS} delivered: {:?}",
        summary.delivered,
        summary.errors_by_reason
    );
}

#[test]
fn jitter_and_a_shrinking_window_do_not_pass_for_congestion() {
    // Seeds 3130 and 8113 of the ten-thousand-run soak: jitter of a
    // quarter to a third of the round trip (forward with reordering, or on
    // the ACK path), 19–25 % loss. Counting a round's losses against the
    // packets sent in it, and the queue by the latest RTT sample, read the
    // random loss as a surge on a standing queue round after round: the
    // window fell to 1–2 % of the path's and both passed their deadlines
    // (94 % and 87 % read). Both must now deliver well inside it.
    for (seed, bound) in [(3130, 40.0), (8113, 60.0)] {
        assert_delivered_within(seed, bound);
    }
}

/// Runs soak seed `seed` and checks that it delivers within `bound`
/// seconds of virtual time.
fn assert_delivered_within(seed: u64, bound: f64) {
    let case = SoakCase::draw(seed);
    let report = case.run();
    assert!(
        report.outcome == SoakOutcome::Delivered,
        "seed {seed}: {case}\n{}",
        report.outcome
    );
    let secs = report.completion.expect("delivered").as_secs_f64();
    assert!(
        secs <= bound,
        "seed {seed}: delivered at {secs:.1} s of virtual time, bound {bound} s"
    );
}

#[test]
fn jitter_that_holds_packets_in_order_is_not_a_queue() {
    // Seed 9373: 4.9 MB over 2.7 Mbit/s and 911 ms with up to 437 ms of
    // jitter that keeps packets in order (T* 18.9 s). Read as a queue the
    // flow built, the jitter held the window at a tenth of the path's and
    // the run delivered at 435.7 s, 23 times T*; now start-up takes a rate
    // only from ACKs the bottleneck spread and the window probes for room
    // the delay does not show: within 20 times T*.
    assert_delivered_within(9373, 20.0 * 18.924);
}

#[test]
fn a_run_is_a_pure_function_of_its_seed() {
    for seed in [3, 17, 4242] {
        let first = SoakCase::draw(seed);
        let again = SoakCase::draw(seed);
        assert_eq!(first.forward, again.forward, "seed {seed}");
        assert_eq!(first.reverse, again.reverse, "seed {seed}");
        assert_eq!(first.size, again.size, "seed {seed}");
        assert_eq!(first.run(), again.run(), "seed {seed}");
    }
    assert_ne!(SoakCase::draw(1).forward, SoakCase::draw(2).forward);
}

#[test]
fn draws_cover_the_ranges_of_the_issue() {
    let symbol = ltx_proto::TransportConfig::default().symbol_size() as u64;
    let cases: Vec<SoakCase> = (0..20_000).map(SoakCase::draw).collect();
    let directions = || cases.iter().flat_map(|c| [&c.forward, &c.reverse]);
    for d in directions() {
        assert!((1_000_000..=1_000_000_000).contains(&d.rate_bps), "{d}");
        assert!((0.0..=0.6).contains(&d.loss), "{d}");
        assert!((1.0..=30.0 + 1e-9).contains(&d.burst), "{d}");
        assert!(d.outages.len() <= 2, "{d}");
        assert!(
            d.outages.iter().all(|o| o.end - o.start <= MAX_OUTAGE),
            "{d}"
        );
    }
    for c in &cases {
        let rtt = c.rtt();
        assert!(
            rtt >= Duration::from_micros(999) && rtt <= Duration::from_millis(1200),
            "{c}"
        );
        assert!(c.size <= MAX_SIZE, "{c}");
    }
    // The corners are reached, not only the middle.
    let any = |f: &dyn Fn(&SoakCase) -> bool| cases.iter().any(f);
    for size in [0, 1, symbol - 1, symbol, symbol + 1] {
        assert!(any(&|c| c.size == size), "no transfer of {size} bytes");
    }
    assert!(any(&|c| c.size > 30_000_000), "no huge transfer");
    assert!(directions().any(|d| d.loss > 0.55 && d.burst > 20.0));
    assert!(directions().any(|d| d.rate_bps < 1_100_000));
    assert!(directions().any(|d| d.rate_bps > 900_000_000));
    assert!(any(&|c| c.rtt() > Duration::from_millis(1000)));
    assert!(any(&|c| c.rtt() < Duration::from_millis(2)));
    assert!(any(&|c| c.forward.rate_bps != c.reverse.rate_bps));
    assert!(any(&|c| c.forward.delay * 2 < c.reverse.delay));
    assert!(directions().any(|d| d.jitter.is_some_and(|j| j.reorder)));
    assert!(directions().any(|d| d.duplicate > 0.05));
    assert!(directions().any(|d| d.corrupt > 0.05));
    assert!(directions().any(|d| d.queue == QueueLimit::Unlimited));
    assert!(directions().any(|d| d.codel));
    assert!(directions().any(|d| d.outages.len() == 2));
    assert!(directions().any(|d| d
        .outages
        .iter()
        .any(|o: &Outage| o.end - o.start > Duration::from_secs(25))));
    assert!(any(
        &|c| c.forward.outages.is_empty() != c.reverse.outages.is_empty()
    ));
}

#[test]
fn a_path_down_for_longer_than_the_idle_time_out_ends_in_an_error() {
    // Both directions down from the first instant for twice the idle
    // time-out: the handshake cannot complete, and the client must give up
    // with a reason rather than wait for ever.
    let mut case = SoakCase::draw(7);
    let down = case.transport.idle_timeout() * 2;
    let outage = Outage {
        start: Duration::ZERO,
        end: down,
    };
    case.forward.outages = vec![outage];
    case.reverse.outages = vec![outage];
    let report = case.run();
    assert_eq!(
        report.outcome,
        SoakOutcome::Error {
            end: ltx_sim::soak::End::Sender,
            reason: CloseReason::HandshakeTimeout
        },
        "{case}"
    );
}

#[test]
fn a_clean_path_delivers() {
    // One side of the outage test: the same case with no outage and no
    // impairment delivers.
    let mut case = SoakCase::draw(7);
    for d in [&mut case.forward, &mut case.reverse] {
        d.loss = 0.0;
        d.jitter = None;
        d.duplicate = 0.0;
        d.corrupt = 0.0;
        d.outages.clear();
    }
    let report = case.run();
    assert_eq!(report.outcome, SoakOutcome::Delivered, "{case}");
    assert_eq!(report.read, case.size);
}
