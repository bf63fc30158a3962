//! `ltx tunnel client`: listens for local TCP connections (`-L`
//! forwards, a SOCKS5 front end) and carries each through the tunnel
//! server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::observe::{Observe, TunnelObserveArgs};
use anyhow::{anyhow, bail, Context};
use clap::Args;
use ltx::{
    CloseReason, ConnectError, Endpoint, EndpointConfig, PublicKey, Security, SecurityConfig,
};
use ltx_cli::exit::{Failed, Failure};
use ltx_sim::units::{parse_duration, parse_rate};
use ltx_tunnel::splice::{Broken, SpliceEnd, Spliced};
use ltx_tunnel::wire::Destination;
use ltx_tunnel::{
    serve_remote_streams, serve_socks5, OpenError, RemoteListener, RemoteRoute, SocksUsers,
    TunnelClient, TUNNEL_IDLE_TIMEOUT,
};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::config::{self, ClientFile};
use super::forward_spec::{parse_local_forward, parse_socks, LocalForward};
use ltx_cli::repair_args::RepairArgs;
use ltx_proto::RepairSettings;

use super::stats::{report, Registry};
use super::{rate_setting, transport, usage};

/// How long the handshake with the server may take, by default.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The arguments of `ltx tunnel client`.
#[derive(Debug, Args)]
#[command(after_help = ltx_cli::exit::EXIT_CODES)]
pub(crate) struct ClientArgs {
    /// The tunnel server's HOST:PORT (UDP).
    #[arg(long, value_name = "HOST:PORT")]
    server: Option<String>,
    /// The server's public key (64 hex digits), which `ltx tunnel server`
    /// prints when it starts.
    #[arg(long, value_name = "PUBLIC_KEY")]
    peer: Option<PublicKey>,
    /// This client's private key file, from `ltx keygen` (a fresh key for
    /// this run if left out, which only a server with --allow-any-client
    /// accepts).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Forward a local TCP port to HOST:HOSTPORT as the server reaches it
    /// (repeatable). BIND defaults to 127.0.0.1; '*' is every IPv4 address.
    #[arg(short = 'L', value_name = "[BIND:]PORT:HOST:HOSTPORT", value_parser = parse_local_forward)]
    local: Vec<LocalForward>,
    /// Have the server listen on [BIND:]PORT (its loopback by default) and
    /// carry each connection there to HOST:HOSTPORT as this machine
    /// reaches it (repeatable); the server must permit it (--permit-listen).
    #[arg(short = 'R', value_name = "[BIND:]PORT:HOST:HOSTPORT", value_parser = parse_local_forward)]
    remote: Vec<LocalForward>,
    /// Serve SOCKS5 (CONNECT) on this local port; names are resolved at
    /// the server. BIND defaults to 127.0.0.1. Without --socks-users, no
    /// authentication.
    #[arg(long, value_name = "[BIND:]PORT", value_parser = parse_socks)]
    socks: Option<SocketAddr>,
    /// Make SOCKS5 clients log in: a file of USERNAME:PASSWORD lines
    /// (`#` starts a comment); only username/password authentication is
    /// then accepted.
    #[arg(long, value_name = "FILE")]
    socks_users: Option<PathBuf>,
    /// Give the connection up (and reconnect on the next TCP connection)
    /// after this long without a word from the server [default: 5min].
    #[arg(long, value_parser = parse_duration)]
    idle_timeout: Option<Duration>,
    /// The path's rate if known (e.g. 50mbit): start-up sizes this
    /// client's first flight from it instead of measuring (give the
    /// server's --rate-hint too for what it sends).
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate_hint: Option<u64>,
    /// How long the handshake with the server may take [default: 30s].
    #[arg(long, value_parser = parse_duration)]
    connect_timeout: Option<Duration>,
    /// A TOML file holding these settings (see docs/tunnel.md); flags win
    /// over it, and -L forwards add to its.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log every TCP connection, not only failures.
    #[arg(short, long)]
    verbose: bool,
    #[command(flatten)]
    observe: TunnelObserveArgs,
    #[command(flatten)]
    repair: RepairArgs,
}

/// Everything a client runs with: the flags over the file, checked.
struct Settings {
    server: String,
    peer: PublicKey,
    security: SecurityConfig,
    forwards: Vec<LocalForward>,
    remotes: Vec<LocalForward>,
    socks: Option<SocketAddr>,
    socks_users: Option<SocksUsers>,
    idle_timeout: Duration,
    rate_hint: Option<u64>,
    repair: RepairSettings,
    observe: Observe,
    connect_timeout: Duration,
    verbose: bool,
}

const CLIENT_NEEDS_THE_SERVER: &str = "ltx tunnel client needs the server's address and \
public key, which the server prints when it starts (\"public key ...\"):
    ltx tunnel client --server HOST:7000 --peer PUBLIC_KEY --key client.key -L 8080:intranet:80
The server must allow this client's key: `ltx keygen --show client.key` prints it.";

const CLIENT_NEEDS_A_FORWARD: &str = "ltx tunnel client has nothing to forward: give -L \
[BIND:]PORT:HOST:HOSTPORT, -R [BIND:]PORT:HOST:HOSTPORT (repeatable) or --socks [BIND:]PORT";

/// What to tell a client whose server did not answer.
const NO_ANSWER_HINT: &str = "either UDP to it is blocked, or the server refused this \
client: check --peer (the server's public key), and that the server's --allow file holds \
this client's key (`ltx keygen --show` on the --key file prints it)";

impl Settings {
    fn new(args: &ClientArgs) -> anyhow::Result<Settings> {
        let file: ClientFile = match &args.config {
            Some(path) => config::load(path)?,
            None => ClientFile::default(),
        };
        let here = |p: &PathBuf| match &args.config {
            Some(config) => config::beside(config, p),
            None => p.clone(),
        };
        let server = args.server.clone().or(file.server.clone());
        let peer = match (args.peer, &file.peer) {
            (Some(peer), _) => Some(peer),
            (None, Some(text)) => Some(
                text.parse::<PublicKey>()
                    .map_err(|e| usage(format!("peer in the file: {e}")))?,
            ),
            (None, None) => None,
        };
        let (Some(server), Some(peer)) = (server, peer) else {
            return Err(usage(CLIENT_NEEDS_THE_SERVER));
        };
        let keypair = match args.key.clone().or_else(|| file.key.as_ref().map(here)) {
            Some(path) => crate::keys::read_keypair(&path)?,
            None => ltx::generate_keypair(),
        };
        let mut forwards = Vec::new();
        for table in &file.forward {
            let text = format!("{}:{}", table.listen, table.to);
            forwards.push(
                parse_local_forward(&text)
                    .map_err(|e| usage(format!("[[forward]] in the file: {e}")))?,
            );
        }
        forwards.extend(args.local.iter().cloned());
        let socks = match (args.socks, &file.socks) {
            (Some(socks), _) => Some(socks),
            (None, Some(table)) => Some(
                parse_socks(&table.listen)
                    .map_err(|e| usage(format!("[socks] in the file: {e}")))?,
            ),
            (None, None) => None,
        };
        let mut remotes = Vec::new();
        for table in &file.remote {
            let text = format!("{}:{}", table.listen, table.to);
            remotes.push(
                parse_local_forward(&text)
                    .map_err(|e| usage(format!("[[remote]] in the file: {e}")))?,
            );
        }
        remotes.extend(args.remote.iter().cloned());
        if forwards.is_empty() && socks.is_none() && remotes.is_empty() {
            return Err(usage(CLIENT_NEEDS_A_FORWARD));
        }
        let users_file = args.socks_users.clone().or_else(|| {
            file.socks
                .as_ref()
                .and_then(|table| table.users.as_ref().map(here))
        });
        let socks_users = match users_file {
            Some(_) if socks.is_none() => {
                return Err(usage(
                    "--socks-users is for the SOCKS5 front end: give --socks too",
                ))
            }
            Some(path) => Some(read_users(&path)?),
            None => None,
        };
        let duration =
            |flag: Option<Duration>, text: &Option<String>, name: &str| match (flag, text) {
                (Some(d), _) => Ok(Some(d)),
                (None, Some(t)) => parse_duration(t)
                    .map(Some)
                    .map_err(|e| usage(format!("{name} in the file: {e}"))),
                (None, None) => Ok(None),
            };
        let idle_timeout = duration(args.idle_timeout, &file.idle_timeout, "idle_timeout")?
            .unwrap_or(TUNNEL_IDLE_TIMEOUT);
        let connect_timeout = duration(
            args.connect_timeout,
            &file.connect_timeout,
            "connect_timeout",
        )?
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        if connect_timeout.is_zero() {
            return Err(usage("--connect-timeout must be above zero"));
        }
        let observe = Observe::new(&args.observe, &file.observe(), here)?;
        let repair = args
            .repair
            .settings_over(&file.repair.clone().unwrap_or_default())
            .map_err(usage)?;
        Ok(Settings {
            observe,
            repair,
            server,
            peer,
            security: SecurityConfig::new(keypair),
            forwards,
            remotes,
            socks,
            socks_users,
            idle_timeout,
            rate_hint: rate_setting(args.rate_hint, &file.rate_hint, "rate_hint")?,
            connect_timeout,
            verbose: args.verbose,
        })
    }
}

/// Runs `ltx tunnel client`.
pub(crate) fn run(args: &ClientArgs) -> anyhow::Result<()> {
    let settings = Settings::new(args)?;
    let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
    runtime.block_on(forward_all(settings))
}

async fn forward_all(settings: Settings) -> anyhow::Result<()> {
    let display = settings.observe.start_logging(settings.verbose);
    // Local ports first: a port in use is said at once, not after a
    // handshake.
    let mut forwards = Vec::new();
    for forward in &settings.forwards {
        let listener = TcpListener::bind(forward.listen)
            .await
            .with_context(|| format!("listening on {} (-L for {})", forward.listen, forward.to))?;
        forwards.push((listener, forward.to.clone()));
    }
    let socks = match settings.socks {
        Some(address) => Some(
            TcpListener::bind(address)
                .await
                .with_context(|| format!("listening on {address} (--socks)"))?,
        ),
        None => None,
    };
    let server = resolve(&settings.server).await?;
    let local: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let mut config = EndpointConfig::client();
    config.security = Security::Noise(settings.security);
    config.transport = transport(settings.idle_timeout, settings.rate_hint, &settings.repair)?;
    settings.observe.apply(&mut config)?;
    let endpoint = Endpoint::bind(local, config).context("binding a UDP socket")?;
    let client = TunnelClient::connect(
        endpoint.clone(),
        server,
        settings.peer,
        settings.connect_timeout,
    )
    .await
    .map_err(|e| connect_error(e, server, settings.connect_timeout))?;
    let client = Arc::new(client);
    eprintln!("connected to the tunnel server {server}");
    let _metrics = settings.observe.start_metrics(&endpoint).await?;
    let mut tasks = JoinSet::new();
    for (listener, to) in forwards {
        eprintln!("forwarding {} -> {to}", listener.local_addr()?);
        tasks.spawn(serve_forward(listener, to, client.clone()));
    }
    if let Some(listener) = socks {
        let address = listener.local_addr()?;
        let users = settings.socks_users.map(Arc::new);
        if !address.ip().is_loopback() && users.is_none() {
            tracing::warn!(
                "SOCKS5 on {address} has no authentication: anyone who reaches that address \
                 can use the tunnel (--socks-users makes clients log in)"
            );
        }
        if let Some(users) = &users {
            eprintln!("SOCKS5 clients log in: {} user(s)", users.len());
        }
        eprintln!("SOCKS5 on {address}");
        tasks.spawn(serve_socks(listener, client.clone(), users));
    }
    if !settings.remotes.is_empty() {
        let listeners = establish_remotes(&client, &settings.remotes).await?;
        tasks.spawn(keep_remotes(
            client.clone(),
            settings.remotes.clone(),
            listeners,
        ));
    }
    super::notify_ready();
    tokio::spawn(report(Arc::new(Registry::Server(client.clone())), display));
    match tasks.join_next().await {
        Some(ended) => ended.context("a listener task")?,
        None => bail!("nothing to forward"),
    }
}

/// A failed first connection, as `ltx send` says it: no answer is exit 3
/// with what to check.
fn connect_error(error: ConnectError, server: SocketAddr, waited: Duration) -> anyhow::Error {
    match error {
        ConnectError::Closed(CloseReason::HandshakeTimeout) => anyhow!(
            "{server} did not answer in {} s; {NO_ANSWER_HINT}",
            waited.as_secs()
        )
        .context(Failed(Failure::Unreachable)),
        other => {
            anyhow::Error::new(other).context(format!("connecting to the tunnel server {server}"))
        }
    }
}

/// Accepts connections on a `-L` port and forwards each.
async fn serve_forward(
    listener: TcpListener,
    to: Destination,
    client: Arc<TunnelClient>,
) -> anyhow::Result<()> {
    loop {
        let (tcp, from) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors, most often: wait, and go on.
                tracing::warn!("accepting on {}: {e}", listener.local_addr()?);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (client, to) = (client.clone(), to.clone());
        tokio::spawn(async move {
            match client.forward(tcp, &to).await {
                Ok(spliced) => log_end(from, &to, &spliced),
                Err(e) => tracing::warn!("{from} -> {to}: {e}"),
            }
        });
    }
}

/// Accepts SOCKS clients and serves each.
async fn serve_socks(
    listener: TcpListener,
    client: Arc<TunnelClient>,
    users: Option<Arc<SocksUsers>>,
) -> anyhow::Result<()> {
    loop {
        let (tcp, from) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("accepting on {}: {e}", listener.local_addr()?);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (client, users) = (client.clone(), users.clone());
        tokio::spawn(async move {
            match serve_socks5(&client, tcp, users.as_deref()).await {
                Ok((to, spliced)) => log_end(from, &to, &spliced),
                Err(ltx_tunnel::SocksFailure::NotOpened {
                    destination,
                    error: OpenError::NotOpened(result),
                }) => tracing::warn!("{from} -> {destination} (SOCKS): {result}"),
                Err(e) => tracing::warn!("{from} (SOCKS): {e}"),
            }
        });
    }
}

fn log_end(from: SocketAddr, to: &Destination, spliced: &Spliced) {
    match &spliced.end {
        SpliceEnd::Closed => tracing::debug!(
            "{from} -> {to}: closed, {} bytes sent, {} received",
            spliced.to_stream,
            spliced.to_tcp
        ),
        SpliceEnd::Reset(Broken::NotOpened(result)) => tracing::warn!("{from} -> {to}: {result}"),
        SpliceEnd::Reset(why) => tracing::debug!("{from} -> {to}: reset: {why}"),
    }
}

/// The socket address of `HOST:PORT`, looked up if it is a name.
async fn resolve(target: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(addr) = target.parse() {
        return Ok(addr);
    }
    if !target.contains(':') {
        return Err(usage(format!("--server {target:?} is not HOST:PORT")));
    }
    tokio::net::lookup_host(target)
        .await
        .with_context(|| format!("looking up {target}"))?
        .next()
        .ok_or_else(|| anyhow!("{target} has no address"))
}

/// Reads `--socks-users`: a missing file is a local-file error, a bad line
/// a usage error that names it.
fn read_users(path: &std::path::Path) -> anyhow::Result<SocksUsers> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the SOCKS users file {}", path.display()))
        .context(Failed(Failure::LocalFile))?;
    SocksUsers::parse(&text).map_err(|e| usage(format!("{}: {e}", path.display())))
}

/// Asks the server for every remote forward; a refusal ends the client
/// (exit 4), as a local port in use does.
async fn establish_remotes(
    client: &TunnelClient,
    remotes: &[LocalForward],
) -> anyhow::Result<Vec<RemoteListener>> {
    let mut listeners = Vec::new();
    for remote in remotes {
        let listener = client.listen(remote.listen).await.map_err(|e| {
            anyhow::anyhow!("-R {} -> {}: {e}", remote.listen, remote.to)
                .context(Failed(Failure::Refused))
        })?;
        eprintln!(
            "remote forward: the server is {} -> {}",
            listener.result.reason(),
            remote.to
        );
        listeners.push(listener);
    }
    Ok(listeners)
}

/// Answers the server's streams for the remote forwards, and asks for
/// the forwards again on each new connection (after an outage longer than
/// the idle time-out, or a server restart).
async fn keep_remotes(
    client: Arc<TunnelClient>,
    remotes: Vec<LocalForward>,
    mut listeners: Vec<RemoteListener>,
) -> anyhow::Result<()> {
    let table: Vec<(Destination, Destination)> = remotes
        .iter()
        .map(|r| {
            let asked = Destination {
                host: ltx_tunnel::wire::Host::Ip(r.listen.ip()),
                port: r.listen.port(),
            };
            (asked, r.to.clone())
        })
        .collect();
    let route: RemoteRoute = Arc::new(move |asked| {
        table
            .iter()
            .find(|(a, _)| a == asked)
            .map(|(_, to)| to.clone())
    });
    loop {
        let (_, connection) = client.current();
        serve_remote_streams(connection, route.clone()).await;
        listeners.clear();
        tracing::warn!("the connection to the server ended; asking for the remote forwards again");
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match establish_remotes(&client, &remotes).await {
                Ok(again) => {
                    listeners = again;
                    break;
                }
                Err(e) => tracing::warn!("{e:#}"),
            }
        }
    }
}
