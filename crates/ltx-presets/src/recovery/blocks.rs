//! Fixed blocks with proactive and reactive repair: the redundancy of
//! LT-TCP (seed 000) and Coded TCP (seed 003).
//!
//! Source symbols fall into aligned blocks of `k` (`[j·k, (j+1)·k)`). When a
//! block's last source symbol is sent, the block earns its proactive repairs
//! (LT-TCP's PFEC), each a random linear combination over exactly that
//! block. When feedback shows a block short of equations, reactive repairs
//! over that block follow (LT-TCP's RFEC, Coded TCP's "additional coded
//! packets"). A block decodes once `k` of its source or repair symbols
//! arrive.
//!
//! # Feedback
//!
//! LT-TCP's receiver tells the sender how many packets of a block it lacks.
//! ltx's acknowledgement carries the packet numbers received and the
//! decoder's state (first unknown symbol, unknowns, rank), not a count per
//! block, so the scheme keeps the count itself: it records which block each
//! of its packets served, and the acknowledgement ranges tell it which
//! arrived. A block whose source symbols have all been acknowledged or
//! declared lost, with fewer than `k` packets delivered, lacks
//! `k − delivered`; it is answered with
//! `⌈(lack − (1−p)·in_flight)·(1 + margin)/(1−p)⌉ + extra` repairs, the
//! default policy's reactive formula applied per block. The decoder's own
//! deficit is the arbiter: when it reports none, nothing is owed.
//!
//! # Deviations
//!
//! - The last block of a transfer is usually short: its proactive repairs
//!   (sized like a block's, for the symbols it holds) go with the tail, over
//!   the symbols it has.
//! - A repair never covers symbols the peer has decoded: once the
//!   acknowledgement passes the start of a block, its repairs cover the rest
//!   of it, which is the same equation to the receiver.
//! - Probe time-outs send repairs over the unfinished blocks in turn, oldest
//!   first.

use std::collections::{BTreeMap, VecDeque};

use ltx_coding::codec::Code;
use ltx_coding::SymbolId;

use ltx_proto::recovery::{
    window_between, Feedback, Horizon, RepairPlan, RepairRange, RepairReason,
};
use ltx_proto::recovery::{LossEstimate, RedundancyScheme, SchemeFactory, SlidingWindow};
use ltx_proto::{RepairConfig, Setting};

/// How a block's proactive repairs are sized from the loss estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provisioning {
    /// The expected loss: `k·p/(1−p)` repairs per block, so that on average
    /// `k` packets arrive (Coded TCP's `1/(1−p)` redundancy); feedback makes
    /// up the half of the blocks that fall short.
    Expected,
    /// The default policy's normal approximation over a window of one
    /// block: enough that a block needs reactive repair with probability
    /// about the configured `target_residual` (LT-TCP's PFEC, sized so that
    /// RFEC is the exception).
    Quantile,
}

/// The configuration of a [`BlockScheme`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockConfig {
    /// Source symbols per block (k), at least 1.
    pub source: u16,
    /// How proactive repairs are sized.
    pub provisioning: Provisioning,
}

impl BlockConfig {
    /// Coded TCP (seed 003): blocks of 32 source packets, redundancy from
    /// the estimated loss rate, extra coded packets on feedback.
    pub const CODED_TCP: BlockConfig = BlockConfig {
        source: 32,
        provisioning: Provisioning::Expected,
    };

    /// LT-TCP (seed 000): PFEC sized from the loss estimate so that a block
    /// rarely needs RFEC. The seed's material does not give its block size;
    /// 64 source symbols is ltx's choice, a block that a round trip of most
    /// paths spans many times over.
    pub const LT_TCP: BlockConfig = BlockConfig {
        source: 64,
        provisioning: Provisioning::Quantile,
    };
}

impl SchemeFactory for BlockConfig {
    fn build(&self, redundancy: &RepairConfig, _peer_window: u16) -> Box<dyn RedundancyScheme> {
        Box::new(BlockScheme::new(*self, *redundancy))
    }

    fn name(&self) -> &'static str {
        "blocks"
    }

    /// The reactive margins and the ratio's cap; the fixed windows'
    /// residual where blocks are sized for a quantile (LT-TCP's).
    fn reads(&self, setting: Setting) -> bool {
        match setting {
            Setting::TargetResidual => self.provisioning == Provisioning::Quantile,
            Setting::MaxRatio | Setting::ReactiveMargin => true,
            _ => false,
        }
    }
}

/// What one of the scheme's packets carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carried {
    Source,
    Repair,
}

/// The sender's count of one block's packets.
#[derive(Debug, Clone, Copy, Default)]
struct Block {
    /// Source symbols sent in it.
    sources: u64,
    sources_in_flight: u64,
    repairs_in_flight: u64,
    /// Packets of it (source or repair) acknowledged.
    delivered: u64,
}

/// Fixed-block redundancy (LT-TCP, Coded TCP); see the module docs.
#[derive(Debug)]
pub struct BlockScheme {
    config: BlockConfig,
    /// The default policy, for the quantile sizing and the reactive formula.
    policy: SlidingWindow,
    /// Blocks not yet decoded by the peer, by index.
    blocks: BTreeMap<u64, Block>,
    /// Packets in flight: their block and what they carried.
    packets: BTreeMap<u64, (u64, Carried)>,
    /// Reactive repairs owed, per block, oldest block first.
    owed: VecDeque<(u64, u64)>,
    /// The block the next probe covers.
    probe_cursor: u64,
}

impl BlockScheme {
    /// A block scheme; `redundancy` supplies the target residual, the cap on
    /// the ratio and the reactive margin.
    pub fn new(config: BlockConfig, redundancy: RepairConfig) -> BlockScheme {
        BlockScheme {
            config: BlockConfig {
                source: config.source.max(1),
                ..config
            },
            policy: SlidingWindow::new(redundancy),
            blocks: BTreeMap::new(),
            packets: BTreeMap::new(),
            owed: VecDeque::new(),
            probe_cursor: 0,
        }
    }

    /// Source symbols per block.
    pub fn block_len(&self) -> u64 {
        u64::from(self.config.source)
    }

    fn block_index(&self, id: u64) -> u64 {
        id / self.block_len()
    }

    /// The part of block `index` a repair may cover now: from its start or
    /// the peer's first unknown symbol, to its end or the next symbol.
    fn plan_block(&self, index: u64, range: &RepairRange) -> Option<RepairPlan> {
        let first = index * self.block_len();
        let end = (first + self.block_len()).min(range.next.0);
        let window = window_between(first.max(range.oldest.0), end)?;
        Some(RepairPlan {
            window,
            code: Code::default(),
        })
    }

    fn ratio(&self, estimate: &LossEstimate) -> f64 {
        match self.config.provisioning {
            Provisioning::Expected => {
                let p = estimate.rate;
                if p.is_nan() || p <= 0.0 {
                    return 0.0;
                }
                let p = p.min(0.95);
                (p / (1.0 - p)).min(self.policy.config().max_ratio().max(0.0))
            }
            Provisioning::Quantile => self.policy.proactive_ratio_over(estimate, self.block_len()),
        }
    }

    fn forget_decoded(&mut self, decoded_through: SymbolId) {
        let first_open = self.block_index(decoded_through.0);
        self.blocks = self.blocks.split_off(&first_open);
        self.owed.retain(|&(index, _)| index >= first_open);
    }
}

impl RedundancyScheme for BlockScheme {
    fn name(&self) -> &'static str {
        "blocks"
    }

    fn proactive_ratio(&self, estimate: &LossEstimate, _horizon: &Horizon) -> f64 {
        self.ratio(estimate)
    }

    fn credit_after_source(
        &mut self,
        id: SymbolId,
        credit: f64,
        estimate: &LossEstimate,
        _horizon: &Horizon,
    ) -> f64 {
        if (id.0 + 1).is_multiple_of(self.block_len()) {
            credit + self.block_len() as f64 * self.ratio(estimate)
        } else {
            credit
        }
    }

    fn reactive_repairs(&mut self, feedback: &Feedback, estimate: &LossEstimate) -> u64 {
        self.forget_decoded(feedback.decoded_through);
        self.owed.clear();
        if feedback.deficit == 0 {
            return 0;
        }
        let block_len = self.block_len();
        let first_open = self.block_index(feedback.decoded_through.0);
        let mut total = 0u64;
        for (&index, block) in &self.blocks {
            if block.sources_in_flight > 0 || block.sources == 0 {
                continue;
            }
            // The block holding the peer's first unknown symbol is known to
            // lack; others are judged by what arrived of them.
            let known = if index == first_open {
                let decoded = feedback.decoded_through.0 - index * block_len;
                block.delivered.max(decoded)
            } else {
                block.delivered
            };
            let lack = block.sources.saturating_sub(known);
            if lack == 0 && index != first_open {
                continue;
            }
            let need = self
                .policy
                .reactive_repairs(lack.max(1), block.repairs_in_flight, estimate);
            if need > 0 {
                self.owed.push_back((index, need));
                total = total.saturating_add(need);
            }
        }
        total
    }

    fn tail_repairs(&self, _unconfirmed: u64, next: SymbolId, estimate: &LossEstimate) -> u64 {
        let partial = next.0 % self.block_len();
        if partial == 0 {
            // The last block was whole and earned its repairs as it closed.
            return 0;
        }
        let ratio = self.ratio(estimate);
        if ratio <= 0.0 {
            return 0;
        }
        ((partial as f64 * ratio).ceil() as u64).max(1)
    }

    fn plan_repair(&mut self, reason: RepairReason, range: &RepairRange) -> Option<RepairPlan> {
        let first_open = self.block_index(range.oldest.0);
        let newest = self.block_index(range.next.0.checked_sub(1)?);
        let index = match reason {
            RepairReason::Proactive | RepairReason::Tail => newest,
            RepairReason::Reactive => {
                while self.owed.front().is_some_and(|&(i, _)| i < first_open) {
                    self.owed.pop_front();
                }
                match self.owed.front_mut() {
                    Some((index, count)) => {
                        let index = *index;
                        *count -= 1;
                        if *count == 0 {
                            self.owed.pop_front();
                        }
                        index
                    }
                    // Owed beyond what the blocks account for (the sender
                    // doubles its answer when it is idle): the oldest gap.
                    None => first_open,
                }
            }
            RepairReason::Probe => {
                let reported = range.peer_end.0.clamp(range.oldest.0, range.next.0);
                let last = if reported > range.oldest.0 {
                    self.block_index(reported - 1)
                } else {
                    newest
                };
                if !(first_open..=last).contains(&self.probe_cursor) {
                    self.probe_cursor = first_open;
                }
                let index = self.probe_cursor;
                self.probe_cursor += 1;
                index
            }
        };
        self.plan_block(index, range)
    }

    fn on_source_sent(&mut self, number: u64, id: SymbolId) {
        let index = self.block_index(id.0);
        let block = self.blocks.entry(index).or_default();
        block.sources += 1;
        block.sources_in_flight += 1;
        self.packets.insert(number, (index, Carried::Source));
    }

    fn on_repair_sent(&mut self, number: u64, _reason: RepairReason, plan: &RepairPlan) {
        let index = self.block_index(plan.window.first.0);
        if let Some(block) = self.blocks.get_mut(&index) {
            block.repairs_in_flight += 1;
            self.packets.insert(number, (index, Carried::Repair));
        }
    }

    fn on_packet_acked(&mut self, number: u64) {
        if let Some((index, carried)) = self.packets.remove(&number) {
            if let Some(block) = self.blocks.get_mut(&index) {
                block.delivered += 1;
                leave_flight(block, carried);
            }
        }
    }

    fn on_packet_lost(&mut self, number: u64) {
        if let Some((index, carried)) = self.packets.remove(&number) {
            if let Some(block) = self.blocks.get_mut(&index) {
                leave_flight(block, carried);
            }
        }
    }
}

fn leave_flight(block: &mut Block, carried: Carried) {
    match carried {
        Carried::Source => block.sources_in_flight = block.sources_in_flight.saturating_sub(1),
        Carried::Repair => block.repairs_in_flight = block.repairs_in_flight.saturating_sub(1),
    }
}
