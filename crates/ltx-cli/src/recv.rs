//! `ltx recv --listen ADDR --dir DIR`: takes files from senders, one
//! stream each, and stores each only once it is whole and verified.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use indicatif::{MultiProgress, ProgressDrawTarget};
use ltx::{Connection, Endpoint, EndpointConfig, Security};
use ltx_cli::exit::{Failed, Failure};
use ltx_cli::live;
use ltx_cli::settings::flag_error;
use ltx_files::{Phase, ReceiveOptions, Received};
use ltx_presets::Profile;
use ltx_sim::units::{parse_duration, parse_size};
use serde_json::json;
use tokio::task::JoinSet;

use crate::keys::RecvKeys;

/// The arguments of `ltx recv`.
#[derive(Debug, Args)]
pub(crate) struct RecvArgs {
    /// The UDP address to listen on, ADDRESS:PORT or a port alone (every
    /// IPv4 address); the senders need this UDP port open.
    #[arg(long, default_value = "0.0.0.0:7000", value_parser = crate::addr::parse_listen)]
    listen: SocketAddr,
    /// Where received files go (created if missing).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Replace existing files of the same name (once the new one is whole
    /// and verified).
    #[arg(long)]
    force: bool,
    /// Refuse any file larger than this (e.g. 10GB).
    #[arg(long, value_parser = parse_size)]
    max_file_size: Option<u64>,
    /// Exit after the first sender's connection ends (its status is the
    /// exit status).
    #[arg(long)]
    once: bool,
    /// Close a connection when nothing is heard from its sender for this
    /// long.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// Print one JSON object per connection instead of progress bars.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    keys: RecvKeys,
}

/// Runs `ltx recv`.
pub(crate) fn run(args: &RecvArgs) -> anyhow::Result<()> {
    let security = args.keys.receiver()?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))
        .context(Failed(Failure::LocalFile))?;
    let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
    runtime.block_on(serve(args, security))
}

async fn serve(args: &RecvArgs, security: ltx::SecurityConfig) -> anyhow::Result<()> {
    let public_key = security.keypair.public();
    let allowed = security.allowed_clients.as_ref().map(|a| a.len());
    let mut config = EndpointConfig::server();
    config.security = Security::Noise(security);
    config
        .transport
        .set_idle_timeout(args.timeout)
        .map_err(|e| flag_error(&e, Profile::Ltx))?;
    let endpoint = Endpoint::bind(args.listen, config)
        .with_context(|| format!("listening on {}", args.listen))?;
    let bars = if args.json {
        MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
    } else {
        MultiProgress::new()
    };
    // On stderr even with --json, so that a script that asked for port 0
    // learns the port (and the key senders need).
    let accepting = match allowed {
        Some(n) => format!("from the {n} allowed sender key(s)"),
        None => "from any sender that has the key".into(),
    };
    eprintln!(
        "receiving into {} on {} (UDP) {accepting}, public key {public_key}",
        args.dir.display(),
        endpoint.local_addr()
    );
    tokio::spawn(log_refusals(endpoint.clone(), bars.clone()));
    let options = Arc::new(ReceiveOptions::new(args.force, args.max_file_size));
    let mut connections = JoinSet::new();
    loop {
        let connection = tokio::select! {
            incoming = endpoint.accept() => match incoming {
                Some(connection) => connection,
                None => bail!("the endpoint stopped"),
            },
            Some(done) = connections.join_next(), if args.once => {
                return done.context("a connection task")?;
            }
        };
        let dir = args.dir.clone();
        let bars = bars.clone();
        let options = options.clone();
        let json = args.json;
        connections.spawn(async move {
            let peer = connection.remote_address();
            let result = receive_connection(&connection, &dir, &options, &bars, json).await;
            if let Err(e) = &result {
                eprintln!("{peer}: {e:#}");
            }
            result
        });
        if args.once {
            return connections
                .join_next()
                .await
                .expect("one connection task")
                .context("a connection task")?;
        }
    }
}

/// Receives every stream of one connection as a file, until the sender
/// closes it. The connection's result is the first file's failure, if any.
async fn receive_connection(
    connection: &Connection,
    dir: &Path,
    options: &Arc<ReceiveOptions>,
    bars: &MultiProgress,
    json: bool,
) -> anyhow::Result<()> {
    let peer = connection.remote_address();
    let started = Instant::now();
    let ticker = tokio::spawn(live::show_stats(connection.clone(), bars.clone()));
    let mut files = JoinSet::new();
    let ended = loop {
        let (mut send, mut recv) = match connection.accept_stream().await {
            Ok(halves) => halves,
            Err(e) => break e.reason,
        };
        let bar = bars.add(live::file_bar(0, "…"));
        let dir = dir.to_owned();
        let options = options.clone();
        files.spawn(async move {
            let result = ltx_files::receive_file(&mut recv, &mut send, &dir, &options, |p| {
                live::show_progress(&bar, p.phase == Phase::Hashing, p.done, p.total)
            })
            .await;
            match &result {
                Ok(received) => {
                    bar.set_prefix(received.name.to_string());
                    bar.finish();
                }
                Err(e) => bar.abandon_with_message(format!("failed: {e}")),
            }
            result
        });
    };
    let mut received: Vec<Received> = Vec::new();
    let mut first_error = None;
    while let Some(joined) = files.join_next().await {
        match joined.context("a file task")? {
            Ok(r) => received.push(r),
            Err(e) => {
                first_error.get_or_insert(anyhow::Error::new(e));
            }
        }
    }
    ticker.abort();
    let stats = connection.stats();
    let seconds = started.elapsed().as_secs_f64();
    let bytes: u64 = received.iter().map(|r| r.bytes_received).sum();
    if json {
        let list: Vec<_> = received
            .iter()
            .map(|r| {
                json!({
                    "name": r.name.as_str(),
                    "path": r.path.display().to_string(),
                    "size": r.size,
                    "bytes_received": r.bytes_received,
                    "resumed_from": r.resumed_from,
                    "already_present": r.already_present,
                    "blake3": r.hash.to_hex().as_str(),
                })
            })
            .collect();
        println!(
            "{}",
            json!({
                "peer": peer.to_string(),
                "time_s": live::round(seconds, 4),
                "bytes": bytes,
                "goodput_bps": (bytes as f64 * 8.0 / seconds.max(1e-9)).round(),
                "symbols_repaired": stats.symbols_repaired,
                "packets_received": stats.packets_received,
                "closed": format!("{ended:?}"),
                "error": first_error.as_ref().map(|e| format!("{e:#}")),
                "files": list,
            })
        );
    } else {
        println!(
            "{peer}: received {} file(s), {} in {seconds:.2} s; {} symbols repaired from coding",
            received.len(),
            live::human_bytes(bytes),
            stats.symbols_repaired
        );
        for r in &received {
            println!("  {}", r.path.display());
        }
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    // A sender that closed gracefully is done; one that went away while
    // files were in flight has already failed them above.
    match ended {
        ltx::CloseReason::ByPeer { code: 0, .. } | ltx::CloseReason::LocallyClosed => Ok(()),
        reason => Err(anyhow::Error::new(ltx::ConnectionError { reason }))
            .with_context(|| format!("the connection from {peer} ended")),
    }
}

/// Prints each handshake this receiver refuses, with the reason and what
/// to change, above the progress bars: a sender that gets no answer
/// cannot tell why, but the receiver's operator can. A client sends its
/// first flight in several copies, and again on every time-out: one line
/// per client and reason every [`REFUSAL_QUIET`].
async fn log_refusals(endpoint: Endpoint, bars: MultiProgress) {
    let mut last_logged: HashMap<(SocketAddr, String), Instant> = HashMap::new();
    while let Some(refusal) = endpoint.refused_handshake().await {
        let why = match refusal.reason {
            ltx::HandshakeError::NotAllowed(key) => {
                format!("its key {key} is not allowed (add it with --peer or to the --allow file)")
            }
            ltx::HandshakeError::Unauthentic => "its handshake did not authenticate: the \
                sender has another public key for this receiver, or another --psk"
                .to_owned(),
            other => other.to_string(),
        };
        let now = Instant::now();
        last_logged.retain(|_, at| now.duration_since(*at) < REFUSAL_QUIET);
        if last_logged
            .insert((refusal.from, why.clone()), now)
            .is_some()
        {
            continue;
        }
        let line = format!("refused a handshake from {}: {why}", refusal.from);
        if bars.is_hidden() {
            eprintln!("{line}");
        } else {
            let _ = bars.println(line);
        }
    }
}

/// How long a refusal of one client for one reason is not logged again.
const REFUSAL_QUIET: Duration = Duration::from_secs(10);
