//! How many repair symbols to send: ahead of loss, in answer to feedback, and
//! for the tail of a transfer.
//!
//! # The proactive ratio
//!
//! A proactive repair covers the last `n` source symbols sent (the *span*,
//! which the connection sets from the symbols one round trip carries, see
//! [`TransportConfig::max_repair_span`]), so a loss can be made up by the
//! repairs that follow it within `n` symbols, and only by feedback after
//! that, a round trip or more later. The ratio is sized so that a window of
//! `n` source symbols sent with `k` repair symbols, `m = n + k` packets, needs
//! feedback with probability about `target_residual`.
//!
//! Each packet is lost with probability `p`. The loss count `X` of the window
//! has two sources of spread:
//! - the channel: variance `m·p·(1−p)·F`, where `F` is the variance factor
//!   of the loss process: 1 for independent losses and, for a
//!   Gilbert–Elliott channel with mean burst `E` (loss certain in the bad
//!   state, none in the good one), `F = 2·E·(1−p) − 1` (the lag-`k`
//!   correlation of the loss indicator is `λ^k` with `λ = 1 − 1/(E·(1−p))`,
//!   and `1 + 2·Σλ^k = 2·E·(1−p) − 1`). An independent channel has mean run
//!   length `1/(1−p)`, for which that expression is 1, so the measured burst
//!   `B` gives `F = max(1, 2·B·(1−p) − 1)` for both;
//! - the estimate: `p` is itself measured, from `N` fates, with standard
//!   error `σ_p = √(p·(1−p) / N)`; an error of the rate moves the whole
//!   window, variance `m²·σ_p²`. Early in a connection it dominates: the
//!   first full flight is sized from the fates of the first packets (the
//!   connection's start probes and initial window), and one that comes out
//!   low leaves a whole flight short, every byte after the first gap
//!   waiting a round trip for feedback. `N` counts at most the effective
//!   size of the estimator's exponential window, `2·W − 1` for a window of
//!   `W` packets ([`DEFAULT_WINDOW`]), at least `MIN_SAMPLES`. The error of
//!   a bursty estimate is larger than the binomial one, but its windows
//!   already carry the `F` margin, and scaling the error by `F` as well
//!   cost 3 to 6 % more wire bytes on the bursty long-delay cells of the
//!   seed tables for no gain in time.
//!
//! With `z = Φ⁻¹(1 − target_residual)`, the normal approximation asks
//! `m·(1−p) − n ≥ z·√(m·b + m²·c)` with `b = p·(1−p)·F`, `c = σ_p²`.
//! Squared, with `a = 1 − p`, that is the quadratic
//!
//! ```text
//! (a² − z²·c)·m² − (2·a·n + z²·b)·m + n² ≥ 0,
//! m = (2an + z²b + √((2an + z²b)² − 4·(a² − z²c)·n²)) / (2·(a² − z²c))
//! ```
//!
//! and `ratio = m/n − 1`: `p/(1−p)` plus a margin that shrinks as `1/√n`
//! and as the estimate matures, never below the erasure channel's minimum
//! while `z ≥ 0`. The ratio is capped at `max_ratio` (also when
//! `z·σ_p ≥ 1 − p`, where no finite window would do).
//!
//! A residual above one half makes `z` negative: most spans are meant to
//! lack repair, and the smaller root of the quadratic is the `m` that
//! leaves that fraction short, below the channel's minimum (and never
//! under `n`, no repair at all).
//!
//! # How many spans the sliding window leaves to feedback
//!
//! A span that its proactive repairs leave short waits a round trip for
//! feedback; the margin that would spare it costs wire bytes, and the more
//! so the wider the span's loss count spreads. The sliding window weighs
//! the two. With `σ` the spread of a span's loss count (the channel's,
//! `√(m₀·p·(1−p)·F)` at its mean length `m₀ = n/(1−p)`), sending for the
//! quantile `z` wastes, in expectation, the repairs that arrive beyond the
//! span's losses, `σ·(z·Φ(z) + φ(z))`, and leaves the span to feedback with
//! probability `1 − Φ(z)`, a round trip's wait. At a price `λ` per second
//! of mean wait, in fractions of the span's bytes
//! ([`RedundancyConfig::delay_per_percent`]: one percent per 75 ms by
//! default), the cost
//!
//! ```text
//! C(z) = (σ/n)·(z·Φ(z) + φ(z)) + λ·RTT·(1 − Φ(z))
//! ```
//!
//! is least where `C′(z) = (σ/n)·Φ(z) − λ·RTT·φ(z) = 0`, that is where
//! `φ(z)/Φ(z) = σ / (n·λ·RTT)`: one more unit of margin wastes as much as
//! the wait it spares is worth. `φ/Φ` falls as `z` grows, so the root is
//! unique; it is kept above `z = −8` (eight standard deviations below a
//! span's expected losses: a span of 256 with up to 20 % independent loss
//! gets no repair there) and below the quantile that leaves 1 % of the
//! spans to feedback. That `z` then goes into the quadratic above, with
//! the estimate's error: a young estimate widens the margin, it does not
//! move the trade.
//!
//! Moving it too, with `z` chosen from the channel's and the estimate's
//! spread together (by the cost above, the estimate's error makes a margin
//! dearer than the wait), was measured and not kept. On a 600 ms path
//! (10 MB at 50 Mbit/s, seeds 1–3, medians) it brought 12 of the 25 cells
//! of the long-delay table within 1.05/(1−p) wire bytes per byte delivered
//! instead of 7 (5 %, E=2: 1.125 → 1.105; 30 %: 1.504 → 1.489), with T/T*
//! the same (mean 1.2348 → 1.2347); the 100 MB table and the 20 ms one
//! did not move. What it saved came from the first full flight, sized
//! from the 32 to 40 fates of the initial window, and what it cost came
//! from there too: at 20 % independent loss (seeds 1–12) the median delay
//! p99 went from 305 to 954 ms, and the seeds within one round trip from
//! 9 to none, for 1.3128 → 1.2913 bytes per byte; with a tenth of the
//! estimate's variance in the trade, 483 ms, 7 of 12 and 1.3058. The
//! first flight's size is known before its loss is: what a thinner
//! margin saves when the estimate comes out high, it costs in delay when
//! it comes out low.
//!
//! The default price is the one that leaves a fifth of the spans to
//! feedback on a 600 ms path with 20 % independent losses and the default
//! span of 256 (`z = 0.84`): the ratio is 0.281 with a mature estimate,
//! 0.303 after 160 fates and 0.355 after 32. A shorter round trip makes the
//! wait cheaper, a wider spread the margin dearer, and both leave more to
//! feedback: at 240 ms, about half (0.246, near the channel's minimum of
//! 0.25); at 120 ms, 90 % (0.205); at 78 ms, 99 % (0.168); at 50 ms all
//! but 0.004 % (0.115), and at 20 ms all of them, with no repair
//! ahead of loss: feedback makes up what a span lacks a round trip later.
//! The range once ended at 99 %, which held every path of 78 ms and less
//! at 0.169; the repairs it sent there found the losses they were meant
//! for already solved by answers more often than the cost counts (10 Mbit/s,
//! 20 ms, 25 %, 50 MB, seed 2: 717 of the 8,740 proactive repairs arrived
//! with nothing left to solve). Without that end, over seeds 1–3, T/T* went
//! from 1.032 to 1.018 there and wire bytes per byte delivered from 1.392
//! to 1.374; at 10 ms and 5 %, 1.013 to 1.004; at 20 ms and 10 %, 1.014 to
//! 1.007. What it costs is delay: the median delivery delay at 20 ms and
//! 25 % from 28 to 45 ms, its 99th percentile from 203 to 274 ms; at the
//! default price, 17 ms of wait is worth under a quarter of a percent of
//! the bytes, and 1.3 % were saved. A wider span spreads less for its size
//! and buys margin sooner (1024 symbols at 600 ms: 9 % left, 0.278). At
//! 600 ms with 40 % lost in bursts of 10 (`F = 11`), 87 % of the spans are left to feedback
//! (`z = −1.13`): a margin for that spread would cost more than the round
//! trip it spares. On that path (50 Mbit/s, 100 MB, seed 1) this took the
//! wire bytes per byte delivered from 1.94 to 1.77 and T/T* from 1.19 to
//! 1.10 against a fixed fifth of the spans, and the median delivery delay
//! from 49 to 632 ms; with independent losses nothing moved at 20 %.
//!
//! The trade holds while more data follows, which hides a span's wait
//! behind the sending of the next. At the end of a transfer nothing does:
//! a shortfall of the last flight waits a round trip on the transfer's
//! completion. The tail ([`tail_repairs_for_flight`]) then makes up the
//! larger of two shortfalls, each with a margin for
//! [`RedundancyConfig::tail_residual`] (1 %), or fewer where the transfer
//! is long (below).
//!
//! The first is that of the flight's last symbols, which only the repairs
//! sent after them reach. Over the last `j` source symbols of a flight
//! sent at `r` repairs per source symbol, `(1+r)·j` packets lose
//! `X_j` and `r·j` repairs go out: the symbols lack `X_j − r·j`
//! equations, a random walk in `j` with drift `−μ`, `μ = (1−p)·r − p`
//! (the spans' margin per source symbol), and variance `v = (1+r)·p·(1−p)·F`
//! per step. Where `μ > 0` its largest value over every `j` exceeds `x`
//! with probability about `e^(−2μx/v)` (the Brownian approximation), so
//! the tail needs `x = v·ln(1/q)/(2μ)` for a residual `q`. A thin margin
//! makes that grow without bound while the walk is only `S` steps long:
//! it is held to the quantile of the largest value of a walk without
//! drift, `√(v·S)·Φ⁻¹(1 − q/2)` (the reflection principle). Where the
//! spans carry no margin (`μ ≤ 0`) the longest suffix, the whole flight,
//! is the one that lacks most, which the second covers. Over 4,000
//! simulated flights of 1,000 symbols at the 600 ms ratio, the last
//! symbols lacked more than the tail brought in 0.5 to 1 % of them at 5,
//! 20 and 30 % independent loss, and in 8 to 10 % with half the tail.
//!
//! The second is what the whole flight in flight is expected to lack,
//! with a margin of `z·σ` over the flight as one window, whose loss count
//! spreads far less for its size than a span's
//! (2,500 packets at 20 % in bursts of 10: σ ≈ 3 % of the flight, against
//! 11 % of a span of 256), with the estimate's error, scaled by `F` like the
//! channel's, since a bursty estimate errs by more than a binomial one. The
//! tail goes out when the link would otherwise idle for the last
//! acknowledgements, so its margin costs bytes but no time. Sized so, the
//! flight's spans keep their least-cost quantile: on a 600 ms path, 10 MB
//! at 50 Mbit/s in bursts (seeds 1–6, medians), wire bytes per byte
//! delivered fell from 1.371 to 1.332 at 20 %, E=5, from 1.574 to 1.523 at
//! 30 %, E=10 and from 2.264 to 2.160 at 50 %, E=10, and the mean T/T*
//! over the 25 cells of the long-delay table from 1.235 to 1.226, against
//! spans of the last flight held to the seeds' blocks' residual (10 %) and
//! a tail at 10 % without the estimate's error.
//!
//! The last symbols' shortfall once had a window of its own instead: the
//! proactive formula over the last 256 symbols at the blocks' 10 %, as if
//! no repair had been sent for them, on top of the repairs that had. On a
//! 600 ms path (10 MB at 50 Mbit/s, seeds 1–3, medians) the walk's
//! quantile took the wire bytes per byte delivered from 1.517 to 1.504 at
//! 30 % independent loss, from 1.763 to 1.743 at 40 % and from 2.110 to
//! 2.087 at 50 %, with every transfer's time and delivery delay the same
//! (at 20 %, seeds 1–24: 1.3237 to 1.3172 on average, T/T* and delay p99
//! equal seed by seed). Dropping that window without the walk took T/T*
//! at 5 % from 1.24 to 1.47: a flight's surplus says nothing of its last
//! symbols.
//!
//! How many transfers the tail may leave short follows what their wait
//! costs: it is priced like a span's, but over every symbol sent since
//! the sender last had nothing outstanding (the transfer so far), and the
//! quantile is the least-cost one of the spans' trade above, with the
//! flight's spread, never below the configured one. A 10 MB transfer at
//! 600 ms keeps the 1 %; 100 MB leaves about 0.2 % short. Sized for 1 %
//! alone, three of the 75 runs of the 100 MB table (50 Mbit/s, 600 ms,
//! seeds 1–3) waited a round trip on their completion; priced so, none
//! did (T/T* 1.087 → 1.063, 1.087 → 1.070, 1.080 → 1.060), for 0.01 to
//! 0.04 % more wire bytes, and of the 10 MB long-delay table and the web
//! objects only one cell moved, by 0.0002 bytes per byte.
//!
//! [`tail_repairs_for_flight`]: RedundancyPolicy::tail_repairs_for_flight
//! [`TransportConfig::max_repair_span`]: crate::TransportConfig::max_repair_span
//! [`DEFAULT_WINDOW`]: super::loss_estimator::DEFAULT_WINDOW

use super::loss_estimator::DEFAULT_WINDOW;
use std::time::Duration;

use super::scheme::Horizon;
use super::{Feedback, Flight, LossEstimate};

/// The loss rate above which the policy stops trying: repair for a path that
/// loses almost everything would be unbounded.
const MAX_RATE: f64 = 0.95;

/// The fewest fates the standard error of a loss estimate is taken over:
/// the first estimates count fates not yet committed, which `samples` leaves
/// out.
const MIN_SAMPLES: u64 = 32;

/// The fewest of its spans that the sliding window leaves to feedback,
/// whatever the price of waiting (see
/// [`RedundancyConfig::delay_per_percent`]).
const FEWEST_LEFT: f64 = 0.01;

/// The fewest transfers whose last flight the tail leaves short, however
/// long the transfer (see [`RedundancyConfig::tail_residual`]).
const FEWEST_TAILS_SHORT: f64 = 1e-4;

/// The lowest quantile a span is sized for: eight standard deviations below
/// its expected losses, where a span of 256 symbols with up to 20 %
/// independent loss gets no repair at all (see
/// [`RedundancyConfig::delay_per_percent`]).
const LOWEST_QUANTILE: f64 = -8.0;

/// The configuration of a [`RedundancyPolicy`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedundancyConfig {
    /// The fraction of windows allowed to need reactive repair, for
    /// windows of a fixed size: the seeds' blocks ([`proactive_ratio_over`];
    /// default 0.1).
    ///
    /// [`proactive_ratio_over`]: RedundancyPolicy::proactive_ratio_over
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
    /// a fifth of its spans to feedback, a 240 ms one about half, a 120 ms
    /// one 90 % and paths of 78 ms and less nearly all, 20 ms ones all:
    /// where a round trip is short, feedback is cheaper than margin. On
    /// 100 Mbit/s, 20 ms and 20 % loss (10 MB, medians of seeds 1–3) it
    /// delivers in order with a p99 delay of 58 ms and sends 1.290 bytes
    /// per byte delivered, T/T* 1.032; a price of 6 ms, which leaves about
    /// half the spans there to feedback, gives 39 ms, 1.309 and 1.044
    /// (`ltx sim run --delay-per-percent`).
    pub delay_per_percent: Duration,
    /// The round trip up to which reactive answers also cover the flight
    /// and round to the nearest repair (default 240 ms, where the sliding
    /// window leaves half the spans of an independent-loss path to
    /// feedback; see [`reactive_repairs_covered`]).
    ///
    /// [`reactive_repairs_covered`]: RedundancyPolicy::reactive_repairs_covered
    pub cheap_feedback_rtt: Duration,
    /// The quantile of the flight's spread that a reactive answer is sized
    /// for where feedback is cheap (see [`cheap_feedback_rtt`]; default
    /// −1: one standard deviation below the expected need).
    ///
    /// Sized for the expected need, an answer wastes, in expectation, the
    /// repairs of every flight that loses less than its mean; sized below
    /// it, the shortfall is answered again after a short round trip. On
    /// 10 Mbit/s, 20 ms and 25 % independent loss (50 MB, medians of seeds
    /// 1–3, where no repair goes ahead of loss), −1 takes the wire bytes
    /// per byte delivered from 1.428 to 1.374 and T/T* from 1.058 to 1.018
    /// (seed 1: 538 repairs arrived with nothing left to solve, against
    /// 1,982), and the delivery delay from 25 to 45 ms in the median and
    /// from 105 to 274 ms at the 99th percentile: the price of the bytes
    /// saved. 0 answers the expected need.
    ///
    /// [`cheap_feedback_rtt`]: RedundancyConfig::cheap_feedback_rtt
    pub cheap_answer_quantile: f64,
    /// The fraction of transfers whose last flight the tail is allowed to
    /// leave short, a round trip of feedback on their completion (default
    /// 0.01; see [`tail_repairs_for_flight`]); a long transfer, whose wait
    /// is worth more than the margin that spares it, is left short less
    /// often (down to one in 10 000). Lower sends more repair at the end of
    /// each transfer, while the link would otherwise idle.
    ///
    /// It is a ceiling also where a round trip is cheap: letting the tail
    /// leave more transfers short on a 20 ms path, as the price of waiting
    /// alone would (100 Mbit/s, 10 MB, seeds 1–3), took up to 0.4 % off the
    /// wire bytes of the correlated cells but added up to 2.5 % to their
    /// time (5 %, E=10: T/T* 1.047 → 1.072).
    ///
    /// [`tail_repairs_for_flight`]: RedundancyPolicy::tail_repairs_for_flight
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

/// The redundancy policy: how many repair symbols to send, given a
/// [`LossEstimate`]. Policy only; the connection builds the symbols.
#[derive(Debug, Clone, Copy)]
pub struct RedundancyPolicy {
    config: RedundancyConfig,
    /// `Φ⁻¹(1 − target_residual)`, computed once.
    z: f64,
    /// `Φ⁻¹(1 − tail_residual)`, computed once.
    tail_z: f64,
    /// Whether the last reactive answer counted the source symbols in
    /// flight: then its repairs cover them too.
    pub(crate) answer_covers_flight: bool,
}

impl Default for RedundancyPolicy {
    fn default() -> Self {
        Self::new(RedundancyConfig::default())
    }
}

impl RedundancyPolicy {
    /// A policy with the given configuration.
    pub fn new(config: RedundancyConfig) -> Self {
        let residual = config.target_residual.clamp(1e-9, 0.5);
        let tail_residual = config.tail_residual.clamp(1e-9, 0.5);
        Self {
            config,
            z: inverse_normal_cdf(1.0 - residual),
            tail_z: inverse_normal_cdf(1.0 - tail_residual),
            answer_covers_flight: false,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RedundancyConfig {
        &self.config
    }

    /// Repair symbols per source symbol to send ahead of loss, sized so that
    /// a window of `window` source symbols needs reactive repair with
    /// probability about `target_residual` (see the module documentation).
    pub fn proactive_ratio_over(&self, est: &LossEstimate, window: u64) -> f64 {
        self.ratio(est, window, self.z)
    }

    /// Repair symbols per source symbol to send ahead of loss by the sliding
    /// window: sized so that a span of `horizon.span` source symbols needs
    /// reactive repair with the probability that weighs wasted repairs
    /// against the wait for feedback (see
    /// [`RedundancyConfig::delay_per_percent`] and the module
    /// documentation).
    pub fn proactive_ratio_for(&self, est: &LossEstimate, horizon: &Horizon) -> f64 {
        self.ratio(est, horizon.span, self.quantile_for(est, horizon))
    }

    /// The fraction of spans of `horizon.span` source symbols that the
    /// sliding window leaves to feedback: `1 − Φ(z)` for the quantile it
    /// sizes them for (see [`RedundancyConfig::delay_per_percent`]).
    pub fn residual_for(&self, est: &LossEstimate, horizon: &Horizon) -> f64 {
        1.0 - normal_cdf(self.quantile_for(est, horizon))
    }

    /// Whether a round trip of `rtt` is short enough for reactive answers
    /// to cover the flight and round to the nearest repair
    /// ([`RedundancyConfig::cheap_feedback_rtt`]).
    pub(crate) fn feedback_is_cheap(&self, rtt: Duration) -> bool {
        rtt <= self.config.cheap_feedback_rtt
    }

    /// The quantile `z` a span of the sliding window is sized for: the root
    /// of `φ(z)/Φ(z) = σ / (n·λ·RTT)` (module documentation), from
    /// [`LOWEST_QUANTILE`] to the one that leaves [`FEWEST_LEFT`].
    fn quantile_for(&self, est: &LossEstimate, horizon: &Horizon) -> f64 {
        let (low, high) = (LOWEST_QUANTILE, inverse_normal_cdf(1.0 - FEWEST_LEFT));
        let Some(p) = usable_rate(est) else {
            return high;
        };
        let per_second = 0.01 / self.config.delay_per_percent.as_secs_f64();
        let wait = per_second * horizon.rtt.as_secs_f64();
        // A free wait, or a priceless one, sits at an end of the range.
        if wait.is_nan() || wait <= 0.0 {
            return low;
        }
        if wait.is_infinite() {
            return high;
        }
        let n = horizon.span.max(1) as f64;
        let spread = loss_spread(n / (1.0 - p), p, est) / n;
        least_cost_quantile(spread / wait, low, high)
    }

    /// The quantile the tail of `flight` is sized for, whose loss count
    /// spreads by `spread`: the one of [`RedundancyConfig::tail_residual`],
    /// or a higher one where the wait it spares delays more: the cost of
    /// the module documentation with the wait priced over the transfer so
    /// far (`flight.at_stake`), not a span, from that quantile up to the
    /// one that leaves [`FEWEST_TAILS_SHORT`].
    fn tail_quantile(&self, spread: f64, flight: &Flight) -> f64 {
        let per_second = 0.01 / self.config.delay_per_percent.as_secs_f64();
        let wait = per_second * flight.rtt.as_secs_f64() * flight.at_stake as f64;
        if !(wait > 0.0 && wait.is_finite() && spread > 0.0) {
            return self.tail_z;
        }
        let high = inverse_normal_cdf(1.0 - FEWEST_TAILS_SHORT).max(self.tail_z);
        least_cost_quantile(spread / wait, self.tail_z, high)
    }

    fn ratio(&self, est: &LossEstimate, window: u64, z: f64) -> f64 {
        let Some(p) = usable_rate(est) else {
            return 0.0;
        };
        let n = window.max(1) as f64;
        let cap = self.config.max_ratio.max(0.0);
        // The cap wins over the channel minimum: past it the path is hopeless
        // for proactive repair and feedback must do the rest.
        match packets_for(n, p, est, z) {
            // Most spans are left to feedback: below the channel minimum.
            Some(m) if z < 0.0 => (m / n - 1.0).max(0.0).min(cap),
            Some(m) => (m / n - 1.0).max(p / (1.0 - p)).min(cap),
            None => cap,
        }
    }

    /// The part of the peer's reported deficit that a reactive answer
    /// makes up, when its repairs cannot also cover the flight: the
    /// settled part, which the proactive repairs sliding forward no longer
    /// reach, and of the rest, the peer's newest gaps, what the proactive
    /// repairs sent after its report are not expected to cover.
    ///
    /// A loss is made up by the repairs sent within a span after it, and
    /// the peer's report comes before most of those: answering its newest
    /// gaps in full sends what is already on its way. On 50 Mbit/s, 600 ms
    /// and 30 % independent loss (100 MB, seed 1), answers to the whole
    /// deficit sent 950 repairs, of which 652 arrived to find every symbol
    /// they covered known (about 665 arrived); answering only what is left
    /// sent 669, of which 450 found nothing to solve, and took the wire
    /// bytes per byte delivered from 1.504 to 1.500 (seeds 1–3: 1.4988 to
    /// 1.4949, T/T* 1.0566 to 1.0538).
    ///
    /// The proactive repairs sent with the `sent` source symbols after the
    /// report reach back over the newest gaps, but cover those symbols'
    /// own losses first: what they bring for the gaps is their margin,
    /// `((1−p)·ratio − p)·min(span, sent)`. None when the ratio is at or
    /// below the channel's minimum, when no repair goes ahead of loss or
    /// no data followed the report: then the whole deficit is answered.
    /// Counting all of them instead, as if they were for the gaps alone,
    /// answers only the settled part, but a shortfall then rides forward
    /// with the window: rows over the older gaps reach into the newer
    /// symbols, the older symbols never count as short, and a transfer's
    /// first flight waited 1.3 s for its first gap (30 MB, 30 %, seed 2:
    /// delivery delay p99 1.26 s against 0.69 s).
    pub fn deficit_to_answer(&self, feedback: &Feedback, est: &LossEstimate) -> u64 {
        let newest = feedback.deficit.saturating_sub(feedback.settled);
        if newest == 0 {
            return feedback.deficit;
        }
        let p = usable_rate(est).unwrap_or(0.0);
        let ratio = self.proactive_ratio_for(est, &feedback.horizon);
        let reach = feedback.sent_since_report.min(feedback.horizon.span) as f64;
        // What those repairs bring beyond the losses of the symbols sent
        // with them, which they cover too.
        let coming = ((1.0 - p) * ratio - p) * reach;
        // `as` saturates; `coming` is finite and not negative.
        let uncovered = (newest as f64 - coming).max(0.0).ceil() as u64;
        feedback.settled + uncovered.min(newest)
    }

    /// How many repair symbols to send now after the receiver reported
    /// `missing` unknown source symbols, with `repairs_in_flight` repair
    /// symbols that can cover them still on their way.
    ///
    /// `ceil((missing − (1−p)·in_flight)·(1 + margin)/(1−p)) + extra`, or 0
    /// when nothing is missing or the repairs in flight are expected to cover
    /// it.
    pub fn reactive_repairs(
        &self,
        missing: u64,
        repairs_in_flight: u64,
        est: &LossEstimate,
    ) -> u64 {
        if missing == 0 {
            return 0;
        }
        let p = usable_rate(est).unwrap_or(0.0);
        let deficit = missing as f64 - repairs_in_flight as f64 * (1.0 - p);
        if deficit <= 0.0 {
            return 0;
        }
        let need = (deficit * (1.0 + self.config.reactive_margin.max(0.0)) / (1.0 - p)).ceil();
        // `as` saturates: an absurd `missing` gives u64::MAX, not a wrap.
        (need as u64).saturating_add(self.config.reactive_extra)
    }

    /// How many repair symbols to send after the receiver reported
    /// `deficit` missing equations, when every repair in `flight` covers its
    /// first unknown symbol (see [`Feedback::covered`]): what the flight
    /// will bring is set against what it will lose, `D + p·S − (1−p)·R`
    /// equations short, and the answer is what makes up that expectation.
    /// Proactive repairs in flight are counted: they were sized for the
    /// flight's losses, with their margin, and cover the gap, so
    /// answering the whole deficit again would send what they carry (at
    /// 20 ms and 20 % loss, answering it in full sent a tenth of all
    /// repairs for nothing). `S` counts only the source symbols sent before
    /// the newest repair in flight, which that repair covers.
    ///
    /// Where the round trip is short enough that the sliding window leaves
    /// half the spans of an independent-loss path to feedback or more
    /// (240 ms and less by default, see
    /// [`RedundancyConfig::cheap_feedback_rtt`]), the answer is rounded to
    /// the nearest whole repair, and its repairs cover the flight as well as
    /// the reported gaps (the scheme's `plan_repair`): the count includes
    /// the flight's losses, and a repair that stops at the gaps finds them
    /// solved by the proactive repairs that arrived before it and those
    /// losses left for the next answer. Rounding up answered a shortfall of a
    /// tenth of an equation with a whole repair: on 10 Mbit/s, 20 ms and
    /// 5 % loss, with repairs that stopped at the gaps, it took the overhead
    /// from 1.121 to 1.141, most of those repairs finding nothing to solve.
    /// There the answer is also sized below the flight's expected need, at
    /// [`RedundancyConfig::cheap_answer_quantile`] of its spread,
    /// `√((S+R)·p·(1−p)·F)`: what the flight turns out to lack comes back
    /// in the next report, a short round trip later, while what it turns
    /// out not to need is wasted for good.
    /// On longer paths it is rounded up: a shortfall left over costs a
    /// round trip, dear there (at 600 ms and 20 % loss, rounding to the
    /// nearest took the worst delivery delay p99 of seeds 1–8 from 1.19 to
    /// 1.24 round trips).
    ///
    /// [`Feedback::covered`]: super::Feedback::covered
    pub fn reactive_repairs_covered(
        &self,
        deficit: u64,
        flight: &Flight,
        est: &LossEstimate,
    ) -> u64 {
        if deficit == 0 {
            return 0;
        }
        let p = usable_rate(est).unwrap_or(0.0);
        let (sources, repairs) = (flight.sources as f64, flight.repairs as f64);
        let short = deficit as f64 + p * sources - (1.0 - p) * repairs;
        if short <= 0.0 {
            return 0;
        }
        // `as` saturates.
        if self.feedback_is_cheap(flight.rtt) {
            let short =
                short + self.config.cheap_answer_quantile * loss_spread(sources + repairs, p, est);
            (short.max(0.0) / (1.0 - p)).round() as u64
        } else {
            (short / (1.0 - p)).ceil() as u64
        }
    }

    /// How many repair symbols the end of a transfer needs for the whole
    /// `flight` whose fate is not known yet: `flight.sources` source symbols
    /// and `flight.repairs` proactive repairs over them, over `1 − p`, for
    /// the larger of two shortfalls (module documentation), each with the
    /// margin of [`RedundancyConfig::tail_residual`]: that of the flight's
    /// last symbols, which only repairs sent after them reach, and that of
    /// the whole flight; none on a clean path or with nothing in flight.
    ///
    /// The whole flight is expected to lack `p·S − (1−p)·R`. The spread
    /// is the channel's, `(S+R)·p·(1−p)·F`, and the estimate's,
    /// `(S+R)²·p·(1−p)·F/N` for an estimate of `N` fates: over a whole
    /// flight the estimate's error is as large as the channel's, and a
    /// bursty estimate errs by `F` more than a binomial one.
    ///
    /// The sliding window leaves spans to feedback where waiting is cheaper
    /// than margin, which holds while more data follows; at the end of a
    /// transfer the wait is the transfer's, a round trip or more on its
    /// completion. On a 600 ms path with 20 % lost in bursts of 10 (10 MB,
    /// seed 2), where the estimate said 15.8 % when the data ran out, a
    /// tail of 120 repairs (at 10 %) left the last flight short and took
    /// T/T* to 1.41; at 1 %, 234 repairs made 1.22, with the same wire
    /// bytes per byte delivered (1.301): the round trip it spared would
    /// have cost more repairs than the margin. Without the estimate's
    /// error, even at 0.6 % it was still short (1.41).
    pub fn tail_repairs_for_flight(&self, flight: &Flight, est: &LossEstimate) -> u64 {
        let Some(p) = usable_rate(est) else {
            return 0;
        };
        if flight.sources == 0 {
            return 0;
        }
        let (sources, repairs) = (flight.sources as f64, flight.repairs as f64);
        let spread = flight_spread(sources + repairs, p, est);
        let z = self.tail_quantile(spread, flight);
        let whole = p * sources - (1.0 - p) * repairs + z * spread;
        let short = whole.max(last_symbols_short(sources, repairs, p, est, z));
        if short <= 0.0 {
            return 0;
        }
        let cap = (sources * self.config.max_ratio.max(0.0)).ceil();
        // `as` saturates.
        (short / (1.0 - p)).ceil().min(cap) as u64
    }
}

/// The equations the last symbols of a flight of `sources` source symbols
/// sent with `repairs` proactive repairs lack, at the quantile `z`: the
/// largest value of the random walk of the module documentation, or 0
/// where the spans carry no margin.
fn last_symbols_short(sources: f64, repairs: f64, p: f64, est: &LossEstimate, z: f64) -> f64 {
    let ratio = repairs / sources;
    let drift = (1.0 - p) * ratio - p;
    if drift <= 0.0 || drift.is_nan() {
        return 0.0;
    }
    let variance = (1.0 + ratio) * p * (1.0 - p) * variance_factor(est, p);
    // The fraction of flights left short: `1 − Φ(z)`.
    let short = normal_cdf(-z).max(f64::MIN_POSITIVE);
    let with_drift = variance * -short.ln() / (2.0 * drift);
    let without_drift = (variance * sources).sqrt() * inverse_normal_cdf(1.0 - 0.5 * short);
    with_drift.min(without_drift)
}

/// The root of `φ(z)/Φ(z) = target` between `low` and `high` (the ends
/// where it lies outside): the quantile where one more unit of margin
/// wastes as much as the wait it spares is worth (module documentation).
fn least_cost_quantile(target: f64, low: f64, high: f64) -> f64 {
    let hazard = |z: f64| normal_pdf(z) / normal_cdf(z);
    if target >= hazard(low) {
        return low;
    }
    if target <= hazard(high) {
        return high;
    }
    let (mut below, mut above) = (low, high);
    // 40 halvings of a range under 12 wide: far finer than the normal
    // approximation the answer serves.
    for _ in 0..40 {
        let mid = 0.5 * (below + above);
        if hazard(mid) > target {
            below = mid;
        } else {
            above = mid;
        }
    }
    0.5 * (below + above)
}

/// The `m` of the module documentation: packets to send for `n` source
/// symbols at loss rate `p`, with the channel's and the estimate's
/// spread, for a quantile `z`; `None` where the estimate is too uncertain
/// for any.
fn packets_for(n: f64, p: f64, est: &LossEstimate, z: f64) -> Option<f64> {
    let f = variance_factor(est, p);
    let samples = est.samples.clamp(MIN_SAMPLES, 2 * DEFAULT_WINDOW) as f64;
    let a = 1.0 - p;
    let b = p * (1.0 - p) * f;
    let c = p * (1.0 - p) / samples;
    let z2 = z * z;
    let lead = a * a - z2 * c;
    let linear = 2.0 * a * n + z2 * b;
    let discriminant = linear * linear - 4.0 * lead * n * n;
    if z < 0.0 {
        // The smaller root: most spans are meant to fall short. Written as
        // `2n² / (B + √D)`, it is the root between `n` and `n/(1−p)` also
        // where a deep quantile and a young estimate make `lead` negative.
        let root = 2.0 * n * n / (linear + discriminant.max(0.0).sqrt());
        return Some(root.max(n));
    }
    if lead <= 0.0 {
        return None;
    }
    Some((linear + discriminant.max(0.0).sqrt()) / (2.0 * lead))
}

/// The estimate's rate, capped below 1, or None on a clean path.
fn usable_rate(est: &LossEstimate) -> Option<f64> {
    let p = est.rate;
    if p.is_nan() || p <= 0.0 {
        return None;
    }
    Some(p.min(MAX_RATE))
}

/// The standard deviation of the loss count of `packets` packets at loss
/// rate `p`: the channel's, `√(packets·p·(1−p)·F)` (module documentation).
fn loss_spread(packets: f64, p: f64, est: &LossEstimate) -> f64 {
    (packets * p * (1.0 - p) * variance_factor(est, p)).sqrt()
}

/// The spread of the loss count of a whole flight of `packets`: the
/// channel's, and the error of the estimate it is sized from, both scaled
/// by the variance factor `F` (see
/// [`RedundancyPolicy::tail_repairs_for_flight`]).
fn flight_spread(packets: f64, p: f64, est: &LossEstimate) -> f64 {
    let samples = est.samples.clamp(MIN_SAMPLES, 2 * DEFAULT_WINDOW) as f64;
    let channel = loss_spread(packets, p, est);
    (channel * channel * (1.0 + packets / samples)).sqrt()
}

/// The variance factor `F = max(1, 2·B·(1−p) − 1)` of the module docs.
fn variance_factor(est: &LossEstimate, p: f64) -> f64 {
    let burst = if est.burst.is_finite() {
        est.burst
    } else {
        1.0
    };
    (2.0 * burst * (1.0 - p) - 1.0).max(1.0)
}

/// The standard normal density `φ(z)`.
fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The standard normal distribution `Φ(z)`, by Abramowitz and Stegun's
/// 26.2.17 (absolute error below 7.5e-8).
fn normal_cdf(z: f64) -> f64 {
    const B: [f64; 5] = [
        0.319_381_530,
        -0.356_563_782,
        1.781_477_937,
        -1.821_255_978,
        1.330_274_429,
    ];
    let t = 1.0 / (1.0 + 0.231_641_9 * z.abs());
    let poly = t * (B[0] + t * (B[1] + t * (B[2] + t * (B[3] + t * B[4]))));
    let upper = normal_pdf(z) * poly;
    if z >= 0.0 {
        1.0 - upper
    } else {
        upper
    }
}

/// `Φ⁻¹(q)` for `q` in `(0, 1)`, by Acklam's rational approximation
/// (relative error below 1.2e-9, far finer than the normal approximation it
/// serves).
fn inverse_normal_cdf(q: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.02425;
    let tail = |r: f64| {
        let t = (-2.0 * r.ln()).sqrt();
        (((((C[0] * t + C[1]) * t + C[2]) * t + C[3]) * t + C[4]) * t + C[5])
            / ((((D[0] * t + D[1]) * t + D[2]) * t + D[3]) * t + 1.0)
    };
    if q < LOW {
        tail(q)
    } else if q > 1.0 - LOW {
        -tail(1.0 - q)
    } else {
        let u = q - 0.5;
        let r = u * u;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * u
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn inverse_normal_known_points() {
        for (q, z) in [
            (0.5, 0.0),
            (0.975, 1.959_964),
            (0.98, 2.053_749),
            (0.01, -2.326_348),
        ] {
            assert!((inverse_normal_cdf(q) - z).abs() < 1e-5, "{q}");
        }
    }

    /// A mature estimate: its standard error is negligible.
    fn mature(rate: f64, burst: f64) -> LossEstimate {
        LossEstimate {
            rate,
            burst,
            samples: 1 << 40,
        }
    }

    fn horizon(span: u64, rtt_ms: u64) -> Horizon {
        Horizon {
            span,
            rtt: Duration::from_millis(rtt_ms),
        }
    }

    #[test]
    fn documented_figures() {
        let policy = RedundancyPolicy::default();
        let est = mature(0.2, 1.25);
        // Fixed windows at the default residual of 10 %.
        let r64 = policy.proactive_ratio_over(&est, 64);
        let r1024 = policy.proactive_ratio_over(&est, 1024);
        assert!((r64 - 0.344).abs() < 0.002, "{r64}");
        assert!((r1024 - 0.276).abs() < 0.002, "{r1024}");
        // The sliding window's spans of 256, by round trip.
        for (rtt, want) in [
            (20, 0.0),
            (50, 0.115),
            (78, 0.168),
            (120, 0.205),
            (240, 0.246),
            (600, 0.281),
        ] {
            let r = policy.proactive_ratio_for(&est, &horizon(256, rtt));
            assert!((r - want).abs() < 0.002, "{rtt} ms: {r}");
        }
        // The lowest quantile leaves a span of 256 with no repair up to
        // 20 % independent loss, not beyond.
        let at_20_ms = |rate: f64| {
            policy.proactive_ratio_for(&mature(rate, 1.0 / (1.0 - rate)), &horizon(256, 20))
        };
        assert_eq!(at_20_ms(0.2), 0.0);
        assert!(at_20_ms(0.25) > 0.0);
        let wide = policy.proactive_ratio_for(&est, &horizon(1024, 600));
        assert!((wide - 0.278).abs() < 0.002, "{wide}");
    }

    #[test]
    fn a_deep_quantile_with_a_young_estimate_sends_less_not_the_cap() {
        // On a short path the span is sized far below its expected losses;
        // with a young estimate of a heavy loss rate the estimate's error
        // alone would make the quadratic's leading term negative. The
        // span must still get at most what a mature estimate gives it,
        // never the cap that stands for a hopeless path.
        let policy = RedundancyPolicy::default();
        for rate in [0.3, 0.5, 0.7] {
            for rtt in [20, 40, 60] {
                let h = horizon(256, rtt);
                let young = LossEstimate {
                    rate,
                    burst: 1.0 / (1.0 - rate),
                    samples: 0,
                };
                let ratio = policy.proactive_ratio_for(&young, &h);
                let mature_ratio =
                    policy.proactive_ratio_for(&mature(rate, 1.0 / (1.0 - rate)), &h);
                assert!(
                    (0.0..=mature_ratio + 1e-12).contains(&ratio),
                    "p {rate}, {rtt} ms: {ratio} young, {mature_ratio} mature"
                );
                assert!(mature_ratio < rate / (1.0 - rate), "p {rate}, {rtt} ms");
            }
        }
    }

    #[test]
    fn a_young_estimate_buys_a_margin_that_fades() {
        // The figures of the module documentation.
        let policy = RedundancyPolicy::default();
        let ratio_after = |samples| {
            let est = LossEstimate {
                rate: 0.2,
                burst: 1.25,
                samples,
            };
            policy.proactive_ratio_for(&est, &horizon(256, 600))
        };
        for (samples, want) in [(32, 0.355), (160, 0.303), (2048, 0.282)] {
            let got = ratio_after(samples);
            assert!((got - want).abs() < 0.002, "{samples} fates: {got}");
        }
        // Fewer fates than the floor count as the floor; more than the
        // estimator's window holds count as the window.
        assert_eq!(ratio_after(0), ratio_after(MIN_SAMPLES));
        assert_eq!(ratio_after(1 << 20), ratio_after(2 * DEFAULT_WINDOW));
        // A clean path still pays nothing, however young.
        let clean = policy.proactive_ratio_for(&LossEstimate::CLEAN, &horizon(256, 600));
        assert_eq!(clean, 0.0);
    }

    #[test]
    fn the_quantile_is_the_least_cost_within_its_range() {
        let policy = RedundancyPolicy::default();
        let per_second = 0.01 / policy.config.delay_per_percent.as_secs_f64();
        let (low, high) = (LOWEST_QUANTILE, inverse_normal_cdf(1.0 - FEWEST_LEFT));
        for (rate, burst) in [(0.05, 1.05), (0.2, 1.25), (0.4, 10.0), (0.5, 2.0)] {
            let est = mature(rate, burst);
            for span in [256, 1024] {
                for rtt in [20, 100, 240, 600, 1200, 5000] {
                    let h = horizon(span, rtt);
                    // The cost of the module documentation, by its definition.
                    let n = span as f64;
                    let f = (2.0 * burst * (1.0 - rate) - 1.0).max(1.0);
                    let spread = (n / (1.0 - rate) * rate * (1.0 - rate) * f).sqrt() / n;
                    let wait = per_second * rtt as f64 / 1000.0;
                    let cost = |z: f64| {
                        let (cdf, pdf) = (normal_cdf(z), normal_pdf(z));
                        spread * (z * cdf + pdf) + wait * (1.0 - cdf)
                    };
                    let best = (0..=4000)
                        .map(|i| low + (high - low) * f64::from(i) / 4000.0)
                        .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
                        .unwrap();
                    let z = policy.quantile_for(&est, &h);
                    // Far below zero the cost is flat to within the error
                    // of the normal approximation, and the grid's least is
                    // as likely to be that error as the minimum: there the
                    // quantile must cost no more than it, to one part in 10⁸.
                    assert!(
                        (z - best).abs() < 2e-3 || cost(z) <= cost(best) * (1.0 + 1e-8),
                        "p {rate}, B {burst}, span {span}, {rtt} ms: z {z} vs {best}: {} vs {}",
                        cost(z),
                        cost(best)
                    );
                }
            }
        }
        // No loss: no margin is wanted, and the top of the range is harmless.
        assert_eq!(
            policy.quantile_for(&LossEstimate::CLEAN, &horizon(256, 600)),
            high
        );
        // A round trip of zero makes the wait free.
        assert_eq!(
            policy.quantile_for(&mature(0.2, 1.25), &horizon(256, 0)),
            low
        );
        // A longer round trip buys more margin, never less.
        let est = mature(0.1, 1.1);
        let mut last = 0.0;
        for rtt in [10, 100, 200, 400, 800, 3000, 10_000] {
            let r = policy.proactive_ratio_for(&est, &horizon(1024, rtt));
            assert!(r >= last, "{rtt} ms: {r} < {last}");
            last = r;
        }
    }

    #[test]
    fn a_wider_spread_leaves_more_spans_to_feedback() {
        let policy = RedundancyPolicy::default();
        let residual = |est: &LossEstimate| policy.residual_for(est, &horizon(256, 600));
        // The price is set so that independent losses of 20 % leave a fifth.
        let iid = residual(&mature(0.2, 1.25));
        assert!((iid - 0.2).abs() < 0.005, "{iid}");
        // Bursts of 10 at 40 %: 87 %.
        let bursty = residual(&mature(0.4, 10.0));
        assert!((bursty - 0.87).abs() < 0.01, "{bursty}");
        let mut last = 0.0;
        for burst in [1.0, 1.5, 2.0, 5.0, 10.0, 20.0] {
            let r = residual(&mature(0.3, burst));
            assert!(r >= last, "burst {burst}: {r} < {last}");
            last = r;
        }
    }

    #[test]
    fn the_tail_makes_up_what_the_last_flight_is_expected_to_lack() {
        let policy = RedundancyPolicy::default();
        let flight = |sources, repairs| Flight {
            sources,
            repairs,
            rtt: Duration::from_millis(600),
            at_stake: 0,
        };
        // 20 % independent, 1000 sources with 300 repairs: 200 lost against
        // 240 arriving, and the margin at 1 %, 2.326 · √(1300 · 0.16 ·
        // (1 + 1300/4096)) = 38.5, fits the whole flight. Its last symbols
        // are short by more: a walk of drift 0.8 · 0.3 − 0.2 = 0.04 and
        // variance 1.3 · 0.16 = 0.208 per symbol, 0.208 · ln 100 / 0.08 =
        // 11.97 (under the bound without drift, √208 · 2.576 = 37.2), over
        // 0.8: 15.
        let iid = mature(0.2, 1.25);
        assert_eq!(policy.tail_repairs_for_flight(&flight(1000, 300), &iid), 15);
        // A thin margin, 400 sources with 101 repairs: drift 0.8 · 0.2525 −
        // 0.2 = 0.002 would ask for 0.2004 · ln 100 / 0.004 = 230.7, but
        // the walk is 400 symbols long: √(400 · 0.2004) · 2.576 = 23.06
        // (the whole flight: −0.8 + 21.3), over 0.8: 29.
        assert_eq!(policy.tail_repairs_for_flight(&flight(400, 101), &iid), 29);
        // 5 % in bursts of 10 (F = 18), 2600 sources with 156 repairs:
        // 130 − 148.2 + 2.326 · √(2756 · 0.0475 · 18 · (1 + 2756/4096)) =
        // 127.9, over 0.95: 134.6.
        let bursty = mature(0.05, 10.0);
        assert_eq!(
            policy.tail_repairs_for_flight(&flight(2600, 156), &bursty),
            135
        );
        // The same from 64 fates: the estimate's error dwarfs the
        // channel's, √(1 + 2756/64) = 6.6 times the spread: 770.
        let young = LossEstimate {
            samples: 64,
            ..bursty
        };
        assert_eq!(
            policy.tail_repairs_for_flight(&flight(2600, 156), &young),
            770
        );
        // The seeds' 10 % in place of 1 %: the whole flight 1.2816 · 62.78
        // = 80.5, 62.3 short; its last symbols more, a walk of drift 0.95 ·
        // 0.06 − 0.05 = 0.007 and variance 1.06 · 0.0475 · 18 = 0.906, held
        // to the walk without drift, √(0.906 · 2600) · 1.645 = 79.8, over
        // 0.95: 84.0.
        let ten = RedundancyPolicy::new(RedundancyConfig {
            tail_residual: 0.1,
            ..RedundancyConfig::default()
        });
        assert_eq!(ten.tail_repairs_for_flight(&flight(2600, 156), &bursty), 85);
        // Nothing in flight, or a clean path: nothing.
        assert_eq!(policy.tail_repairs_for_flight(&flight(0, 10), &bursty), 0);
        assert_eq!(
            policy.tail_repairs_for_flight(&flight(2600, 0), &LossEstimate::CLEAN),
            0
        );
        // A hopeless path is capped at max_ratio per source.
        let lossy = mature(0.9, 50.0);
        assert_eq!(policy.tail_repairs_for_flight(&flight(10, 0), &lossy), 15);
    }

    /// The tail's residual falls as the transfer its wait would delay
    /// grows: 20 % independent loss, 600 ms, a flight of 2 700 sources
    /// with 760 repairs (spread 31.96).
    #[test]
    fn a_longer_transfer_buys_a_surer_tail() {
        let policy = RedundancyPolicy::default();
        let iid = mature(0.2, 1.25);
        let flight = |at_stake| Flight {
            sources: 2700,
            repairs: 760,
            rtt: Duration::from_millis(600),
            at_stake,
        };
        // 10 MB (7 430 symbols): the wait is worth 0.133 · 0.6 · 7 430 =
        // 594 symbols, φ(z)/Φ(z) = 31.96/594 = 0.054 lies above the 1 %
        // quantile's 0.027: the configured residual holds, the last
        // symbols' walk asks 0.205 · ln 100 / 0.0504 = 18.7, over 0.8: 24.
        assert_eq!(policy.tail_repairs_for_flight(&flight(7430), &iid), 24);
        assert_eq!(policy.tail_repairs_for_flight(&flight(0), &iid), 24);
        // 100 MB (74 000): 5 920 symbols of wait, 0.0054, z = 2.934
        // (0.17 % short): the whole flight −68 + 2.934 · 31.96 = 25.8, the
        // last symbols 0.205 · 6.39 / 0.0504 = 26.0, over 0.8: 33.
        assert_eq!(policy.tail_repairs_for_flight(&flight(74_000), &iid), 33);
        // However long, no surer than FEWEST_TAILS_SHORT.
        let endless = policy.tail_repairs_for_flight(&flight(u64::MAX), &iid);
        let z = inverse_normal_cdf(1.0 - FEWEST_TAILS_SHORT);
        let whole = 540.0 - 608.0 + z * 31.957;
        assert_eq!(endless, (whole / 0.8).ceil() as u64, "{whole}");
    }

    /// On a 600 ms path with 20 % independent loss each span carries a
    /// margin of `(1−p)·ratio − p` per source symbol: the peer's newest gaps
    /// are left to it, the settled part is answered whole.
    #[test]
    fn an_answer_leaves_the_newest_gaps_to_the_margin_of_the_spans() {
        let policy = RedundancyPolicy::default();
        let est = mature(0.2, 1.25);
        let long = horizon(256, 600);
        let margin = (0.8 * policy.proactive_ratio_for(&est, &long) - 0.2) * 256.0;
        assert!((6.0..7.0).contains(&margin), "{margin}");
        let feedback = |deficit, settled, sent| Feedback {
            deficit,
            settled,
            repairs_in_flight: 0,
            sent_since_report: sent,
            horizon: long,
            decoded_through: ltx_coding::SymbolId(0),
            covered: None,
        };
        // 10 short, 2 of them settled: 2 + ⌈8 − 6.4⌉.
        assert_eq!(policy.deficit_to_answer(&feedback(10, 2, 3000), &est), 4);
        // The newest 4 are within the margin of the span sent since.
        assert_eq!(policy.deficit_to_answer(&feedback(6, 2, 3000), &est), 2);
        // Half a span sent since the report brings half the margin.
        assert_eq!(policy.deficit_to_answer(&feedback(6, 2, 128), &est), 3);
        // Nothing sent since: nothing is coming for them.
        assert_eq!(policy.deficit_to_answer(&feedback(10, 2, 0), &est), 10);
        // All settled: all answered.
        assert_eq!(policy.deficit_to_answer(&feedback(10, 10, 3000), &est), 10);
        // A 20 ms path sends no repair ahead of loss.
        let short = Feedback {
            horizon: horizon(256, 20),
            ..feedback(10, 2, 3000)
        };
        assert_eq!(policy.deficit_to_answer(&short, &est), 10);
        // 40 % in bursts of 10: the spans are sized below the channel's
        // minimum, with no margin to leave the newest gaps to.
        let bursty = mature(0.4, 10.0);
        assert!(policy.proactive_ratio_for(&bursty, &long) < 0.4 / 0.6);
        assert_eq!(
            policy.deficit_to_answer(&feedback(10, 2, 3000), &bursty),
            10
        );
    }

    #[test]
    fn an_answer_to_a_covered_flight_counts_what_it_carries() {
        let policy = RedundancyPolicy::default();
        let est = mature(0.2, 1.25);
        let flight = |sources, repairs| Flight {
            sources,
            repairs,
            rtt: Duration::from_millis(20),
            at_stake: 0,
        };
        // 100 sources in flight lose 20 in expectation; 30 repairs bring 24:
        // 4 to spare against a deficit of 3, nothing to send.
        assert_eq!(
            policy.reactive_repairs_covered(3, &flight(100, 30), &est),
            0
        );
        // A deficit of 10: 6 short in expectation, less one standard
        // deviation of the flight, √(130 · 0.2 · 0.8) = 4.56: 1.44 / 0.8 =
        // 1.8, to the nearest: 2.
        assert_eq!(
            policy.reactive_repairs_covered(10, &flight(100, 30), &est),
            2
        );
        // Sized for the expected need: 6 / 0.8 = 7.5, to the nearest: 8.
        let expected = RedundancyPolicy::new(RedundancyConfig {
            cheap_answer_quantile: 0.0,
            ..RedundancyConfig::default()
        });
        assert_eq!(
            expected.reactive_repairs_covered(10, &flight(100, 30), &est),
            8
        );
        // A deficit that outgrows the flight's spread is answered: 16 short,
        // 11.44 / 0.8 = 14.3: 14.
        assert_eq!(
            policy.reactive_repairs_covered(20, &flight(100, 30), &est),
            14
        );
        // Nothing in flight: the deficit itself, 10 / 0.8 = 12.5: 13.
        assert_eq!(policy.reactive_repairs_covered(10, &flight(0, 0), &est), 13);
        // One equation short: 1 / 0.8 = 1.25, one repair, not two.
        assert_eq!(policy.reactive_repairs_covered(1, &flight(0, 0), &est), 1);
        // One short with one repair in flight: 0.2 short, 0.25 of a repair:
        // none; the repair in flight most likely solves it.
        assert_eq!(policy.reactive_repairs_covered(1, &flight(0, 1), &est), 0);
        // On a 600 ms path a shortfall is rounded up, with no discount for
        // the flight's spread: 1.25 is 2, and a fifth of an equation short
        // is a repair; 6 short is 7.5: 8.
        let far = |sources, repairs| Flight {
            rtt: Duration::from_millis(600),
            at_stake: 0,
            ..flight(sources, repairs)
        };
        assert_eq!(policy.reactive_repairs_covered(1, &far(0, 0), &est), 2);
        assert_eq!(policy.reactive_repairs_covered(1, &far(0, 1), &est), 1);
        assert_eq!(policy.reactive_repairs_covered(10, &far(100, 30), &est), 8);
        // No deficit, no answer, whatever is in flight.
        assert_eq!(
            policy.reactive_repairs_covered(0, &flight(1000, 0), &est),
            0
        );
        assert_eq!(
            policy.reactive_repairs_covered(u64::MAX, &flight(0, 0), &est),
            u64::MAX
        );
    }
}
