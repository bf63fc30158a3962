//! BBR (version 1 shape): a model of the path — its bottleneck bandwidth
//! and its round-trip propagation time — rather than a reaction to loss.
//!
//! - *Bandwidth*: each acknowledgement gives a delivery-rate sample, the
//!   bytes delivered between the packet's sending and its acknowledgement
//!   over the longer of the send and acknowledgement intervals; the
//!   estimate is the largest sample of the last ten round trips.
//! - *Propagation time*: the smallest RTT sample of the last ten seconds.
//! - *Modes*: STARTUP paces at `2/ln 2` times the estimate, window gain
//!   the same, until three round trips in a row fail to raise the
//!   estimate by a quarter; DRAIN paces at the inverse gain until what is
//!   in flight fits the bandwidth-delay product; PROBE_BW cycles its pacing
//!   gain through `1.25, 0.75, 1, 1, 1, 1, 1, 1`, one phase per RTT, with a
//!   window of twice the BDP; PROBE_RTT, when the minimum is ten seconds
//!   old, holds four datagrams in flight for 200 ms and a round trip to
//!   measure it afresh.
//!
//! Loss is not a signal: random loss only lowers the delivery rate it
//! measures (by the loss rate), so the window stays near twice the BDP
//! however lossy the path.
//!
//! Deviations: the connection does not report per-packet delivery state,
//! so the controller keeps it itself, keyed by send time (packets sent at
//! one instant share the delivered count, so they share a record); samples
//! whose interval is shorter than the minimum RTT are discarded, as Linux
//! does; PROBE_BW starts at its third phase rather than a random one (the
//! controller draws no randomness); there is no packet conservation in
//! recovery and no response to ECN, as in BBRv1; the long-term bandwidth
//! (policer) model is left out.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::newreno::pacing;
use ltx_proto::congestion::{Controller, ControllerFactory};
use ltx_proto::rtt::RttEstimator;

/// STARTUP's pacing and window gain, `2 / ln 2`.
const HIGH_GAIN: f64 = 2.885;

/// PROBE_BW's pacing gains, one phase per minimum RTT.
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

/// PROBE_BW's window gain.
const WINDOW_GAIN: f64 = 2.0;

/// Round trips the bandwidth filter remembers.
const BW_ROUNDS: u64 = 10;

/// How long a minimum RTT stands before PROBE_RTT measures it again.
const MIN_RTT_LIFETIME: Duration = Duration::from_secs(10);

/// How long PROBE_RTT holds the window down.
const PROBE_RTT_TIME: Duration = Duration::from_millis(200);

/// The window in PROBE_RTT and the floor of every window, in datagrams.
const MIN_PACKETS: u64 = 4;

/// Delivery records kept; older ones are dropped first.
const MAX_RECORDS: usize = 1 << 16;

/// The configuration of [`Bbr`], and its factory.
#[derive(Debug, Clone)]
pub struct BbrConfig {
    initial_window_packets: u64,
}

impl Default for BbrConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: 10,
        }
    }
}

impl BbrConfig {
    /// The initial window in datagrams (default 10; at least 4).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.initial_window_packets = value.max(MIN_PACKETS);
        self
    }
}

impl ControllerFactory for BbrConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(Bbr::new(self, now, max_datagram))
    }

    fn name(&self) -> &'static str {
        "bbr"
    }
}

/// BBR's state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbrMode {
    /// Doubling the delivery rate every round trip.
    Startup,
    /// Draining the queue STARTUP built.
    Drain,
    /// Cycling the pacing gain around the estimated bandwidth.
    ProbeBw,
    /// Holding the window down to measure the propagation time.
    ProbeRtt,
}

/// What was delivered when a packet was sent.
#[derive(Debug, Clone, Copy)]
struct DeliveryRecord {
    delivered: u64,
    delivered_at: Instant,
    /// When the packet most recently acknowledged at the time was sent.
    first_sent: Instant,
}

/// The BBR controller.
#[derive(Debug, Clone)]
pub struct Bbr {
    max_datagram: u64,
    initial_window: u64,
    window: u64,
    mode: BbrMode,
    in_flight: u64,
    delivered: u64,
    delivered_at: Option<Instant>,
    last_acked_sent: Option<Instant>,
    records: BTreeMap<Instant, DeliveryRecord>,
    round: u64,
    next_round_delivered: u64,
    /// The largest sample of each recent round: (round, bytes per second).
    bw_rounds: VecDeque<(u64, u64)>,
    min_rtt: Option<Duration>,
    min_rtt_at: Option<Instant>,
    full_bw: u64,
    rounds_without_growth: u32,
    filled_pipe: bool,
    cycle_index: usize,
    cycle_start: Option<Instant>,
    probe_rtt_until: Option<Instant>,
    probe_rtt_round: Option<u64>,
}

impl Bbr {
    /// A controller in STARTUP with the configured initial window.
    pub fn new(config: &BbrConfig, now: Instant, max_datagram: u16) -> Self {
        let _ = now;
        let max_datagram = u64::from(max_datagram).max(1);
        let initial_window = config
            .initial_window_packets
            .max(MIN_PACKETS)
            .saturating_mul(max_datagram);
        Self {
            max_datagram,
            initial_window,
            window: initial_window,
            mode: BbrMode::Startup,
            in_flight: 0,
            delivered: 0,
            delivered_at: None,
            last_acked_sent: None,
            records: BTreeMap::new(),
            round: 0,
            next_round_delivered: 0,
            bw_rounds: VecDeque::new(),
            min_rtt: None,
            min_rtt_at: None,
            full_bw: 0,
            rounds_without_growth: 0,
            filled_pipe: false,
            cycle_index: 0,
            cycle_start: None,
            probe_rtt_until: None,
            probe_rtt_round: None,
        }
    }

    /// The current mode.
    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// The bottleneck bandwidth estimate, bytes per second.
    pub fn bandwidth(&self) -> Option<u64> {
        self.bw_rounds.iter().map(|(_, bw)| *bw).max()
    }

    /// The propagation-time estimate.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// The estimated bandwidth-delay product, bytes.
    pub fn bdp(&self) -> Option<u64> {
        let bw = self.bandwidth()?;
        let rtt = self.min_rtt?;
        let bytes = u128::from(bw) * rtt.as_nanos() / 1_000_000_000;
        Some(u64::try_from(bytes).unwrap_or(u64::MAX))
    }

    fn floor(&self) -> u64 {
        MIN_PACKETS.saturating_mul(self.max_datagram)
    }

    fn pacing_gain(&self) -> f64 {
        match self.mode {
            BbrMode::Startup => HIGH_GAIN,
            BbrMode::Drain => 1.0 / HIGH_GAIN,
            BbrMode::ProbeBw => CYCLE[self.cycle_index],
            BbrMode::ProbeRtt => 1.0,
        }
    }

    fn target_window(&self) -> Option<u64> {
        let gain = match self.mode {
            BbrMode::Startup | BbrMode::Drain => HIGH_GAIN,
            BbrMode::ProbeBw | BbrMode::ProbeRtt => WINDOW_GAIN,
        };
        let bdp = self.bdp()?;
        // `as` saturates; three datagrams cover delayed and batched ACKs.
        let target = (bdp as f64 * gain) as u64;
        Some(
            target
                .saturating_add(3 * self.max_datagram)
                .max(self.floor()),
        )
    }

    /// Takes one delivery-rate sample of round `round`.
    fn take_bandwidth(&mut self, rate: u64) {
        match self.bw_rounds.back_mut() {
            Some((round, bw)) if *round == self.round => *bw = (*bw).max(rate),
            _ => self.bw_rounds.push_back((self.round, rate)),
        }
        while self
            .bw_rounds
            .front()
            .is_some_and(|(round, _)| round + BW_ROUNDS <= self.round)
        {
            self.bw_rounds.pop_front();
        }
    }

    fn check_full_pipe(&mut self) {
        let Some(bw) = self.bandwidth() else {
            return;
        };
        if bw as f64 >= self.full_bw as f64 * 1.25 {
            self.full_bw = bw;
            self.rounds_without_growth = 0;
            return;
        }
        self.rounds_without_growth += 1;
        if self.rounds_without_growth >= 3 {
            self.filled_pipe = true;
        }
    }

    fn enter_probe_bw(&mut self, now: Instant) {
        self.mode = BbrMode::ProbeBw;
        self.cycle_index = 2;
        self.cycle_start = Some(now);
    }

    fn advance_cycle(&mut self, now: Instant) {
        let Some(min_rtt) = self.min_rtt else {
            return;
        };
        let Some(start) = self.cycle_start else {
            self.cycle_start = Some(now);
            return;
        };
        let bdp = self.bdp().unwrap_or(0);
        let elapsed = now.saturating_duration_since(start) > min_rtt;
        let gain = CYCLE[self.cycle_index];
        // The draining phase may end early once the queue it drains is
        // gone.
        let drained = gain < 1.0 && self.in_flight <= bdp;
        if elapsed || drained {
            self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
            self.cycle_start = Some(now);
        }
    }

    fn update_probe_rtt(&mut self, now: Instant, min_rtt_expired: bool) {
        if min_rtt_expired && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.probe_rtt_until = None;
            self.probe_rtt_round = None;
        }
        if self.mode != BbrMode::ProbeRtt {
            return;
        }
        match self.probe_rtt_until {
            None if self.in_flight <= self.floor() => {
                self.probe_rtt_until = Some(now + PROBE_RTT_TIME);
                self.probe_rtt_round = Some(self.round);
            }
            Some(until) if now >= until && self.probe_rtt_round.is_some_and(|r| self.round > r) => {
                self.min_rtt_at = Some(now);
                if self.filled_pipe {
                    self.enter_probe_bw(now);
                } else {
                    self.mode = BbrMode::Startup;
                }
            }
            _ => {}
        }
    }
}

impl Controller for Bbr {
    fn on_sent(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        if in_flight <= bytes {
            // Nothing was in flight: the delivery clock restarts now, so
            // the idle time is not counted as a slow delivery.
            self.delivered_at = Some(now);
            self.last_acked_sent = Some(now);
        }
        self.in_flight = in_flight;
        let record = DeliveryRecord {
            delivered: self.delivered,
            delivered_at: self.delivered_at.unwrap_or(now),
            first_sent: self.last_acked_sent.unwrap_or(now),
        };
        self.records.entry(now).or_insert(record);
        if self.records.len() > MAX_RECORDS {
            self.records.pop_first();
        }
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let _ = rtt;
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.delivered = self.delivered.saturating_add(bytes);
        self.delivered_at = Some(now);
        self.last_acked_sent = Some(self.last_acked_sent.map_or(sent, |s| s.max(sent)));

        let sample = now.saturating_duration_since(sent);
        let expired = self
            .min_rtt_at
            .is_some_and(|at| now.saturating_duration_since(at) > MIN_RTT_LIFETIME);
        if self.min_rtt.is_none_or(|min| sample <= min) || expired {
            self.min_rtt = Some(sample);
            self.min_rtt_at = Some(now);
        }

        let mut round_start = false;
        if let Some(record) = self.records.get(&sent).copied() {
            if record.delivered >= self.next_round_delivered {
                self.next_round_delivered = self.delivered;
                self.round += 1;
                round_start = true;
            }
            let ack_elapsed = now.saturating_duration_since(record.delivered_at);
            let send_elapsed = sent.saturating_duration_since(record.first_sent);
            let interval = ack_elapsed.max(send_elapsed);
            if interval >= self.min_rtt.unwrap_or_default() && !interval.is_zero() {
                let bytes = u128::from(self.delivered - record.delivered);
                let rate = bytes * 1_000_000_000 / interval.as_nanos();
                let rate = u64::try_from(rate).unwrap_or(u64::MAX);
                if !app_limited || rate >= self.bandwidth().unwrap_or(0) {
                    self.take_bandwidth(rate);
                }
            }
            // Records of packets sent before this one are no longer needed
            // for rates (a late acknowledgement of one gives no sample).
            self.records = self.records.split_off(&sent);
        }

        match self.mode {
            BbrMode::Startup => {
                if round_start {
                    self.check_full_pipe();
                }
                if self.filled_pipe {
                    self.mode = BbrMode::Drain;
                }
            }
            BbrMode::Drain => {
                if self.in_flight <= self.bdp().unwrap_or(0) {
                    self.enter_probe_bw(now);
                }
            }
            BbrMode::ProbeBw => self.advance_cycle(now),
            BbrMode::ProbeRtt => {}
        }
        self.update_probe_rtt(now, expired && self.mode != BbrMode::Startup);

        match self.target_window() {
            Some(target) if self.filled_pipe => {
                self.window = self.window.saturating_add(bytes).min(target);
            }
            Some(target) if self.window < target => {
                self.window = self.window.saturating_add(bytes);
            }
            Some(_) => {}
            None => self.window = self.window.saturating_add(bytes),
        }
        self.window = self.window.max(self.floor());
    }

    fn on_loss(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        lost_bytes: u64,
        above_baseline: bool,
        rtt: &RttEstimator,
    ) {
        let _ = (now, largest_sent, above_baseline, rtt);
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
    }

    fn window(&self) -> u64 {
        if self.mode == BbrMode::ProbeRtt {
            return self.window.min(self.floor());
        }
        self.window
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let gain = self.pacing_gain();
        match self.bandwidth() {
            // `as` saturates; the floor keeps a zero rate from stalling.
            Some(bw) if bw > 0 => Some(((bw as f64 * gain) as u64).max(1)),
            _ => Some(pacing(HIGH_GAIN, self.window, rtt)),
        }
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "bbr"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::test_path::{run, TestPath};

    const MTU: u16 = 1200;

    #[test]
    fn measures_the_path_and_leaves_startup() {
        let path = TestPath::new(48, 100, 2.0);
        let start = Instant::now();
        let mut cc = Bbr::new(&BbrConfig::default(), start, MTU);
        let out = run(&mut cc, &path, start, Duration::from_secs(8), 1);
        assert_eq!(cc.mode(), BbrMode::ProbeBw);
        let bw = cc.bandwidth().expect("a bandwidth sample") as f64;
        assert!((bw / path.rate as f64 - 1.0).abs() < 0.1, "bandwidth {bw}");
        let min_rtt = cc.min_rtt().expect("an RTT sample");
        assert!(min_rtt >= path.base_rtt && min_rtt < path.base_rtt + Duration::from_millis(2));
        let carried = out.delivered as f64 / (path.rate as f64 * 8.0);
        assert!(carried > 0.8, "carried {carried}");
    }

    #[test]
    fn keeps_its_window_near_twice_the_bdp_under_random_loss() {
        for loss in [0.05, 0.2] {
            let mut path = TestPath::new(48, 100, 2.0);
            path.loss = loss;
            let start = Instant::now();
            let mut cc = Bbr::new(&BbrConfig::default(), start, MTU);
            let out = run(&mut cc, &path, start, Duration::from_secs(30), 2);
            let late = out.windows_between(Duration::from_secs(10), Duration::from_secs(30));
            let mean = late.iter().sum::<u64>() as f64 / late.len() as f64;
            let ratio = mean / path.bdp() as f64;
            // The delivery rate reads low by the loss rate, so the window
            // is 2 × (1 − p) × BDP, less PROBE_RTT's dips.
            assert!(
                ratio > 1.4 && ratio < 2.4,
                "loss {loss}: window / BDP {ratio}"
            );
            let carried = out.delivered as f64 / (path.rate as f64 * 30.0 * (1.0 - loss));
            assert!(carried > 0.85, "loss {loss}: carried {carried}");
        }
    }

    #[test]
    fn probes_the_rtt_when_the_minimum_is_stale() {
        let path = TestPath::new(48, 100, 2.0);
        let start = Instant::now();
        let mut cc = Bbr::new(&BbrConfig::default(), start, MTU);
        let out = run(&mut cc, &path, start, Duration::from_secs(25), 3);
        let floor = 4 * u64::from(MTU);
        let before = out.windows_between(Duration::from_secs(2), Duration::from_secs(9));
        assert!(before.iter().all(|w| *w > floor));
        let after = out.windows_between(Duration::from_secs(10), Duration::from_secs(25));
        assert!(after.contains(&floor), "no PROBE_RTT window after 10 s");
    }
}
