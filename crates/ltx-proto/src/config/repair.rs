//! The numbers every redundancy scheme is given.

use std::time::Duration;

/// The numbers a redundancy scheme spends: the residuals it sizes repair
/// for, the price of waiting for feedback, the margins of its answers.
/// ltx's sliding window reads all but `target_residual`; the seeds' block
/// schemes read `target_residual`, `max_ratio` and the reactive margins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedundancyConfig {
    /// The fraction of windows allowed to need reactive repair, for
    /// windows of a fixed size: the seeds' blocks ([`proactive_ratio_over`];
    /// default 0.1).
    ///
    /// [`proactive_ratio_over`]: crate::recovery::SlidingWindow::proactive_ratio_over
    pub target_residual: f64,
    /// The price of waiting for feedback: the mean wait per span of the
    /// sliding window that is worth one percent of its bytes on the wire
    /// (default 75 ms). The proactive ratio is the one whose wasted repairs
    /// and expected wait cost least together (see the module
    /// documentation): longer makes waiting cheaper, so more spans are left
    /// to feedback and fewer bytes are sent ahead of loss; shorter buys
    /// delivery delay with bytes.
    ///
    /// With the default, a 600 ms path with 20 % independent losses leaves
    /// a fifth of its spans to feedback, a 240 ms one about half, and paths
    /// of 78 ms and less nearly all: where a round trip is short, feedback
    /// is cheaper than margin (`docs/design/repair-sizing.md`).
    pub delay_per_percent: Duration,
    /// The round trip up to which reactive answers also cover the flight
    /// and round to the nearest repair (default 240 ms, where the sliding
    /// window leaves half the spans of an independent-loss path to
    /// feedback; see [`reactive_repairs_covered`]).
    ///
    /// [`reactive_repairs_covered`]: crate::recovery::SlidingWindow::reactive_repairs_covered
    pub cheap_feedback_rtt: Duration,
    /// The quantile of the flight's spread that a reactive answer is sized
    /// for where feedback is cheap (see [`cheap_feedback_rtt`]; default
    /// −1: one standard deviation below the expected need).
    ///
    /// Sized for the expected need, an answer wastes, in expectation, the
    /// repairs of every flight that loses less than its mean; sized below
    /// it, the shortfall is answered again after a short round trip: fewer
    /// bytes, more delay. 0 answers the expected need.
    ///
    /// [`cheap_feedback_rtt`]: RedundancyConfig::cheap_feedback_rtt
    pub cheap_answer_quantile: f64,
    /// The fraction of transfers whose last flight the tail is allowed to
    /// leave short, a round trip of feedback on their completion (default
    /// 0.01; see [`tail_repairs_for_flight`]); a long transfer, whose wait
    /// is worth more than the margin that spares it, is left short less
    /// often (down to one in 10 000). Lower sends more repair at the end of
    /// each transfer, while the link would otherwise idle.
    /// It is a ceiling also where a round trip is cheap
    /// (`docs/design/tail.md`).
    ///
    /// [`tail_repairs_for_flight`]: crate::recovery::SlidingWindow::tail_repairs_for_flight
    pub tail_residual: f64,
    /// The cap on proactive repair symbols per source symbol.
    pub max_ratio: f64,
    /// The fraction added on top of the expected need in reactive repair.
    pub reactive_margin: f64,
    /// Repair symbols added to any non-zero reactive answer, so that a small
    /// deficit is not missed by rounding or by the loss of its only repair.
    pub reactive_extra: u64,
}

impl Default for RedundancyConfig {
    fn default() -> Self {
        Self {
            target_residual: 0.1,
            delay_per_percent: Duration::from_millis(75),
            cheap_feedback_rtt: Duration::from_millis(240),
            cheap_answer_quantile: -1.0,
            tail_residual: 0.01,
            max_ratio: 1.5,
            reactive_margin: 0.1,
            reactive_extra: 1,
        }
    }
}
