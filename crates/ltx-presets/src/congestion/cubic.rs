//! CUBIC (RFC 9438): the loss-based baseline most hosts run, and the
//! competing flow of coexistence tests.
//!
//! After a reduction the window follows `W(t) = C·(t − K)³ + W_max`
//! (in datagrams, `t` in seconds since the reduction), with `C = 0.4`,
//! `β = 0.7` and `K = ∛(W_max·(1 − β)/C)`, so it comes back to the window
//! of the last loss after `K` seconds, lingers there, then probes beyond.
//! The Reno-friendly estimate `W_est` (additive increase of
//! `3(1 − β)/(1 + β)` datagrams per window) takes over where it is larger.
//! Fast convergence lowers `W_max` when a loss comes below the last one.
//!
//! Deviations: the window counts bytes; `t` runs from the reduction rather
//! than from the first acknowledgement after it; every loss, random or
//! not, and every ECN CE mark is answered, once per round trip; no
//! HyStart; pacing at twice `cwnd / sRTT` in slow start, 1.25 after.

use std::time::{Duration, Instant};

use super::newreno::pacing;
use ltx_proto::congestion::{min_window, Controller, ControllerFactory};
use ltx_proto::rtt::RttEstimator;

/// CUBIC's scaling constant `C`, datagrams per second cubed.
const CUBIC_C: f64 = 0.4;

/// CUBIC's multiplicative decrease factor.
const CUBIC_BETA: f64 = 0.7;

/// The configuration of [`Cubic`], and its factory.
#[derive(Debug, Clone)]
pub struct CubicConfig {
    initial_window_packets: u64,
}

impl Default for CubicConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: 10,
        }
    }
}

impl CubicConfig {
    /// The initial window in datagrams (default 10; at least 2).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.initial_window_packets = value.max(2);
        self
    }
}

impl ControllerFactory for CubicConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(Cubic::new(self, now, max_datagram))
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

/// The CUBIC controller.
#[derive(Debug, Clone)]
pub struct Cubic {
    max_datagram: u64,
    initial_window: u64,
    window: u64,
    slow_start_threshold: u64,
    /// The window before the last reduction, datagrams.
    w_max: f64,
    /// The Reno-friendly window, datagrams.
    w_est: f64,
    /// Seconds the cubic takes to climb back to `w_max`.
    k: f64,
    /// When the current congestion-avoidance epoch began (the last
    /// reduction); losses of packets sent before it are not answered.
    epoch: Option<Instant>,
    /// Fractional datagrams of growth not yet added to the window.
    pending_growth: f64,
}

impl Cubic {
    /// A controller in slow start with the configured initial window.
    pub fn new(config: &CubicConfig, now: Instant, max_datagram: u16) -> Self {
        let _ = now;
        let max_datagram = u64::from(max_datagram).max(1);
        let initial_window = config
            .initial_window_packets
            .saturating_mul(max_datagram)
            .max(min_window(max_datagram));
        Self {
            max_datagram,
            initial_window,
            window: initial_window,
            slow_start_threshold: u64::MAX,
            w_max: 0.0,
            w_est: 0.0,
            k: 0.0,
            epoch: None,
            pending_growth: 0.0,
        }
    }

    /// `W(t)` in datagrams, `t` seconds after the last reduction.
    pub fn cubic_window(&self, t: Duration) -> f64 {
        let dt = t.as_secs_f64() - self.k;
        CUBIC_C * dt * dt * dt + self.w_max
    }

    /// Whether the controller is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.window < self.slow_start_threshold
    }

    fn packets(&self) -> f64 {
        self.window as f64 / self.max_datagram as f64
    }

    fn on_congestion(&mut self, now: Instant, largest_sent: Instant) {
        if self.epoch.is_some_and(|epoch| largest_sent <= epoch) {
            return;
        }
        let current = self.packets();
        // Fast convergence: a loss below the last maximum yields room.
        self.w_max = if current < self.w_max {
            current * (1.0 + CUBIC_BETA) / 2.0
        } else {
            current
        };
        let reduced = ((self.window as f64 * CUBIC_BETA) as u64).max(min_window(self.max_datagram));
        self.window = reduced;
        self.slow_start_threshold = reduced;
        self.w_est = self.packets();
        self.k = (self.w_max * (1.0 - CUBIC_BETA) / CUBIC_C).max(0.0).cbrt();
        self.epoch = Some(now);
        self.pending_growth = 0.0;
    }
}

impl Controller for Cubic {
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        if app_limited || self.epoch.is_some_and(|epoch| sent <= epoch) {
            return;
        }
        if self.in_slow_start() {
            self.window = self.window.saturating_add(bytes);
            return;
        }
        let Some(epoch) = self.epoch else {
            return;
        };
        let acked = bytes as f64 / self.max_datagram as f64;
        let current = self.packets();
        let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
        self.w_est += alpha * acked / current.max(1.0);
        // The target one round trip ahead, no more than 1.5 times the
        // window (RFC 9438, section 4.2).
        let t = now.saturating_duration_since(epoch) + rtt.smoothed();
        let target = self.cubic_window(t).clamp(current, 1.5 * current);
        let growth = if self.w_est > target {
            // The Reno-friendly region: follow W_est.
            (self.w_est - current).max(0.0)
        } else {
            (target - current) / current.max(1.0) * acked
        };
        self.pending_growth += growth;
        if self.pending_growth >= 1.0 {
            let whole = self.pending_growth.floor();
            self.pending_growth -= whole;
            // `as` saturates.
            let add = (whole as u64).saturating_mul(self.max_datagram);
            self.window = self.window.saturating_add(add);
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
        let _ = (lost_bytes, above_baseline, rtt);
        self.on_congestion(now, largest_sent);
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
            self.on_congestion(now, largest_sent);
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
        "cubic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::test_path::{run, TestPath};

    const MTU: u16 = 1200;

    /// Feeds a controller acknowledgements of a full window every round
    /// trip of `rtt` for `rounds` round trips after `from`.
    fn ack_rounds(cc: &mut Cubic, from: Instant, rtt: &RttEstimator, rounds: u32) -> Instant {
        let mut now = from;
        for _ in 0..rounds {
            let packets = cc.window() / u64::from(MTU);
            let step = rtt.smoothed() / u32::try_from(packets.max(1)).unwrap_or(u32::MAX);
            for _ in 0..packets {
                now += step;
                cc.on_ack(now, now - rtt.smoothed(), u64::from(MTU), false, rtt);
            }
        }
        now
    }

    #[test]
    fn after_a_reduction_the_window_follows_the_cubic() {
        let start = Instant::now();
        let mut cc = Cubic::new(&CubicConfig::default(), start, MTU);
        let mut rtt = RttEstimator::new(Duration::from_millis(50));
        rtt.update(Duration::ZERO, Duration::from_millis(50));
        cc.window = 1000 * u64::from(MTU);
        let loss_at = start + Duration::from_millis(10);
        cc.on_loss(loss_at, start, 1200, false, &rtt);
        assert_eq!(cc.window(), 700 * u64::from(MTU));
        assert_eq!(cc.w_max, 1000.0);
        // K = ∛(1000 × 0.3 / 0.4) ≈ 9.09 s.
        assert!((cc.k - 9.0856).abs() < 0.01, "K {}", cc.k);
        let mut now = loss_at;
        for check in [2u32, 5, 9, 12] {
            let until = loss_at + Duration::from_secs(u64::from(check));
            while now < until {
                now = ack_rounds(&mut cc, now, &rtt, 1);
            }
            let expected = cc.cubic_window(now - loss_at + rtt.smoothed());
            let got = cc.window() as f64 / f64::from(MTU);
            // The window lags the target by about a round trip's growth.
            assert!(
                (got - expected).abs() / expected < 0.03,
                "at {check} s: window {got}, W(t) {expected}"
            );
        }
        // It lingers near W_max around K.
        let at_k = cc.cubic_window(Duration::from_secs_f64(cc.k));
        assert!((at_k - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn a_loss_below_the_last_maximum_converges_faster() {
        let start = Instant::now();
        let mut cc = Cubic::new(&CubicConfig::default(), start, MTU);
        let rtt = RttEstimator::new(Duration::from_millis(50));
        cc.window = 1000 * u64::from(MTU);
        cc.on_loss(start + Duration::from_millis(1), start, 1200, false, &rtt);
        let later = start + Duration::from_secs(1);
        cc.on_loss(later, later - Duration::from_millis(50), 1200, false, &rtt);
        // 700 datagrams, below W_max = 1000: W_max = 700 × 1.7 / 2.
        assert!((cc.w_max - 595.0).abs() < 1e-9, "W_max {}", cc.w_max);
        assert_eq!(cc.window(), 490 * u64::from(MTU));
    }

    #[test]
    fn random_loss_keeps_the_window_small() {
        let mut path = TestPath::new(96, 100, 1.0);
        path.loss = 0.02;
        let start = Instant::now();
        let mut cc = Cubic::new(&CubicConfig::default(), start, MTU);
        let out = run(&mut cc, &path, start, Duration::from_secs(30), 3);
        let late = out.windows_between(Duration::from_secs(10), Duration::from_secs(30));
        let mean = late.iter().sum::<u64>() / late.len() as u64;
        assert!(
            mean < path.bdp() / 2,
            "mean window {mean}, BDP {}",
            path.bdp()
        );
    }
}
