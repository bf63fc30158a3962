//! `ltx send FILE... HOST:PORT`: files to a receiver over a few lanes
//! (streams) of one connection, each file's offer and data sent without
//! waiting for an answer; `ltx send - HOST:PORT --name NAME` sends
//! standard input.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use ltx::{Connection, ConnectionStats, Endpoint, EndpointConfig, Security};
use ltx_cli::exit::{Failed, Failure};
use ltx_cli::live::{self, units, Display, Side};
use ltx_cli::observe_args::ObserveArgs;
use ltx_cli::path_cache::PathCache;
use ltx_cli::repair_args::RepairArgs;
use ltx_cli::settings::{flag_error, transport_for};
use ltx_cli::stats_lines::print_every;
use ltx_files::{
    FileOutcome, Lane, PlanOptions, SendLane, SendOptions, SendReport, Source, Sources, Stop,
    TransferName,
};
use ltx_presets::Profile;
use ltx_sim::units::{parse_duration, parse_rate};
use serde_json::json;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::task::{JoinHandle, JoinSet};

use crate::file_lines::{End, FileLines};
use crate::keys::{SendKeys, NO_ANSWER_HINT};

/// Lanes a transfer opens at most: enough that a large file does not hold
/// back the small ones behind it, few enough that each keeps a large
/// share of the connection.
const LANES: u8 = 4;

/// How long the end of the lanes may precede the news of the handshake
/// they depend on (both follow from the same packet or close).
const HANDSHAKE_SETTLES: Duration = Duration::from_millis(200);

/// Time for what the driver has queued (the lanes' ends, then the close)
/// to leave the socket before the process goes on.
const CLOSE_LEAVES: Duration = Duration::from_millis(10);

/// The arguments of `ltx send`.
#[derive(Debug, Args)]
pub(crate) struct SendArgs {
    /// The files to send (`-` for standard input, with --name), then the
    /// receiver's HOST:PORT.
    #[arg(required = true, num_args = 2.., value_name = "FILE... HOST:PORT")]
    operands: Vec<String>,
    /// Send directories with everything in them (names keep their
    /// relative paths).
    #[arg(short = 'r', long)]
    recursive: bool,
    /// Send symbolic links as links (the receiver creates those that stay
    /// inside its directory). Without it, a link named on the command
    /// line is followed and one inside a directory is skipped, with a
    /// notice.
    #[arg(long)]
    links: bool,
    /// Do not send the files' mode and modification time (by default the
    /// receiver keeps them, as `rsync -a` and `scp -p` do).
    #[arg(long)]
    no_preserve: bool,
    /// The name standard input (`-`) gets on the receiver, e.g. dir.tar.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// The path's rate if known (e.g. 50mbit): start-up sizes its first
    /// flight from it instead of measuring.
    #[arg(long, value_parser = parse_rate)]
    rate_hint: Option<u64>,
    /// Do not start from the path saved by the last send to this receiver
    /// (within the hour), nor save this one's (careful resume: by default
    /// a repeated send starts at half the saved rate and confirms it).
    #[arg(long)]
    no_resume: bool,
    /// Wait for the handshake before sending (by default the offer and
    /// the first data go in the first flight, as 0-RTT early data, which
    /// has no forward secrecy against a later theft of the receiver's key:
    /// see docs/security.md).
    #[arg(long)]
    no_early_data: bool,
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
    #[command(flatten)]
    observe: ObserveArgs,
}

/// What one run sends: sources in order, and their total size when known.
struct Outgoing {
    sources: Vec<Source>,
    /// The bytes of every file, unless one is a stream.
    total: Option<u64>,
    /// Whether it is standard input, which cannot resume.
    stream: bool,
}

/// Runs `ltx send`.
pub(crate) fn run(args: &SendArgs) -> anyhow::Result<()> {
    let (target, files) = args
        .operands
        .split_last()
        .expect("clap requires two operands");
    let (security, peer) = args.keys.sender()?;
    let outgoing = outgoing(args, files)?;
    let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
    runtime.block_on(send_all(args, target, outgoing, security, peer))
}

/// What the operands stand for: standard input alone, or files and
/// directories (each skipped entry told on stderr).
fn outgoing(args: &SendArgs, files: &[String]) -> anyhow::Result<Outgoing> {
    let usage = |message: String| anyhow!(message).context(Failed(Failure::Usage));
    if files.iter().any(|f| f == "-") {
        if files.len() > 1 {
            return Err(usage(
                "`-` (standard input) is sent alone: send the files in another run".to_owned(),
            ));
        }
        let Some(name) = &args.name else {
            return Err(usage(
                "standard input needs a name on the receiver: add --name NAME (e.g. --name dir.tar)"
                    .to_owned(),
            ));
        };
        let name = TransferName::parse(name)
            .map_err(|e| usage(format!("--name {name:?} cannot be a file's name: {e}")))?;
        if args.recursive || args.links {
            return Err(usage(
                "-r and --links apply to files and directories, not to standard input".to_owned(),
            ));
        }
        return Ok(Outgoing {
            sources: vec![Source::Stream {
                reader: Box::new(tokio::io::stdin()),
                name,
            }],
            total: None,
            stream: true,
        });
    }
    if args.name.is_some() {
        return Err(usage(
            "--name names standard input (`-`); files keep their own names".to_owned(),
        ));
    }
    let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
    let options = PlanOptions {
        recursive: args.recursive,
        links: args.links,
    };
    let plan = ltx_files::plan_transfers_with(&paths, options)
        .map_err(|e| anyhow::Error::new(e).context(Failed(Failure::LocalFile)))?;
    for (path, reason) in &plan.skipped {
        eprintln!("skipping {}: {reason}", path.display());
    }
    if plan.files.is_empty() {
        bail!("nothing to send: the directories given hold no regular files");
    }
    let total = plan.files.iter().map(|f| f.size).sum();
    Ok(Outgoing {
        sources: plan.files.into_iter().map(Source::from).collect(),
        total: Some(total),
        stream: false,
    })
}

async fn send_all(
    args: &SendArgs,
    target: &str,
    outgoing: Outgoing,
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
    config.transport.set_early_data(!args.no_early_data);
    let cache = (!args.no_resume).then(PathCache::for_user).flatten();
    if let Some(cache) = &cache {
        config
            .transport
            .set_saved_path(cache.get(&peer, server, SystemTime::now()));
    }
    args.observe.apply(&mut config)?;
    let endpoint = Endpoint::bind(local, config).context("binding a UDP socket")?;
    let display = Display::new(args.json);
    // Listened to from here to the end, so that no Ctrl-C falls between
    // two waits for it.
    let mut interrupts = signal(SignalKind::interrupt()).context("listening for Ctrl-C")?;
    let started = Instant::now();
    let connection = endpoint
        .connect_early(server, peer)
        .with_context(|| format!("connecting to {server}"))?;
    // The lanes start at once; the handshake completes beside them, and
    // its failure, not the lanes' broken streams, is what the user hears.
    let handshake = {
        let connection = connection.clone();
        tokio::spawn(async move { (connection.established().await, started.elapsed()) })
    };
    if args.no_early_data {
        // Streams open once the handshake is done.
        tokio::select! {
            _ = connection.established() => {}
            _ = interrupts.recv() => {
                return Err(anyhow!("interrupted before anything was sent")
                    .context(Failed(Failure::Interrupted)));
            }
        }
    }
    let stats_lines = args.observe.stats_interval.map(|interval| {
        print_every(interval, started, connection.clone(), |line| {
            println!("{line}")
        })
    });
    let options = SendOptions {
        metadata: !args.no_preserve,
    };
    let lanes = send_files(
        &connection,
        outgoing.sources,
        options,
        &display,
        &mut interrupts,
    )
    .await;
    let elapsed = started.elapsed();
    // The lanes end after the handshake (their answers need it), or when
    // it failed and closed the connection, or on Ctrl-C before it.
    let connecting = match tokio::time::timeout(HANDSHAKE_SETTLES, handshake).await {
        Ok(Ok((Ok(()), connecting))) => connecting,
        Ok(Ok((Err(e), waited))) => return Err(connect_error(e, server, waited)),
        _ => elapsed,
    };
    let lanes = lanes?;
    stats_lines.inspect(JoinHandle::abort);
    let stats = connection.stats();
    if let (Some(cache), Some(saved)) = (&cache, connection.path_to_save()) {
        // A cache: a file that cannot be written costs the next send one
        // round trip of measuring, nothing else.
        let _ = cache.put(&peer, server, saved, SystemTime::now());
    }
    let summary = Summary {
        server,
        elapsed,
        connecting,
        total: outgoing.total,
        stream: outgoing.stream,
        files: lanes.files,
    };
    if lanes.interrupted {
        connection.abort(
            ltx_proto::event::codes::NO_ERROR,
            "the sender was interrupted",
        );
        summary.report(args.json, &stats, !display.is_hidden());
        display.note(&summary.interrupted_at());
        return Err(Failed(Failure::Interrupted).into());
    }
    if let Err(error) = lanes.end {
        connection.abort(ltx_proto::event::codes::APPLICATION, "the sender stopped");
        summary.report(args.json, &stats, !display.is_hidden());
        return Err(error);
    }
    summary.report(args.json, &stats, !display.is_hidden());
    // Every answer is in: the receiver has everything, and knows the
    // transfer is over from the lanes. The end of the lanes' streams (that
    // this side heard the answers) leaves now, the close right behind it;
    // waiting for them to be acknowledged would cost a round trip for
    // nothing, and a receiver that misses them ends by itself.
    tokio::time::sleep(CLOSE_LEAVES).await;
    connection.abort(
        ltx_proto::event::codes::NO_ERROR,
        "the transfer is complete",
    );
    let _ = tokio::time::timeout(CLOSE_LEAVES, connection.closed()).await;
    match summary.first_error() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// A handshake that failed after `waited`, as the user hears it: how long
/// it waited, and what to check when nothing answered.
fn connect_error(e: ltx::ConnectError, server: SocketAddr, waited: Duration) -> anyhow::Error {
    let waited = waited.as_secs_f64();
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
}

/// What the lanes did.
struct LanesEnd {
    /// Every file taken, in lane order.
    files: Vec<SendReport>,
    /// The first lane that broke, if one did.
    end: anyhow::Result<()>,
    /// Whether Ctrl-C stopped the transfer.
    interrupted: bool,
}

/// Sends `sources` over up to [`LANES`] lanes until all are answered; a
/// Ctrl-C stops every lane cleanly (the receiver keeps what it has), a
/// second one ends the process at once.
async fn send_files(
    connection: &Connection,
    sources: Vec<Source>,
    options: SendOptions,
    display: &Display,
    interrupts: &mut Signal,
) -> anyhow::Result<LanesEnd> {
    let count = u8::try_from(sources.len())
        .unwrap_or(u8::MAX)
        .clamp(1, LANES);
    let sources = Arc::new(Sources::new(sources));
    let lines = Arc::new(FileLines::new(display.clone(), End::Sender));
    let (stopper, stop) = Stop::new();
    let _connection_line = display.connection(connection.clone(), Side::Sending);
    let mut tasks = JoinSet::new();
    for index in 0..count {
        let lane = Lane::new(index, count).expect("index below count");
        let (mut send, mut recv) = connection.open_stream()?;
        let sources = sources.clone();
        let lines = lines.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let events = |event: ltx_files::Event<'_>| lines.on_event(Instant::now(), event);
            let done = ltx_files::send_lane(
                &mut recv, &mut send, lane, &sources, &options, &stop, &events,
            )
            .await;
            (index, done)
        });
    }
    let mut lanes: Vec<(u8, SendLane)> = Vec::new();
    let mut interrupted = false;
    while lanes.len() < usize::from(count) {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                lanes.push(joined.context("a lane's task")?);
            }
            _ = interrupts.recv() => {
                if interrupted {
                    connection.abort(ltx_proto::event::codes::APPLICATION, "the sender was interrupted");
                    return Err(anyhow!("interrupted").context(Failed(Failure::Interrupted)));
                }
                interrupted = true;
                stopper.stop();
                display.note("stopping: the receiver keeps what it has (Ctrl-C again to quit at once)");
            }
        }
    }
    lanes.sort_by_key(|(index, _)| *index);
    let mut files = Vec::new();
    let mut end = Ok(());
    for (_, lane) in lanes {
        files.extend(lane.files);
        if let (Err(error), Ok(())) = (lane.end, &end) {
            end = Err(anyhow::Error::new(error).context("a lane of the transfer broke"));
        }
    }
    Ok(LanesEnd {
        files,
        end,
        interrupted,
    })
}

/// The end of a run, for its summary and its exit status.
struct Summary {
    server: SocketAddr,
    /// From the start to the last answer.
    elapsed: Duration,
    /// The part of it spent connecting.
    connecting: Duration,
    total: Option<u64>,
    stream: bool,
    files: Vec<SendReport>,
}

impl Summary {
    /// The bytes that went over the connection.
    fn bytes_sent(&self) -> u64 {
        self.files.iter().map(|f| f.bytes_sent).sum()
    }

    /// The bytes the receiver holds now: the files it stored or had, and
    /// the parts it keeps of stopped ones.
    fn held(&self) -> u64 {
        self.files
            .iter()
            .map(|f| match &f.outcome {
                FileOutcome::Done(sent) => sent.size,
                FileOutcome::Stopped { kept, .. } => *kept,
                FileOutcome::Failed(_) => 0,
            })
            .sum()
    }

    /// What to tell a user who pressed Ctrl-C.
    fn interrupted_at(&self) -> String {
        if self.stream {
            return format!(
                "interrupted at {}; standard input does not resume: run the command again from the start",
                units::bytes(self.bytes_sent())
            );
        }
        format!(
            "interrupted at {} of {}; run the same command again to resume",
            units::bytes(self.held()),
            units::bytes(self.total.unwrap_or(0))
        )
    }

    /// The first file that failed, as the run's error.
    fn first_error(self) -> Option<anyhow::Error> {
        self.files.into_iter().find_map(|f| match f.outcome {
            FileOutcome::Failed(error) => {
                Some(anyhow::Error::new(error).context(format!("sending {}", f.name)))
            }
            _ => None,
        })
    }

    /// One JSON object on stdout, or lines for people. `drawn`: the
    /// display already showed how each file ended.
    fn report(&self, json: bool, stats: &ConnectionStats, drawn: bool) {
        let bytes = self.bytes_sent();
        let seconds = self.elapsed.as_secs_f64();
        if json {
            let files: Vec<_> = self.files.iter().map(file_json).collect();
            println!(
                "{}",
                json!({
                    "peer": self.server.to_string(),
                    "time_s": live::round(seconds, 4),
                    "connecting_s": live::round(self.connecting.as_secs_f64(), 4),
                    "bytes": bytes,
                    "goodput_bps": (bytes as f64 * 8.0 / seconds.max(1e-9)).round(),
                    "overhead": live::round(stats.bytes_sent as f64 / bytes.max(1) as f64, 4),
                    "loss_estimate": live::round(stats.loss_rate, 5),
                    "rtt_ms": live::round(stats.rtt.as_secs_f64() * 1e3, 2),
                    "repair_symbols_sent": stats.repair_symbols_sent,
                    "source_symbols_sent": stats.source_symbols_sent,
                    "files": files,
                })
            );
            return;
        }
        let done = self
            .files
            .iter()
            .filter(|f| matches!(f.outcome, FileOutcome::Done(_)))
            .count();
        println!(
            "sent {done} file(s), {} in {seconds:.2} s ({}, {:.2} s of it connecting) to {}; \
             {:.3} bytes on the wire per byte, loss seen {:.1} %, {} repair symbols for {} \
             source symbols",
            units::bytes(bytes),
            units::bit_rate(bytes as f64 / seconds.max(1e-9)),
            self.connecting.as_secs_f64(),
            self.server,
            stats.bytes_sent as f64 / bytes.max(1) as f64,
            stats.loss_rate * 100.0,
            stats.repair_symbols_sent,
            stats.source_symbols_sent,
        );
        if drawn {
            return;
        }
        for file in &self.files {
            match &file.outcome {
                FileOutcome::Done(sent) if sent.already_present => {
                    println!("  {}: already on the receiver, identical", file.name)
                }
                FileOutcome::Done(sent) if sent.resumed_from > 0 => println!(
                    "  {}: resumed at {} of {}",
                    file.name,
                    units::bytes(sent.resumed_from),
                    units::bytes(sent.size)
                ),
                FileOutcome::Done(_) => {}
                FileOutcome::Stopped { kept, .. } => println!(
                    "  {}: interrupted; the receiver keeps {}",
                    file.name,
                    units::bytes(*kept)
                ),
                FileOutcome::Failed(error) => println!("  {}: {error}", file.name),
            }
        }
    }
}

/// One file of the JSON summary.
fn file_json(file: &SendReport) -> serde_json::Value {
    let (resumed_from, already_present, blake3, error) = match &file.outcome {
        FileOutcome::Done(sent) => (
            sent.resumed_from,
            sent.already_present,
            Some(sent.hash.to_hex().to_string()),
            None,
        ),
        FileOutcome::Stopped { kept, .. } => (
            0,
            false,
            None,
            Some(format!("interrupted; the receiver keeps {kept} bytes")),
        ),
        FileOutcome::Failed(error) => (0, false, None, Some(error.to_string())),
    };
    json!({
        "name": file.name.as_str(),
        "size": file.size,
        "bytes_sent": file.bytes_sent,
        "resumed_from": resumed_from,
        "already_present": already_present,
        "blake3": blake3,
        "error": error,
    })
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
