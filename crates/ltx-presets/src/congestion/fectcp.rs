//! FECTCP's window control (seed 004): slow start and congestion avoidance
//! driven by time-outs long enough to hide isolated losses.
//!
//! Every segment has a time-out `ΔT = (1 + β)(sRTT + σ)`, `β = 0.3`. ACKs
//! are cumulative, so a lost segment is covered as soon as the ACK of any
//! later segment arrives: with segments evenly spaced, an isolated loss is
//! covered about one segment's spacing after its own ACK was due, well
//! within `ΔT`, and the window never hears of it. Congestion loses runs of
//! segments spanning a longer time; then no later ACK comes back within
//! `ΔT`, the time-out fires, and `ssthresh ← max(W/2, 2)`,
//! `W ← max(W/2, 1)`.
//!
//! Here the connection declares losses and reports acknowledgements
//! packet by packet; the controller keeps the recent acknowledgements'
//! send and arrival times, and a loss of a packet sent at `s` is a
//! time-out exactly when no packet sent after `s` was acknowledged by
//! `s + ΔT`.
//!
//! Deviations: the window counts bytes and starts at (and never goes
//! below) two datagrams, the minimum of every ltx controller, where the
//! seed starts at one segment; σ is the RTT's mean deviation (the seed's
//! "variance of the mean RTT" names no estimator); a time-out is answered
//! once per round trip (time-outs of packets sent before the last
//! reduction are not), since one congestion episode times out many
//! segments at once; an ECN CE mark, which the seed does not use, is
//! answered like a time-out.
//!
//! One more deviation comes from pacing. The seed's sender sends its window
//! in bursts, so a drop-tail queue that overflows loses runs of segments,
//! and they time out. ltx paces every packet, which spreads an overflow's
//! drops evenly between packets that get through: every drop is covered in
//! time, the window grows without end, and the queue drops most of what is
//! sent (measured before this rule: at 0 % random loss on a 100 Mbit/s,
//! 20 ms path, 90 % of the packets sent were dropped at the queue). So a
//! round trip that loses packets while the queue stands the whole round
//! (its smallest RTT more than half as long again as the path's minimum)
//! counts as a time-out too: that is when the seed's bursts would have
//! overflowed the queue. Random loss on a path whose queue drains does not.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::newreno::pacing;
use ltx_proto::congestion::{min_window, Controller, ControllerFactory};
use ltx_proto::rtt::RttEstimator;

/// Acknowledgements kept to decide whether a loss was covered in time.
const ACK_HISTORY: usize = 1 << 14;

/// Undecided losses kept; beyond this the oldest time out at once.
const PENDING_LOSSES: usize = 1 << 12;

/// The configuration of [`Fectcp`], and its factory.
#[derive(Debug, Clone)]
pub struct FectcpConfig {
    beta: f64,
    initial_window_packets: u64,
}

impl Default for FectcpConfig {
    fn default() -> Self {
        Self {
            beta: 0.3,
            initial_window_packets: 2,
        }
    }
}

impl FectcpConfig {
    /// The time-out's margin `β` in `ΔT = (1 + β)(sRTT + σ)` (default 0.3,
    /// the seed's; at least 0).
    pub fn beta(&mut self, value: f64) -> &mut Self {
        self.beta = if value.is_finite() {
            value.clamp(0.0, 10.0)
        } else {
            0.3
        };
        self
    }

    /// The initial window in datagrams (default 2; at least 2).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.initial_window_packets = value.max(2);
        self
    }
}

impl ControllerFactory for FectcpConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(Fectcp::new(self, now, max_datagram))
    }

    fn name(&self) -> &'static str {
        "fectcp"
    }
}

/// The FECTCP controller.
#[derive(Debug, Clone)]
pub struct Fectcp {
    max_datagram: u64,
    beta: f64,
    initial_window: u64,
    window: u64,
    slow_start_threshold: u64,
    acked_towards_increase: u64,
    /// (sent, acknowledged at) of recent acknowledgements, oldest first.
    acks: VecDeque<(Instant, Instant)>,
    /// Send times of losses not yet covered whose time-out has not fired.
    pending: VecDeque<Instant>,
    /// The last `ΔT` computed, for callbacks that get no RTT.
    timeout_span: Duration,
    /// Time-outs of packets sent at or before this are not answered.
    reduced_at: Option<Instant>,
    timeouts: u64,
    /// The round trip being measured for an overflow: packets sent after
    /// `started` end it when acknowledged.
    round: Round,
}

/// What one round trip lost and the least RTT it saw, for the overflow
/// rule.
#[derive(Debug, Clone, Default)]
struct Round {
    started: Option<Instant>,
    lost_bytes: u64,
    min_rtt: Option<Duration>,
}

impl Round {
    /// Whether the round lost packets while a queue stood all along
    /// (smallest RTT above 1.5 × the path's minimum).
    fn overflowed(&self, path_min_rtt: Duration) -> bool {
        let queue_stood = self
            .min_rtt
            .is_some_and(|rtt| rtt > path_min_rtt + path_min_rtt / 2);
        queue_stood && self.lost_bytes > 0
    }
}

impl Fectcp {
    /// A controller in slow start with the configured initial window.
    pub fn new(config: &FectcpConfig, now: Instant, max_datagram: u16) -> Self {
        let _ = now;
        let max_datagram = u64::from(max_datagram).max(1);
        let initial_window = config
            .initial_window_packets
            .saturating_mul(max_datagram)
            .max(min_window(max_datagram));
        Self {
            max_datagram,
            beta: config.beta,
            initial_window,
            window: initial_window,
            slow_start_threshold: u64::MAX,
            acked_towards_increase: 0,
            acks: VecDeque::new(),
            pending: VecDeque::new(),
            timeout_span: Duration::MAX,
            reduced_at: None,
            timeouts: 0,
            round: Round::default(),
        }
    }

    /// Takes an acknowledgement's RTT into the round, and ends the round when
    /// the packet was sent after it began: a round that overflowed the
    /// queue times out (see the module docs).
    fn count_round_ack(&mut self, now: Instant, sent: Instant, rtt: &RttEstimator) {
        let round = &mut self.round;
        let latest = rtt.latest();
        round.min_rtt = Some(round.min_rtt.map_or(latest, |m| m.min(latest)));
        let Some(started) = round.started else {
            round.started = Some(now);
            return;
        };
        if sent < started {
            return;
        }
        let overflowed = round.overflowed(rtt.min());
        self.round = Round {
            started: Some(now),
            ..Round::default()
        };
        if overflowed {
            self.time_out(now, started);
        }
    }

    /// How many time-outs reduced the window.
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// `ΔT = (1 + β)(sRTT + σ)`.
    pub fn timeout(&self, rtt: &RttEstimator) -> Duration {
        let base = rtt.smoothed().saturating_add(rtt.var()).as_secs_f64();
        Duration::try_from_secs_f64(base * (1.0 + self.beta)).unwrap_or(Duration::MAX)
    }

    fn in_slow_start(&self) -> bool {
        self.window < self.slow_start_threshold
    }

    /// Whether a packet sent after `sent` was acknowledged, and if so
    /// whether by `sent + ΔT`.
    fn covered(&self, sent: Instant) -> Option<bool> {
        let deadline = sent.checked_add(self.timeout_span);
        // Acknowledgements are kept in arrival order: the first of a later
        // packet is the earliest cover.
        let (_, at) = self.acks.iter().find(|(s, _)| *s > sent)?;
        Some(deadline.is_none_or(|d| *at <= d))
    }

    fn expired(&self, sent: Instant, now: Instant) -> bool {
        sent.checked_add(self.timeout_span).is_some_and(|d| now > d)
    }

    fn time_out(&mut self, now: Instant, sent: Instant) {
        if self.reduced_at.is_some_and(|at| sent <= at) {
            return;
        }
        let min = min_window(self.max_datagram);
        self.slow_start_threshold = (self.window / 2).max(min);
        self.window = (self.window / 2).max(min);
        self.acked_towards_increase = 0;
        self.reduced_at = Some(now);
        self.timeouts = self.timeouts.saturating_add(1);
    }

    /// Settles the losses whose fate is known at `now`.
    fn settle(&mut self, now: Instant) {
        let mut still = VecDeque::new();
        while let Some(sent) = self.pending.pop_front() {
            match self.covered(sent) {
                Some(true) => {}
                Some(false) => self.time_out(now, sent),
                None if self.expired(sent, now) => self.time_out(now, sent),
                None => still.push_back(sent),
            }
        }
        self.pending = still;
    }
}

impl Controller for Fectcp {
    fn on_sent(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        let _ = (bytes, in_flight);
        if !self.pending.is_empty() {
            self.settle(now);
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
        self.timeout_span = self.timeout(rtt);
        if self.acks.back().is_none_or(|(_, at)| *at <= now) {
            self.acks.push_back((sent, now));
        }
        let horizon = self.timeout_span.saturating_mul(4);
        while self.acks.len() > ACK_HISTORY
            || self
                .acks
                .front()
                .is_some_and(|(_, at)| now.saturating_duration_since(*at) > horizon)
        {
            self.acks.pop_front();
        }
        if !self.pending.is_empty() {
            self.settle(now);
        }
        self.count_round_ack(now, sent, rtt);
        if app_limited || self.reduced_at.is_some_and(|at| sent <= at) {
            return;
        }
        if self.in_slow_start() {
            self.window = self.window.saturating_add(bytes);
            return;
        }
        self.acked_towards_increase = self.acked_towards_increase.saturating_add(bytes);
        if self.acked_towards_increase >= self.window {
            self.acked_towards_increase -= self.window;
            self.window = self.window.saturating_add(self.max_datagram);
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
        let _ = above_baseline;
        self.round.lost_bytes = self.round.lost_bytes.saturating_add(lost_bytes);
        self.timeout_span = self.timeout(rtt);
        match self.covered(largest_sent) {
            Some(true) => {}
            Some(false) => self.time_out(now, largest_sent),
            None if self.expired(largest_sent, now) => self.time_out(now, largest_sent),
            None => {
                if self.pending.len() >= PENDING_LOSSES {
                    if let Some(oldest) = self.pending.pop_front() {
                        self.time_out(now, oldest);
                    }
                }
                self.pending.push_back(largest_sent);
            }
        }
    }

    fn on_ecn_ce(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        newly_ce: u64,
        rtt: &RttEstimator,
    ) {
        let _ = rtt;
        if newly_ce > 0 {
            self.time_out(now, largest_sent);
        }
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let gain = if self.in_slow_start() { 2.0 } else { 1.25 };
        Some(pacing(gain, self.window, rtt))
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "fectcp"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::test_path::{run, TestPath};

    const MTU: u16 = 1200;
    const RTT: Duration = Duration::from_millis(100);

    fn in_avoidance(packets: u64) -> (Fectcp, Instant, RttEstimator) {
        let start = Instant::now();
        let mut cc = Fectcp::new(&FectcpConfig::default(), start, MTU);
        cc.window = packets * u64::from(MTU);
        cc.slow_start_threshold = cc.window;
        let mut rtt = RttEstimator::new(RTT);
        rtt.update(Duration::ZERO, RTT);
        for _ in 0..20 {
            rtt.update(Duration::ZERO, RTT);
        }
        (cc, start, rtt)
    }

    /// Sends one packet every millisecond from `start` for `span`; those
    /// whose offset (ms) is in `lost` are lost, the rest acknowledged one
    /// RTT later; the loss is declared when the next acknowledgement
    /// arrives, as the connection does.
    fn flight(cc: &mut Fectcp, start: Instant, rtt: &RttEstimator, span: u64, lost: &[u64]) {
        let mut undeclared = Vec::new();
        for ms in 0..span {
            let sent = start + Duration::from_millis(ms);
            if lost.contains(&ms) {
                undeclared.push(sent);
                continue;
            }
            let at = sent + RTT;
            cc.on_ack(at, sent, u64::from(MTU), false, rtt);
            for l in undeclared.drain(..) {
                cc.on_loss(at, l, u64::from(MTU), false, rtt);
            }
        }
    }

    #[test]
    fn an_isolated_loss_is_hidden() {
        let (mut cc, start, rtt) = in_avoidance(100);
        let before = cc.window();
        flight(&mut cc, start, &rtt, 100, &[10, 40, 41, 70]);
        assert_eq!(cc.timeouts(), 0);
        assert!(cc.window() >= before);
    }

    #[test]
    fn a_run_of_losses_longer_than_the_margin_times_out() {
        // ΔT = 1.3 × (100 ms + σ): a run of 60 ms of lost packets means the
        // next acknowledgement comes 160 ms after the first loss was sent.
        let (mut cc, start, rtt) = in_avoidance(100);
        let before = cc.window();
        let lost: Vec<u64> = (20..80).collect();
        flight(&mut cc, start, &rtt, 100, &lost);
        assert_eq!(cc.timeouts(), 1, "one reduction per round trip");
        assert_eq!(cc.window(), before / 2);
    }

    #[test]
    fn a_run_just_inside_the_margin_is_hidden() {
        // The pair's other side: 20 ms of losses stays inside ΔT.
        let (mut cc, start, rtt) = in_avoidance(100);
        let lost: Vec<u64> = (20..40).collect();
        flight(&mut cc, start, &rtt, 100, &lost);
        assert_eq!(cc.timeouts(), 0);
    }

    #[test]
    fn a_loss_with_no_later_acknowledgement_times_out_when_due() {
        let (mut cc, start, rtt) = in_avoidance(100);
        let before = cc.window();
        cc.on_loss(start + RTT, start, 1200, false, &rtt);
        assert_eq!(cc.timeouts(), 0, "undecided before ΔT");
        cc.on_sent(start + Duration::from_millis(300), 1200, 1200);
        assert_eq!(cc.timeouts(), 1);
        assert_eq!(cc.window(), before / 2);
    }

    #[test]
    fn random_loss_does_not_collapse_the_window() {
        // 5 % i.i.d. loss is isolated, so it is hidden: started at the BDP,
        // the window never times out and keeps the path full, where
        // NewReno's would fall to a fraction of it.
        let mut path = TestPath::new(48, 100, 1.0);
        path.loss = 0.05;
        let start = Instant::now();
        let mut cc = Fectcp::new(&FectcpConfig::default(), start, MTU);
        cc.window = path.bdp();
        cc.slow_start_threshold = cc.window;
        let out = run(&mut cc, &path, start, Duration::from_secs(20), 5);
        assert_eq!(cc.timeouts(), 0);
        assert!(cc.window() >= path.bdp());
        let carried = out.delivered as f64 / (path.rate as f64 * 20.0 * 0.95);
        assert!(carried > 0.9, "carried {carried} of the erasure capacity");
    }

    /// Sends one packet every millisecond for 400 ms, each acknowledged
    /// `rtt_ms` later unless `lost` says so of its offset (ms); the path's
    /// minimum RTT is 100 ms.
    fn paced_rounds(rtt_ms: u64, lost: impl Fn(u64) -> bool) -> Fectcp {
        let (mut cc, start, mut rtt) = in_avoidance(100);
        let delay = Duration::from_millis(rtt_ms);
        for _ in 0..5 {
            rtt.update(Duration::ZERO, delay);
        }
        let mut undeclared = Vec::new();
        for ms in 0..400 {
            let sent = start + Duration::from_millis(ms);
            if lost(ms) {
                undeclared.push(sent);
                continue;
            }
            let at = sent + delay;
            cc.on_ack(at, sent, u64::from(MTU), false, &rtt);
            for l in undeclared.drain(..) {
                cc.on_loss(at, l, u64::from(MTU), false, &rtt);
            }
        }
        cc
    }

    #[test]
    fn a_paced_overflow_of_a_standing_queue_times_out() {
        // Three packets of four dropped, evenly, while the RTT is twice the
        // minimum: every drop is covered in time, but the round lost
        // packets with the queue full.
        let cc = paced_rounds(200, |ms| ms % 4 != 0);
        assert!(cc.timeouts() >= 1);
    }

    #[test]
    fn heavy_random_loss_without_a_queue_does_not_time_out() {
        // The same drops at the path's minimum RTT are random loss.
        let cc = paced_rounds(100, |ms| ms % 4 != 0);
        assert_eq!(cc.timeouts(), 0);
    }

    #[test]
    fn a_standing_queue_without_loss_does_not_time_out() {
        let cc = paced_rounds(200, |_| false);
        assert_eq!(cc.timeouts(), 0);
    }

    #[test]
    fn a_lossy_round_that_drained_the_queue_does_not_time_out() {
        // One loss a round trip, but one sample of each round sees the
        // bare path: the queue drains, so the loss is random.
        let (mut cc, start, mut rtt) = in_avoidance(100);
        for round in 0..4u64 {
            for ms in 0..100u64 {
                let sent = start + Duration::from_millis(round * 100 + ms);
                let delay = Duration::from_millis(if ms == 50 { 100 } else { 200 });
                rtt.update(Duration::ZERO, delay);
                if ms == 30 {
                    cc.on_loss(sent + delay, sent, u64::from(MTU), false, &rtt);
                    continue;
                }
                cc.on_ack(sent + delay, sent, u64::from(MTU), false, &rtt);
            }
        }
        assert_eq!(cc.timeouts(), 0);
    }

    #[test]
    fn a_small_window_times_out_on_an_isolated_loss() {
        // The other side: with two packets a round trip, the loss of the
        // second has no later packet to cover it within ΔT.
        let (mut cc, start, rtt) = in_avoidance(2);
        let first = start;
        let second = start + Duration::from_millis(1);
        cc.on_ack(first + RTT, first, u64::from(MTU), false, &rtt);
        let next = first + RTT;
        cc.on_sent(next, u64::from(MTU), u64::from(MTU));
        cc.on_ack(next + RTT, next, u64::from(MTU), false, &rtt);
        cc.on_loss(next + RTT, second, u64::from(MTU), false, &rtt);
        assert_eq!(cc.timeouts(), 1);
    }
}
