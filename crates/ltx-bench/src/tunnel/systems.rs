//! The systems `ltx-bench tunnel` compares, how each is prepared, and the
//! command lines of its two ends.
//!
//! Every tunnel forwards one local TCP port in the client namespace
//! ([`CLIENT_PORT`]) to the application server in the server namespace
//! ([`APP_PORT`] on its loopback); the direct systems connect to the
//! application server across the path.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::super::peer::systems::{CommandLine, Toolbox};

/// The application server's port in the server namespace.
pub(crate) const APP_PORT: u16 = 8080;
/// The tunnel client's local port in the client namespace.
pub(crate) const CLIENT_PORT: u16 = 18080;
/// The tunnel server's UDP port.
pub(crate) const TUNNEL_PORT: u16 = 7000;

/// One system under test, as the `system` column names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub(crate) enum TunnelSystem {
    /// `ltx tunnel` with its defaults.
    Ltx,
    /// `ltx tunnel` told the link's rate (`--rate-hint`), beside Brutal.
    LtxHint,
    /// One `ltx send` of the bulk workload's bytes (the ltx peer of `ltx-bench
    /// emu`): the bulk target's reference.
    LtxSend,
    /// No tunnel, the kernel's TCP with Cubic.
    DirectCubic,
    /// No tunnel, the kernel's TCP with BBR.
    DirectBbr,
    /// kcp-go with smux, kcptun's defaults.
    Kcptun,
    /// One QUIC stream per TCP connection, quinn's BBR.
    QuicBbr,
    /// One QUIC stream per TCP connection, Brutal told the link's rate.
    QuicBrutal,
}

impl TunnelSystem {
    /// Every system, in the order reports list them.
    pub(crate) const ALL: [TunnelSystem; 8] = [
        TunnelSystem::Ltx,
        TunnelSystem::LtxHint,
        TunnelSystem::LtxSend,
        TunnelSystem::DirectCubic,
        TunnelSystem::DirectBbr,
        TunnelSystem::Kcptun,
        TunnelSystem::QuicBbr,
        TunnelSystem::QuicBrutal,
    ];

    /// The system's name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TunnelSystem::Ltx => "ltx",
            TunnelSystem::LtxHint => "ltx-hint",
            TunnelSystem::LtxSend => "ltx-send",
            TunnelSystem::DirectCubic => "direct-cubic",
            TunnelSystem::DirectBbr => "direct-bbr",
            TunnelSystem::Kcptun => "kcptun",
            TunnelSystem::QuicBbr => "quic-bbr",
            TunnelSystem::QuicBrutal => "quic-brutal",
        }
    }

    /// Whether it is one of ltx's own columns rather than a peer.
    pub(crate) fn is_ltx(self) -> bool {
        matches!(
            self,
            TunnelSystem::Ltx | TunnelSystem::LtxHint | TunnelSystem::LtxSend
        )
    }

    /// The kernel congestion controller of the namespaces' TCP, for the
    /// direct systems.
    pub(crate) fn kernel_cc(self) -> Option<&'static str> {
        match self {
            TunnelSystem::DirectCubic => Some("cubic"),
            TunnelSystem::DirectBbr => Some("bbr"),
            _ => None,
        }
    }
}

/// The programs a run needs.
#[derive(Debug, Clone)]
pub(crate) struct Programs {
    /// This binary: the applications, the QUIC tunnel, the ltx peer.
    pub(crate) bench: PathBuf,
    /// The `ltx` binary beside it.
    pub(crate) ltx: PathBuf,
    /// The kcptun-equivalent driver, once built.
    pub(crate) kcptun: Option<PathBuf>,
    /// The server's key file and public key for `ltx tunnel`.
    pub(crate) ltx_key: Option<(PathBuf, String)>,
}

/// Finds `ltx` beside this binary; the reason when it is not there.
pub(crate) fn find_ltx(tools: &Toolbox) -> Result<PathBuf, String> {
    let ltx = tools.bench.with_file_name("ltx");
    if ltx.is_file() {
        Ok(ltx)
    } else {
        Err(format!(
            "{} does not exist (cargo build with the same profile, -p ltx-cli)",
            ltx.display()
        ))
    }
}

/// Whether both ends of `ltx tunnel` take `--rate-hint`; the reason when
/// not.
pub(crate) fn check_rate_hint(ltx: &Path) -> Result<(), String> {
    for side in ["server", "client"] {
        let output = Command::new(ltx)
            .args(["tunnel", side, "--help"])
            .output()
            .map_err(|e| format!("running {} tunnel {side} --help: {e}", ltx.display()))?;
        if !String::from_utf8_lossy(&output.stdout).contains("--rate-hint") {
            return Err(format!("`ltx tunnel {side}` has no --rate-hint flag"));
        }
    }
    Ok(())
}

/// Makes the tunnel server's key with `ltx keygen`: the file and the
/// public key it prints.
pub(crate) fn ltx_keygen(ltx: &Path, dir: &Path) -> Result<(PathBuf, String), String> {
    let file = dir.join("tunnel-server.key");
    let _ = std::fs::remove_file(&file);
    let output = Command::new(ltx)
        .args(["keygen", "--out"])
        .arg(&file)
        .output()
        .map_err(|e| format!("running ltx keygen: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "ltx keygen failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let key = text
        .split_whitespace()
        .last()
        .ok_or("ltx keygen printed no public key")?
        .to_owned();
    Ok((file, key))
}

/// Builds the kcptun-equivalent driver under `bench/peers/kcptun`.
pub(crate) fn build_kcptun(tools: &Toolbox) -> Result<PathBuf, String> {
    let go = ["go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"]
        .into_iter()
        .find(|go| Command::new(go).arg("version").output().is_ok())
        .ok_or("no Go toolchain (go) on this machine")?;
    std::fs::create_dir_all(&tools.build_dir)
        .map_err(|e| format!("creating {}: {e}", tools.build_dir.display()))?;
    let program = tools.build_dir.join("kcptun-peer");
    let output = Command::new(go)
        .current_dir(tools.sources.join("kcptun"))
        .args(["build", "-o"])
        .arg(&program)
        .arg(".")
        .output()
        .map_err(|e| format!("go build could not start: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("go build failed: {}", stderr.trim()));
    }
    Ok(program)
}

/// What sizes a system's windows and rates: the path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathInfo {
    /// Link rate, bits per second.
    pub(crate) rate_bps: u64,
    /// Socket buffers for the QUIC tunnel, bytes.
    pub(crate) socket_buffer: u64,
    /// kcp windows, packets.
    pub(crate) kcp_window: u64,
}

/// The tunnel's server and client command lines (none for the direct
/// systems and for `ltx-send`, which the run starts itself).
pub(crate) fn tunnel_commands(
    system: TunnelSystem,
    programs: &Programs,
    path: &PathInfo,
    server_ip: Ipv4Addr,
) -> Option<(CommandLine, CommandLine)> {
    let udp = SocketAddr::from((server_ip, TUNNEL_PORT)).to_string();
    let target = SocketAddr::from((Ipv4Addr::LOCALHOST, APP_PORT)).to_string();
    let local = SocketAddr::from((Ipv4Addr::LOCALHOST, CLIENT_PORT)).to_string();
    let line = |program: &Path, args: Vec<String>| CommandLine {
        program: program.to_owned(),
        args,
    };
    let strings = |args: &[&str]| args.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    match system {
        TunnelSystem::DirectCubic | TunnelSystem::DirectBbr | TunnelSystem::LtxSend => None,
        TunnelSystem::Ltx | TunnelSystem::LtxHint => {
            let (key, public) = programs.ltx_key.as_ref()?;
            let mut server = strings(&[
                "tunnel",
                "server",
                "--listen",
                &udp,
                "--key",
                &key.to_string_lossy(),
                "--allow-any-client",
                "--permit",
                &target,
            ]);
            let forward = format!("{CLIENT_PORT}:{target}");
            let mut client = strings(&["tunnel", "client", "--server", &udp, "--peer", public]);
            client.extend(strings(&["-L", &forward]));
            if system == TunnelSystem::LtxHint {
                // Both ends are told: the download flows from the server.
                let rate = vec!["--rate-hint".to_owned(), format!("{}bit", path.rate_bps)];
                server.extend(rate.clone());
                client.extend(rate);
            }
            Some((line(&programs.ltx, server), line(&programs.ltx, client)))
        }
        TunnelSystem::Kcptun => {
            let program = programs.kcptun.as_ref()?;
            let window = path.kcp_window.to_string();
            let server = strings(&[
                "server", "--listen", &udp, "--target", &target, "--window", &window,
            ]);
            let client = strings(&[
                "client", "--listen", &local, "--remote", &udp, "--window", &window,
            ]);
            Some((line(program, server), line(program, client)))
        }
        TunnelSystem::QuicBbr | TunnelSystem::QuicBrutal => {
            let cc = if system == TunnelSystem::QuicBbr {
                "bbr"
            } else {
                "brutal"
            };
            let mut common = strings(&[
                "--cc",
                cc,
                "--socket-buffer",
                &path.socket_buffer.to_string(),
            ]);
            if system == TunnelSystem::QuicBrutal {
                common.extend(strings(&["--rate", &path.rate_bps.to_string()]));
            }
            let mut server = strings(&[
                "tunnel-peer",
                "quic-server",
                "--listen",
                &udp,
                "--target",
                &target,
            ]);
            server.extend(common.clone());
            let mut client = strings(&[
                "tunnel-peer",
                "quic-client",
                "--listen",
                &local,
                "--remote",
                &udp,
            ]);
            client.extend(common);
            Some((line(&programs.bench, server), line(&programs.bench, client)))
        }
    }
}
