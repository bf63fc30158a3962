//! Coded TCP congestion control, with an ECN response and a start-up that
//! measures the bottleneck.
//!
//! # Start-up
//!
//! Start-up measures the bottleneck's rate from the spacing of ACKs and then
//! sends at it. Until a rate is measured it is not paced, so packets leave in
//! bursts (the initial window of 32 datagrams at once, then two per ACK) and
//! come back spaced by the bottleneck: packet-pair dispersion. Two
//! estimators feed `max_rate`:
//! - *pairs*: ACKs that arrive at one instant form a group; a group whose
//!   packets left much closer together than the ACKs came back (send gap
//!   below a quarter of the ACK gap) gives the sample `bytes / ACK gap`,
//!   where the bytes include the packets sent between the two groups that
//!   are declared lost before the round ends: they took their slots at the
//!   bottleneck too, and leaving them out would read a path that loses half
//!   its packets as a third slower than it is. The median of a round's
//!   samples is robust to ACK compression (a burst looks fast); 4 samples
//!   are used at once, so a long path is at full rate one round trip after
//!   the first ACK, and every 4 more the median of all the round's samples
//!   so far replaces the rate they gave. Where flows start together, the
//!   first packets of a flight meet an empty bottleneck and the later ones
//!   share it with the other flights: keeping the first reading (a maximum
//!   over the round) had four flows on a 600 ms path jump to rates that
//!   added up to twice the bottleneck's.
//! - *trains*: ACKs broken by a gap longer than `RTTmin/4` or by the end of
//!   a round (a round begins at an ACK and ends at the first ACK of a
//!   packet sent after it began); a train of at least 4 packets gives the
//!   bytes acknowledged — or declared lost, by an ACK of the train, after
//!   being sent within it — over its span.
//!
//! On a fast path the trains measure first: a pair sample spans at least
//! 500 µs (the batching of real endpoints), which the initial window's ACKs
//! fill only a few times over at 200 Mbit/s and not once at 1 Gbit/s. A
//! round's rate is sent at, paced and capped as below, when its RTT samples
//! jitter little and pairs measured it, or a train of at least 16 ACKs
//! that lost nothing. Before such a train's rate was held to that test
//! too, a fast path paced at twice its rate without a cap, built a queue,
//! left start-up on it and scaled the window by `RTTmin / RTT` below the
//! path, where additive increase brings back one datagram per round trip
//! (20 MB, no loss: 200 Mbit/s at 20 ms, T/T* 1.27 → 1.04; 500 Mbit/s at
//! 10 ms, 1.39 → 1.05; 1 Gbit/s at 2 ms, 1.15 → 1.02 and 0.5 % of the
//! packets lost in the queue → none). A lossy fast path still goes that
//! way (500 Mbit/s at 10 ms with 20 % loss: 1.41): taken from any train,
//! the rule slowed a path whose ACKs came back slow, jittered and half
//! lost from 12.3 to 59.9 s (the soak's seed 3130), and 40 % loss in
//! bursts of 5 at 500 Mbit/s from 1.08 to 1.12.
//!
//! The first flight is sent at one instant only where the path holds it.
//! The client's handshake leaves in three copies at once, and the server
//! answers each as it arrives: the answers' spacing is a packet-pair
//! reading of the bottleneck before any data leaves (the connection waits
//! for the second answer, at most `RTT/4` or 10 ms, and reads nothing from
//! answers less than 500 µs apart). Where the rate it reads times the
//! handshake's RTT is less than the initial window, the window would
//! overflow a queue of one bandwidth-delay product; start-up then sends a
//! burst of half that product (at least 5 datagrams, for four pair samples;
//! at most the probe burst) and paces the rest at the rate read, until its
//! own ACKs measure one. A 1080 KiB object at 10 Mbit/s and 25 ms lost 10
//! of its first 32 datagrams to a queue of 23 (1.041 wire bytes per byte;
//! 1.0175 with the reading, T/T* 1.042 → 1.037); 1 MB at 2 Mbit/s and 50 ms
//! lost 5.3 % of its packets (none with it, T/T* 1.024 → 1.012, delay p99
//! 392 → 37 ms), at 5 Mbit/s and 20 ms 5.4 % (none), at 1 Mbit/s and 200 ms
//! 1.8 % (none). A path of 5 datagrams (2 Mbit/s, 30 ms) still loses 4 %,
//! most of it after start-up. Elsewhere the reading costs the wait for
//! the second answer, one 1200-byte slot of the bottleneck.
//!
//! Once a rate is measured, `cwnd ← max(cwnd, max_rate × RTTmin)`: the
//! window jumps to the bandwidth-delay product instead of `log2(BDP/IW)`
//! doublings. From then on start-up paces at the measured rate and keeps the
//! window at that product plus a *probe burst* of 10 datagrams (at most
//! half the product, where that holds fewer), which it
//! sends back to back at the start of each round: the burst's ACKs come
//! back spaced by the bottleneck and keep measuring it, so a higher rate
//! shows (and the window follows it) while the queue holds at most the
//! burst. Pacing faster than the measured rate, as slow start does, would
//! show a higher rate as well, but by building a standing queue of the
//! excess: on a 600 ms path, 150 to 460 ms of it for most of a 10 MB
//! transfer. With `CtcpConfig::probe_burst(0)` start-up does that instead:
//! the window grows by the bytes acknowledged and paces at twice the rate.
//!
//! Start-up ends on queueing delay (the smallest of the last 8 RTT samples is
//! at least `RTTmin × 1.25 + 2 ms`, the 2 ms at most `RTTmin / 4` on short
//! paths: a queue, not a jittered sample), on an
//! ECN CE mark, or on a loss above the random-loss baseline; never on random
//! loss. It also ends when the measured rate has grown less than 10 % in 3
//! rounds, or when 8 rounds measured no rate at all: a queue too shallow to
//! show a delay overflows without one, and a train counts lost packets in
//! its rate only up to 3× its acknowledged rate, so the overflow is not read
//! as the path's rate. On exit `cwnd ← max(min window, max_rate × RTTmin)`,
//! the bandwidth-delay product, so the overshoot of the last round is not
//! kept (without a rate sample: `cwnd × RTTmin/RTT`). An exit on queueing
//! delay then scales that by `RTTmin / RTT` as well, RTT the smallest of the
//! 8 samples: flows that start together measure the bottleneck at different
//! moments, one nearly alone and the next beside it, and the rates they
//! jump to add up to more than it has. Scaled so, together they keep in
//! flight what the path holds without a queue, and the queue empties before
//! it overflows (eight flows starting together on a one-BDP queue at
//! 100 Mbit/s and 20 ms lost 0.31 % of the packets it was offered without
//! this, 0.11 % with it).
//!
//! # Congestion avoidance
//!
//! Additive increase, `cwnd += max_datagram × acked / cwnd` (one datagram per
//! window acknowledged). On loss, at most once per round trip (losses of
//! packets sent before the last reduction are ignored), the Coded TCP rule
//! `cwnd ← cwnd × RTTmin / RTT`, where RTT is the *smallest* sample, over
//! the last complete round trip, of the packets sent since the last
//! reduction (at least 8 of them): the queue that stands now. Random loss on an empty queue costs nothing, jitter
//! is not mistaken for a queue (the latest sample often would be), and a
//! standing queue that doubles the RTT halves the window. Random loss with a
//! ratio above 0.9 (no standing queue) leaves the window alone. A loss above
//! the random baseline cuts at least to `× 0.85`. An ECN CE mark, at most
//! once per round trip, cuts `× 0.8`: marks are a deliberate signal, so the
//! response is firmer than for the RTT rule but gentler than Reno's half,
//! since the AQM marks early.
//!
//! A cut for random loss that trims a queue within the queue target (a
//! factor of `1 / 1.25` or more) keeps two datagrams above
//! `cwnd × RTTmin / RTT`, at most a ninth of it: the window counts as in
//! flight the packets lost and not yet declared lost (a loss is declared
//! once three later packets are acknowledged) and ACKs come every second
//! packet, so a window of exactly the path's bandwidth-delay product runs
//! the link dry for a moment after each cut. At 10 Mbit/s, 20 ms and 20 %
//! loss (20 MB, seed 1), where such cuts come every seven round trips or
//! so, the link stood idle for 218 ms of the 21 s transfer without the two
//! datagrams and 72 ms with them. A deeper cut keeps nothing more: the
//! queue grew past the target, and where the estimate has taken losses of
//! congestion for random ones (four flows on a 50 Mbit/s, 2 ms path with a
//! queue of nine packets, where each window is a few datagrams), room kept
//! after every cut raised the queue's loss from 12.0 to 16.5 %.
//!
//! A congestion cut (ECN, or a loss cut to 0.9 or less) also starts a new
//! round for both signals, so one congestion episode is not answered twice;
//! a loss that barely cuts leaves the ECN response free.
//!
//! # Delivery cap (off by default)
//!
//! `CtcpConfig::delivery_cap(Some(gain))` keeps the window after start-up at
//! most `gain` bandwidth-delay products at the fastest rate delivered per
//! round trip over the last 10 (acknowledged bytes plus lost ones, the lost
//! counted up to 3× the acknowledged), so that an overflow the loss
//! estimator takes for random loss — a queue too shallow to add delay —
//! cannot grow the window without end. It is off by default: with 2.5 it
//! slowed a path with 50 % loss both ways, 64 ms of jitter and a 23 s outage
//! past its soak deadline (seed 103), and the start-up exits already bound
//! the floods it was meant for.
//!
//! # Queue target
//!
//! Coded TCP reacts to a queue only when it overflows. Without waiting for a
//! loss, when the standing queue (the smallest RTT over the last round trip)
//! exceeds `RTTmin × (1 + 0.25)` plus the margin of start-up's delay
//! test, the window is scaled by `RTTmin / RTT`, which empties a queue this
//! flow built, and not again for three round trips. Flows that share a
//! bottleneck then keep its queue short and lose nothing to it, and, since
//! each cuts in proportion to its window, converge to equal shares. A flow
//! whose drains leave the queue standing twice in a row shares it with one
//! that fills any buffer (a loss-based TCP); draining would only starve it,
//! so it leaves the queue to the loss rule until it sees the queue below
//! the target again, or for 32 round trips at most: ltx flows whose drains
//! fell out of step take each other for such a flow, and one that stopped
//! draining for good grows while the others drain. `CtcpConfig::queue_target(None)`
//! turns this off.
//!
//! # Pacing
//!
//! In start-up as above; after it, `1.25 × cwnd / smoothed RTT`.
//!
//! Everything above but the back-off `cwnd ← cwnd × RTTmin / RTT` and the
//! additive increase is ltx's own: the measuring start-up, the standing
//! queue as the minimum since the last reduction, leaving random loss alone
//! on an empty queue, the floor on loss above the baseline, the ECN factor.
//! Seed 003's rule alone is the `ctcp` preset's controller, in `ltx-presets`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{min_window, Controller, ControllerFactory};
use crate::rtt::RttEstimator;

/// The configuration of [`Ctcp`], and its factory.
#[derive(Debug, Clone)]
pub struct CtcpConfig {
    initial_window_packets: u64,
    startup_pacing_gain: f64,
    pacing_gain: f64,
    ecn_beta: f64,
    congestion_beta: f64,
    delay_exit_ratio: f64,
    delay_exit_extra: Duration,
    rate_hint: Option<u64>,
    queue_target: Option<f64>,
    delivery_cap: Option<f64>,
    probe_burst: u64,
}

impl Default for CtcpConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: 32,
            startup_pacing_gain: 2.0,
            pacing_gain: 1.25,
            ecn_beta: 0.8,
            congestion_beta: 0.85,
            delay_exit_ratio: 1.25,
            delay_exit_extra: Duration::from_millis(2),
            rate_hint: None,
            queue_target: Some(0.25),
            delivery_cap: None,
            probe_burst: 10,
        }
    }
}

impl CtcpConfig {
    /// The initial window in datagrams (default 32, at least 2): more than
    /// TCP's 10, because its ACKs are what start-up measures the path with,
    /// and on a lossy path ten packets give too few pairs.
    ///
    /// Sent at one instant, 32 datagrams overflow a queue of fewer: 10
    /// Mbit/s at 25 ms with one bandwidth-delay product of queue (23
    /// datagrams) lost 10 of them, 1.041 wire bytes per byte of a 1080 KiB
    /// object; 2 Mbit/s at 50 ms (9 datagrams) lost 5.8 % of a 1 MB
    /// transfer's packets to the queue, its delay p99 633 ms. Both are now
    /// paced from the handshake's reading of the path (see the module
    /// documentation), which the figures below came before. 16 fit there
    /// (1.018 bytes per byte; 1.2 % and 109 ms; seeds 1–3) but cost a round
    /// trip of start-up where the path is fast and 16 ACKs give too few
    /// pair samples (100 Mbit/s at 20 ms: T/T* 1.020 → 1.042 on 10 MB, about
    /// 2 % in each cell of the correlated table), let four flows that start
    /// together on an ECN-marking queue overflow it (0.22 % of the packets
    /// lost, against none), and size the first full flight at 600 ms from
    /// fewer fates (20 % loss, seed 1: delay p99 182 → 746 ms). Sending
    /// the window in two parts (20 datagrams, the rest half the handshake's
    /// round trip later, at most 20 ms, with no train spanning the wait)
    /// was measured too: the small queue kept everything (the web objects
    /// at 25 ms: 1.018 and 1.015 bytes per byte, and faster), but four
    /// flows that start together on the shared 100 Mbit/s queue lost 1.15 %
    /// of their packets to it (none before), most cells at 600 ms with 20 %
    /// loss and more took 2–7 % longer (the first train, 20 packets with
    /// their losses, read a lower rate) and those at 20 ms 0.4–1.6 % (20
    /// datagrams give three pair samples at 100 Mbit/s, not four).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.initial_window_packets = value.max(2);
        self
    }

    /// A known bottleneck rate, bytes per second: start-up takes it as
    /// measured, so the window reaches the bandwidth-delay product at the
    /// first RTT sample instead of a round later. Measurements above it
    /// still raise it; congestion signals still cut below it.
    pub fn rate_hint(&mut self, bytes_per_second: Option<u64>) -> &mut Self {
        self.rate_hint = bytes_per_second.filter(|r| *r > 0);
        self
    }

    /// The standing queue, as a fraction of RTTmin, above which the window
    /// drains it without waiting for a loss (default 0.25; `None`: only
    /// loss and ECN reduce the window, as in Coded TCP).
    pub fn queue_target(&mut self, fraction: Option<f64>) -> &mut Self {
        self.queue_target = fraction.filter(|f| f.is_finite() && *f > 0.0);
        self
    }

    /// The cap on the window after start-up, in bandwidth-delay products of
    /// the fastest rate delivered in the last 10 round trips (default
    /// `None`: no cap, as in Coded TCP; see the module's documentation).
    pub fn delivery_cap(&mut self, gain: Option<f64>) -> &mut Self {
        self.delivery_cap = gain.filter(|g| g.is_finite() && *g >= 1.0);
        self
    }

    /// The datagrams start-up sends back to back at the start of each
    /// round once it has measured a rate (default 10; 0: none, and start-up
    /// grows the window without bound until a queue, a mark or a loss
    /// above the baseline shows, pacing at twice the rate as before a
    /// rate was measured; see the module documentation).
    pub fn probe_burst(&mut self, datagrams: u64) -> &mut Self {
        self.probe_burst = datagrams;
        self
    }

    /// The pacing gain during start-up (default 2).
    pub fn startup_pacing_gain(&mut self, value: f64) -> &mut Self {
        self.startup_pacing_gain = finite_at_least(value, 1.0);
        self
    }

    /// The pacing gain after start-up (default 1.25).
    pub fn pacing_gain(&mut self, value: f64) -> &mut Self {
        self.pacing_gain = finite_at_least(value, 1.0);
        self
    }

    /// The factor applied to the window on an ECN CE mark (default 0.8).
    pub fn ecn_beta(&mut self, value: f64) -> &mut Self {
        self.ecn_beta = value.clamp(0.1, 1.0);
        self
    }

    /// The largest factor applied on a loss above the random-loss baseline
    /// (default 0.85).
    pub fn congestion_beta(&mut self, value: f64) -> &mut Self {
        self.congestion_beta = value.clamp(0.1, 1.0);
        self
    }

    /// The queueing-delay test that ends start-up: a round's smallest RTT at
    /// least `RTTmin × ratio + extra` (default 1.25 and 2 ms), where
    /// `extra` shrinks to a quarter of RTTmin on short paths (see
    /// [`RttEstimator::queue_margin`]).
    pub fn delay_exit(&mut self, ratio: f64, extra: Duration) -> &mut Self {
        self.delay_exit_ratio = finite_at_least(ratio, 1.0);
        self.delay_exit_extra = extra;
        self
    }
}

fn finite_at_least(value: f64, floor: f64) -> f64 {
    if value.is_finite() {
        value.max(floor)
    } else {
        floor
    }
}

impl ControllerFactory for CtcpConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(Ctcp::new(Arc::new(self.clone()), now, max_datagram))
    }
}

/// A train of ACKs in start-up: ACKs with no gap longer than a quarter of
/// RTTmin between them, whose spacing is the bottleneck's.
#[derive(Debug, Clone)]
struct Train {
    first: Instant,
    /// When the packet of the first ACK was sent: a lost packet sent after
    /// it had its slot inside the train.
    first_sent: Instant,
    last: Instant,
    acks: u64,
    /// ACKs and losses: the packets whose slots the train spans.
    packets: u64,
    /// Bytes acknowledged or declared lost after the first ACK: dispersion
    /// counts the gaps, and a lost packet took its slot at the bottleneck.
    bytes_after_first: u64,
    /// Of those, the bytes acknowledged: what certainly went through.
    acked_after_first: u64,
}

impl Train {
    /// `bytes` over the train's span, once it spans at least 4 packets, 2
    /// of them acknowledged, and [`MIN_PAIR_GAP`].
    fn rate_of(&self, bytes: u64) -> Option<u64> {
        let span = self.last.saturating_duration_since(self.first).as_nanos();
        if self.packets < 4 || self.acks < 2 || span < MIN_PAIR_GAP.as_nanos() {
            return None;
        }
        let rate = u128::from(bytes) * 1_000_000_000 / span;
        Some(u64::try_from(rate).unwrap_or(u64::MAX))
    }

    /// The bottleneck's rate as the train shows it: every slot it spans,
    /// lost packets' included — but no more than [`TRAIN_OVER_ACKED`] times
    /// the acknowledged rate: random loss takes a bounded share of a train,
    /// while a queue that overflows drops without bound, and counting
    /// those drops would read the sender's own rate as the path's.
    fn rate(&self) -> Option<u64> {
        let counted = self.rate_of(self.bytes_after_first)?;
        let acked = self.acked_rate()?;
        Some(counted.min((acked as f64 * TRAIN_OVER_ACKED) as u64))
    }

    /// The rate of what was acknowledged alone: below the bottleneck's by
    /// the loss rate, and never above it, however the ACKs bunch.
    fn acked_rate(&self) -> Option<u64> {
        self.rate_of(self.acked_after_first)
    }
}

/// The ACKs a start-up round's train must hold, with none of its packets
/// lost, for its rate to be sent at where the round gave no pair samples:
/// half the initial window. A short or lossy train read through a slow,
/// jittery or lossy ACK path can be far below the bottleneck (a 504 Mbit/s
/// path whose ACKs came back over 10 Mbit/s with half of them lost: 7 ACKs
/// over 19 ms, 3.4 Mbit/s), and sending at it would hold start-up there.
const TRUSTED_TRAIN_ACKS: u64 = 16;

/// How far above its acknowledged rate a train's rate may go: as far as the
/// loss a path may have, at most half its packets in random loss, and a
/// burst of loss at a train's end lengthens it no more.
const TRAIN_OVER_ACKED: f64 = 3.0;

/// Start-up rounds in a row whose measured rate grew by less than
/// [`PLATEAU_GROWTH`] before start-up ends: the rate has been found, and a
/// path whose queue is too shallow to show a delay (one bandwidth-delay
/// product or less behind a flow that started late) stops growing the window
/// on this instead.
const PLATEAU_ROUNDS: u32 = 3;

/// Start-up rounds without any rate measured before start-up ends.
const NO_RATE_ROUNDS: u32 = 8;

/// The growth of the measured rate that counts as still finding it.
const PLATEAU_GROWTH: f64 = 1.1;

/// How far above a train's acknowledged rate a pair estimate may go: far
/// enough for the loss a path may have (a train at 50 % loss acknowledges
/// half the bottleneck's rate, and a burst of loss at its start shortens
/// it more), not so far that bunched ACKs read as a path many times faster
/// than it is.
const PAIR_OVER_TRAIN: f64 = 3.0;

/// How far above a train's rate, lost slots counted, a pair estimate may go:
/// enough for a rate the train, sent no faster than the last estimate,
/// could not show, one round's growth at a time.
const PAIR_OVER_SLOTS: f64 = 1.25;

/// ACKs that arrive at one instant, for packet-pair dispersion.
#[derive(Debug, Clone, Copy)]
struct AckGroup {
    at: Instant,
    bytes: u64,
    first_sent: Instant,
    last_sent: Instant,
}

/// Bottleneck rate from the spacing of ACKs of packets sent back to back:
/// two packets that left together arrive as far apart as the bottleneck
/// takes to send the second. Each pair of consecutive ACK groups whose
/// packets left much closer together than the ACKs came back is one
/// sample; a round's median is robust to losses (a gap looks slow) and to
/// ACK compression (a burst looks fast).
#[derive(Debug, Clone, Default)]
struct PairDispersion {
    previous: Option<AckGroup>,
    current: Option<AckGroup>,
    samples: Vec<PairSample>,
    /// How many samples the round had when `early_median` last gave a rate.
    early_samples: usize,
}

/// One pair sample: the bytes that crossed the bottleneck between two ACK
/// groups, over the time between them. Packets sent in between that were
/// lost took their slots too; they are declared lost a few ACKs later and
/// added then, until the round's median is taken.
#[derive(Debug, Clone, Copy)]
struct PairSample {
    ack_gap: Duration,
    bytes: u64,
    /// The send times the sample spans: after `after`, up to `through`.
    after: Instant,
    through: Instant,
}

impl PairSample {
    /// Whether a packet sent at `sent` took its slot in this sample's gap.
    fn spans(&self, sent: Instant) -> bool {
        (sent > self.after && sent <= self.through) || sent == self.through
    }

    fn rate(&self) -> u64 {
        let rate = u128::from(self.bytes) * 1_000_000_000 / self.ack_gap.as_nanos().max(1);
        u64::try_from(rate).unwrap_or(u64::MAX)
    }
}

/// The shortest time a pair sample spans: real endpoints read and answer
/// datagrams in batches, which moves an ACK by up to a few hundred
/// microseconds, so shorter spans measure the batching, not the path.
const MIN_PAIR_GAP: Duration = Duration::from_micros(500);

/// Pair samples that give a rate as soon as they are in.
const EARLY_PAIR_SAMPLES: usize = 4;

/// The largest jitter of a round's RTT samples, as a fraction of RTTmin,
/// for which start-up sends at the rate the round's pairs measured (see
/// [`RoundJitter`]): a path whose delay jitters, or a receiver that
/// acknowledges in batches, scatters the ACKs, and the median of their
/// spacing can fall far below the path's rate.
const STEADY_JITTER: f64 = 0.125;

/// Samples a round needs before its median is trusted.
const MIN_PAIR_SAMPLES: usize = 4;

impl PairDispersion {
    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64) {
        let previous_at = self.previous.map(|p| p.at);
        match &mut self.current {
            // ACKs at one instant are one group; so are ACKs until the group
            // spans MIN_PAIR_GAP from the one before, so that a sample is
            // never the jitter of a receiver or a sender that reads and
            // acknowledges datagrams in batches.
            Some(group)
                if group.at == now
                    || previous_at
                        .is_some_and(|p| group.at.saturating_duration_since(p) < MIN_PAIR_GAP) =>
            {
                group.at = now;
                group.bytes = group.bytes.saturating_add(bytes);
                group.first_sent = group.first_sent.min(sent);
                group.last_sent = group.last_sent.max(sent);
                return;
            }
            _ => {}
        }
        self.close_group();
        self.current = Some(AckGroup {
            at: now,
            bytes,
            first_sent: sent,
            last_sent: sent,
        });
    }

    /// A packet sent at `sent` was declared lost: it took its slot at the
    /// bottleneck in the gap of a sample whose packets it left among, and its
    /// bytes count there (at a high loss rate, leaving them out would read
    /// the bottleneck as slower by the share of slots lost). Of the samples
    /// that span its send time, the newest: packets sent at one instant
    /// cannot be told apart by it, and a loss is declared a few packets after
    /// its slot, so the newest sample is the nearest.
    fn on_loss(&mut self, sent: Instant, bytes: u64) {
        if let Some(sample) = self.samples.iter_mut().rev().find(|s| s.spans(sent)) {
            sample.bytes = sample.bytes.saturating_add(bytes);
        }
    }

    fn close_group(&mut self) {
        let Some(group) = self.current.take() else {
            return;
        };
        if let Some(previous) = self.previous {
            let ack_gap = group.at.saturating_duration_since(previous.at);
            let send_gap = group
                .last_sent
                .saturating_duration_since(previous.last_sent);
            if ack_gap >= MIN_PAIR_GAP && send_gap < ack_gap / 4 {
                self.samples.push(PairSample {
                    ack_gap,
                    bytes: group.bytes,
                    after: previous.last_sent,
                    through: group.last_sent,
                });
            }
        }
        self.previous = Some(group);
    }

    /// The median sample of the round, and a new round.
    fn take_median(&mut self) -> Option<u64> {
        self.close_group();
        let median = self.median();
        self.samples.clear();
        self.early_samples = 0;
        median
    }

    /// The median of the round's samples so far, once it has
    /// [`EARLY_PAIR_SAMPLES`] more than when this last gave one.
    fn early_median(&mut self) -> Option<u64> {
        if self.samples.len() < self.early_samples + EARLY_PAIR_SAMPLES {
            return None;
        }
        self.early_samples = self.samples.len();
        self.median()
    }

    fn median(&self) -> Option<u64> {
        if self.samples.len() < MIN_PAIR_SAMPLES {
            return None;
        }
        let mut rates: Vec<u64> = self.samples.iter().map(PairSample::rate).collect();
        rates.sort_unstable();
        Some(rates[rates.len() / 2])
    }
}

/// How much a start-up round's RTT samples wander beyond what its own
/// sending explains. Packets sent together come back with RTTs that grow by
/// the bottleneck's spacing along the train, so the spread of the samples,
/// less the span of the ACKs, is the jitter of the path and of the
/// receiver's acknowledging: where it is large, ACK spacing says little of
/// the bottleneck.
#[derive(Debug, Clone, Copy, Default)]
struct RoundJitter {
    /// The first and last ACK of the round.
    acks: Option<(Instant, Instant)>,
    /// The smallest and largest RTT sample of the round.
    samples: Option<(Duration, Duration)>,
}

impl RoundJitter {
    fn on_ack(&mut self, now: Instant, sample: Duration) {
        self.acks = Some(self.acks.map_or((now, now), |(first, _)| (first, now)));
        self.samples = Some(self.samples.map_or((sample, sample), |(lo, hi)| {
            (lo.min(sample), hi.max(sample))
        }));
    }

    /// The jitter seen so far this round.
    fn jitter(&self) -> Duration {
        match (self.acks, self.samples) {
            (Some((first, last)), Some((lo, hi))) => {
                (hi - lo).saturating_sub(last.saturating_duration_since(first))
            }
            _ => Duration::ZERO,
        }
    }
}

/// RTT samples (since the last reduction, in one round) needed
/// before their minimum is taken as the standing queue.
const MIN_QUEUE_SAMPLES: u32 = 8;

/// A ratio `RTTmin / RTT` above this is no standing queue: random loss then
/// leaves the window alone.
const STANDING_QUEUE: f64 = 0.9;

/// Datagrams a random-loss cut within the queue target keeps above
/// `RTTmin / RTT` of the window, at most the ninth of it that
/// [`STANDING_QUEUE`] leaves alone: the ACK clock's grain (see the module
/// documentation, *Congestion avoidance*).
const ACK_CLOCK_HEADROOM: u64 = 2;

/// How many consecutive RTT samples must show a queue to end start-up.
const QUEUE_SAMPLES: usize = 8;

/// The queue that stands now: the smallest RTT sample of the last complete
/// round trip (of it and the current one, while it has few samples). A minimum, not
/// the latest sample, so that jitter does not pass for a queue; over one
/// round, not since the last reduction, so that one sample from a moment the
/// queue ran dry does not hide the queue that built after it for as long as
/// no loss cuts. Not over two rounds: where several flows share the queue,
/// each one's drain empties it for a moment, and a minimum over two rounds
/// nearly always holds someone's drain, so a flow that drained least saw the
/// queue stand least and drained least again (four flows of 50 MB on one
/// bottleneck ended with one at twice its share).
#[derive(Debug, Clone, Copy, Default)]
struct StandingQueue {
    /// When the current round began.
    round_start: Option<Instant>,
    /// The smallest sample of the current round, and how many it took.
    current: Option<(Duration, u32)>,
    /// The same of the round before.
    previous: Option<(Duration, u32)>,
}

impl StandingQueue {
    /// Takes an RTT sample at `now`; a round lasts one smoothed RTT.
    fn on_sample(&mut self, now: Instant, sample: Duration, round: Duration) {
        if self
            .round_start
            .is_none_or(|start| now.saturating_duration_since(start) >= round)
        {
            self.round_start = Some(now);
            self.previous = self.current.take();
        }
        self.current = Some(match self.current {
            Some((min, samples)) => (min.min(sample), samples.saturating_add(1)),
            None => (sample, 1),
        });
    }

    /// Whether no sample has been taken since the last reset.
    fn is_empty(&self) -> bool {
        self.current.is_none() && self.previous.is_none()
    }

    /// The smallest sample of the last complete round if it holds at least
    /// [`MIN_QUEUE_SAMPLES`]; else of the two rounds, once they hold as
    /// many between them (a window of a few packets takes several rounds to
    /// give that many samples).
    fn min(&self) -> Option<Duration> {
        if let Some((min, samples)) = self.previous {
            if samples >= MIN_QUEUE_SAMPLES {
                return Some(min);
            }
        }
        let rounds = [self.previous, self.current];
        let samples: u32 = rounds.iter().flatten().map(|&(_, n)| n).sum();
        if samples < MIN_QUEUE_SAMPLES {
            return None;
        }
        rounds.iter().flatten().map(|&(min, _)| min).min()
    }
}

/// Rounds over which [`DeliveryRate`] keeps its largest sample.
const DELIVERY_ROUNDS: usize = 10;

/// The rate of delivered bytes, one sample per round trip (rounds in which
/// the sender ran out of data are left out), and the largest of the last
/// [`DELIVERY_ROUNDS`]. A round's delivered bytes are those acknowledged plus
/// those lost, the lost counted up to [`TRAIN_OVER_ACKED`] times the
/// acknowledged: a cap drawn from acknowledged bytes alone would shrink with
/// the window on a path that loses more than the cap allows for, round after
/// round, down to the minimum; counting the losses keeps it above the window
/// at any random loss up to 75 %, and still bounded where a queue drops
/// nearly everything.
#[derive(Debug, Clone, Copy, Default)]
struct DeliveryRate {
    /// When the current round began, and the bytes acknowledged and lost in
    /// it.
    round: Option<(Instant, u64, u64)>,
    /// Whether an acknowledgement in the current round was app-limited.
    app_limited: bool,
    /// The last rounds' rates, bytes per second, a ring.
    samples: [u64; DELIVERY_ROUNDS],
    /// Samples taken.
    taken: usize,
}

impl DeliveryRate {
    fn on_ack(&mut self, now: Instant, bytes: u64, app_limited: bool, srtt: Duration) {
        let Some((start, acked, lost)) = self.round else {
            self.round = Some((now, 0, 0));
            self.app_limited = app_limited;
            return;
        };
        let acked = acked.saturating_add(bytes);
        self.app_limited |= app_limited;
        let elapsed = now.saturating_duration_since(start);
        if elapsed < srtt || elapsed.is_zero() {
            self.round = Some((start, acked, lost));
            return;
        }
        if !self.app_limited {
            let counted_lost = lost.min((acked as f64 * TRAIN_OVER_ACKED) as u64);
            let delivered = acked.saturating_add(counted_lost);
            let rate = u128::from(delivered) * 1_000_000_000 / elapsed.as_nanos();
            self.samples[self.taken % DELIVERY_ROUNDS] = u64::try_from(rate).unwrap_or(u64::MAX);
            self.taken = self.taken.saturating_add(1);
        }
        self.round = Some((now, 0, 0));
        self.app_limited = false;
    }

    fn on_loss(&mut self, bytes: u64) {
        if let Some((_, _, lost)) = &mut self.round {
            *lost = lost.saturating_add(bytes);
        }
    }

    /// The largest rate of the last rounds, once there is one.
    fn max(&self) -> Option<u64> {
        (self.taken > 0).then(|| self.samples.iter().copied().max().unwrap_or(0))
    }
}

/// Drains that did not drain this many times in a row mean another flow
/// holds the queue: the queue target is set aside until the queue is seen
/// below it again.
const FUTILE_DRAINS: u32 = 2;

/// Round trips after a drain in which the queue should fall below the
/// target.
const DRAIN_ROUNDS: u32 = 3;

/// Round trips a flow competes on loss, leaving the queue to the flow it
/// took to hold it, before it tries draining again: ltx flows whose drains
/// fall out of step each see the others' queue stand, and one that stopped
/// draining for good would grow by its additive increase while the others
/// drained and shrank, to twice their share and more.
const COMPETE_ROUNDS: u32 = 32;

/// Watches the queue-target response: a flow that drains the queue it built
/// sees it fall; one that shares a queue with a flow that fills any buffer
/// (a loss-based TCP) does not, and would only starve itself by draining
/// again. It then competes on loss, as Coded TCP does, until the queue is
/// seen below the target again.
#[derive(Debug, Clone, Copy, Default)]
struct DrainWatch {
    /// When the last drain was.
    last: Option<Instant>,
    /// Drains in a row after which the queue stayed above the target.
    futile: u32,
    /// Whether the queue stood above the target since the last drain.
    stood: bool,
    /// Since when another flow is taken to hold the queue.
    competing: Option<Instant>,
}

impl DrainWatch {
    /// Whether a drain is allowed at `now`, given whether the standing
    /// queue is above the target.
    fn allows(&mut self, now: Instant, above: bool, srtt: Duration) -> bool {
        if !above {
            // The queue fell below the target: the drains work.
            self.futile = 0;
            self.competing = None;
            self.stood = false;
            return false;
        }
        if self
            .competing
            .is_some_and(|since| now.saturating_duration_since(since) >= srtt * COMPETE_ROUNDS)
        {
            // Drains were futile a while ago; the flows that held the queue
            // then may have left, or be ltx flows whose drains fell out of
            // step with this one's: try again. A loss-based flow that still
            // holds it makes the next two futile too.
            self.competing = None;
            self.futile = 0;
        }
        let Some(last) = self.last else {
            return self.competing.is_none();
        };
        if now.saturating_duration_since(last) < srtt * DRAIN_ROUNDS {
            self.stood = true;
            return false;
        }
        if self.stood {
            self.futile = self.futile.saturating_add(1);
            self.stood = false;
            if self.futile >= FUTILE_DRAINS {
                self.competing = Some(now);
            }
        }
        self.competing.is_none()
    }

    /// A drain happened at `now`.
    fn drained(&mut self, now: Instant) {
        self.last = Some(now);
        self.stood = false;
    }
}

/// The Coded TCP controller: the window backs off by `RTTmin / RTT` on loss,
/// by 0.8 on ECN, and starts from a measured bandwidth-delay product.
#[derive(Debug, Clone)]
pub struct Ctcp {
    config: Arc<CtcpConfig>,
    max_datagram: u64,
    window: u64,
    in_startup: bool,
    /// When the current start-up round began: at its first ACK.
    round_start: Option<Instant>,
    train: Option<Train>,
    /// The last RTT samples of start-up, a ring.
    recent_rtts: [Duration; QUEUE_SAMPLES],
    /// How many samples `recent_rtts` has taken.
    rtt_samples: u64,
    /// The largest delivery rate measured in start-up, bytes per second:
    /// the larger of `settled_rate` and `round_pair_rate`.
    max_rate: Option<u64>,
    /// The largest rate of the start-up rounds before this one and of every
    /// ACK train so far.
    settled_rate: Option<u64>,
    /// This start-up round's packet-pair rate so far: the median of all its
    /// pair samples, which replaces the one taken from its first few.
    round_pair_rate: Option<u64>,
    /// The rate at which the measured rate last grew by
    /// [`PLATEAU_GROWTH`], and the start-up rounds since.
    plateau: Option<(u64, u32)>,
    /// Start-up rounds that ended without any rate measured.
    rounds_without_rate: u32,
    /// The acknowledged rate of the last ACK train that had one.
    last_train_rate: Option<u64>,
    /// The rate of the last ACK train that had one, lost slots counted.
    last_train_slots: Option<u64>,
    /// Packet-pair dispersion: the ACK group being gathered (all ACKs at one
    /// instant) and the one before it.
    pairs: PairDispersion,
    /// Bytes acknowledged towards the next additive increase.
    acked_towards_increase: u64,
    /// Losses of packets sent at or before this are not answered.
    loss_epoch: Option<Instant>,
    /// The smallest RTT sample of packets sent after `loss_epoch`, over the
    /// last round trip or two: the queue that stands now.
    standing: StandingQueue,
    /// ECN marks on packets sent at or before this are not answered.
    ecn_epoch: Option<Instant>,
    /// The queue-target response: drains that did not drain, and whether
    /// another flow holds the queue.
    drains: DrainWatch,
    /// The rate of delivered bytes over the last rounds.
    delivered: DeliveryRate,
    /// Datagrams of this start-up round's probe burst still to send.
    burst_left: u64,
    /// The RTT samples' jitter in this start-up round.
    jitter: RoundJitter,
    /// The bottleneck's rate read from the handshake's answers, where the
    /// initial window is more than the path holds: the first flight is
    /// paced at it until start-up measures a rate of its own.
    first_flight_rate: Option<u64>,
    /// Whether the rate was measured on a path steady enough to send at it
    /// (a jitter of the round's RTT samples within [`STEADY_JITTER`] of
    /// RTTmin); otherwise start-up grows the window until a queue shows.
    measured: bool,
}

impl Ctcp {
    /// A controller in start-up with the configured initial window.
    pub fn new(config: Arc<CtcpConfig>, now: Instant, max_datagram: u16) -> Self {
        let _ = now;
        let max_datagram = u64::from(max_datagram).max(1);
        let window = config.initial_window_packets.saturating_mul(max_datagram);
        let max_rate = config.rate_hint;
        Self {
            config,
            max_datagram,
            window,
            in_startup: true,
            round_start: None,
            train: None,
            recent_rtts: [Duration::ZERO; QUEUE_SAMPLES],
            rtt_samples: 0,
            max_rate,
            settled_rate: max_rate,
            round_pair_rate: None,
            last_train_rate: None,
            last_train_slots: None,
            plateau: None,
            rounds_without_rate: 0,
            pairs: PairDispersion::default(),
            acked_towards_increase: 0,
            loss_epoch: None,
            standing: StandingQueue::default(),
            ecn_epoch: None,
            drains: DrainWatch::default(),
            delivered: DeliveryRate::default(),
            burst_left: 0,
            jitter: RoundJitter::default(),
            first_flight_rate: None,
            measured: false,
        }
    }

    /// Whether the controller is still in start-up.
    pub fn in_startup(&self) -> bool {
        self.in_startup
    }

    /// The largest delivery rate measured in start-up, in bytes per second.
    pub fn max_delivery_rate(&self) -> Option<u64> {
        self.max_rate
    }

    fn min_window(&self) -> u64 {
        min_window(self.max_datagram)
    }

    /// `RTTmin / RTT`, in `[0, 1]`, where `RTT` is the standing queue (see
    /// [`StandingQueue`]); 1 without enough samples.
    fn rtt_ratio(&self, rtt: &RttEstimator) -> f64 {
        let Some(current) = self.standing.min() else {
            return 1.0;
        };
        if current.is_zero() {
            return 1.0;
        }
        (rtt.min().as_secs_f64() / current.as_secs_f64()).clamp(0.0, 1.0)
    }

    /// Multiplies the window by `factor`, down to the minimum.
    fn scale(&mut self, factor: f64) {
        // `as` saturates, and the product is no larger than the window.
        let scaled = (self.window as f64 * factor) as u64;
        self.window = scaled.min(self.window).max(self.min_window());
        self.acked_towards_increase = 0;
    }

    /// The bandwidth-delay product from the measured rate, if any.
    fn bdp(&self, rtt: &RttEstimator) -> Option<u64> {
        let rate = self.max_rate?;
        let bytes = u128::from(rate) * rtt.min().as_nanos() / 1_000_000_000;
        Some(u64::try_from(bytes).unwrap_or(u64::MAX))
    }

    /// The most the window grows to in start-up once a rate is measured:
    /// the measured bandwidth-delay product and room for the probe burst.
    fn startup_cap(&self, rtt: &RttEstimator) -> Option<u64> {
        if self.config.probe_burst == 0 || !self.measured {
            return None;
        }
        let bdp = self.bdp(rtt)?;
        let burst = self.config.probe_burst.saturating_mul(self.max_datagram);
        Some(bdp.saturating_add(burst))
    }

    /// Whether the last RTT samples all show a queue.
    fn queueing(&self, rtt: &RttEstimator) -> bool {
        if self.rtt_samples < QUEUE_SAMPLES as u64 {
            return false;
        }
        let recent_min = self.recent_rtts.iter().min().copied().unwrap_or_default();
        let threshold = rtt.min().mul_f64(self.config.delay_exit_ratio)
            + rtt.queue_margin(self.config.delay_exit_extra);
        recent_min >= threshold
    }

    /// Ends the current train, taking its rate if it spans at least 4
    /// packets, 2 of them acknowledged.
    fn close_train(&mut self) {
        let Some(train) = self.train.take() else {
            return;
        };
        if let Some(acked) = train.acked_rate() {
            self.last_train_rate = Some(acked);
        }
        if let Some(rate) = train.rate() {
            self.last_train_slots = Some(rate);
            self.settled_rate = Some(self.settled_rate.map_or(rate, |max| max.max(rate)));
            self.update_max_rate();
        }
    }

    fn update_max_rate(&mut self) {
        self.max_rate = self.settled_rate.max(self.round_pair_rate);
    }

    /// Takes a packet-pair estimate, capped by the rate of the current (or
    /// last) train: pairs see the bottleneck sooner, but a host that reads
    /// and acknowledges in batches can bunch ACKs, and a pair median then
    /// reads a multiple of the path's rate, while a train's rate spans the
    /// whole flight and shrugs the bunching off. Two caps: by the train's
    /// acknowledged rate, loose enough for the loss a path may have, and by
    /// its rate with the lost packets' slots counted, tighter: lost slots
    /// are placed in the pair samples by send time, which cannot tell apart
    /// packets sent at one instant, and some samples take more than their
    /// share.
    fn take_pair_rate(&mut self, rate: u64, rtt: &RttEstimator) {
        self.measured = self.steady(rtt);
        let current = self.train.as_ref();
        let acked = current.and_then(Train::acked_rate).or(self.last_train_rate);
        let slots = current.and_then(Train::rate).or(self.last_train_slots);
        let mut rate = rate;
        if let Some(acked) = acked {
            rate = rate.min((acked as f64 * PAIR_OVER_TRAIN) as u64);
        }
        if let Some(slots) = slots {
            rate = rate.min((slots as f64 * PAIR_OVER_SLOTS) as u64);
        }
        self.round_pair_rate = Some(rate);
        self.update_max_rate();
    }

    /// The datagrams a start-up round sends back to back to measure the
    /// bottleneck: the configured burst, but at most half the measured
    /// bandwidth-delay product (and at least 2): the burst stands in the
    /// queue whole, and a queue of one product that holds fewer datagrams
    /// than the burst would drop its tail every round. At 2 Mbit/s and
    /// 50 ms (a product of 9 datagrams, 1 MB, seeds 1–3) the cap took the
    /// packets lost to the queue from 5.9 to 5.3 % (the initial window's
    /// overflow is most of the rest), T/T* from 1.038 to 1.024 and the
    /// delay p99 from 633 to 392 ms. In the seed matrix only its smallest
    /// product moved, 9 datagrams at 10 Mbit/s and 10 ms (the delay sweep,
    /// 50 MB: wire bytes per byte 1.0217 → 1.0216 at 0.5 % loss, 1.0687 →
    /// 1.0685 at 5 %); the 100 MB table was not run again.
    fn probe_burst(&self, rtt: &RttEstimator) -> u64 {
        let configured = self.config.probe_burst;
        match self.bdp(rtt) {
            Some(bdp) => configured.min((bdp / self.max_datagram.max(1) / 2).max(2)),
            None => configured,
        }
    }

    /// The datagrams the first flight sends back to back, paced at `rate`
    /// (the handshake's reading) after them: as the probe burst, at most
    /// half the bandwidth-delay product, but enough for the pair samples
    /// that give a rate at once. Without them the first round's rate is its
    /// train's, not trusted from so few ACKs, and start-up paces at twice
    /// the window (5 Mbit/s at 20 ms lost 5.9 % of a 1 MB transfer to the
    /// queue that way).
    fn first_flight_burst(&self, rate: u64, rtt: &RttEstimator) -> u64 {
        let bdp = u128::from(rate) * rtt.min().as_nanos() / 1_000_000_000;
        let half = u64::try_from(bdp / 2).unwrap_or(u64::MAX) / self.max_datagram.max(1);
        let floor = EARLY_PAIR_SAMPLES as u64 + 1;
        half.clamp(floor, floor.max(self.config.probe_burst))
    }

    /// Start-up's own burst in datagrams, and the rate the rest of its
    /// round is paced at: the probe burst once a rate is measured and sent
    /// at, the first flight's burst while it is paced at the handshake's
    /// reading.
    fn own_burst(&self, rtt: &RttEstimator) -> Option<(u64, u64)> {
        if !self.in_startup || self.config.probe_burst == 0 {
            return None;
        }
        match (self.max_rate, self.first_flight_rate) {
            (Some(rate), _) if self.measured => Some((self.probe_burst(rtt), rate)),
            (None, Some(rate)) => Some((self.first_flight_burst(rate, rtt), rate)),
            _ => None,
        }
    }

    /// How long start-up's own burst stands in the queue.
    fn own_burst_queue(&self, rtt: &RttEstimator) -> Duration {
        let Some((datagrams, rate)) = self.own_burst(rtt) else {
            return Duration::ZERO;
        };
        let bytes = u128::from(datagrams.saturating_mul(self.max_datagram));
        let nanos = bytes * 1_000_000_000 / u128::from(rate.max(1));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Whether this start-up round's RTT samples jitter little enough
    /// (within [`STEADY_JITTER`] of RTTmin) for start-up to send at the
    /// rate it measured.
    fn steady(&self, rtt: &RttEstimator) -> bool {
        self.jitter.jitter() <= rtt.min().mul_f64(STEADY_JITTER)
    }

    /// Ends a start-up round: the window is at least the measured BDP, and
    /// start-up ends if the rate has stopped growing.
    fn end_round(&mut self, now: Instant, rtt: &RttEstimator) {
        let paired = match self.pairs.take_median() {
            Some(rate) => {
                self.take_pair_rate(rate, rtt);
                true
            }
            None => false,
        };
        let clean_train_acks = self
            .train
            .as_ref()
            .filter(|train| train.packets == train.acks)
            .map_or(0, |train| train.acks);
        self.close_train();
        // A round without pair samples (a fast path, whose ACKs come too
        // close together for four of them) measured the rate by its train
        // alone: where the train is long and lost nothing, the same test
        // says whether to send at it.
        if !paired && clean_train_acks >= TRUSTED_TRAIN_ACKS && self.max_rate.is_some() {
            self.measured = self.steady(rtt);
        }
        self.settled_rate = self.max_rate;
        self.round_pair_rate = None;
        if let Some(bdp) = self.bdp(rtt) {
            self.window = self.window.max(bdp);
        }
        let Some(rate) = self.max_rate else {
            // Too few ACKs come back for a train or a pair: a path that
            // loses nearly everything (an overflowing queue too shallow to
            // show a delay) would keep start-up growing the window forever.
            self.rounds_without_rate = self.rounds_without_rate.saturating_add(1);
            if self.rounds_without_rate >= NO_RATE_ROUNDS {
                self.exit_startup(now, rtt);
            }
            return;
        };
        match self.plateau {
            Some((found, _)) if rate as f64 >= found as f64 * PLATEAU_GROWTH => {
                self.plateau = Some((rate, 0));
            }
            Some((found, rounds)) => {
                let rounds = rounds.saturating_add(1);
                self.plateau = Some((found, rounds));
                if rounds >= PLATEAU_ROUNDS {
                    self.exit_startup(now, rtt);
                }
            }
            None => self.plateau = Some((rate, 0)),
        }
    }

    /// Leaves start-up at `now`. The exit is a reduction: losses and marks of
    /// packets sent before it met the queue start-up built, and are answered.
    fn exit_startup(&mut self, now: Instant, rtt: &RttEstimator) {
        self.in_startup = false;
        // Start-up's rounds, sent from a window still growing, say less of
        // the path than the rounds after it.
        self.delivered = DeliveryRate::default();
        self.acked_towards_increase = 0;
        match self.bdp(rtt) {
            Some(bdp) => self.window = bdp.max(self.min_window()),
            None => self.scale(self.rtt_ratio(rtt)),
        }
        self.set_loss_epoch(now);
        self.ecn_epoch = Some(now);
    }

    /// After start-up ends on a queue: scales the window by `RTTmin / RTT`,
    /// RTT the smallest of the samples that showed the queue, the rule of
    /// congestion avoidance. A queue stands in start-up when the rates
    /// measured add up to more than the bottleneck: flows that start
    /// together each measure it at a different moment, one nearly alone and
    /// the next beside it, and each jumps to its own measure. Every flow
    /// that sees the queue scales down by the same factor, and what they
    /// keep in flight together is then what the path holds without it, so
    /// the queue empties before it overflows.
    ///
    /// `own` is the queue start-up's own burst keeps: sent at once and
    /// then paced at the rate, the burst stands in the queue for the whole
    /// round, and it is not an excess of the rate. Counted in, it had a
    /// flow alone on a path of a few tens of datagrams leave start-up below
    /// the path: the burst of 10 on a product of 23 (10 Mbit/s, 25 ms)
    /// reads as a queue of 42 % of RTTmin, and the window was cut to 0.75
    /// of the product, where additive increase takes a round trip per
    /// datagram to fill it again (1080 KiB: T/T* 1.037; 1.003 with the
    /// burst left out).
    fn drain_startup_queue(&mut self, rtt: &RttEstimator, own: Duration) {
        let Some(&queued) = self.recent_rtts.iter().min() else {
            return;
        };
        let queued = queued.saturating_sub(own).max(rtt.min());
        if queued.is_zero() {
            return;
        }
        self.scale(rtt.min().as_secs_f64() / queued.as_secs_f64());
    }

    /// The most the window may grow to in congestion avoidance, with a
    /// `delivery_cap`: that many bandwidth-delay products at the fastest
    /// rate delivered in the last rounds since start-up, never below the
    /// minimum window.
    fn delivery_cap(&self, rtt: &RttEstimator) -> Option<u64> {
        let gain = self.config.delivery_cap?;
        let rate = self.delivered.max()?;
        let bdp = rate as f64 * rtt.min().as_secs_f64();
        Some(((bdp * gain) as u64).max(self.min_window()))
    }

    /// The queue-target response: once a standing queue above the target
    /// has stood for a round trip or two since the last reduction, scales
    /// the window by `RTTmin / RTT`, which empties it (when this flow built
    /// it). Returns whether it did.
    fn drain_standing_queue(&mut self, now: Instant, rtt: &RttEstimator) -> bool {
        let Some(target) = self.config.queue_target else {
            return false;
        };
        let Some(standing) = self.standing.min() else {
            return false;
        };
        let min = rtt.min();
        let limit = min + min.mul_f64(target) + rtt.queue_margin(self.config.delay_exit_extra);
        let above = standing > limit;
        if !self.drains.allows(now, above, rtt.smoothed()) || !above {
            return false;
        }
        self.scale(self.rtt_ratio(rtt));
        self.set_loss_epoch(now);
        self.drains.drained(now);
        true
    }

    /// Starts a new loss round at `now`; RTT samples of packets sent before
    /// it no longer describe the queue.
    fn set_loss_epoch(&mut self, now: Instant) {
        self.loss_epoch = Some(now);
        self.standing = StandingQueue::default();
    }
}

impl Controller for Ctcp {
    fn on_sent(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        let _ = (now, bytes, in_flight);
        self.burst_left = self.burst_left.saturating_sub(1);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        if self.loss_epoch.is_none_or(|epoch| sent > epoch) {
            self.standing.on_sample(now, rtt.latest(), rtt.smoothed());
        }
        if !self.in_startup && self.config.delivery_cap.is_some() {
            self.delivered
                .on_ack(now, bytes, app_limited, rtt.smoothed());
        }
        if !self.in_startup {
            if app_limited {
                return;
            }
            if self.drain_standing_queue(now, rtt) {
                return;
            }
            self.acked_towards_increase = self.acked_towards_increase.saturating_add(bytes);
            let increments = self.acked_towards_increase / self.window;
            self.acked_towards_increase %= self.window;
            self.window = self
                .window
                .saturating_add(increments.saturating_mul(self.max_datagram));
            if let Some(cap) = self.delivery_cap(rtt) {
                self.window = self.window.min(cap);
            }
            return;
        }
        match self.round_start {
            Some(start) if sent >= start => {
                self.end_round(now, rtt);
                if !self.in_startup {
                    return;
                }
                self.round_start = Some(now);
                self.burst_left = self.probe_burst(rtt);
                self.jitter = RoundJitter::default();
            }
            Some(_) => {}
            None => self.round_start = Some(now),
        }
        self.pairs.on_ack(now, sent, bytes);
        self.jitter.on_ack(now, rtt.latest());
        // A long first flight gives enough pairs before its round ends: use
        // them at once rather than a round trip later, and the round's later
        // samples as they come. The median of all of them replaces that of
        // the first few: where flows start together, the first packets of a
        // flight meet an empty bottleneck, and the later ones share it with
        // the other flows' flights.
        if let Some(rate) = self.pairs.early_median() {
            self.take_pair_rate(rate, rtt);
            if let Some(bdp) = self.bdp(rtt) {
                self.window = self.window.max(bdp);
            }
        }
        let max_gap = rtt.min() / 4;
        if self
            .train
            .as_ref()
            .is_some_and(|train| now.saturating_duration_since(train.last) > max_gap)
        {
            self.close_train();
        }
        match &mut self.train {
            Some(train) => {
                train.last = train.last.max(now);
                train.acks = train.acks.saturating_add(1);
                train.packets = train.packets.saturating_add(1);
                train.bytes_after_first = train.bytes_after_first.saturating_add(bytes);
                train.acked_after_first = train.acked_after_first.saturating_add(bytes);
            }
            None => {
                self.train = Some(Train {
                    first: now,
                    first_sent: sent,
                    last: now,
                    acks: 1,
                    packets: 1,
                    bytes_after_first: 0,
                    acked_after_first: 0,
                })
            }
        }
        let slot = (self.rtt_samples % QUEUE_SAMPLES as u64) as usize;
        self.recent_rtts[slot] = rtt.latest();
        self.rtt_samples = self.rtt_samples.saturating_add(1);
        if !app_limited {
            self.window = self.window.saturating_add(bytes);
            // Once the bottleneck is measured, the window grows only a
            // little past its bandwidth-delay product: the rate measured
            // so far plus the headroom that lets a higher rate show.
            if let Some(cap) = self.startup_cap(rtt) {
                self.window = self.window.min(cap.max(self.initial_window()));
            }
        }
        if self.queueing(rtt) {
            let own = self.own_burst_queue(rtt);
            self.exit_startup(now, rtt);
            self.drain_startup_queue(rtt, own);
        }
    }

    fn on_loss(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        lost_bytes: u64,
        above_baseline: bool,
        rtt: &RttEstimator,
    ) {
        // A loss declared within a train (by an ACK of the train, as
        // packet-threshold detection does) of a packet sent after the
        // train's first took its slot in it: its bytes count. (The
        // connection reports losses one packet at a time.)
        // A loss declared by a time-out, after the train's last ACK, says
        // nothing of its spacing and must not stretch it.
        if !self.in_startup && self.config.delivery_cap.is_some() {
            self.delivered.on_loss(lost_bytes);
        }
        if self.in_startup {
            self.pairs.on_loss(largest_sent, lost_bytes);
            if let Some(train) = &mut self.train {
                if now <= train.last && largest_sent > train.first_sent {
                    train.bytes_after_first = train.bytes_after_first.saturating_add(lost_bytes);
                    train.packets = train.packets.saturating_add(1);
                }
            }
        }
        if self.loss_epoch.is_some_and(|epoch| largest_sent <= epoch) {
            return;
        }
        if self.in_startup {
            // Random loss says nothing about the queue; the delay test does.
            if above_baseline {
                self.exit_startup(now, rtt);
            }
            return;
        }
        // The Coded TCP rule: a loss scales the window by RTTmin / RTT, with
        // RTT the queue that stands now, so random loss
        // on an empty queue costs nothing and a standing queue drains. Loss
        // above the random baseline (the connection's judgement) cuts at
        // least by `congestion_beta`.
        let mut factor = self.rtt_ratio(rtt);
        if above_baseline {
            factor = factor.min(self.config.congestion_beta);
        } else if factor > STANDING_QUEUE {
            return;
        }
        if self.standing.is_empty() && factor >= 1.0 {
            // Nothing is known yet of the queue since the last reduction:
            // keep the round open for a loss that can tell.
            return;
        }
        let before = self.window;
        self.scale(factor);
        // Only where the cut trims a queue within the queue target: a
        // deeper one answers a queue that grew past it, most likely losses
        // of congestion the estimate has taken for random ones (four flows
        // on a queue of nine packets), which room kept would only feed.
        let within_target = self
            .config
            .queue_target
            .is_some_and(|target| factor >= 1.0 / (1.0 + target));
        if !above_baseline && within_target {
            // Never more than the rule itself calls no standing queue: on
            // a window of a few datagrams, two more would be a queue.
            let no_queue = (self.window as f64 * (1.0 / STANDING_QUEUE - 1.0)) as u64;
            let headroom = ACK_CLOCK_HEADROOM
                .saturating_mul(self.max_datagram)
                .min(no_queue);
            self.window = self.window.saturating_add(headroom).min(before);
        }
        self.set_loss_epoch(now);
        if factor <= 0.9 {
            self.ecn_epoch = Some(now);
        }
    }

    fn on_ecn_ce(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        newly_ce: u64,
        rtt: &RttEstimator,
    ) {
        if newly_ce == 0 || self.ecn_epoch.is_some_and(|epoch| largest_sent <= epoch) {
            return;
        }
        if self.in_startup {
            self.exit_startup(now, rtt);
            if self.max_rate.is_none() {
                self.scale(self.config.ecn_beta);
            }
        } else {
            self.scale(self.config.ecn_beta);
        }
        self.ecn_epoch = Some(now);
        self.set_loss_epoch(now);
    }

    fn on_rtt_sample(&mut self, now: Instant, rtt: &RttEstimator) {
        let _ = now;
        // With a known rate, the first sample (the handshake's) is enough
        // for the bandwidth-delay product: the first flight fills the path.
        if self.in_startup && self.config.rate_hint.is_some() {
            if let Some(bdp) = self.bdp(rtt) {
                self.window = self.window.max(bdp);
            }
        }
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let srtt = rtt.smoothed().as_secs_f64().max(1e-6);
        let by_window = self.window as f64 / srtt;
        if self.in_startup {
            // Start-up measures the bottleneck from the spacing of ACKs,
            // which shows it only while packets leave faster than it
            // drains: pace at the gain over the fastest rate measured, and
            // not at all before there is one.
            return match self.max_rate {
                Some(_) if self.burst_left > 0 && self.measured => Some(u64::MAX),
                Some(max) if self.config.probe_burst > 0 && self.measured => Some(max.max(1)),
                Some(max) => {
                    let rate = self.config.startup_pacing_gain * by_window.max(max as f64);
                    Some((rate as u64).max(1))
                }
                None => Some(self.first_flight_rate.unwrap_or(u64::MAX)),
            };
        }
        let rate = self.config.pacing_gain * by_window;
        // `as` saturates; the floor keeps a zero rate from stalling the pacer.
        Some((rate as u64).max(1))
    }

    fn reads_handshake_spacing(&self) -> bool {
        true
    }

    fn on_handshake_spacing(&mut self, now: Instant, rate: u64, rtt: &RttEstimator) {
        let _ = now;
        if !self.in_startup || self.max_rate.is_some() || !rtt.has_sample() || rate == 0 {
            return;
        }
        let bdp = u128::from(rate) * rtt.min().as_nanos() / 1_000_000_000;
        if bdp < u128::from(self.initial_window()) {
            self.first_flight_rate = Some(rate);
        }
    }

    fn pacing_burst(&self, rtt: &RttEstimator) -> Option<u64> {
        // Only where the path holds fewer than two full bursts: elsewhere
        // the pacer's bucket lets some ten datagrams more follow the burst,
        // which start-up's figures were measured with.
        let (datagrams, _) = self.own_burst(rtt)?;
        (datagrams < self.config.probe_burst).then(|| datagrams.saturating_mul(self.max_datagram))
    }

    fn initial_window(&self) -> u64 {
        self.config
            .initial_window_packets
            .saturating_mul(self.max_datagram)
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "ltx"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: u16 = 1200;

    fn rtt_of(min_ms: u64, smoothed_ms: u64) -> RttEstimator {
        let mut rtt = RttEstimator::new(Duration::from_millis(min_ms));
        rtt.update(Duration::ZERO, Duration::from_millis(min_ms));
        for _ in 0..200 {
            rtt.update(Duration::ZERO, Duration::from_millis(smoothed_ms));
        }
        rtt
    }

    #[test]
    fn the_default_leaves_random_loss_on_an_empty_queue_alone() {
        // ltx's addition to the Coded TCP rule: random loss on an empty
        // queue costs nothing (the seed's rule alone would back off).
        let start = Instant::now();
        let mut cc = Ctcp::new(Arc::new(CtcpConfig::default()), start, MTU);
        assert_eq!(cc.name(), "ltx");
        cc.in_startup = false;
        cc.window = 100 * 1200;
        let rtt = rtt_of(100, 105);
        for i in 0..10u32 {
            let at = start + Duration::from_millis(100 + u64::from(i));
            cc.on_ack(at, at - Duration::from_millis(100), 1200, false, &rtt);
        }
        let before = cc.window();
        let at = start + Duration::from_millis(300);
        cc.on_loss(at, at - Duration::from_millis(100), 1200, false, &rtt);
        assert_eq!(cc.window(), before);
    }

    #[test]
    fn the_probe_burst_fits_half_a_small_path() {
        // (bottleneck rate in bytes per second over 50 ms, probe burst);
        // a datagram is 1200 bytes.
        for (rate, burst) in [(250_000, 5), (100_000, 2), (10_000_000, 10)] {
            let start = Instant::now();
            let mut cc = Ctcp::new(Arc::new(CtcpConfig::default()), start, MTU);
            let rtt = rtt_of(50, 50);
            cc.max_rate = Some(rate);
            cc.settled_rate = Some(rate);
            cc.round_start = Some(start);
            // The first ACK of a packet sent after the round began starts
            // the next round, with its probe burst.
            let now = start + Duration::from_millis(60);
            cc.on_ack(now, start + Duration::from_millis(10), 1200, false, &rtt);
            assert!(cc.in_startup(), "rate {rate}");
            assert_eq!(cc.burst_left, burst, "rate {rate}: BDP {:?}", cc.bdp(&rtt));
        }
    }

    #[test]
    fn the_first_flight_is_paced_where_the_handshake_reads_a_small_path() {
        // 50 ms; a datagram is 1200 bytes, the initial window 32 of them
        // (38 400 bytes). (rate read by the handshake, bytes per second;
        // pacing rate of the first flight; its burst in datagrams, None
        // where the pacer's own bucket of ten is no more).
        let cases = [
            // A product of 8 datagrams: paced, a burst of 5 (enough for
            // four pair samples, though more than half the product).
            (192_000, Some(192_000), Some(5)),
            // 25 datagrams: paced, the pacer's burst.
            (600_000, Some(600_000), None),
            // 42 datagrams hold the window: sent at once, as without a
            // reading.
            (1_000_000, None, None),
        ];
        for (rate, paced, burst) in cases {
            let start = Instant::now();
            let mut cc = Ctcp::new(Arc::new(CtcpConfig::default()), start, MTU);
            let rtt = rtt_of(50, 50);
            assert!(cc.reads_handshake_spacing());
            cc.on_handshake_spacing(start, rate, &rtt);
            let expected = paced.or(Some(u64::MAX));
            assert_eq!(cc.pacing_rate(&rtt), expected, "rate {rate}");
            assert_eq!(
                cc.pacing_burst(&rtt),
                burst.map(|d| d * 1200),
                "rate {rate}"
            );
        }
    }

    #[test]
    fn a_random_loss_on_a_short_queue_cuts_to_the_path_and_two_datagrams() {
        // (window in datagrams, RTT in ms over a minimum of 100, whether
        // the loss is above the baseline, most datagrams kept over the cut;
        // never more than a ninth of what the cut left).
        let cases = [
            // A queue within the target: two datagrams for the ACK clock.
            (100, 115, false, 2.0),
            // Not for congestion.
            (100, 115, true, 0.0),
            // A small window keeps less.
            (10, 115, false, 2.0),
            // A queue past the target: nothing kept.
            (100, 200, false, 0.0),
        ];
        let start = Instant::now();
        for (window, rtt_ms, above_baseline, kept) in cases {
            let mut cc = Ctcp::new(Arc::new(CtcpConfig::default()), start, MTU);
            cc.in_startup = false;
            cc.window = window * 1200;
            let rtt = rtt_of(100, rtt_ms);
            // Two rounds of ACKs: a queue past the target drains in the
            // first (and not again for three round trips), so the loss
            // meets the queue the second shows.
            for round in [300, 400] {
                for i in 0..10 {
                    let at = start + Duration::from_millis(round + i);
                    cc.on_ack(at, at - Duration::from_millis(50), 1200, false, &rtt);
                }
            }
            let before = cc.window() as f64;
            let at = start + Duration::from_millis(500);
            cc.on_loss(
                at,
                at - Duration::from_millis(100),
                1200,
                above_baseline,
                &rtt,
            );
            let factor = (100.0 / rtt_ms as f64).min(if above_baseline { 0.85 } else { 1.0 });
            let cut = before * factor;
            let want = cut + (kept * 1200.0_f64).min(cut / 9.0);
            let got = cc.window() as f64;
            assert!(
                (got - want).abs() <= 2.0,
                "window {window}, RTT {rtt_ms} ms, above baseline {above_baseline}: \
                 window {got}, want {want}"
            );
        }
    }

    #[test]
    fn a_rounds_later_pairs_replace_the_rate_its_first_pairs_read() {
        // A first flight of 32 datagrams meets an empty bottleneck for its
        // first 8 (ACKs 200 µs apart: 6 MB/s), then three other flows'
        // flights, and its datagrams take every fourth slot (800 µs apart).
        let start = Instant::now();
        let mut cc = Ctcp::new(Arc::new(CtcpConfig::default()), start, MTU);
        let mut rtt = RttEstimator::new(Duration::from_millis(100));
        let mut at = start + Duration::from_millis(100);
        let mut first_read = None;
        for i in 0..32u32 {
            at += Duration::from_micros(if i < 8 { 200 } else { 800 });
            rtt.update(Duration::ZERO, at - start);
            cc.on_ack(at, start, 1200, false, &rtt);
            first_read = first_read.or(cc.max_delivery_rate());
        }
        let first = first_read.expect("a rate from the first pairs");
        assert!((4_000_000..=7_000_000).contains(&first), "first {first}");
        let rate = cc.max_delivery_rate().expect("a rate");
        assert!((1_300_000..=1_800_000).contains(&rate), "rate {rate}");
        // The window follows: one bandwidth-delay product at the later rate
        // (with the probe burst), not at the first.
        assert!(cc.window() < 300_000, "window {}", cc.window());
    }

    /// A burst of 64 datagrams sent at one instant crosses a bottleneck
    /// that takes `gap` per datagram and loses every `lose`-th one after
    /// it; the ACKs of the others come back spaced by the bottleneck, and
    /// each loss is declared three datagrams later, as packet-threshold
    /// detection does. Returns the pairs' median.
    fn burst_through_lossy_bottleneck(lose: Option<u64>) -> u64 {
        let start = Instant::now();
        let sent = start;
        let gap = Duration::from_micros(200);
        let mut pairs = PairDispersion::default();
        let mut lost = Vec::new();
        for i in 0..64u64 {
            let at = start + Duration::from_millis(100) + gap * (i as u32);
            if lose.is_some_and(|k| i % k == k - 1) {
                lost.push(i);
            } else {
                pairs.on_ack(at, sent, 1200);
            }
            // Losses three slots back are declared by this ACK.
            if let Some(pos) = lost.iter().position(|&l| l + 3 == i) {
                lost.remove(pos);
                pairs.on_loss(sent, 1200);
            }
        }
        pairs.take_median().expect("enough samples")
    }

    #[test]
    fn pair_samples_count_the_slots_of_lost_packets() {
        // 1200 bytes per 200 µs: 6 MB/s.
        let clean = burst_through_lossy_bottleneck(None);
        assert!((5_900_000..=6_100_000).contains(&clean), "{clean}");
        // Every other packet lost after the bottleneck: its slot still
        // spaced the ACKs. Without counting lost slots the median read
        // about half the rate.
        for lose in [2, 3, 5] {
            let median = burst_through_lossy_bottleneck(Some(lose));
            assert!(
                (5_000_000..=7_200_000).contains(&median),
                "one in {lose} lost: {median}"
            );
        }
    }
}
