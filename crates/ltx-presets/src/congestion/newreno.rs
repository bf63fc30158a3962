//! NewReno: the loss-based baseline (RFC 5681 slow start and congestion
//! avoidance, with the RFC 6582 rule of one reduction per window of
//! losses).
//!
//! It answers every loss, random or not, by halving the window, which is
//! the problem ltx exists to solve: on a lossy path its window collapses.
//! It serves as the baseline in loss sweeps and as a competing flow in
//! coexistence tests.
//!
//! Deviations from a kernel TCP: the window counts bytes and grows by the
//! bytes acknowledged (RFC 3465 byte counting, L = ∞); there is no fast
//! retransmit or recovery window inflation, since ltx repairs by coding and
//! never retransmits; an ECN CE mark is answered as a loss (RFC 3168); the
//! sender paces at twice `cwnd / sRTT` in slow start and 1.25 times it
//! after, as Linux does, since the connection always paces.

use std::time::Instant;

use ltx_proto::congestion::{min_window, Controller, ControllerFactory};
use ltx_proto::rtt::RttEstimator;

/// The configuration of [`NewReno`], and its factory.
#[derive(Debug, Clone)]
pub struct NewRenoConfig {
    initial_window_packets: u64,
}

impl Default for NewRenoConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: 10,
        }
    }
}

impl NewRenoConfig {
    /// The initial window in datagrams (default 10, RFC 6928; at least 2).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.initial_window_packets = value.max(2);
        self
    }
}

impl ControllerFactory for NewRenoConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(NewReno::new(self, now, max_datagram))
    }

    fn name(&self) -> &'static str {
        "newreno"
    }
}

/// The NewReno controller: slow start, one datagram per window in
/// congestion avoidance, half the window on loss or ECN, once per round
/// trip.
#[derive(Debug, Clone)]
pub struct NewReno {
    max_datagram: u64,
    initial_window: u64,
    window: u64,
    slow_start_threshold: u64,
    /// Bytes acknowledged towards the next additive increase.
    acked_towards_increase: u64,
    /// Losses and marks of packets sent at or before this belong to the
    /// window already answered.
    recovery_start: Option<Instant>,
}

impl NewReno {
    /// A controller in slow start with the configured initial window.
    pub fn new(config: &NewRenoConfig, now: Instant, max_datagram: u16) -> Self {
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
            acked_towards_increase: 0,
            recovery_start: None,
        }
    }

    /// Whether the controller is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.window < self.slow_start_threshold
    }

    fn on_congestion(&mut self, now: Instant, largest_sent: Instant) {
        if self
            .recovery_start
            .is_some_and(|start| largest_sent <= start)
        {
            return;
        }
        self.recovery_start = Some(now);
        self.window = (self.window / 2).max(min_window(self.max_datagram));
        self.slow_start_threshold = self.window;
        self.acked_towards_increase = 0;
    }
}

impl Controller for NewReno {
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let _ = (now, rtt);
        if app_limited || self.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        if self.in_slow_start() {
            self.window = self
                .window
                .saturating_add(bytes)
                .min(self.slow_start_threshold.max(self.window));
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
        "newreno"
    }
}

/// `gain × window / sRTT` in bytes per second, at least 1.
pub(crate) fn pacing(gain: f64, window: u64, rtt: &RttEstimator) -> u64 {
    let srtt = rtt.smoothed().as_secs_f64().max(1e-6);
    // `as` saturates; the floor keeps a zero rate from stalling the pacer.
    ((gain * window as f64 / srtt) as u64).max(1)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::congestion::test_path::{run, TestPath};

    const MTU: u16 = 1200;

    fn in_avoidance(window_packets: u64) -> (NewReno, Instant) {
        let now = Instant::now();
        let mut cc = NewReno::new(&NewRenoConfig::default(), now, MTU);
        cc.window = window_packets * u64::from(MTU);
        cc.slow_start_threshold = cc.window;
        (cc, now)
    }

    #[test]
    fn a_window_of_losses_halves_once() {
        let (mut cc, start) = in_avoidance(100);
        let rtt = RttEstimator::new(Duration::from_millis(100));
        let now = start + Duration::from_millis(100);
        // Ten losses of the same flight, declared one after another.
        for i in 0..10 {
            cc.on_loss(
                now + Duration::from_millis(i),
                start + Duration::from_millis(i),
                1200,
                false,
                &rtt,
            );
        }
        assert_eq!(cc.window(), 50 * 1200);
        // A loss of a packet sent after the reduction halves again.
        let later = now + Duration::from_millis(200);
        cc.on_loss(later, now + Duration::from_millis(50), 1200, false, &rtt);
        assert_eq!(cc.window(), 25 * 1200);
    }

    #[test]
    fn random_loss_counts_as_congestion() {
        // The baseline's defining flaw: 1 % random loss on an 800-packet
        // path keeps the window far below the bandwidth-delay product.
        let mut path = TestPath::new(96, 100, 1.0);
        path.loss = 0.01;
        let start = Instant::now();
        let mut cc = NewReno::new(&NewRenoConfig::default(), start, MTU);
        let out = run(&mut cc, &path, start, Duration::from_secs(30), 7);
        let late = out.windows_between(Duration::from_secs(10), Duration::from_secs(30));
        let mean = late.iter().sum::<u64>() / late.len() as u64;
        assert!(
            mean < path.bdp() / 4,
            "mean window {mean}, BDP {}",
            path.bdp()
        );
    }

    #[test]
    fn a_clean_path_is_filled() {
        let path = TestPath::new(96, 100, 1.0);
        let start = Instant::now();
        let mut cc = NewReno::new(&NewRenoConfig::default(), start, MTU);
        let out = run(&mut cc, &path, start, Duration::from_secs(30), 7);
        let capacity = path.rate as f64 * 30.0;
        let utilisation = out.delivered as f64 / capacity;
        assert!(utilisation > 0.8, "utilisation {utilisation}");
        assert!(
            out.queue_drops > 0,
            "a loss-based controller fills the queue"
        );
    }

    #[test]
    fn ce_mark_halves() {
        let (mut cc, start) = in_avoidance(40);
        let rtt = RttEstimator::new(Duration::from_millis(100));
        cc.on_ecn_ce(start + Duration::from_millis(1), start, 0, &rtt);
        assert_eq!(cc.window(), 40 * 1200);
        cc.on_ecn_ce(start + Duration::from_millis(1), start, 3, &rtt);
        assert_eq!(cc.window(), 20 * 1200);
    }
}
