//! `ltx recv --listen ADDR --dir DIR`: takes files from senders, over the
//! lanes (streams) of each sender's connection, and stores each only once
//! it is whole and verified; `--stdout` writes one file to standard output
//! instead.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use ltx::{CloseReason, Connection, Endpoint, EndpointConfig, RecvStream, Security};
use ltx_cli::exit::{Failed, Failure};
use ltx_cli::live::{self, units, Display, Side};
use ltx_cli::metrics::MetricsServer;
use ltx_cli::observe_args::ObserveArgs;
use ltx_cli::settings::flag_error;
use ltx_cli::stats_lines::print_every;
use ltx_files::{
    Completion, FileOutcome, Inbox, Lane, Peer, ReceiveLane, ReceiveOptions, ReceiveReport,
    TransferError,
};
use ltx_presets::Profile;
use ltx_sim::units::{parse_duration, parse_size};
use serde_json::json;
use tokio::task::{JoinHandle, JoinSet};

use crate::file_lines::{End, FileLines};
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
    /// Write the one file a sender sends to standard output instead of a
    /// directory (its bytes as they arrive; the exit status says whether
    /// all of them verified). Implies --once.
    #[arg(long, conflicts_with_all = ["dir", "force"])]
    stdout: bool,
    /// Replace existing files of the same name (once the new one is whole
    /// and verified).
    #[arg(long)]
    force: bool,
    /// Refuse any file larger than this (e.g. 10GB).
    #[arg(long, value_parser = parse_size)]
    max_file_size: Option<u64>,
    /// Give files this receiver's defaults for mode and modification time,
    /// not the ones their sender sent.
    #[arg(long)]
    no_preserve: bool,
    /// Exit after the first sender's transfer ends (its status is the exit
    /// status).
    #[arg(long)]
    once: bool,
    /// Close a connection when nothing is heard from its sender for this
    /// long.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// Print one JSON object per connection instead of progress bars (on
    /// standard error with --stdout).
    #[arg(long)]
    json: bool,
    /// Serve the receiver's counters for Prometheus at
    /// http://ADDR:PORT/metrics (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<SocketAddr>,
    #[command(flatten)]
    keys: RecvKeys,
    #[command(flatten)]
    observe: ObserveArgs,
}

/// Runs `ltx recv`.
pub(crate) fn run(args: &RecvArgs) -> anyhow::Result<()> {
    let security = args.keys.receiver()?;
    if !args.stdout {
        std::fs::create_dir_all(&args.dir)
            .with_context(|| format!("creating {}", args.dir.display()))
            .context(Failed(Failure::LocalFile))?;
    }
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
    // A sender's offer and first data may come in its first flight; a
    // replayed flight is refused (docs/security.md).
    config.transport.set_early_data(true);
    args.observe.apply(&mut config)?;
    let endpoint = Endpoint::bind(args.listen, config)
        .with_context(|| format!("listening on {}", args.listen))?;
    let display = Display::new(args.json);
    // On stderr even with --json, so that a script that asked for port 0
    // learns the port (and the key senders need).
    let accepting = match allowed {
        Some(n) => format!("from the {n} allowed sender key(s)"),
        None => "from any sender that has the key".into(),
    };
    let into = if args.stdout {
        "standard output".to_owned()
    } else {
        args.dir.display().to_string()
    };
    eprintln!(
        "receiving into {into} on {} (UDP) {accepting}, public key {public_key}",
        endpoint.local_addr()
    );
    let _metrics = match args.metrics {
        Some(addr) => {
            let server = MetricsServer::start(addr, endpoint.clone()).await?;
            eprintln!(
                "metrics for Prometheus at http://{}/metrics",
                server.local_addr()
            );
            Some(server)
        }
        None => None,
    };
    tokio::spawn(log_refusals(endpoint.clone(), display.clone()));
    let mut options = ReceiveOptions::new(args.force, args.max_file_size);
    options.keep_metadata = !args.no_preserve;
    options.gives_up_after = Some(args.timeout);
    // One inbox for every connection: two transfers never write one file,
    // and a sender's rerun can take over what its silent first run holds.
    let inbox = Arc::new(if args.stdout {
        Inbox::writer(tokio::io::stdout(), options)
    } else {
        Inbox::directory(&args.dir, options)
    });
    let once = args.once || args.stdout;
    let summaries = if args.stdout {
        Summaries::Stderr
    } else {
        Summaries::Stdout
    };
    let mut connections = JoinSet::new();
    let started = Instant::now();
    loop {
        let connection = tokio::select! {
            incoming = endpoint.accept() => match incoming {
                Some(connection) => connection,
                None => bail!("the endpoint stopped"),
            },
            Some(done) = connections.join_next(), if once => {
                return done.context("a connection task")?;
            }
        };
        let inbox = inbox.clone();
        let display = display.clone();
        let json = args.json;
        let stats_lines = args.observe.stats_interval.map(|interval| {
            let print = match summaries {
                Summaries::Stdout => |line: &serde_json::Value| println!("{line}"),
                Summaries::Stderr => |line: &serde_json::Value| eprintln!("{line}"),
            };
            print_every(interval, started, connection.clone(), print)
        });
        connections.spawn(async move {
            let peer = connection.remote_address();
            let (transfer, rest) = receive_connection(&connection, &inbox, &display).await;
            stats_lines.inspect(JoinHandle::abort);
            transfer.report(json, summaries, &display);
            rest.let_go(&connection).await;
            let result = transfer.result();
            if let Err(e) = &result {
                display.note(&format!("{peer}: {e:#}"));
            }
            result
        });
        if once {
            return connections
                .join_next()
                .await
                .expect("one connection task")
                .context("a connection task")?;
        }
    }
}

/// Where a connection's summary goes: stdout, unless stdout carries the
/// file.
#[derive(Debug, Clone, Copy)]
enum Summaries {
    Stdout,
    Stderr,
}

/// What one connection brought.
struct Transfer {
    peer: SocketAddr,
    /// From the connection's start to the transfer's last byte (or to the
    /// connection's end, for one that did not complete).
    elapsed: Duration,
    /// Whether every lane said goodbye.
    complete: bool,
    /// How the connection ended, if it did before the report.
    closed: Option<CloseReason>,
    /// Every file offered, in lane order.
    files: Vec<ReceiveReport>,
    /// The first lane that broke, if the transfer did not complete.
    lane_error: Option<TransferError>,
    symbols_repaired: u64,
    packets_received: u64,
}

/// Receives the lanes of one connection until every lane has said
/// goodbye (the transfer is complete, whether or not the connection's
/// close ever arrives) or until the connection ends. Returns what came,
/// and what remains to wait for before the connection is let go.
async fn receive_connection(
    connection: &Connection,
    inbox: &Arc<Inbox>,
    display: &Display,
) -> (Transfer, Remaining) {
    let peer = connection.remote_address();
    let started = Instant::now();
    let connection_line = display.connection(connection.clone(), Side::Receiving);
    let lines = Arc::new(FileLines::new(display.clone(), End::Receiver));
    let sender = Arc::new(sender_of(connection));
    let mut lanes: JoinSet<(ReceiveLane, RecvStream)> = JoinSet::new();
    let mut heard: JoinSet<Option<Lane>> = JoinSet::new();
    let mut completion = Completion::default();
    let mut reports: Vec<(Option<Lane>, ReceiveLane)> = Vec::new();
    let mut closed = None;
    loop {
        let over = closed.is_some() && lanes.is_empty();
        if completion.is_complete() || over {
            break;
        }
        tokio::select! {
            accepted = connection.accept_stream(), if closed.is_none() => match accepted {
                Ok((mut send, mut recv)) => {
                    let inbox = inbox.clone();
                    let lines = lines.clone();
                    let sender = sender.clone();
                    lanes.spawn(async move {
                        let events = |event: ltx_files::Event<'_>| lines.on_event(Instant::now(), event);
                        let lane =
                            ltx_files::receive_lane(&mut recv, &mut send, &inbox, &sender, &events).await;
                        (lane, recv)
                    });
                }
                Err(e) => closed = Some(e.reason),
            },
            Some(done) = lanes.join_next() => {
                let Ok((lane, mut recv)) = done else { continue };
                completion.lane_ended(Instant::now(), &lane);
                if let (Ok(()), Some(which)) = (&lane.end, lane.lane) {
                    heard.spawn(async move {
                        ltx_files::sender_finished(&mut recv).await.ok().map(|()| which)
                    });
                }
                reports.push((lane.lane, lane));
            }
        }
    }
    drop(connection_line);
    reports.sort_by_key(|(lane, _)| lane.map(|l| l.index()));
    let end = completion.completed_at().unwrap_or_else(Instant::now);
    let stats = connection.stats();
    let closed = closed.or_else(|| connection.close_reason());
    let mut files = Vec::new();
    let mut lane_error = None;
    for (_, lane) in reports {
        files.extend(lane.files);
        if let Err(error) = lane.end {
            lane_error.get_or_insert(error);
        }
    }
    let transfer = Transfer {
        peer,
        elapsed: end.saturating_duration_since(started),
        complete: completion.is_complete(),
        closed,
        files,
        lane_error,
        symbols_repaired: stats.symbols_repaired,
        packets_received: stats.packets_received,
    };
    (transfer, Remaining { completion, heard })
}

/// What a complete transfer waits for before the receiver lets its
/// connection go: the sender ending its streams after the last goodbye,
/// which says it heard every answer.
struct Remaining {
    completion: Completion,
    heard: JoinSet<Option<Lane>>,
}

impl Remaining {
    /// Waits until the sender has heard every answer, the connection ends,
    /// or a grace of a few round trips passes; then closes the connection
    /// if it is still open: its own close, if it comes, would change
    /// nothing.
    async fn let_go(mut self, connection: &Connection) {
        if !self.completion.is_complete() {
            return;
        }
        loop {
            let grace = confirm_grace(connection);
            if self.completion.may_go(Instant::now(), grace) {
                break;
            }
            let until = self
                .completion
                .wait_until(grace)
                .map(tokio::time::Instant::from_std);
            tokio::select! {
                Some(done) = self.heard.join_next() => {
                    if let Ok(Some(lane)) = done {
                        self.completion.lane_heard(lane);
                    }
                }
                _ = connection.closed() => return,
                () = sleep_until(until) => {}
            }
        }
        if connection.close_reason().is_none() {
            connection.abort(
                ltx_proto::event::codes::NO_ERROR,
                "the transfer is complete",
            );
        }
    }
}

/// Sleeps until `until`; forever without one.
async fn sleep_until(until: Option<tokio::time::Instant>) {
    match until {
        Some(until) => tokio::time::sleep_until(until).await,
        None => std::future::pending().await,
    }
}

/// How long a complete transfer waits for its sender to say it heard the
/// last answers (by ending its streams), before the receiver lets it go
/// all the same: a few round trips.
fn confirm_grace(connection: &Connection) -> Duration {
    connection.stats().rtt * 4 + Duration::from_secs(1)
}

/// The sender of `connection` as the file protocol knows it: its key, and
/// how long it has been silent, from the packets the connection receives,
/// looked at four times a second until the connection ends.
fn sender_of(connection: &Connection) -> Peer {
    let Some(key) = connection.peer_key() else {
        return Peer::unknown();
    };
    let heard = Arc::new(Mutex::new((
        connection.stats().packets_received,
        Instant::now(),
    )));
    tokio::spawn({
        let heard = heard.clone();
        let connection = connection.clone();
        async move {
            while connection.close_reason().is_none() {
                let packets = connection.stats().packets_received;
                {
                    let mut last = heard.lock().unwrap_or_else(PoisonError::into_inner);
                    if packets != last.0 {
                        *last = (packets, Instant::now());
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    });
    Peer::new(key.as_bytes().to_vec(), move || {
        heard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
            .elapsed()
    })
}

impl Transfer {
    /// The connection's status: success only for a complete transfer whose
    /// every file is stored (or was there already). A file's own failure
    /// comes first; a broken stream is told by how the connection ended.
    fn result(self) -> anyhow::Result<()> {
        let mut broken = None;
        for file in self.files {
            match file.outcome {
                FileOutcome::Done(_) => {}
                FileOutcome::Stopped { kept, why } => {
                    return Err(anyhow::anyhow!(
                        "the sender stopped {} ({why}); this side keeps {} for a rerun to resume",
                        file.name,
                        units::bytes(kept)
                    )
                    .context(Failed(Failure::Refused)))
                }
                FileOutcome::Failed(TransferError::PeerClosed { .. }) => {
                    broken.get_or_insert(file.name);
                }
                FileOutcome::Failed(error) => {
                    return Err(
                        anyhow::Error::new(error).context(format!("receiving {}", file.name))
                    )
                }
            }
        }
        if self.complete && broken.is_none() {
            return Ok(());
        }
        if let Some(error) = self.lane_error {
            if !matches!(error, TransferError::PeerClosed { .. }) {
                return Err(anyhow::Error::new(error));
            }
        }
        let reason = self.closed.unwrap_or(CloseReason::LocallyClosed);
        let during = match broken {
            Some(name) => format!(" during {name} (its part is kept for a rerun to resume)"),
            None => String::new(),
        };
        Err(anyhow::Error::new(ltx::ConnectionError { reason }))
            .with_context(|| format!("the connection from {} ended{during}", self.peer))
    }

    /// The first error, as the JSON summary shows it.
    fn error_text(&self) -> Option<String> {
        self.files
            .iter()
            .find_map(|f| match &f.outcome {
                FileOutcome::Done(_) => None,
                FileOutcome::Stopped { why, .. } => {
                    Some(format!("{}: the sender stopped ({why})", f.name))
                }
                FileOutcome::Failed(error) => Some(format!("{}: {error}", f.name)),
            })
            .or_else(|| {
                (!self.complete).then(|| {
                    let reason = self.closed.clone().unwrap_or(CloseReason::LocallyClosed);
                    format!(
                        "the connection ended before the transfer did: {}",
                        ltx::ConnectionError { reason }
                    )
                })
            })
    }

    /// One JSON object, or lines for people; `drawn`: the display already
    /// showed how each file ended.
    fn report(&self, json: bool, to: Summaries, display: &Display) {
        let print = |line: String| match to {
            Summaries::Stdout => println!("{line}"),
            Summaries::Stderr => eprintln!("{line}"),
        };
        let stored: Vec<_> = self
            .files
            .iter()
            .filter_map(|f| match &f.outcome {
                FileOutcome::Done(received) => Some(received),
                _ => None,
            })
            .collect();
        let bytes: u64 = self.files.iter().map(|f| f.bytes_received).sum();
        let seconds = self.elapsed.as_secs_f64();
        if json {
            let files: Vec<_> = self.files.iter().map(file_json).collect();
            print(
                json!({
                    "peer": self.peer.to_string(),
                    "time_s": live::round(seconds, 4),
                    "bytes": bytes,
                    "goodput_bps": (bytes as f64 * 8.0 / seconds.max(1e-9)).round(),
                    "symbols_repaired": self.symbols_repaired,
                    "packets_received": self.packets_received,
                    "complete": self.complete,
                    "closed": self.closed.as_ref().map_or("by_receiver", close_name),
                    "error": self.error_text(),
                    "files": files,
                })
                .to_string(),
            );
            return;
        }
        print(format!(
            "{}: received {} file(s), {} in {seconds:.2} s; {} symbols repaired from coding",
            self.peer,
            stored.len(),
            units::bytes(bytes),
            self.symbols_repaired
        ));
        if display.is_hidden() {
            for received in stored {
                print(format!("  {}", received.path.display()));
            }
        }
    }
}

/// One file of the JSON summary.
fn file_json(file: &ReceiveReport) -> serde_json::Value {
    let (path, resumed_from, already_present, blake3, error) = match &file.outcome {
        FileOutcome::Done(r) => (
            Some(r.path.display().to_string()),
            r.resumed_from,
            r.already_present,
            Some(r.hash.to_hex().to_string()),
            None,
        ),
        FileOutcome::Stopped { why, .. } => (
            None,
            0,
            false,
            None,
            Some(format!("the sender stopped ({why})")),
        ),
        FileOutcome::Failed(error) => (None, 0, false, None, Some(error.to_string())),
    };
    json!({
        "name": file.name.as_str(),
        "path": path,
        "size": file.size,
        "bytes_received": file.bytes_received,
        "resumed_from": resumed_from,
        "already_present": already_present,
        "blake3": blake3,
        "error": error,
    })
}

/// How a connection ended, as a JSON value: a word, not debug text.
fn close_name(reason: &CloseReason) -> &'static str {
    match reason {
        CloseReason::ByPeer { code: 0, .. } => "by_peer",
        CloseReason::ByPeer { .. } => "aborted_by_peer",
        CloseReason::LocallyClosed | CloseReason::LocallyAborted { code: 0, .. } => "by_receiver",
        CloseReason::LocallyAborted { .. } => "aborted_by_receiver",
        CloseReason::IdleTimeout => "idle_timeout",
        CloseReason::HandshakeTimeout => "handshake_timeout",
        CloseReason::Unreachable(_) => "unreachable",
        CloseReason::ProtocolViolation(_) => "protocol_violation",
        CloseReason::HandshakeRefused(_) => "handshake_refused",
    }
}

/// Prints each handshake this receiver refuses, with the reason and what
/// to change, above the progress bars: a sender that gets no answer
/// cannot tell why, but the receiver's operator can. A client sends its
/// first flight in several copies, and again on every time-out: one line
/// per client and reason every [`REFUSAL_QUIET`].
async fn log_refusals(endpoint: Endpoint, display: Display) {
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
        display.note(&format!("refused a handshake from {}: {why}", refusal.from));
    }
}

/// How long a refusal of one client for one reason is not logged again.
const REFUSAL_QUIET: Duration = Duration::from_secs(10);
