//! `ltx-bench frontier`: wire bytes against delivery delay as the price of
//! waiting for feedback goes from nothing to a second, with and without an
//! expected loss rate, on the seed tables' two paths, in the simulator.
//!
//! Each point is the median over the seeds of wire bytes per byte
//! delivered, against the loss each run's channel dealt (overhead ×
//! (1 − q)), and of the delivery delay's 99th percentile; a setting's
//! worst seed is what a user on that path may meet, so the table gives it
//! too, and how many seeds kept the p99 within one round trip.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use ltx_sim::scenario::Scenario;
use ltx_sim::units::{parse_duration, parse_fraction};
use serde_json::json;

use crate::plots::{self, Frame, Series};

/// Options of `ltx-bench frontier`.
#[derive(Debug, Args)]
pub(crate) struct FrontierArgs {
    /// Random loss on the data direction (e.g. 20%).
    #[arg(long, default_value = "20%", value_parser = parse_fraction)]
    loss: f64,
    /// Seeds per setting, 1 to N.
    #[arg(long, default_value_t = 8)]
    seeds: u64,
    /// Prices of waiting for feedback (`--delay-per-percent`), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0ms,10ms,25ms,50ms,75ms,150ms,300ms,1s",
        value_parser = parse_duration
    )]
    prices: Vec<Duration>,
    /// Expected loss rates (`--expect-loss`) to run each price with,
    /// comma-separated; 0 runs without one.
    #[arg(long, value_delimiter = ',', default_value = "0,10%", value_parser = parse_fraction)]
    expect_loss: Vec<f64>,
    /// Where to write table.md, runs.csv and the plot (frontier.svg,
    /// frontier.png); printed JSON lines only without it.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// One of the seed tables' paths.
#[derive(Debug, Clone, Copy)]
struct PathSpec {
    name: &'static str,
    rate_bps: u64,
    rtt: Duration,
    size: u64,
}

/// The long-delay and the correlated tables' paths and transfer sizes.
const PATHS: [PathSpec; 2] = [
    PathSpec {
        name: "50 Mbit/s, 600 ms, 10 MB",
        rate_bps: 50_000_000,
        rtt: Duration::from_millis(600),
        size: 10_000_000,
    },
    PathSpec {
        name: "100 Mbit/s, 20 ms, 5 MB",
        rate_bps: 100_000_000,
        rtt: Duration::from_millis(20),
        size: 5_000_000,
    },
];

/// One run's figures.
#[derive(Debug, Clone, Copy)]
struct Run {
    bytes: f64,
    p99_ms: f64,
    ratio: f64,
}

/// Runs the sweep.
pub(crate) fn run(args: &FrontierArgs) -> anyhow::Result<()> {
    if args.seeds == 0 || args.prices.is_empty() || args.expect_loss.is_empty() {
        anyhow::bail!("--seeds, --prices and --expect-loss need at least one value each");
    }
    let mut csv = String::from("path,expect_loss,price_ms,seed,bytes,delay_p99_ms,ratio\n");
    let mut table = format!(
        "Loss {:.0} % uncorrelated, seeds 1–{}; bytes: wire bytes per byte delivered × (1 − q), \
         q the loss each run's channel dealt; p99: delivery delay's 99th percentile less the \
         one-way delay.\n\n\
         | path | expected loss | price | bytes, median (worst) | p99 ms, median (worst) | p99 ≤ 1 RTT | T/T*, median (worst) |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
        args.loss * 100.0,
        args.seeds
    );
    let mut series = Series::new();
    let mut names: Vec<&'static str> = Vec::new();
    for path in PATHS {
        for &expect in &args.expect_loss {
            // The plot names its series by `&'static str`; these few
            // labels live for the run.
            let label: &'static str = Box::leak(
                format!(
                    "{}{}",
                    if path.rtt > Duration::from_millis(100) {
                        "600 ms"
                    } else {
                        "20 ms"
                    },
                    if expect > 0.0 {
                        format!(", expect {:.0} %", expect * 100.0)
                    } else {
                        String::new()
                    }
                )
                .into_boxed_str(),
            );
            names.push(label);
            for &price in &args.prices {
                let mut runs = Vec::new();
                for seed in 1..=args.seeds {
                    let run = simulate(path, args.loss, price, expect, seed)?;
                    writeln!(
                        csv,
                        "{},{},{},{seed},{:.4},{:.2},{:.4}",
                        path.name,
                        expect,
                        price.as_millis(),
                        run.bytes,
                        run.p99_ms,
                        run.ratio
                    )?;
                    runs.push(run);
                }
                let bytes = median_and_max(runs.iter().map(|r| r.bytes));
                let p99 = median_and_max(runs.iter().map(|r| r.p99_ms));
                let ratio = median_and_max(runs.iter().map(|r| r.ratio));
                let rtt_ms = path.rtt.as_secs_f64() * 1e3;
                let within = runs.iter().filter(|r| r.p99_ms <= rtt_ms).count();
                println!(
                    "{}",
                    json!({
                        "path": path.name,
                        "loss": args.loss,
                        "expect_loss": expect,
                        "price_ms": price.as_millis() as u64,
                        "seeds": args.seeds,
                        "bytes_median": round(bytes.0),
                        "bytes_worst": round(bytes.1),
                        "delay_p99_ms_median": round(p99.0),
                        "delay_p99_ms_worst": round(p99.1),
                        "p99_within_rtt": within,
                        "ratio_median": round(ratio.0),
                        "ratio_worst": round(ratio.1),
                    })
                );
                writeln!(
                    table,
                    "| {} | {} | {} ms | {:.4} ({:.4}) | {:.0} ({:.0}) | {within} of {} | {:.3} ({:.3}) |",
                    path.name,
                    if expect > 0.0 { format!("{:.0} %", expect * 100.0) } else { "none".into() },
                    price.as_millis(),
                    bytes.0,
                    bytes.1,
                    p99.0,
                    p99.1,
                    args.seeds,
                    ratio.0,
                    ratio.1
                )?;
                series
                    .entry(label)
                    .or_default()
                    .push((p99.0.max(1.0), bytes.0));
            }
        }
    }
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        std::fs::write(out.join("runs.csv"), &csv)?;
        std::fs::write(out.join("table.md"), &table)?;
        let frame = Frame {
            title: &format!(
                "Wire bytes against delivery delay, {:.0} % loss",
                args.loss * 100.0
            ),
            x: "delivery delay p99, ms (median over seeds)",
            y: "wire bytes per byte × (1 − q) (median)",
            names: &names,
        };
        match plots::frontier_lines(&out.join("frontier"), &frame, &series) {
            Ok(_) => {}
            Err(e) => eprintln!("ltx-bench frontier: no plot: {e:#}"),
        }
        eprintln!("ltx-bench frontier: results in {}", out.display());
    }
    Ok(())
}

/// One simulated transfer on `path`.
fn simulate(
    path: PathSpec,
    loss: f64,
    price: Duration,
    expect: f64,
    seed: u64,
) -> anyhow::Result<Run> {
    let mut scenario = Scenario {
        rate_bps: path.rate_bps,
        rtt: path.rtt,
        loss,
        burst: 1.0,
        size: path.size,
        seed,
        ..Scenario::default()
    };
    scenario.transport.repair_mut().set_delay_per_percent(price);
    if expect > 0.0 {
        scenario.transport.set_expected_loss(Some(expect))?;
    }
    let result = scenario.run().context("building the scenario")?;
    if !result.verified {
        anyhow::bail!(
            "{}, price {price:?}, seed {seed}: not delivered intact",
            path.name
        );
    }
    Ok(Run {
        bytes: result.overhead * (1.0 - result.random_loss),
        p99_ms: result.delay_p99_ms,
        ratio: result.ratio.unwrap_or(f64::NAN),
    })
}

/// The median and the largest of `values`.
fn median_and_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[n - 1])
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median_and_max([3.0, 1.0, 2.0].into_iter()), (2.0, 3.0));
        assert_eq!(median_and_max([4.0, 1.0, 2.0, 3.0].into_iter()), (2.5, 4.0));
    }
}
