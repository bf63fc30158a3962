//! The systems the emulated-link benchmark compares, how to build each
//! one's peers, and the command lines of one transfer.
//!
//! A system is prepared once per run ([`prepare`]): the Rust peers are this
//! binary; NORM's driver needs Debian's `libnorm-dev` (installed with
//! apt-get when missing and the process is root) and a C++ compiler; kcp-go's
//! needs Go and the Go module proxy the first time. A system that cannot be
//! prepared is [`Missing`], with the reason, for the report to show: never
//! left out silently.
//!
//! To run a transfer, start the server's command, give it a moment to bind
//! (the TCP client retries a refused connection for a few seconds; the
//! datagram systems repeat their first packets), then the client's, and
//! read the server's report and the client's ([`super::report`]). UDP
//! socket buffers that a peer asks for are capped by `net.core.rmem_max` /
//! `wmem_max`, which hold for the whole machine, namespaces included: the
//! Rust peers pass the cap as root, NORM's and kcp-go's cannot, so a harness
//! that wants all of them on large buffers raises those two first.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One system under test, as the benchmark's `system` column names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub(crate) enum System {
    /// ltx with its default settings.
    Ltx,
    /// ltx told the link's rate (`--rate-hint`), as NORM at a fixed rate is.
    LtxHint,
    /// ltx resuming the path an earlier, untimed transfer over the same
    /// cell saved (careful resume).
    LtxResumed,
    /// The kernel's TCP with Cubic.
    TcpCubic,
    /// The kernel's TCP with BBR.
    TcpBbr,
    /// NORM at a fixed rate, the link's, congestion control off (seed 000).
    Norm,
    /// NORM with its congestion control, NORM-CC.
    NormCc,
    /// kcp-go with 10 + 3 Reed-Solomon FEC, kcptun's fastest mode.
    KcpFec,
    /// quinn with Cubic.
    QuicCubic,
    /// quinn with BBR.
    QuicBbr,
}

impl System {
    /// Every system, in the order reports list them.
    pub(crate) const ALL: [System; 10] = [
        System::Ltx,
        System::LtxHint,
        System::LtxResumed,
        System::TcpCubic,
        System::TcpBbr,
        System::Norm,
        System::NormCc,
        System::KcpFec,
        System::QuicCubic,
        System::QuicBbr,
    ];

    /// The system's name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            System::Ltx => "ltx",
            System::LtxHint => "ltx-hint",
            System::LtxResumed => "ltx-resumed",
            System::TcpCubic => "tcp-cubic",
            System::TcpBbr => "tcp-bbr",
            System::Norm => "norm",
            System::NormCc => "norm-cc",
            System::KcpFec => "kcp-fec",
            System::QuicCubic => "quic-cubic",
            System::QuicBbr => "quic-bbr",
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the peers come from and where their builds go.
#[derive(Debug, Clone)]
pub(crate) struct Toolbox {
    /// The `ltx-bench` binary, which holds the Rust peers.
    pub(crate) bench: PathBuf,
    /// The drivers' sources: `bench/peers` of the repository.
    pub(crate) sources: PathBuf,
    /// Where built drivers are kept between runs.
    pub(crate) build_dir: PathBuf,
}

impl Toolbox {
    /// This binary as the Rust peers, the repository it was built from as
    /// the drivers' sources, and `peers/` beside the binary (in the Cargo
    /// target directory) for their builds.
    pub(crate) fn of_this_binary() -> anyhow::Result<Toolbox> {
        let bench = std::env::current_exe()?;
        let build_dir = bench
            .parent()
            .map(|dir| dir.join("peers"))
            .ok_or_else(|| anyhow::anyhow!("the binary {} has no directory", bench.display()))?;
        Ok(Toolbox {
            bench,
            sources: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers"),
            build_dir,
        })
    }
}

/// A system ready to run: the program both its ends run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// The system.
    pub(crate) system: System,
    /// The server's and the client's program.
    pub(crate) program: PathBuf,
}

/// A system that could not be prepared, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{system} is missing: {reason}")]
pub(crate) struct Missing {
    /// The system.
    pub(crate) system: System,
    /// What failed, for the report.
    pub(crate) reason: String,
}

/// Builds or finds `system`'s peers.
pub(crate) fn prepare(system: System, tools: &Toolbox) -> Result<Prepared, Missing> {
    let missing = |reason: String| Missing { system, reason };
    let program = match system {
        System::Ltx
        | System::LtxHint
        | System::LtxResumed
        | System::TcpCubic
        | System::QuicCubic
        | System::QuicBbr => tools.bench.clone(),
        System::TcpBbr => {
            ensure_tcp_bbr().map_err(missing)?;
            tools.bench.clone()
        }
        System::Norm | System::NormCc => build_norm(tools).map_err(missing)?,
        System::KcpFec => build_kcp(tools).map_err(missing)?,
    };
    if !program.is_file() {
        return Err(missing(format!("{} does not exist", program.display())));
    }
    Ok(Prepared { system, program })
}

const AVAILABLE_CONTROLLERS: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Checks that the kernel offers BBR, loading its module if it can.
fn ensure_tcp_bbr() -> Result<(), String> {
    let available = || {
        std::fs::read_to_string(AVAILABLE_CONTROLLERS)
            .map(|list| list.split_whitespace().any(|name| name == "bbr"))
            .unwrap_or(false)
    };
    if available() {
        return Ok(());
    }
    // Loading a module needs root; a failure is told by the check after.
    let _ = Command::new("modprobe").arg("tcp_bbr").output();
    if available() {
        return Ok(());
    }
    let list = std::fs::read_to_string(AVAILABLE_CONTROLLERS).unwrap_or_default();
    Err(format!(
        "the kernel offers no bbr (tcp_available_congestion_control: {}) and modprobe tcp_bbr \
         did not load it",
        list.trim()
    ))
}

const NORM_HEADER: &str = "/usr/include/normApi.h";

/// Builds the NORM driver, installing `libnorm-dev` first when it is
/// missing and this process may.
fn build_norm(tools: &Toolbox) -> Result<PathBuf, String> {
    if !Path::new(NORM_HEADER).exists() {
        if !is_root() {
            return Err(format!(
                "{NORM_HEADER} is missing (apt-get install libnorm-dev, as root)"
            ));
        }
        let install = || run(Command::new("apt-get").args(["install", "-y", "libnorm-dev"]));
        if install().is_err() {
            // The package lists may be stale or absent on a fresh machine.
            run(Command::new("apt-get").arg("update"))?;
            install()?;
        }
    }
    create_dir(&tools.build_dir)?;
    run(Command::new("make")
        .arg("-C")
        .arg(tools.sources.join("norm"))
        .arg(format!("OUT={}", tools.build_dir.display())))?;
    Ok(tools.build_dir.join("norm-peer"))
}

/// Builds the kcp-go driver; Go fetches its modules through the module
/// proxy the first time and keeps them in its cache.
fn build_kcp(tools: &Toolbox) -> Result<PathBuf, String> {
    let go = ["go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"]
        .into_iter()
        .find(|go| Command::new(go).arg("version").output().is_ok())
        .ok_or("no Go toolchain (go) on this machine")?;
    create_dir(&tools.build_dir)?;
    let program = tools.build_dir.join("kcp-peer");
    run(Command::new(go)
        .current_dir(tools.sources.join("kcp"))
        .arg("build")
        .arg("-o")
        .arg(&program)
        .arg("."))?;
    Ok(program)
}

fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))
}

/// Runs a build step; its failure is the command and the end of its output.
fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let output = command
        .output()
        .map_err(|e| format!("{shown} could not start: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
    Err(format!("{shown} failed ({}): {tail}", output.status))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// One transfer to run: where the server listens, what is sent and the
/// path it crosses (which sizes windows and rates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transfer {
    /// The server's address: its IP on the emulated link, and a port.
    pub(crate) server: SocketAddr,
    /// Payload bytes.
    pub(crate) size: u64,
    /// The link's rate, bits per second.
    pub(crate) rate_bps: u64,
    /// The path's round-trip time without queueing.
    pub(crate) rtt: Duration,
    /// Seed of the payload's bytes.
    pub(crate) seed: u64,
}

impl Transfer {
    /// The path's bandwidth-delay product, bytes.
    fn bdp_bytes(&self) -> u64 {
        (self.rate_bps as f64 / 8.0 * self.rtt.as_secs_f64()).ceil() as u64
    }

    /// Kernel socket buffers for kernel TCP and QUIC: four times the
    /// bandwidth-delay product, which holds TCP's receive window (the kernel
    /// keeps part of the buffer for its own bookkeeping) and the sender's
    /// data awaiting acknowledgement through a loss episode, and at least
    /// 4 MiB, the default ceiling of TCP's autotuning.
    pub(crate) fn socket_buffer(&self) -> u64 {
        (4 * self.bdp_bytes()).max(4 << 20)
    }

    /// kcp-go's send and receive windows, packets: kcptun's server default
    /// (1024), or 1.25 times the path's bandwidth-delay product in packets
    /// when that is more, as kcptun users size them for long paths.
    pub(crate) fn kcp_window(&self) -> u64 {
        const PAYLOAD_PER_PACKET: u64 = 1300;
        (self.bdp_bytes() * 5 / 4)
            .div_ceil(PAYLOAD_PER_PACKET)
            .max(1024)
    }
}

/// A program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandLine {
    /// The program.
    pub(crate) program: PathBuf,
    /// Its arguments.
    pub(crate) args: Vec<String>,
}

impl CommandLine {
    /// The command, ready to be given to `std::process` (or to `ltx emu`).
    pub(crate) fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        command
    }
}

/// The server's and the client's command lines of one transfer: the
/// server receives and checks, the client sends. Start the server first.
pub(crate) fn commands(prepared: &Prepared, transfer: &Transfer) -> (CommandLine, CommandLine) {
    let system = prepared.system;
    let server = transfer.server.to_string();
    let size = transfer.size.to_string();
    let seed = transfer.seed.to_string();
    let common = |role: &str, flag: &str| -> Vec<String> {
        let mut args = vec![role.to_owned(), flag.to_owned(), server.clone()];
        args.extend([
            "--size".to_owned(),
            size.clone(),
            "--seed".to_owned(),
            seed.clone(),
        ]);
        args
    };
    let (mut recv, mut send) = match system {
        System::Ltx
        | System::LtxHint
        | System::LtxResumed
        | System::TcpCubic
        | System::TcpBbr
        | System::QuicCubic
        | System::QuicBbr => {
            let mut recv = vec!["peer".to_owned()];
            let mut send = recv.clone();
            recv.extend(common("recv", "--listen"));
            send.extend(common("send", "--connect"));
            let tail = ["--system".to_owned(), system.name().to_owned()];
            recv.extend(tail.clone());
            send.extend(tail);
            if system == System::LtxHint {
                send.extend(["--rate-hint".to_owned(), transfer.rate_bps.to_string()]);
            }
            if matches!(
                system,
                System::TcpCubic | System::TcpBbr | System::QuicCubic | System::QuicBbr
            ) {
                let buffer = [
                    "--socket-buffer".to_owned(),
                    transfer.socket_buffer().to_string(),
                ];
                recv.extend(buffer.clone());
                send.extend(buffer);
            }
            (recv, send)
        }
        System::Norm | System::NormCc => {
            let recv = common("recv", "--listen");
            let mut send = common("send", "--connect");
            send.extend(["--rate".to_owned(), transfer.rate_bps.to_string()]);
            (recv, send)
        }
        System::KcpFec => {
            let window = ["--window".to_owned(), transfer.kcp_window().to_string()];
            let mut recv = common("recv", "--listen");
            let mut send = common("send", "--connect");
            recv.extend(window.clone());
            send.extend(window);
            (recv, send)
        }
    };
    if system == System::NormCc {
        recv.push("--cc".to_owned());
        send.push("--cc".to_owned());
    }
    let line = |args| CommandLine {
        program: prepared.program.clone(),
        args,
    };
    (line(recv), line(send))
}

/// `ltx-resumed`'s two transfers: `first`, as `ltx`, whose sender writes
/// the path it measured to `saved`; then `timed`, whose sender starts from
/// it. Each pair is the server's and the client's command line.
pub(crate) fn resumed_commands(
    prepared: &Prepared,
    first: &Transfer,
    timed: &Transfer,
    saved: &Path,
) -> [(CommandLine, CommandLine); 2] {
    let saving = Prepared {
        system: System::Ltx,
        program: prepared.program.clone(),
    };
    let saved = saved.display().to_string();
    let (first_server, mut first_client) = commands(&saving, first);
    first_client
        .args
        .extend(["--save-path".to_owned(), saved.clone()]);
    let (server, mut client) = commands(prepared, timed);
    client.args.extend(["--saved-path".to_owned(), saved]);
    [(first_server, first_client), (server, client)]
}

/// Has ltx's two ends write a qlog trace of the timed transfer into `dir`
/// (`--qlog-dir`); the other systems write none, and are left as they are.
pub(crate) fn trace_into(system: System, dir: &Path, lines: [&mut CommandLine; 2]) {
    if matches!(system, System::Ltx | System::LtxHint | System::LtxResumed) {
        for line in lines {
            line.args.push("--qlog-dir".to_owned());
            line.args.push(dir.display().to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(rate_bps: u64, rtt_ms: u64) -> Transfer {
        Transfer {
            server: "10.0.0.1:7000".parse().unwrap(),
            size: 10_000_000,
            rate_bps,
            rtt: Duration::from_millis(rtt_ms),
            seed: 3,
        }
    }

    /// The long-delay scenario (50 Mbit/s, 600 ms: 3.75 MB in flight) gets
    /// buffers and windows sized from its path; the short one the floors.
    #[test]
    fn buffers_and_windows_follow_the_bandwidth_delay_product() {
        let long = transfer(50_000_000, 600);
        assert_eq!(long.bdp_bytes(), 3_750_000);
        assert_eq!(long.socket_buffer(), 15_000_000);
        assert_eq!(long.kcp_window(), 3_606);
        let short = transfer(100_000_000, 20);
        assert_eq!(short.socket_buffer(), 4 << 20);
        assert_eq!(short.kcp_window(), 1024);
    }

    #[test]
    fn norm_cc_differs_from_norm_by_its_flag_and_only_the_sender_has_the_rate() {
        let t = transfer(50_000_000, 600);
        let prepared = |system| Prepared {
            system,
            program: PathBuf::from("/x/norm-peer"),
        };
        let (recv, send) = commands(&prepared(System::Norm), &t);
        assert_eq!(
            recv.args,
            [
                "recv",
                "--listen",
                "10.0.0.1:7000",
                "--size",
                "10000000",
                "--seed",
                "3"
            ]
        );
        assert_eq!(send.args[..3], ["send", "--connect", "10.0.0.1:7000"]);
        assert!(send
            .args
            .ends_with(&["--rate".to_owned(), "50000000".to_owned()]));
        let (recv_cc, send_cc) = commands(&prepared(System::NormCc), &t);
        assert_eq!(recv_cc.args.last().map(String::as_str), Some("--cc"));
        assert_eq!(send_cc.args.last().map(String::as_str), Some("--cc"));
    }

    #[test]
    fn rust_systems_run_this_binarys_hidden_subcommands() {
        let t = transfer(100_000_000, 20);
        let prepared = Prepared {
            system: System::TcpBbr,
            program: PathBuf::from("/x/ltx-bench"),
        };
        let (recv, send) = commands(&prepared, &t);
        assert_eq!(recv.args[..3], ["peer", "recv", "--listen"]);
        assert_eq!(send.args[..3], ["peer", "send", "--connect"]);
        for args in [&recv.args, &send.args] {
            let at = args.iter().position(|a| a == "--system").unwrap();
            assert_eq!(args[at + 1], "tcp-bbr");
            assert!(args.contains(&"--socket-buffer".to_owned()));
        }
        let ltx = Prepared {
            system: System::Ltx,
            ..prepared
        };
        let (recv, _) = commands(&ltx, &t);
        assert!(!recv.args.contains(&"--socket-buffer".to_owned()));
    }

    #[test]
    fn only_ltx_is_told_where_to_trace() {
        let t = transfer(50_000_000, 600);
        let dir = Path::new("/tmp/traces/long-delay-5pct");
        for system in [System::Ltx, System::LtxResumed, System::QuicBbr] {
            let prepared = Prepared {
                system,
                program: PathBuf::from("/x/ltx-bench"),
            };
            let (mut recv, mut send) = commands(&prepared, &t);
            trace_into(system, dir, [&mut recv, &mut send]);
            for args in [&recv.args, &send.args] {
                let traced = args.ends_with(&[
                    "--qlog-dir".to_owned(),
                    "/tmp/traces/long-delay-5pct".to_owned(),
                ]);
                assert_eq!(traced, system != System::QuicBbr, "{system:?}: {args:?}");
            }
        }
    }

    #[test]
    fn a_program_that_is_not_there_is_missing_with_its_path() {
        let tools = Toolbox {
            bench: PathBuf::from("/nonexistent/ltx-bench"),
            sources: PathBuf::from("/nonexistent"),
            build_dir: PathBuf::from("/nonexistent/peers"),
        };
        let missing = prepare(System::Ltx, &tools).unwrap_err();
        assert_eq!(missing.system, System::Ltx);
        assert!(
            missing.reason.contains("/nonexistent/ltx-bench"),
            "{missing}"
        );
    }
}
