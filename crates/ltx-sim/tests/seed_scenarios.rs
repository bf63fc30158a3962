//! The seed scenarios in virtual time: what ltx must deliver on the paths
//! of the LT-TCP evaluation (seed 000), and what it must not cost.
//!
//! Each test is one seeded run; a failure prints the scenario and its seed,
//! and `ltx sim run` with the same flags replays it.

use std::time::Duration;

use ltx_sim::scenario::{Faults, Scenario, ScenarioResult};
use ltx_sim::units::QueueSpec;
use ltx_sim::Outage;

fn long_delay(loss: f64, burst: f64) -> Scenario {
    Scenario {
        rate_bps: 50_000_000,
        rtt: Duration::from_millis(600),
        loss,
        burst,
        size: 10_000_000,
        seed: 1,
        ..Scenario::default()
    }
}

fn correlated(loss: f64, burst: f64) -> Scenario {
    Scenario {
        rate_bps: 100_000_000,
        rtt: Duration::from_millis(20),
        ..long_delay(loss, burst)
    }
}

fn run(scenario: &Scenario) -> ScenarioResult {
    let result = scenario.run().expect("the scenario builds");
    assert!(
        result.verified,
        "seed {}: not delivered intact: {:?} ({scenario:?})",
        scenario.seed, result.flows[0].error
    );
    result
}

fn ratio(result: &ScenarioResult) -> f64 {
    result
        .ratio
        .expect("a verified transfer has a completion time")
}

#[test]
fn a_clean_path_pays_no_redundancy() {
    // 0 % loss: no repair symbol at all, and the wire carries at most 3 %
    // more than the payload (headers only).
    for scenario in [long_delay(0.0, 1.0), correlated(0.0, 1.0)] {
        let result = run(&scenario);
        let flow = &result.flows[0];
        assert_eq!(flow.repair_sent, 0, "{scenario:?}");
        assert!(result.overhead <= 1.03, "overhead {}", result.overhead);
    }
}

#[test]
fn the_first_flight_fits_a_path_that_holds_less_than_the_initial_window() {
    // A product of 9 to 23 datagrams and a queue of one product: the
    // initial window of 32, sent at one instant, would overflow it (and did:
    // 1.3 to 5.4 % of the packets lost). Spread at the rate the handshake's
    // answers read, nothing is lost, no repair is sent, and the wire
    // carries no more than a clean path's. Start-up's exit then leaves the
    // window at the product: the queue its own burst keeps is not read as
    // an excess to drain (which left the web object 3.7 % behind the
    // ideal).
    for (rate_bps, rtt_ms, size) in [
        (10_000_000, 25, 1080 * 1024),
        (5_000_000, 20, 1_000_000),
        (2_000_000, 50, 1_000_000),
        (1_000_000, 200, 1_000_000),
    ] {
        let scenario = Scenario {
            rate_bps,
            rtt: Duration::from_millis(rtt_ms),
            size,
            ..long_delay(0.0, 1.0)
        };
        let result = run(&scenario);
        assert_eq!(result.queue_loss, 0.0, "{scenario:?}");
        assert_eq!(result.flows[0].repair_sent, 0, "{scenario:?}");
        assert!(result.overhead <= 1.02, "overhead {}", result.overhead);
        assert!(
            ratio(&result) <= 1.01,
            "{scenario:?}: T/T* {}",
            ratio(&result)
        );
    }
}

#[test]
fn twenty_percent_iid_loss_costs_little_over_the_channel_minimum() {
    // An erasure channel that loses p needs 1/(1−p) bytes per byte; ltx may
    // spend 8 % over that (headers, repair that came too late).
    let p = 0.2;
    let result = run(&long_delay(p, 1.0));
    assert!(
        result.overhead <= 1.08 / (1.0 - p),
        "overhead {} above {}",
        result.overhead,
        1.08 / (1.0 - p)
    );
}

#[test]
fn a_short_lossy_path_wastes_few_repairs_on_answers() {
    // Feedback a short round trip away: answers sized below the flight's
    // expected need leave a shortfall to the next report instead of sending
    // repairs that find nothing to solve. 10 Mbit/s, 20 ms, 20 % i.i.d.
    // (seed 004's loss sweep, 10 MB): the median of seeds 1–4 within
    // 1.05/(1−p) (measured 1.296–1.319), and each seed below the answers
    // sized for the expected need (measured 1.355–1.380).
    let p = 0.2;
    let scenario = |seed, quantile| {
        let mut scenario = Scenario {
            rate_bps: 10_000_000,
            rtt: Duration::from_millis(20),
            seed,
            ..long_delay(p, 1.0)
        };
        scenario
            .transport
            .repair_mut()
            .set_cheap_answer_quantile(quantile)
            .expect("a valid quantile");
        scenario
    };
    let mut overheads = Vec::new();
    for seed in 1..=4 {
        let below = run(&scenario(seed, -1.0)).overhead;
        let expected = run(&scenario(seed, 0.0)).overhead;
        assert!(
            below < expected,
            "seed {seed}: overhead {below} answering below the need, {expected} answering it"
        );
        overheads.push(below);
    }
    overheads.sort_by(f64::total_cmp);
    let median = (overheads[1] + overheads[2]) / 2.0;
    assert!(
        median <= 1.05 / (1.0 - p),
        "median overhead {median} above {}: {overheads:?}",
        1.05 / (1.0 - p)
    );
}

#[test]
fn a_short_path_leaves_its_spans_to_feedback() {
    // At 20 ms a round trip of waiting is worth less than a margin ahead of
    // loss: once the round trip is measured, spans are sized eight standard
    // deviations below their expected losses (0.03 repairs per source
    // symbol for a span of 256 at 25 %, none at 20 %), and answers to
    // feedback make up the gaps. 10 Mbit/s, 20 ms, 25 % i.i.d., 5 MB,
    // seeds 1–3: measured 62–100 proactive repairs for some 3,700 source
    // symbols and 1,230–1,301 answers; spans sized to leave 99 % short, the
    // quantile range's old end, sent 851–920 and 520–549.
    for seed in 1..=3 {
        let scenario = Scenario {
            rate_bps: 10_000_000,
            rtt: Duration::from_millis(20),
            size: 5_000_000,
            seed,
            ..long_delay(0.25, 1.0)
        };
        let result = run(&scenario);
        let flow = &result.flows[0];
        let [proactive, reactive, ..] = flow.repair_kinds;
        assert!(
            proactive * 20 < flow.source_sent,
            "seed {seed}: {proactive} proactive repairs for {} source symbols",
            flow.source_sent
        );
        assert!(
            reactive * 4 > flow.source_sent,
            "seed {seed}: {reactive} answers for {} source symbols",
            flow.source_sent
        );
    }
}

#[test]
fn a_bursty_transfer_ends_on_its_tail_not_a_round_trip_later() {
    // On a 600 ms path a last flight left short waits a round trip on the
    // transfer's completion. The tail makes up what the whole flight is
    // expected to lack, with a margin for its spread and the estimate's
    // error that leaves 1 % of transfers short. 20 % in bursts of 10, 10 MB,
    // seeds 1–6: no seed slower than with the seeds' 10 %, and those that
    // 10 % leaves short a round trip faster (measured 1.220 against 1.406
    // for seed 2, 1.222 against 1.409 for seed 6, the others equal), for
    // wire bytes within 2 % (median 1.324 against 1.322).
    let scenario = |seed, tail_residual| {
        let mut scenario = Scenario {
            seed,
            ..long_delay(0.2, 10.0)
        };
        scenario
            .transport
            .repair_mut()
            .set_tail_residual(tail_residual)
            .expect("a valid tail residual");
        scenario
    };
    let (mut faster, mut overheads, mut tens) = (0, Vec::new(), Vec::new());
    for seed in 1..=6 {
        let default = run(&scenario(seed, 0.01));
        let ten = run(&scenario(seed, 0.1));
        let (t, t10) = (ratio(&default), ratio(&ten));
        // Where both tails suffice the two runs end within a few packets'
        // time of each other (the larger tail's repairs go out first);
        // slower means by more than that, well short of a round trip.
        assert!(
            t <= t10 + 0.005,
            "seed {seed}: T/T* {t} with the default tail, {t10} with 10 %"
        );
        if t < t10 - 0.1 {
            faster += 1;
        }
        overheads.push(default.overhead);
        tens.push(ten.overhead);
    }
    assert!(faster >= 1, "no seed spared a round trip");
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[2] + v[3]) / 2.0
    };
    let (ovh, ovh10) = (median(&mut overheads), median(&mut tens));
    assert!(
        ovh <= ovh10 * 1.02,
        "median overhead {ovh} against {ovh10} with a tail at 10 %"
    );
}

#[test]
fn twenty_percent_iid_loss_delays_delivery_by_less_than_a_round_trip() {
    // The goal is delay_p99 within one round trip. A byte that waits for
    // feedback waits a round trip at least, so the goal asks that proactive
    // repair decode nearly every gap unaided and that no queue stands in
    // front of the feedback rounds that remain. Start-up sends at the rate
    // it measured (no standing queue: the p95 queueing delay is 3 to 5 ms),
    // and the first flights are sized for the young estimate's error, but
    // about one seed in four sizes its first full flight from a young
    // estimate that came out low (seed 3: 3 losses in 41 fates against a
    // mean of 8), and the bytes behind its first gap wait for feedback.
    // Over seeds 1–24, eight above one round trip; the worst, seed 3, at
    // 1.76, whose answer to that gap fell short in turn and took a second
    // round (before the client read the path from its handshake's answers,
    // which moved every packet of the run by one number and so drew other
    // fates, it was 1.17 and the worst of the 24 1.43). The median must be
    // within one round trip, at most two of these eight above it, and none
    // past two round trips.
    let p = 0.2;
    let mut ratios = Vec::new();
    for seed in 1..=8 {
        let scenario = Scenario {
            seed,
            ..long_delay(p, 1.0)
        };
        let result = run(&scenario);
        let rtt_ms = scenario.rtt.as_secs_f64() * 1000.0;
        ratios.push((result.delay_p99_ms / rtt_ms, seed));
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = (ratios[3].0 + ratios[4].0) / 2.0;
    assert!(
        median <= 1.0,
        "median delay_p99 {median:.2} RTT: {ratios:?}"
    );
    let late = ratios.iter().filter(|(ratio, _)| *ratio > 1.0).count();
    assert!(late <= 2, "{late} seeds past one RTT: {ratios:?}");
    let (worst, seed) = ratios[7];
    assert!(
        worst <= 2.0,
        "seed {seed}: delay_p99 {worst:.2} RTT: {ratios:?}"
    );
}

#[test]
fn start_up_leaves_no_standing_queue_on_the_long_path() {
    // Start-up sends at the rate the first flight's ACK spacing measured,
    // with ten datagrams of probe burst per round, instead of pacing above
    // it until a queue shows: on 50 Mbit/s and 600 ms, the bottleneck's
    // p95 queueing delay was 287 ms without loss and 250–460 ms at 20 %
    // (the transfer of 10 MB is mostly start-up). Now a few ms. (At 50 %
    // loss the pair samples, which place lost slots by send time, read up
    // to a fifth above the path, and the queue holds that excess: 20 to
    // 95 ms.)
    for (p, seed) in [(0.0, 1), (0.05, 1), (0.1, 1), (0.2, 1), (0.2, 2)] {
        let scenario = Scenario {
            seed,
            ..long_delay(p, 1.0)
        };
        let result = run(&scenario);
        assert!(
            result.queue_delay_p95_ms <= 12.0,
            "loss {p}, seed {seed}: p95 queueing delay {} ms",
            result.queue_delay_p95_ms
        );
        assert!(
            ratio(&result) <= 1.35,
            "loss {p}, seed {seed}: T/T* {}",
            ratio(&result)
        );
    }
}

#[test]
fn the_long_delay_table_stays_within_twice_the_ideal() {
    // Seed 000's SATCOM table: 50 Mbit/s, 600 ms, 10 MB, loss 0–50 % in
    // four patterns. A 10 MB transfer is short next to the start-up on such
    // a path, so the bound is T/T* ≤ 2.0 in every cell.
    for loss in [0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5] {
        for burst in [1.0, 2.0, 5.0, 10.0] {
            if loss == 0.0 && burst > 1.0 {
                continue;
            }
            let r = ratio(&run(&long_delay(loss, burst)));
            println!("loss {loss} burst {burst}: T/T* {r:.2}");
            assert!(r <= 2.0, "loss {loss}, burst {burst}: T/T* {r}");
        }
    }
}

#[test]
fn the_correlated_table_stays_near_the_ideal() {
    // Seed 000's correlated-erasure table: 100 Mbit/s, 20 ms, 10 MB, loss
    // 0–20 % in four patterns: within 30 % of the ideal time everywhere.
    for loss in [0.0, 0.05, 0.1, 0.2] {
        for burst in [1.0, 2.0, 5.0, 10.0] {
            if loss == 0.0 && burst > 1.0 {
                continue;
            }
            let result = run(&correlated(loss, burst));
            let r = ratio(&result);
            println!("loss {loss} burst {burst}: T/T* {r:.2}");
            assert!(r <= 1.3, "loss {loss}, burst {burst}: T/T* {r}");
        }
    }
}

#[test]
fn a_long_transfer_on_the_long_path_runs_near_the_ideal() {
    // 100 MB over 600 ms: start-up is amortised, so T/T* ≤ 1.25.
    for (loss, burst) in [(0.0, 1.0), (0.3, 1.0)] {
        let scenario = Scenario {
            size: 100_000_000,
            ..long_delay(loss, burst)
        };
        let r = ratio(&run(&scenario));
        assert!(r <= 1.25, "loss {loss}, burst {burst}: T/T* {r}");
    }
}

/// Jain's index ≥ 0.95 and the queue's p95 delay at most half the base
/// RTT: the shared bottleneck's targets besides its loss.
fn assert_fair_with_a_short_queue(scenario: &Scenario, result: &ScenarioResult) {
    let jain = result.jain.expect("several flows");
    assert!(jain >= 0.95, "jain {jain}");
    let base_ms = scenario.rtt.as_secs_f64() * 1e3;
    assert!(
        result.queue_delay_p95_ms <= 0.5 * base_ms,
        "queue delay p95 {} ms, base RTT {base_ms} ms",
        result.queue_delay_p95_ms
    );
}

#[test]
fn four_flows_share_a_drop_tail_bottleneck_fairly() {
    // No random loss, a drop-tail queue of one BDP: Jain's index ≥ 0.95,
    // the queue's p95 delay at most half the base RTT (the queue target
    // drains what the flows build), and at most 0.5 % of what the queue is
    // offered dropped.
    let scenario = Scenario {
        flows: 4,
        size: 20_000_000,
        queue: QueueSpec::Bdp(1.0),
        ..correlated(0.0, 1.0)
    };
    let result = run(&scenario);
    assert_fair_with_a_short_queue(&scenario, &result);
    assert!(
        result.queue_loss <= 0.005,
        "queue loss {}",
        result.queue_loss
    );
}

#[test]
fn four_flows_that_start_together_lose_nothing_to_an_ecn_marking_queue() {
    // Seed 001's shared bottleneck with CoDel marking: the flows start at
    // one instant, each measures the bottleneck while the others' first
    // flights cross it, and the windows they jump to must fit the path and
    // its queue, since CoDel marks only after 100 ms above its target.
    let scenario = Scenario {
        flows: 4,
        size: 10_000_000,
        queue: QueueSpec::Bdp(1.0),
        ecn: true,
        ..correlated(0.0, 1.0)
    };
    let result = run(&scenario);
    assert_eq!(result.queue_loss, 0.0, "queue loss");
    assert_fair_with_a_short_queue(&scenario, &result);
}

/// 1 MB on the long path, traced, with the path down from 590 ms to 1 s:
/// the handshake completes at 600 ms and its first flight is lost whole.
fn first_flight_lost_in_an_outage() -> Scenario {
    Scenario {
        size: 1_000_000,
        trace: true,
        faults: Faults {
            outages: vec![Outage {
                start: Duration::from_millis(590),
                end: Duration::from_millis(1000),
            }],
            ..Faults::default()
        },
        ..long_delay(0.0, 1.0)
    }
}

#[test]
fn a_first_flight_lost_whole_is_probed_a_round_trip_and_a_quarter_after_it() {
    // The handshake completes at 600 ms; the path is down from 590 ms to
    // 1 s, so the first flight is lost whole and no acknowledgement comes.
    // The first probe must not wait the three round trips that RFC 9002's
    // variance for a single sample gives (1.8 s here), but 5/4 of the round
    // trip and the peer's acknowledgement delay of at most 25 ms.
    use ltx_proto::event::{PacketKind, TraceEvent};
    let scenario = first_flight_lost_in_an_outage();
    let result = run(&scenario);
    let sent = |wanted: fn(&PacketKind) -> bool| {
        result.trace.iter().find_map(|(at, event)| match event {
            TraceEvent::PacketSent { kind, .. } if wanted(kind) => Some(*at),
            _ => None,
        })
    };
    let flight = sent(|k| matches!(k, PacketKind::Source(_))).expect("a first flight");
    let probe = sent(|k| matches!(k, PacketKind::Repair { .. })).expect("a probe");
    // Trace times are in seconds.
    let wait = probe - flight;
    let quarter_more = scenario.rtt.as_secs_f64() * 1.25;
    assert!(
        (quarter_more..=quarter_more + 0.030).contains(&wait),
        "first probe {wait:.3} s after the first flight"
    );
}

#[test]
fn the_first_probes_of_a_first_flight_lost_whole_replace_it_whole() {
    // The first flight is lost whole in an outage (590 ms to 1 s, the
    // handshake done at 600 ms): its first probe round carries as many
    // repairs as it had symbols, so that the round decodes it where a few
    // probes would only bring back the report that asks for the rest.
    use ltx_proto::event::{PacketKind, TraceEvent};
    let result = run(&first_flight_lost_in_an_outage());
    let sent: Vec<(f64, bool)> = result
        .trace
        .iter()
        .filter_map(|(at, event)| match event {
            TraceEvent::PacketSent { kind, .. } => match kind {
                PacketKind::Source(_) => Some((*at, true)),
                PacketKind::Repair { .. } => Some((*at, false)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let first_probe = sent
        .iter()
        .position(|&(_, source)| !source)
        .expect("a probe");
    let flight = first_probe;
    let probe_at = sent[first_probe].0;
    let round = sent[first_probe..]
        .iter()
        .take_while(|&&(at, source)| !source && at == probe_at)
        .count();
    assert!(flight >= 32, "a first flight of {flight} symbols");
    assert_eq!(
        round, flight,
        "first probe round of {round} for a flight of {flight}"
    );
    assert!(result.verified);

    // 600 ms, 30 % in bursts of 10, seed 8: the initial window and the
    // four probes of the old first round fell into one run of loss, and
    // 10 MB took 2.30 times the ideal, past the 2.0 that start-up allows.
    let seed_8 = Scenario {
        seed: 8,
        ..long_delay(0.3, 10.0)
    };
    let t = ratio(&run(&seed_8));
    assert!(t <= 2.0, "seed 8: T/T* {t}");
}

#[test]
fn a_queue_shallower_than_the_initial_window_does_not_start_a_flood() {
    // 50 Mbit/s, 2 ms: a drop-tail queue of one BDP holds 9 packets, fewer
    // than the first flight, and can add no more than the RTT itself, too
    // little for a delay test with a margin of milliseconds. The overflow
    // must not pass for random loss that the window then ignores (this path
    // once put 99 bytes on the wire for each one delivered).
    let single = Scenario {
        rate_bps: 50_000_000,
        rtt: Duration::from_millis(2),
        size: 5_000_000,
        queue: QueueSpec::Bdp(1.0),
        ..long_delay(0.0, 1.0)
    };
    let result = run(&single);
    assert!(
        result.overhead <= 1.3,
        "one flow: overhead {}",
        result.overhead
    );
    assert!(
        result.queue_loss <= 0.1,
        "one flow: queue loss {}",
        result.queue_loss
    );
    // Four flows that start together, each with a share of 2 packets of
    // path and 2 of queue.
    let shared = Scenario {
        flows: 4,
        size: 2_000_000,
        ..single
    };
    let result = run(&shared);
    for (i, flow) in result.flows.iter().enumerate() {
        assert!(flow.overhead <= 4.0, "flow {i}: overhead {}", flow.overhead);
    }
}

#[test]
fn the_ideal_counts_the_bytes_a_full_packet_really_carries() {
    // T*'s payload fraction against the packets of a transfer long enough
    // for four-byte symbol ids and stream offsets (the packet number is
    // truncated to what the packets in flight need): each source packet
    // past the 16 384th with the stream bytes its symbol carried (logged
    // just before it).
    use ltx_proto::event::{PacketKind, TraceEvent};
    let scenario = Scenario {
        size: 25_000_000,
        trace: true,
        ..correlated(0.0, 1.0)
    };
    let result = run(&scenario);
    let mut last_len = None;
    let mut fractions = Vec::new();
    for (_, event) in &result.trace {
        match event {
            TraceEvent::StreamDataSent { len, .. } => last_len = Some(*len),
            TraceEvent::PacketSent {
                number,
                bytes,
                kind: PacketKind::Source(_),
            } => {
                if let Some(len) = last_len.take() {
                    if number.0 >= 16_384 {
                        fractions.push(len as f64 / *bytes as f64);
                    }
                }
            }
            _ => {}
        }
    }
    assert!(fractions.len() > 1000, "{} full packets", fractions.len());
    fractions.sort_by(f64::total_cmp);
    let observed = fractions[fractions.len() / 2];
    let ideal = scenario.payload_fraction();
    assert!(
        (observed - ideal).abs() < 0.0005,
        "a full packet carries {observed:.5} of its bytes as stream data; T* counts {ideal:.5}"
    );
}
