//! The markdown tables, in seed 000's layout: loss rows, and for each
//! system one column per loss pattern, each holding the median transfer
//! time in seconds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::cells::{pattern_name, percent, Cell, Table, BURSTS};
use super::record::Run;
use super::summary::{group, key, Tally};

/// The systems a table has columns for, and those that could not be
/// prepared, with why.
#[derive(Debug, Clone)]
pub(crate) struct Columns {
    /// Systems that ran, in the order of the columns.
    pub(crate) systems: Vec<&'static str>,
    /// Systems that were asked for and are missing, with the reason.
    pub(crate) missing: Vec<(&'static str, String)>,
}

/// Both tables (those that have cells), one after the other.
pub(crate) fn markdown(cells: &[Cell], runs: &[Run], columns: &Columns) -> String {
    let mut text = String::new();
    for table in [Table::Correlated, Table::LongDelay] {
        let rows: Vec<&Cell> = cells.iter().filter(|c| c.table == table).collect();
        if let Some(first) = rows.first() {
            text.push_str(&one_table(first, &rows, runs, columns));
            text.push('\n');
        }
    }
    text
}

fn one_table(first: &Cell, rows: &[&Cell], runs: &[Run], columns: &Columns) -> String {
    let reps = runs
        .iter()
        .filter(|r| r.cell.table == first.table)
        .map(|r| r.rep)
        .max()
        .unwrap_or(0);
    let grouped = group(runs);
    let mut losses: Vec<f64> = rows.iter().map(|c| c.loss).collect();
    losses.dedup();
    let bursts: Vec<f64> = BURSTS
        .iter()
        .copied()
        .filter(|&b| rows.iter().any(|c| c.burst == b))
        .collect();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "### {}: {} MB, {} Mbit/s, {} ms round trip\n",
        first.table,
        first.size as f64 / 1e6,
        first.rate_bps as f64 / 1e6,
        first.rtt.as_millis()
    );
    text.push_str("| erasure rate [T*] |");
    for system in &columns.systems {
        for &burst in &bursts {
            let _ = write!(text, " {system}<br>{} |", short_pattern(burst));
        }
    }
    text.push_str("\n|---|");
    for _ in 0..columns.systems.len() * bursts.len() {
        text.push_str("---:|");
    }
    text.push('\n');
    for &loss in &losses {
        let row_cell = rows
            .iter()
            .find(|c| c.loss == loss)
            .expect("a cell of this loss");
        let _ = write!(
            text,
            "| {}% [{:.2}] |",
            percent(loss),
            row_cell.ideal().as_secs_f64()
        );
        for system in &columns.systems {
            for &burst in &bursts {
                let cell = Cell {
                    burst,
                    ..**row_cell
                };
                let entry = grouped
                    .get(&key(&cell))
                    .and_then(|by_system| by_system.get(system));
                let shown = match entry {
                    _ if loss == 0.0 && burst > 1.0 => "N/A".to_owned(),
                    None => "–".to_owned(),
                    Some(runs) => shown(runs),
                };
                let _ = write!(text, " {shown} |");
            }
        }
        text.push('\n');
    }
    let _ = writeln!(
        text,
        "\nTransfer time of a {} MB file, seconds: the median of up to {reps} runs; T* is the \
         ideal time. ∞: no run completed within the bound (20 × T*, at least 10 s). \
         \\*: the median of runs some of which did not complete. ∞†: not run, as the system \
         did not complete at a lower erasure rate with the same pattern. –: not run.",
        first.size as f64 / 1e6
    );
    for (system, reason) in &columns.missing {
        let _ = writeln!(text, "\n{system}: missing ({reason}).");
    }
    text
}

/// A column's heading for a burst length, as the seed writes it.
fn short_pattern(burst: f64) -> String {
    if burst <= 1.0 {
        "uncorr.".to_owned()
    } else {
        pattern_name(burst)
    }
}

/// The table entry of one system's runs on one cell.
fn shown(runs: &[&Run]) -> String {
    let tally = Tally::of(runs);
    match tally.median_s {
        None => "∞†".to_owned(),
        Some(m) if !m.is_finite() => "∞".to_owned(),
        Some(m) if tally.completed < tally.ran => format!("{m:.2}\\*"),
        Some(m) => format!("{m:.2}"),
    }
}

/// The medians of one system per loss rate for one table and burst: the
/// points of a transfer-time plot (∞ left out).
pub(crate) fn series(
    runs: &[Run],
    table: Table,
    burst: f64,
) -> BTreeMap<&'static str, Vec<(f64, f64)>> {
    let mut series: BTreeMap<&'static str, Vec<(f64, f64)>> = BTreeMap::new();
    for ((t, _, _), by_system) in group(runs) {
        if t != table {
            continue;
        }
        for (system, runs) in by_system {
            let cell = runs[0].cell;
            // The 0 % cell belongs to every pattern's line.
            if cell.burst != burst && cell.loss != 0.0 {
                continue;
            }
            if let Some(m) = Tally::of(&runs).finite() {
                series
                    .entry(system)
                    .or_default()
                    .push((cell.loss * 100.0, m));
            }
        }
    }
    for points in series.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

#[cfg(test)]
mod tests {
    use super::super::cells::quick;
    use super::*;

    fn run(cell: Cell, system: &'static str, time: Option<f64>) -> Run {
        let mut run = Run::not_run(cell, system, 1, 10.0, String::new());
        run.ran = true;
        run.completed = time.is_some();
        run.verified = time.is_some();
        run.completion_s = time;
        run
    }

    #[test]
    fn a_table_shows_medians_infinity_and_cells_that_do_not_exist() {
        let cells = quick();
        let runs = vec![
            run(cells[1], "ltx", Some(0.5)),
            run(cells[1], "tcp-cubic", None),
            run(cells[2], "ltx", Some(0.75)),
        ];
        let columns = Columns {
            systems: vec!["ltx", "tcp-cubic"],
            missing: vec![("norm", "no libnorm".to_owned())],
        };
        let text = markdown(&cells, &runs, &columns);
        let row = text
            .lines()
            .find(|l| l.starts_with("| 10%"))
            .expect("the 10 % row");
        // ltx uncorrelated, ltx E=5, tcp-cubic uncorrelated, tcp-cubic E=5.
        assert!(row.ends_with("| 0.50 | – | ∞ | – |"), "{row}");
        let row = text.lines().find(|l| l.starts_with("| 5%")).unwrap();
        assert!(row.ends_with("| – | 0.75 | – | – |"), "{row}");
        assert!(text.contains("norm: missing (no libnorm)"));
        assert!(text.contains("### long-delay"));
    }
}
