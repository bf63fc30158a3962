//! The settings of [`Tolerant`], with their defaults; also its factory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Tolerant;
use crate::congestion::{Controller, ControllerFactory};

/// The configuration of [`Tolerant`], and its factory.
#[derive(Debug, Clone)]
pub struct TolerantConfig {
    pub(super) initial_window_packets: u64,
    pub(super) startup_pacing_gain: f64,
    pub(super) pacing_gain: f64,
    pub(super) ecn_beta: f64,
    pub(super) congestion_beta: f64,
    pub(super) delay_exit_ratio: f64,
    pub(super) delay_exit_extra: Duration,
    pub(super) queue_target: Option<f64>,
    pub(super) delivery_cap: Option<f64>,
    pub(super) probe_burst: u64,
    pub(super) room_probe: bool,
}

impl Default for TolerantConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: 32,
            startup_pacing_gain: 2.0,
            pacing_gain: 1.25,
            ecn_beta: 0.8,
            congestion_beta: 0.85,
            delay_exit_ratio: 1.25,
            delay_exit_extra: Duration::from_millis(2),
            queue_target: Some(0.25),
            delivery_cap: None,
            probe_burst: 10,
            room_probe: true,
        }
    }
}

impl TolerantConfig {
    /// The initial window in datagrams (default 32, at least 2): more than
    /// TCP's 10, because its ACKs are what start-up measures the path with,
    /// and on a lossy path ten packets give too few pairs. Where the
    /// handshake reads a path that holds fewer, the first flight is paced
    /// (see `docs/design/start-up.md`, which also weighs 16 and a window
    /// sent in two parts against 32).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.initial_window_packets = value.max(2);
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
    /// `None`: no cap, as in Coded TCP; see
    /// `docs/design/congestion-response.md`).
    pub fn delivery_cap(&mut self, gain: Option<f64>) -> &mut Self {
        self.delivery_cap = gain.filter(|g| g.is_finite() && *g >= 1.0);
        self
    }

    /// The datagrams start-up sends back to back at the start of each
    /// round once it has measured a rate (default 10; 0: none, and start-up
    /// grows the window without bound until a queue, a mark or a loss
    /// above the baseline shows, pacing at twice the rate as before a
    /// rate was measured; see `docs/design/start-up.md`).
    pub fn probe_burst(&mut self, datagrams: u64) -> &mut Self {
        self.probe_burst = datagrams;
        self
    }

    /// Whether the window probes, after start-up, for room the delay does
    /// not show (default on): where it is short of what the measured rate
    /// fills over the round trip seen, it steps up by at most a quarter
    /// and keeps the step unless the round trip rises with it (see
    /// `docs/design/congestion-response.md`).
    pub fn room_probe(&mut self, on: bool) -> &mut Self {
        self.room_probe = on;
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
    /// [`RttEstimator::queue_margin`](crate::rtt::RttEstimator::queue_margin)).
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

impl ControllerFactory for TolerantConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(Tolerant::new(Arc::new(self.clone()), now, max_datagram))
    }

    fn name(&self) -> &'static str {
        "ltx"
    }

    /// Start-up takes a known rate as measured, so the window reaches the
    /// bandwidth-delay product at the first RTT sample instead of a round
    /// later; measurements above it still raise it, congestion signals
    /// still cut below it.
    fn reads_rate_hint(&self) -> bool {
        true
    }
}
