//! LT-TCP's window control (seed 000): TCP's window, answering ECN CE
//! marks only, never erasures.
//!
//! The seed separates reliability from congestion control: erasures are
//! repaired by proactive and reactive FEC that "sits above" the window, and
//! the window is "TCP-like, but only responsive to ECN, not arbitrary
//! losses". So this is [`NewReno`] (slow start, one datagram per window,
//! half the window once per round trip of marks) with every loss ignored.
//!
//! Deviations and caveats: the seed's implementation is a kernel TCP with
//! SACK; here the window counts bytes and nothing is retransmitted. The
//! seed assumes an ECN-capable bottleneck. Behind a drop-tail queue that
//! never marks, the seed's rule never backs off; that is kept as the
//! default (the preset reproduces the seed), and
//! [`LtTcpConfig::answer_congestion_loss`] turns on halving on loss the
//! connection judges above the random-loss baseline, for deployments that
//! cannot count on ECN.

use std::time::Instant;

use super::newreno::{NewReno, NewRenoConfig};
use ltx_proto::congestion::{Controller, ControllerFactory};
use ltx_proto::rtt::RttEstimator;

/// The configuration of [`LtTcp`], and its factory.
#[derive(Debug, Clone, Default)]
pub struct LtTcpConfig {
    window: NewRenoConfig,
    answer_congestion_loss: bool,
}

impl LtTcpConfig {
    /// The initial window in datagrams (default 10; at least 2).
    pub fn initial_window_packets(&mut self, value: u64) -> &mut Self {
        self.window.initial_window_packets(value);
        self
    }

    /// Whether loss above the random-loss baseline halves the window too
    /// (default off: the seed answers ECN alone).
    pub fn answer_congestion_loss(&mut self, value: bool) -> &mut Self {
        self.answer_congestion_loss = value;
        self
    }
}

impl ControllerFactory for LtTcpConfig {
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller> {
        Box::new(LtTcp {
            window: NewReno::new(&self.window, now, max_datagram),
            answer_congestion_loss: self.answer_congestion_loss,
        })
    }

    fn name(&self) -> &'static str {
        "lt-tcp"
    }
}

/// The LT-TCP controller: a TCP window that ECN CE marks halve and
/// erasures leave alone.
#[derive(Debug, Clone)]
pub struct LtTcp {
    window: NewReno,
    answer_congestion_loss: bool,
}

impl Controller for LtTcp {
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.window.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_loss(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        lost_bytes: u64,
        above_baseline: bool,
        rtt: &RttEstimator,
    ) {
        if self.answer_congestion_loss && above_baseline {
            self.window
                .on_loss(now, largest_sent, lost_bytes, above_baseline, rtt);
        }
    }

    fn on_ecn_ce(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        newly_ce: u64,
        rtt: &RttEstimator,
    ) {
        self.window.on_ecn_ce(now, largest_sent, newly_ce, rtt);
    }

    fn window(&self) -> u64 {
        self.window.window()
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        self.window.pacing_rate(rtt)
    }

    fn initial_window(&self) -> u64 {
        self.window.initial_window()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "lt-tcp"
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::congestion::test_path::{run, TestPath};

    const MTU: u16 = 1200;

    fn build(config: &LtTcpConfig, now: Instant) -> Box<dyn Controller> {
        config.build(now, MTU)
    }

    #[test]
    fn erasures_leave_the_window_alone() {
        let start = Instant::now();
        let mut cc = build(&LtTcpConfig::default(), start);
        let rtt = RttEstimator::new(Duration::from_millis(100));
        let before = cc.window();
        for i in 0..50 {
            let at = start + Duration::from_millis(10 * i);
            cc.on_loss(at, at, 1200, false, &rtt);
            cc.on_loss(at, at, 1200, true, &rtt);
        }
        assert_eq!(cc.window(), before);
    }

    #[test]
    fn a_ce_mark_halves() {
        let start = Instant::now();
        let mut cc = build(&LtTcpConfig::default(), start);
        let rtt = RttEstimator::new(Duration::from_millis(100));
        let before = cc.window();
        cc.on_ecn_ce(start + Duration::from_millis(100), start, 1, &rtt);
        assert_eq!(cc.window(), before / 2);
    }

    #[test]
    fn congestion_loss_halves_only_when_asked() {
        let start = Instant::now();
        let mut config = LtTcpConfig::default();
        config.answer_congestion_loss(true);
        let mut cc = build(&config, start);
        let rtt = RttEstimator::new(Duration::from_millis(100));
        let before = cc.window();
        let at = start + Duration::from_millis(100);
        cc.on_loss(at, start, 1200, false, &rtt);
        assert_eq!(cc.window(), before);
        cc.on_loss(at, start, 1200, true, &rtt);
        assert_eq!(cc.window(), before / 2);
    }

    #[test]
    fn fills_a_lossy_marking_path_and_keeps_the_queue_short() {
        // 20 % random loss, ECN above 5 ms of queue: the window is set by
        // the marks, so the path stays full and the queue near the mark.
        let mut path = TestPath::new(48, 100, 2.0);
        path.loss = 0.2;
        path.mark_above = Some(Duration::from_millis(5));
        let start = Instant::now();
        let mut cc = build(&LtTcpConfig::default(), start);
        let out = run(cc.as_mut(), &path, start, Duration::from_secs(40), 11);
        let carried = (out.delivered as f64) / (path.rate as f64 * 40.0 * 0.8);
        assert!(carried > 0.8, "carried {carried} of the erasure capacity");
        assert!(out.marks > 0);
        assert_eq!(out.queue_drops, 0);
        let queue = out.mean_queue_delay(Duration::from_secs(10), Duration::from_secs(40));
        assert!(queue < Duration::from_millis(30), "mean queue {queue:?}");
    }
}
