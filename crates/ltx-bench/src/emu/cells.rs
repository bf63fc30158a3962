//! The cells of the side-by-side suite: the two tables of seed 000
//! (correlated erasures, long delay), scaled to fit an hour on a small
//! machine, and the three cells of the quick check.

use std::fmt;
use std::time::Duration;

use ltx_sim::scenario::Scenario;
use ltx_sim::Jitter;

/// Which of seed 000's tables a cell belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Table {
    /// Table 1: a short path with i.i.d. and correlated erasures.
    Correlated,
    /// Table 2: a long-delay (satellite) path.
    LongDelay,
}

impl Table {
    /// The table's name in the `scenario` column and in file names.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Correlated => "correlated",
            Table::LongDelay => "long-delay",
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The mean burst lengths of the tables' columns: 1 (uncorrelated), then
/// Gilbert–Elliott with E = 2, 5 and 10 packets.
pub(crate) const BURSTS: [f64; 4] = [1.0, 2.0, 5.0, 10.0];

/// One path and one transfer: a cell of a table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cell {
    /// The table it belongs to.
    pub(crate) table: Table,
    /// Bottleneck rate, bits per second, each direction.
    pub(crate) rate_bps: u64,
    /// Round-trip propagation delay.
    pub(crate) rtt: Duration,
    /// Mean erasure rate, client to server.
    pub(crate) loss: f64,
    /// Mean burst length, packets (1: uncorrelated).
    pub(crate) burst: f64,
    /// Payload bytes.
    pub(crate) size: u64,
    /// In-order delay jitter, as a fraction of the round trip: each
    /// direction delays each packet by a further uniform draw of up to
    /// this, holding it behind the one before (0: none).
    pub(crate) jitter: f64,
}

impl Cell {
    /// The simulator's scenario of this cell with `seed`: the emulator is
    /// given its links, so both mean the same path.
    pub(crate) fn scenario(&self, seed: u64) -> Scenario {
        let mut scenario = Scenario {
            rate_bps: self.rate_bps,
            rtt: self.rtt,
            loss: self.loss,
            burst: self.burst,
            size: self.size,
            seed,
            ..Scenario::default()
        };
        if self.jitter > 0.0 {
            scenario.faults.jitter = Some(Jitter {
                max: self.rtt.mul_f64(self.jitter),
                reorder: false,
            });
        }
        scenario
    }

    /// The ideal completion time T* (`docs/results.md`, "Terms").
    pub(crate) fn ideal(&self) -> Duration {
        self.scenario(1).ideal()
    }

    /// How long a transfer may take before it counts as "did not
    /// complete": `factor` × T*, and never less than [`MIN_BOUND`].
    pub(crate) fn bound(&self, factor: f64) -> Duration {
        self.ideal().mul_f64(factor).max(MIN_BOUND)
    }

    /// The column of the table: "uncorrelated" or "E=5".
    pub(crate) fn pattern(&self) -> String {
        pattern_name(self.burst)
    }

    /// A short name for file names and messages: `long-delay 10% E=2`,
    /// and `jitter 10%` after it where the path has jitter.
    pub(crate) fn label(&self) -> String {
        let label = format!("{} {}% {}", self.table, percent(self.loss), self.pattern());
        if self.jitter > 0.0 {
            format!("{label} jitter {}%", percent(self.jitter))
        } else {
            label
        }
    }
}

/// The name of a loss pattern's column.
pub(crate) fn pattern_name(burst: f64) -> String {
    if burst <= 1.0 {
        "uncorrelated".to_owned()
    } else {
        format!("E={burst}")
    }
}

/// A loss rate in percent, without trailing zeros.
pub(crate) fn percent(loss: f64) -> String {
    let p = (loss * 1000.0).round() / 10.0;
    format!("{p}")
}

/// The least time a transfer is given, whatever its T*: starting two
/// processes in namespaces and a handshake take a fraction of a second
/// that T* does not count, and a shared machine can stretch it.
pub(crate) const MIN_BOUND: Duration = Duration::from_secs(10);

/// How a table is scaled from the seed's: rate, round trip, file size and
/// loss rates.
struct TablePlan {
    table: Table,
    rate_bps: u64,
    rtt: Duration,
    size: u64,
    losses: &'static [f64],
}

/// Seed 000's table 1, at its rate and round trip (100 Mbit/s, 20 ms) with
/// a 5 MB file instead of 10 MB: half the time of the hopeless cells,
/// still 35 round trips of data at the link's rate.
const CORRELATED: TablePlan = TablePlan {
    table: Table::Correlated,
    rate_bps: 100_000_000,
    rtt: Duration::from_millis(20),
    size: 5_000_000,
    losses: &[0.0, 0.05, 0.10, 0.20],
};

/// Seed 000's table 2, at its rate and round trip (50 Mbit/s, 600 ms) with
/// a 4 MB file instead of 10 MB: T* from 1.6 s to 2.3 s, so a transfer that
/// does not complete costs 20 × T* ≤ 46 s, not 110 s.
const LONG_DELAY: TablePlan = TablePlan {
    table: Table::LongDelay,
    rate_bps: 50_000_000,
    rtt: Duration::from_millis(600),
    size: 4_000_000,
    losses: &[0.0, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50],
};

impl TablePlan {
    /// Every cell of the table: loss rows by burst columns, with one cell
    /// at 0 % (the pattern means nothing without loss).
    fn cells(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for &loss in self.losses {
            let bursts: &[f64] = if loss == 0.0 { &BURSTS[..1] } else { &BURSTS };
            for &burst in bursts {
                cells.push(Cell {
                    table: self.table,
                    rate_bps: self.rate_bps,
                    rtt: self.rtt,
                    loss,
                    burst,
                    size: self.size,
                    jitter: 0.0,
                });
            }
        }
        cells
    }
}

/// Runs of each system on each cell of `table` in the full suite: three
/// on the short path; one on the long one, where a single run of the slower
/// peers takes 5 to 46 s, so that the suite stays well under an hour (see
/// `docs/benchmarks.md`, "What `--full` runs").
pub(crate) fn full_reps(table: Table) -> u64 {
    match table {
        Table::Correlated => 3,
        Table::LongDelay => 1,
    }
}

/// Both tables of seed 000, correlated erasures first.
pub(crate) fn full() -> Vec<Cell> {
    let mut cells = CORRELATED.cells();
    cells.extend(LONG_DELAY.cells());
    cells
}

/// The quick check: three small cells that every system in it (ltx, kernel
/// Cubic and BBR) completes in seconds, at 20 Mbit/s. The long-delay cell
/// has no loss: Cubic at 10 % loss and 600 ms moves a few kilobytes a
/// second, which would test patience, not the harness; the lossy cells are
/// on table 1's 20 ms round trip.
pub(crate) fn quick() -> Vec<Cell> {
    let rate_bps = 20_000_000;
    vec![
        Cell {
            table: Table::LongDelay,
            rate_bps,
            rtt: Duration::from_millis(600),
            loss: 0.0,
            burst: 1.0,
            size: 1_000_000,
            jitter: 0.0,
        },
        Cell {
            table: Table::Correlated,
            rate_bps,
            rtt: Duration::from_millis(20),
            loss: 0.10,
            burst: 1.0,
            size: 500_000,
            jitter: 0.0,
        },
        Cell {
            table: Table::Correlated,
            rate_bps,
            rtt: Duration::from_millis(20),
            loss: 0.05,
            burst: 5.0,
            size: 500_000,
            jitter: 0.0,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 1 has 1 + 3 × 4 cells, table 2 has 1 + 6 × 4: one cell per
    /// loss row and pattern column, one at 0 %.
    #[test]
    fn the_full_suite_has_both_seed_tables() {
        let cells = full();
        let count = |table| cells.iter().filter(|c| c.table == table).count();
        assert_eq!(count(Table::Correlated), 13);
        assert_eq!(count(Table::LongDelay), 25);
        assert!(cells
            .iter()
            .filter(|c| c.loss == 0.0)
            .all(|c| c.burst == 1.0));
    }

    #[test]
    fn the_bound_is_twenty_ideal_times_or_the_floor() {
        let long = LONG_DELAY.cells()[0];
        let ideal = long.ideal();
        assert!(ideal > Duration::from_secs(1), "{ideal:?}");
        assert_eq!(long.bound(20.0), ideal.mul_f64(20.0));
        let quick = quick()[1];
        assert!(quick.ideal().mul_f64(20.0) < MIN_BOUND);
        assert_eq!(quick.bound(20.0), MIN_BOUND);
    }

    #[test]
    fn cells_are_labelled_as_the_seed_labels_its_columns() {
        let cell = quick()[2];
        assert_eq!(cell.label(), "correlated 5% E=5");
        assert_eq!(pattern_name(1.0), "uncorrelated");
        assert_eq!(percent(0.3), "30");
        let jittered = Cell {
            jitter: 0.1,
            ..cell
        };
        assert_eq!(jittered.label(), "correlated 5% E=5 jitter 10%");
        let links = jittered.scenario(1).links();
        assert_eq!(
            links.0.jitter.map(|j| j.max),
            Some(Duration::from_millis(2))
        );
        assert!(links.1.jitter.is_some_and(|j| !j.reorder));
    }
}
