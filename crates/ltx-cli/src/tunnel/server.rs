//! `ltx tunnel server`: takes clients' connections and connects their
//! streams to the destinations the permit rules name.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::observe::{Observe, TunnelObserveArgs};
use anyhow::Context;
use clap::Args;
use ltx::{AllowList, Endpoint, EndpointConfig, Security, SecurityConfig};
use ltx_cli::exit::{Failed, Failure};
use ltx_cli::live::units::bit_rate;
use ltx_sim::units::{parse_duration, parse_rate};
use ltx_tunnel::policy::{PermitRule, Policy};
use ltx_tunnel::{RateLimit, ServerConfig, TunnelServer, TUNNEL_IDLE_TIMEOUT};

use super::config::{self, ServerFile};
use ltx_cli::repair_args::RepairArgs;
use ltx_proto::RepairSettings;

use super::stats::{report, Registry};
use super::{rate_setting, transport, usage};

/// The UDP address a server listens on by default.
const DEFAULT_LISTEN: &str = "0.0.0.0:7000";

/// Most driver threads a server runs: past the cores of a large machine,
/// more only add hand-offs.
const MAX_DRIVERS: usize = 64;

/// The arguments of `ltx tunnel server`.
#[derive(Debug, Args)]
#[command(after_help = ltx_cli::exit::EXIT_CODES)]
pub(crate) struct ServerArgs {
    /// The UDP address to listen on, ADDRESS:PORT or a port alone (every
    /// IPv4 address) [default: 0.0.0.0:7000].
    #[arg(long, value_parser = crate::addr::parse_listen)]
    listen: Option<SocketAddr>,
    /// This server's private key file, from `ltx keygen` (required).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// A file of the client public keys this server accepts, one per line
    /// (`#` starts a comment). Required, unless --allow-any-client.
    #[arg(long, value_name = "FILE")]
    allow: Option<PathBuf>,
    /// Accept any client that knows this server's public key (no --allow
    /// list).
    #[arg(long, conflicts_with = "allow")]
    allow_any_client: bool,
    /// A destination clients may reach (repeatable; nothing else is
    /// reached): HOST:PORTS, ADDRESS:PORTS, CIDR:PORTS, *.DOMAIN:PORTS,
    /// or '*' for everything. PORTS is N, N-M or *.
    #[arg(long, value_name = "RULE", value_parser = parse_rule)]
    permit: Vec<PermitRule>,
    /// Where clients may have this server listen for them (-R; repeatable;
    /// nowhere without it): ADDRESS:PORTS or CIDR:PORTS of the address
    /// bound, e.g. 127.0.0.1:8000-8099 or 0.0.0.0/0:443.
    #[arg(long, value_name = "RULE", value_parser = parse_rule)]
    permit_listen: Vec<PermitRule>,
    /// Streams (TCP connections) one client may have open at once
    /// [default: 256].
    #[arg(long, value_name = "N")]
    max_streams: Option<usize>,
    /// The rate one client may move each way, over all its TCP
    /// connections (e.g. 20mbit); a client over it waits, it is not cut
    /// off [default: no limit].
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate_limit: Option<u64>,
    /// The rate of the path to the clients if known (e.g. 50mbit): each
    /// connection's start-up sizes its first flight from it instead of
    /// measuring. For a server whose clients share one known link (a
    /// satellite gateway); leave it out otherwise.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate_hint: Option<u64>,
    /// Give up a client's connection, and its TCP connections, after this
    /// long without a word from it [default: 5min].
    #[arg(long, value_parser = parse_duration)]
    idle_timeout: Option<Duration>,
    /// How long a connection to a destination may take [default: 10s].
    #[arg(long, value_parser = parse_duration)]
    connect_timeout: Option<Duration>,
    /// Threads that drive the clients' connections, each client on one of
    /// them (1 to 64) [default: one per core].
    #[arg(long, value_name = "N")]
    drivers: Option<usize>,
    /// A TOML file holding these settings (see docs/tunnel.md); flags win
    /// over it, and --permit rules add to its.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log every stream, not only clients and refusals.
    #[arg(short, long)]
    verbose: bool,
    #[command(flatten)]
    observe: TunnelObserveArgs,
    #[command(flatten)]
    repair: RepairArgs,
}

fn parse_rule(text: &str) -> Result<PermitRule, String> {
    text.parse()
        .map_err(|e: ltx_tunnel::policy::PermitError| e.to_string())
}

/// Everything a server runs with: the flags over the file, checked.
struct Settings {
    listen: SocketAddr,
    security: SecurityConfig,
    idle_timeout: Duration,
    rate_hint: Option<u64>,
    repair: RepairSettings,
    drivers: usize,
    observe: Observe,
    server: ServerConfig,
    verbose: bool,
}

const SERVER_NEEDS_A_KEY: &str = "ltx tunnel server needs a key pair, so that clients can \
tell it from an impostor. Make one, once:
    ltx keygen --out server.key
then start the server with it (--key server.key) and give each client the public key \
that keygen printed.";

const SERVER_NEEDS_CLIENTS: &str = "ltx tunnel server needs to know its clients: give \
--allow FILE with their public keys, one per line (each client prints its own with \
`ltx keygen --show client.key`), or --allow-any-client to accept any client that knows \
this server's public key.";

const SERVER_NEEDS_PERMITS: &str = "ltx tunnel server permits no destination unless told: \
give --permit for each, e.g. --permit 127.0.0.1:22 --permit 10.0.0.0/8:443 --permit \
db.internal:5432, or --permit '*' for everything (an open proxy for every allowed client).";

impl Settings {
    fn new(args: &ServerArgs) -> anyhow::Result<Settings> {
        let file: ServerFile = match &args.config {
            Some(path) => config::load(path)?,
            None => ServerFile::default(),
        };
        let here = |p: &PathBuf| match &args.config {
            Some(config) => config::beside(config, p),
            None => p.clone(),
        };
        let listen = match (args.listen, &file.listen) {
            (Some(listen), _) => listen,
            (None, Some(text)) => crate::addr::parse_listen(text).map_err(usage)?,
            (None, None) => DEFAULT_LISTEN.parse().expect("a valid address"),
        };
        let key = args.key.clone().or_else(|| file.key.as_ref().map(here));
        let Some(key) = key else {
            return Err(usage(SERVER_NEEDS_A_KEY));
        };
        let mut security = SecurityConfig::new(crate::keys::read_keypair(&key)?);
        let allow = args.allow.clone().or_else(|| file.allow.as_ref().map(here));
        let any_client = args.allow_any_client || file.allow_any_client;
        match (allow, any_client) {
            (Some(_), true) => {
                return Err(usage(
                    "--allow and --allow-any-client (allow_any_client) exclude each other",
                ))
            }
            (None, false) => return Err(usage(SERVER_NEEDS_CLIENTS)),
            (None, true) => {}
            (Some(path), false) => {
                let allowed = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading the allow file {}", path.display()))
                    .context(Failed(Failure::LocalFile))?
                    .parse::<AllowList>()
                    .with_context(|| format!("in the allow file {}", path.display()))
                    .context(Failed(Failure::Usage))?;
                security.allowed_clients = Some(Arc::new(allowed));
            }
        }
        let mut rules = Vec::new();
        for text in &file.permit {
            rules.push(parse_rule(text).map_err(|e| usage(format!("permit in the file: {e}")))?);
        }
        rules.extend(args.permit.iter().cloned());
        if rules.is_empty() {
            return Err(usage(SERVER_NEEDS_PERMITS));
        }
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
        let mut server = ServerConfig::new(Policy::new(rules));
        let mut listen_rules = Vec::new();
        for text in &file.permit_listen {
            listen_rules.push(
                parse_rule(text).map_err(|e| usage(format!("permit_listen in the file: {e}")))?,
            );
        }
        listen_rules.extend(args.permit_listen.iter().cloned());
        server.set_listen_policy(Policy::new(listen_rules));
        if let Some(timeout) = duration(
            args.connect_timeout,
            &file.connect_timeout,
            "connect_timeout",
        )? {
            server.set_connect_timeout(timeout);
        }
        match args.max_streams.or(file.max_streams) {
            Some(0) => return Err(usage("--max-streams: 0 would refuse every stream")),
            Some(n) => {
                server.set_max_streams(n);
            }
            None => {}
        }
        let rate_limit = rate_setting(args.rate_limit, &file.rate_limit, "rate_limit")?;
        let rate_hint = rate_setting(args.rate_hint, &file.rate_hint, "rate_hint")?;
        if let Some(bits) = rate_limit {
            let limit = RateLimit::bytes_per_second(bits / 8).ok_or_else(|| {
                usage(format!(
                    "--rate-limit: at least {} bit/s",
                    RateLimit::MIN_BYTES_PER_SECOND * 8
                ))
            })?;
            server.set_rate_limit(Some(limit));
        }
        let drivers = match args.drivers.or(file.drivers) {
            Some(n @ 1..=MAX_DRIVERS) => n,
            Some(n) => {
                return Err(usage(format!(
                    "--drivers: {n} is not between 1 and {MAX_DRIVERS}"
                )))
            }
            None => std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_DRIVERS)),
        };
        let observe = Observe::new(&args.observe, &file.observe(), here)?;
        let repair = args
            .repair
            .settings_over(&file.repair.clone().unwrap_or_default())
            .map_err(usage)?;
        Ok(Settings {
            observe,
            repair,
            drivers,
            listen,
            security,
            idle_timeout,
            rate_hint,
            server,
            verbose: args.verbose,
        })
    }
}

/// Runs `ltx tunnel server`.
pub(crate) fn run(args: &ServerArgs) -> anyhow::Result<()> {
    let settings = Settings::new(args)?;
    let runtime = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
    runtime.block_on(serve(settings))
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let display = settings.observe.start_logging(settings.verbose);
    let public_key = settings.security.keypair.public();
    let accepting = match &settings.security.allowed_clients {
        Some(allowed) => format!("from the {} allowed client key(s)", allowed.len()),
        None => "from any client that has the key".into(),
    };
    let mut config = EndpointConfig::server();
    config.security = Security::Noise(settings.security);
    config.transport = transport(settings.idle_timeout, settings.rate_hint, &settings.repair)?;
    config.drivers = settings.drivers;
    settings.observe.apply(&mut config)?;
    let endpoint = Endpoint::bind(settings.listen, config)
        .with_context(|| format!("listening on {}", settings.listen))?;
    let rules: Vec<String> = settings
        .server
        .policy()
        .rules()
        .iter()
        .map(|r| r.to_string())
        .collect();
    // Always on stderr, whatever the log level: a script that asked for
    // port 0 learns the port, and the operator the key clients need.
    let rate = match settings.server.rate_limit() {
        Some(limit) => format!(", {} each way", bit_rate(limit.get() as f64)),
        None => String::new(),
    };
    let listens: Vec<String> = settings
        .server
        .listen_policy()
        .rules()
        .iter()
        .map(|r| r.to_string())
        .collect();
    let rate = if listens.is_empty() {
        rate
    } else {
        format!("{rate}; listening for clients on {}", listens.join(", "))
    };
    eprintln!(
        "tunnel server on {} (UDP) {accepting}, public key {public_key}; permitting {}; \
         at most {} streams per client{rate}",
        endpoint.local_addr(),
        rules.join(", "),
        settings.server.max_streams()
    );
    let _metrics = settings.observe.start_metrics(&endpoint).await?;
    tokio::spawn(super::log_refusals(endpoint.clone()));
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::spawn(give_back_freed_memory());
    super::notify_ready();
    let server = TunnelServer::new(settings.server);
    let clients = Arc::new(Registry::clients());
    tokio::spawn(report(clients.clone(), display));
    while let Some(connection) = endpoint.accept().await {
        clients.add(connection.clone());
        let server = server.clone();
        tokio::spawn(async move { server.serve_connection(connection).await });
    }
    Err(anyhow::anyhow!("the endpoint stopped taking connections"))
}

/// How often the server hands freed heap memory back to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_INTERVAL: Duration = Duration::from_secs(2);

/// Hands the heap's free pages back to the system now and then. Clients
/// come in bursts and go quiet; glibc's allocator keeps what a burst
/// freed in its heaps (pages in the middle of a heap are never returned
/// on their own), so a server whose clients are idle would go on holding
/// their busiest moment's memory. `malloc_trim` returns every whole free
/// page; it takes a few milliseconds on a heap of hundreds of megabytes.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
async fn give_back_freed_memory() {
    let mut interval = tokio::time::interval(TRIM_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        // SAFETY: malloc_trim only walks the allocator's own free lists,
        // under its locks; it has no preconditions.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}
