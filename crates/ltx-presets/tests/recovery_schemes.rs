//! The seeds' redundancy schemes, driven as the connection drives them:
//! source symbols sent, repairs planned and sent, packets acknowledged or
//! lost, feedback answered. Each test checks the behaviour that defines its
//! seed's policy.

use ltx_coding::codec::{Code, DecodeError, Decoder, DecoderConfig, Encoder, EncoderConfig};
use ltx_coding::{RepairKey, SymbolId, Window};
use ltx_presets::recovery::whole_block::UNTIL_RECOVERED;
use ltx_presets::recovery::{
    BlockConfig, BlockScheme, DfecConfig, DfecScheme, WholeBlockConfig, WholeBlockScheme,
};
use ltx_proto::recovery::{
    Feedback, Horizon, LossEstimate, RedundancyScheme, RepairPlan, RepairRange, RepairReason,
    SlidingWindow,
};
use ltx_proto::RepairConfig;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::time::Duration;

/// The sliding window's span and round trip where the tests need one.
const HORIZON: Horizon = Horizon {
    span: 256,
    rtt: Duration::from_millis(100),
};

fn iid(rate: f64) -> LossEstimate {
    LossEstimate {
        rate,
        burst: 1.0 / (1.0 - rate),
        samples: 10_000,
    }
}

fn range(oldest: u64, next: u64) -> RepairRange {
    RepairRange {
        oldest: SymbolId(oldest),
        next: SymbolId(next),
        peer_end: SymbolId(0),
        max_span: 256,
        reach_flight: false,
    }
}

/// The sender's side of the exchange: packet numbers, credit, and every
/// repair it planned, with the number of the packet that carried it.
struct Sender {
    scheme: Box<dyn RedundancyScheme>,
    credit: f64,
    next_number: u64,
    next_id: u64,
    oldest: u64,
    /// (packet number, source symbol id) of every source sent.
    sources: Vec<(u64, u64)>,
    /// (packet number, reason, plan) of every repair sent.
    repairs: Vec<(u64, RepairReason, RepairPlan)>,
}

impl Sender {
    fn new(scheme: Box<dyn RedundancyScheme>) -> Sender {
        Sender {
            scheme,
            credit: 0.0,
            next_number: 0,
            next_id: 0,
            oldest: 0,
            sources: Vec::new(),
            repairs: Vec::new(),
        }
    }

    fn repair(&mut self, reason: RepairReason) -> Option<RepairPlan> {
        let plan = self
            .scheme
            .plan_repair(reason, &range(self.oldest, self.next_id))?;
        let number = self.next_number;
        self.next_number += 1;
        self.scheme.on_repair_sent(number, reason, &plan);
        self.repairs.push((number, reason, plan));
        Some(plan)
    }

    /// Sends `count` source symbols, each followed by the proactive repairs
    /// its credit buys, as the connection orders them.
    fn send(&mut self, count: u64, estimate: &LossEstimate) {
        for _ in 0..count {
            let id = SymbolId(self.next_id);
            self.next_id += 1;
            self.credit = self
                .scheme
                .credit_after_source(id, self.credit, estimate, &HORIZON);
            let number = self.next_number;
            self.next_number += 1;
            self.scheme.on_source_sent(number, id);
            self.sources.push((number, id.0));
            while self.credit >= 1.0 {
                self.credit -= 1.0;
                self.repair(RepairReason::Proactive);
            }
        }
    }

    /// Resolves every packet sent: lost if `lost` says so, else acked.
    fn resolve(&mut self, lost: impl Fn(Fate) -> bool) {
        let mut fates: Vec<(u64, Fate)> = self
            .sources
            .iter()
            .map(|&(n, id)| (n, Fate::Source(id)))
            .chain(
                self.repairs
                    .iter()
                    .map(|&(n, _, plan)| (n, Fate::Repair(plan.window))),
            )
            .collect();
        fates.sort_by_key(|&(n, _)| n);
        for (number, fate) in fates {
            if lost(fate) {
                self.scheme.on_packet_lost(number);
            } else {
                self.scheme.on_packet_acked(number);
            }
        }
        self.sources.clear();
        self.repairs.clear();
    }

    fn proactive_windows(&self) -> Vec<Window> {
        self.repairs
            .iter()
            .filter(|(_, reason, _)| *reason == RepairReason::Proactive)
            .map(|(_, _, plan)| plan.window)
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Source(u64),
    Repair(Window),
}

fn blocks(config: BlockConfig) -> Box<dyn RedundancyScheme> {
    Box::new(BlockScheme::new(config, RepairConfig::default()))
}

// ---- Coded TCP (seed 003) ----

#[test]
fn ctcp_repairs_cover_exactly_blocks_of_32() {
    let estimate = iid(0.2);
    let mut sender = Sender::new(blocks(BlockConfig::CODED_TCP));
    sender.send(100, &estimate);
    let windows = sender.proactive_windows();
    // k·p/(1−p) = 32 · 0.25 = 8 repairs per whole block, none before the
    // block's last symbol is sent.
    assert_eq!(windows.len(), 3 * 8, "{windows:?}");
    for (i, window) in windows.iter().enumerate() {
        let block = (i / 8) as u64;
        assert_eq!(*window, Window::new(SymbolId(32 * block), 32));
    }
    // The short last block [96, 100) goes with the tail.
    let tail = sender.scheme.tail_repairs(4, SymbolId(100), &estimate);
    assert_eq!(tail, 1, "⌈4 · 0.25⌉");
    let plan = sender.repair(RepairReason::Tail).unwrap();
    assert_eq!(plan.window, Window::new(SymbolId(96), 4));
    assert_eq!(plan.code, Code::default());
}

#[test]
fn ctcp_sends_extra_coded_packets_for_the_blocks_feedback_shows_short() {
    let estimate = iid(0.2);
    let mut sender = Sender::new(blocks(BlockConfig::CODED_TCP));
    sender.send(64, &estimate);
    // Block 0 loses 10 sources, more than its 8 repairs make up; block 1
    // loses 8, which its repairs cover exactly.
    sender.resolve(|fate| match fate {
        Fate::Source(id) => id < 10 || (32..40).contains(&id),
        Fate::Repair(_) => false,
    });
    let feedback = Feedback {
        deficit: 2,
        settled: 2,
        repairs_in_flight: 0,
        sent_since_report: 0,
        horizon: HORIZON,
        decoded_through: SymbolId(0),
        end: SymbolId(0),
        covered: None,
    };
    // Block 0 lacks 32 − (22 + 8) = 2: ⌈2 · 1.1 / 0.8⌉ + 1 = 4.
    let owed = sender.scheme.reactive_repairs(&feedback, &estimate);
    assert_eq!(owed, 4);
    for _ in 0..owed {
        let plan = sender.repair(RepairReason::Reactive).unwrap();
        assert_eq!(plan.window, Window::new(SymbolId(0), 32));
    }
    // The decoder says it lacks nothing: nothing is owed, whatever the
    // sender's count.
    let none = Feedback {
        deficit: 0,
        ..feedback
    };
    assert_eq!(sender.scheme.reactive_repairs(&none, &estimate), 0);
}

#[test]
fn ctcp_repairs_in_flight_count_against_a_blocks_lack() {
    let estimate = iid(0.2);
    let mut sender = Sender::new(blocks(BlockConfig::CODED_TCP));
    sender.send(32, &estimate);
    sender.resolve(|fate| matches!(fate, Fate::Source(id) if id < 10));
    let feedback = Feedback {
        deficit: 2,
        settled: 2,
        repairs_in_flight: 0,
        sent_since_report: 0,
        horizon: HORIZON,
        decoded_through: SymbolId(0),
        end: SymbolId(0),
        covered: None,
    };
    let owed = sender.scheme.reactive_repairs(&feedback, &estimate);
    for _ in 0..owed {
        sender.repair(RepairReason::Reactive);
    }
    // The next acknowledgement, before any of them arrived: they cover it.
    assert_eq!(sender.scheme.reactive_repairs(&feedback, &estimate), 0);
}

// ---- LT-TCP (seed 000) ----

#[test]
fn lt_tcp_sizes_pfec_from_the_loss_estimate() {
    let per_block = |rate: f64| {
        let mut sender = Sender::new(blocks(BlockConfig::LT_TCP));
        sender.send(64, &iid(rate));
        sender.proactive_windows()
    };
    assert!(per_block(0.0).is_empty(), "a clean path gets no PFEC");
    let low = per_block(0.05);
    let high = per_block(0.2);
    // The default policy's quantile over a window of one block.
    let policy = SlidingWindow::default();
    for (windows, rate) in [(&low, 0.05), (&high, 0.2)] {
        let want = (64.0 * policy.proactive_ratio_over(&iid(rate), 64)).floor() as usize;
        assert_eq!(windows.len(), want, "rate {rate}");
        assert!(windows.iter().all(|w| *w == Window::new(SymbolId(0), 64)));
    }
    assert!(
        high.len() > low.len() + 10,
        "{} vs {}",
        high.len(),
        low.len()
    );
    // More than the expected loss: RFEC is meant to be the exception.
    assert!(high.len() as f64 > 64.0 * 0.25);
}

#[test]
fn lt_tcp_sends_rfec_on_feedback_only_for_a_short_block() {
    let estimate = iid(0.1);
    let mut sender = Sender::new(blocks(BlockConfig::LT_TCP));
    sender.send(128, &estimate);
    let pfec = sender.proactive_windows().len() as u64 / 2;
    // Block 0 loses every PFEC and 3 sources; block 1 loses nothing.
    sender.resolve(|fate| match fate {
        Fate::Source(id) => id < 3,
        Fate::Repair(window) => window.first == SymbolId(0),
    });
    assert!(pfec > 3);
    let feedback = Feedback {
        deficit: 3,
        settled: 3,
        repairs_in_flight: 0,
        sent_since_report: 0,
        horizon: HORIZON,
        decoded_through: SymbolId(0),
        end: SymbolId(0),
        covered: None,
    };
    // ⌈3 · 1.1 / 0.9⌉ + 1 = 5, all over block 0.
    assert_eq!(sender.scheme.reactive_repairs(&feedback, &estimate), 5);
    for _ in 0..5 {
        let plan = sender.repair(RepairReason::Reactive).unwrap();
        assert_eq!(plan.window, Window::new(SymbolId(0), 64));
    }
}

// ---- TCP-dFEC (seed 002) ----

fn dfec() -> DfecScheme {
    DfecScheme::new(DfecConfig::default(), RepairConfig::default())
}

/// Sends one period (13 groups of 10 at the initial ratio: the first 128
/// sources resolved end it) with XOR parities, and resolves it with `lost`.
fn dfec_period(sender: &mut Sender, lost: impl Fn(Fate) -> bool) {
    sender.send(130, &iid(0.1));
    sender.resolve(lost);
}

#[test]
fn dfec_parities_are_xor_over_groups_of_one_over_the_ratio() {
    let mut sender = Sender::new(Box::new(dfec()));
    sender.send(30, &iid(0.1));
    let repairs: Vec<RepairPlan> = sender.repairs.iter().map(|r| r.2).collect();
    assert_eq!(repairs.len(), 3);
    for (i, plan) in repairs.iter().enumerate() {
        assert_eq!(plan.code, Code::XorParity);
        assert_eq!(plan.window, Window::new(SymbolId(10 * i as u64), 10));
    }
}

#[test]
fn dfec_ratio_grows_by_one_plus_delta_above_the_target_residual() {
    let before = dfec().ratio();
    let mut sender = Sender::new(Box::new(dfec()));
    // Two losses in every group: XOR repairs none of them, residual 20 %.
    dfec_period(
        &mut sender,
        |fate| matches!(fate, Fate::Source(id) if id % 10 < 2),
    );
    let after = sender.scheme.proactive_ratio(&iid(0.1), &HORIZON);
    assert!((after - before * 1.1).abs() < 1e-12, "{before} → {after}");
}

#[test]
fn dfec_ratio_shrinks_by_one_minus_delta_at_or_below_the_target() {
    let before = dfec().ratio();
    let mut sender = Sender::new(Box::new(dfec()));
    // One loss per group: each parity repairs it, residual 0.
    dfec_period(
        &mut sender,
        |fate| matches!(fate, Fate::Source(id) if id % 10 == 0),
    );
    let after = sender.scheme.proactive_ratio(&iid(0.1), &HORIZON);
    assert!((after - before * 0.9).abs() < 1e-12, "{before} → {after}");
}

#[test]
fn dfec_fec_window_halves_when_fec_is_lost_or_fails_and_grows_when_it_succeeds() {
    let start = DfecConfig::default().initial_fec_window;
    // Four groups of 10, each parity arrives and no source is lost: the
    // groups decode without feedback, +1 each.
    assert_eq!(fec_window_after(|_| false, 40), start + 4);
    // Every parity is lost: halved once for the flight they were sent in,
    // not once per parity (as TCP reduces once per window).
    assert_eq!(
        fec_window_after(|fate| matches!(fate, Fate::Repair(_)), 40),
        start / 2
    );
    // The first group loses two sources, which its parity cannot repair
    // (FEC fails): halved; the three others succeed.
    assert_eq!(
        fec_window_after(|fate| matches!(fate, Fate::Source(0 | 1)), 40),
        start / 2 + 3
    );
}

#[test]
fn dfec_feedback_does_not_race_a_parity_still_to_come() {
    let estimate = iid(0.1);
    let feedback = |deficit| Feedback {
        deficit,
        settled: deficit,
        repairs_in_flight: 0,
        sent_since_report: 0,
        horizon: HORIZON,
        decoded_through: SymbolId(3),
        end: SymbolId(3),
        covered: None,
    };
    let mut sender = Sender::new(Box::new(dfec()));
    sender.send(10, &estimate);
    assert_eq!(sender.repairs.len(), 1, "one parity, packet 10");
    // Source 3 is lost, the others arrive; the parity is on its way.
    for number in 0..10 {
        if number == 3 {
            sender.scheme.on_packet_lost(number);
        } else {
            sender.scheme.on_packet_acked(number);
        }
    }
    assert_eq!(sender.scheme.reactive_repairs(&feedback(1), &estimate), 0);
    // A second loss the parity cannot cover is answered at once.
    assert!(sender.scheme.reactive_repairs(&feedback(2), &estimate) > 0);
    // The parity is lost too: the first loss is answered as well.
    sender.scheme.on_packet_lost(10);
    assert!(sender.scheme.reactive_repairs(&feedback(1), &estimate) > 0);
}

/// The FEC window after sending `count` sources with their parities and
/// resolving them with `lost`.
fn fec_window_after(lost: impl Fn(Fate) -> bool, count: u64) -> u64 {
    let mut scheme = dfec();
    let mut credit = 0.0;
    let mut number = 0;
    let mut fates = Vec::new();
    for id in 0..count {
        credit = scheme.credit_after_source(SymbolId(id), credit, &iid(0.1), &HORIZON);
        scheme.on_source_sent(number, SymbolId(id));
        fates.push((number, Fate::Source(id)));
        number += 1;
        while credit >= 1.0 {
            credit -= 1.0;
            let plan = scheme
                .plan_repair(RepairReason::Proactive, &range(0, id + 1))
                .unwrap();
            scheme.on_repair_sent(number, RepairReason::Proactive, &plan);
            fates.push((number, Fate::Repair(plan.window)));
            number += 1;
        }
    }
    for (number, fate) in fates {
        if lost(fate) {
            scheme.on_packet_lost(number);
        } else {
            scheme.on_packet_acked(number);
        }
    }
    scheme.fec_window()
}

#[test]
fn dfec_closes_groups_without_parity_when_the_fec_window_is_full() {
    let mut scheme = DfecScheme::new(
        DfecConfig {
            initial_fec_window: 2,
            min_fec_window: 2,
            ..DfecConfig::default()
        },
        RepairConfig::default(),
    );
    let mut credit = 0.0;
    let mut parities = 0;
    for id in 0..50 {
        credit = scheme.credit_after_source(SymbolId(id), credit, &iid(0.1), &HORIZON);
        while credit >= 1.0 {
            credit -= 1.0;
            let plan = scheme
                .plan_repair(RepairReason::Proactive, &range(0, id + 1))
                .unwrap();
            scheme.on_repair_sent(1000 + parities, RepairReason::Proactive, &plan);
            parities += 1;
        }
    }
    // Five groups closed, but only two parities may be in flight.
    assert_eq!(parities, 2);
}

// ---- FECTCP (seed 004) ----

#[test]
fn fectcp_repairs_span_the_whole_block_and_go_on_until_it_is_recovered() {
    let mut scheme = WholeBlockScheme::new(WholeBlockConfig::default(), 1000);
    assert_eq!(scheme.block_len(), 1000);
    let estimate = iid(0.3);
    assert_eq!(
        scheme.credit_after_source(SymbolId(5), 0.0, &estimate, &HORIZON),
        0.0,
        "no proactive repair: the source symbols go first"
    );
    assert_eq!(
        scheme.tail_repairs(700, SymbolId(700), &estimate),
        UNTIL_RECOVERED
    );
    assert_eq!(scheme.tail_repairs(0, SymbolId(700), &estimate), 0);
    for reason in [RepairReason::Tail, RepairReason::Probe] {
        let plan = scheme.plan_repair(reason, &range(0, 700)).unwrap();
        assert_eq!(plan.window, Window::new(SymbolId(0), 700));
    }
    // The cumulative acknowledgement trims what the receiver has.
    let plan = scheme
        .plan_repair(RepairReason::Tail, &range(120, 700))
        .unwrap();
    assert_eq!(plan.window, Window::new(SymbolId(120), 580));
    // The next block waits for this one's BACK (decoded-through at its end).
    assert!(scheme.may_send_source(SymbolId(999), SymbolId(0)));
    assert!(!scheme.may_send_source(SymbolId(1000), SymbolId(999)));
    assert!(scheme.may_send_source(SymbolId(1000), SymbolId(1000)));
    let plan = scheme
        .plan_repair(RepairReason::Tail, &range(1000, 1010))
        .unwrap();
    assert_eq!(plan.window, Window::new(SymbolId(1000), 10));
}

#[test]
fn fectcp_recovers_the_block_from_any_sufficient_subset() {
    const K: u64 = 300;
    const SIZE: usize = 32;
    let symbol = |i: u64| -> Vec<u8> { (0..SIZE).map(|j| (i * 7 + j as u64 * 13) as u8).collect() };
    for seed in 1..=8u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let config = |max_window| EncoderConfig {
            symbol_size: SIZE,
            max_window,
            code: Code::default(),
        };
        let mut encoder = Encoder::new(config(K as u16)).unwrap();
        let mut decoder = Decoder::new(DecoderConfig {
            symbol_size: SIZE,
            max_window: K as u16,
            code: Code::default(),
        })
        .unwrap();
        for i in 0..K {
            encoder.push(&symbol(i)).unwrap();
        }
        let mut scheme = WholeBlockScheme::new(WholeBlockConfig::default(), K as u16);
        // Sources and twice as many repairs, shuffled; the receiver gets
        // the first K + 1 of them, whatever mix that is.
        let mut arrivals: Vec<Option<u64>> = (0..K).map(Some).collect();
        arrivals.extend((0..K).map(|_| None));
        arrivals.shuffle(&mut rng);
        let mut key = 0u16;
        for arrival in arrivals.into_iter().take(K as usize + 1) {
            match arrival {
                Some(i) => match decoder.receive_source(SymbolId(i), &symbol(i)) {
                    // Already solved from earlier repairs.
                    Ok(_) | Err(DecodeError::Duplicate(_)) => {}
                    Err(e) => panic!("seed {seed}: {e}"),
                },
                None => {
                    let plan = scheme
                        .plan_repair(RepairReason::Tail, &range(0, K))
                        .unwrap();
                    assert_eq!(plan.window, Window::new(SymbolId(0), K as u16));
                    let mut data = vec![0u8; SIZE];
                    encoder
                        .repair_with(plan.code, plan.window, RepairKey(key), &mut data)
                        .unwrap();
                    decoder
                        .receive_repair(plan.window, RepairKey(key), &data)
                        .unwrap();
                    key += 1;
                }
            }
        }
        assert_eq!(decoder.missing(), 0, "seed {seed}");
        for i in 0..K {
            assert_eq!(
                decoder.symbol(SymbolId(i)),
                Some(&symbol(i)[..]),
                "seed {seed}"
            );
        }
    }
}
