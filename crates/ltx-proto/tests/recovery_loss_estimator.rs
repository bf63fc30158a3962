//! The loss estimator against loss processes whose rate and burst are known.

use ltx_proto::recovery::loss_estimator::COMMIT_LAG;
use ltx_proto::recovery::{LossEstimate, LossEstimator};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const PACKETS: u64 = 20_000;
/// The estimator's default window, for the expected spread of its estimate.
const WINDOW: f64 = 2048.0;

/// Independent losses with probability `p`.
fn bernoulli(rng: &mut SmallRng, p: f64, n: u64) -> Vec<bool> {
    (0..n).map(|_| rng.random_bool(p)).collect()
}

/// Gilbert–Elliott losses with mean rate `l` and mean burst `e`: loss certain
/// in the bad state, none in the good one.
fn gilbert_elliott(rng: &mut SmallRng, l: f64, e: f64, n: u64) -> Vec<bool> {
    let r = 1.0 / e;
    let p = l / (e * (1.0 - l));
    let mut bad = rng.random_bool(l);
    (0..n)
        .map(|_| {
            let lost = bad;
            bad = if bad {
                !rng.random_bool(r)
            } else {
                rng.random_bool(p)
            };
            lost
        })
        .collect()
}

fn feed_in_order(fates: &[bool]) -> LossEstimate {
    let mut est = LossEstimator::new();
    for (pn, &lost) in fates.iter().enumerate() {
        report(&mut est, pn as u64, lost);
    }
    est.estimate()
}

fn report(est: &mut LossEstimator, pn: u64, lost: bool) {
    if lost {
        est.on_lost(pn);
    } else {
        est.on_delivered(pn);
    }
}

/// The standard deviation of the exponentially weighted rate: variance
/// `p·(1−p)·F / (2·window)`, F the variance factor of the loss process.
fn sigma(p: f64, f: f64) -> f64 {
    (p * (1.0 - p) * f / (2.0 * WINDOW)).sqrt()
}

#[test]
fn bernoulli_rate_within_a_few_sigma() {
    for (i, p) in [0.01, 0.05, 0.2, 0.5].into_iter().enumerate() {
        let seed = 0xB0 + i as u64;
        let mut rng = SmallRng::seed_from_u64(seed);
        let e = feed_in_order(&bernoulli(&mut rng, p, PACKETS));
        let bound = 4.0 * sigma(p, 1.0) + 1e-3;
        assert!(
            (e.rate - p).abs() < bound,
            "seed {seed}: p {p}, estimate {e:?}, bound {bound}"
        );
        // Independent losses have mean run length 1/(1−p).
        let burst = 1.0 / (1.0 - p);
        assert!(
            (e.burst - burst).abs() < 0.15 * burst,
            "seed {seed}: p {p}, estimate {e:?}"
        );
    }
}

#[test]
fn gilbert_elliott_rate_and_burst() {
    for (i, (l, burst)) in [(0.1, 5.0), (0.3, 10.0)].into_iter().enumerate() {
        for run in 0..4u64 {
            let seed = 0x6E00 + 16 * i as u64 + run;
            let mut rng = SmallRng::seed_from_u64(seed);
            let e = feed_in_order(&gilbert_elliott(&mut rng, l, burst, PACKETS));
            let f = 2.0 * burst * (1.0 - l) - 1.0;
            let bound = 4.0 * sigma(l, f);
            assert!(
                (e.rate - l).abs() < bound,
                "seed {seed}: L {l} E {burst}, estimate {e:?}, bound {bound}"
            );
            assert!(
                (e.burst - burst).abs() < 0.25 * burst,
                "seed {seed}: L {l} E {burst}, estimate {e:?}"
            );
        }
    }
}

#[test]
fn shuffled_reports_give_the_in_order_estimate() {
    for seed in 0x5400..0x5404u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let fates = gilbert_elliott(&mut rng, 0.2, 5.0, PACKETS);
        let in_order = feed_in_order(&fates);
        let mut pns: Vec<u64> = (0..PACKETS).collect();
        // Reordering within the commit lag changes nothing.
        for chunk in pns.chunks_mut(COMMIT_LAG as usize) {
            chunk.shuffle(&mut rng);
        }
        let mut est = LossEstimator::new();
        for pn in pns {
            report(&mut est, pn, fates[pn as usize]);
        }
        assert_eq!(est.estimate(), in_order, "seed {seed}");
    }
}

#[test]
fn lost_then_spurious_counts_as_delivered() {
    let seed = 0x5B;
    let mut rng = SmallRng::seed_from_u64(seed);
    let fates = bernoulli(&mut rng, 0.1, PACKETS);
    let expected = feed_in_order(&fates);
    // Every 7th packet is declared lost first, then acknowledged 3 numbers
    // later (reordering), or, for every 700th, long after commit.
    let mut est = LossEstimator::new();
    for (pn, &lost) in fates.iter().enumerate() {
        let pn = pn as u64;
        if !lost && pn.is_multiple_of(7) {
            est.on_lost(pn);
        } else {
            report(&mut est, pn, lost);
        }
        if let Some(back) = pn.checked_sub(3) {
            if back.is_multiple_of(7) && !fates[back as usize] && !back.is_multiple_of(700) {
                est.on_spurious(back);
            }
        }
        if let Some(back) = pn.checked_sub(1000) {
            if back.is_multiple_of(700) && !fates[back as usize] {
                est.on_spurious(back);
            }
        }
    }
    let e = est.estimate();
    // Late corrections are weighted by the decay since commit, which is the
    // weight the packet had: the rate matches up to rounding.
    assert!(
        (e.rate - expected.rate).abs() < 1e-3,
        "seed {seed}: {e:?} vs {expected:?}"
    );
    assert!(
        (e.rate - 0.1).abs() < 4.0 * sigma(0.1, 1.0),
        "seed {seed}: {e:?}"
    );
}

#[test]
fn clean_path_stays_clean() {
    let mut est = LossEstimator::new();
    for pn in 0..PACKETS {
        est.on_delivered(pn);
    }
    let e = est.estimate();
    assert_eq!((e.rate, e.burst), (0.0, 1.0));
    assert!(e.samples > PACKETS - 200);
}

#[test]
fn step_from_clean_to_twenty_percent_is_tracked() {
    let seed = 0x57E9;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut est = LossEstimator::new();
    for pn in 0..PACKETS {
        est.on_delivered(pn);
    }
    let fates = bernoulli(&mut rng, 0.2, 6000);
    let mut reached = None;
    for (i, &lost) in fates.iter().enumerate() {
        report(&mut est, PACKETS + i as u64, lost);
        if reached.is_none() && est.estimate().rate >= 0.16 {
            reached = Some(i);
        }
    }
    let reached = reached.unwrap_or(usize::MAX);
    assert!(
        reached < 5000,
        "seed {seed}: 16 % reached after {reached} packets"
    );
    let e = est.estimate();
    assert!((e.rate - 0.2).abs() < 0.04, "seed {seed}: {e:?}");
}
