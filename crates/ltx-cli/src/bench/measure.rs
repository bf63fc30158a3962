//! Timing loops: calibrated repetitions, medians over samples.

use std::time::{Duration, Instant};

/// How long to spend on each figure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Wall time of one sample.
    pub(crate) sample: Duration,
    /// Samples per figure; the median is reported.
    pub(crate) samples: usize,
}

impl Budget {
    /// About a quarter of a second per figure.
    pub(crate) fn quick() -> Budget {
        Budget {
            sample: Duration::from_millis(40),
            samples: 5,
        }
    }

    /// About two seconds per figure.
    pub(crate) fn full() -> Budget {
        Budget {
            sample: Duration::from_millis(200),
            samples: 9,
        }
    }
}

/// Throughput figures for one piece of work.
#[derive(Debug, Clone)]
pub(crate) struct Throughput {
    /// Median over the samples, in 10^9 bytes per second.
    pub(crate) median_gb_per_s: f64,
    /// Slowest and fastest sample.
    pub(crate) min_gb_per_s: f64,
    /// Fastest sample.
    pub(crate) max_gb_per_s: f64,
}

/// Times `work`, which handles `bytes` bytes per call, and returns its
/// throughput: repetitions are calibrated so that one sample lasts about
/// `budget.sample`, and the median of `budget.samples` samples is kept.
pub(crate) fn throughput(budget: Budget, bytes: usize, mut work: impl FnMut()) -> Throughput {
    // Warm caches, branch predictors and lazily allocated buffers.
    let start = Instant::now();
    let mut calls: u64 = 0;
    while calls < 3 || start.elapsed() < budget.sample / 4 {
        work();
        calls += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / calls as f64;
    let repetitions = ((budget.sample.as_secs_f64() / per_call) as u64).max(1);

    let mut rates: Vec<f64> = (0..budget.samples)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..repetitions {
                work();
            }
            let seconds = start.elapsed().as_secs_f64();
            (bytes as f64 * repetitions as f64) / seconds / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    Throughput {
        median_gb_per_s: rates[rates.len() / 2],
        min_gb_per_s: rates[0],
        max_gb_per_s: rates[rates.len() - 1],
    }
}
