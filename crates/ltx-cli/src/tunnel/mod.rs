//! `ltx tunnel server` and `ltx tunnel client`: unmodified TCP
//! applications carried over one ltx connection, one stream per TCP
//! connection (the `ltx-tunnel` crate), with the keys, exit codes and
//! messages of `ltx send` and `ltx recv`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use clap::Subcommand;
use ltx::Endpoint;
use ltx_cli::exit::{Failed, Failure};

mod client;
mod config;
mod forward_spec;
mod observe;
mod server;
mod stats;

use observe::LogFormat;
use stats::LogWriter;

/// The `ltx tunnel` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum TunnelCommand {
    /// Accept tunnel clients and connect their TCP connections to the
    /// destinations --permit names (and no others).
    Server(server::ServerArgs),
    /// Carry local TCP connections (-L, --socks) through a tunnel server.
    Client(client::ClientArgs),
}

/// Runs an `ltx tunnel` command.
pub(crate) fn run(command: &TunnelCommand) -> anyhow::Result<()> {
    match command {
        TunnelCommand::Server(args) => server::run(args),
        TunnelCommand::Client(args) => client::run(args),
    }
}

/// A usage error (exit 2) with this message.
fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{message}").context(Failed(Failure::Usage))
}

/// The transport of one side of a tunnel: the tunnel preset, the idle
/// timeout, the path's rate if the user knows it (`--rate-hint`, bits
/// per second), which sizes this side's first flight instead of measuring,
/// and the repair settings (`--delay-per-percent` and the others) for what
/// this side sends.
fn transport(
    idle_timeout: Duration,
    rate_hint_bps: Option<u64>,
    repair: &ltx_proto::RepairSettings,
) -> anyhow::Result<ltx::TransportConfig> {
    let mut transport = ltx_tunnel::tunnel_transport();
    repair.apply(&mut transport).map_err(|e| {
        let flag = e
            .setting()
            .map_or("a repair setting", ltx_cli::settings::flag_of);
        usage(format!("{flag}: {e}"))
    })?;
    transport
        .set_idle_timeout(idle_timeout)
        .map_err(|e| usage(format!("--idle-timeout: {e}")))?;
    transport
        .set_rate_hint(rate_hint_bps.map(|bps| (bps / 8).max(1)))
        .map_err(|e| usage(format!("--rate-hint: {e}")))?;
    Ok(transport)
}

/// The rate the flag gives, or else the file's `key` (bits per second).
fn rate_setting(
    flag: Option<u64>,
    file: &Option<String>,
    key: &str,
) -> anyhow::Result<Option<u64>> {
    match (flag, file) {
        (Some(bits), _) => Ok(Some(bits)),
        (None, Some(text)) => ltx_sim::units::parse_rate(text)
            .map(Some)
            .map_err(|e| usage(format!("{key} in the file: {e}"))),
        (None, None) => Ok(None),
    }
}

/// Logs to stderr: what each side did with each connection, at `info`
/// (`debug` with --verbose, which adds every stream), as text or one JSON
/// object per line, through `writer` (which keeps log lines from being
/// drawn over by the live lines).
fn init_logging(verbose: bool, format: LogFormat, writer: LogWriter) {
    let level = if verbose {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    let make_writer = move || writer.clone();
    let builder = tracing_subscriber::fmt()
        .with_writer(make_writer)
        .with_max_level(level);
    let _ = match format {
        LogFormat::Text => builder.with_target(false).try_init(),
        LogFormat::Json => builder.json().with_target(true).try_init(),
    };
}

/// Tells systemd (a `Type=notify` unit) that the tunnel is ready: its
/// sockets are bound and, on the client, the server answered. Does
/// nothing outside systemd.
fn notify_ready() {
    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        tracing::warn!("could not tell systemd the tunnel is ready: {e}");
    }
}

/// How long a refusal of one client for one reason is not logged again.
const REFUSAL_QUIET: Duration = Duration::from_secs(10);

/// Logs each handshake the server refuses, with the reason and what to
/// change; a client sends its first flight several times, so one line per
/// client and reason every [`REFUSAL_QUIET`].
async fn log_refusals(endpoint: Endpoint) {
    let mut last_logged: HashMap<(SocketAddr, String), Instant> = HashMap::new();
    while let Some(refusal) = endpoint.refused_handshake().await {
        let why = match refusal.reason {
            ltx::HandshakeError::NotAllowed(key) => {
                format!("its key {key} is not allowed (add it to the --allow file)")
            }
            ltx::HandshakeError::Unauthentic => "its handshake did not authenticate: the \
                client has another public key for this server (--peer)"
                .to_owned(),
            other => other.to_string(),
        };
        let now = Instant::now();
        last_logged.retain(|_, at| now.duration_since(*at) < REFUSAL_QUIET);
        if last_logged
            .insert((refusal.from, why.clone()), now)
            .is_none()
        {
            tracing::warn!("refused a client's handshake from {}: {why}", refusal.from);
        }
    }
}
