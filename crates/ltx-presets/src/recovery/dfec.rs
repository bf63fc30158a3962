//! XOR parity steered towards a target residual loss: the redundancy of
//! TCP-dFEC (seed 002).
//!
//! Source symbols are sent in groups of `w`; each group is followed by one
//! XOR parity (every coefficient 1), which repairs one loss in the group.
//! The FEC ratio `r = 1/w` is steered: over each period of resolved source
//! symbols the scheme counts the *residual* losses, those FEC did not
//! repair (a group that lost two symbols, or one and its parity, or that
//! went without parity), and compares their rate with the target:
//! `r ← r·(1+δ)` above it, `r ← r·(1−δ)` at or below it.
//!
//! The seed makes FEC respect the congestion window: the window is reduced
//! (halved) when FEC is lost or fails and increased (+1) when it succeeds.
//! ltx's controllers know nothing of FEC, so the scheme applies that rule to
//! a window of its own, the parity packets it lets be in flight, and every
//! parity also waits for room in the connection's congestion window like
//! any packet. A group closed while that FEC window is full goes without
//! parity. The window is halved at most once per flight of parities (as TCP
//! reduces once per window of data): a loss or failure of a parity sent
//! before the last reduction does not reduce again.
//!
//! The scheme knows each group's fate from the acknowledgement ranges: the
//! sender records which packet carried which source symbol and which
//! parity, and the ranges say which arrived.
//!
//! # Deviations
//!
//! - Where XOR fails, TCP-dFEC falls back on TCP's retransmission. ltx
//!   never retransmits: what the parity did not repair is answered by the
//!   default policy's reactive repair (random linear combinations over the
//!   peer's gaps, each of which stands in for any missing symbol). The
//!   peer's deficit is first reduced by one for each group that lost a
//!   symbol and still has its parity to come, so that feedback does not
//!   race the parity.
//! - The seed's period `T` and its numbers (target, δ) are not given in its
//!   material; [`DfecConfig::default`] gives ltx's choices, and the period
//!   is counted in resolved source symbols rather than in time.

use std::collections::{BTreeMap, VecDeque};

use ltx_coding::codec::Code;
use ltx_coding::{SymbolId, Window};

use ltx_proto::recovery::{gap_window, Feedback, Horizon, RepairPlan, RepairRange, RepairReason};
use ltx_proto::recovery::{LossEstimate, RedundancyScheme, SchemeFactory, SlidingWindow};
use ltx_proto::{RepairConfig, Setting};

/// The configuration of a [`DfecScheme`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DfecConfig {
    /// The residual loss rate the ratio is steered towards (default 0.02).
    pub target_residual: f64,
    /// The step δ of each period's `1 ± δ` (default 0.1).
    pub delta: f64,
    /// The ratio at the start (default 0.1: one parity per 10 symbols).
    pub initial_ratio: f64,
    /// The smallest ratio (default 1/64).
    pub min_ratio: f64,
    /// The largest ratio (default 1: a parity per symbol, a copy).
    pub max_ratio: f64,
    /// Resolved source symbols per steering period (default 128).
    pub period: u64,
    /// Parity packets allowed in flight at the start (default 16).
    pub initial_fec_window: u64,
    /// The FEC window never falls below this (default 2).
    pub min_fec_window: u64,
    /// The FEC window never grows past this (default 8192).
    pub max_fec_window: u64,
}

impl Default for DfecConfig {
    fn default() -> Self {
        DfecConfig {
            target_residual: 0.02,
            delta: 0.1,
            initial_ratio: 0.1,
            min_ratio: 1.0 / 64.0,
            max_ratio: 1.0,
            period: 128,
            initial_fec_window: 16,
            min_fec_window: 2,
            max_fec_window: 8192,
        }
    }
}

impl SchemeFactory for DfecConfig {
    fn build(&self, redundancy: &RepairConfig, _peer_window: u16) -> Box<dyn RedundancyScheme> {
        Box::new(DfecScheme::new(*self, *redundancy))
    }

    fn name(&self) -> &'static str {
        "dfec"
    }

    /// The reactive margins of the answers that make up what XOR misses;
    /// its own ratio is steered by [`DfecConfig`].
    fn reads(&self, setting: Setting) -> bool {
        setting == Setting::ReactiveMargin
    }
}

/// Where a group's parity stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parity {
    /// None was, or will be, sent: the FEC window was full.
    Unprotected,
    /// Owed: waiting to be sent.
    Owed,
    InFlight(u64),
    Delivered(u64),
    Lost(u64),
}

/// One group of consecutive source symbols and its parity.
#[derive(Debug, Clone, Copy)]
struct Group {
    len: u64,
    closed: bool,
    resolved: u64,
    lost: u64,
    parity: Parity,
}

/// What one of the scheme's packets carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carried {
    /// A source symbol.
    Source(u64),
    /// The parity of the group starting at this symbol.
    Parity(u64),
}

/// How a group's FEC fared, once all its packets are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupOutcome {
    /// The parity arrived and at most one symbol was lost: the group
    /// decoded without feedback.
    Succeeded,
    /// The parity was lost.
    ParityLost,
    /// The parity arrived but two or more symbols were lost.
    Failed,
    /// The group had no parity.
    Unprotected,
}

/// TCP-dFEC's redundancy; see the module docs.
#[derive(Debug)]
pub struct DfecScheme {
    config: DfecConfig,
    /// For the reactive answer.
    policy: SlidingWindow,
    ratio: f64,
    fec_window: u64,
    parity_in_flight: u64,
    /// A reduction is taken only for a parity sent after this packet.
    recovery_point: Option<u64>,
    newest_parity: Option<u64>,
    /// Groups by first symbol; the last may be open.
    groups: BTreeMap<u64, Group>,
    open: Option<u64>,
    /// Closed groups whose parity is owed, oldest first.
    owed: VecDeque<Window>,
    packets: BTreeMap<u64, Carried>,
    period_sources: u64,
    period_residual: u64,
    outcomes: VecDeque<GroupOutcome>,
}

impl DfecScheme {
    /// A TCP-dFEC scheme; `redundancy` configures its reactive answer.
    pub fn new(config: DfecConfig, redundancy: RepairConfig) -> DfecScheme {
        DfecScheme {
            config,
            policy: SlidingWindow::new(redundancy),
            ratio: config
                .initial_ratio
                .clamp(config.min_ratio, config.max_ratio),
            fec_window: config
                .initial_fec_window
                .clamp(config.min_fec_window.max(1), config.max_fec_window),
            parity_in_flight: 0,
            recovery_point: None,
            newest_parity: None,
            groups: BTreeMap::new(),
            open: None,
            owed: VecDeque::new(),
            packets: BTreeMap::new(),
            period_sources: 0,
            period_residual: 0,
            outcomes: VecDeque::new(),
        }
    }

    /// The FEC ratio now: parity symbols per source symbol.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// Source symbols per XOR group at the current ratio.
    pub fn group_len(&self) -> u64 {
        ((1.0 / self.ratio).round() as u64).clamp(1, u64::from(u16::MAX))
    }

    /// Parity packets allowed in flight now.
    pub fn fec_window(&self) -> u64 {
        self.fec_window
    }

    /// The outcomes of the groups resolved since the last call, oldest
    /// first, for traces and tests.
    pub fn drain_outcomes(&mut self) -> impl Iterator<Item = GroupOutcome> + '_ {
        self.outcomes.drain(..)
    }

    fn close_open_group(&mut self) -> bool {
        let Some(first) = self.open.take() else {
            return false;
        };
        let room = self.parity_in_flight + (self.owed.len() as u64) < self.fec_window;
        let Some(group) = self.groups.get_mut(&first) else {
            return false;
        };
        group.closed = true;
        if room {
            group.parity = Parity::Owed;
            self.owed
                .push_back(Window::new(SymbolId(first), group.len as u16));
        } else {
            group.parity = Parity::Unprotected;
        }
        self.settle(first);
        room
    }

    fn group_of(&self, id: u64) -> Option<u64> {
        let (&first, group) = self.groups.range(..=id).next_back()?;
        (id < first + group.len).then_some(first)
    }

    /// Judges the group at `first` if all its packets are resolved.
    fn settle(&mut self, first: u64) {
        let Some(group) = self.groups.get(&first).copied() else {
            return;
        };
        if !group.closed || group.resolved < group.len {
            return;
        }
        let (outcome, parity_number) = match group.parity {
            Parity::Owed | Parity::InFlight(_) => return,
            Parity::Unprotected => (GroupOutcome::Unprotected, None),
            Parity::Lost(n) => (GroupOutcome::ParityLost, Some(n)),
            Parity::Delivered(n) if group.lost >= 2 => (GroupOutcome::Failed, Some(n)),
            Parity::Delivered(n) => (GroupOutcome::Succeeded, Some(n)),
        };
        self.groups.remove(&first);
        let residual = match outcome {
            GroupOutcome::Succeeded => 0,
            _ => group.lost,
        };
        match (outcome, parity_number) {
            (GroupOutcome::Succeeded, _) => {
                self.fec_window = (self.fec_window + 1).min(self.config.max_fec_window);
            }
            (GroupOutcome::ParityLost | GroupOutcome::Failed, Some(n))
                if self.recovery_point.is_none_or(|point| n > point) =>
            {
                self.fec_window = (self.fec_window / 2).max(self.config.min_fec_window.max(1));
                self.recovery_point = self.newest_parity;
            }
            _ => {}
        }
        self.outcomes.push_back(outcome);
        if self.outcomes.len() > 1024 {
            self.outcomes.pop_front();
        }
        self.period_sources += group.len;
        self.period_residual += residual;
        if self.period_sources >= self.config.period.max(1) {
            let rate = self.period_residual as f64 / self.period_sources as f64;
            let step = if rate > self.config.target_residual {
                1.0 + self.config.delta
            } else {
                1.0 - self.config.delta
            };
            self.ratio = (self.ratio * step).clamp(self.config.min_ratio, self.config.max_ratio);
            self.period_sources = 0;
            self.period_residual = 0;
        }
    }

    fn resolve(&mut self, number: u64, delivered: bool) {
        let Some(carried) = self.packets.remove(&number) else {
            return;
        };
        match carried {
            Carried::Source(id) => {
                let Some(first) = self.group_of(id) else {
                    return;
                };
                if let Some(group) = self.groups.get_mut(&first) {
                    group.resolved += 1;
                    if !delivered {
                        group.lost += 1;
                    }
                }
                self.settle(first);
            }
            Carried::Parity(first) => {
                self.parity_in_flight = self.parity_in_flight.saturating_sub(1);
                if let Some(group) = self.groups.get_mut(&first) {
                    group.parity = if delivered {
                        Parity::Delivered(number)
                    } else {
                        Parity::Lost(number)
                    };
                }
                self.settle(first);
            }
        }
    }
}

impl RedundancyScheme for DfecScheme {
    fn name(&self) -> &'static str {
        "dfec"
    }

    fn proactive_ratio(&self, _estimate: &LossEstimate, _horizon: &Horizon) -> f64 {
        self.ratio
    }

    fn credit_after_source(
        &mut self,
        id: SymbolId,
        credit: f64,
        _estimate: &LossEstimate,
        _horizon: &Horizon,
    ) -> f64 {
        let first = *self.open.get_or_insert(id.0);
        let group = self.groups.entry(first).or_insert(Group {
            len: 0,
            closed: false,
            resolved: 0,
            lost: 0,
            parity: Parity::Owed,
        });
        group.len = id.0 + 1 - first;
        if group.len >= self.group_len() && self.close_open_group() {
            credit + 1.0
        } else {
            credit
        }
    }

    fn reactive_repairs(&mut self, feedback: &Feedback, estimate: &LossEstimate) -> u64 {
        // A group that lost a symbol and whose parity is still to come will
        // repair one loss itself: feedback answers only what XOR cannot, as
        // the seed retransmits only when FEC has failed.
        let parity_to_come = self
            .groups
            .values()
            .filter(|g| g.lost > 0 && matches!(g.parity, Parity::Owed | Parity::InFlight(_)))
            .count() as u64;
        let deficit = feedback.deficit.saturating_sub(parity_to_come);
        self.policy
            .reactive_repairs(deficit, feedback.repairs_in_flight, estimate)
    }

    fn tail_repairs(&self, _unconfirmed: u64, _next: SymbolId, _estimate: &LossEstimate) -> u64 {
        // The parities still owed, and one for the group the tail cuts short.
        self.owed.len() as u64 + u64::from(self.open.is_some())
    }

    fn plan_repair(&mut self, reason: RepairReason, range: &RepairRange) -> Option<RepairPlan> {
        if matches!(reason, RepairReason::Proactive | RepairReason::Tail) {
            if self.owed.is_empty() && reason == RepairReason::Tail {
                self.close_open_group();
            }
            while let Some(window) = self.owed.pop_front() {
                if window.first >= range.oldest {
                    return Some(RepairPlan {
                        window,
                        code: Code::XorParity,
                    });
                }
                // The peer has the group's start: it needs no parity.
                if let Some(group) = self.groups.get_mut(&window.first.0) {
                    group.parity = Parity::Unprotected;
                }
                self.settle(window.first.0);
            }
        }
        Some(RepairPlan {
            window: gap_window(range)?,
            code: Code::default(),
        })
    }

    fn on_source_sent(&mut self, number: u64, id: SymbolId) {
        self.packets.insert(number, Carried::Source(id.0));
    }

    fn on_repair_sent(&mut self, number: u64, _reason: RepairReason, plan: &RepairPlan) {
        if plan.code != Code::XorParity {
            return;
        }
        let first = plan.window.first.0;
        if let Some(group) = self.groups.get_mut(&first) {
            group.parity = Parity::InFlight(number);
            self.parity_in_flight += 1;
            self.newest_parity = Some(number);
            self.packets.insert(number, Carried::Parity(first));
        }
    }

    fn on_packet_acked(&mut self, number: u64) {
        self.resolve(number, true);
    }

    fn on_packet_lost(&mut self, number: u64) {
        self.resolve(number, false);
    }
}
