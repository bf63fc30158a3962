//! `ltx sim …`: the deterministic simulator from the command line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use ltx_cli::live::round;
use ltx_cli::qlog::{prepare_dir, write_simulated};
use ltx_cli::repair_args::RepairArgs;
use ltx_cli::settings::transport_for;
use ltx_presets::Profile;
use ltx_proto::congestion::SavedPath;
use ltx_qlog::{QlogWriter, Vantage};
use ltx_sim::scenario::{Scenario, ScenarioResult};
use ltx_sim::units::{
    parse_duration, parse_fraction, parse_queue, parse_rate, parse_size, QueueSpec,
};
use ltx_sim::Jitter;
use serde_json::{json, Map, Value};

/// What `ltx sim` can do.
#[derive(Debug, Subcommand)]
pub(crate) enum SimCommand {
    /// Simulate one transfer (or N flows on one bottleneck) and print its
    /// figures.
    Run(RunArgs),
    /// Run a scenario matrix and print it as a table.
    Matrix(MatrixArgs),
    /// Run many seeded transfers over random hostile paths (loss, bursts,
    /// reordering, duplication, corruption, outages); fail if any reads
    /// wrong data or hangs.
    Soak(crate::sim_soak::SoakArgs),
}

/// The path and transfer of `ltx sim run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Bottleneck rate (e.g. 50mbit, 1gbit).
    #[arg(long, default_value = "50mbit", value_parser = parse_rate)]
    rate: u64,
    /// Round-trip propagation delay (e.g. 600ms).
    #[arg(long, default_value = "600ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Mean random loss on the data direction (e.g. 10% or 0.1).
    #[arg(long, default_value = "0", value_parser = parse_fraction)]
    loss: f64,
    /// Mean loss burst in packets (Gilbert–Elliott); 1 is uncorrelated.
    #[arg(long, default_value_t = 1.0)]
    burst: f64,
    /// Bytes per flow (e.g. 10MB, 100MiB).
    #[arg(long, default_value = "10MB", value_parser = parse_size)]
    size: u64,
    /// The seed every random choice derives from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Flows sharing the bottleneck, each reaching it through access links
    /// of its own at ten times its rate.
    #[arg(long, default_value_t = 1)]
    flows: usize,
    /// The controller and redundancy preset of every flow: ltx (default),
    /// lt-tcp, ccp, dfec, ctcp, fectcp, newreno, cubic or bbr.
    #[arg(long, default_value = "ltx", conflicts_with = "mix")]
    profile: Profile,
    /// Presets of the flows, comma-separated, cycled over them (e.g.
    /// `--flows 4 --mix ltx,cubic`: flows 1 and 3 run ltx, 2 and 4 cubic).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    mix: Vec<Profile>,
    /// Bottleneck queue (e.g. 1bdp, 100pkt, 64KB, unlimited).
    #[arg(long, default_value = "1bdp", value_parser = parse_queue)]
    queue: QueueSpec,
    /// Mark ECN at the bottleneck (CoDel) instead of only dropping.
    #[arg(long)]
    ecn: bool,
    /// Delay jitter on both directions, in per cent of the round trip
    /// (e.g. 10): each packet is delayed by a further uniform draw of up
    /// to this and held behind the one before it, as Wi-Fi and cellular
    /// links do.
    #[arg(long, value_parser = parse_jitter)]
    jitter: Option<f64>,
    #[command(flatten)]
    repair: RepairArgs,
    /// Start every flow as careful resume does after an earlier connection
    /// measured this path: from its bottleneck rate and round trip, instead
    /// of measuring them (`ltx send` does so with the path it saved).
    #[arg(long)]
    resume: bool,
    /// With --resume, the bottleneck rate the earlier connection saved, when
    /// the path has changed since (e.g. 10mbit on a 50mbit path that got
    /// faster) [default: the path's rate].
    #[arg(long, requires = "resume", value_parser = parse_rate)]
    saved_rate: Option<u64>,
    /// Send the first bytes in the first flight, as 0-RTT early data (as
    /// `ltx send` does): both ends are secured, and T* becomes T*₀, a
    /// one-way delay and the bytes at the erasure capacity.
    #[arg(long)]
    early_data: bool,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    json: bool,
    /// Write the first flow's trace, at the sender and at the receiver,
    /// into this directory as qlog files (`sender.sqlog`,
    /// `receiver.sqlog`; simulated time), which qvis opens.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Draw the first sender's trace into this picture (`.png` or `.svg`),
    /// as `ltx plot` draws a qlog file.
    #[arg(long, value_name = "OUT")]
    plot: Option<PathBuf>,
}

/// `ltx sim matrix`.
#[derive(Debug, Args)]
pub(crate) struct MatrixArgs {
    /// Which matrix: `seed` (the two LT-TCP tables of seed 000).
    name: String,
    /// Bytes per transfer in the long-delay table (the seed used 10MB).
    #[arg(long, default_value = "10MB", value_parser = parse_size)]
    size: u64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The controller and redundancy preset (see `ltx sim run --help`).
    #[arg(long, default_value = "ltx")]
    profile: Profile,
    /// Print one JSON object per cell instead of tables.
    #[arg(long)]
    json: bool,
}

/// Runs an `ltx sim` command.
pub(crate) fn run(command: SimCommand) -> anyhow::Result<()> {
    match command {
        SimCommand::Run(args) => run_one(&args),
        SimCommand::Matrix(args) => run_matrix(&args),
        SimCommand::Soak(args) => crate::sim_soak::run(&args),
    }
}

/// A jitter in per cent of the round trip, from 0 to 100.
fn parse_jitter(text: &str) -> Result<f64, String> {
    let percent: f64 = text
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{text:?} is not a number of per cent"))?;
    if !(percent.is_finite() && (0.0..=100.0).contains(&percent)) {
        return Err(format!(
            "{text}: a percentage of the round trip from 0 to 100"
        ));
    }
    Ok(percent)
}

fn check_burst(burst: f64) -> anyhow::Result<()> {
    if !burst.is_finite() || burst < 1.0 {
        bail!("--burst {burst}: the mean burst length must be at least 1 packet");
    }
    Ok(())
}

fn run_one(args: &RunArgs) -> anyhow::Result<()> {
    check_burst(args.burst)?;
    if args.flows == 0 {
        bail!("--flows must be at least 1");
    }
    if args.mix.len() > args.flows {
        bail!(
            "--mix names {} profiles but --flows is {}: each flow runs one profile",
            args.mix.len(),
            args.flows
        );
    }
    if args.size == 0 {
        bail!("--size must be at least 1 byte: an empty transfer has no goodput or overhead to measure");
    }
    if args.loss >= 1.0 {
        bail!("--loss must be below 100%: nothing crosses a path that loses everything");
    }
    let mut scenario = Scenario {
        rate_bps: args.rate,
        rtt: args.rtt,
        loss: args.loss,
        burst: args.burst,
        size: args.size,
        seed: args.seed,
        flows: args.flows,
        queue: args.queue,
        ecn: args.ecn,
        trace: args.qlog.is_some() || args.plot.is_some(),
        transport: transport_for(args.profile, &args.repair, None)?,
        per_flow: args
            .mix
            .iter()
            .map(|p| transport_for(*p, &args.repair, None))
            .collect::<anyhow::Result<_>>()?,
        ..Scenario::default()
    };
    scenario.faults.jitter = args.jitter.map(|percent| Jitter {
        max: args.rtt.mul_f64(percent / 100.0),
        reorder: false,
    });
    if args.early_data {
        scenario.transport.set_early_data(true);
        for transport in &mut scenario.per_flow {
            transport.set_early_data(true);
        }
    }
    if args.resume {
        let saved = SavedPath {
            rate: (args.saved_rate.unwrap_or(args.rate) / 8).max(1),
            min_rtt: args.rtt,
        };
        scenario.transport.set_saved_path(Some(saved));
        for transport in &mut scenario.per_flow {
            transport.set_saved_path(Some(saved));
        }
    }
    let profiles = flow_profiles(args);
    let started = std::time::Instant::now();
    let result = scenario.run().context("building the scenario")?;
    let cpu_s = started.elapsed().as_secs_f64();
    if let Some(dir) = &args.qlog {
        write_qlog(dir, &result)?;
    }
    if let Some(out) = &args.plot {
        plot_sender(out, &result)?;
    }
    if args.json {
        let mut object = result_json(&scenario, &result, &profiles);
        object.insert("seed".into(), json!(args.seed));
        object.insert("wall_s".into(), json!(round(cpu_s, 3)));
        println!("{}", Value::Object(object));
    } else {
        print_summary(&scenario, &result, &profiles, cpu_s);
    }
    if !result.verified {
        let why: Vec<&str> = result
            .flows
            .iter()
            .filter_map(|f| f.error.as_deref())
            .collect();
        if why.is_empty() {
            bail!("the transfer was not delivered intact (seed {})", args.seed);
        }
        bail!(
            "the transfer was not delivered (seed {}): {}",
            args.seed,
            why.join("; ")
        );
    }
    Ok(())
}

/// Draws the first sender's trace into `out`, through its qlog form.
fn plot_sender(out: &Path, result: &ScenarioResult) -> anyhow::Result<()> {
    let mut writer = QlogWriter::new(Vec::new(), "simulated sender", Vantage::Client, 0.0)?;
    for (at, event) in &result.trace {
        writer.event(Duration::from_secs_f64(at.max(0.0)), event)?;
    }
    let trace = ltx_plot::Trace::parse(&writer.finish()?)?;
    crate::plot::draw(&trace, out)
}

/// The profile each flow of `args` runs.
fn flow_profiles(args: &RunArgs) -> Vec<Profile> {
    (0..args.flows)
        .map(|flow| match args.mix.len() {
            0 => args.profile,
            n => args.mix[flow % n],
        })
        .collect()
}

/// Writes the first flow's two traces as qlog files into `dir`.
fn write_qlog(dir: &Path, result: &ScenarioResult) -> anyhow::Result<()> {
    let dir = prepare_dir(dir)?;
    let sender = result.trace.iter().map(|(at, event)| (*at, event));
    write_simulated(&dir, "sender", Vantage::Client, sender)?;
    let receiver = result.receiver_trace.iter().map(|(at, event)| (*at, event));
    write_simulated(&dir, "receiver", Vantage::Server, receiver)?;
    Ok(())
}

fn result_json(
    scenario: &Scenario,
    result: &ScenarioResult,
    profiles: &[Profile],
) -> Map<String, Value> {
    let mut o = Map::new();
    let names: Vec<&str> = profiles.iter().map(|p| p.name()).collect();
    o.insert("profile".into(), json!(names.join(",")));
    o.insert(
        "completion_s".into(),
        json!(result.completion_s.map(|c| round(c, 4))),
    );
    o.insert("ideal_s".into(), json!(round(result.ideal_s, 4)));
    o.insert("ratio".into(), json!(result.ratio.map(|r| round(r, 4))));
    o.insert("goodput_bps".into(), json!(result.goodput_bps.round()));
    o.insert("efficiency".into(), json!(round(result.efficiency, 4)));
    o.insert("overhead".into(), json!(round(result.overhead, 4)));
    o.insert(
        "overhead_total".into(),
        json!(round(result.overhead_total, 4)),
    );
    o.insert("delay_p50_ms".into(), json!(round(result.delay_p50_ms, 2)));
    o.insert("delay_p99_ms".into(), json!(round(result.delay_p99_ms, 2)));
    o.insert(
        "queue_delay_p95_ms".into(),
        json!(round(result.queue_delay_p95_ms, 2)),
    );
    o.insert("queue_loss".into(), json!(round(result.queue_loss, 5)));
    o.insert("random_loss".into(), json!(round(result.random_loss, 5)));
    o.insert("verified".into(), json!(result.verified));
    if let Some(j) = result.jain {
        o.insert("jain".into(), json!(round(j, 4)));
    }
    if result.flows.len() > 1 || result.flows.iter().any(|f| f.error.is_some()) {
        let fair = scenario.fair_share_bps();
        let flows: Vec<Value> = result
            .flows
            .iter()
            .zip(profiles)
            .map(|(f, profile)| {
                json!({
                    "profile": profile.name(),
                    "completion_s": f.completion_s.map(|c| round(c, 4)),
                    "goodput_bps": f.goodput_bps.round(),
                    "share": round(f.goodput_bps / fair, 4),
                    "overhead": round(f.overhead, 4),
                    "verified": f.verified,
                    "error": f.error,
                })
            })
            .collect();
        o.insert("flows".into(), json!(flows));
    }
    let repaired: u64 = result.flows.iter().map(|f| f.symbols_repaired).sum();
    let repairs: u64 = result.flows.iter().map(|f| f.repair_sent).sum();
    let sources: u64 = result.flows.iter().map(|f| f.source_sent).sum();
    o.insert("source_symbols".into(), json!(sources));
    o.insert("repair_symbols".into(), json!(repairs));
    o.insert("symbols_repaired".into(), json!(repaired));
    if let Some(f) = result.flows.first() {
        o.insert("repairs".into(), json!({"proactive": f.repair_kinds[0], "reactive": f.repair_kinds[1], "tail": f.repair_kinds[2], "probe": f.repair_kinds[3], "stale": f.repair_kinds[4], "redundant": f.repair_kinds[5]}));
    }
    o.insert("simulated_s".into(), json!(round(result.simulated_s, 3)));
    o
}

fn print_summary(scenario: &Scenario, result: &ScenarioResult, profiles: &[Profile], cpu_s: f64) {
    let names: Vec<&str> = profiles.iter().map(|p| p.name()).collect();
    println!(
        "path: {} Mbit/s, RTT {} ms, loss {:.1} % (burst {}), {} flow(s) ({}), {} bytes each",
        scenario.rate_bps as f64 / 1e6,
        scenario.rtt.as_millis(),
        scenario.loss * 100.0,
        scenario.burst,
        scenario.flows,
        names.join(","),
        scenario.size
    );
    match (result.completion_s, result.ratio) {
        (Some(c), Some(r)) => println!(
            "completed in {c:.3} s (ideal {:.3} s, T/T* = {r:.3}), goodput {:.2} Mbit/s, efficiency {:.3}",
            result.ideal_s,
            result.goodput_bps / 1e6,
            result.efficiency
        ),
        _ => println!("did not complete (ideal {:.3} s)", result.ideal_s),
    }
    println!(
        "overhead {:.4} (both directions {:.4}); delivery delay p50 {:.1} ms, p99 {:.1} ms",
        result.overhead, result.overhead_total, result.delay_p50_ms, result.delay_p99_ms
    );
    println!(
        "bottleneck: queueing delay p95 {:.1} ms, queue loss {:.3} %",
        result.queue_delay_p95_ms,
        result.queue_loss * 100.0
    );
    if let Some(j) = result.jain {
        println!("jain {j:.3}");
    }
    if result.flows.len() > 1 {
        let fair = scenario.fair_share_bps();
        for (i, (flow, profile)) in result.flows.iter().zip(profiles).enumerate() {
            println!(
                "flow {}: {profile}, goodput {:.2} Mbit/s, share {:.3}",
                i + 1,
                flow.goodput_bps / 1e6,
                flow.goodput_bps / fair
            );
        }
    }
    println!(
        "verified: {}; simulated {:.1} s in {:.2} s of CPU",
        result.verified, result.simulated_s, cpu_s
    );
}

/// One table of the seed matrix.
struct Table {
    title: &'static str,
    rate_bps: u64,
    rtt: Duration,
    losses: &'static [f64],
}

const PATTERNS: [(f64, &str); 4] = [
    (1.0, "uncorrelated"),
    (2.0, "E=2"),
    (5.0, "E=5"),
    (10.0, "E=10"),
];

fn run_matrix(args: &MatrixArgs) -> anyhow::Result<()> {
    if args.size == 0 {
        bail!("--size must be at least 1 byte");
    }
    if args.name != "seed" {
        bail!(
            "unknown matrix '{}': the one matrix is 'seed' (the two LT-TCP tables of seed 000)",
            args.name
        );
    }
    let tables = [
        Table {
            title: "Correlated erasures: 100 Mbit/s, 20 ms RTT, 10 MB",
            rate_bps: 100_000_000,
            rtt: Duration::from_millis(20),
            losses: &[0.0, 0.05, 0.10, 0.20],
        },
        Table {
            title: "Long delay: 50 Mbit/s, 600 ms RTT",
            rate_bps: 50_000_000,
            rtt: Duration::from_millis(600),
            losses: &[0.0, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50],
        },
    ];
    if !args.json {
        println!("profile: {}", args.profile);
    }
    let mut all_verified = true;
    for (index, table) in tables.iter().enumerate() {
        let size = if index == 1 { args.size } else { 10_000_000 };
        if !args.json {
            println!(
                "{} ({} bytes): transfer time in seconds (T/T*)",
                table.title, size
            );
            print!("{:<8}", "loss");
            for (_, name) in PATTERNS {
                print!("{name:>18}");
            }
            println!();
        }
        for &loss in table.losses {
            if !args.json {
                print!("{:<8}", format!("{:.0}%", loss * 100.0));
            }
            for (burst, name) in PATTERNS {
                if loss == 0.0 && burst > 1.0 {
                    if !args.json {
                        print!("{:>18}", "N/A");
                    }
                    continue;
                }
                let scenario = Scenario {
                    rate_bps: table.rate_bps,
                    rtt: table.rtt,
                    loss,
                    burst,
                    size,
                    seed: args.seed,
                    transport: args.profile.transport_config(),
                    ..Scenario::default()
                };
                let result = scenario.run()?;
                all_verified &= result.verified;
                if args.json {
                    let mut o = result_json(&scenario, &result, &[args.profile]);
                    o.insert("table".into(), json!(table.title));
                    o.insert("loss".into(), json!(loss));
                    o.insert("pattern".into(), json!(name));
                    o.insert("size".into(), json!(size));
                    println!("{}", Value::Object(o));
                } else {
                    let cell = match (result.completion_s, result.ratio, result.verified) {
                        (Some(c), Some(r), true) => format!("{c:.2} ({r:.2})"),
                        (Some(c), Some(r), false) => format!("{c:.2} ({r:.2}) BAD"),
                        _ => "∞".to_owned(),
                    };
                    print!("{cell:>18}");
                    let _ = std::io::stdout().flush();
                }
            }
            if !args.json {
                println!();
            }
        }
        if !args.json {
            println!();
        }
    }
    if !all_verified {
        bail!("a transfer was not delivered intact");
    }
    Ok(())
}
