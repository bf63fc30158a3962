//! `ltx-bench fidelity`: one scenario run by the simulator and by real
//! endpoints through the real-time shim, so that the simulator's figures
//! can be trusted for the real thing.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use ltx_cli::live::round;
use ltx_cli::realtime::{self, Silent};
use ltx_sim::scenario::Scenario;
use ltx_sim::units::{parse_duration, parse_fraction, parse_rate, parse_size};
use serde_json::json;

use super::measure::median;

/// The largest relative difference of completion times the benchmark
/// accepts.
const TOLERANCE: f64 = 0.15;

/// The scenario of `ltx-bench fidelity`; the default is the long-delay cell
/// of the seed matrix (50 Mbit/s, 600 ms, 10 MB, 10 % loss in bursts of 2).
#[derive(Debug, Args)]
pub(crate) struct FidelityArgs {
    /// Bottleneck rate.
    #[arg(long, default_value = "50mbit", value_parser = parse_rate)]
    rate: u64,
    /// Round-trip propagation delay.
    #[arg(long, default_value = "600ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Mean random loss on the data direction.
    #[arg(long, default_value = "10%", value_parser = parse_fraction)]
    loss: f64,
    /// Mean loss burst in packets.
    #[arg(long, default_value_t = 2.0)]
    burst: f64,
    /// Bytes per transfer.
    #[arg(long, default_value = "10MB", value_parser = parse_size)]
    size: u64,
    /// Seeds to run (1, 2, …), each in both worlds; medians are compared.
    #[arg(long, default_value_t = 3)]
    runs: u64,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `ltx-bench fidelity`.
pub(crate) fn run(args: &FidelityArgs) -> anyhow::Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let mut simulated = Vec::new();
    let mut real = Vec::new();
    for seed in 1..=args.runs {
        let scenario = Scenario {
            rate_bps: args.rate,
            rtt: args.rtt,
            loss: args.loss,
            burst: args.burst,
            size: args.size,
            seed,
            ..Scenario::default()
        };
        let sim = scenario.run().context("the simulator")?;
        let Some(sim_s) = sim.completion_s.filter(|_| sim.verified) else {
            bail!("seed {seed}: the simulated transfer did not complete intact");
        };
        let live = realtime::run(&scenario, Arc::new(Silent), None).context("the real-time run")?;
        if !live.verified {
            bail!("seed {seed}: the real-time transfer delivered wrong bytes");
        }
        let line = json!({
            "bench": "fidelity",
            "seed": seed,
            "ideal_s": round(live.ideal_s, 4),
            "sim_s": round(sim_s, 4),
            "realtime_s": round(live.completion_s, 4),
            "realtime_over_sim": round(live.completion_s / sim_s, 4),
            "sim_overhead": round(sim.overhead, 4),
            "realtime_overhead": round(live.overhead(), 4),
        });
        if args.json {
            println!("{line}");
        } else {
            println!(
                "seed {seed}: simulated {sim_s:.3} s, real time {:.3} s (×{:.3}); overhead {:.3} vs {:.3}",
                live.completion_s,
                live.completion_s / sim_s,
                sim.overhead,
                live.overhead()
            );
        }
        simulated.push(sim_s);
        real.push(live.completion_s);
    }
    let sim_median = median(&simulated).expect("at least one run");
    let real_median = median(&real).expect("at least one run");
    let ratio = real_median / sim_median;
    let within = (ratio - 1.0).abs() <= TOLERANCE;
    if args.json {
        println!(
            "{}",
            json!({
                "bench": "fidelity",
                "runs": args.runs,
                "median_sim_s": round(sim_median, 4),
                "median_realtime_s": round(real_median, 4),
                "realtime_over_sim": round(ratio, 4),
                "tolerance": TOLERANCE,
                "within_tolerance": within,
            })
        );
    } else {
        println!(
            "median: simulated {sim_median:.3} s, real time {real_median:.3} s: ×{ratio:.3} ({} the ±{:.0} % the simulator is held to)",
            if within { "within" } else { "OUTSIDE" },
            TOLERANCE * 100.0
        );
    }
    Ok(())
}
