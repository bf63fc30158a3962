//! One run of one workload through one system across a fresh emulated
//! path: the application server and the tunnel's server in the server
//! namespace, the tunnel's client and the workload's clients in the client
//! namespace, everything stopped at the end.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use ltx_emu::{Emulator, EmulatorConfig, NetNamespace, SERVER_ADDR};
use serde_json::Value;

use super::super::emu::cells::Cell;
use super::super::emu::transfer::{Interrupted, Scratch};
use super::super::payload::{Pattern, Verifier};
use super::super::peer::report::{ClientReport, Outcome, ServerReport};
use super::super::peer::systems::{commands, CommandLine, Prepared, System, Transfer};
use super::apps::PATTERN_SEED;
use super::systems::{tunnel_commands, PathInfo, Programs, TunnelSystem, APP_PORT, CLIENT_PORT};
use super::workload::{Workload, WEB_PARALLEL};

/// How long the tunnel may take to carry its first request.
const WARM_UP: Duration = Duration::from_secs(30);
/// The port of the `ltx-send` reference transfer.
const SEND_PORT: u16 = 5000;

/// What one run came to, before it is a row.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Measured {
    /// The workload finished within its bound.
    pub(crate) completed: bool,
    /// Every byte that arrived was the right one.
    pub(crate) verified: bool,
    /// Bulk and web: seconds to the last byte.
    pub(crate) time_s: Option<f64>,
    /// Interactive: median and 95th percentile of each reply's time over
    /// the path's round trip, ms.
    pub(crate) delay_ms: Option<(f64, f64)>,
    /// Interactive: messages answered, and sent.
    pub(crate) answered: Option<(u64, u64)>,
    /// IP bytes the path delivered each way (warm-up included).
    pub(crate) wire_bytes: (u64, u64),
    /// Why it did not complete; empty when it did.
    pub(crate) note: String,
}

/// Everything a run needs besides its cell.
pub(crate) struct Context<'a> {
    /// The programs.
    pub(crate) programs: &'a Programs,
    /// Where output files go.
    pub(crate) scratch: &'a Scratch,
    /// Set by a signal: stop now.
    pub(crate) stop: &'a AtomicBool,
}

/// A process in a group of its own, killed with its group when dropped.
struct Process(Child);

impl Process {
    fn spawn(mut command: Command, out: &Path, err: &Path) -> anyhow::Result<Process> {
        let create =
            |p: &Path| File::create(p).with_context(|| format!("creating {}", p.display()));
        command
            .stdin(Stdio::null())
            .stdout(create(out)?)
            .stderr(create(err)?)
            .process_group(0);
        Ok(Process(command.spawn().context("starting a process")?))
    }

    /// Waits for the process until `deadline`; `None` if it was still
    /// running then (or a stop was asked for).
    fn wait_until(&mut self, deadline: Instant, stop: &AtomicBool) -> Option<ExitStatus> {
        loop {
            if let Ok(Some(status)) = self.0.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline || stop.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill has no memory preconditions; the group is the
            // child's own (process_group(0)).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.0.wait();
    }
}

fn command_in(ns: &NetNamespace, line: &CommandLine) -> Command {
    let mut command = ns.command(&line.program);
    command.args(&line.args);
    command
}

/// The kernel's list of congestion controllers a network namespace other
/// than the first may make its default; the direct systems need Cubic and
/// BBR on it. Put back when dropped.
#[derive(Debug)]
pub(crate) struct AllowedControllers {
    saved: Option<String>,
}

const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

impl AllowedControllers {
    /// Adds `names` to the list.
    pub(crate) fn allow(names: &[&str]) -> anyhow::Result<AllowedControllers> {
        let current =
            std::fs::read_to_string(ALLOWED).with_context(|| format!("reading {ALLOWED}"))?;
        let mut list: Vec<&str> = current.split_whitespace().collect();
        let before = list.len();
        for name in names {
            if !list.contains(name) {
                list.push(name);
            }
        }
        if list.len() == before {
            return Ok(AllowedControllers { saved: None });
        }
        std::fs::write(ALLOWED, list.join(" ")).with_context(|| format!("writing {ALLOWED}"))?;
        Ok(AllowedControllers {
            saved: Some(current.trim().to_owned()),
        })
    }
}

impl Drop for AllowedControllers {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            if let Err(e) = std::fs::write(ALLOWED, saved) {
                eprintln!("ltx-bench tunnel: could not restore {ALLOWED} to {saved}: {e}");
            }
        }
    }
}

/// Sets the namespace's TCP congestion controller and buffer ceilings
/// (with `sysctl` run inside it, as `ip netns exec` shows it its own
/// `/proc/sys/net`).
fn tune_tcp(ns: &NetNamespace, cc: &str, buffer: u64) -> anyhow::Result<()> {
    let output = ns
        .command("sysctl")
        .args(["-q", "-w"])
        .arg(format!("net.ipv4.tcp_congestion_control={cc}"))
        .arg(format!("net.ipv4.tcp_rmem=4096 131072 {buffer}"))
        .arg(format!("net.ipv4.tcp_wmem=4096 16384 {buffer}"))
        .output()
        .context("running sysctl")?;
    if !output.status.success() {
        bail!(
            "sysctl in {} failed: {}",
            ns.name(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Runs `workload` through `system` once on `cell` with `rep` as the
/// links' seed, within `bound`.
pub(crate) fn run_once(
    ctx: &Context<'_>,
    cell: &Cell,
    system: TunnelSystem,
    workload: &Workload,
    rep: u64,
    bound: Duration,
) -> anyhow::Result<Measured> {
    // The scenario's loss is on its forward link, the one that carries
    // its data. The workloads' bytes flow from the server to the client
    // (downloads, replies), so that link goes server to client here; the
    // `ltx send` reference sends client to server, across it as made.
    let (lossy, clean) = cell.scenario(rep).links();
    let (forward, reverse) = if system == TunnelSystem::LtxSend {
        (lossy, clean)
    } else {
        (clean, lossy)
    };
    let emulator = Emulator::start(EmulatorConfig {
        forward,
        reverse,
        seed: rep,
    })
    .context("starting the emulator")?;
    let transfer = Transfer {
        server: SocketAddr::from((SERVER_ADDR, SEND_PORT)),
        size: cell.size,
        rate_bps: cell.rate_bps,
        rtt: cell.rtt,
        seed: PATTERN_SEED,
    };
    let buffer = transfer.socket_buffer();
    let cc = system.kernel_cc().unwrap_or("cubic");
    tune_tcp(emulator.client(), cc, buffer)?;
    tune_tcp(emulator.server(), cc, buffer)?;
    let mut measured = if system == TunnelSystem::LtxSend {
        ltx_send(ctx, &emulator, &transfer, bound)?
    } else {
        let path = PathInfo {
            rate_bps: cell.rate_bps,
            socket_buffer: buffer,
            kcp_window: transfer.kcp_window(),
        };
        through(ctx, &emulator, cell, system, &path, workload, bound)?
    };
    let stats = emulator.shutdown();
    if ctx.stop.load(Ordering::Relaxed) {
        return Err(Interrupted.into());
    }
    measured.wire_bytes = (
        stats.forward.link.delivered_bytes,
        stats.reverse.link.delivered_bytes,
    );
    Ok(measured)
}

/// The application server, the tunnel and the workload.
fn through(
    ctx: &Context<'_>,
    emulator: &Emulator,
    cell: &Cell,
    system: TunnelSystem,
    path: &PathInfo,
    workload: &Workload,
    bound: Duration,
) -> anyhow::Result<Measured> {
    let file = |name: &str| ctx.scratch.file(name);
    let app = CommandLine {
        program: ctx.programs.bench.clone(),
        args: vec![
            "tunnel-peer".into(),
            "serve".into(),
            "--listen".into(),
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, APP_PORT)).to_string(),
        ],
    };
    let _app = Process::spawn(
        command_in(emulator.server(), &app),
        &file("app.out"),
        &file("app.err"),
    )?;
    let mut tunnel = Vec::new();
    let target = match tunnel_commands(system, ctx.programs, path, SERVER_ADDR) {
        Some((server, client)) => {
            let server = Process::spawn(
                command_in(emulator.server(), &server),
                &file("tunnel-server.out"),
                &file("tunnel-server.err"),
            )?;
            tunnel.push(server);
            std::thread::sleep(Duration::from_millis(300));
            let client = Process::spawn(
                command_in(emulator.client(), &client),
                &file("tunnel-client.out"),
                &file("tunnel-client.err"),
            )?;
            tunnel.push(client);
            SocketAddr::from((Ipv4Addr::LOCALHOST, CLIENT_PORT))
        }
        None => SocketAddr::from((SERVER_ADDR, APP_PORT)),
    };
    let base = format!("http://{target}");
    if let Err(note) = warm_up(ctx, emulator, &base) {
        let tail = |name: &str| last_line(&file(name));
        return Ok(Measured {
            note: format!(
                "{note} (tunnel client: {}; server: {})",
                tail("tunnel-client.err"),
                tail("tunnel-server.err")
            ),
            ..Measured::default()
        });
    }
    let measured = match workload {
        Workload::Bulk => bulk(ctx, emulator, &base, cell.size, bound),
        Workload::Web(sizes) => web(ctx, emulator, &base, sizes, bound),
        Workload::Interactive(plan) => interactive(ctx, emulator, &base, target, cell, plan, bound),
    }?;
    drop(tunnel);
    Ok(measured)
}

/// Fetches a small object until one arrives: the tunnel is up and its
/// connection made, as a tunnel in use has it.
fn warm_up(ctx: &Context<'_>, emulator: &Emulator, base: &str) -> Result<(), String> {
    let until = Instant::now() + WARM_UP;
    while Instant::now() < until && !ctx.stop.load(Ordering::Relaxed) {
        let status = emulator
            .client()
            .command("curl")
            .args(["-s", "-f", "-o", "/dev/null", "--max-time", "20"])
            .arg(format!("{base}/bytes/1000"))
            .stdin(Stdio::null())
            .status();
        if status.is_ok_and(|s| s.success()) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!(
        "no request went through in {} s",
        WARM_UP.as_secs()
    ))
}

/// Checks a file against the first `size` bytes of the pattern.
fn check_file(path: &Path, size: u64) -> Result<(), String> {
    let data = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut verifier = Verifier::new(&Pattern::new(PATTERN_SEED));
    verifier.feed(&data);
    verifier.finish().check(size).map_err(|e| format!("{e:#}"))
}

/// `curl` downloads `size` bytes; time as curl counts it (`time_total`).
fn bulk(
    ctx: &Context<'_>,
    emulator: &Emulator,
    base: &str,
    size: u64,
    bound: Duration,
) -> anyhow::Result<Measured> {
    let saved = ctx.scratch.file("bulk.bin");
    let mut command = emulator.client().command("curl");
    command
        .args(["-s", "-f", "-w", "%{time_total}", "-o"])
        .arg(&saved)
        .arg(format!("{base}/bytes/{size}"));
    let (out, err) = (ctx.scratch.file("curl.out"), ctx.scratch.file("curl.err"));
    let mut curl = Process::spawn(command, &out, &err)?;
    let status = curl.wait_until(Instant::now() + bound, ctx.stop);
    let mut measured = Measured::default();
    match status {
        None => measured.note = format!("did not complete in {:.1} s", bound.as_secs_f64()),
        Some(s) if !s.success() => {
            measured.note = format!("curl ended with {s}: {}", last_line(&err));
        }
        Some(_) => {
            let time: f64 = std::fs::read_to_string(&out)?.trim().parse()?;
            measured.completed = time <= bound.as_secs_f64();
            match check_file(&saved, size) {
                Ok(()) => measured.verified = true,
                Err(e) => measured.note = e,
            }
            measured.time_s = Some(time);
        }
    }
    let _ = std::fs::remove_file(&saved);
    Ok(measured)
}

/// `curl --parallel` fetches every object over at most six connections;
/// time from curl's start to its exit.
fn web(
    ctx: &Context<'_>,
    emulator: &Emulator,
    base: &str,
    sizes: &[u64],
    bound: Duration,
) -> anyhow::Result<Measured> {
    let dir = ctx.scratch.file("web");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut command = emulator.client().command("curl");
    command.args([
        "-s",
        "-f",
        "--parallel",
        "--parallel-max",
        &WEB_PARALLEL.to_string(),
    ]);
    let files: Vec<PathBuf> = (0..sizes.len()).map(|n| dir.join(format!("{n}"))).collect();
    for (size, file) in sizes.iter().zip(&files) {
        command
            .arg("-o")
            .arg(file)
            .arg(format!("{base}/bytes/{size}"));
    }
    let err = ctx.scratch.file("curl.err");
    let start = Instant::now();
    let mut curl = Process::spawn(command, &ctx.scratch.file("curl.out"), &err)?;
    let status = curl.wait_until(start + bound, ctx.stop);
    let elapsed = start.elapsed().as_secs_f64();
    let mut measured = Measured::default();
    match status {
        None => measured.note = format!("did not complete in {:.1} s", bound.as_secs_f64()),
        Some(s) if !s.success() => {
            measured.note = format!("curl ended with {s}: {}", last_line(&err));
        }
        Some(_) => {
            measured.completed = true;
            measured.time_s = Some(elapsed);
            let failed: Vec<String> = sizes
                .iter()
                .zip(&files)
                .filter_map(|(size, file)| check_file(file, *size).err())
                .collect();
            measured.verified = failed.is_empty();
            measured.note = failed.join("; ");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(measured)
}

/// One endless download, and once it runs, the message stream.
fn interactive(
    ctx: &Context<'_>,
    emulator: &Emulator,
    base: &str,
    target: SocketAddr,
    cell: &Cell,
    plan: &super::workload::Interactive,
    bound: Duration,
) -> anyhow::Result<Measured> {
    let mut download = emulator.client().command("curl");
    download
        .args(["-s", "-o", "/dev/null"])
        .arg(format!("{base}/bytes/endless"));
    let _download = Process::spawn(
        download,
        &ctx.scratch.file("bulk.out"),
        &ctx.scratch.file("bulk.err"),
    )?;
    std::thread::sleep(plan.head_start);
    let mut ping = emulator.client().command(&ctx.programs.bench);
    ping.args(["tunnel-peer", "ping", "--connect", &target.to_string()])
        .args(["--count", &plan.count.to_string()])
        .args(["--size", &plan.size.to_string()])
        .args(["--interval-ms", &plan.interval.as_millis().to_string()])
        .args(["--drain-s", &plan.drain.as_secs_f64().to_string()]);
    let (out, err) = (ctx.scratch.file("ping.out"), ctx.scratch.file("ping.err"));
    let mut ping = Process::spawn(ping, &out, &err)?;
    let status = ping.wait_until(Instant::now() + bound, ctx.stop);
    let mut measured = Measured::default();
    match status {
        None => measured.note = format!("did not end in {:.1} s", bound.as_secs_f64()),
        Some(s) if !s.success() => {
            measured.note = format!("ping ended with {s}: {}", last_line(&err));
        }
        Some(_) => {
            let line: Value = serde_json::from_str(std::fs::read_to_string(&out)?.trim())?;
            let rtt_ms = cell.rtt.as_secs_f64() * 1e3;
            let mut added: Vec<f64> = line["rtts_ms"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_f64)
                        .map(|r| r - rtt_ms)
                        .collect()
                })
                .unwrap_or_default();
            added.sort_by(f64::total_cmp);
            let sent = line["sent"].as_u64().unwrap_or(0);
            let answered = line["answered"].as_u64().unwrap_or(0);
            measured.answered = Some((answered, sent));
            measured.verified = true;
            measured.completed = answered == sent && sent > 0;
            if !added.is_empty() {
                measured.delay_ms = Some((quantile(&added, 0.5), quantile(&added, 0.95)));
            }
            if !measured.completed {
                measured.note = format!("{answered} of {sent} messages answered");
            }
        }
    }
    Ok(measured)
}

/// The `q` quantile of sorted values (nearest rank).
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The bulk bytes sent once with the ltx peer of `ltx-bench emu`.
fn ltx_send(
    ctx: &Context<'_>,
    emulator: &Emulator,
    transfer: &Transfer,
    bound: Duration,
) -> anyhow::Result<Measured> {
    let prepared = Prepared {
        system: System::Ltx,
        program: ctx.programs.bench.clone(),
    };
    let (server_line, client_line) = commands(&prepared, transfer);
    let file = |name: &str| ctx.scratch.file(name);
    let mut server = Process::spawn(
        command_in(emulator.server(), &server_line),
        &file("send-server.out"),
        &file("send-server.err"),
    )?;
    std::thread::sleep(Duration::from_millis(300));
    let mut client = Process::spawn(
        command_in(emulator.client(), &client_line),
        &file("send-client.out"),
        &file("send-client.err"),
    )?;
    let mut measured = Measured::default();
    if client
        .wait_until(Instant::now() + bound, ctx.stop)
        .is_none()
    {
        measured.note = format!("did not complete in {:.1} s", bound.as_secs_f64());
        return Ok(measured);
    }
    let _ = server.wait_until(Instant::now() + Duration::from_secs(2), ctx.stop);
    let read = |name: &str| std::fs::read_to_string(file(name)).unwrap_or_default();
    let reports = ServerReport::parse(&read("send-server.out"))
        .and_then(|s| ClientReport::parse(&read("send-client.out")).map(|c| (s, c)));
    match reports
        .map_err(anyhow::Error::from)
        .and_then(|(s, c)| Outcome::of(&s, &c).map_err(anyhow::Error::from))
    {
        Ok(outcome) => {
            measured.completed = outcome.completion_s <= bound.as_secs_f64();
            measured.verified = outcome.verified;
            measured.time_s = Some(outcome.completion_s);
        }
        Err(e) => {
            measured.note = format!("{e:#} ({})", last_line(&file("send-client.err")));
        }
    }
    Ok(measured)
}

/// The last non-empty line of a file, shortened.
fn last_line(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output");
    line.chars().take(200).collect()
}
