//! `ltx-bench tunnel`: TCP applications through each tunnel across the
//! emulator. On each cell (a path of the seed tables at one loss rate and
//! pattern), every system carries three workloads — a bulk `curl`
//! download, a page load of 30 objects over 6 connections, and 100-byte
//! messages every 100 ms beside a download — a few times; each run goes
//! into `runs.csv`, the medians into one table per workload, plots, and a
//! summary line per cell and workload with ltx's median over the best
//! peer's and the targets.
//!
//! Every run has an emulator of its own, seeded with the repetition, so
//! every system meets the same losses in the same repetition, and systems
//! take turns within a repetition. A run still going at its bound did not
//! complete (∞); a system that completes nothing in a cell is not run again
//! there, nor at higher losses with the same pattern (∞†) unless
//! `--no-skip`. A system that cannot be built is reported missing.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

mod apps;
mod brutal;
mod quic;
mod report;
mod run;
mod systems;
mod workload;

use self::report::{group, key, markdown, median, summary, Row};
use self::run::{run_once, Context, Measured};
use self::systems::{Programs, TunnelSystem};
use self::workload::{Workload, WorkloadKind};
use super::emu::cells::{pattern_name, percent, Cell, Table};
use super::emu::transfer::{Interrupted, Scratch, SocketLimits};
use super::peer::systems::{prepare, System, Toolbox};
use super::plots::{self, Frame};

/// The paths of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PathChoice {
    /// 50 Mbit/s, 600 ms.
    LongDelay,
    /// 100 Mbit/s, 20 ms.
    Correlated,
}

/// Options of `ltx-bench tunnel`.
#[derive(Debug, Args)]
#[command(after_help = "\
Needs root (network namespaces, TUN devices, per-namespace TCP settings, \
the machine's socket buffer ceilings), curl and, for the kcptun \
column, Go. --quick runs two small cells with every chosen system once and \
fails unless every run completes intact.")]
pub(crate) struct TunnelBenchArgs {
    /// Two small cells, every system once; fails unless all complete.
    #[arg(long)]
    quick: bool,
    /// Paths (default: both).
    #[arg(long = "path", value_enum, value_delimiter = ',')]
    paths: Vec<PathChoice>,
    /// Loss rates in percent (default: 0,5,10,20,30).
    #[arg(long, value_delimiter = ',')]
    loss: Vec<f64>,
    /// Mean burst lengths (default: 1,5; 1 is i.i.d.).
    #[arg(long, value_delimiter = ',')]
    burst: Vec<f64>,
    /// Workloads (default: all three).
    #[arg(long = "workload", value_enum, value_delimiter = ',')]
    workloads: Vec<WorkloadKind>,
    /// Systems (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    systems: Vec<TunnelSystem>,
    /// Runs of each system on each cell (default: 3; 1 with --quick).
    #[arg(long)]
    reps: Option<u64>,
    /// Bytes of the bulk download (default: 20 MB; 2 MB with --quick).
    #[arg(long)]
    bulk_bytes: Option<u64>,
    /// A bulk or web run not done after this many times its ideal time
    /// (at least 10 s) did not complete.
    #[arg(long, default_value_t = 10.0)]
    bound_factor: f64,
    /// Run every repetition and every loss, whatever a system did before.
    #[arg(long)]
    no_skip: bool,
    /// Where to write runs.csv, tables.md, summary.jsonl and plots/.
    #[arg(long)]
    out: Option<PathBuf>,
    /// One JSON object per run and per summary on standard output.
    #[arg(long)]
    json: bool,
}

/// The programs of the tunnel benchmark, run in the namespaces.
#[derive(Debug, Subcommand)]
pub(crate) enum TunnelPeerCommand {
    /// The HTTP and echo server.
    Serve(apps::ServeArgs),
    /// The interactive client: timed messages through the echo.
    Ping(apps::PingArgs),
    /// The QUIC tunnel's server end.
    QuicServer(quic::QuicArgs),
    /// The QUIC tunnel's client end.
    QuicClient(quic::QuicArgs),
}

/// Runs one of the benchmark's programs.
pub(crate) fn run_peer(command: TunnelPeerCommand) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match command {
            TunnelPeerCommand::Serve(args) => apps::serve(&args).await,
            TunnelPeerCommand::Ping(args) => apps::ping(&args).await,
            TunnelPeerCommand::QuicServer(args) => quic::server(&args).await,
            TunnelPeerCommand::QuicClient(args) => quic::client(&args).await,
        }
    })
}

/// The cells of the chosen paths, losses and patterns.
fn chosen_cells(args: &TunnelBenchArgs) -> Vec<Cell> {
    let bulk = args
        .bulk_bytes
        .unwrap_or(if args.quick { 2_000_000 } else { 20_000_000 });
    if args.quick {
        let cell = |table, rtt_ms, loss| Cell {
            table,
            rate_bps: 20_000_000,
            rtt: Duration::from_millis(rtt_ms),
            loss,
            burst: 1.0,
            size: bulk,
            jitter: 0.0,
        };
        return vec![
            cell(Table::LongDelay, 200, 0.0),
            cell(Table::Correlated, 20, 0.05),
        ];
    }
    let paths = if args.paths.is_empty() {
        vec![PathChoice::LongDelay, PathChoice::Correlated]
    } else {
        args.paths.clone()
    };
    let losses = if args.loss.is_empty() {
        vec![0.0, 5.0, 10.0, 20.0, 30.0]
    } else {
        args.loss.clone()
    };
    let bursts = if args.burst.is_empty() {
        vec![1.0, 5.0]
    } else {
        args.burst.clone()
    };
    let mut cells = Vec::new();
    for path in paths {
        let (table, rate_bps, rtt_ms) = match path {
            PathChoice::LongDelay => (Table::LongDelay, 50_000_000, 600),
            PathChoice::Correlated => (Table::Correlated, 100_000_000, 20),
        };
        for &loss in &losses {
            for &burst in &bursts {
                if loss == 0.0 && burst != bursts[0] {
                    continue;
                }
                cells.push(Cell {
                    table,
                    rate_bps,
                    rtt: Duration::from_millis(rtt_ms),
                    loss: loss / 100.0,
                    burst: if loss == 0.0 { 1.0 } else { burst },
                    size: bulk,
                    jitter: 0.0,
                });
            }
        }
    }
    cells
}

/// The systems that could not be prepared, each with the reason.
type Missing = Vec<(TunnelSystem, String)>;

/// Prepares every chosen system; the missing ones with their reasons.
fn prepare_systems(
    args: &TunnelBenchArgs,
    scratch: &Scratch,
) -> anyhow::Result<(Programs, Vec<TunnelSystem>, Missing)> {
    let tools = Toolbox::of_this_binary()?;
    let wanted: Vec<TunnelSystem> = TunnelSystem::ALL
        .into_iter()
        .filter(|s| args.systems.is_empty() || args.systems.contains(s))
        .collect();
    let mut programs = Programs {
        bench: tools.bench.clone(),
        ltx: tools.bench.with_file_name("ltx"),
        kcptun: None,
        ltx_key: None,
    };
    let mut ready = Vec::new();
    let mut missing = Vec::new();
    if wanted
        .iter()
        .any(|s| s.is_ltx() && *s != TunnelSystem::LtxSend)
    {
        match systems::find_ltx(&tools)
            .and_then(|ltx| systems::ltx_keygen(&ltx, &scratch.file("")).map(|k| (ltx, k)))
        {
            Ok((ltx, key)) => {
                programs.ltx = ltx;
                programs.ltx_key = Some(key);
            }
            Err(e) => eprintln!("ltx-bench tunnel: {e}"),
        }
    }
    for system in wanted {
        let prepared = match system {
            TunnelSystem::Ltx => programs.ltx_key.as_ref().map(|_| ()).ok_or_else(|| {
                systems::find_ltx(&tools)
                    .err()
                    .unwrap_or_else(|| "ltx keygen failed".to_owned())
            }),
            TunnelSystem::LtxHint => programs
                .ltx_key
                .as_ref()
                .ok_or_else(|| "no ltx binary".to_owned())
                .and_then(|_| systems::check_rate_hint(&programs.ltx)),
            TunnelSystem::DirectBbr => prepare(System::TcpBbr, &tools)
                .map(|_| ())
                .map_err(|m| m.reason),
            TunnelSystem::Kcptun => systems::build_kcptun(&tools).map(|p| {
                programs.kcptun = Some(p);
            }),
            TunnelSystem::LtxSend | TunnelSystem::DirectCubic => Ok(()),
            TunnelSystem::QuicBbr | TunnelSystem::QuicBrutal => Ok(()),
        };
        match prepared {
            Ok(()) => ready.push(system),
            Err(reason) => {
                emit(
                    args.json,
                    &json!({"system": system.name(), "missing": reason}),
                    &format!("{} is missing: {reason}", system.name()),
                );
                missing.push((system, reason));
            }
        }
    }
    Ok((programs, ready, missing))
}

/// Runs `ltx-bench tunnel`.
pub(crate) fn run(args: &TunnelBenchArgs) -> anyhow::Result<()> {
    let absent = ltx_emu::missing();
    if !absent.is_empty() {
        let what: Vec<String> = absent.iter().map(ToString::to_string).collect();
        bail!("the emulator cannot run here; missing: {}", what.join("; "));
    }
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        bail!("curl is missing (apt-get install curl)");
    }
    if args.reps == Some(0) || args.bound_factor.is_nan() || args.bound_factor < 1.0 {
        bail!("--reps and --bound-factor must be at least 1");
    }
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 3 });
    let cells = chosen_cells(args);
    let workloads: Vec<WorkloadKind> = WorkloadKind::ALL
        .into_iter()
        .filter(|w| args.workloads.is_empty() || args.workloads.contains(w))
        .collect();
    let scratch = Scratch::new()?;
    let (programs, systems, missing) = prepare_systems(args, &scratch)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let limits = SocketLimits::raise(64 << 20)
        .inspect_err(|e| eprintln!("ltx-bench tunnel: socket buffer ceilings unchanged ({e:#})"))
        .ok();
    let allowed = run::AllowedControllers::allow(&["cubic", "bbr"])?;
    let ctx = Context {
        programs: &programs,
        scratch: &scratch,
        stop: &stop,
    };
    let mut suite = Suite {
        json: args.json,
        no_skip: args.no_skip,
        rows: Vec::new(),
        hopeless: BTreeMap::new(),
    };
    let mut interrupted = false;
    'cells: for cell in &cells {
        for &kind in &workloads {
            let workload = Workload::of(kind, args.quick);
            let bound = bound(cell, &workload, args.bound_factor);
            match suite.cell(&ctx, cell, &workload, &systems, reps, bound) {
                Ok(()) => {}
                Err(e) if e.is::<Interrupted>() => {
                    interrupted = true;
                    break 'cells;
                }
                Err(e) => return Err(e.context(format!("on {} {kind}", cell.label()))),
            }
            if let Some(by_system) = group(&suite.rows).get(&key(cell, kind)) {
                let line = summary(cell, kind, by_system);
                emit(args.json, &line, &describe(&line));
            }
        }
    }
    drop(limits);
    drop(allowed);
    let text = markdown(&cells, &workloads, &suite.rows, &systems, &missing);
    if !args.json {
        println!("{text}");
    }
    if let Some(dir) = &args.out {
        write_results(dir, &cells, &workloads, &suite.rows, &text)?;
        eprintln!("ltx-bench tunnel: results in {}", dir.display());
    }
    if interrupted {
        bail!("interrupted; the runs so far are kept");
    }
    if args.quick {
        let failed: Vec<String> = suite
            .rows
            .iter()
            .filter(|r| r.value().is_none())
            .map(|r| {
                format!(
                    "{} {} on {}: {}",
                    r.system.name(),
                    r.workload,
                    r.cell.label(),
                    r.measured.note
                )
            })
            .collect();
        if !missing.is_empty() && !args.systems.is_empty() {
            bail!("missing systems: {missing:?}");
        }
        if !failed.is_empty() {
            bail!("runs that did not complete intact: {}", failed.join("; "));
        }
    }
    Ok(())
}

/// A run's bound: `factor` × the ideal time of its bytes (at least 10 s);
/// the interactive stream's own length and drain, and 10 s more.
fn bound(cell: &Cell, workload: &Workload, factor: f64) -> Duration {
    match workload {
        Workload::Bulk => cell.bound(factor),
        Workload::Web(sizes) => Cell {
            size: sizes.iter().sum(),
            ..*cell
        }
        .bound(factor),
        Workload::Interactive(plan) => {
            plan.interval * plan.count + plan.drain + Duration::from_secs(10)
        }
    }
}

/// The state of a suite being run.
struct Suite {
    json: bool,
    no_skip: bool,
    rows: Vec<Row>,
    /// (table, burst ×10, workload, system) → the loss at which the system
    /// completed nothing.
    hopeless: BTreeMap<(Table, u64, WorkloadKind, TunnelSystem), f64>,
}

impl Suite {
    fn cell(
        &mut self,
        ctx: &Context<'_>,
        cell: &Cell,
        workload: &Workload,
        systems: &[TunnelSystem],
        reps: u64,
        bound: Duration,
    ) -> anyhow::Result<()> {
        let kind = workload.kind();
        let burst = (cell.burst * 10.0).round() as u64;
        let runs: Vec<TunnelSystem> = systems
            .iter()
            .copied()
            .filter(|s| *s != TunnelSystem::LtxSend || kind == WorkloadKind::Bulk)
            .collect();
        let mut skipped = Vec::new();
        for &system in &runs {
            if let Some(&at) = self.hopeless.get(&(cell.table, burst, kind, system)) {
                if !self.no_skip && at < cell.loss {
                    let note = format!("not run: completed nothing at {}%", percent(at));
                    self.record(Row {
                        cell: *cell,
                        workload: kind,
                        system,
                        rep: 1,
                        ran: false,
                        measured: Measured {
                            note,
                            ..Measured::default()
                        },
                        bound_s: bound.as_secs_f64(),
                    });
                    skipped.push(system);
                }
            }
        }
        for rep in 1..=reps {
            for &system in &runs {
                if skipped.contains(&system) {
                    continue;
                }
                let measured = run_once(ctx, cell, system, workload, rep, bound)?;
                let row = Row {
                    cell: *cell,
                    workload: kind,
                    system,
                    rep,
                    ran: true,
                    measured,
                    bound_s: bound.as_secs_f64(),
                };
                let failed_first = rep == 1 && row.value().is_none();
                self.record(row);
                if failed_first && !self.no_skip {
                    skipped.push(system);
                    if cell.loss > 0.0 {
                        self.hopeless
                            .entry((cell.table, burst, kind, system))
                            .or_insert(cell.loss);
                    }
                }
            }
        }
        Ok(())
    }

    fn record(&mut self, row: Row) {
        if self.json {
            println!("{}", row.to_json());
            let _ = std::io::stdout().flush();
        }
        let m = &row.measured;
        let figure = match (row.value(), row.workload) {
            (None, _) => "∞".to_owned(),
            (Some(_), WorkloadKind::Interactive) => {
                let (p50, p95) = m.delay_ms.unwrap_or_default();
                format!("added delay p50 {p50:.1} ms, p95 {p95:.1} ms")
            }
            (Some(v), _) => format!("{v:.3} s"),
        };
        eprintln!(
            "{} {} {} rep {}: {figure}{}",
            row.cell.label(),
            row.workload,
            row.system.name(),
            row.rep,
            if m.note.is_empty() {
                String::new()
            } else {
                format!(" — {}", m.note)
            }
        );
        self.rows.push(row);
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

/// A summary line for people.
fn describe(line: &Value) -> String {
    format!(
        "{} {}% burst {} {}: ltx {} vs {} {} (ratio {}); targets {}",
        line["scenario"].as_str().unwrap_or(""),
        line["loss"].as_f64().map_or(0.0, |l| l * 100.0),
        line["burst"],
        line["workload"].as_str().unwrap_or(""),
        line["ltx_median"],
        line["best_peer"].as_str().unwrap_or("no peer"),
        line["best_peer_median"],
        line["ltx_over_best_peer"],
        line["targets"]
    )
}

/// Writes runs.csv, tables.md, summary.jsonl, command.txt and plots/.
fn write_results(
    dir: &Path,
    cells: &[Cell],
    workloads: &[WorkloadKind],
    rows: &[Row],
    tables: &str,
) -> anyhow::Result<()> {
    fs::create_dir_all(dir.join("plots")).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    let mut csv = report::COLUMNS.join(",");
    csv.push('\n');
    for row in rows {
        csv.push_str(&row.to_csv());
        csv.push('\n');
    }
    write("runs.csv", csv)?;
    write("tables.md", tables.to_owned())?;
    let groups = group(rows);
    let mut summaries = String::new();
    for cell in cells {
        for &w in workloads {
            if let Some(by_system) = groups.get(&key(cell, w)) {
                summaries.push_str(&summary(cell, w, by_system).to_string());
                summaries.push('\n');
            }
        }
    }
    write("summary.jsonl", summaries)?;
    let command: Vec<String> = std::env::args().collect();
    write("command.txt", format!("{}\n", command.join(" ")))?;
    if let Err(e) = plot(dir, cells, workloads, rows) {
        eprintln!("ltx-bench tunnel: no plots: {e:#}");
        write("plots/MISSING.txt", format!("{e:#}\n"))?;
    }
    Ok(())
}

/// One plot per workload, path and pattern: each system's median against
/// the loss rate, on a log axis (∞ left out).
fn plot(
    dir: &Path,
    cells: &[Cell],
    workloads: &[WorkloadKind],
    rows: &[Row],
) -> anyhow::Result<()> {
    plots::load_font()?;
    let names: Vec<&'static str> = TunnelSystem::ALL.iter().map(|s| s.name()).collect();
    let groups = group(rows);
    for &w in workloads {
        let mut series: BTreeMap<(Table, u64), plots::Series> = BTreeMap::new();
        for cell in cells {
            let Some(by_system) = groups.get(&key(cell, w)) else {
                continue;
            };
            let burst = (cell.burst * 10.0).round() as u64;
            for (system, rows) in by_system {
                if let Some(Some(v)) = median(rows) {
                    // The 0 % cell belongs to every pattern's line.
                    let bursts: Vec<u64> = if cell.loss == 0.0 {
                        cells
                            .iter()
                            .map(|c| (c.burst * 10.0).round() as u64)
                            .collect()
                    } else {
                        vec![burst]
                    };
                    for b in bursts {
                        let line = series.entry((cell.table, b)).or_default();
                        let points = line.entry(system.name()).or_default();
                        if !points.contains(&(cell.loss * 100.0, v)) {
                            points.push((cell.loss * 100.0, v));
                        }
                    }
                }
            }
        }
        for ((table, burst), mut lines) in series {
            for points in lines.values_mut() {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            let pattern = pattern_name(burst as f64 / 10.0);
            let stem = dir.join("plots").join(format!("{w}-{table}-{pattern}"));
            let (title, y) = match w {
                WorkloadKind::Interactive => (
                    format!("{table}, {pattern}: interactive, p95 added delay (∞ left out)"),
                    "p95 added delay (ms, log)",
                ),
                _ => (
                    format!("{table}, {pattern}: {w}, time to the last byte (∞ left out)"),
                    "time (s, log)",
                ),
            };
            let frame = Frame {
                title: &title,
                x: "loss rate (%)",
                y,
                names: &names,
            };
            plots::log_lines(&stem, &frame, &lines)?;
        }
    }
    Ok(())
}
