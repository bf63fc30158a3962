//! Timing loops: calibrated repetitions, medians over samples; the
//! process's CPU time.

use std::mem::MaybeUninit;
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

/// CPU time the whole process has used so far, user plus system, over all
/// its threads: a transfer's cost includes both peers and every thread they
/// run on, which no single thread's clock would show.
pub(crate) fn process_cpu_time() -> anyhow::Result<Duration> {
    let mut usage = MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a whole `rusage` through the pointer, which is
    // valid for writes of that size and not aliased.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: getrusage returned 0, so it has filled the struct.
    let usage = unsafe { usage.assume_init() };
    Ok(timeval(usage.ru_utime) + timeval(usage.ru_stime))
}

fn timeval(t: libc::timeval) -> Duration {
    // The kernel never reports negative times; clamp rather than wrap.
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let micros = u64::try_from(t.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}

/// The median of `values`: the middle one, or the mean of the two middle
/// ones when there is an even number. `None` when there are none.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}
