//! One transfer of one system across a fresh emulated path: the server
//! started in its namespace, the client in its own once the server has
//! bound its socket, both stopped when the bound is reached.

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use ltx_emu::{CommandOutcome, Emulator, EmulatorConfig, PathStats, ServerWait, SERVER_ADDR};

use super::super::peer::report::{ClientReport, Outcome, ServerReport};
use super::super::peer::systems::{
    commands, resumed_commands, trace_into, CommandLine, Prepared, System, Transfer,
};
use super::cells::Cell;

/// The server's port. Every transfer has namespaces of its own, so the
/// port is never taken by an earlier run.
const PORT: u16 = 5000;

/// How long the client waits at most for the server's socket.
const SERVER_WAIT: Duration = Duration::from_secs(5);

/// What the watchdog allows beyond the bound for the server to start and
/// bind its socket before the client's clock starts.
const START_ALLOWANCE: Duration = Duration::from_secs(1);

/// How often the watchdog looks at the clock and at the stop flag.
const WATCH_INTERVAL: Duration = Duration::from_millis(20);

/// What one transfer came to, before it is a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    /// Both reports were read, the transfer ended within the bound.
    pub(crate) completed: bool,
    /// The server found exactly the payload.
    pub(crate) verified: bool,
    /// The figures of both ends' reports, when there are both.
    pub(crate) outcome: Option<Outcome>,
    /// IP bytes delivered client to server.
    pub(crate) wire_bytes: u64,
    /// IP bytes delivered server to client.
    pub(crate) reverse_wire_bytes: u64,
    /// 95th percentile of the forward bottleneck's queueing delay, ms.
    pub(crate) queue_delay_p95_ms: f64,
    /// Why it did not complete; empty when it did.
    pub(crate) note: String,
}

/// Where the peers' output goes while they run.
#[derive(Debug)]
pub(crate) struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A directory of this process's own under the system's temporary one.
    pub(crate) fn new() -> anyhow::Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("ltx-bench-emu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Scratch { dir })
    }

    /// A file of that name in the directory.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The run was stopped from outside (a signal), not by its bound.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub(crate) struct Interrupted;

/// Runs `prepared` once on `cell` with `seed`, giving up after `bound`;
/// ltx's ends write their qlog traces into `qlog`, if given. Setting
/// `stop` ends the run early with [`Interrupted`].
///
/// `ltx-resumed` is first run as `ltx` on a path of its own (the same cell
/// and seed), untimed, to save the path it measures; the timed transfer
/// starts from it. So its row counts the timed transfer's bytes, CPU and
/// queue alone.
pub(crate) fn run_once(
    prepared: &Prepared,
    cell: &Cell,
    seed: u64,
    bound: Duration,
    stop: &AtomicBool,
    scratch: &Scratch,
    qlog: Option<&Path>,
) -> anyhow::Result<Measured> {
    let transfer = Transfer {
        server: SocketAddr::from((SERVER_ADDR, PORT)),
        size: cell.size,
        rate_bps: cell.rate_bps,
        rtt: cell.rtt,
        seed,
    };
    let (mut server_line, mut client_line) = commands(prepared, &transfer);
    if prepared.system == System::LtxResumed {
        let saved = scratch.file("saved-path.json");
        let _ = std::fs::remove_file(&saved);
        let [(first_server, first_client), timed] =
            resumed_commands(prepared, &transfer, &transfer, &saved);
        let measured = run_lines(
            cell,
            seed,
            bound,
            stop,
            scratch,
            &first_server,
            &first_client,
        )?;
        if !measured.completed || !saved.exists() {
            return Ok(Measured {
                completed: false,
                verified: false,
                outcome: None,
                note: format!(
                    "the untimed transfer that saves the path did not complete: {}",
                    measured.note
                ),
                ..measured
            });
        }
        (server_line, client_line) = timed;
    }
    if let Some(dir) = qlog {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        trace_into(prepared.system, dir, [&mut server_line, &mut client_line]);
    }
    run_lines(cell, seed, bound, stop, scratch, &server_line, &client_line)
}

/// Runs one transfer with these command lines across a fresh emulated path
/// of `cell`, as [`run_once`] describes.
fn run_lines(
    cell: &Cell,
    seed: u64,
    bound: Duration,
    stop: &AtomicBool,
    scratch: &Scratch,
    server_line: &CommandLine,
    client_line: &CommandLine,
) -> anyhow::Result<Measured> {
    let (forward, reverse) = cell.scenario(seed).links();
    let emulator = Emulator::start(EmulatorConfig {
        forward,
        reverse,
        seed,
    })
    .context("starting the emulator")?;
    let output = Output::in_scratch(scratch);
    let server = in_namespace(
        emulator.server().command(&server_line.program),
        server_line,
        &output.server_out,
        &output.server_err,
    )?;
    let client = in_namespace(
        emulator.client().command(&client_line.program),
        client_line,
        &output.client_out,
        &output.client_err,
    )?;

    let (outcome, timed_out) = run_watched(&emulator, server, client, bound, stop)?;
    let stats = emulator.shutdown();
    if stop.load(Ordering::Relaxed) {
        return Err(Interrupted.into());
    }
    Ok(measure(&stats, &output, outcome, bound, timed_out))
}

/// The files the peers write their output to.
struct Output {
    server_out: PathBuf,
    server_err: PathBuf,
    client_out: PathBuf,
    client_err: PathBuf,
}

impl Output {
    fn in_scratch(scratch: &Scratch) -> Output {
        Output {
            server_out: scratch.file("server.out"),
            server_err: scratch.file("server.err"),
            client_out: scratch.file("client.out"),
            client_err: scratch.file("client.err"),
        }
    }
}

/// Runs the server and the client under a watchdog; returns how they ended
/// and whether the watchdog stopped them.
fn run_watched(
    emulator: &Emulator,
    server: Command,
    client: Command,
    bound: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<(CommandOutcome, bool)> {
    // The emulator stops both ends when this flag is set: by the watchdog
    // at the bound (plus the server's start-up), or on a signal. A run
    // stopped there is over the bound whatever the client's start.
    let expired = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    let deadline = Instant::now() + bound + START_ALLOWANCE;
    let mut timed_out = false;
    let outcome = std::thread::scope(|scope| {
        let watchdog = scope.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                    expired.store(true, Ordering::Relaxed);
                    return true;
                }
                std::thread::sleep(WATCH_INTERVAL);
            }
            false
        });
        let outcome = emulator.run_commands(
            Some(server),
            client,
            ServerWait::Listening(SERVER_WAIT),
            &expired,
        );
        finished.store(true, Ordering::Relaxed);
        timed_out = watchdog.join().unwrap_or(true);
        outcome
    })
    .context("running the peers")?;
    Ok((outcome, timed_out))
}

/// What the run came to, from the peers' reports and the path's counters.
fn measure(
    stats: &PathStats,
    output: &Output,
    outcome: CommandOutcome,
    bound: Duration,
    timed_out: bool,
) -> Measured {
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let server_report = ServerReport::parse(&read(&output.server_out));
    let client_report = ClientReport::parse(&read(&output.client_out));
    let mut measured = Measured {
        completed: false,
        verified: false,
        outcome: None,
        wire_bytes: stats.forward.link.delivered_bytes,
        reverse_wire_bytes: stats.reverse.link.delivered_bytes,
        queue_delay_p95_ms: stats.forward.link.queue_delay.quantile(0.95).as_secs_f64() * 1e3,
        note: String::new(),
    };
    if let Ok(server) = &server_report {
        measured.verified = server.verified;
    }
    match (&server_report, &client_report) {
        (Ok(server), Ok(client)) => match Outcome::of(server, client) {
            Ok(outcome) => {
                let within = outcome.completion_s <= bound.as_secs_f64();
                measured.completed = within && !timed_out;
                if !within {
                    measured.note = format!(
                        "took {:.2} s, more than the bound of {:.2} s",
                        outcome.completion_s,
                        bound.as_secs_f64()
                    );
                } else if !outcome.verified {
                    measured.note = "the server's check of the payload failed".to_owned();
                }
                measured.outcome = Some(outcome);
            }
            Err(e) => measured.note = e.to_string(),
        },
        _ if timed_out => {
            measured.note = format!("did not complete in {:.2} s", bound.as_secs_f64());
        }
        (server, client) => {
            let failed = |role: &str, error: String, stderr: &Path| {
                format!("{role}: {error} ({})", tail(&read(stderr)))
            };
            measured.note = match (server, client) {
                (Err(e), _) => failed("server", e.to_string(), &output.server_err),
                (_, Err(e)) => failed("client", e.to_string(), &output.client_err),
                _ => unreachable!("both reports were read"),
            };
            let client_end = match outcome.client {
                Some(status) => format!("; the client ended with {status}"),
                None => "; the client did not start".to_owned(),
            };
            measured.note.push_str(&client_end);
        }
    }
    if !measured.completed && measured.note.is_empty() {
        measured.note = format!("did not complete in {:.2} s", bound.as_secs_f64());
    }
    measured
}

/// `line` run through the namespace's `command`, with its output in files.
fn in_namespace(
    mut command: Command,
    line: &CommandLine,
    stdout: &Path,
    stderr: &Path,
) -> anyhow::Result<Command> {
    let create =
        |path: &Path| File::create(path).with_context(|| format!("creating {}", path.display()));
    command
        .args(&line.args)
        .stdin(Stdio::null())
        .stdout(create(stdout)?)
        .stderr(create(stderr)?);
    Ok(command)
}

/// The last line of a peer's error output, shortened.
fn tail(stderr: &str) -> String {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no error output");
    last.chars().take(200).collect()
}

/// The machine's UDP socket buffer ceilings (`net.core.rmem_max`,
/// `wmem_max`), raised for the benchmark so that NORM's and kcp-go's
/// drivers, which cannot pass them, get the buffers they ask for; put back
/// when dropped. They hold for every namespace on the machine.
#[derive(Debug)]
pub(crate) struct SocketLimits {
    saved: Vec<(&'static str, String)>,
}

const SOCKET_LIMITS: [&str; 2] = ["/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max"];

impl SocketLimits {
    /// Raises both ceilings to at least `bytes`; a ceiling already higher
    /// is left alone.
    pub(crate) fn raise(bytes: u64) -> anyhow::Result<SocketLimits> {
        let mut limits = SocketLimits { saved: Vec::new() };
        for path in SOCKET_LIMITS {
            let current =
                std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
            let value: u64 = current
                .trim()
                .parse()
                .with_context(|| format!("{path}: {current:?}"))?;
            if value < bytes {
                std::fs::write(path, bytes.to_string())
                    .with_context(|| format!("writing {path}"))?;
                limits.saved.push((path, current));
            }
        }
        Ok(limits)
    }
}

impl Drop for SocketLimits {
    fn drop(&mut self) {
        for (path, value) in &self.saved {
            if let Err(error) = std::fs::write(path, value.trim()) {
                eprintln!(
                    "ltx-bench emu: could not restore {path} to {}: {error}",
                    value.trim()
                );
            }
        }
    }
}
