//! `ltx emu`: the real-time link emulator from the command line. The path
//! flags mean what they mean to `ltx sim run`: the links are built by the
//! same scenario code.

use std::ffi::OsString;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use ltx_emu::{DirectionStats, Emulator, EmulatorConfig, ServerWait, CLIENT_ADDR, SERVER_ADDR};
use ltx_link::{LinkConfig, LossModel, Outage};
use ltx_sim::scenario::{Faults, Scenario};
use ltx_sim::units::{parse_duration, parse_fraction, parse_queue, parse_rate, QueueSpec};
use ltx_sim::Jitter;
use serde_json::{json, Value};

/// The path and the programs of `ltx emu`.
#[derive(Debug, Args)]
#[command(after_help = "\
Without --client and without a command, runs $SHELL in the client \
namespace with this terminal (like mahimahi); the server is at 10.77.0.2. \
With --server and --client, runs one command in each namespace, waits for \
the client, stops the server and prints each direction's counters. The \
namespaces are deleted at the end, on Ctrl-C and on errors. Needs root.")]
pub(crate) struct EmuArgs {
    /// Bottleneck rate, each direction (e.g. 50mbit, 1gbit).
    #[arg(long, default_value = "50mbit", value_parser = parse_rate)]
    rate: u64,
    /// Round-trip propagation delay, split evenly between the directions
    /// (e.g. 600ms, 0).
    #[arg(long, default_value = "600ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Mean random loss client to server (e.g. 10% or 0.1).
    #[arg(long, default_value = "0", value_parser = parse_fraction)]
    loss: f64,
    /// Mean loss burst in packets (Gilbert–Elliott); 1 is uncorrelated.
    #[arg(long, default_value_t = 1.0)]
    burst: f64,
    /// Netem's four-state loss model client to server instead of
    /// --loss/--burst: P13,P31,P32,P23,P14 (e.g. 0.01,0.3,0.1,0.5,0.001).
    #[arg(long, value_name = "P13,P31,P32,P23,P14", conflicts_with_all = ["loss", "burst"])]
    loss_4state: Option<String>,
    /// Mean random loss server to client (uncorrelated).
    #[arg(long, default_value = "0", value_parser = parse_fraction)]
    reverse_loss: f64,
    /// Bottleneck queue, each direction (e.g. 1bdp, 100pkt, 64KB, unlimited).
    #[arg(long, default_value = "1bdp", value_parser = parse_queue)]
    queue: QueueSpec,
    /// Mark ECN at the client-to-server bottleneck (CoDel) instead of only
    /// dropping.
    #[arg(long)]
    ecn: bool,
    /// Extra random delay per packet, uniform from 0 to this, both
    /// directions (e.g. 5ms).
    #[arg(long, value_parser = parse_duration)]
    jitter: Option<Duration>,
    /// Let --jitter reorder packets instead of holding a packet behind an
    /// earlier one.
    #[arg(long, requires = "jitter")]
    reorder: bool,
    /// Probability that a packet is delivered twice, both directions.
    #[arg(long, default_value = "0", value_parser = parse_fraction)]
    duplicate: f64,
    /// Probability that a packet has a bit flipped after its IP header,
    /// both directions.
    #[arg(long, default_value = "0", value_parser = parse_fraction)]
    corrupt: f64,
    /// The path is down, both directions, from START to END after the
    /// emulator starts (e.g. 5s..7s); may be repeated.
    #[arg(long, value_name = "START..END", value_parser = parse_outage)]
    outage: Vec<Outage>,
    /// The seed the links' randomness derives from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A shell command to run in the server namespace; stopped once the
    /// client is done.
    #[arg(long, value_name = "CMD")]
    server: Option<String>,
    /// A shell command to run in the client namespace once the server
    /// listens.
    #[arg(long, value_name = "CMD", conflicts_with = "command")]
    client: Option<String>,
    /// How long to wait at most for the server to listen on a TCP port or
    /// bind a UDP one before the client starts.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    server_wait: Duration,
    /// Print the counters as one JSON object on standard output.
    #[arg(long)]
    json: bool,
    /// The program to run in the client namespace with this terminal
    /// (default: $SHELL).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// `A..B`: an outage from A to B after the start.
fn parse_outage(input: &str) -> Result<Outage, String> {
    let (start, end) = input
        .split_once("..")
        .ok_or_else(|| format!("{input:?}: expected START..END such as 5s..7s"))?;
    let start = parse_duration(start).map_err(|e| e.to_string())?;
    let end = parse_duration(end).map_err(|e| e.to_string())?;
    if end < start {
        return Err(format!("{input:?}: the outage ends before it starts"));
    }
    Ok(Outage { start, end })
}

/// The four probabilities of `--loss-4state`.
fn parse_four_state(input: &str) -> anyhow::Result<LossModel> {
    let values: Vec<f64> = input
        .split(',')
        .map(|p| parse_fraction(p).with_context(|| format!("--loss-4state {input}")))
        .collect::<anyhow::Result<_>>()?;
    let [p13, p31, p32, p23, p14] = values[..] else {
        bail!("--loss-4state {input}: expected five probabilities P13,P31,P32,P23,P14");
    };
    Ok(LossModel::FourState {
        p13,
        p31,
        p32,
        p23,
        p14,
    })
}

impl EmuArgs {
    /// Both directions, built as `ltx sim run` builds its path.
    fn links(&self) -> anyhow::Result<(LinkConfig, LinkConfig)> {
        if !self.burst.is_finite() || self.burst < 1.0 {
            bail!(
                "--burst {}: the mean burst length must be at least 1 packet",
                self.burst
            );
        }
        let scenario = Scenario {
            rate_bps: self.rate,
            rtt: self.rtt,
            loss: self.loss,
            burst: self.burst,
            queue: self.queue,
            ecn: self.ecn,
            seed: self.seed,
            faults: Faults {
                jitter: self.jitter.map(|max| Jitter {
                    max,
                    reorder: self.reorder,
                }),
                duplicate: self.duplicate,
                corrupt: self.corrupt,
                outages: self.outage.clone(),
                reverse_loss: self.reverse_loss,
            },
            ..Scenario::default()
        };
        let (mut forward, reverse) = scenario.links();
        if let Some(spec) = &self.loss_4state {
            forward.loss = parse_four_state(spec)?;
        }
        Ok((forward, reverse))
    }
}

/// Runs `ltx emu`.
pub(crate) fn run(args: &EmuArgs) -> anyhow::Result<()> {
    let (forward, reverse) = args.links()?;
    let batch = args.client.is_some();
    // Registered before anything is created, so that a signal at any
    // point ends in the clean-up below rather than killing the process.
    // In a terminal session Ctrl-C belongs to the shell and what it runs,
    // so it does not stop the emulator there.
    let interrupted = Arc::new(AtomicBool::new(false));
    let ctrl_c = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&interrupted))?;
    }
    let on_ctrl_c = if batch { &interrupted } else { &ctrl_c };
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(on_ctrl_c))?;

    let emulator = Emulator::start(EmulatorConfig {
        forward,
        reverse,
        seed: args.seed,
    })?;
    eprintln!(
        "ltx emu: client {CLIENT_ADDR} in namespace {}, server {SERVER_ADDR} in namespace {} \
         (`ip netns exec {} CMD` runs CMD there)",
        emulator.client().name(),
        emulator.server().name(),
        emulator.server().name(),
    );
    let server = args.server.as_ref().map(|command| {
        let mut server = emulator.server().command("sh");
        server.arg("-c").arg(command);
        server
    });
    let client = match (&args.client, args.command.split_first()) {
        (Some(command), _) => {
            let mut client = emulator.client().command("sh");
            client.arg("-c").arg(command);
            client
        }
        (None, Some((program, rest))) => {
            let mut client = emulator.client().command(program);
            client.args(rest);
            client
        }
        (None, None) => {
            let shell = std::env::var_os("SHELL").unwrap_or_else(|| "/bin/sh".into());
            eprintln!("ltx emu: exit the shell to stop the emulator");
            emulator.client().command(shell)
        }
    };
    let started = Instant::now();
    let outcome = emulator.run_commands(
        server,
        client,
        ServerWait::Listening(args.server_wait),
        &interrupted,
    )?;
    let elapsed = started.elapsed();
    let names = (
        emulator.client().name().to_owned(),
        emulator.server().name().to_owned(),
    );
    let stats = emulator.shutdown();

    if args.json {
        let report = json!({
            "client_namespace": names.0,
            "server_namespace": names.1,
            "seed": args.seed,
            "elapsed_s": round(elapsed.as_secs_f64(), 3),
            "client_exit": outcome.client.and_then(|s| s.code()),
            "server_exited": outcome.server_exited.map(|s| s.code()),
            "interrupted": outcome.interrupted,
            "forward": direction_json(&stats.forward),
            "reverse": direction_json(&stats.reverse),
        });
        println!("{report}");
    } else {
        eprintln!("ltx emu: {:.1} s", elapsed.as_secs_f64());
        for (name, direction) in [
            ("client → server", &stats.forward),
            ("server → client", &stats.reverse),
        ] {
            let mut lines = summary(direction).into_iter();
            eprintln!("  {name}: {}", lines.next().unwrap_or_default());
            for line in lines {
                eprintln!("    {line}");
            }
        }
    }
    if let Some(status) = outcome.server_exited {
        eprintln!("ltx emu: the server command had exited by itself ({status})");
    }
    if outcome.interrupted {
        bail!("interrupted: the client command was stopped");
    }
    match outcome.client {
        Some(status) if !status.success() => bail!("the client command failed ({status})"),
        _ => Ok(()),
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

fn micros(d: Duration) -> f64 {
    round(d.as_secs_f64() * 1e6, 1)
}

fn direction_json(direction: &DirectionStats) -> Value {
    let link = &direction.link;
    let forwarder = &direction.forwarder;
    json!({
        "offered": link.offered,
        "delivered": link.delivered,
        "delivered_bytes": link.delivered_bytes,
        "dropped": link.dropped(),
        "in_flight": link.in_flight,
        "dropped_random": link.dropped_random,
        "dropped_queue": link.dropped_queue,
        "dropped_aqm": link.dropped_aqm,
        "dropped_outage": link.dropped_outage,
        "marked_ce": link.marked,
        "duplicated": link.duplicated,
        "corrupted": link.corrupted,
        "queue_delay_p50_ms": round(link.queue_delay.quantile(0.5).as_secs_f64() * 1e3, 3),
        "queue_delay_p95_ms": round(link.queue_delay.quantile(0.95).as_secs_f64() * 1e3, 3),
        "write_errors": forwarder.write_errors,
        "lateness_p50_us": micros(forwarder.lateness.quantile(0.5)),
        "lateness_p99_us": micros(forwarder.lateness.quantile(0.99)),
        "lateness_max_us": micros(forwarder.lateness.max()),
        "tun_tx_dropped": direction.ingress.map(|c| c.tx_dropped),
    })
}

/// The direction's counters as lines that add up: every packet the link
/// took is delivered, dropped for a named cause, or was still on the link
/// when the emulator stopped.
fn summary(direction: &DirectionStats) -> Vec<String> {
    let link = &direction.link;
    let forwarder = &direction.forwarder;
    let copies = match link.duplicated {
        0 => String::new(),
        n => format!(" + {n} duplicates"),
    };
    let tun_dropped = direction
        .ingress
        .map_or_else(|| "?".to_owned(), |c| c.tx_dropped.to_string());
    vec![
        format!(
            "{} offered{copies} = {} delivered + {} dropped + {} still on the link at the end",
            link.offered,
            link.delivered,
            link.dropped(),
            link.in_flight,
        ),
        format!(
            "dropped: {} by the loss model, {} by the full queue, {} by the AQM, {} in outages",
            link.dropped_random, link.dropped_queue, link.dropped_aqm, link.dropped_outage,
        ),
        format!(
            "outside the link: {tun_dropped} dropped by the sending TUN queue before it, {} \
             refused by the receiving TUN device after it",
            forwarder.write_errors,
        ),
        format!(
            "{} B delivered; {} marked CE, {} corrupted; queue delay p95 {:.2} ms; forwarding \
             lateness p50 {:.0} µs, p99 {:.0} µs",
            link.delivered_bytes,
            link.marked,
            link.corrupted,
            link.queue_delay.quantile(0.95).as_secs_f64() * 1e3,
            micros(forwarder.lateness.quantile(0.5)),
            micros(forwarder.lateness.quantile(0.99)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: EmuArgs,
    }

    fn parse(line: &[&str]) -> EmuArgs {
        Cli::try_parse_from(std::iter::once("emu").chain(line.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn the_flags_build_the_path_ltx_sim_run_builds() {
        let args = parse(&[
            "--rate", "50mbit", "--rtt", "600ms", "--loss", "10%", "--burst", "5", "--ecn",
        ]);
        let scenario = Scenario {
            rate_bps: 50_000_000,
            rtt: Duration::from_millis(600),
            loss: 0.1,
            burst: 5.0,
            ecn: true,
            ..Scenario::default()
        };
        assert_eq!(args.links().unwrap(), scenario.links());
    }

    #[test]
    fn four_state_loss_replaces_the_forward_loss_model() {
        let args = parse(&["--loss-4state", "0.01,0.3,0.1,0.5,0.001"]);
        let (forward, reverse) = args.links().unwrap();
        assert_eq!(
            forward.loss,
            LossModel::FourState {
                p13: 0.01,
                p31: 0.3,
                p32: 0.1,
                p23: 0.5,
                p14: 0.001
            }
        );
        assert_eq!(reverse.loss, LossModel::None);
        assert!(parse(&["--loss-4state", "0.1,0.2"]).links().is_err());
    }

    #[test]
    fn outages_jitter_and_duplication_reach_both_directions() {
        let args = parse(&[
            "--outage",
            "1s..2s",
            "--jitter",
            "5ms",
            "--reorder",
            "--duplicate",
            "1%",
        ]);
        let (forward, reverse) = args.links().unwrap();
        for link in [forward, reverse] {
            assert_eq!(
                link.outages,
                vec![Outage {
                    start: Duration::from_secs(1),
                    end: Duration::from_secs(2)
                }]
            );
            assert_eq!(
                link.jitter,
                Some(Jitter {
                    max: Duration::from_millis(5),
                    reorder: true
                })
            );
            assert_eq!(link.duplicate, 0.01);
        }
        assert!(parse_outage("2s..1s").is_err());
        assert!(parse_outage("2s").is_err());
    }

    #[test]
    fn a_burst_below_one_packet_is_refused() {
        assert!(parse(&["--burst", "0.5"]).links().is_err());
    }
}
