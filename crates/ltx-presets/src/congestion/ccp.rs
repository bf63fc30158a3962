//! Capacity and congestion probing (seed 001): delay-based, "lossless"
//! control that keeps the bottleneck queue at a small, tunable operating
//! point instead of filling it.
//!
//! The seed estimates the path's bottleneck capacity `C` and its storage
//! (buffer, `RTTmax − RTTmin`), and sets `cwnd(k) = f(storage(k),
//! inFlight(k))` by a timer-driven control law whose operating point trades
//! throughput against loss. Here, once per smoothed RTT (the control
//! period `k`):
//!
//! - `C` is the largest delivery rate (bytes acknowledged over a period)
//!   of the last ten periods;
//! - the packets stored in the queue are `x(k) = (RTT_k − RTTmin) × C`,
//!   with `RTT_k` the period's smallest sample, so jitter is not taken for
//!   a queue;
//! - the operating point is `q* = max(φ × (RTTmax − RTTmin), floor) × C`:
//!   a fraction `φ` (default 0.1) of the largest queue seen, at least two
//!   milliseconds or RTTmin / 50;
//! - `cwnd(k+1) = cwnd(k) + K × (q* − x(k))`, gain `K` default 0.5: an
//!   integrating law, so the queue settles at `q*` whatever error `C`
//!   has (random loss makes the delivery rate read low).
//!
//! Start-up is slow start, left when a period's smallest RTT shows a queue
//! above the floor; the window is then set to `C × RTTmin + q*`.
//!
//! Loss is the last resort: random loss is ignored, and only loss the
//! connection judges above the random-loss baseline halves the window, once
//! per round trip. An ECN CE mark is answered the same way.
//!
//! Deviations: the seed's exact control function and its probing of
//! capacity by packet pairs are not given in the seed's material; this is
//! a proportional-integral reading of `f(storage, inFlight)` with the
//! window as the integrator, and the buffer estimate is the largest queue
//! seen, not a probe of the buffer's size.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::newreno::pacing;
use ltx_proto::congestion::{min_window, Controller, ControllerFactory};
use ltx_proto::rtt::RttEstimator;

/// Control periods the capacity estimate remembers.
const CAPACITY_PERIODS: usize = 10;

/// The smallest operating point, in queueing delay.
const MIN_TARGET: Duration = Duration::from_millis(2);

/// The configuration of [`Ccp`], and its factory.
#[derive(Debug, Clone)]
pub struct CcpConfig {
    operating_point: f64,
    gain: f64,
    initial_window_packets: u64,
}

impl Default for CcpConfig {
    fn default() -> Self {
        Self {
            operating_point: 0.1,
            gain: 0.5,
            initial_window_packets: 10,
        }
    }
}

impl CcpConfig {
    /// The fraction of the estimated buffer the queue is held at (default
    /// 0.1, within `[0, 1]`): higher trades queueing delay and loss for
    /// throughput.
    pub fn operating_point(&mut self, value: f64) -> &mut Self {
        self.operating_point = if value.is_finite() {
            value.clamp(0.0, 1.0)
        } else {
            0.1
        };
        self
    }

    /// The control law's gain `K` (default 0.5, within `(0, 1]`).
    pub fn gain(&mut self, value: f64) -> &mut Self {
        self.gain = if value.is_finite() {
            value.clamp(0.01, 1.0)
        } else {
            0.5
        };
        self
    }

    /// The initial window in datagrams (default 10; at least 2).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.initial_window_packets = value.max(2);
        self
    }
}

impl ControllerFactory for CcpConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(Ccp::new(self, now, max_datagram))
    }

    fn name(&self) -> &'static str {
        "ccp"
    }
}

/// The CCP controller.
#[derive(Debug, Clone)]
pub struct Ccp {
    config: CcpConfig,
    max_datagram: u64,
    initial_window: u64,
    window: u64,
    in_slow_start: bool,
    /// When the current control period began, and the bytes acknowledged
    /// and the smallest RTT sample in it.
    period_start: Option<Instant>,
    period_acked: u64,
    period_min_rtt: Option<Duration>,
    /// The delivery rates of the last periods, bytes per second.
    rates: VecDeque<u64>,
    /// The largest RTT sample seen.
    rtt_max: Duration,
    /// Losses and marks of packets sent at or before this are not answered.
    reduced_at: Option<Instant>,
}

impl Ccp {
    /// A controller in slow start with the configured initial window.
    pub fn new(config: &CcpConfig, now: Instant, max_datagram: u16) -> Self {
        let _ = now;
        let max_datagram = u64::from(max_datagram).max(1);
        let initial_window = config
            .initial_window_packets
            .saturating_mul(max_datagram)
            .max(min_window(max_datagram));
        Self {
            config: config.clone(),
            max_datagram,
            initial_window,
            window: initial_window,
            in_slow_start: true,
            period_start: None,
            period_acked: 0,
            period_min_rtt: None,
            rates: VecDeque::new(),
            rtt_max: Duration::ZERO,
            reduced_at: None,
        }
    }

    /// The estimated bottleneck capacity, bytes per second.
    pub fn capacity(&self) -> Option<u64> {
        self.rates.iter().copied().max()
    }

    /// The queueing delay the controller steers to.
    pub fn target_queue_delay(&self, rtt: &RttEstimator) -> Duration {
        let buffer = self.rtt_max.saturating_sub(rtt.min());
        buffer
            .mul_f64(self.config.operating_point)
            .max(self.floor_delay(rtt))
    }

    /// The smallest operating point: a queue below it is jitter.
    fn floor_delay(&self, rtt: &RttEstimator) -> Duration {
        MIN_TARGET.max(rtt.min() / 50)
    }

    /// Whether the controller is still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.in_slow_start
    }

    fn bytes_in(rate: u64, delay: Duration) -> f64 {
        rate as f64 * delay.as_secs_f64()
    }

    /// Ends a control period at `now`: measures, then regulates.
    fn end_period(&mut self, now: Instant, start: Instant, rtt: &RttEstimator) {
        let elapsed = now.saturating_duration_since(start).as_secs_f64();
        if elapsed > 0.0 {
            // `as` saturates.
            let rate = (self.period_acked as f64 / elapsed) as u64;
            self.rates.push_back(rate);
            if self.rates.len() > CAPACITY_PERIODS {
                self.rates.pop_front();
            }
        }
        let Some(capacity) = self.capacity() else {
            return;
        };
        let period_rtt = self.period_min_rtt.unwrap_or(rtt.min());
        let queue = period_rtt.saturating_sub(rtt.min());
        let target = self.target_queue_delay(rtt);
        let min = min_window(self.max_datagram);
        if self.in_slow_start {
            if queue > self.floor_delay(rtt) {
                self.in_slow_start = false;
                let window = Self::bytes_in(capacity, rtt.min() + target);
                self.window = (window as u64).max(min);
            }
            return;
        }
        let stored = Self::bytes_in(capacity, queue);
        let wanted = Self::bytes_in(capacity, target);
        let next = self.window as f64 + self.config.gain * (wanted - stored);
        // `as` saturates; negative goes to zero, then to the minimum.
        self.window = (next as u64).max(min);
    }
}

impl Controller for Ccp {
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let sample = now.saturating_duration_since(sent);
        self.rtt_max = self.rtt_max.max(sample);
        self.period_min_rtt = Some(self.period_min_rtt.map_or(sample, |m| m.min(sample)));
        if !app_limited {
            self.period_acked = self.period_acked.saturating_add(bytes);
        }
        if self.in_slow_start && !app_limited {
            self.window = self.window.saturating_add(bytes);
        }
        let period = rtt.smoothed().max(Duration::from_millis(1));
        match self.period_start {
            None => self.period_start = Some(now),
            Some(start) if now.saturating_duration_since(start) >= period => {
                self.end_period(now, start, rtt);
                self.period_start = Some(now);
                self.period_acked = 0;
                self.period_min_rtt = None;
            }
            Some(_) => {}
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
        let _ = lost_bytes;
        if above_baseline {
            self.on_ecn_ce(now, largest_sent, 1, rtt);
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
        if newly_ce == 0 || self.reduced_at.is_some_and(|at| largest_sent <= at) {
            return;
        }
        self.in_slow_start = false;
        self.window = (self.window / 2).max(min_window(self.max_datagram));
        self.reduced_at = Some(now);
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let gain = if self.in_slow_start { 2.0 } else { 1.25 };
        Some(pacing(gain, self.window, rtt))
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "ccp"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::test_path::{run, TestPath};

    const MTU: u16 = 1200;

    /// The steady state over `path`: mean queueing delay and carried
    /// fraction of the erasure capacity over the last 20 of 40 s, and the
    /// operating point the controller steers to at the end.
    fn steady_queue(path: &TestPath, config: &CcpConfig) -> (Duration, f64, Duration) {
        let start = Instant::now();
        let mut cc = Ccp::new(config, start, MTU);
        let out = run(&mut cc, path, start, Duration::from_secs(40), 9);
        let queue = out.mean_queue_delay(Duration::from_secs(20), Duration::from_secs(40));
        let late = out
            .windows
            .iter()
            .filter(|(t, _)| *t >= Duration::from_secs(20))
            .count() as f64;
        let carried = late * f64::from(MTU) / (path.rate as f64 * 20.0 * (1.0 - path.loss));
        let mut rtt = RttEstimator::new(path.base_rtt);
        rtt.update(Duration::ZERO, path.base_rtt);
        (queue, carried, cc.target_queue_delay(&rtt))
    }

    fn assert_near(queue: Duration, target: Duration) {
        let ratio = queue.as_secs_f64() / target.as_secs_f64();
        assert!(
            (0.5..1.5).contains(&ratio),
            "mean queue {queue:?}, operating point {target:?}"
        );
    }

    #[test]
    fn holds_the_queue_near_its_operating_point() {
        // A 4-BDP buffer (400 ms): a loss-based controller would fill it.
        let path = TestPath::new(24, 100, 4.0);
        let (queue, carried, target) = steady_queue(&path, &CcpConfig::default());
        assert_near(queue, target);
        assert!(queue < Duration::from_millis(60), "mean queue {queue:?}");
        assert!(carried > 0.9, "carried {carried}");
    }

    #[test]
    fn a_higher_operating_point_keeps_a_longer_queue() {
        let path = TestPath::new(24, 100, 4.0);
        let (low, _, _) = steady_queue(&path, &CcpConfig::default());
        let mut config = CcpConfig::default();
        config.operating_point(0.5);
        let (high, _, target) = steady_queue(&path, &config);
        assert_near(high, target);
        assert!(high > low * 2, "φ 0.1: {low:?}; φ 0.5: {high:?}");
    }

    #[test]
    fn random_loss_does_not_move_it() {
        let mut path = TestPath::new(24, 100, 4.0);
        path.loss = 0.2;
        let (queue, carried, target) = steady_queue(&path, &CcpConfig::default());
        assert_near(queue, target);
        assert!(queue < Duration::from_millis(60), "mean queue {queue:?}");
        assert!(carried > 0.85, "carried {carried}");
    }

    #[test]
    fn only_congestion_loss_halves() {
        let start = Instant::now();
        let mut cc = Ccp::new(&CcpConfig::default(), start, MTU);
        let rtt = RttEstimator::new(Duration::from_millis(100));
        let before = cc.window();
        let at = start + Duration::from_millis(100);
        cc.on_loss(at, start, 1200, false, &rtt);
        assert_eq!(cc.window(), before);
        cc.on_loss(at, start, 1200, true, &rtt);
        assert_eq!(cc.window(), before / 2);
        assert!(!cc.in_slow_start());
    }
}
