//! The fault-injection soak: many seeded transfers over random, hostile
//! paths, each of which must either deliver exactly the bytes sent or end
//! with a clear error — never wrong data, never a hang.
//!
//! A run is a pure function of its seed. [`SoakCase::draw`] turns the seed
//! into a path (each direction its own rate, delay, queue, loss, jitter,
//! duplication, corruption and outages) and a transfer size;
//! [`SoakCase::run`] runs the transfer in virtual time with the real
//! protocol code and classifies how it ended as a [`SoakOutcome`].
//!
//! What a run draws (see [`SoakCase::draw`] for the exact distribution):
//!
//! | | range |
//! | --- | --- |
//! | rate, each direction | 1 Mbit/s – 1 Gbit/s, log-uniform; the reverse copies the forward in 40 % of runs |
//! | round trip | 1 ms – 1.2 s, log-uniform; split evenly, or unevenly between the directions |
//! | queue, each direction | 0.25 – 4 BDP, 2 – 256 packets, or unlimited; CoDel marking in 15 % |
//! | loss, each direction | none in 30 %; else 0 – 60 %, independent or in bursts of mean 1 – 30 packets |
//! | jitter | in 25 % of directions, up to half the round trip, reordering or not |
//! | duplication, corruption | each in 15 % of directions, up to 10 % of packets |
//! | outages | 0, 1 or 2, of 1 ms – 30 s, on one direction or both |
//! | size | 0 and sizes around one to three symbols (15 %), log-uniform up to 64 kB (45 %), 64 kB – 1 MB (32.3 %), 1 – 8 MB (7.5 %), 8 – 50 MB (0.2 %) |
//!
//! Every run's packets are sealed with AEAD after a Noise handshake, keyed
//! from the seed, so that a corrupted packet is dropped by authentication
//! and counted, as on a deployed connection (a thousand runs cost 5 % more
//! CPU than with the plain checksum); [`SoakCase::protection`] can set the
//! plain checksum instead.
//!
//! CPU goes with the bytes moved (and with the loss repaired), so the size
//! mix keeps the mean transfer near 0.4 MB: a thousand runs take a few
//! minutes of CPU, and a huge transfer still comes up about twice in a
//! thousand runs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ltx_link::{Aqm, Jitter, LinkConfig, LossModel, Outage, QueueLimit, Rate};
use ltx_proto::protection::{SecurityConfig, StaticKeypair, KEY_LEN};
use ltx_proto::{CloseReason, Connection, TraceEvent, TransportConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::metrics::ideal_completion;
use crate::network::{Network, StopReason};
use crate::transfer::TransferNode;

/// Slowest link rate drawn, bits per second.
pub const MIN_RATE_BPS: u64 = 1_000_000;
/// Fastest link rate drawn, bits per second.
pub const MAX_RATE_BPS: u64 = 1_000_000_000;
/// Shortest round trip drawn.
pub const MIN_RTT: Duration = Duration::from_millis(1);
/// Longest round trip drawn.
pub const MAX_RTT: Duration = Duration::from_millis(1200);
/// Highest mean loss rate drawn, per direction.
pub const MAX_LOSS: f64 = 0.6;
/// Longest mean loss burst drawn, packets.
pub const MAX_BURST: f64 = 30.0;
/// Most outages on one path.
pub const MAX_OUTAGES: usize = 2;
/// Longest outage drawn.
pub const MAX_OUTAGE: Duration = Duration::from_secs(30);
/// Largest transfer drawn, bytes.
pub const MAX_SIZE: u64 = 50_000_000;
/// Highest duplication or corruption probability drawn.
const MAX_DUPLICATE: f64 = 0.1;
/// Bytes a full packet takes on the wire, to size queues in packets.
const WIRE_PACKET: usize = 1400;
/// A transfer that has not ended after this many times its ideal time (on
/// top of its outages and one idle time-out) is hung.
const DEADLINE_IDEALS: u32 = 20;
/// Slack on every deadline, for handshakes and time-outs on tiny transfers.
const DEADLINE_SLACK: Duration = Duration::from_secs(60);
/// Once a run has delivered or failed, both ends must have closed within
/// this many idle time-outs: the sender's may expire first (if the peer
/// went silent), then the receiver's.
const CLOSE_IDLE_TIMEOUTS: u32 = 3;
/// Simulator steps allowed per source symbol of the transfer, on top of
/// [`BASE_STEPS`]: a bound on CPU, far above what any run that makes
/// progress needs, that also catches a connection looping at one instant.
const STEPS_PER_SYMBOL: u64 = 2_000;
/// Simulator steps every run may take, however small.
const BASE_STEPS: u64 = 2_000_000;
/// How the packets of a soak run are protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SoakProtection {
    /// The plain layer: a checksum drops corrupted packets.
    Plain,
    /// A Noise `IK` handshake, then AEAD on every packet: a corrupted
    /// packet fails authentication.
    Aead,
}

impl SoakProtection {
    /// The protection's name: `plain` or `aead`.
    pub fn label(self) -> &'static str {
        match self {
            SoakProtection::Plain => "plain",
            SoakProtection::Aead => "aead",
        }
    }
}

impl fmt::Display for SoakProtection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One direction of a soak path, as drawn; [`to_link`](Direction::to_link)
/// makes the simulator's link of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Direction {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail limit of the bottleneck queue.
    pub queue: QueueLimit,
    /// Whether the bottleneck runs CoDel (marks ECN-capable packets).
    pub codel: bool,
    /// Mean random loss rate.
    pub loss: f64,
    /// Mean loss burst, packets (1: independent losses).
    pub burst: f64,
    /// Random extra delay, if any.
    pub jitter: Option<Jitter>,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Probability that a packet has one bit flipped.
    pub corrupt: f64,
    /// Times this direction is down, from the start of the run.
    pub outages: Vec<Outage>,
}

impl Direction {
    /// The link the simulator runs for this direction.
    pub fn to_link(&self) -> LinkConfig {
        LinkConfig {
            delay: self.delay,
            jitter: self.jitter,
            rate: Some(Rate(self.rate_bps)),
            queue: self.queue,
            aqm: self.codel.then(Aqm::codel),
            loss: LossModel::bursty(self.loss, self.burst),
            duplicate: self.duplicate,
            corrupt: self.corrupt,
            outages: self.outages.clone(),
        }
    }

    /// Total time this direction is down.
    pub fn down_time(&self) -> Duration {
        self.outages.iter().map(|o| o.end - o.start).sum()
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.3} Mbit/s, delay {:.3} ms, queue ",
            self.rate_bps as f64 / 1e6,
            self.delay.as_secs_f64() * 1e3
        )?;
        match self.queue {
            QueueLimit::Packets(n) => write!(f, "{n} packets")?,
            QueueLimit::Bytes(n) => write!(f, "{n} bytes")?,
            QueueLimit::Unlimited => write!(f, "unlimited")?,
        }
        if self.codel {
            write!(f, " (CoDel)")?;
        }
        if self.loss > 0.0 {
            write!(f, ", loss {:.2} %", self.loss * 100.0)?;
            if self.burst > 1.0 {
                write!(f, " in bursts of {:.1}", self.burst)?;
            }
        }
        if let Some(jitter) = self.jitter {
            write!(
                f,
                ", jitter up to {:.3} ms{}",
                jitter.max.as_secs_f64() * 1e3,
                if jitter.reorder { " (reordering)" } else { "" }
            )?;
        }
        if self.duplicate > 0.0 {
            write!(f, ", duplicates {:.2} %", self.duplicate * 100.0)?;
        }
        if self.corrupt > 0.0 {
            write!(f, ", bit flips {:.2} %", self.corrupt * 100.0)?;
        }
        for outage in &self.outages {
            write!(
                f,
                ", down {:.3}–{:.3} s",
                outage.start.as_secs_f64(),
                outage.end.as_secs_f64()
            )?;
        }
        Ok(())
    }
}

/// One soak run: a path and a transfer, drawn from a seed.
#[derive(Debug, Clone)]
pub struct SoakCase {
    /// The seed it was drawn from; the run's randomness derives from it too.
    pub seed: u64,
    /// Data direction (sender to receiver).
    pub forward: Direction,
    /// Acknowledgement direction (receiver to sender).
    pub reverse: Direction,
    /// Bytes to transfer.
    pub size: u64,
    /// The transport configuration of both ends.
    pub transport: TransportConfig,
    /// How the ends protect their packets.
    pub protection: SoakProtection,
}

/// Which end of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum End {
    /// The end that writes the data (the client).
    Sender,
    /// The end that reads and checks it (the server).
    Receiver,
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            End::Sender => "sender",
            End::Receiver => "receiver",
        })
    }
}

/// How the receiver's bytes differ from what was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WrongData {
    /// A byte read differs from the byte sent at its offset.
    BytesDiffer,
    /// The stream ended before all the bytes sent.
    Short {
        /// Bytes read when it ended.
        read: u64,
    },
    /// More bytes were read than were sent.
    Long {
        /// Bytes read.
        read: u64,
    },
    /// The sender closed gracefully (it was told every byte was decoded)
    /// but the receiver never read them all.
    FalseClose {
        /// Bytes the receiver had read.
        read: u64,
    },
}

/// Why a run counts as hung.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hang {
    /// The virtual deadline passed with neither delivery nor a close.
    Deadline,
    /// Nothing was pending anywhere (no packet in flight, no timer) with
    /// neither delivery nor a close: a connection left without a timer.
    Stalled,
    /// The run took more simulator steps than it may (see the module's
    /// constants): a loop, or progress too slow to be any use.
    StepBudget,
    /// The transfer delivered or failed, but this end had not closed
    /// within three idle time-outs afterwards.
    NotClosed(End),
}

/// How a soak run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SoakOutcome {
    /// The receiver read exactly the bytes sent and the stream's end.
    Delivered,
    /// A connection ended before delivery, for this reason (the end that
    /// closed first).
    Error {
        /// The end whose connection closed first.
        end: End,
        /// Why.
        reason: CloseReason,
    },
    /// The receiver read something other than what was sent: always a bug.
    Wrong(WrongData),
    /// Neither delivered nor ended in time: always a bug (the idle
    /// time-out bounds how long a connection can wait).
    Hang(Hang),
}

impl SoakOutcome {
    /// The outcome's name: `delivered`, `error`, `wrong` or `hang`.
    pub fn label(&self) -> &'static str {
        match self {
            SoakOutcome::Delivered => "delivered",
            SoakOutcome::Error { .. } => "error",
            SoakOutcome::Wrong(_) => "wrong",
            SoakOutcome::Hang(_) => "hang",
        }
    }

    /// Whether the outcome is a bug: wrong data or a hang.
    pub fn is_failure(&self) -> bool {
        matches!(self, SoakOutcome::Wrong(_) | SoakOutcome::Hang(_))
    }

    /// Why, in words, for every outcome but `delivered`.
    pub fn reason(&self) -> Option<String> {
        match self {
            SoakOutcome::Delivered => None,
            SoakOutcome::Error { end, reason } => Some(format!("{end}: {}", describe(reason))),
            SoakOutcome::Wrong(wrong) => Some(match wrong {
                WrongData::BytesDiffer => "bytes read differ from the bytes sent".to_owned(),
                WrongData::Short { read } => format!("the stream ended after {read} bytes"),
                WrongData::Long { read } => format!("{read} bytes read, more than were sent"),
                WrongData::FalseClose { read } => {
                    format!("the sender closed gracefully with {read} bytes read by the receiver")
                }
            }),
            SoakOutcome::Hang(hang) => Some(match hang {
                Hang::Deadline => "the virtual deadline passed".to_owned(),
                Hang::Stalled => "nothing pending, no timer armed".to_owned(),
                Hang::StepBudget => "the simulator step budget ran out".to_owned(),
                Hang::NotClosed(end) => {
                    format!("the {end} had not closed three idle time-outs after the end")
                }
            }),
        }
    }
}

impl fmt::Display for SoakOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason() {
            Some(reason) => write!(f, "{} ({reason})", self.label()),
            None => f.write_str(self.label()),
        }
    }
}

/// A close reason in a few words, for reports and for grouping errors.
pub fn describe(reason: &CloseReason) -> String {
    match reason {
        CloseReason::LocallyClosed => "closed".to_owned(),
        CloseReason::LocallyAborted { code, reason } => format!("aborted ({code:#x}: {reason})"),
        CloseReason::ByPeer { code: 0, reason } if reason.is_empty() => {
            "closed by the peer".to_owned()
        }
        CloseReason::ByPeer { code, reason } => format!("closed by the peer ({code:#x}: {reason})"),
        CloseReason::IdleTimeout => "idle time-out".to_owned(),
        CloseReason::HandshakeTimeout => "handshake time-out".to_owned(),
        CloseReason::ProtocolViolation(reason) => format!("protocol violation ({reason})"),
        CloseReason::HandshakeRefused(why) => format!("handshake refused ({why})"),
    }
}

/// What one soak run did.
#[derive(Debug, Clone, PartialEq)]
pub struct SoakReport {
    /// The run's seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: SoakOutcome,
    /// Bytes the transfer was to carry.
    pub size: u64,
    /// Bytes the receiver read (and checked).
    pub read: u64,
    /// Virtual time from the start to the last byte read, if delivered.
    pub completion: Option<Duration>,
    /// The ideal completion time T* on the forward path (DESIGN.md).
    pub ideal: Duration,
    /// The virtual deadline the transfer had.
    pub deadline: Duration,
    /// Virtual time simulated, closes included.
    pub simulated: Duration,
    /// Simulator steps taken.
    pub steps: u64,
    /// Why the sender's connection ended, if it did.
    pub sender_close: Option<CloseReason>,
    /// Why the receiver's connection ended, if it did.
    pub receiver_close: Option<CloseReason>,
    /// Whether the path had an outage (either direction).
    pub outage: bool,
    /// How the packets were protected.
    pub protection: SoakProtection,
    /// Packets the links corrupted (one bit flipped), both directions.
    pub corrupted: u64,
    /// Packets the two ends refused as unauthentic (a bad AEAD tag, a bad
    /// handshake message, or the plain layer's checksum); never acted on.
    pub unauthentic: u64,
    /// The sender's trace events, with their times from the start, when
    /// asked for.
    pub trace: Vec<(Duration, TraceEvent)>,
}

fn log_uniform(rng: &mut SmallRng, low: f64, high: f64) -> f64 {
    (rng.random_range(low.ln()..=high.ln())).exp()
}

/// Key material for one run, from a seed: the simulator's keys need only be
/// distinct, not secret.
fn entropy(seed: u64) -> [u8; KEY_LEN] {
    let mut out = [0u8; KEY_LEN];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&derive(seed, i as u64).to_le_bytes()[..chunk.len()]);
    }
    out
}

/// A splitmix64 step: independent seeds for the parts of one run.
fn derive(seed: u64, part: u64) -> u64 {
    let mut z = seed
        .wrapping_add(part.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SoakCase {
    /// The path and transfer of the run with this seed.
    ///
    /// Each direction draws its own rate (log-uniform over 1 Mbit/s – 1
    /// Gbit/s; the reverse copies the forward in 40 % of runs), queue (60 %:
    /// 0.25 – 4 bandwidth-delay products of its round trip, log-uniform,
    /// at least one packet; 20 %: 2 – 256 packets; 20 %: unlimited; CoDel in
    /// 15 %), loss (none in 30 %, else a mean of 0 – 60 %, uniform, which is
    /// independent in 40 % and otherwise Gilbert bursts of mean length 1 –
    /// 30 packets, log-uniform), jitter (25 %: up to 0.1 ms – half the round
    /// trip, log-uniform, reordering in half of those), duplication and
    /// corruption (each 15 %: up to 10 % of packets, uniform). The round
    /// trip is log-uniform over 1 ms – 1.2 s, split evenly between the
    /// directions in half the runs and 5 – 95 % one way in the others.
    ///
    /// Outages: none in 50 % of runs, one in 30 %, two in 20 %; each lasts
    /// 1 ms – 30 s (log-uniform), starts at a uniform time within the
    /// transfer's ideal duration (at most two minutes), and takes down the
    /// forward direction, the reverse, or both, with equal odds.
    ///
    /// Sizes: 15 % tiny (0, 1, 2, or within 16 bytes of one, two or three
    /// symbols), then log-uniform: 45 % 2 B – 64 kB, 32.3 % 64 kB – 1 MB,
    /// 7.5 % 1 – 8 MB, 0.2 % 8 – 50 MB.
    pub fn draw(seed: u64) -> SoakCase {
        let transport = TransportConfig::default();
        let mut rng = SmallRng::seed_from_u64(derive(seed, 0));
        let rtt = Duration::from_secs_f64(log_uniform(
            &mut rng,
            MIN_RTT.as_secs_f64(),
            MAX_RTT.as_secs_f64(),
        ));
        let forward_share = if rng.random_bool(0.5) {
            0.5
        } else {
            rng.random_range(0.05..=0.95)
        };
        let forward_delay = rtt.mul_f64(forward_share);
        let reverse_delay = rtt - forward_delay;
        let forward_rate = draw_rate(&mut rng);
        let reverse_rate = if rng.random_bool(0.4) {
            forward_rate
        } else {
            draw_rate(&mut rng)
        };
        let mut forward = draw_direction(&mut rng, forward_rate, forward_delay, rtt);
        let mut reverse = draw_direction(&mut rng, reverse_rate, reverse_delay, rtt);
        let size = draw_size(&mut rng, ltx_proto::symbol_size(transport.max_datagram));

        let ideal = ideal_of(size, &forward, rtt, &transport);
        let window = ideal.min(Duration::from_secs(120)).as_secs_f64();
        let outages = match rng.random_range(0..10) {
            0..5 => 0,
            5..8 => 1,
            _ => MAX_OUTAGES,
        };
        for _ in 0..outages {
            let length =
                Duration::from_secs_f64(log_uniform(&mut rng, 1e-3, MAX_OUTAGE.as_secs_f64()));
            let start = Duration::from_secs_f64(rng.random_range(0.0..=window));
            let outage = Outage {
                start,
                end: start + length,
            };
            match rng.random_range(0..3) {
                0 => forward.outages.push(outage),
                1 => reverse.outages.push(outage),
                _ => {
                    forward.outages.push(outage);
                    reverse.outages.push(outage);
                }
            }
        }
        SoakCase {
            seed,
            forward,
            reverse,
            size,
            transport,
            protection: SoakProtection::Aead,
        }
    }

    /// The two ends of the run: a client and a server, plain or keyed
    /// from the seed.
    fn connections(&self, transport: TransportConfig, epoch: Instant) -> (Connection, Connection) {
        let connections = match self.protection {
            SoakProtection::Plain => (
                Connection::client(transport.clone(), epoch, derive(self.seed, 1)),
                Connection::server(transport, epoch, derive(self.seed, 2)),
            ),
            SoakProtection::Aead => {
                let server_keys = StaticKeypair::from_entropy(entropy(derive(self.seed, 6)));
                let client_keys = StaticKeypair::from_entropy(entropy(derive(self.seed, 7)));
                (
                    Connection::secure_client(
                        transport.clone(),
                        SecurityConfig::new(client_keys),
                        server_keys.public(),
                        epoch,
                        derive(self.seed, 1),
                        entropy(derive(self.seed, 8)),
                    ),
                    Connection::secure_server(
                        transport,
                        SecurityConfig::new(server_keys),
                        epoch,
                        derive(self.seed, 2),
                        entropy(derive(self.seed, 9)),
                    ),
                )
            }
        };
        match connections {
            (Ok(c), Ok(s)) => (c, s),
            _ => unreachable!("the default transport configuration is valid"),
        }
    }

    /// The round trip of the path, propagation only.
    pub fn rtt(&self) -> Duration {
        self.forward.delay + self.reverse.delay
    }

    /// The ideal completion time T* of the transfer on the forward
    /// direction (DESIGN.md, "Metrics").
    pub fn ideal(&self) -> Duration {
        ideal_of(self.size, &self.forward, self.rtt(), &self.transport)
    }

    /// The virtual time by which the transfer must have delivered or
    /// failed: twenty ideal times, plus every outage, one idle time-out
    /// and a minute.
    pub fn deadline(&self) -> Duration {
        let outages = self.forward.down_time() + self.reverse.down_time();
        self.ideal()
            .saturating_mul(DEADLINE_IDEALS)
            .saturating_add(outages)
            .saturating_add(self.transport.idle_timeout)
            .saturating_add(DEADLINE_SLACK)
    }

    /// The most simulator steps the run may take.
    pub fn step_budget(&self) -> u64 {
        let symbol = ltx_proto::symbol_size(self.transport.max_datagram).max(1) as u64;
        BASE_STEPS + self.size / symbol * STEPS_PER_SYMBOL
    }

    /// Runs the transfer and classifies how it ended.
    pub fn run(&self) -> SoakReport {
        self.run_traced(false)
    }

    /// Runs the transfer; with `trace`, the report keeps the sender's trace
    /// events.
    pub fn run_traced(&self, trace: bool) -> SoakReport {
        let epoch = Instant::now();
        let mut transport = self.transport.clone();
        transport.trace = trace;
        let (client, server) = self.connections(transport, epoch);
        let payload_seed = derive(self.seed, 3);
        let mut sender = TransferNode::sender(client, self.size, payload_seed);
        if trace {
            sender.record_trace();
        }
        let receiver = TransferNode::receiver(server, self.size, payload_seed);
        let (mut network, s, r) = Network::single_path(
            epoch,
            derive(self.seed, 4),
            self.forward.to_link(),
            self.reverse.to_link(),
            sender,
            receiver,
        )
        .expect("drawn links are valid");

        let budget = self.step_budget();
        let mut steps = 0u64;
        let deadline = self.deadline();
        let first = network.run(epoch + deadline, |net| {
            steps += 1;
            steps > budget || net.node(r).is_done() || net.node(s).closed().is_some()
        });
        let mut hang = match first.reason {
            StopReason::Stopped if steps > budget => Some(Hang::StepBudget),
            StopReason::Stopped => None,
            StopReason::Deadline => Some(Hang::Deadline),
            StopReason::Idle => Some(Hang::Stalled),
        };
        let ended_at = first.now;
        if hang.is_none() {
            // Delivered or failed: both ends must now wind down by themselves.
            let close_by = ended_at + self.transport.idle_timeout * CLOSE_IDLE_TIMEOUTS;
            let both_closed = |net: &Network<TransferNode>| {
                net.node(s).closed().is_some() && net.node(r).closed().is_some()
            };
            network.run(close_by, |net| {
                steps += 1;
                steps > budget || both_closed(net)
            });
            if !both_closed(&network) {
                hang = Some(if steps > budget {
                    Hang::StepBudget
                } else if network.node(s).closed().is_none() {
                    Hang::NotClosed(End::Sender)
                } else {
                    Hang::NotClosed(End::Receiver)
                });
            }
        }

        let sender = network.node(s);
        let receiver = network.node(r);
        let delivery = receiver.delivery().expect("the receiver node");
        let sender_close = sender.closed().cloned();
        let receiver_close = receiver.closed().cloned();
        let outcome = classify(
            self.size,
            &delivery,
            &sender_close,
            &receiver_close,
            first_closed(sender, receiver),
            hang,
        );
        SoakReport {
            seed: self.seed,
            outcome,
            size: self.size,
            read: delivery.read,
            completion: delivery.finished_at.map(|t| t - epoch),
            ideal: self.ideal(),
            deadline,
            simulated: network.now() - epoch,
            steps,
            sender_close,
            receiver_close,
            outage: !self.forward.outages.is_empty() || !self.reverse.outages.is_empty(),
            protection: self.protection,
            corrupted: network
                .link_ids()
                .map(|l| network.link_stats(l).corrupted)
                .sum(),
            unauthentic: sender.connection().stats().packets_unauthentic
                + receiver.connection().stats().packets_unauthentic,
            trace: network
                .node(s)
                .trace()
                .iter()
                .map(|(at, e)| (*at - epoch, e.clone()))
                .collect(),
        }
    }
}

impl fmt::Display for SoakCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}: {} bytes, RTT {:.3} ms, {} packets",
            self.seed,
            self.size,
            self.rtt().as_secs_f64() * 1e3,
            self.protection
        )?;
        writeln!(f, "  forward: {}", self.forward)?;
        write!(f, "  reverse: {}", self.reverse)
    }
}

/// Which end closed first, when both have (the sender on a tie, as the
/// end that drives the transfer).
fn first_closed(sender: &TransferNode, receiver: &TransferNode) -> Option<End> {
    match (sender.closed_at(), receiver.closed_at()) {
        (Some(s), Some(r)) if r < s => Some(End::Receiver),
        (Some(_), _) => Some(End::Sender),
        (None, Some(_)) => Some(End::Receiver),
        (None, None) => None,
    }
}

/// How a run ended, from what the receiver read and how the connections
/// closed. Wrong data outranks everything; then a hang; then delivery;
/// then the first close.
fn classify(
    size: u64,
    delivery: &crate::transfer::Delivery,
    sender_close: &Option<CloseReason>,
    receiver_close: &Option<CloseReason>,
    first: Option<End>,
    hang: Option<Hang>,
) -> SoakOutcome {
    if delivery.read > size {
        return SoakOutcome::Wrong(WrongData::Long {
            read: delivery.read,
        });
    }
    if !delivery.intact {
        return SoakOutcome::Wrong(match delivery.finished_at {
            Some(_) if delivery.read != size => WrongData::Short {
                read: delivery.read,
            },
            _ => WrongData::BytesDiffer,
        });
    }
    let delivered = delivery.finished_at.is_some();
    if !delivered && sender_close == &Some(CloseReason::LocallyClosed) {
        return SoakOutcome::Wrong(WrongData::FalseClose {
            read: delivery.read,
        });
    }
    if let Some(hang) = hang {
        return SoakOutcome::Hang(hang);
    }
    if delivered {
        return SoakOutcome::Delivered;
    }
    match first {
        Some(End::Sender) => SoakOutcome::Error {
            end: End::Sender,
            reason: sender_close.clone().expect("the sender closed"),
        },
        Some(End::Receiver) => SoakOutcome::Error {
            end: End::Receiver,
            reason: receiver_close.clone().expect("the receiver closed"),
        },
        None => SoakOutcome::Hang(Hang::Deadline),
    }
}

fn draw_rate(rng: &mut SmallRng) -> u64 {
    log_uniform(rng, MIN_RATE_BPS as f64, MAX_RATE_BPS as f64).round() as u64
}

fn draw_direction(rng: &mut SmallRng, rate_bps: u64, delay: Duration, rtt: Duration) -> Direction {
    let bdp = rate_bps as f64 * rtt.as_secs_f64() / 8.0;
    let queue = match rng.random_range(0..10) {
        0..6 => {
            let bytes = bdp * log_uniform(rng, 0.25, 4.0);
            QueueLimit::Bytes((bytes.round() as usize).max(WIRE_PACKET))
        }
        6..8 => QueueLimit::Packets(rng.random_range(2..=256)),
        _ => QueueLimit::Unlimited,
    };
    let codel = rng.random_bool(0.15);
    let (loss, burst) = if rng.random_bool(0.3) {
        (0.0, 1.0)
    } else {
        let loss = rng.random_range(0.0..=MAX_LOSS);
        let burst = if rng.random_bool(0.4) {
            1.0
        } else {
            log_uniform(rng, 1.0, MAX_BURST)
        };
        (loss, burst)
    };
    let jitter = rng.random_bool(0.25).then(|| {
        let most = (rtt.as_secs_f64() / 2.0).max(1e-4);
        Jitter {
            max: Duration::from_secs_f64(log_uniform(rng, 1e-4, most)),
            reorder: rng.random_bool(0.5),
        }
    });
    let duplicate = if rng.random_bool(0.15) {
        rng.random_range(0.0..=MAX_DUPLICATE)
    } else {
        0.0
    };
    let corrupt = if rng.random_bool(0.15) {
        rng.random_range(0.0..=MAX_DUPLICATE)
    } else {
        0.0
    };
    Direction {
        rate_bps,
        delay,
        queue,
        codel,
        loss,
        burst,
        jitter,
        duplicate,
        corrupt,
        outages: Vec::new(),
    }
}

fn draw_size(rng: &mut SmallRng, symbol: usize) -> u64 {
    let symbol = symbol as u64;
    match rng.random_range(0..1000) {
        0..150 => match rng.random_range(0..4) {
            0 => rng.random_range(0..=2),
            k => (k * symbol).saturating_add_signed(rng.random_range(-16..=16)),
        },
        150..600 => log_uniform(rng, 2.0, 64e3).round() as u64,
        600..923 => log_uniform(rng, 64e3, 1e6).round() as u64,
        923..998 => log_uniform(rng, 1e6, 8e6).round() as u64,
        _ => log_uniform(rng, 8e6, MAX_SIZE as f64).round() as u64,
    }
}

fn ideal_of(
    size: u64,
    forward: &Direction,
    rtt: Duration,
    transport: &TransportConfig,
) -> Duration {
    // A full packet's stream bytes against the largest datagram: a
    // rougher fraction than `Scenario::payload_fraction` (0.960 against
    // 0.985 at the defaults), kept because this time also places each
    // run's outages, and changing it would change every seeded soak run.
    let symbol = ltx_proto::symbol_size(transport.max_datagram) as f64;
    let payload_fraction = (symbol - 8.0) / f64::from(transport.max_datagram);
    ideal_completion(size, forward.rate_bps, rtt, forward.loss, payload_fraction)
}

/// Counts over many soak runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SoakSummary {
    /// Runs counted.
    pub runs: u64,
    /// Runs that delivered.
    pub delivered: u64,
    /// Runs that ended with an error.
    pub errors: u64,
    /// Runs that read wrong data.
    pub wrong: u64,
    /// Runs that hung.
    pub hangs: u64,
    /// Errors by their reason (see [`SoakOutcome::reason`]).
    pub errors_by_reason: BTreeMap<String, u64>,
    /// Errors on paths without any outage, by reason: these are the ones
    /// no outage explains.
    pub errors_without_outage: BTreeMap<String, u64>,
    /// Seeds of the wrong and hung runs, in the order met.
    pub failing_seeds: Vec<u64>,
    /// Bytes delivered over all runs.
    pub bytes_delivered: u64,
    /// Virtual seconds simulated over all runs.
    pub simulated_s: f64,
    /// Completion / ideal of each delivered run of at least 64 kB.
    pub ratios: Vec<f64>,
    /// The runs of each protection, and what their corrupted packets came to.
    pub by_protection: BTreeMap<SoakProtection, ProtectionCounts>,
}

/// Counts over the soak runs of one protection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtectionCounts {
    /// Runs counted.
    pub runs: u64,
    /// Runs that delivered.
    pub delivered: u64,
    /// Packets the links corrupted.
    pub corrupted: u64,
    /// Packets the ends refused as unauthentic.
    pub unauthentic: u64,
}

impl SoakSummary {
    /// Counts one run.
    pub fn add(&mut self, report: &SoakReport) {
        self.runs += 1;
        self.simulated_s += report.simulated.as_secs_f64();
        let counts = self.by_protection.entry(report.protection).or_default();
        counts.runs += 1;
        counts.delivered += u64::from(report.outcome == SoakOutcome::Delivered);
        counts.corrupted += report.corrupted;
        counts.unauthentic += report.unauthentic;
        match &report.outcome {
            SoakOutcome::Delivered => {
                self.delivered += 1;
                self.bytes_delivered += report.read;
                if let Some(completion) = report.completion {
                    if report.size >= 64_000 {
                        self.ratios
                            .push(completion.as_secs_f64() / report.ideal.as_secs_f64());
                    }
                }
            }
            SoakOutcome::Error { .. } => {
                self.errors += 1;
                let reason = report.outcome.reason().unwrap_or_default();
                if !report.outage {
                    *self
                        .errors_without_outage
                        .entry(reason.clone())
                        .or_default() += 1;
                }
                *self.errors_by_reason.entry(reason).or_default() += 1;
            }
            SoakOutcome::Wrong(_) => {
                self.wrong += 1;
                self.failing_seeds.push(report.seed);
            }
            SoakOutcome::Hang(_) => {
                self.hangs += 1;
                self.failing_seeds.push(report.seed);
            }
        }
    }

    /// Whether no run read wrong data or hung.
    pub fn passed(&self) -> bool {
        self.wrong == 0 && self.hangs == 0
    }
}

/// Runs `runs` soak runs with seeds `first_seed`, `first_seed + 1`, … on
/// `threads` threads, handing each report to `report` in seed order, on
/// the calling thread, as soon as it and all before it are done. Each run
/// has the protection [`SoakCase::draw`] gives it, or `protection` if given.
pub fn run_many(
    first_seed: u64,
    runs: u64,
    threads: usize,
    protection: Option<SoakProtection>,
    mut report: impl FnMut(SoakReport),
) {
    let next = AtomicU64::new(0);
    let (tx, rx) = mpsc::channel::<(u64, SoakReport)>();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= runs {
                    break;
                }
                let seed = first_seed.wrapping_add(index);
                let mut case = SoakCase::draw(seed);
                if let Some(protection) = protection {
                    case.protection = protection;
                }
                let done = case.run();
                if tx.send((index, done)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut waiting = BTreeMap::new();
        let mut due = 0;
        for (index, done) in rx {
            waiting.insert(index, done);
            while let Some(done) = waiting.remove(&due) {
                report(done);
                due += 1;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::Delivery;

    fn delivery(read: u64, finished: bool, intact: bool) -> Delivery {
        Delivery {
            read,
            finished_at: finished.then(Instant::now),
            intact,
        }
    }

    #[test]
    fn wrong_data_outranks_a_hang_and_a_close() {
        let closed = Some(CloseReason::IdleTimeout);
        let outcome = classify(
            10,
            &delivery(4, false, false),
            &closed,
            &closed,
            Some(End::Sender),
            Some(Hang::Deadline),
        );
        assert_eq!(outcome, SoakOutcome::Wrong(WrongData::BytesDiffer));
        let outcome = classify(10, &delivery(11, false, true), &None, &None, None, None);
        assert_eq!(outcome, SoakOutcome::Wrong(WrongData::Long { read: 11 }));
        let outcome = classify(10, &delivery(9, true, false), &None, &None, None, None);
        assert_eq!(outcome, SoakOutcome::Wrong(WrongData::Short { read: 9 }));
    }

    #[test]
    fn a_graceful_close_without_delivery_is_wrong() {
        let graceful = Some(CloseReason::LocallyClosed);
        let peer = Some(CloseReason::ByPeer {
            code: 0,
            reason: String::new(),
        });
        let outcome = classify(
            10,
            &delivery(4, false, true),
            &graceful,
            &peer,
            Some(End::Sender),
            None,
        );
        assert_eq!(
            outcome,
            SoakOutcome::Wrong(WrongData::FalseClose { read: 4 })
        );
        // The same close after delivery is the normal end.
        let outcome = classify(
            10,
            &delivery(10, true, true),
            &graceful,
            &peer,
            Some(End::Sender),
            None,
        );
        assert_eq!(outcome, SoakOutcome::Delivered);
    }

    #[test]
    fn an_error_names_the_end_that_closed_first() {
        let idle = Some(CloseReason::IdleTimeout);
        let outcome = classify(
            10,
            &delivery(4, false, true),
            &idle,
            &idle,
            Some(End::Receiver),
            None,
        );
        assert_eq!(
            outcome,
            SoakOutcome::Error {
                end: End::Receiver,
                reason: CloseReason::IdleTimeout
            }
        );
        assert_eq!(outcome.reason().as_deref(), Some("receiver: idle time-out"));
        assert!(!outcome.is_failure());
    }

    #[test]
    fn delivery_that_does_not_wind_down_is_a_hang() {
        let outcome = classify(
            10,
            &delivery(10, true, true),
            &None,
            &None,
            None,
            Some(Hang::NotClosed(End::Sender)),
        );
        assert_eq!(outcome, SoakOutcome::Hang(Hang::NotClosed(End::Sender)));
        assert!(outcome.is_failure());
        let outcome = classify(10, &delivery(3, false, true), &None, &None, None, None);
        assert_eq!(outcome, SoakOutcome::Hang(Hang::Deadline));
    }
}
