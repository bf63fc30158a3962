//! `ltx-bench emu`: the side-by-side suite. Every system of
//! [`System::ALL`] transfers one payload across the emulated path of each
//! cell of seed 000's two tables (correlated erasures, long delay), a few
//! times; each run's completion time (from the client's start to the
//! server's last checked byte), goodput, bytes on the wire and CPU time go
//! into `runs.csv`, and the medians into tables in the seed's layout,
//! plots, and one summary line per cell with the ratio of ltx's median to
//! the best peer's.
//!
//! Every transfer has an emulator of its own (fresh namespaces, links
//! seeded with the repetition's number, so every system meets the same
//! losses in the same repetition), and systems take turns within a
//! repetition, so a change in the machine's load falls on all of them. A
//! transfer still running after 20 × T* is stopped and counts as "did not
//! complete" (∞). A system that completes no run of a cell is run once,
//! not `--reps` times, there; at higher erasure rates with the same
//! pattern it is not run (∞† in the tables) unless `--no-skip` is given.
//! A system whose peers cannot be built is reported as missing.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use serde_json::{json, Value};

pub(crate) mod cells;
pub(crate) mod record;
mod summary;
mod tables;
pub(crate) mod transfer;

use self::cells::{pattern_name, percent, Cell, Table, BURSTS};
use self::record::{csv_header, Run};
use self::summary::{cell_summary, group, key, Tally};
use self::tables::Columns;
use self::transfer::{run_once, Interrupted, Scratch, SocketLimits};
use super::peer::systems::{prepare, Prepared, System, Toolbox, Transfer};
use super::plots::{self, Frame};

/// Which tables of the suite to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TableChoice {
    /// Seed 000's table 1: 100 Mbit/s, 20 ms.
    Correlated,
    /// Seed 000's table 2: 50 Mbit/s, 600 ms.
    LongDelay,
}

/// Options of `ltx-bench emu`.
#[derive(Debug, Args)]
#[command(after_help = "\
Needs root (network namespaces, TUN devices, the machine's socket buffer \
ceilings, which are put back afterwards). --quick runs three small cells \
with ltx, kernel Cubic and BBR once each and fails unless every transfer \
completes intact; --full runs both seed-000 tables with every system and \
writes runs.csv, tables.md, summary.jsonl and plots/ under --out.")]
pub(crate) struct EmuBenchArgs {
    /// Three small cells, ltx and kernel TCP (Cubic, BBR), one run each.
    #[arg(long, conflicts_with = "full", required_unless_present = "full")]
    quick: bool,
    /// Both seed-000 tables with every system.
    #[arg(long)]
    full: bool,
    /// Only this table of the full suite (may be repeated).
    #[arg(long = "table", value_enum, requires = "full")]
    tables: Vec<TableChoice>,
    /// Systems to run, comma-separated (default: the mode's).
    #[arg(long, value_enum, value_delimiter = ',')]
    systems: Vec<System>,
    /// Runs of each system on each cell (default: 1 quick; full: 3 on the
    /// correlated table, 1 on the long-delay one).
    #[arg(long)]
    reps: Option<u64>,
    /// Where to write the results (default: none for --quick,
    /// docs/results/emu for --full).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A transfer not done after this many times T* did not complete.
    #[arg(long, default_value_t = 20.0)]
    bound_factor: f64,
    /// Run a system at every erasure rate even after it completed nothing
    /// at a lower one with the same pattern, and every repetition of a
    /// cell even after its first did not complete.
    #[arg(long)]
    no_skip: bool,
    /// Do not run the simulator on each cell for the fidelity comparison.
    #[arg(long)]
    no_sim: bool,
    /// One JSON object per run (the CSV's columns) and per cell (its
    /// summary) on standard output.
    #[arg(long)]
    json: bool,
    /// Only the cells at these loss rates, in per cent (comma-separated).
    #[arg(long = "loss", value_delimiter = ',', requires = "full")]
    losses: Vec<f64>,
    /// Delay jitter on every path, in per cent of its round trip: each
    /// direction delays each packet by a further uniform draw of up to
    /// this, holding it behind the one before (as Wi-Fi and cellular
    /// links do).
    #[arg(long)]
    jitter: Option<f64>,
    /// ltx's two ends write a qlog trace of each timed transfer into a
    /// directory of its own under this one, named by table, loss, burst,
    /// system and repetition (the other systems write none).
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
}

/// The systems of `--quick`.
const QUICK_SYSTEMS: [System; 3] = [System::Ltx, System::TcpCubic, System::TcpBbr];

/// Runs `ltx-bench emu`.
pub(crate) fn run(args: &EmuBenchArgs) -> anyhow::Result<()> {
    check_args(args)?;
    let reps = |cell: &Cell| match (args.reps, args.quick) {
        (Some(n), _) => n,
        (None, true) => 1,
        (None, false) => cells::full_reps(cell.table),
    };
    let cells = chosen_cells(args);
    let out = match (&args.out, args.full) {
        (Some(dir), _) => Some(dir.clone()),
        (None, true) => Some(PathBuf::from("docs/results/emu")),
        (None, false) => None,
    };
    let (prepared, columns) = prepare_systems(args)?;

    let stop = stop_on_signals()?;
    let limits = raise_socket_limits(&cells);
    let scratch = Scratch::new()?;
    let mut suite = Suite {
        args,
        reps: &reps,
        runs: Vec::new(),
        hopeless: BTreeMap::new(),
        total: cells.iter().map(&reps).sum::<u64>() * prepared.len() as u64,
        done: 0,
    };
    let mut interrupted = false;
    for cell in &cells {
        match suite.cell(cell, &prepared, &stop, &scratch) {
            Ok(()) => {}
            Err(e) if e.is::<Interrupted>() => {
                interrupted = true;
                break;
            }
            Err(e) => return Err(e.context(format!("on {}", cell.label()))),
        }
        let grouped = group(&suite.runs);
        if let Some(systems) = grouped.get(&key(cell)) {
            let line = cell_summary(cell, systems);
            emit(args.json, &line, &describe_summary(cell, &line));
        }
    }
    drop(limits);

    let runs = suite.runs;
    let text = tables::markdown(&cells, &runs, &columns);
    if !args.json {
        println!("{text}");
    }
    if let Some(dir) = &out {
        write_results(dir, &cells, &runs, &text)?;
        eprintln!("ltx-bench emu: results in {}", dir.display());
    }
    if interrupted {
        bail!("interrupted; the runs so far are kept");
    }
    if args.quick {
        check_quick(&runs, &columns)?;
    }
    Ok(())
}

/// Refuses to start when the emulator cannot run here or an option is out
/// of range.
fn check_args(args: &EmuBenchArgs) -> anyhow::Result<()> {
    let missing = ltx_emu::missing();
    if !missing.is_empty() {
        let what: Vec<String> = missing.iter().map(ToString::to_string).collect();
        bail!("the emulator cannot run here; missing: {}", what.join("; "));
    }
    if !(args.bound_factor.is_finite() && args.bound_factor >= 1.0) {
        bail!("--bound-factor must be at least 1");
    }
    if args.reps == Some(0) {
        bail!("--reps must be at least 1");
    }
    if args
        .jitter
        .is_some_and(|j| !(j.is_finite() && (0.0..=100.0).contains(&j)))
    {
        bail!("--jitter must be a percentage from 0 to 100");
    }
    if let Some(loss) = args.losses.iter().find(|l| !(0.0..=100.0).contains(*l)) {
        bail!("--loss {loss}: a percentage from 0 to 100");
    }
    Ok(())
}

/// The cells of the chosen mode, and of the chosen tables.
fn chosen_cells(args: &EmuBenchArgs) -> Vec<Cell> {
    let cells = if args.quick {
        cells::quick()
    } else {
        cells::full()
            .into_iter()
            .filter(|c| args.tables.is_empty() || args.tables.iter().any(|t| same(*t, c.table)))
            .filter(|c| {
                args.losses.is_empty()
                    || args
                        .losses
                        .iter()
                        .any(|l| (l / 100.0 - c.loss).abs() < 1e-9)
            })
            .collect()
    };
    let jitter = args.jitter.unwrap_or(0.0) / 100.0;
    cells.into_iter().map(|c| Cell { jitter, ..c }).collect()
}

/// Builds the peers of every chosen system; a system whose peers cannot be
/// built is reported and listed as missing.
fn prepare_systems(args: &EmuBenchArgs) -> anyhow::Result<(Vec<Prepared>, Columns)> {
    let wanted: Vec<System> = match (&args.systems[..], args.quick) {
        ([], true) => QUICK_SYSTEMS.to_vec(),
        ([], false) => System::ALL.to_vec(),
        (chosen, _) => System::ALL
            .into_iter()
            .filter(|s| chosen.contains(s))
            .collect(),
    };
    let tools = Toolbox::of_this_binary()?;
    let mut prepared = Vec::new();
    let mut columns = Columns {
        systems: Vec::new(),
        missing: Vec::new(),
    };
    for system in wanted {
        match prepare(system, &tools) {
            Ok(p) => {
                columns.systems.push(system.name());
                prepared.push(p);
            }
            Err(missing) => {
                emit(
                    args.json,
                    &json!({"system": system.name(), "missing": missing.reason}),
                    &missing.to_string(),
                );
                columns.missing.push((system.name(), missing.reason));
            }
        }
    }
    Ok((prepared, columns))
}

/// A flag set by SIGINT, SIGTERM or SIGHUP, so that the suite stops between
/// transfers and still writes what it has.
fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// Raises the machine's socket buffer ceilings to what the largest cell
/// needs, for as long as the returned guard lives.
fn raise_socket_limits(cells: &[Cell]) -> Option<SocketLimits> {
    let largest_buffer = cells
        .iter()
        .map(|c| transfer_of(c).socket_buffer())
        .max()
        .unwrap_or(0);
    // A machine whose /proc/sys is read-only (some containers) still runs
    // the suite, with the peers that cannot raise their buffers themselves
    // held to its ceilings; the run says so.
    SocketLimits::raise(largest_buffer)
        .inspect_err(|e| {
            eprintln!(
                "ltx-bench emu: the socket buffer ceilings stay as they are ({e:#}); NORM and \
                 kcp-go get at most those buffers"
            );
        })
        .ok()
}

/// `--quick` fails unless every system was built and every transfer
/// completed intact.
fn check_quick(runs: &[Run], columns: &Columns) -> anyhow::Result<()> {
    let failed: Vec<String> = runs
        .iter()
        .filter(|r| r.time().is_none())
        .map(|r| format!("{} on {}: {}", r.system, r.cell.label(), r.note))
        .collect();
    if !columns.missing.is_empty() {
        bail!(
            "missing systems: {}",
            columns
                .missing
                .iter()
                .map(|(s, why)| format!("{s} ({why})"))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    if !failed.is_empty() {
        bail!(
            "transfers that did not complete intact: {}",
            failed.join("; ")
        );
    }
    Ok(())
}

fn same(choice: TableChoice, table: Table) -> bool {
    matches!(
        (choice, table),
        (TableChoice::Correlated, Table::Correlated) | (TableChoice::LongDelay, Table::LongDelay)
    )
}

/// The transfer description the peers' command lines are built from (the
/// server's address is the emulator's; only the path matters here).
fn transfer_of(cell: &Cell) -> Transfer {
    Transfer {
        server: (ltx_emu::SERVER_ADDR, 0).into(),
        size: cell.size,
        rate_bps: cell.rate_bps,
        rtt: cell.rtt,
        seed: 1,
    }
}

/// Prints a JSON line on standard output, or a sentence on standard error.
fn emit(json: bool, line: &Value, text: &str) {
    if json {
        println!("{line}");
        let _ = std::io::stdout().flush();
    } else {
        eprintln!("{text}");
    }
}

/// The state of a suite being run.
struct Suite<'a> {
    args: &'a EmuBenchArgs,
    /// How many runs each system makes on a cell.
    reps: &'a dyn Fn(&Cell) -> u64,
    runs: Vec<Run>,
    /// (table, burst, system) → the erasure rate at which the system
    /// completed no run.
    hopeless: BTreeMap<(Table, u64, &'static str), f64>,
    total: u64,
    done: u64,
}

impl Suite<'_> {
    /// Runs every system on `cell`, as many times as `reps` says.
    fn cell(
        &mut self,
        cell: &Cell,
        prepared: &[Prepared],
        stop: &AtomicBool,
        scratch: &Scratch,
    ) -> anyhow::Result<()> {
        let bound = cell.bound(self.args.bound_factor);
        let reps = (self.reps)(cell);
        let burst_key = key(cell).2;
        let sims = if self.args.no_sim || !prepared.iter().any(|p| p.system == System::Ltx) {
            Vec::new()
        } else {
            (1..=reps)
                .map(|seed| simulate(cell, seed))
                .collect::<anyhow::Result<Vec<_>>>()?
        };
        let mut skipped_after_first: Vec<System> = Vec::new();
        for p in prepared {
            let name = p.system.name();
            if let Some(&at) = self.hopeless.get(&(cell.table, burst_key, name)) {
                if !self.args.no_skip && at < cell.loss {
                    let note = format!(
                        "not run: completed nothing at {}% with this pattern",
                        percent(at)
                    );
                    self.done += reps;
                    self.record(Run::not_run(*cell, name, 1, bound.as_secs_f64(), note));
                    skipped_after_first.push(p.system);
                }
            }
        }
        for rep in 1..=reps {
            for p in prepared {
                if skipped_after_first.contains(&p.system) {
                    continue;
                }
                let qlog = self.args.qlog.as_ref().map(|dir| {
                    dir.join(format!(
                        "{}-{}pct-burst{}-{}-rep{rep}",
                        cell.table.name(),
                        percent(cell.loss),
                        cell.burst,
                        p.system.name()
                    ))
                });
                let measured = run_once(p, cell, rep, bound, stop, scratch, qlog.as_deref())?;
                let outcome = measured.outcome.as_ref();
                let run = Run {
                    cell: *cell,
                    system: p.system.name(),
                    rep,
                    ran: true,
                    completed: measured.completed,
                    verified: measured.verified,
                    completion_s: outcome.map(|o| o.completion_s),
                    bound_s: bound.as_secs_f64(),
                    goodput_bps: outcome.map(|o| o.goodput_bps),
                    wire_bytes: Some(measured.wire_bytes),
                    reverse_wire_bytes: Some(measured.reverse_wire_bytes),
                    cpu_s: outcome.map(|o| o.cpu_s),
                    run_queue_s: outcome.and_then(|o| o.run_queue_s),
                    queue_delay_p95_ms: Some(measured.queue_delay_p95_ms),
                    sim_s: if p.system == System::Ltx {
                        sims.get(rep as usize - 1).copied().flatten()
                    } else {
                        None
                    },
                    note: measured.note,
                };
                let first_failed = rep == 1 && run.time().is_none();
                self.record(run);
                if first_failed && !self.args.no_skip {
                    // Hopeless here: the remaining repetitions would each
                    // cost the whole bound.
                    skipped_after_first.push(p.system);
                    self.done += reps - 1;
                }
            }
        }
        let grouped = group(&self.runs);
        if let Some(systems) = grouped.get(&key(cell)) {
            for (&name, runs) in systems {
                let tally = Tally::of(runs);
                if tally.ran > 0 && tally.completed == 0 && cell.loss > 0.0 {
                    self.hopeless
                        .entry((cell.table, burst_key, name))
                        .or_insert(cell.loss);
                }
            }
        }
        Ok(())
    }

    fn record(&mut self, run: Run) {
        if run.ran {
            self.done += 1;
        }
        let text = format!(
            "[{}/{}] {} {} rep {}: {} (T* {:.2} s){}",
            self.done,
            self.total,
            run.cell.label(),
            run.system,
            run.rep,
            run.time()
                .map_or_else(|| "∞".to_owned(), |s| format!("{s:.3} s")),
            run.cell.ideal().as_secs_f64(),
            if run.note.is_empty() {
                String::new()
            } else {
                format!(" — {}", run.note)
            }
        );
        if self.args.json {
            println!("{}", run.to_json());
            let _ = std::io::stdout().flush();
        }
        eprintln!("{text}");
        self.runs.push(run);
    }
}

/// ltx's completion time in the simulator on `cell` with `seed`, if it
/// completed intact.
fn simulate(cell: &Cell, seed: u64) -> anyhow::Result<Option<f64>> {
    let result = cell
        .scenario(seed)
        .run()
        .with_context(|| format!("simulating {}", cell.label()))?;
    Ok(result.completion_s.filter(|_| result.verified))
}

/// A summary line for people.
fn describe_summary(cell: &Cell, line: &Value) -> String {
    let show = |v: &Value| match v {
        Value::Null => "–".to_owned(),
        Value::String(s) if s == "inf" => "∞".to_owned(),
        other => format!("{other} s"),
    };
    format!(
        "{}: ltx {} vs {} {} (ratio {}); simulated {}",
        cell.label(),
        show(&line["ltx_median_s"]),
        line["peer"].as_str().unwrap_or("no peer"),
        show(&line["peer_median_s"]),
        line["ltx_over_peer"],
        show(&line["sim_median_s"]),
    )
}

/// Writes runs.csv, tables.md, summary.jsonl, command.txt and the plots.
fn write_results(dir: &Path, cells: &[Cell], runs: &[Run], tables: &str) -> anyhow::Result<()> {
    fs::create_dir_all(dir.join("plots")).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    let mut csv = csv_header();
    csv.push('\n');
    for run in runs {
        csv.push_str(&run.to_csv());
        csv.push('\n');
    }
    write("runs.csv", csv)?;
    write("tables.md", tables.to_owned())?;
    let grouped = group(runs);
    let mut summaries = String::new();
    for cell in cells {
        if let Some(systems) = grouped.get(&key(cell)) {
            summaries.push_str(&cell_summary(cell, systems).to_string());
            summaries.push('\n');
        }
    }
    write("summary.jsonl", summaries)?;
    let command: Vec<String> = std::env::args().collect();
    write("command.txt", format!("{}\n", command.join(" ")))?;
    if let Err(e) = plot(dir, cells, runs) {
        eprintln!("ltx-bench emu: no plots: {e:#}");
        write("plots/MISSING.txt", format!("{e:#}\n"))?;
    }
    Ok(())
}

/// Draws the transfer-time plots of each table and pattern, and the
/// throughput-delay plot of each uncorrelated cell.
fn plot(dir: &Path, cells: &[Cell], runs: &[Run]) -> anyhow::Result<()> {
    plots::load_font()?;
    let names: Vec<&'static str> = System::ALL.iter().map(|s| s.name()).collect();
    let plots_dir = dir.join("plots");
    for table in [Table::Correlated, Table::LongDelay] {
        for burst in BURSTS {
            if !cells
                .iter()
                .any(|c| c.table == table && c.burst == burst && c.loss > 0.0)
            {
                continue;
            }
            let series = tables::series(runs, table, burst);
            if series.is_empty() {
                continue;
            }
            let pattern = pattern_name(burst);
            let stem = plots_dir.join(format!("time-vs-loss-{table}-{pattern}"));
            let title = format!("{table}, {pattern}: transfer time (∞ left out)");
            let frame = Frame {
                title: &title,
                x: "erasure rate (%)",
                y: "transfer time (s, log)",
                names: &names,
            };
            plots::log_lines(&stem, &frame, &series)?;
        }
    }
    let grouped = group(runs);
    for cell in cells.iter().filter(|c| c.burst == 1.0) {
        let Some(systems) = grouped.get(&key(cell)) else {
            continue;
        };
        let points: Vec<(&'static str, f64, f64)> = systems
            .iter()
            .filter_map(|(name, runs)| {
                let tally = Tally::of(runs);
                Some((*name, tally.delay_p95_ms?, tally.goodput_bps? / 1e6))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let stem = plots_dir.join(format!(
            "throughput-vs-delay-{}-{}pct",
            cell.table,
            percent(cell.loss)
        ));
        let title = format!(
            "{}, {}% uncorrelated: goodput and p95 one-way delay (median of completed runs)",
            cell.table,
            percent(cell.loss)
        );
        let frame = Frame {
            title: &title,
            x: "95th percentile one-way delay (ms)",
            y: "goodput (Mbit/s)",
            names: &names,
        };
        plots::scatter_points(&stem, &frame, &points)?;
    }
    Ok(())
}
