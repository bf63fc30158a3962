//! `ltx-bench compare`: every preset over the seed scenario matrix in the
//! simulator, written out as runs.csv, tables.md, summary.jsonl and plots,
//! with the targets the runs meet.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use ltx_cli::live::round;
use ltx_cli::repair_args::RepairArgs;
use ltx_presets::Profile;
use ltx_sim::compare::{
    best, run_all, summarize, targets, Cell, CellSummary, Plan, Run, Section, Target,
};
use serde_json::{json, Map, Value};

mod charts;
mod tables;

/// `ltx-bench compare`.
#[derive(Debug, Args)]
#[command(after_help = "\
Sections: correlated and long-delay (seed 000's two tables, 10 MB), \
long-delay-100mb (the long-delay table with 100 MB), delay-sweep and \
loss-sweep (seed 004, 50 MB at 10 Mbit/s), web (seed 002's 1080 KiB and \
3204 KiB objects at 10 Mbit/s), shared (seed 001: four flows of one preset \
on a drop-tail 1-BDP queue and on an ECN-marking one). A run not done \
within 20 × T* (at least 10 s) did not complete: ∞ in the tables.")]
pub(crate) struct CompareArgs {
    /// Print one JSON object per run, then a summary object with the
    /// targets.
    #[arg(long)]
    json: bool,
    /// Where to write runs.csv, tables.md, summary.jsonl and plots/.
    #[arg(long, default_value = "sim-compare")]
    out: PathBuf,
    /// Seeds per cell (seeds 1 to N).
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Seeds per cell of the 100 MB table and the 50 MB sweeps, which take
    /// most of the time.
    #[arg(long, default_value_t = 1)]
    heavy_seeds: u64,
    /// Threads to run on (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// A few small cells of each section, for a check of the whole
    /// pipeline (under a minute).
    #[arg(long)]
    quick: bool,
    /// Presets to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    profiles: Vec<Profile>,
    /// Sections to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    sections: Vec<Section>,
    // Applied to every preset, over its own settings.
    #[command(flatten)]
    repair: RepairArgs,
}

/// The columns of runs.csv, in order.
const COLUMNS: [&str; 25] = [
    "section",
    "rate_bps",
    "rtt_ms",
    "loss",
    "burst",
    "size",
    "flows",
    "queue",
    "profile",
    "seed",
    "completed",
    "verified",
    "completion_s",
    "ideal_s",
    "ratio",
    "goodput_bps",
    "overhead",
    "delay_p50_ms",
    "delay_p99_ms",
    "queue_delay_p95_ms",
    "queue_loss",
    "random_loss",
    "jain",
    "simulated_s",
    "error",
];

/// Runs `ltx-bench compare`.
pub(crate) fn run(args: &CompareArgs) -> anyhow::Result<()> {
    if args.seeds == 0 || args.heavy_seeds == 0 {
        bail!("--seeds and --heavy-seeds must be at least 1");
    }
    let threads = match args.jobs {
        Some(0) => bail!("--jobs must be at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let plan = plan_of(args)?;
    let total = plan.runs().len();
    eprintln!(
        "compare: {} cells × {} presets, {total} runs on {threads} thread(s)",
        plan.cells.len(),
        plan.profiles.len()
    );
    let started = Instant::now();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let runs = run_with_progress(&plan, threads, args.json, started, &mut out)?;
    let wall_s = started.elapsed().as_secs_f64();
    let summaries = summarize(&plan, &runs);
    let targets = targets(&plan, &summaries);
    let written = Written {
        plan: &plan,
        runs: &runs,
        summaries: &summaries,
        targets: &targets,
        wall_s,
        quick: args.quick,
    };
    written.write(&args.out)?;
    report(args, &runs, &targets, wall_s, threads, &mut out)?;
    check_delivered(&plan, &runs)
}

/// The cells and presets the options ask for, with the repair flags' settings
/// (refused if out of range).
fn plan_of(args: &CompareArgs) -> anyhow::Result<Plan> {
    let profiles = if args.profiles.is_empty() {
        Profile::ALL.to_vec()
    } else {
        dedup(&args.profiles)
    };
    let sections = if args.sections.is_empty() {
        Section::ALL.to_vec()
    } else {
        dedup(&args.sections)
    };
    let mut plan = if args.quick {
        Plan::quick(&sections, profiles, args.seeds)
    } else {
        Plan::full(&sections, profiles, args.seeds, args.heavy_seeds)
    };
    let repair = args.repair.settings();
    plan.set_repair(repair)
        .map_err(|e| anyhow::anyhow!("the repair flags: {e}"))?;
    if !repair.is_default() {
        let readers: Vec<&str> = plan
            .profiles
            .iter()
            .filter(|p| repair.given().iter().all(|s| p.scheme().reads(*s)))
            .map(|p| p.name())
            .collect();
        eprintln!(
            "compare: the repair settings changed where a preset reads them ({}): {repair:?}",
            readers.join(", ")
        );
    }
    Ok(plan)
}

/// Runs the plan on `threads` threads, with a progress line per run on
/// standard error and, with `json`, the run as JSON on `out`.
fn run_with_progress(
    plan: &Plan,
    threads: usize,
    json: bool,
    started: Instant,
    out: &mut impl Write,
) -> anyhow::Result<Vec<Run>> {
    let total = plan.runs().len();
    let mut write_error = None;
    let runs = run_all(plan, threads, |count, run| {
        let cell = &plan.cells[run.spec.cell];
        eprintln!(
            "[{count}/{total}] {} {} seed {}: {} ({:.0} s)",
            cell.label(),
            run.spec.profile,
            run.spec.seed,
            outcome(run),
            started.elapsed().as_secs_f64()
        );
        if json && write_error.is_none() {
            if let Err(e) = writeln!(out, "{}", Value::Object(run_json(cell, run))) {
                write_error = Some(e);
            }
        }
    })
    .context("building a scenario")?;
    if let Some(e) = write_error {
        return Err(e).context("writing the results");
    }
    Ok(runs)
}

/// The closing summary: a JSON object on `out`, or lines on standard output.
fn report(
    args: &CompareArgs,
    runs: &[Run],
    targets: &[Target],
    wall_s: f64,
    threads: usize,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let completed = runs.iter().filter(|r| r.completed()).count();
    let verified = runs.iter().filter(|r| r.verified).count();
    if args.json {
        let summary = json!({
            "summary": true,
            "runs": runs.len(),
            "completed": completed,
            "verified": verified,
            "wall_s": round(wall_s, 1),
            "threads": threads,
            "out": args.out.display().to_string(),
            "targets": targets.iter().map(target_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{summary}")?;
    } else {
        println!(
            "{} runs ({completed} completed, {verified} verified) in {wall_s:.1} s on {threads} thread(s); results in {}",
            runs.len(),
            args.out.display()
        );
        for target in targets {
            println!("{}", target_line(target));
        }
    }
    Ok(())
}

/// Fails if any run completed without delivering exactly the bytes sent.
fn check_delivered(plan: &Plan, runs: &[Run]) -> anyhow::Result<()> {
    let wrong: Vec<&Run> = runs
        .iter()
        .filter(|r| r.completed() && !r.verified)
        .collect();
    if !wrong.is_empty() {
        let which: Vec<String> = wrong
            .iter()
            .map(|r| {
                format!(
                    "{} {} seed {}",
                    plan.cells[r.spec.cell].label(),
                    r.spec.profile,
                    r.spec.seed
                )
            })
            .collect();
        bail!(
            "{} run(s) completed without delivering exactly the bytes sent: {}",
            wrong.len(),
            which.join("; ")
        );
    }
    Ok(())
}

/// `items` without repeats, in their first order.
fn dedup<T: PartialEq + Copy>(items: &[T]) -> Vec<T> {
    let mut unique = Vec::new();
    for &item in items {
        if !unique.contains(&item) {
            unique.push(item);
        }
    }
    unique
}

/// A run's outcome in a few words, for the progress lines.
fn outcome(run: &Run) -> String {
    match (run.ratio, run.verified) {
        (Some(ratio), true) => format!("T/T* {ratio:.3}"),
        (Some(ratio), false) => format!("T/T* {ratio:.3}, NOT VERIFIED"),
        (None, _) => format!(
            "did not complete ({})",
            run.error.as_deref().unwrap_or("no error")
        ),
    }
}

/// The cell's parameters, as the CSV and the JSON give them.
fn cell_fields(cell: &Cell) -> Vec<(&'static str, Value)> {
    vec![
        ("section", json!(cell.section.name())),
        ("rate_bps", json!(cell.rate_bps)),
        ("rtt_ms", json!(cell.rtt.as_millis() as u64)),
        ("loss", json!(cell.loss)),
        ("burst", json!(cell.burst)),
        ("size", json!(cell.size)),
        ("flows", json!(cell.flows)),
        ("queue", json!(cell.queue())),
    ]
}

/// One run as the CSV's columns, by name.
fn run_json(cell: &Cell, run: &Run) -> Map<String, Value> {
    let mut o: Map<String, Value> = cell_fields(cell)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let fields = [
        ("profile", json!(run.spec.profile.name())),
        ("seed", json!(run.spec.seed)),
        ("completed", json!(run.completed())),
        ("verified", json!(run.verified)),
        ("completion_s", json!(run.completion_s.map(|c| round(c, 4)))),
        ("ideal_s", json!(round(run.ideal_s, 4))),
        ("ratio", json!(run.ratio.map(|r| round(r, 4)))),
        ("goodput_bps", json!(run.goodput_bps.round())),
        ("overhead", json!(round(run.overhead, 4))),
        ("delay_p50_ms", json!(round(run.delay_p50_ms, 2))),
        ("delay_p99_ms", json!(round(run.delay_p99_ms, 2))),
        (
            "queue_delay_p95_ms",
            json!(round(run.queue_delay_p95_ms, 2)),
        ),
        ("queue_loss", json!(round(run.queue_loss, 5))),
        ("random_loss", json!(round(run.random_loss, 5))),
        ("jain", json!(run.jain.map(|j| round(j, 4)))),
        ("simulated_s", json!(round(run.simulated_s, 3))),
        ("error", json!(run.error)),
    ];
    for (k, v) in fields {
        o.insert(k.to_owned(), v);
    }
    o
}

/// One line of runs.csv.
fn csv_row(cell: &Cell, run: &Run) -> String {
    let o = run_json(cell, run);
    COLUMNS
        .iter()
        .map(|column| match &o[*column] {
            Value::Null => String::new(),
            Value::String(s) => quote(s),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn quote(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// A median as JSON: `null` when infinite.
fn finite(x: f64, digits: i32) -> Value {
    if x.is_finite() {
        json!(round(x, digits))
    } else {
        Value::Null
    }
}

/// One cell and preset's medians, for summary.jsonl.
fn summary_json(plan: &Plan, summary: &CellSummary, cell_best: Option<(Profile, f64)>) -> Value {
    let cell = &plan.cells[summary.cell];
    let mut o: Map<String, Value> = cell_fields(cell)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let fields = [
        ("profile", json!(summary.profile.name())),
        ("runs", json!(summary.runs)),
        ("completed", json!(summary.completed)),
        ("verified", json!(summary.verified)),
        ("ideal_s", json!(round(cell.ideal().as_secs_f64(), 4))),
        ("median_completion_s", finite(summary.completion_s, 4)),
        ("median_ratio", finite(summary.ratio, 4)),
        ("median_goodput_bps", json!(summary.goodput_bps.round())),
        (
            "median_overhead",
            json!(summary.overhead.map(|x| round(x, 4))),
        ),
        (
            "median_overhead_dealt",
            json!(summary.overhead_dealt.map(|x| round(x, 4))),
        ),
        (
            "median_delay_p99_ms",
            json!(summary.delay_p99_ms.map(|x| round(x, 2))),
        ),
        (
            "median_queue_delay_p95_ms",
            json!(round(summary.queue_delay_p95_ms, 2)),
        ),
        ("median_queue_loss", json!(round(summary.queue_loss, 5))),
        ("median_jain", json!(summary.jain.map(|x| round(x, 4)))),
        (
            "best",
            json!(cell_best.map(|(p, _)| p) == Some(summary.profile)),
        ),
        ("best_profile", json!(cell_best.map(|(p, _)| p.name()))),
    ];
    for (k, v) in fields {
        o.insert(k.to_owned(), v);
    }
    Value::Object(o)
}

/// A target as JSON.
fn target_json(target: &Target) -> Value {
    json!({
        "target": target.name,
        "holds": target.holds(),
        "checked": target.checked,
        "failures": target.failures,
    })
}

/// A target in one line (with its failures on the lines after).
fn target_line(target: &Target) -> String {
    let verdict = match target.holds() {
        Some(true) => "holds",
        Some(false) => "DOES NOT HOLD",
        None => "not checked",
    };
    let mut line = format!(
        "{}: {verdict} ({} of {} checked)",
        target.name,
        target.checked - target.failures.len(),
        target.checked
    );
    for failure in &target.failures {
        line.push_str("\n    ");
        line.push_str(failure);
    }
    line
}

/// What the comparison writes to its directory.
struct Written<'a> {
    plan: &'a Plan,
    runs: &'a [Run],
    summaries: &'a [CellSummary],
    targets: &'a [Target],
    wall_s: f64,
    quick: bool,
}

impl Written<'_> {
    /// Writes runs.csv, summary.jsonl, tables.md, targets.txt and plots/.
    fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let Written {
            plan,
            runs,
            summaries,
            targets,
            wall_s,
            quick,
        } = *self;
        fs::create_dir_all(dir.join("plots"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
        };
        let mut csv = COLUMNS.join(",");
        csv.push('\n');
        for run in runs {
            csv.push_str(&csv_row(&plan.cells[run.spec.cell], run));
            csv.push('\n');
        }
        write("runs.csv", csv)?;
        let mut jsonl = String::new();
        for summary in summaries {
            let of_cell: Vec<&CellSummary> = summaries
                .iter()
                .filter(|s| s.cell == summary.cell)
                .collect();
            jsonl.push_str(&summary_json(plan, summary, best(&of_cell)).to_string());
            jsonl.push('\n');
        }
        write("summary.jsonl", jsonl)?;
        write("tables.md", tables::markdown(plan, summaries, quick))?;
        // The command as typed, under the program's name rather than the
        // path it was started from.
        let command: Vec<String> = std::iter::once("ltx-bench".to_owned())
            .chain(std::env::args().skip(1))
            .collect();
        let mut report = format!("{}\n\n", command.join(" "));
        report.push_str(&format!(
            "{} runs in {wall_s:.1} s of wall time\n\n",
            runs.len()
        ));
        for target in targets {
            report.push_str(&target_line(target));
            report.push('\n');
        }
        write("targets.txt", report)?;
        if let Err(e) = charts::draw(&dir.join("plots"), plan, summaries) {
            eprintln!("ltx-bench compare: no plots: {e:#}");
            write("plots/MISSING.txt", format!("{e:#}\n"))?;
        }
        Ok(())
    }
}
