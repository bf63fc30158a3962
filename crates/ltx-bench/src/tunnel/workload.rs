//! The three application workloads: a bulk download, a page load and an
//! interactive stream beside a download.

use std::fmt;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Connections the page load uses at most, as browsers do per host.
pub(crate) const WEB_PARALLEL: usize = 6;
/// Objects of the page load.
pub(crate) const WEB_OBJECTS: usize = 30;
/// The smallest and largest object, bytes.
pub(crate) const WEB_SIZES: (u64, u64) = (10_000, 200_000);
/// The seed the objects' sizes are drawn from.
const WEB_SEED: u64 = 35;

/// Which workload, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub(crate) enum WorkloadKind {
    /// `curl` downloads one large object.
    Bulk,
    /// 30 objects over 6 connections: time to the last byte.
    Web,
    /// 100-byte messages every 100 ms beside a download: added delay.
    Interactive,
}

impl WorkloadKind {
    /// Every workload, in report order.
    pub(crate) const ALL: [WorkloadKind; 3] = [
        WorkloadKind::Bulk,
        WorkloadKind::Web,
        WorkloadKind::Interactive,
    ];

    /// The name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            WorkloadKind::Bulk => "bulk",
            WorkloadKind::Web => "web",
            WorkloadKind::Interactive => "interactive",
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The interactive stream's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interactive {
    /// Messages sent.
    pub(crate) count: u32,
    /// Bytes each.
    pub(crate) size: usize,
    /// Time between two messages.
    pub(crate) interval: Duration,
    /// How long the download runs before the first message.
    pub(crate) head_start: Duration,
    /// How long the last replies are waited for.
    pub(crate) drain: Duration,
}

/// A workload with its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Workload {
    /// The bulk download (its size is the cell's).
    Bulk,
    /// The objects' sizes, bytes.
    Web(Vec<u64>),
    /// The message stream.
    Interactive(Interactive),
}

impl Workload {
    /// The workload of `kind`; `quick` makes the interactive stream short.
    pub(crate) fn of(kind: WorkloadKind, quick: bool) -> Workload {
        match kind {
            WorkloadKind::Bulk => Workload::Bulk,
            WorkloadKind::Web => Workload::Web(web_sizes()),
            WorkloadKind::Interactive => Workload::Interactive(Interactive {
                count: if quick { 20 } else { 100 },
                size: 100,
                interval: Duration::from_millis(100),
                head_start: Duration::from_secs(1),
                drain: Duration::from_secs(10),
            }),
        }
    }

    /// Its kind.
    pub(crate) fn kind(&self) -> WorkloadKind {
        match self {
            Workload::Bulk => WorkloadKind::Bulk,
            Workload::Web(_) => WorkloadKind::Web,
            Workload::Interactive(_) => WorkloadKind::Interactive,
        }
    }
}

/// The page's 30 object sizes, drawn uniformly from 10–200 KB with a fixed
/// seed: the same page for every system and run.
pub(crate) fn web_sizes() -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(WEB_SEED);
    (0..WEB_OBJECTS)
        .map(|_| rng.random_range(WEB_SIZES.0..=WEB_SIZES.1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_thirty_objects_of_ten_to_two_hundred_kilobytes_every_time() {
        let sizes = web_sizes();
        assert_eq!(sizes.len(), WEB_OBJECTS);
        assert!(sizes.iter().all(|s| (10_000..=200_000).contains(s)));
        assert_eq!(sizes, web_sizes());
    }
}
