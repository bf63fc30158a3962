//! The statistics the sliding window sizes its repair with: the standard
//! normal distribution, the spread of a loss count on a channel whose
//! losses come in bursts, the packets a span needs for a quantile of it,
//! and the shortfall of a flight's last symbols. Pure functions of a loss
//! estimate; the derivations are in `docs/design/repair-sizing.md` and
//! `docs/design/tail.md`.

use super::loss_estimator::DEFAULT_WINDOW;
use super::LossEstimate;

/// The loss rate above which the policy stops trying: repair for a path that
/// loses almost everything would be unbounded.
pub(super) const MAX_RATE: f64 = 0.95;

/// The fewest fates the standard error of a loss estimate is taken over:
/// the first estimates count fates not yet committed, which `samples` leaves
/// out.
pub(super) const MIN_SAMPLES: u64 = 32;

/// The equations the last symbols of a flight of `sources` source symbols
/// sent with `repairs` proactive repairs lack, at the quantile `z`: the
/// largest value of the random walk of `docs/design/tail.md`, with the
/// loss rate spread over the estimate's error, or 0 where the spans carry
/// no margin at the estimate.
pub(super) fn last_symbols_short(
    sources: f64,
    repairs: f64,
    p: f64,
    est: &LossEstimate,
    z: f64,
) -> f64 {
    let ratio = repairs / sources;
    let drift = (1.0 - p) * ratio - p;
    if drift <= 0.0 || drift.is_nan() {
        return 0.0;
    }
    // The fraction of flights left short: `1 − Φ(z)`.
    let short = normal_cdf(-z).max(f64::MIN_POSITIVE);
    let samples = est.samples.clamp(MIN_SAMPLES, 2 * DEFAULT_WINDOW) as f64;
    let error = (p * (1.0 - p) * variance_factor(est, p) / samples).sqrt();
    // The rates the path may have, `p + t·error` for `t` over ±3 standard
    // errors, weighted by the normal density.
    let rates: Vec<(f64, f64)> = (-RATE_NODES..=RATE_NODES)
        .map(|i| {
            let t = 3.0 * f64::from(i) / f64::from(RATE_NODES);
            ((p + t * error).clamp(0.0, MAX_RATE), normal_pdf(t))
        })
        .collect();
    let total: f64 = rates.iter().map(|&(_, w)| w).sum();
    let walk = |rate: f64| {
        let drift = (1.0 - rate) * ratio - rate;
        let variance = ((1.0 + ratio) * rate * (1.0 - rate) * variance_factor(est, rate))
            .max(f64::MIN_POSITIVE);
        (drift, variance)
    };
    // How often the walk at `rate` ends above `x`: with drift, about
    // `e^(−2μx/v)`; a walk of `sources` steps without it, by reflection,
    // `2·(1 − Φ(x/√(v·S)))`; the smaller, as the quantiles below take.
    let above = |rate: f64, x: f64| {
        let (drift, variance) = walk(rate);
        let flat = 2.0 * normal_cdf(-x / (variance * sources).sqrt());
        if drift > 0.0 {
            (-2.0 * drift * x / variance).exp().min(flat)
        } else {
            flat
        }
    };
    let quantile = |rate: f64| {
        let (drift, variance) = walk(rate);
        let flat = (variance * sources).sqrt() * inverse_normal_cdf(1.0 - 0.5 * short);
        if drift > 0.0 {
            (variance * -short.ln() / (2.0 * drift)).min(flat)
        } else {
            flat
        }
    };
    // Each rate left short at most `short` of the time at the largest of
    // their quantiles, so the mixture is too; halve down from there, to no
    // less than the estimate's own quantile.
    let at_estimate = quantile(p);
    let (mut low, mut high) = (
        at_estimate,
        rates
            .iter()
            .map(|&(r, _)| quantile(r))
            .fold(at_estimate, f64::max),
    );
    for _ in 0..40 {
        let mid = 0.5 * (low + high);
        let left_short: f64 = rates.iter().map(|&(r, w)| w * above(r, mid)).sum::<f64>() / total;
        if left_short > short {
            low = mid;
        } else {
            high = mid;
        }
    }
    high
}

/// The equations the spans of a flight lack together, at the quantile
/// `z`: a loss that a span of `span` symbols has passed is out of reach of
/// the proactive repairs after it, so a span's surplus makes up nothing of
/// another's shortfall. The flight is taken as `sources / span` spans each
/// short by the positive part of a normal loss count less its arrived
/// repairs (`docs/design/tail.md`); 0 with no span or a flight within one.
pub(super) fn spans_short(
    sources: f64,
    repairs: f64,
    span: u64,
    p: f64,
    est: &LossEstimate,
    z: f64,
) -> f64 {
    let n = span as f64;
    if span == 0 || sources <= n {
        return 0.0;
    }
    let ratio = repairs / sources;
    let mean = p * n - (1.0 - p) * ratio * n;
    let sd = loss_spread(n * (1.0 + ratio), p, est);
    if sd.is_nan() || sd <= 0.0 {
        return 0.0;
    }
    let t = mean / sd;
    let (cdf, pdf) = (normal_cdf(t), normal_pdf(t));
    // The first two moments of a span's shortfall, `max(0, N(mean, sd²))`.
    let first = sd * pdf + mean * cdf;
    let second = (mean * mean + sd * sd) * cdf + mean * sd * pdf;
    let spans = sources / n;
    let variance = (second - first * first).max(0.0);
    spans * first + z * (spans * variance).sqrt()
}

/// Rates on each side of the estimate that the tail's walk is averaged
/// over.
const RATE_NODES: i32 = 12;

/// The root of `φ(z)/Φ(z) = target` between `low` and `high` (the ends
/// where it lies outside): the quantile where one more unit of margin
/// wastes as much as the wait it spares is worth (`docs/design/repair-sizing.md`).
pub(super) fn least_cost_quantile(target: f64, low: f64, high: f64) -> f64 {
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

/// The `m` of `docs/design/tail.md`: packets to send for `n` source
/// symbols at loss rate `p`, with the channel's and the estimate's
/// spread, for a quantile `z`; `None` where the estimate is too uncertain
/// for any.
pub(super) fn packets_for(n: f64, p: f64, est: &LossEstimate, z: f64) -> Option<f64> {
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
pub(super) fn usable_rate(est: &LossEstimate) -> Option<f64> {
    let p = est.rate;
    if p.is_nan() || p <= 0.0 {
        return None;
    }
    Some(p.min(MAX_RATE))
}

/// The standard deviation of the loss count of `packets` packets at loss
/// rate `p`: the channel's, `√(packets·p·(1−p)·F)` (`docs/design/repair-sizing.md`).
pub(super) fn loss_spread(packets: f64, p: f64, est: &LossEstimate) -> f64 {
    (packets * p * (1.0 - p) * variance_factor(est, p)).sqrt()
}

/// The spread of the loss count of a whole flight of `packets`: the
/// channel's, and the error of the estimate it is sized from, both scaled
/// by the variance factor `F` (see
/// [`SlidingWindow::tail_repairs_for_flight`](super::SlidingWindow::tail_repairs_for_flight)).
pub(super) fn flight_spread(packets: f64, p: f64, est: &LossEstimate) -> f64 {
    let samples = est.samples.clamp(MIN_SAMPLES, 2 * DEFAULT_WINDOW) as f64;
    let channel = loss_spread(packets, p, est);
    (channel * channel * (1.0 + packets / samples)).sqrt()
}

/// The variance factor `F = max(1, 2·B·(1−p) − 1)` of `docs/design/repair-sizing.md`.
pub(super) fn variance_factor(est: &LossEstimate, p: f64) -> f64 {
    let burst = if est.burst.is_finite() {
        est.burst
    } else {
        1.0
    };
    (2.0 * burst * (1.0 - p) - 1.0).max(1.0)
}

/// The standard normal density `φ(z)`.
pub(super) fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The standard normal distribution `Φ(z)`, by Abramowitz and Stegun's
/// 26.2.17 (absolute error below 7.5e-8).
pub(super) fn normal_cdf(z: f64) -> f64 {
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
pub(super) fn inverse_normal_cdf(q: f64) -> f64 {
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
}
