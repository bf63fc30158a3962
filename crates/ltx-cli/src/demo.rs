//! `ltx demo`: a transfer over an emulated GEO satellite path with
//! interference, in one process, with no root and no configuration.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use ltx::ConnectionStats;
use ltx_cli::live::{describe, human_bytes, round, Display, FileLine, Side};
use ltx_cli::qlog::prepare_dir;
use ltx_cli::realtime::{self, Progress, RealtimeResult};
use ltx_presets::Profile;
use ltx_sim::scenario::Scenario;
use ltx_sim::units::{parse_duration, parse_fraction, parse_rate, parse_size};
use serde_json::json;

/// The path and payload of `ltx demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Bottleneck rate (e.g. 50mbit).
    #[arg(long, default_value = "50mbit", value_parser = parse_rate)]
    rate: u64,
    /// Round-trip propagation delay (e.g. 600ms).
    #[arg(long, default_value = "600ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Mean random loss on the data direction (e.g. 10% or 0.1).
    #[arg(long, default_value = "10%", value_parser = parse_fraction)]
    loss: f64,
    /// Mean loss burst in packets (Gilbert–Elliott); 1 is uncorrelated.
    #[arg(long, default_value_t = 2.0)]
    burst: f64,
    /// Bytes to transfer (e.g. 20MB).
    #[arg(long, default_value = "20MB", value_parser = parse_size)]
    size: u64,
    /// The seed of the payload and of the path's randomness.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The controller and redundancy preset: ltx (default), lt-tcp, ccp,
    /// dfec, ctcp, fectcp, newreno, cubic or bbr.
    #[arg(long, default_value = "ltx")]
    profile: Profile,
    /// After the real transfer, the same path in the simulator with these
    /// presets beside ltx, for comparison (comma-separated; `none` for no
    /// comparison). Virtual time: a few seconds of CPU at most.
    #[arg(long, value_delimiter = ',', default_value = "cubic,bbr", value_parser = parse_compare)]
    compare: Vec<Option<Profile>>,
    /// Print one JSON object instead of the progress bar and summary.
    #[arg(long)]
    json: bool,
    /// Write each end's trace into this directory as a qlog file
    /// (`.sqlog`), which qvis opens; the directory is made if needed.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
}

/// A preset of `--compare`, or `none`.
fn parse_compare(input: &str) -> Result<Option<Profile>, String> {
    if input.trim().eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    input
        .parse()
        .map(Some)
        .map_err(|e: ltx_presets::UnknownProfile| e.to_string())
}

/// One preset's transfer over the demo's path in the simulator.
struct Simulated {
    profile: Profile,
    /// Seconds to the last byte, if it finished before the run's deadline.
    completion_s: Option<f64>,
    /// Seconds simulated, and the share of the payload delivered by then.
    simulated_s: f64,
    delivered: f64,
}

impl DemoArgs {
    /// The presets to compare with: ltx itself first (the same path in
    /// virtual time, to set the others against), then `--compare`'s.
    fn compared(&self) -> Vec<Profile> {
        let others: Vec<Profile> = self.compare.iter().flatten().copied().collect();
        if others.is_empty() {
            return Vec::new();
        }
        let mut all = vec![self.profile];
        all.extend(others.into_iter().filter(|p| *p != self.profile));
        all
    }
}

/// Runs `scenario` in the simulator under each of `profiles`.
fn simulate(scenario: &Scenario, profiles: &[Profile]) -> Vec<Simulated> {
    profiles
        .iter()
        .filter_map(|&profile| {
            let run = Scenario {
                transport: profile.transport_config(),
                ..scenario.clone()
            };
            let result = run.run().ok()?;
            let flow = result.flows.first()?;
            Some(Simulated {
                profile,
                completion_s: result.completion_s.filter(|_| result.verified),
                simulated_s: result.simulated_s,
                delivered: flow.delivered as f64 / scenario.size.max(1) as f64,
            })
        })
        .collect()
}

impl DemoArgs {
    /// The scenario the demo runs, checked.
    fn scenario(&self) -> anyhow::Result<Scenario> {
        if !self.burst.is_finite() || self.burst < 1.0 {
            bail!(
                "--burst {}: the mean burst length must be at least 1 packet",
                self.burst
            );
        }
        if self.loss >= 1.0 {
            bail!("--loss must be below 100%: nothing crosses a path that loses everything");
        }
        if self.size == 0 {
            bail!("--size must be at least 1 byte");
        }
        if self.size > 4 << 30 {
            bail!("--size is at most 4GB: the demo holds its payload in memory");
        }
        Ok(Scenario {
            rate_bps: self.rate,
            rtt: self.rtt,
            loss: self.loss,
            burst: self.burst,
            size: self.size,
            seed: self.seed,
            transport: self.profile.transport_config(),
            ..Scenario::default()
        })
    }
}

/// The payload's line, with the sender's live estimates.
struct Bar {
    line: Mutex<Option<FileLine>>,
    total: u64,
}

impl Progress for Bar {
    fn update(&self, received: u64, sender: &ConnectionStats) {
        let mut line = self.line.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(line) = line.as_mut() {
            line.set_detail(describe(sender, Side::Sending));
            line.progress(Instant::now(), received, self.total);
        }
    }
}

/// Runs `ltx demo`.
pub(crate) fn run(args: &DemoArgs) -> anyhow::Result<()> {
    let scenario = args.scenario()?;
    let display = Display::new(args.json);
    if !args.json {
        println!(
            "ltx demo: {} over an emulated path of {} Mbit/s, {} ms round trip, {:.1} % loss in bursts of {} \
             (a GEO satellite link with interference, by default), on loopback",
            human_bytes(scenario.size),
            scenario.rate_bps as f64 / 1e6,
            scenario.rtt.as_millis(),
            scenario.loss * 100.0,
            scenario.burst
        );
    }
    let bar = Arc::new(Bar {
        line: Mutex::new(Some(display.file(Some("payload"), scenario.size))),
        total: scenario.size,
    });
    let result = match args.qlog.as_deref().map(prepare_dir).transpose()? {
        Some(dir) => realtime::run(&scenario, bar.clone(), Some(&dir)),
        None => realtime::run(&scenario, bar.clone(), None),
    };
    let line = bar.line.lock().unwrap_or_else(|e| e.into_inner()).take();
    let result = result?;
    if let Some(line) = line {
        let took = Duration::from_secs_f64(result.completion_s);
        line.finish(Instant::now(), Some((result.bytes, took)));
    }
    let compared = simulate(&scenario, &args.compared());
    if args.json {
        let mut value = result_json(&scenario, &result);
        value["compare"] = compared_json(&compared, result.ideal_s);
        println!("{value}");
    } else {
        print_summary(&scenario, &result);
        print_comparison(&compared, result.ideal_s);
    }
    if !result.verified {
        bail!("the received bytes differ from the sent ones");
    }
    Ok(())
}

fn result_json(scenario: &Scenario, result: &RealtimeResult) -> serde_json::Value {
    json!({
        "completion_s": round(result.completion_s, 4),
        "ideal_s": round(result.ideal_s, 4),
        "ratio": round(result.ratio(), 4),
        "goodput_bps": result.goodput_bps().round(),
        "efficiency": round(result.efficiency(scenario), 4),
        "overhead": round(result.overhead(), 4),
        "redundancy": round(result.redundancy(), 4),
        "loss_seen": round(result.medium_loss(), 5),
        "loss_estimate": round(result.sender.loss_rate, 5),
        "symbols_repaired": result.sender.symbols_repaired,
        "bytes": result.bytes,
        "verified": result.verified,
        "seed": scenario.seed,
    })
}

fn print_summary(scenario: &Scenario, result: &RealtimeResult) {
    let capacity = scenario.rate_bps as f64 * (1.0 - scenario.loss);
    println!(
        "{} in {:.2} s: goodput {:.1} Mbit/s, {:.0} % of the path's erasure-channel capacity \
         ({:.1} Mbit/s = {:.0} Mbit/s × (1 − {:.1} % loss))",
        if result.verified {
            "delivered and verified (BLAKE3)"
        } else {
            "DELIVERED WRONG BYTES"
        },
        result.completion_s,
        result.goodput_bps() / 1e6,
        result.efficiency(scenario) * 100.0,
        capacity / 1e6,
        scenario.rate_bps as f64 / 1e6,
        scenario.loss * 100.0,
    );
    println!(
        "ideal time T* {:.2} s (handshake, the bytes at capacity, the last byte's way): T/T* = {:.2}",
        result.ideal_s,
        result.ratio()
    );
    println!(
        "the path lost {:.1} % of the data packets; ltx sent {:.1} % redundancy \
         ({} repair symbols for {} source symbols), {:.3} bytes on the wire per byte delivered",
        result.medium_loss() * 100.0,
        result.redundancy() * 100.0,
        result.sender.repair_symbols_sent,
        result.sender.source_symbols_sent,
        result.overhead()
    );
}

fn compared_json(compared: &[Simulated], ideal_s: f64) -> serde_json::Value {
    compared
        .iter()
        .map(|run| {
            json!({
                "profile": run.profile.name(),
                "completion_s": run.completion_s.map(|t| round(t, 4)),
                "ratio": run.completion_s.map(|t| round(t / ideal_s, 4)),
                "delivered": round(run.delivered, 4),
                "simulated_s": round(run.simulated_s, 3),
            })
        })
        .collect()
}

/// The same path in the simulator, ltx beside the presets of `--compare`:
/// why ltx exists, in a few lines.
fn print_comparison(compared: &[Simulated], ideal_s: f64) {
    if compared.is_empty() {
        return;
    }
    println!("the same path in the simulator (virtual time):");
    for run in compared {
        match run.completion_s {
            Some(t) => println!(
                "  {:<8} {t:>7.2} s  (T/T* {:.2})",
                run.profile.name(),
                t / ideal_s
            ),
            None => println!(
                "  {:<8} did not finish: {:.0} % delivered after {:.0} s",
                run.profile.name(),
                run.delivered * 100.0,
                run.simulated_s
            ),
        }
    }
}
