//! Seed 003's congestion rule alone, as the seed states it: slow start from
//! ten datagrams until the first loss, then one datagram per window
//! acknowledged, and on every loss, once per round trip,
//! `cwnd ← cwnd × RTTmin / sRTT`. It "never ignores packet loss": on a link
//! without noise, where losses come from a full queue, it halves like
//! standard TCP. The seed says nothing of ECN; a CE mark is answered by the
//! same rule, as RFC 3168 answers it like a loss.
//!
//! ltx's own controller builds on this rule (`ltx_proto::congestion`); this
//! one is the `ctcp` preset, for side-by-side measurements.

use std::time::Instant;

use ltx_proto::congestion::{min_window, Controller, ControllerFactory};
use ltx_proto::rtt::RttEstimator;

/// The configuration of [`CodedTcp`], and its factory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodedTcpConfig {
    initial_window_packets: u64,
    slow_start_pacing_gain: f64,
    pacing_gain: f64,
}

impl Default for CodedTcpConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: 10,
            slow_start_pacing_gain: 2.0,
            pacing_gain: 1.25,
        }
    }
}

impl ControllerFactory for CodedTcpConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(CodedTcp::new(*self, now, max_datagram))
    }

    fn name(&self) -> &'static str {
        "ctcp"
    }
}

/// Seed 003's window: slow start, additive increase, and the back-off
/// `cwnd × RTTmin / sRTT` once per round trip of losses or marks.
#[derive(Debug, Clone)]
pub struct CodedTcp {
    config: CodedTcpConfig,
    max_datagram: u64,
    window: u64,
    in_slow_start: bool,
    /// Bytes acknowledged towards the next additive increase.
    acked_towards_increase: u64,
    /// Losses of packets sent at or before this are not answered.
    loss_epoch: Option<Instant>,
    /// ECN marks on packets sent at or before this are not answered.
    ecn_epoch: Option<Instant>,
}

impl CodedTcp {
    /// A controller in slow start with the configured initial window.
    pub fn new(config: CodedTcpConfig, now: Instant, max_datagram: u16) -> Self {
        let _ = now;
        let max_datagram = u64::from(max_datagram).max(1);
        Self {
            config,
            max_datagram,
            window: config.initial_window_packets.saturating_mul(max_datagram),
            in_slow_start: true,
            acked_towards_increase: 0,
            loss_epoch: None,
            ecn_epoch: None,
        }
    }

    /// Whether the controller is still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.in_slow_start
    }

    /// The back-off: `cwnd ← cwnd × RTTmin / sRTT`, ending slow start, and
    /// a new round of losses and marks at `now`.
    fn back_off(&mut self, now: Instant, rtt: &RttEstimator) {
        let srtt = rtt.smoothed().as_secs_f64();
        let factor = if srtt > 0.0 {
            (rtt.min().as_secs_f64() / srtt).clamp(0.0, 1.0)
        } else {
            1.0
        };
        self.in_slow_start = false;
        // `as` saturates, and the product is no larger than the window.
        let scaled = (self.window as f64 * factor) as u64;
        self.window = scaled.min(self.window).max(min_window(self.max_datagram));
        self.acked_towards_increase = 0;
        self.loss_epoch = Some(now);
        self.ecn_epoch = Some(now);
    }
}

impl Controller for CodedTcp {
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let _ = (now, sent, rtt);
        if app_limited {
            return;
        }
        if self.in_slow_start {
            self.window = self.window.saturating_add(bytes);
            return;
        }
        self.acked_towards_increase = self.acked_towards_increase.saturating_add(bytes);
        let increments = self.acked_towards_increase / self.window;
        self.acked_towards_increase %= self.window;
        self.window = self
            .window
            .saturating_add(increments.saturating_mul(self.max_datagram));
    }

    fn on_loss(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        lost_bytes: u64,
        above_baseline: bool,
        rtt: &RttEstimator,
    ) {
        let _ = (lost_bytes, above_baseline);
        if self.loss_epoch.is_some_and(|epoch| largest_sent <= epoch) {
            return;
        }
        self.back_off(now, rtt);
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
        if self.loss_epoch.is_none_or(|epoch| largest_sent > epoch) {
            self.back_off(now, rtt);
        }
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let srtt = rtt.smoothed().as_secs_f64().max(1e-6);
        let gain = if self.in_slow_start {
            self.config.slow_start_pacing_gain
        } else {
            self.config.pacing_gain
        };
        // `as` saturates; the floor keeps a zero rate from stalling the pacer.
        Some(((gain * self.window as f64 / srtt) as u64).max(1))
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
        "ctcp"
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::congestion::test_path::{run, TestPath};

    use super::*;

    const MTU: u16 = 1200;

    fn seed_rule(now: Instant) -> CodedTcp {
        CodedTcp::new(CodedTcpConfig::default(), now, MTU)
    }

    fn rtt_of(min_ms: u64, smoothed_ms: u64) -> RttEstimator {
        let mut rtt = RttEstimator::new(Duration::from_millis(min_ms));
        rtt.update(Duration::ZERO, Duration::from_millis(min_ms));
        for _ in 0..200 {
            rtt.update(Duration::ZERO, Duration::from_millis(smoothed_ms));
        }
        rtt
    }

    #[test]
    fn scales_by_rtt_min_over_rtt_once_per_round() {
        let start = Instant::now();
        let mut cc = seed_rule(start);
        assert_eq!(cc.name(), "ctcp");
        assert_eq!(cc.window(), 10 * 1200);
        cc.window = 100 * 1200;
        // A full queue doubled the RTT: the window halves, as TCP's would.
        let rtt = rtt_of(100, 200);
        let at = start + Duration::from_millis(300);
        for i in 0..5 {
            cc.on_loss(at, start + Duration::from_millis(i), 1200, false, &rtt);
        }
        assert!(!cc.in_slow_start());
        let halved = cc.window() as f64 / (100.0 * 1200.0);
        assert!((halved - 0.5).abs() < 0.01, "ratio {halved}");
    }

    #[test]
    fn never_ignores_a_loss_but_random_loss_costs_little() {
        let start = Instant::now();
        let mut cc = seed_rule(start);
        cc.window = 100 * 1200;
        // RTT 5 % above its minimum: each round's loss costs about 5 %.
        let rtt = rtt_of(100, 105);
        let mut now = start;
        for _ in 0..3 {
            let sent = now + Duration::from_millis(1);
            now += Duration::from_millis(110);
            cc.on_loss(now, sent, 1200, false, &rtt);
        }
        let ratio = cc.window() as f64 / (100.0 * 1200.0);
        let expected = (100.0f64 / 105.0).powi(3);
        assert!(
            (ratio - expected).abs() < 0.01,
            "ratio {ratio}, expected {expected}"
        );
    }

    #[test]
    fn does_not_wait_for_the_handshake_reading() {
        assert!(!seed_rule(Instant::now()).reads_handshake_spacing());
    }

    #[test]
    fn keeps_a_lossy_path_busier_than_halving() {
        // 2 % random loss on a path with a short queue: the back-off is
        // mild, so the window stays near the BDP.
        let mut path = TestPath::new(48, 100, 0.25);
        path.loss = 0.02;
        let start = Instant::now();
        let mut cc = seed_rule(start);
        let out = run(&mut cc, &path, start, Duration::from_secs(60), 4);
        let late = out.windows_between(Duration::from_secs(30), Duration::from_secs(60));
        let mean = late.iter().sum::<u64>() / late.len() as u64;
        assert!(
            mean > path.bdp() / 2,
            "mean window {mean}, BDP {}",
            path.bdp()
        );
    }
}
