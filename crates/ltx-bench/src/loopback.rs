//! `ltx-bench loopback`: one connection over 127.0.0.1 with no impairment,
//! sender and receiver in this process, for each system under test: its
//! throughput and the CPU it spends per gigabyte.
//!
//! The timed window of a run opens when the sender's end of the connection
//! is established (its handshake is over) and closes when the receiver has
//! read and checked the last byte and seen the end of the stream. Handshakes,
//! certificates, sockets and runtimes are set up before it; closing the
//! connection happens after it. CPU time is the whole process's, user plus
//! system, over that window: both ends, every thread.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::builder::PossibleValuesParser;
use clap::{Args, ValueEnum};
use ltx_sim::units::parse_size;
use serde_json::{json, Value};
use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

use super::measure::{median, process_cpu_time};
use super::payload;
use payload::{Delivery, Pattern};

mod ltx;

mod quinn;
mod tcp;

/// One system under test: its name on the command line and in the report,
/// and how to run one transfer over it.
struct System {
    name: &'static str,
    run: RunFn,
    /// Whether it runs when no `--system` is named.
    by_default: bool,
}

/// Runs one transfer over a system: `transfer.bytes` bytes of
/// `transfer.pattern`, written by a sending end and read to the end of the
/// stream and fed to a [`payload::Verifier`] by a receiving end, the two run
/// by [`Sides::join`]. Returns the marks that bound the timed window (see the
/// module's documentation) and what the receiver got; the caller checks the
/// delivery.
type RunFn = fn(&Sides, &Transfer) -> anyhow::Result<RunMeasurement>;

/// Every system the benchmark can run, in the order they are reported.
const SYSTEMS: &[System] = &[
    System {
        name: "ltx",
        by_default: true,
        run: ltx::run,
    },
    System {
        name: "ltx-plain",
        by_default: true,
        run: ltx::run_plain,
    },
    System {
        name: "ltx-qlog",
        run: ltx::run_traced,
        // Each end writes about 0.3 KB of trace per packet: name it to run it.
        by_default: false,
    },
    System {
        name: "quinn",
        by_default: true,
        run: quinn::run,
    },
    System {
        name: "quinn-aws-lc",
        run: quinn::run_aws_lc,
        // quinn with the AEAD ltx seals with, beside the reference's ring:
        // name it to run it.
        by_default: false,
    },
    System {
        name: "tcp",
        by_default: true,
        run: tcp::run,
    },
];

/// The system the others are compared with, each end on its own thread as
/// it runs: the target is [`THROUGHPUT_TARGET`] times its throughput at no
/// more than [`CPU_TARGET`] times its CPU per gigabyte.
const REFERENCE: &str = "quinn";
/// Throughput against the reference's that meets the target.
const THROUGHPUT_TARGET: f64 = 1.2;
/// CPU per gigabyte against the reference's that meets the target.
const CPU_TARGET: f64 = 0.7;

/// ltx with its packet protection, and with the plain layer: protection
/// must keep at least [`PROTECTION_TARGET`] of the plain throughput.
const PROTECTED: &str = "ltx";
const PLAIN: &str = "ltx-plain";
/// ltx writing its qlog traces, measured against [`PROTECTED`].
const TRACED: &str = "ltx-qlog";
const PROTECTION_TARGET: f64 = 0.8;

/// Options of `ltx-bench loopback`.
#[derive(Debug, Args)]
pub(crate) struct LoopbackArgs {
    /// Bytes per transfer, such as 1GB, 100MB or 64MiB.
    #[arg(long, default_value = "1GB")]
    size: String,
    /// Transfers per system; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Systems to run, comma-separated or repeated; all but `ltx-qlog`
    /// (ltx writing its qlog traces, to measure what tracing costs) when
    /// not given.
    #[arg(long = "system", value_delimiter = ',', value_parser = PossibleValuesParser::new(SYSTEMS.iter().map(|s| s.name)))]
    systems: Vec<String>,
    /// Where the sender and the receiver run.
    #[arg(long, value_enum, default_value_t = Threads::Shared)]
    threads: Threads,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

/// Where the two ends of a transfer run; the same for every system.
/// `shared` is the default because it is each system's best on a two-core
/// machine (see `docs/benchmarks.md`, "Loopback").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Threads {
    /// Each end on a tokio runtime of its own with one worker thread, as two
    /// processes would be, one per core.
    PerSide,
    /// Both ends on one tokio runtime with two worker threads, which the
    /// scheduler spreads over the cores as the work asks.
    Shared,
}

impl Threads {
    fn name(self) -> &'static str {
        match self {
            Threads::PerSide => "per-side",
            Threads::Shared => "shared",
        }
    }
}

/// The tokio runtimes a transfer's two ends are spawned on.
pub(crate) struct Sides {
    sender: Handle,
    receiver: Handle,
    // Held so that the handles stay usable; dropped after the run, which
    // ends whatever a system left behind before the next run starts.
    _runtimes: Vec<Runtime>,
}

impl Sides {
    /// Fresh runtimes laid out as `threads` says.
    pub(crate) fn new(threads: Threads) -> anyhow::Result<Sides> {
        let runtime = |workers: usize, name: &str| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name(name)
                .enable_all()
                .build()
                .context("starting a tokio runtime")
        };
        Ok(match threads {
            Threads::PerSide => {
                let sender = runtime(1, "bench-sender")?;
                let receiver = runtime(1, "bench-receiver")?;
                Sides {
                    sender: sender.handle().clone(),
                    receiver: receiver.handle().clone(),
                    _runtimes: vec![sender, receiver],
                }
            }
            Threads::Shared => {
                let both = runtime(2, "bench-worker")?;
                Sides {
                    sender: both.handle().clone(),
                    receiver: both.handle().clone(),
                    _runtimes: vec![both],
                }
            }
        })
    }

    /// Spawns `sender` and `receiver` on their runtimes and waits for both.
    /// The first error wins and the other end is aborted, so that a failed
    /// end cannot leave its peer waiting forever; so is a transfer still
    /// running after `limit`.
    pub(crate) fn join<A, B>(
        &self,
        limit: Duration,
        sender: impl Future<Output = anyhow::Result<A>> + Send + 'static,
        receiver: impl Future<Output = anyhow::Result<B>> + Send + 'static,
    ) -> anyhow::Result<(A, B)>
    where
        A: Send + 'static,
        B: Send + 'static,
    {
        let receiver = self.receiver.spawn(receiver);
        let sender = self.sender.spawn(sender);
        let aborts = [sender.abort_handle(), receiver.abort_handle()];
        let outcome = self.sender.block_on(async {
            tokio::time::timeout(limit, async {
                tokio::try_join!(side(sender, "sender"), side(receiver, "receiver"))
            })
            .await
        });
        for abort in aborts {
            abort.abort();
        }
        outcome.map_err(|_| anyhow::anyhow!("the transfer did not finish within {limit:?}"))?
    }
}

async fn side<T>(task: JoinHandle<anyhow::Result<T>>, name: &str) -> anyhow::Result<T> {
    task.await
        .with_context(|| format!("the {name} task"))?
        .with_context(|| format!("the {name}"))
}

/// The work of one transfer.
#[derive(Debug, Clone)]
pub(crate) struct Transfer {
    /// How many bytes to send.
    pub(crate) bytes: u64,
    /// What they are.
    pub(crate) pattern: Pattern,
}

impl Transfer {
    /// How long a transfer may take before it counts as hung: generous, as
    /// slow as 10 MB/s after half a minute of setup, so that only a stall
    /// reaches it.
    pub(crate) fn time_limit(&self) -> Duration {
        Duration::from_secs(30) + Duration::from_secs_f64(self.bytes as f64 / 10e6)
    }
}

/// A point in a transfer: the wall clock and the process's CPU time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    at: Instant,
    cpu: Duration,
}

impl Mark {
    /// Now.
    pub(crate) fn now() -> anyhow::Result<Mark> {
        Ok(Mark {
            at: Instant::now(),
            cpu: process_cpu_time()?,
        })
    }
}

/// What one transfer reports: the bounds of its timed window and what the
/// receiver got.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunMeasurement {
    /// When the sender's end of the connection was established.
    pub(crate) start: Mark,
    /// When the receiver had the last byte and the end of the stream.
    pub(crate) end: Mark,
    /// The receiver's count and check of the bytes.
    pub(crate) delivery: Delivery,
}

/// The figures of one checked run.
#[derive(Debug, Clone, Copy)]
struct RunFigures {
    wall: Duration,
    cpu: Duration,
}

/// Runs `system` once on fresh runtimes; a transfer that did not deliver
/// exactly what was sent is an error.
fn measure(system: &System, threads: Threads, transfer: &Transfer) -> anyhow::Result<RunFigures> {
    let sides = Sides::new(threads)?;
    let measurement = (system.run)(&sides, transfer)?;
    measurement.delivery.check(transfer.bytes)?;
    let wall = measurement
        .end
        .at
        .saturating_duration_since(measurement.start.at);
    anyhow::ensure!(!wall.is_zero(), "the timed window is empty");
    Ok(RunFigures {
        wall,
        cpu: measurement.end.cpu.saturating_sub(measurement.start.cpu),
    })
}

/// One system's medians over its runs.
#[derive(Debug, Clone)]
struct Summary {
    system: &'static str,
    gbit_per_s: f64,
    min_gbit_per_s: f64,
    max_gbit_per_s: f64,
    cpu_s_per_gb: f64,
    wall_s: f64,
    cpu_s: f64,
    /// CPU seconds per wall-clock second: how many cores the transfer kept
    /// busy.
    cores_busy: f64,
}

impl Summary {
    fn new(system: &'static str, bytes: u64, runs: &[RunFigures]) -> Summary {
        let of = |f: &dyn Fn(&RunFigures) -> f64| -> Vec<f64> { runs.iter().map(f).collect() };
        let gb = bytes as f64 / 1e9;
        let rates = of(&|r| gb * 8.0 / r.wall.as_secs_f64());
        let middle = |values: &[f64]| median(values).unwrap_or(f64::NAN);
        Summary {
            system,
            gbit_per_s: middle(&rates),
            min_gbit_per_s: rates.iter().copied().fold(f64::INFINITY, f64::min),
            max_gbit_per_s: rates.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            cpu_s_per_gb: middle(&of(&|r| r.cpu.as_secs_f64() / gb)),
            wall_s: middle(&of(&|r| r.wall.as_secs_f64())),
            cpu_s: middle(&of(&|r| r.cpu.as_secs_f64())),
            cores_busy: middle(&of(&|r| r.cpu.as_secs_f64() / r.wall.as_secs_f64())),
        }
    }
}

/// One system beside the reference.
#[derive(Debug, Clone)]
struct Comparison {
    system: &'static str,
    throughput_ratio: f64,
    cpu_per_gb_ratio: f64,
}

impl Comparison {
    /// The target: [`THROUGHPUT_TARGET`] times the reference's throughput,
    /// at no more than [`CPU_TARGET`] times its CPU per gigabyte.
    fn meets_target(&self) -> bool {
        self.throughput_ratio >= THROUGHPUT_TARGET && self.cpu_per_gb_ratio <= CPU_TARGET
    }
}

/// ltx with protection against ltx with the plain layer, when both ran.
fn protection_cost(summaries: &[Summary]) -> Option<Comparison> {
    cost(summaries, PROTECTED, PLAIN)
}

/// `system` against `base`, when both ran.
fn cost(summaries: &[Summary], system: &'static str, base: &str) -> Option<Comparison> {
    let of = summaries.iter().find(|s| s.system == system)?;
    let base = summaries.iter().find(|s| s.system == base)?;
    Some(Comparison {
        system,
        throughput_ratio: of.gbit_per_s / base.gbit_per_s,
        cpu_per_gb_ratio: of.cpu_s_per_gb / base.cpu_s_per_gb,
    })
}

/// Every other system against the reference, when both ran.
fn compare(summaries: &[Summary]) -> Vec<Comparison> {
    let Some(reference) = summaries.iter().find(|s| s.system == REFERENCE) else {
        return Vec::new();
    };
    summaries
        .iter()
        .filter(|s| s.system != REFERENCE)
        .map(|s| Comparison {
            system: s.system,
            throughput_ratio: s.gbit_per_s / reference.gbit_per_s,
            cpu_per_gb_ratio: s.cpu_s_per_gb / reference.cpu_s_per_gb,
        })
        .collect()
}

/// The systems named on the command line, in table order; those that run
/// by default when none is.
fn selected(names: &[String]) -> Vec<&'static System> {
    SYSTEMS
        .iter()
        .filter(|s| {
            if names.is_empty() {
                s.by_default
            } else {
                names.iter().any(|n| n == s.name)
            }
        })
        .collect()
}

/// Runs the benchmark and prints its figures.
pub(crate) fn run(args: &LoopbackArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; run with --release for meaningful figures");
    }
    let bytes = parse_size(&args.size).with_context(|| format!("--size {}", args.size))?;
    anyhow::ensure!(bytes > 0, "--size must be more than 0 bytes");
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    let systems = selected(&args.systems);
    let transfer = Transfer {
        bytes,
        pattern: Pattern::new(1),
    };
    let summaries = run_systems(&systems, args.runs, args.threads, &transfer)?;
    let comparisons = compare(&summaries);
    if args.json {
        print_json(args, bytes, &summaries, &comparisons);
    } else {
        print_table(args, bytes, &summaries, &comparisons);
    }
    Ok(())
}

/// Runs every system `runs` times and summarises each. Runs take turns
/// between systems, so that a slow spell on a shared machine falls on all of
/// them rather than on one.
fn run_systems(
    systems: &[&'static System],
    runs: usize,
    threads: Threads,
    transfer: &Transfer,
) -> anyhow::Result<Vec<Summary>> {
    let mut figures: Vec<Vec<RunFigures>> = vec![Vec::with_capacity(runs); systems.len()];
    for run in 1..=runs {
        for (system, figures) in systems.iter().zip(&mut figures) {
            let f = measure(system, threads, transfer)
                .with_context(|| format!("{} run {run} of {runs}", system.name))?;
            figures.push(f);
        }
    }
    Ok(systems
        .iter()
        .zip(&figures)
        .map(|(system, figures)| Summary::new(system.name, transfer.bytes, figures))
        .collect())
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn print_json(args: &LoopbackArgs, bytes: u64, summaries: &[Summary], comparisons: &[Comparison]) {
    for s in summaries {
        let line: Value = json!({
            "bench": "loopback",
            "system": s.system,
            "bytes": bytes,
            "runs": args.runs,
            "gbit_per_s": round3(s.gbit_per_s),
            "cpu_s_per_gb": round3(s.cpu_s_per_gb),
            "min_gbit_per_s": round3(s.min_gbit_per_s),
            "max_gbit_per_s": round3(s.max_gbit_per_s),
            "wall_s": round3(s.wall_s),
            "cpu_s": round3(s.cpu_s),
            "cores_busy": round3(s.cores_busy),
            "threads": args.threads.name(),
        });
        println!("{line}");
    }
    for c in comparisons {
        let line: Value = json!({
            "bench": "loopback",
            "compare": format!("{}/{REFERENCE}", c.system),
            "bytes": bytes,
            "runs": args.runs,
            "throughput_ratio": round3(c.throughput_ratio),
            "cpu_per_gb_ratio": round3(c.cpu_per_gb_ratio),
            "throughput_ratio_target": THROUGHPUT_TARGET,
            "cpu_per_gb_ratio_target": CPU_TARGET,
            "meets_target": c.meets_target(),
        });
        println!("{line}");
    }
    if let Some(c) = protection_cost(summaries) {
        let line: Value = json!({
            "bench": "loopback",
            "compare": format!("{PROTECTED}/{PLAIN}"),
            "bytes": bytes,
            "runs": args.runs,
            "throughput_ratio": round3(c.throughput_ratio),
            "cpu_per_gb_ratio": round3(c.cpu_per_gb_ratio),
            "throughput_ratio_target": PROTECTION_TARGET,
            "meets_target": c.throughput_ratio >= PROTECTION_TARGET,
        });
        println!("{line}");
    }
    if let Some(c) = cost(summaries, TRACED, PROTECTED) {
        let line: Value = json!({
            "bench": "loopback",
            "compare": format!("{TRACED}/{PROTECTED}"),
            "bytes": bytes,
            "runs": args.runs,
            "throughput_ratio": round3(c.throughput_ratio),
            "cpu_per_gb_ratio": round3(c.cpu_per_gb_ratio),
        });
        println!("{line}");
    }
}

fn print_table(args: &LoopbackArgs, bytes: u64, summaries: &[Summary], comparisons: &[Comparison]) {
    println!(
        "loopback: {bytes} bytes, medians of {} runs, threads {}",
        args.runs,
        args.threads.name()
    );
    println!(
        "{:<9} {:>8}  {:<17} {:>9} {:>8} {:>8} {:>6}",
        "system", "Gbit/s", "(min … max)", "CPU s/GB", "wall s", "CPU s", "cores"
    );
    for s in summaries {
        println!(
            "{:<9} {:>8.3}  {:<17} {:>9.3} {:>8.3} {:>8.3} {:>6.2}",
            s.system,
            s.gbit_per_s,
            format!("({:.2} … {:.2})", s.min_gbit_per_s, s.max_gbit_per_s),
            s.cpu_s_per_gb,
            s.wall_s,
            s.cpu_s,
            s.cores_busy
        );
    }
    for c in comparisons {
        println!(
            "{}/{REFERENCE}: {:.2}× the throughput (target ≥ {THROUGHPUT_TARGET}), {:.2}× \
             the CPU per GB (target ≤ {CPU_TARGET}): {}",
            c.system,
            c.throughput_ratio,
            c.cpu_per_gb_ratio,
            if c.meets_target() { "met" } else { "not met" }
        );
    }
    if let Some(c) = protection_cost(summaries) {
        println!(
            "{PROTECTED}/{PLAIN}: protection keeps {:.2}× the throughput (target ≥ \
             {PROTECTION_TARGET}) at {:.2}× the CPU per GB: {}",
            c.throughput_ratio,
            c.cpu_per_gb_ratio,
            if c.throughput_ratio >= PROTECTION_TARGET {
                "met"
            } else {
                "not met"
            }
        );
    }
    if let Some(c) = cost(summaries, TRACED, PROTECTED) {
        println!(
            "{TRACED}/{PROTECTED}: writing qlog traces keeps {:.2}× the throughput at {:.2}× the CPU per GB",
            c.throughput_ratio, c.cpu_per_gb_ratio
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every system carries a small transfer end to end, on both thread
    /// layouts, and the receiver's check accepts it: the path the benchmark
    /// times, without the timing.
    #[test]
    fn every_system_delivers_a_small_transfer_intact() {
        let transfer = Transfer {
            bytes: 4_000_000,
            pattern: Pattern::new(7),
        };
        for threads in [Threads::PerSide, Threads::Shared] {
            for system in SYSTEMS {
                let sides = Sides::new(threads).expect("runtimes");
                let measurement = (system.run)(&sides, &transfer)
                    .unwrap_or_else(|e| panic!("{} ({threads:?}): {e:#}", system.name));
                assert_eq!(
                    measurement.delivery,
                    Delivery {
                        bytes: transfer.bytes,
                        first_mismatch: None
                    },
                    "{} ({threads:?})",
                    system.name
                );
                assert!(measurement.end.at >= measurement.start.at);
                measure(system, threads, &transfer).expect("a checked run");
            }
        }
    }

    /// A system that delivers one byte less than it was asked to: the
    /// benchmark refuses the run instead of reporting a figure for it.
    #[test]
    fn a_short_delivery_is_an_error_not_a_figure() {
        fn one_byte_short(sides: &Sides, transfer: &Transfer) -> anyhow::Result<RunMeasurement> {
            let shorter = Transfer {
                bytes: transfer.bytes - 1,
                pattern: transfer.pattern.clone(),
            };
            tcp::run(sides, &shorter)
        }
        let short = System {
            name: "short",
            run: one_byte_short,
            by_default: false,
        };
        let transfer = Transfer {
            bytes: 100_000,
            pattern: Pattern::new(7),
        };
        let error = measure(&short, Threads::PerSide, &transfer).expect_err("a short run");
        assert!(
            format!("{error:#}").contains("received 99999 bytes of 100000"),
            "{error:#}"
        );
    }

    #[test]
    fn compare_puts_every_other_system_beside_quinn() {
        let summary = |system, gbit_per_s, cpu_s_per_gb| Summary {
            system,
            gbit_per_s,
            min_gbit_per_s: gbit_per_s,
            max_gbit_per_s: gbit_per_s,
            cpu_s_per_gb,
            wall_s: 1.0,
            cpu_s: 1.0,
            cores_busy: 1.0,
        };
        let summaries = [
            summary("quinn", 4.0, 1.0),
            summary("tcp", 8.0, 0.5),
            summary("other", 4.7, 0.5),
            summary("costly", 8.0, 0.71),
        ];
        let comparisons = compare(&summaries);
        assert_eq!(comparisons.len(), 3);
        assert_eq!(comparisons[0].system, "tcp");
        assert_eq!(comparisons[0].throughput_ratio, 2.0);
        assert_eq!(comparisons[0].cpu_per_gb_ratio, 0.5);
        assert!(comparisons[0].meets_target());
        assert!(!comparisons[1].meets_target(), "4.7 is below 1.2 × 4");
        assert!(!comparisons[2].meets_target(), "0.71 is above 0.7 × 1");
        assert!(compare(&summaries[1..]).is_empty());
    }
}
