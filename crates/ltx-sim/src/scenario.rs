//! Scenarios: a path, a transfer and a seed in; the metrics the benchmarks
//! report out (`docs/results.md`, "Terms").

use std::time::{Duration, Instant};

use ltx_link::{Aqm, Jitter, LinkConfig, LossModel, Outage, Rate};
use ltx_proto::protection::{
    EarlyDataRecord, SecurityConfig, StaticKeypair, UnixMillis, WallClock, EARLY_DATA_AHEAD,
    REPLAY_WINDOW, TAG_LEN,
};
use ltx_proto::wire::{PacketNumber, SymbolId, TruncatedPacketNumber, TruncatedSymbolId};
use ltx_proto::{Connection, TransportConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::metrics::{ideal_completion, jain, percentile};
use crate::transfer::TransferNode;
use crate::units::QueueSpec;
use crate::{Access, Network, NodeId};

/// UDP payload bytes of a full ltx packet, for the ideal time's payload
/// fraction.
const WIRE_PACKET: f64 = 1400.0;

/// How many times faster than the bottleneck each flow's access links are,
/// where several flows share it: a host's interface, not a second
/// bottleneck. A burst then reaches the bottleneck spread over a tenth of
/// the time the bottleneck takes to send it, interleaved with the bursts
/// other flows send at the same moment.
pub const ACCESS_SPEEDUP: u64 = 10;

/// One simulated experiment.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Mean random loss rate on the data direction.
    pub loss: f64,
    /// Mean loss burst, packets (≤ 1: uncorrelated).
    pub burst: f64,
    /// Bytes each flow transfers.
    pub size: u64,
    /// The one seed everything random derives from.
    pub seed: u64,
    /// Flows sharing the bottleneck. With more than one, each reaches it
    /// through access links of its own, [`ACCESS_SPEEDUP`] times its rate.
    pub flows: usize,
    /// Bottleneck queue.
    pub queue: QueueSpec,
    /// Whether the bottleneck marks ECN (CoDel) instead of only dropping.
    pub ecn: bool,
    /// Whether to record trace events.
    pub trace: bool,
    /// The transport configuration of every endpoint, unless `per_flow`
    /// gives flows their own.
    pub transport: TransportConfig,
    /// Transport configurations of the flows' endpoints, cycled over the
    /// flows (flow `i` runs `per_flow[i % len]`, so a mix of controllers
    /// shares one bottleneck); empty: every flow runs `transport`.
    pub per_flow: Vec<TransportConfig>,
    /// Faults beyond loss, on both directions.
    pub faults: Faults,
    /// Simulated time after which an unfinished transfer counts as "did
    /// not complete"; `None`: 20 × T* + 60 s, as the seed's tables use.
    pub deadline: Option<Duration>,
}

/// Impairments beyond random loss, for robustness scenarios.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Random extra delay (with or without reordering), both directions.
    pub jitter: Option<Jitter>,
    /// Probability that a packet is delivered twice, both directions.
    pub duplicate: f64,
    /// Probability that a packet has a bit flipped, both directions.
    pub corrupt: f64,
    /// Times the path is down (both directions), from the start.
    pub outages: Vec<Outage>,
    /// Mean random loss of the reverse (acknowledgement) direction.
    pub reverse_loss: f64,
}

impl Default for Scenario {
    fn default() -> Scenario {
        Scenario {
            rate_bps: 50_000_000,
            rtt: Duration::from_millis(600),
            loss: 0.0,
            burst: 1.0,
            size: 10_000_000,
            seed: 1,
            flows: 1,
            queue: QueueSpec::Bdp(1.0),
            ecn: false,
            trace: false,
            transport: TransportConfig::default(),
            per_flow: Vec::new(),
            faults: Faults::default(),
            deadline: None,
        }
    }
}

/// One flow's figures.
#[derive(Debug, Clone)]
pub struct FlowResult {
    /// Seconds from the first packet to the last byte read, if it finished.
    pub completion_s: Option<f64>,
    /// Bytes per second over the whole transfer, bits.
    pub goodput_bps: f64,
    /// Bytes the sender put on the wire / bytes delivered.
    pub overhead: f64,
    /// Bytes both ends put on the wire / bytes delivered.
    pub overhead_total: f64,
    /// Whether every byte arrived intact.
    pub verified: bool,
    /// Bytes the receiver read, all of them or as many as arrived before
    /// the run ended.
    pub delivered: u64,
    /// Why the connection closed early, if it did.
    pub error: Option<String>,
    /// Source symbols decoded from repair symbols at the receiver.
    pub symbols_repaired: u64,
    /// Repair symbols the sender sent.
    pub repair_sent: u64,
    /// Source symbols the sender sent.
    pub source_sent: u64,
    /// The sender's final loss estimate.
    pub loss_estimate: f64,
    /// The loss the receiver saw: the sender's packets that never arrived,
    /// from the gaps in their numbers.
    pub incoming_loss: f64,
    /// Repair symbols sent proactively, reactively, for the tail and as
    /// probes; repairs the receiver found stale, and repairs that arrived
    /// with nothing to solve.
    pub repair_kinds: [u64; 6],
    /// Delivery delay minus one-way delay, per sent piece, in ms.
    pub delays_ms: Vec<f64>,
}

/// A scenario's figures.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    /// Completion of the slowest flow, seconds (`None` if one did not
    /// finish).
    pub completion_s: Option<f64>,
    /// The ideal completion T*, seconds.
    pub ideal_s: f64,
    /// completion / ideal.
    pub ratio: Option<f64>,
    /// All flows' delivered bytes over the last flow's completion time,
    /// bits/s (0 if a flow did not complete).
    pub goodput_bps: f64,
    /// Goodput / (C·(1−p)).
    pub efficiency: f64,
    /// Sender wire bytes / delivered bytes, over all flows.
    pub overhead: f64,
    /// All wire bytes / delivered bytes.
    pub overhead_total: f64,
    /// Median delivery delay minus one-way delay, ms.
    pub delay_p50_ms: f64,
    /// 99th percentile of it, ms.
    pub delay_p99_ms: f64,
    /// 95th percentile of the bottleneck's queueing delay, ms.
    pub queue_delay_p95_ms: f64,
    /// Packets the bottleneck queue dropped / packets offered to it.
    pub queue_loss: f64,
    /// When the bottleneck's queue dropped a packet (full, or by its AQM),
    /// seconds from the start, oldest first.
    pub queue_drops_s: Vec<f64>,
    /// Loss the forward bottleneck applied / packets offered.
    pub random_loss: f64,
    /// Whether every flow delivered exactly the bytes sent.
    pub verified: bool,
    /// Jain's index over flow goodputs (flows > 1).
    pub jain: Option<f64>,
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Simulated seconds.
    pub simulated_s: f64,
    /// The first sender's trace events with their times in seconds, when
    /// the scenario asked for them.
    pub trace: Vec<(f64, ltx_proto::TraceEvent)>,
    /// The first receiver's trace events, likewise.
    pub receiver_trace: Vec<(f64, ltx_proto::TraceEvent)>,
}

/// The wall clock both ends of a simulated flow read at its start, for
/// early data's replay check: any fixed time does.
const SIMULATED_UNIX_START: UnixMillis = UnixMillis(1_800_000_000_000);

/// The client and server of flow `seed`. Plain, unless `transport` has
/// early data on: early data is sealed under the handshake's first
/// message, so those ends are secured, with keys and entropy drawn from
/// the seed (a simulation is not secret, and must repeat), and the
/// server's record of first flights started before the flow, as on a
/// server that has been up a while.
fn endpoints(
    transport: &TransportConfig,
    epoch: Instant,
    seed: u64,
) -> Result<(Connection, Connection), ScenarioError> {
    if !transport.early_data() {
        let client = Connection::client(transport.clone(), epoch, seed)?;
        let server = Connection::server(transport.clone(), epoch, seed ^ 0xa5a5)?;
        return Ok((client, server));
    }
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x6b65_7973);
    let server_keys = StaticKeypair::from_entropy(rng.random());
    let mut client_security = SecurityConfig::new(StaticKeypair::from_entropy(rng.random()));
    client_security.clock = Some(WallClock::new(epoch, SIMULATED_UNIX_START));
    let server_public = server_keys.public();
    let mut server_security = SecurityConfig::new(server_keys);
    // A record takes no early data for `EARLY_DATA_AHEAD` after it starts.
    let before = 2 * EARLY_DATA_AHEAD;
    let started = epoch.checked_sub(before).unwrap_or(epoch);
    let started_unix = SIMULATED_UNIX_START.0 - u64::try_from(before.as_millis()).unwrap_or(0);
    server_security.early_data_record = Some(EarlyDataRecord::new(WallClock::new(
        started,
        UnixMillis(started_unix),
    )));
    let client = Connection::secure_client(
        transport.clone(),
        client_security,
        server_public,
        epoch,
        seed,
        rng.random(),
    )?;
    let server = Connection::secure_server(
        transport.clone(),
        server_security,
        epoch,
        seed ^ 0xa5a5,
        rng.random(),
    )?;
    Ok((client, server))
}

/// A scenario that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The link parameters are invalid.
    #[error(transparent)]
    Link(#[from] ltx_link::LinkConfigError),
    /// The transport configuration is invalid.
    #[error(transparent)]
    Transport(#[from] ltx_proto::ConfigError),
    /// No flows.
    #[error("a scenario needs at least one flow")]
    NoFlows,
}

impl Scenario {
    /// The transport configuration flow `flow` runs.
    pub fn transport_of(&self, flow: usize) -> &TransportConfig {
        match self.per_flow.len() {
            0 => &self.transport,
            n => &self.per_flow[flow % n],
        }
    }

    /// One flow's fair share of what the bottleneck carries, bits per
    /// second: `C·(1−p) / flows`.
    pub fn fair_share_bps(&self) -> f64 {
        self.rate_bps as f64 * (1.0 - self.loss) / self.flows.max(1) as f64
    }

    /// The stream bytes of a full source packet over its bytes on the wire,
    /// the `f` of T*: the packet number and symbol id as truncated with two
    /// round trips' worth of packets unacknowledged, a stream offset of
    /// four bytes, the plain layer's checksum.
    pub fn payload_fraction(&self) -> f64 {
        // The packet: header (flags, 4-byte connection id, packet number:
        // 5 bytes and the number; a Data packet has no version), the
        // SOURCE frame's type and symbol id (it runs to the end of the
        // packet), the symbol, the 4-byte checksum. The symbol spends 6
        // bytes on its STREAM frame header (type, stream id, 4-byte
        // offset; it runs to the end of the symbol).
        let datagram = u64::from(self.transport.max_datagram());
        let bdp_bytes = self.rate_bps as u128 * self.rtt.as_micros() / 8_000_000;
        let unacked = (2 * bdp_bytes / u128::from(datagram)).clamp(1, 1 << 40) as u64;
        let far = 1 << 41;
        let number =
            TruncatedPacketNumber::truncate(PacketNumber(far), Some(PacketNumber(far - unacked)));
        // A new symbol's id, the peer's decoder end at most a flight behind
        // and, as the sender must allow, a replay window ahead.
        let id = TruncatedSymbolId::truncate(
            SymbolId(far),
            SymbolId(far - unacked),
            SymbolId(far + REPLAY_WINDOW),
        );
        let header = 5.0 + number.len() as f64;
        let source_frame = 1.0 + id.len() as f64;
        let symbol = self.transport.symbol_size() as f64;
        // A sealed packet (early data needs the handshake's keys) ends in
        // its AEAD tag instead.
        let check = if self.transport.early_data() {
            TAG_LEN as f64
        } else {
            4.0
        };
        (symbol - 6.0) / (symbol + header + source_frame + check)
    }

    /// The ideal completion time T* of one flow's transfer (its fair share
    /// of the bottleneck). With early data on, the first flight carries the
    /// transfer's bytes and no handshake round trip comes first: T*₀, a
    /// one-way delay and the bytes at the erasure capacity.
    pub fn ideal(&self) -> Duration {
        let payload_fraction = self.payload_fraction();
        let share = self.rate_bps / self.flows.max(1) as u64;
        let ideal = ideal_completion(self.size, share, self.rtt, self.loss, payload_fraction);
        if self.transport.early_data() {
            ideal.saturating_sub(self.rtt)
        } else {
            ideal
        }
    }

    /// The two directions of the scenario's path (data, then
    /// acknowledgements), as the simulator runs them; an emulator given the
    /// same links runs the same path in real time.
    pub fn links(&self) -> (LinkConfig, LinkConfig) {
        let one_way = self.rtt / 2;
        let limit = self
            .queue
            .limit(self.rate_bps, self.rtt, WIRE_PACKET as usize);
        let forward = LinkConfig {
            delay: one_way,
            rate: Some(Rate(self.rate_bps)),
            queue: limit,
            aqm: self.ecn.then(Aqm::codel),
            loss: LossModel::bursty(self.loss, self.burst),
            jitter: self.faults.jitter,
            duplicate: self.faults.duplicate,
            corrupt: self.faults.corrupt,
            outages: self.faults.outages.clone(),
        };
        let reverse = LinkConfig {
            delay: one_way,
            rate: Some(Rate(self.rate_bps)),
            queue: limit,
            loss: LossModel::bursty(self.faults.reverse_loss, 1.0),
            jitter: self.faults.jitter,
            duplicate: self.faults.duplicate,
            corrupt: self.faults.corrupt,
            outages: self.faults.outages.clone(),
            aqm: None,
        };
        (forward, reverse)
    }

    /// Runs the scenario to completion (or to a bound of 20 × T* + 60 s of
    /// simulated time).
    pub fn run(&self) -> Result<ScenarioResult, ScenarioError> {
        if self.flows == 0 {
            return Err(ScenarioError::NoFlows);
        }
        let epoch = Instant::now();
        let mut pairs = Vec::new();
        for flow in 0..self.flows as u64 {
            let mut transport = self.transport_of(flow as usize).clone();
            transport.set_trace(true);
            let seed = self.seed.wrapping_mul(1000).wrapping_add(flow);
            let (client, server) = endpoints(&transport, epoch, seed)?;
            let payload_seed = seed ^ 0x0070_6179;
            let mut sender = TransferNode::sender(client, self.size, payload_seed);
            if transport.early_data() {
                sender.write_early();
            }
            let mut receiver = TransferNode::receiver(server, self.size, payload_seed);
            if self.trace && flow == 0 {
                sender.record_trace();
                receiver.record_trace();
            }
            let access = Access {
                delay: Duration::ZERO,
                rate: Some(Rate(self.rate_bps.saturating_mul(ACCESS_SPEEDUP))),
            };
            pairs.push((sender, receiver, access));
        }
        let (forward, reverse) = self.links();
        let (mut network, ids) = if self.flows == 1 {
            let (s, r, _) = pairs.pop().expect("one flow");
            let (network, a, b) = Network::single_path(epoch, self.seed, forward, reverse, s, r)?;
            (network, vec![(a, b)])
        } else {
            Network::dumbbell(epoch, self.seed, forward, reverse, pairs)?
        };
        let ideal = self.ideal();
        let deadline = epoch
            + self
                .deadline
                .unwrap_or_else(|| ideal.saturating_mul(20) + Duration::from_secs(60));
        let receivers: Vec<NodeId> = ids.iter().map(|&(_, r)| r).collect();
        let outcome = network.run(deadline, |net| {
            receivers.iter().all(|&r| net.node(r).is_done())
        });
        Ok(self.collect(&network, &ids, epoch, outcome.now, ideal))
    }

    /// One flow's figures, from its `sender` and `receiver` ends.
    fn flow_result(
        &self,
        sender: &TransferNode,
        receiver: &TransferNode,
        epoch: Instant,
    ) -> FlowResult {
        let one_way_ms = self.rtt.as_secs_f64() * 500.0;
        let delivery = receiver.delivery().expect("a receiver");
        let completion_s = delivery
            .finished_at
            .map(|t| t.duration_since(epoch).as_secs_f64());
        let stats = sender.connection().stats();
        let receiver_stats = receiver.connection().stats();
        let delivered = delivery.read.max(1) as f64;
        let goodput_bps = completion_s.map_or(0.0, |t| delivery.read as f64 * 8.0 / t);
        let mut delays_ms = Vec::new();
        let reads = receiver.read_log();
        let mut r = 0;
        for &(end_offset, sent_at) in sender.sent_log() {
            while r < reads.len() && reads[r].0 < end_offset {
                r += 1;
            }
            if let Some(&(_, read_at)) = reads.get(r) {
                let ms = read_at.duration_since(sent_at).as_secs_f64() * 1000.0;
                delays_ms.push((ms - one_way_ms).max(0.0));
            }
        }
        let error = match (delivery.finished_at, sender.closed(), receiver.closed()) {
            (Some(_), _, _) => None,
            (None, None, None) => Some("did not complete".to_owned()),
            (None, s, r) => Some(format!("sender: {s:?}; receiver: {r:?}")),
        };
        FlowResult {
            completion_s,
            goodput_bps,
            overhead: stats.bytes_sent as f64 / delivered,
            overhead_total: (stats.bytes_sent + receiver_stats.bytes_sent) as f64 / delivered,
            delivered: delivery.read,
            verified: delivery.finished_at.is_some()
                && delivery.intact
                && delivery.read == self.size,
            error,
            symbols_repaired: receiver_stats.symbols_repaired,
            repair_sent: stats.repair_symbols_sent,
            source_sent: stats.source_symbols_sent,
            loss_estimate: stats.loss_rate,
            incoming_loss: receiver_stats.incoming_loss(),
            repair_kinds: [
                stats.repair_proactive,
                stats.repair_reactive,
                stats.repair_tail,
                stats.repair_probe,
                receiver_stats.repairs_stale,
                receiver_stats.repairs_redundant,
            ],
            delays_ms,
        }
    }

    fn collect(
        &self,
        network: &Network<TransferNode>,
        ids: &[(NodeId, NodeId)],
        epoch: Instant,
        end: Instant,
        ideal: Duration,
    ) -> ScenarioResult {
        let flows: Vec<FlowResult> = ids
            .iter()
            .map(|&(s, r)| self.flow_result(network.node(s), network.node(r), epoch))
            .collect();
        let completion_s = flows
            .iter()
            .map(|f| f.completion_s)
            .try_fold(0.0f64, |acc, c| c.map(|c| acc.max(c)));
        let ideal_s = ideal.as_secs_f64();
        let mut delays: Vec<f64> = flows
            .iter()
            .flat_map(|f| f.delays_ms.iter().copied())
            .collect();
        let bottleneck_id = network.link_ids().next().expect("a bottleneck link");
        let bottleneck = network.link_stats(bottleneck_id);
        let sent_bytes: u64 = ids
            .iter()
            .map(|&(s, _)| network.node(s).connection().stats().bytes_sent)
            .sum();
        let all_bytes: u64 = ids
            .iter()
            .map(|&(s, r)| {
                network.node(s).connection().stats().bytes_sent
                    + network.node(r).connection().stats().bytes_sent
            })
            .sum();
        let delivered: u64 = ids
            .iter()
            .map(|&(_, r)| network.node(r).delivery().map_or(0, |d| d.read))
            .sum();
        // All flows' bytes over the time the last one took: with flows of
        // different lengths, a sum of per-flow goodputs would count the
        // link's capacity twice over where one flow's end overlaps another's
        // tail.
        let goodput_bps = completion_s.map_or(0.0, |t| delivered as f64 * 8.0 / t);
        let offered = bottleneck.offered.max(1) as f64;
        ScenarioResult {
            completion_s,
            ideal_s,
            ratio: completion_s.map(|c| c / ideal_s),
            goodput_bps,
            efficiency: goodput_bps / (self.rate_bps as f64 * (1.0 - self.loss)),
            overhead: sent_bytes as f64 / delivered.max(1) as f64,
            overhead_total: all_bytes as f64 / delivered.max(1) as f64,
            delay_p50_ms: percentile(&mut delays, 0.50).unwrap_or(0.0),
            delay_p99_ms: percentile(&mut delays, 0.99).unwrap_or(0.0),
            queue_delay_p95_ms: bottleneck.queue_delay.quantile(0.95).as_secs_f64() * 1000.0,
            queue_loss: (bottleneck.dropped_queue + bottleneck.dropped_aqm) as f64 / offered,
            queue_drops_s: network
                .queue_drops(bottleneck_id)
                .iter()
                .map(|at| at.duration_since(epoch).as_secs_f64())
                .collect(),
            random_loss: bottleneck.dropped_random as f64 / offered,
            verified: flows.iter().all(|f| f.verified),
            jain: (flows.len() > 1)
                .then(|| jain(&flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>()))
                .flatten(),
            flows,
            simulated_s: end.duration_since(epoch).as_secs_f64(),
            trace: ids
                .first()
                .map(|&(s, _)| traced(network, s, epoch))
                .unwrap_or_default(),
            receiver_trace: ids
                .first()
                .map(|&(_, r)| traced(network, r, epoch))
                .unwrap_or_default(),
        }
    }
}

/// The trace events `node` recorded, with their times in seconds since
/// `epoch`.
fn traced(
    network: &Network<TransferNode>,
    node: NodeId,
    epoch: Instant,
) -> Vec<(f64, ltx_proto::TraceEvent)> {
    network
        .node(node)
        .trace()
        .iter()
        .map(|(at, e)| (at.duration_since(epoch).as_secs_f64(), e.clone()))
        .collect()
}
