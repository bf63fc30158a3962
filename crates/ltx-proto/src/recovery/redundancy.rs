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
//! The sliding window leaves a fraction `repair_delay_budget / RTT` of its
//! spans to feedback, between 1 % and 99 % (see
//! [`RedundancyConfig::repair_delay_budget`]). At `p = 0.2`, independent
//! losses and the default budget of 120 ms: on a 600 ms path (20 %) the
//! default span of 256 asks for a ratio of 0.281 with a mature estimate,
//! 0.303 after 160 fates and 0.355 after 32 (a span of 1024: 0.267, 0.296,
//! 0.352); at 240 ms (50 %) for the channel's minimum, 0.25; on a path of
//! 121 ms or less (99 %) for 0.169 (a span of 1024: 0.204), and feedback
//! makes up what a span lacks a round trip later. Where a round trip costs
//! less than the budget, repairs sent in answer to feedback waste less than
//! repairs sent ahead of it: they are sized from what the peer lacks.
//!
//! [`TransportConfig::max_repair_span`]: crate::TransportConfig::max_repair_span
//! [`DEFAULT_WINDOW`]: super::loss_estimator::DEFAULT_WINDOW

use super::loss_estimator::DEFAULT_WINDOW;
use std::time::Duration;

use super::scheme::Horizon;
use super::{Flight, LossEstimate, SchemeConfig};

/// The loss rate above which the policy stops trying: repair for a path that
/// loses almost everything would be unbounded.
const MAX_RATE: f64 = 0.95;

/// The fewest fates the standard error of a loss estimate is taken over:
/// the first estimates count fates not yet committed, which `samples` leaves
/// out.
const MIN_SAMPLES: u64 = 32;

/// The fewest and most windows of a span that the sliding window leaves to
/// feedback, whatever the round trip (see
/// [`RedundancyConfig::repair_delay_budget`]).
const RESIDUAL_RANGE: (f64, f64) = (0.01, 0.99);

/// The configuration of a [`RedundancyPolicy`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedundancyConfig {
    /// The fraction of windows allowed to need reactive repair, for
    /// windows of a fixed size: the seeds' blocks ([`proactive_ratio_over`];
    /// default 0.1).
    ///
    /// [`proactive_ratio_over`]: RedundancyPolicy::proactive_ratio_over
    pub target_residual: f64,
    /// What waiting for feedback may add, on average, to the delivery of a
    /// span of the sliding window: a span that its proactive repairs leave
    /// short waits a round trip for feedback, so the fraction of spans left
    /// to it is this budget over the round trip, between 1 % and 99 %
    /// (default 120 ms: 20 % at 600 ms, half at 240 ms, nearly all at
    /// 121 ms and less). Where the round trip is short, feedback is cheaper
    /// than the margin that would spare it; where it is long, the margin is
    /// cheaper, and the span longer (see [`proactive_ratio_for`]). Within
    /// twice the budget, reactive answers also cover the flight and round
    /// to the nearest repair (see [`reactive_repairs_covered`]).
    ///
    /// It sets the trade between delivery delay and wire bytes on short
    /// paths: on 100 Mbit/s, 20 ms and 20 % loss (10 MB, medians of seeds
    /// 1–3), the default delivers in order with a p99 delay of 52 ms and
    /// sends 1.318 bytes per byte delivered, T/T* 1.041; a budget of 10 ms,
    /// which spends repairs ahead of loss as a 240 ms path does with the
    /// default, gives 37 ms, 1.338 and 1.057 (`ltx sim run
    /// --repair-delay-budget`).
    ///
    /// [`proactive_ratio_for`]: RedundancyPolicy::proactive_ratio_for
    /// [`reactive_repairs_covered`]: RedundancyPolicy::reactive_repairs_covered
    pub repair_delay_budget: Duration,
    /// The cap on proactive repair symbols per source symbol.
    pub max_ratio: f64,
    /// The fraction added on top of the expected need in reactive repair.
    pub reactive_margin: f64,
    /// Repair symbols added to any non-zero reactive answer, so that a small
    /// deficit is not missed by rounding or by the loss of its only repair.
    pub reactive_extra: u64,
    /// The scheme that spends these numbers: ltx's sliding window by
    /// default, or one of the seeds' (see [`SchemeConfig`]).
    pub scheme: SchemeConfig,
}

impl Default for RedundancyConfig {
    fn default() -> Self {
        Self {
            target_residual: 0.1,
            repair_delay_budget: Duration::from_millis(120),
            max_ratio: 1.5,
            reactive_margin: 0.1,
            reactive_extra: 1,
            scheme: SchemeConfig::SlidingWindow,
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
        Self {
            config,
            z: inverse_normal_cdf(1.0 - residual),
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
    /// reactive repair with probability `repair_delay_budget / rtt` (see
    /// [`RedundancyConfig::repair_delay_budget`] and the module
    /// documentation).
    pub fn proactive_ratio_for(&self, est: &LossEstimate, horizon: &Horizon) -> f64 {
        let z = inverse_normal_cdf(1.0 - self.residual_for(horizon.rtt));
        self.ratio(est, horizon.span, z)
    }

    /// Whether a round trip of `rtt` is within twice the delay budget: the
    /// sliding window leaves at least half its spans to feedback.
    pub(crate) fn feedback_is_cheap(&self, rtt: Duration) -> bool {
        rtt.as_secs_f64() * 0.5 <= self.config.repair_delay_budget.as_secs_f64()
    }

    /// The fraction of spans left to feedback over a round trip of `rtt`.
    fn residual_for(&self, rtt: Duration) -> f64 {
        let budget = self.config.repair_delay_budget.as_secs_f64();
        let rtt = rtt.as_secs_f64();
        let (low, high) = RESIDUAL_RANGE;
        if rtt <= 0.0 {
            return high;
        }
        (budget / rtt).clamp(low, high)
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
    /// half its spans to feedback or more (240 ms and less by default, see
    /// [`RedundancyConfig::repair_delay_budget`]), the answer is rounded to
    /// the nearest whole repair, and its repairs cover the flight as well as
    /// the reported gaps (the scheme's `plan_repair`): the count includes
    /// the flight's losses, and a repair that stops at the gaps finds them
    /// solved by the proactive repairs that arrived before it and those
    /// losses left for the next answer. Rounding up answered a shortfall of a
    /// tenth of an equation with a whole repair: on 10 Mbit/s, 20 ms and
    /// 5 % loss, with repairs that stopped at the gaps, it took the overhead
    /// from 1.121 to 1.141, most of those repairs finding nothing to solve. On longer paths it is rounded
    /// up: a shortfall left over costs a round trip the delay budget does
    /// not have (at 600 ms and 20 % loss, rounding to the nearest took the
    /// worst delivery delay p99 of seeds 1–8 from 1.19 to 1.24 round
    /// trips).
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
        let need = short / (1.0 - p);
        // `as` saturates.
        if self.feedback_is_cheap(flight.rtt) {
            need.round() as u64
        } else {
            need.ceil() as u64
        }
    }

    /// How many repair symbols to send for the tail of a transfer: the sender
    /// has no new data and `unconfirmed` source symbols are in flight.
    ///
    /// The tail is treated as a window of its own (`n = unconfirmed`, so the
    /// margin is wide), with the proactive formula: enough that all of it is
    /// recovered without a time-out with probability `1 − target_residual`,
    /// and at least 1. A path with no loss estimated gets none: a clean path
    /// must not pay for the tail of every transfer, and its rare loss is
    /// recovered by the probe time-out.
    pub fn tail_repairs(&self, unconfirmed: u64, est: &LossEstimate) -> u64 {
        if unconfirmed == 0 {
            return 0;
        }
        let Some(p) = usable_rate(est) else {
            return 0;
        };
        let n = unconfirmed as f64;
        let cap = (n * self.config.max_ratio.max(0.0)).ceil();
        let extra = packets_for(n, p, est, self.z).map_or(cap, |m| (m - n).ceil());
        (extra.min(cap) as u64).max(1)
    }
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
    if lead <= 0.0 {
        return None;
    }
    let linear = 2.0 * a * n + z2 * b;
    let discriminant = linear * linear - 4.0 * lead * n * n;
    if z < 0.0 {
        // The smaller root: most spans are meant to fall short.
        return Some(((linear - discriminant.max(0.0).sqrt()) / (2.0 * lead)).max(n));
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

/// The variance factor `F = max(1, 2·B·(1−p) − 1)` of the module docs.
fn variance_factor(est: &LossEstimate, p: f64) -> f64 {
    let burst = if est.burst.is_finite() {
        est.burst
    } else {
        1.0
    };
    (2.0 * burst * (1.0 - p) - 1.0).max(1.0)
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
        // The sliding window at 1.2 s leaves the same 10 % to feedback.
        let slide = policy.proactive_ratio_for(&est, &horizon(1024, 1200));
        assert!((slide - r1024).abs() < 1e-9, "{slide}");
        // At 240 ms, half: the channel's minimum.
        let r = policy.proactive_ratio_for(&est, &horizon(1024, 240));
        assert!((r - 0.25).abs() < 1e-9, "{r}");
        // At 121 ms and less, 99 %: below it.
        for rtt in [20, 100] {
            let r256 = policy.proactive_ratio_for(&est, &horizon(256, rtt));
            let r1024 = policy.proactive_ratio_for(&est, &horizon(1024, rtt));
            assert!((r256 - 0.169).abs() < 0.002, "{rtt} ms: {r256}");
            assert!((r1024 - 0.204).abs() < 0.002, "{rtt} ms: {r1024}");
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
    fn the_residual_follows_the_delay_budget_within_its_range() {
        let policy = RedundancyPolicy::default();
        let residual = |ms| policy.residual_for(Duration::from_millis(ms));
        assert!((residual(600) - 0.2).abs() < 1e-12);
        assert_eq!(residual(20), RESIDUAL_RANGE.1);
        assert_eq!(residual(120_000), RESIDUAL_RANGE.0);
        assert_eq!(policy.residual_for(Duration::ZERO), RESIDUAL_RANGE.1);
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
    fn an_answer_to_a_covered_flight_counts_what_it_carries() {
        let policy = RedundancyPolicy::default();
        let est = mature(0.2, 1.25);
        let flight = |sources, repairs| Flight {
            sources,
            repairs,
            rtt: Duration::from_millis(20),
        };
        // 100 sources in flight lose 20 in expectation; 30 repairs bring 24:
        // 4 to spare against a deficit of 3, nothing to send.
        assert_eq!(
            policy.reactive_repairs_covered(3, &flight(100, 30), &est),
            0
        );
        // A deficit of 10: 6 short, 6 / 0.8 = 7.5, to the nearest: 8.
        assert_eq!(
            policy.reactive_repairs_covered(10, &flight(100, 30), &est),
            8
        );
        // Nothing in flight: the deficit itself, 10 / 0.8 = 12.5: 13.
        assert_eq!(policy.reactive_repairs_covered(10, &flight(0, 0), &est), 13);
        // One equation short: 1 / 0.8 = 1.25, one repair, not two.
        assert_eq!(policy.reactive_repairs_covered(1, &flight(0, 0), &est), 1);
        // One short with one repair in flight: 0.2 short, 0.25 of a repair:
        // none; the repair in flight most likely solves it.
        assert_eq!(policy.reactive_repairs_covered(1, &flight(0, 1), &est), 0);
        // On a 600 ms path a shortfall is rounded up: 1.25 is 2, and a
        // fifth of an equation short is a repair.
        let far = |sources, repairs| Flight {
            rtt: Duration::from_millis(600),
            ..flight(sources, repairs)
        };
        assert_eq!(policy.reactive_repairs_covered(1, &far(0, 0), &est), 2);
        assert_eq!(policy.reactive_repairs_covered(1, &far(0, 1), &est), 1);
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
