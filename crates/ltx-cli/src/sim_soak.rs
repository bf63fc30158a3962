//! `ltx sim soak`: many seeded transfers over random hostile paths; every
//! one must deliver exactly the bytes sent or end with a clear error.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use ltx_cli::live::round;
use ltx_sim::soak::{describe, run_many, SoakCase, SoakProtection, SoakReport, SoakSummary};
use serde_json::{json, Value};

use ltx_cli::qlog::{prepare_dir, write_simulated};
use ltx_qlog::Vantage;

/// How often a long soak reports progress on stderr.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// `ltx sim soak`.
#[derive(Debug, Args)]
pub(crate) struct SoakArgs {
    /// Runs to make; run i has seed `--seed` + i.
    #[arg(long, default_value_t = 1000)]
    runs: u64,
    /// The first run's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replay the run with this seed alone, printing its path (the same as
    /// `--runs 1 --seed SEED`).
    #[arg(long, conflicts_with_all = ["runs", "seed"])]
    replay: Option<u64>,
    /// Print one JSON object per run, then a summary object.
    #[arg(long)]
    json: bool,
    /// Threads to run on (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// With a single run, write the sender's trace into this directory as
    /// the qlog file `seed-N.sqlog` (simulated time), which qvis opens.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// How the runs protect their packets: AEAD after a Noise handshake,
    /// so that corrupted packets fail authentication, or the plain checksum.
    #[arg(long, value_enum, default_value_t = ProtectionChoice::Aead)]
    protection: ProtectionChoice,
}

/// The `--protection` of `ltx sim soak`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProtectionChoice {
    /// A Noise handshake, then AEAD.
    Aead,
    /// The plain checksum.
    Plain,
}

impl ProtectionChoice {
    fn protection(self) -> SoakProtection {
        match self {
            ProtectionChoice::Plain => SoakProtection::Plain,
            ProtectionChoice::Aead => SoakProtection::Aead,
        }
    }
}

/// Runs `ltx sim soak`.
pub(crate) fn run(args: &SoakArgs) -> anyhow::Result<()> {
    let (first, runs) = match args.replay {
        Some(seed) => (seed, 1),
        None => (args.seed, args.runs),
    };
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    if runs == 1 {
        return run_one(first, args);
    }
    if args.qlog.is_some() {
        bail!("--qlog records one run: give --runs 1 or --replay SEED");
    }
    let threads = match args.jobs {
        Some(0) => bail!("--jobs must be at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let started = std::time::Instant::now();
    let mut last_progress = started;
    let mut summary = SoakSummary::default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut write_error = None;
    run_many(
        first,
        runs,
        threads,
        Some(args.protection.protection()),
        |report| {
            summary.add(&report);
            if args.json && write_error.is_none() {
                if let Err(e) = writeln!(out, "{}", report_json(&report)) {
                    write_error = Some(e);
                }
            } else if report.outcome.is_failure() {
                eprintln!("seed {}: {}", report.seed, report.outcome);
            }
            if last_progress.elapsed() >= PROGRESS_EVERY {
                last_progress = std::time::Instant::now();
                let elapsed = started.elapsed().as_secs_f64();
                eprintln!(
                    "soak: {}/{runs} runs, {} errors, {} wrong, {} hung ({:.1} runs/s)",
                    summary.runs,
                    summary.errors,
                    summary.wrong,
                    summary.hangs,
                    summary.runs as f64 / elapsed
                );
            }
        },
    );
    if let Some(e) = write_error {
        return Err(e).context("writing the results");
    }
    let wall_s = started.elapsed().as_secs_f64();
    if args.json {
        writeln!(out, "{}", summary_json(&summary, first, threads, wall_s))?;
    } else {
        print_summary(&summary, first, threads, wall_s);
    }
    drop(out);
    if !summary.passed() {
        let seeds: Vec<String> = summary
            .failing_seeds
            .iter()
            .map(|s| s.to_string())
            .collect();
        bail!(
            "{} run(s) read wrong data or hung; replay each with `ltx sim soak --replay SEED`: seeds {}",
            summary.wrong + summary.hangs,
            seeds.join(" ")
        );
    }
    Ok(())
}

fn run_one(seed: u64, args: &SoakArgs) -> anyhow::Result<()> {
    let mut case = SoakCase::draw(seed);
    case.protection = args.protection.protection();
    if !args.json {
        // Before the run, which may be long: what is being replayed.
        println!("{case}");
    }
    let started = std::time::Instant::now();
    let report = case.run_traced(args.qlog.is_some());
    let wall_s = started.elapsed().as_secs_f64();
    if let Some(dir) = &args.qlog {
        let dir = prepare_dir(dir)?;
        let events = report.trace.iter().map(|(at, e)| (at.as_secs_f64(), e));
        write_simulated(&dir, &format!("seed-{seed}"), Vantage::Client, events)?;
    }
    if args.json {
        let mut summary = SoakSummary::default();
        summary.add(&report);
        println!("{}", report_json(&report));
        println!("{}", summary_json(&summary, seed, 1, wall_s));
    } else {
        println!("outcome: {}", report.outcome);
        match report.completion {
            Some(c) => println!(
                "completed at {:.3} s (ideal {:.3} s, deadline {:.1} s)",
                c.as_secs_f64(),
                report.ideal.as_secs_f64(),
                report.deadline.as_secs_f64()
            ),
            None => println!(
                "read {} of {} bytes (ideal {:.3} s, deadline {:.1} s)",
                report.read,
                report.size,
                report.ideal.as_secs_f64(),
                report.deadline.as_secs_f64()
            ),
        }
        println!(
            "sender: {}; receiver: {}",
            close_text(&report.sender_close),
            close_text(&report.receiver_close)
        );
        println!(
            "{} corrupted packets, {} refused as unauthentic",
            report.corrupted, report.unauthentic
        );
        println!(
            "simulated {:.3} s in {} steps and {wall_s:.2} s",
            report.simulated.as_secs_f64(),
            report.steps
        );
    }
    if report.outcome.is_failure() {
        bail!("seed {seed}: {}", report.outcome);
    }
    Ok(())
}

fn close_text(close: &Option<ltx_proto::CloseReason>) -> String {
    close
        .as_ref()
        .map_or_else(|| "still open".to_owned(), describe)
}

/// One run as JSON: only what the seed determines, so that a replay prints
/// the same object.
fn report_json(report: &SoakReport) -> Value {
    json!({
        "seed": report.seed,
        "outcome": report.outcome.label(),
        "reason": report.outcome.reason(),
        "size": report.size,
        "read": report.read,
        "completion_s": report.completion.map(|c| round(c.as_secs_f64(), 6)),
        "ideal_s": round(report.ideal.as_secs_f64(), 6),
        "simulated_s": round(report.simulated.as_secs_f64(), 6),
        "outage": report.outage,
        "sender_close": report.sender_close.as_ref().map(describe),
        "receiver_close": report.receiver_close.as_ref().map(describe),
        "steps": report.steps,
        "protection": report.protection.label(),
        "corrupted": report.corrupted,
        "unauthentic": report.unauthentic,
    })
}

fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

fn sorted_ratios(summary: &SoakSummary) -> Vec<f64> {
    let mut ratios = summary.ratios.clone();
    ratios.sort_by(f64::total_cmp);
    ratios
}

fn summary_json(summary: &SoakSummary, first: u64, threads: usize, wall_s: f64) -> Value {
    let ratios = sorted_ratios(summary);
    json!({
        "summary": true,
        "first_seed": first,
        "runs": summary.runs,
        "delivered": summary.delivered,
        "error": summary.errors,
        "wrong": summary.wrong,
        "hang": summary.hangs,
        "errors_by_reason": summary.errors_by_reason,
        "errors_without_outage": summary.errors_without_outage,
        "failing_seeds": summary.failing_seeds,
        "bytes_delivered": summary.bytes_delivered,
        "simulated_s": round(summary.simulated_s, 3),
        "ratio_p50": percentile(&ratios, 0.5).map(|r| round(r, 3)),
        "ratio_p99": percentile(&ratios, 0.99).map(|r| round(r, 3)),
        "by_protection": summary
            .by_protection
            .iter()
            .map(|(protection, c)| {
                (
                    protection.label().to_owned(),
                    json!({
                        "runs": c.runs,
                        "delivered": c.delivered,
                        "corrupted": c.corrupted,
                        "unauthentic": c.unauthentic,
                    }),
                )
            })
            .collect::<serde_json::Map<String, Value>>(),
        "threads": threads,
        "wall_s": round(wall_s, 3),
        "runs_per_s": round(summary.runs as f64 / wall_s.max(1e-9), 3),
    })
}

fn print_summary(summary: &SoakSummary, first: u64, threads: usize, wall_s: f64) {
    let last = first.wrapping_add(summary.runs.saturating_sub(1));
    println!(
        "soak: {} runs, seeds {first}–{last}, in {wall_s:.1} s on {threads} thread(s) ({:.2} runs/s)",
        summary.runs,
        summary.runs as f64 / wall_s.max(1e-9)
    );
    println!("  delivered  {:>8}", summary.delivered);
    println!("  error      {:>8}", summary.errors);
    for (reason, count) in &summary.errors_by_reason {
        let alone = summary
            .errors_without_outage
            .get(reason)
            .copied()
            .unwrap_or(0);
        println!("    {count:>8}  {reason} ({alone} on paths without an outage)");
    }
    println!("  wrong      {:>8}", summary.wrong);
    println!("  hang       {:>8}", summary.hangs);
    for (protection, c) in &summary.by_protection {
        println!(
            "{protection}: {} runs, {} delivered; {} packets corrupted, {} refused as unauthentic",
            c.runs, c.delivered, c.corrupted, c.unauthentic
        );
    }
    let ratios = sorted_ratios(summary);
    if let (Some(p50), Some(p99)) = (percentile(&ratios, 0.5), percentile(&ratios, 0.99)) {
        println!(
            "delivered runs of 64 kB or more: completion / ideal p50 {p50:.2}, p99 {p99:.2} ({} runs)",
            ratios.len()
        );
    }
    println!(
        "{:.1} MB delivered, {:.0} s simulated",
        summary.bytes_delivered as f64 / 1e6,
        summary.simulated_s
    );
}
