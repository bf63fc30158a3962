//! `ltx send FILE... HOST:PORT`: files to a receiver, one stream each, in
//! one connection.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget};
use ltx::{Connection, ConnectionStats, Endpoint, EndpointConfig, Security};
use ltx_cli::exit::{Failed, Failure};
use ltx_cli::live;
use ltx_cli::repair_args::RepairArgs;
use ltx_cli::settings::{flag_error, transport_for};
use ltx_files::{Phase, PlannedFile, Sent};
use ltx_presets::Profile;
use ltx_sim::units::{parse_duration, parse_rate};
use serde_json::json;
use tokio::task::JoinSet;

use crate::keys::{SendKeys, NO_ANSWER_HINT};

/// Files sent at once; more wait their turn (each file's exchange costs a
/// round trip or two before its data flows, which concurrency hides).
const CONCURRENT_FILES: usize = 4;

/// The arguments of `ltx send`.
#[derive(Debug, Args)]
pub(crate) struct SendArgs {
    /// The files to send, then the receiver's HOST:PORT.
    #[arg(required = true, num_args = 2.., value_name = "FILE... HOST:PORT")]
    operands: Vec<String>,
    /// Send directories with everything in them (names keep their
    /// relative paths).
    #[arg(short = 'r', long)]
    recursive: bool,
    /// The path's rate if known (e.g. 50mbit): start-up sizes its first
    /// flight from it instead of measuring.
    #[arg(long, value_parser = parse_rate)]
    rate_hint: Option<u64>,
    /// The controller and redundancy preset: ltx (default), lt-tcp, ccp,
    /// dfec, ctcp, fectcp, newreno, cubic or bbr.
    #[arg(long, default_value = "ltx")]
    profile: Profile,
    /// Give up when nothing is heard from the receiver for this long
    /// (the handshake included).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// Print one JSON object with the summary instead of progress bars.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    keys: SendKeys,
    #[command(flatten)]
    repair: RepairArgs,
}

/// Runs `ltx send`.
pub(crate) fn run(args: &SendArgs) -> anyhow::Result<()> {
    let (target, files) = args
        .operands
        .split_last()
        .expect("clap requires two operands");
    let (security, peer) = args.keys.sender()?;
    let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
    let plan = ltx_files::plan_transfers(&paths, args.recursive)
        .map_err(|e| anyhow::Error::new(e).context(Failed(Failure::LocalFile)))?;
    if plan.files.is_empty() {
        bail!("nothing to send: the directories given hold no regular files");
    }
    for (path, reason) in &plan.skipped {
        eprintln!("skipping {}: {reason}", path.display());
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
    runtime.block_on(send_all(args, target, plan.files, security, peer))
}

async fn send_all(
    args: &SendArgs,
    target: &str,
    files: Vec<PlannedFile>,
    security: ltx::SecurityConfig,
    peer: ltx::PublicKey,
) -> anyhow::Result<()> {
    let server = resolve(target).await?;
    let local: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let mut config = EndpointConfig::client();
    config.security = Security::Noise(security);
    config.transport = transport_for(args.profile, &args.repair, args.rate_hint)?;
    config
        .transport
        .set_idle_timeout(args.timeout)
        .map_err(|e| flag_error(&e, args.profile))?;
    let endpoint = Endpoint::bind(local, config).context("binding a UDP socket")?;
    let bars = if args.json {
        MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
    } else {
        MultiProgress::new()
    };
    let started = Instant::now();
    let connection = connect(&endpoint, server, peer, &bars).await?;
    let ticker = tokio::spawn(live::show_stats(connection.clone(), bars.clone()));
    let outcome = send_files(&connection, files, &bars).await;
    let elapsed = started.elapsed();
    ticker.abort();
    let stats = connection.stats();
    let sent = match outcome {
        Ok(sent) => sent,
        Err(error) => {
            connection.abort(ltx_proto::event::codes::APPLICATION, "the sender stopped");
            return Err(error);
        }
    };
    connection.close().await.context("closing the connection")?;
    report(args.json, server, &sent, &stats, elapsed);
    Ok(())
}

/// Connects to `server`, with a spinner while the handshake runs; a
/// failure says how long it waited, and what to check when nothing
/// answered.
async fn connect(
    endpoint: &Endpoint,
    server: SocketAddr,
    peer: ltx::PublicKey,
    bars: &MultiProgress,
) -> anyhow::Result<Connection> {
    let connecting = bars.add(ProgressBar::new_spinner());
    connecting.set_message(format!("connecting to {server}"));
    connecting.enable_steady_tick(Duration::from_millis(120));
    let started = Instant::now();
    let connection = endpoint.connect(server, peer).await.map_err(|e| {
        let waited = started.elapsed().as_secs_f64();
        let unanswered = matches!(
            e,
            ltx::ConnectError::Closed(ltx::CloseReason::HandshakeTimeout)
        );
        let closed_port = matches!(
            e,
            ltx::ConnectError::Closed(ltx::CloseReason::Unreachable(
                ltx_proto::Unreachable::PortClosed
            ))
        );
        if closed_port {
            return anyhow::Error::new(e).context(format!("connecting to UDP {server}"));
        }
        if unanswered {
            return anyhow::anyhow!("{server} did not answer in {waited:.0} s; {NO_ANSWER_HINT}")
                .context(Failed(Failure::Unreachable));
        }
        anyhow::Error::new(e).context(format!("connecting to {server} (waited {waited:.1} s)"))
    })?;
    connecting.finish_and_clear();
    Ok(connection)
}

/// Sends every file, [`CONCURRENT_FILES`] at a time, a progress bar each.
/// One file's failure ends the others: the user runs the command again,
/// and each file resumes where it stopped.
async fn send_files(
    connection: &Connection,
    files: Vec<PlannedFile>,
    bars: &MultiProgress,
) -> anyhow::Result<Vec<Sent>> {
    let semaphore = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_FILES));
    let mut tasks = JoinSet::new();
    for file in files {
        let bar = bars.add(live::file_bar(file.size, file.name.as_str()));
        let connection = connection.clone();
        let semaphore = semaphore.clone();
        tasks.spawn(async move {
            let _permit = semaphore.acquire_owned().await.expect("never closed");
            let result = send_one(&connection, &file, &bar).await;
            match &result {
                Ok(_) => bar.finish(),
                Err(e) => bar.abandon_with_message(format!("failed: {e:#}")),
            }
            result.with_context(|| format!("sending {}", file.local.display()))
        });
    }
    let mut sent = Vec::new();
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined.context("a transfer task")? {
            Ok(s) => sent.push(s),
            Err(e) => {
                tasks.abort_all();
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(sent),
    }
}

/// The summary of a finished run: one JSON object, or lines for people.
fn report(
    json: bool,
    server: SocketAddr,
    sent: &[Sent],
    stats: &ConnectionStats,
    elapsed: Duration,
) {
    let bytes: u64 = sent.iter().map(|s| s.bytes_sent).sum();
    let seconds = elapsed.as_secs_f64();
    if json {
        let files: Vec<_> = sent
            .iter()
            .map(|s| {
                json!({
                    "name": s.name.as_str(),
                    "size": s.size,
                    "bytes_sent": s.bytes_sent,
                    "resumed_from": s.resumed_from,
                    "already_present": s.already_present,
                    "blake3": s.hash.to_hex().as_str(),
                })
            })
            .collect();
        println!(
            "{}",
            json!({
                "peer": server.to_string(),
                "time_s": live::round(seconds, 4),
                "bytes": bytes,
                "goodput_bps": (bytes as f64 * 8.0 / seconds).round(),
                "overhead": live::round(stats.bytes_sent as f64 / bytes.max(1) as f64, 4),
                "loss_estimate": live::round(stats.loss_rate, 5),
                "rtt_ms": live::round(stats.rtt.as_secs_f64() * 1e3, 2),
                "repair_symbols_sent": stats.repair_symbols_sent,
                "source_symbols_sent": stats.source_symbols_sent,
                "files": files,
            })
        );
    } else {
        println!(
            "sent {} file(s), {} in {seconds:.2} s ({:.2} Mbit/s) to {server}; \
             {:.3} bytes on the wire per byte, loss seen {:.1} %, {} repair symbols for {} source symbols",
            sent.len(),
            live::human_bytes(bytes),
            bytes as f64 * 8.0 / seconds / 1e6,
            stats.bytes_sent as f64 / bytes.max(1) as f64,
            stats.loss_rate * 100.0,
            stats.repair_symbols_sent,
            stats.source_symbols_sent,
        );
        for s in sent
            .iter()
            .filter(|s| s.resumed_from > 0 || s.already_present)
        {
            if s.already_present {
                println!("  {}: already on the receiver, identical", s.name.as_str());
            } else {
                println!(
                    "  {}: resumed at {} of {}",
                    s.name.as_str(),
                    live::human_bytes(s.resumed_from),
                    live::human_bytes(s.size)
                );
            }
        }
    }
}

async fn send_one(
    connection: &Connection,
    file: &PlannedFile,
    bar: &ProgressBar,
) -> anyhow::Result<Sent> {
    let (mut send, mut recv) = connection.open_stream()?;
    let sent = ltx_files::send_file(&mut recv, &mut send, &file.local, &file.name, |p| {
        live::show_progress(bar, p.phase == Phase::Hashing, p.done, p.total)
    })
    .await?;
    Ok(sent)
}

/// The socket address of `HOST:PORT`, looked up if it is a name.
async fn resolve(target: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(addr) = target.parse() {
        return Ok(addr);
    }
    if !target.contains(':') {
        bail!("{target:?} is not HOST:PORT (the receiver's address comes last)");
    }
    tokio::net::lookup_host(target)
        .await
        .with_context(|| format!("looking up {target}"))?
        .next()
        .ok_or_else(|| anyhow!("{target} has no address"))
}
