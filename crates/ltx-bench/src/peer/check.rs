//! `ltx-bench peer check`: every system's peers built and run once over
//! loopback, with no emulator, each end a process of its own as in the
//! benchmark.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use ltx_sim::units::parse_size;
use serde_json::{json, Value};

use super::super::payload::Pattern;
use super::report::{ClientReport, Outcome, ServerReport};
use super::systems::{
    commands, prepare, resumed_commands, CommandLine, Missing, Prepared, System, Toolbox, Transfer,
};

/// The server's address: a loopback address other than the client's, so
/// that NORM's receiver can bind its port on it alone while the sender uses
/// the same port number on 127.0.0.1 (the whole 127/8 is local on Linux).
const SERVER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// Time the server is given to bind its socket before the client starts.
const SERVER_START: Duration = Duration::from_millis(500);

/// Options of `ltx-bench peer check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// Payload bytes per transfer.
    #[arg(long, default_value = "2MB", value_parser = parse_size)]
    size: u64,
    /// Systems to check (all when not given), comma-separated or repeated.
    #[arg(long = "system", value_enum, value_delimiter = ',')]
    systems: Vec<System>,
    /// Fail when a system cannot be built, not only when one that was
    /// built does not deliver.
    #[arg(long)]
    require_all: bool,
    /// How long one transfer may take, both ends together.
    #[arg(long, default_value = "60s", value_parser = ltx_sim::units::parse_duration)]
    limit: Duration,
}

/// What happened to one system.
#[derive(Debug)]
enum Checked {
    Missing(Missing),
    Failed(String),
    Delivered(Outcome),
}

/// Runs the check and prints one JSON line per system.
pub(crate) fn run(args: &CheckArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.size > 0, "--size must be more than 0 bytes");
    let tools = Toolbox::of_this_binary()?;
    let systems = if args.systems.is_empty() {
        System::ALL.to_vec()
    } else {
        args.systems.clone()
    };
    let mut failures = Vec::new();
    for (n, system) in systems.into_iter().enumerate() {
        let checked = match prepare(system, &tools) {
            Err(missing) => Checked::Missing(missing),
            Ok(prepared) => {
                let transfer = Transfer {
                    server: SocketAddr::from((SERVER_IP, free_port()?)),
                    size: args.size,
                    rate_bps: 1_000_000_000,
                    rtt: Duration::from_millis(1),
                    seed: 11 + n as u64,
                };
                let result = same_pattern(&prepared, transfer.seed).and_then(|()| {
                    if system == System::LtxResumed {
                        transfer_resumed(&prepared, &transfer, args.limit)
                    } else {
                        transfer_once(commands(&prepared, &transfer), args.limit)
                    }
                });
                match result {
                    Ok(outcome) if outcome.verified => Checked::Delivered(outcome),
                    Ok(_) => Checked::Failed("the server's check of the payload failed".into()),
                    Err(e) => Checked::Failed(format!("{e:#}")),
                }
            }
        };
        let line = match &checked {
            Checked::Missing(missing) => {
                if args.require_all {
                    failures.push(missing.to_string());
                }
                json!({"system": system.name(), "missing": missing.reason})
            }
            Checked::Failed(reason) => {
                failures.push(format!("{system}: {reason}"));
                json!({"system": system.name(), "completed": false, "error": reason})
            }
            Checked::Delivered(outcome) => line(system, args.size, outcome),
        };
        println!("{line}");
    }
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

fn line(system: System, size: u64, outcome: &Outcome) -> Value {
    json!({
        "system": system.name(),
        "size_bytes": size,
        "completed": true,
        "verified": outcome.verified,
        "completion_s": (outcome.completion_s * 1e4).round() / 1e4,
        "goodput_bps": outcome.goodput_bps.round(),
        "cpu_s": (outcome.cpu_s * 1e4).round() / 1e4,
        "wire_bytes": outcome.wire_bytes,
    })
}

/// Checks that a driver in another language makes the payload this binary
/// makes from the same seed: its block's length and both its ends, as the
/// driver's `pattern` command prints them. A driver that disagreed would
/// still check its own transfers, but it would carry other bytes than the
/// Rust peers do.
fn same_pattern(prepared: &Prepared, seed: u64) -> anyhow::Result<()> {
    if prepared.program == Toolbox::of_this_binary()?.bench {
        return Ok(());
    }
    let output = std::process::Command::new(&prepared.program)
        .args(["pattern", "--seed", &seed.to_string()])
        .output()
        .with_context(|| format!("running {} pattern", prepared.program.display()))?;
    anyhow::ensure!(
        output.status.success(),
        "{} pattern failed",
        prepared.program.display()
    );
    let printed: Value = serde_json::from_slice(&output.stdout).context("the pattern's line")?;
    let block = Pattern::new(seed);
    let block = block.block();
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let expected = json!({
        "len": block.len(),
        "head": hex(&block[..32]),
        "tail": hex(&block[block.len() - 32..]),
    });
    anyhow::ensure!(
        printed == expected,
        "{} makes another payload: {printed} where this binary makes {expected}",
        prepared.program.display()
    );
    Ok(())
}

/// A port free for both TCP and UDP on the server's address, as far as one
/// can tell before using it.
fn free_port() -> anyhow::Result<u16> {
    for _ in 0..20 {
        let udp = UdpSocket::bind((SERVER_IP, 0)).context("binding a probe socket")?;
        let port = udp.local_addr()?.port();
        // NORM's sender takes the next port up for its own socket.
        if port < u16::MAX
            && TcpListener::bind((SERVER_IP, port)).is_ok()
            && UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port + 1)).is_ok()
        {
            return Ok(port);
        }
    }
    anyhow::bail!("no free port on {SERVER_IP}")
}

/// `ltx-resumed`: a first transfer as `ltx` that saves its path, then the
/// checked one, which starts from it, on another port.
fn transfer_resumed(
    prepared: &Prepared,
    transfer: &Transfer,
    limit: Duration,
) -> anyhow::Result<Outcome> {
    let saved = std::env::temp_dir().join(format!(
        "ltx-bench-check-saved-path-{}.json",
        std::process::id()
    ));
    let second = Transfer {
        server: SocketAddr::from((SERVER_IP, free_port()?)),
        ..transfer.clone()
    };
    let [first, timed] = resumed_commands(prepared, transfer, &second, &saved);
    let outcome = transfer_once(first, limit)
        .context("the first transfer, which saves the path")
        .and_then(|_| transfer_once(timed, limit));
    let _ = std::fs::remove_file(&saved);
    outcome
}

/// Runs the server, then the client, and waits for both within `limit`.
fn transfer_once(
    (server_line, client_line): (CommandLine, CommandLine),
    limit: Duration,
) -> anyhow::Result<Outcome> {
    let deadline = Instant::now() + limit;
    let mut server = Process::spawn(server_line.command(), "server")?;
    std::thread::sleep(SERVER_START);
    let mut client = Process::spawn(client_line.command(), "client")?;
    let client_out = client.finish(deadline)?;
    let server_out = server.finish(deadline)?;
    let server_report = ServerReport::parse(&server_out).context("the server's report")?;
    let client_report = ClientReport::parse(&client_out).context("the client's report")?;
    Ok(Outcome::of(&server_report, &client_report)?)
}

/// A child process whose output is collected; killed if dropped while it
/// runs.
struct Process {
    child: Child,
    role: &'static str,
}

impl Process {
    fn spawn(mut command: std::process::Command, role: &'static str) -> anyhow::Result<Process> {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting the {role}: {command:?}"))?;
        Ok(Process { child, role })
    }

    /// Waits for the process to exit by `deadline` and returns its standard
    /// output; an error (with its standard error) if it failed or ran over.
    fn finish(&mut self, deadline: Instant) -> anyhow::Result<String> {
        let status = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            if Instant::now() >= deadline {
                anyhow::bail!("the {} did not finish in time", self.role);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            out.read_to_string(&mut stdout)?;
        }
        if let Some(mut err) = self.child.stderr.take() {
            err.read_to_string(&mut stderr)?;
        }
        anyhow::ensure!(
            status.success(),
            "the {} failed ({status}): {}",
            self.role,
            stderr.trim()
        );
        Ok(stdout)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
