//! How many repair symbols to send: ahead of loss, in answer to feedback, and
//! for the tail of a transfer.
//!
//! # The proactive ratio
//!
//! Take a window of `n` source symbols sent with `k` repair symbols, so
//! `m = n + k` packets, each lost with probability `p`. The window decodes
//! without feedback if at most `k` of the `m` packets are lost. The loss count
//! `X` has mean `m·p` and variance `m·p·(1−p)·F`, where `F` is the variance
//! factor of the loss process: 1 for independent losses and, for a
//! Gilbert–Elliott channel with mean burst `E` (loss certain in the bad state,
//! none in the good one), `F = 2·E·(1−p) − 1` (the lag-`k` correlation of the
//! loss indicator is `λ^k` with `λ = 1 − 1/(E·(1−p))`, and
//! `1 + 2·Σλ^k = 2·E·(1−p) − 1`). An independent channel has mean run
//! length `1/(1−p)`, for which that expression is 1, so the measured burst `B`
//! gives `F = max(1, 2·B·(1−p) − 1)` for both.
//!
//! With `z = Φ⁻¹(1 − target_residual)`, the normal approximation asks
//! `m·p + z·√(m·p·(1−p)·F) ≤ m − n`. Writing `x = √m` and `s = √(p·(1−p)·F)`,
//! this is the quadratic `(1−p)·x² − z·s·x − n ≥ 0`, so
//!
//! ```text
//! x = (z·s + √(z²·s² + 4·(1−p)·n)) / (2·(1−p)),   ratio = x²/n − 1
//! ```
//!
//! which is `p/(1−p)` plus a margin that shrinks as `1/√n`: the repair per
//! source symbol never falls below the erasure channel's minimum. The ratio is
//! capped at `max_ratio`.
//!
//! The window `n` is the span over which a deficit must be made up before
//! feedback can ask for more; by default [`RedundancyConfig::window`] (4096
//! symbols, about one RTT and a half of a 50 Mbit/s, 600 ms path: a deficit
//! is made up by the next repairs or by reactive repair, so the margin need
//! not cover a short window), or the caller's own
//! figure through [`RedundancyPolicy::proactive_ratio_over`]. A small window
//! needs a large margin: at `p = 0.2`, `target_residual = 0.1` (the
//! default: reactive repair answers the rest within a round trip), `n = 64`
//! asks for a ratio of 0.343, `n = 4096` for 0.261.
//!
//! # A young estimate
//!
//! `p` is itself a measurement. The first full flight of a connection is
//! sized from the fates of a few dozen packets, and an estimate that comes
//! out low leaves that flight short by dozens of equations: only feedback
//! can make them up, a round trip later and behind whatever queue the
//! start-up built, and every byte after the first gap waits for it. So the
//! ratio is sized for `p + k·√(p·(1−p) / samples)` with `k` =
//! `ESTIMATE_ERRORS` (0.64, the same `z`-sized margin halved): at
//! `p = 0.2`, `n = 4096`, 0.338 after 32 fates, 0.270 after 2048 and 0.265
//! after 10 000. The term fades as the estimate matures, and a path that
//! has lost nothing still gets no repair. It is the standard error of
//! independent losses: a bursty estimate errs more, but its flights already
//! carry the `F` margin, and multiplying the error by `F` as well cost 1 to
//! 4 % more overhead across the bursty cells of the seed tables.

use super::{LossEstimate, SchemeConfig};

/// The loss rate above which the policy stops trying: repair for a path that
/// loses almost everything would be unbounded.
const MAX_RATE: f64 = 0.95;

/// Standard errors of the loss estimate added to it before proactive
/// repair is sized (see the module documentation).
const ESTIMATE_ERRORS: f64 = 0.64;

/// The fewest fates the standard error of a loss estimate is taken over:
/// the first estimates count fates not yet committed, which `samples` leaves
/// out.
const MIN_SAMPLES: u64 = 32;

/// The configuration of a [`RedundancyPolicy`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedundancyConfig {
    /// The fraction of windows allowed to need reactive repair (default
    /// 0.1).
    pub target_residual: f64,
    /// The cap on proactive repair symbols per source symbol.
    pub max_ratio: f64,
    /// The fraction added on top of the expected need in reactive repair.
    pub reactive_margin: f64,
    /// Repair symbols added to any non-zero reactive answer, so that a small
    /// deficit is not missed by rounding or by the loss of its only repair.
    pub reactive_extra: u64,
    /// The window of source symbols the proactive ratio is sized for.
    pub window: u64,
    /// The scheme that spends these numbers: ltx's sliding window by
    /// default, or one of the seeds' (see [`SchemeConfig`]).
    pub scheme: SchemeConfig,
}

impl Default for RedundancyConfig {
    fn default() -> Self {
        Self {
            target_residual: 0.1,
            max_ratio: 1.5,
            reactive_margin: 0.1,
            reactive_extra: 1,
            window: 4096,
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
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RedundancyConfig {
        &self.config
    }

    /// Repair symbols per source symbol to send ahead of loss, over the
    /// configured window; 0 on a path that has lost nothing.
    pub fn proactive_ratio(&self, est: &LossEstimate) -> f64 {
        self.proactive_ratio_over(est, self.config.window)
    }

    /// Repair symbols per source symbol to send ahead of loss, sized so that
    /// a window of `window` source symbols needs reactive repair with
    /// probability about `target_residual` (see the module documentation).
    pub fn proactive_ratio_over(&self, est: &LossEstimate, window: u64) -> f64 {
        let Some(p) = usable_rate(est) else {
            return 0.0;
        };
        let n = window.max(1) as f64;
        let f = variance_factor(est, p);
        let p = self.rate_bound(est, p);
        let m = self.packets_for(n, p, f);
        // The cap wins over the channel minimum: past it the path is hopeless
        // for proactive repair and feedback must do the rest.
        (m / n - 1.0)
            .max(p / (1.0 - p))
            .min(self.config.max_ratio.max(0.0))
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
        let m = self.packets_for(n, p, variance_factor(est, p));
        let cap = (n * self.config.max_ratio.max(0.0)).ceil();
        ((m - n).ceil().min(cap) as u64).max(1)
    }

    /// The loss rate proactive repair is sized for: the estimate `p` plus
    /// [`ESTIMATE_ERRORS`] standard errors of it, `√(p·(1−p) / samples)`
    /// (see the module documentation).
    fn rate_bound(&self, est: &LossEstimate, p: f64) -> f64 {
        let samples = est.samples.max(MIN_SAMPLES) as f64;
        let bound = p + ESTIMATE_ERRORS * (p * (1.0 - p) / samples).sqrt();
        bound.min(MAX_RATE)
    }

    /// The `m` of the module documentation: packets to send for `n` source
    /// symbols at loss rate `p` and variance factor `f`.
    fn packets_for(&self, n: f64, p: f64, f: f64) -> f64 {
        let zs = self.z * (p * (1.0 - p) * f).sqrt();
        let x = (zs + (zs * zs + 4.0 * (1.0 - p) * n).sqrt()) / (2.0 * (1.0 - p));
        x * x
    }
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

    #[test]
    fn documented_figures() {
        // A mature estimate: its standard error is negligible.
        let policy = RedundancyPolicy::default();
        let est = LossEstimate {
            rate: 0.2,
            burst: 1.25,
            samples: 1 << 40,
        };
        let r64 = policy.proactive_ratio_over(&est, 64);
        let r4096 = policy.proactive_ratio(&est);
        assert!((r64 - 0.343).abs() < 0.002, "{r64}");
        assert!((r4096 - 0.261).abs() < 0.002, "{r4096}");
    }

    #[test]
    fn a_young_estimate_buys_a_margin_that_fades() {
        // The figures of the module documentation's "A young estimate".
        let policy = RedundancyPolicy::default();
        let ratio_after = |samples| {
            policy.proactive_ratio(&LossEstimate {
                rate: 0.2,
                burst: 1.25,
                samples,
            })
        };
        for (samples, want) in [(32, 0.338), (2048, 0.270), (10_000, 0.265)] {
            let got = ratio_after(samples);
            assert!((got - want).abs() < 0.002, "{samples} fates: {got}");
        }
        // Fewer fates than the floor count as the floor.
        assert_eq!(ratio_after(0), ratio_after(MIN_SAMPLES));
        // A clean path still pays nothing, however young.
        assert_eq!(policy.proactive_ratio(&LossEstimate::CLEAN), 0.0);
    }
}
