//! `ltx-bench scale`: one `ltx tunnel server` on loopback, no impairment,
//! under many clients and many streams, measured from outside.
//!
//! Three phases, one JSON line each:
//! 1. `many_clients`: `--clients` clients (an endpoint and a connection
//!    each) open `--streams` streams at once, each sending `--stream-bytes`
//!    to an echo server and checking what comes back; the server's resident
//!    memory before, at its peak (`VmHWM`) and once every client is idle
//!    (connections open, nothing moving), and from that the memory per idle
//!    connection;
//! 2. `one_client`: one client with `--connections` concurrent streams,
//!    each checked likewise: none may be lost;
//! 3. `cores`: bytes per second into a sink through the server from one
//!    busy client, then from two at once, and their ratio (how well the
//!    server spreads clients over cores).
//!
//! The server is the real binary (`ltx` beside this one, or `--ltx`), so
//! what is measured is what an administrator runs.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use ltx::{Endpoint, EndpointConfig, PublicKey, Security, SecurityConfig, StaticKeypair};
use ltx_tunnel::wire::Destination;
use ltx_tunnel::{tunnel_transport, TunnelClient};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// Options of `ltx-bench scale`.
#[derive(Debug, Args)]
#[command(after_help = "\
Runs on loopback and needs no root. Prints one JSON line per phase; exits \
non-zero if any stream fails or returns other bytes than it sent.")]
pub(crate) struct ScaleArgs {
    /// Clients, each with its own endpoint and connection, in the first phase.
    #[arg(long, default_value_t = 200)]
    clients: usize,
    /// Concurrent streams per client in the first phase.
    #[arg(long, default_value_t = 10)]
    streams: usize,
    /// Bytes each first-phase stream sends and gets back.
    #[arg(long, default_value_t = 64 * 1024)]
    stream_bytes: usize,
    /// Concurrent streams of the one client in the second phase.
    #[arg(long, default_value_t = 1000)]
    connections: usize,
    /// Seconds each throughput measurement of the third phase lasts.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// The server's driver threads (`ltx tunnel server --drivers`;
    /// default: the server's own, one per core).
    #[arg(long)]
    drivers: Option<usize>,
    /// Which phases to run, in order.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "many-clients,one-client,cores"
    )]
    phases: Vec<Phase>,
    /// The `ltx` binary to run the server with (default: `ltx` beside this one).
    #[arg(long)]
    ltx: Option<PathBuf>,
}

/// A phase of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Phase {
    /// Many clients, several streams each; memory per idle connection.
    ManyClients,
    /// One client, many concurrent streams.
    OneClient,
    /// One busy client against two.
    Cores,
}

/// Runs the phases asked for.
pub(crate) fn run(args: &ScaleArgs) -> anyhow::Result<()> {
    if args.clients == 0 || args.streams == 0 || args.connections == 0 {
        bail!("--clients, --streams and --connections must be at least 1");
    }
    let ltx = match &args.ltx {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .map(|dir| dir.join("ltx"))
            .context("this binary has no directory")?,
    };
    if !ltx.is_file() {
        bail!(
            "no ltx binary at {} (build it with `cargo build --release -p ltx-cli`, or pass --ltx)",
            ltx.display()
        );
    }
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(phases(args, &ltx))
}

async fn phases(args: &ScaleArgs, ltx: &Path) -> anyhow::Result<()> {
    let scratch = tempfile_dir()?;
    let echo = spawn_echo().await?;
    let sink = Sink::spawn().await?;
    let max_streams = args.connections.max(args.streams) + 16;
    let server = Server::start(
        ltx,
        &scratch,
        &[echo, sink.address],
        max_streams,
        args.drivers,
    )?;
    let outcome = async {
        server.wait_ready().await?;
        let mut failed = 0;
        for phase in &args.phases {
            match phase {
                Phase::ManyClients => failed += many_clients(args, &server, echo).await?,
                Phase::OneClient => failed += one_client(args, &server, echo).await?,
                Phase::Cores => cores(args, &server, &sink).await?,
            }
        }
        anyhow::Ok(failed)
    }
    .await;
    drop(server);
    let _ = std::fs::remove_dir_all(&scratch);
    let failed = outcome?;
    if failed > 0 {
        bail!("{failed} stream(s) failed or returned other bytes than they sent");
    }
    Ok(())
}

/// Phase 1; returns the streams that failed.
async fn many_clients(
    args: &ScaleArgs,
    server: &Server,
    echo: SocketAddr,
) -> anyhow::Result<usize> {
    let baseline = server.memory()?;
    let started = Instant::now();
    let mut connecting = JoinSet::new();
    for _ in 0..args.clients {
        let (address, key) = (server.address, server.public_key);
        connecting.spawn(async move { client(address, key).await });
    }
    let mut clients = Vec::with_capacity(args.clients);
    while let Some(joined) = connecting.join_next().await {
        clients.push(Arc::new(joined??));
    }
    let mut streams = JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        for s in 0..args.streams {
            let client = client.clone();
            let seed = (c * args.streams + s) as u64;
            let bytes = args.stream_bytes;
            streams.spawn(async move { echo_stream(&client, echo, seed, bytes).await });
        }
    }
    let (completed, failed) = tally(&mut streams).await;
    let transfer_s = started.elapsed().as_secs_f64();
    // Idle: every connection open, nothing moving; give the server a
    // moment to settle its buffers.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = server.memory()?;
    let per_connection =
        idle.rss_kib.saturating_sub(baseline.rss_kib) as f64 / clients.len() as f64;
    println!(
        "{}",
        json!({
            "phase": "many_clients",
            "clients": clients.len(),
            "streams_per_client": args.streams,
            "stream_bytes": args.stream_bytes,
            "streams_completed": completed,
            "streams_failed": failed,
            "transfer_s": round(transfer_s),
            "server_rss_baseline_kib": baseline.rss_kib,
            "server_rss_peak_kib": idle.peak_kib,
            "server_rss_idle_kib": idle.rss_kib,
            "idle_kib_per_connection": round(per_connection),
        })
    );
    drop(clients);
    Ok(failed)
}

/// Phase 2; returns the streams that failed.
async fn one_client(args: &ScaleArgs, server: &Server, echo: SocketAddr) -> anyhow::Result<usize> {
    let client = Arc::new(client(server.address, server.public_key).await?);
    let started = Instant::now();
    let mut streams = JoinSet::new();
    for s in 0..args.connections {
        let client = client.clone();
        streams.spawn(async move { echo_stream(&client, echo, s as u64, 16 * 1024).await });
    }
    let (completed, failed) = tally(&mut streams).await;
    println!(
        "{}",
        json!({
            "phase": "one_client",
            "concurrent_streams": args.connections,
            "streams_completed": completed,
            "streams_failed": failed,
            "transfer_s": round(started.elapsed().as_secs_f64()),
            "server_rss_peak_kib": server.memory()?.peak_kib,
        })
    );
    Ok(failed)
}

/// Phase 3.
async fn cores(args: &ScaleArgs, server: &Server, sink: &Sink) -> anyhow::Result<()> {
    let window = Duration::from_secs(args.seconds.max(1));
    let (one, one_cpu) = sink.measure(server, 1, window).await?;
    let (two, two_cpu) = sink.measure(server, 2, window).await?;
    println!(
        "{}",
        json!({
            "phase": "cores",
            "cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
            "drivers": args.drivers,
            "seconds": window.as_secs(),
            "one_client_mbit_s": round(one * 8.0 / 1e6),
            "two_clients_mbit_s": round(two * 8.0 / 1e6),
            "ratio": round(two / one.max(1.0)),
            "server_cores_one_client": round(one_cpu),
            "server_cores_two_clients": round(two_cpu),
        })
    );
    Ok(())
}

async fn tally(streams: &mut JoinSet<anyhow::Result<()>>) -> (usize, usize) {
    let (mut completed, mut failed) = (0, 0);
    while let Some(joined) = streams.join_next().await {
        match joined {
            Ok(Ok(())) => completed += 1,
            Ok(Err(e)) => {
                if failed < 5 {
                    eprintln!("stream failed: {e:#}");
                }
                failed += 1;
            }
            Err(e) => {
                eprintln!("stream task failed: {e}");
                failed += 1;
            }
        }
    }
    (completed, failed)
}

/// A client with a fresh key, connected to the server.
async fn client(server: SocketAddr, server_key: PublicKey) -> anyhow::Result<TunnelClient> {
    let mut config = EndpointConfig::client();
    // Keys only need to differ between the benchmark's clients.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = format!(
        "{} {}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let entropy = *blake3::hash(seed.as_bytes()).as_bytes();
    config.security = Security::Noise(SecurityConfig::new(StaticKeypair::from_entropy(entropy)));
    config.transport = tunnel_transport();
    // Each client from an address of its own (all of 127/8 is loopback),
    // as clients behind different NATs are: a server limits connections
    // per address.
    let n = NEXT.load(Ordering::Relaxed);
    let local = SocketAddr::from(([127, 1, (n / 250) as u8, (1 + n % 250) as u8], 0));
    let endpoint = Endpoint::bind(local, config)?;
    Ok(TunnelClient::connect(endpoint, server, server_key, Duration::from_secs(30)).await?)
}

/// Sends `bytes` through the tunnel to the echo server and checks that the
/// same bytes come back.
async fn echo_stream(
    client: &TunnelClient,
    echo: SocketAddr,
    seed: u64,
    bytes: usize,
) -> anyhow::Result<()> {
    let destination: Destination = echo.to_string().parse()?;
    let (mut send, mut recv) = client.open(&destination).await?.into_streams();
    let payload = payload(seed, bytes);
    let sent = payload.clone();
    let writer = tokio::spawn(async move {
        send.write_all(&sent).await?;
        send.shutdown().await
    });
    let mut back = Vec::with_capacity(bytes);
    recv.read_to_end(&mut back).await?;
    writer.await??;
    if back != payload {
        bail!(
            "stream {seed}: {} bytes came back, not the {bytes} sent",
            back.len()
        );
    }
    Ok(())
}

fn payload(seed: u64, bytes: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// A listener with room in its accept queue for every connection the
/// benchmark opens at once: an overflowing queue makes the kernel answer
/// with SYN cookies and resets, which would be counted against the tunnel.
fn listener() -> anyhow::Result<TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind("127.0.0.1:0".parse()?)?;
    Ok(socket.listen(4096)?)
}

async fn spawn_echo() -> anyhow::Result<SocketAddr> {
    let listener = listener()?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let tcp = match listener.accept().await {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    eprintln!("echo: accepting: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            tokio::spawn(async move {
                let (mut read, mut write) = tcp.into_split();
                match tokio::io::copy(&mut read, &mut write).await {
                    Ok(_) => {
                        let _ = write.shutdown().await;
                    }
                    Err(e) => eprintln!("echo: {e}"),
                }
            });
        }
    });
    Ok(address)
}

/// A destination that reads and counts everything sent to it.
struct Sink {
    address: SocketAddr,
    received: Arc<AtomicU64>,
}

impl Sink {
    async fn spawn() -> anyhow::Result<Sink> {
        let listener = listener()?;
        let address = listener.local_addr()?;
        let received = Arc::new(AtomicU64::new(0));
        let counter = received.clone();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n @ 1..) = tcp.read(&mut buf).await {
                        counter.fetch_add(n as u64, Ordering::Relaxed);
                    }
                });
            }
        });
        Ok(Sink { address, received })
    }

    /// Bytes per second the sink receives over `window` while `clients`
    /// clients each push one stream as fast as they can, after a second
    /// of warm-up; and the cores the server process kept busy meanwhile
    /// (its CPU seconds over the window's).
    async fn measure(
        &self,
        server: &Server,
        clients: usize,
        window: Duration,
    ) -> anyhow::Result<(f64, f64)> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut pushers = JoinSet::new();
        for _ in 0..clients {
            let client = client(server.address, server.public_key).await?;
            let (destination, stop) = (
                self.address.to_string().parse::<Destination>()?,
                stop.clone(),
            );
            pushers.spawn(async move {
                let (mut send, _recv) = client.open(&destination).await?.into_streams();
                let block = vec![0x5Au8; 256 * 1024];
                while !stop.load(Ordering::Relaxed) {
                    send.write_all(&block).await?;
                }
                let _ = send.shutdown().await;
                anyhow::Ok(())
            });
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let before = self.received.load(Ordering::Relaxed);
        let cpu_before = server.cpu_seconds()?;
        let started = Instant::now();
        tokio::time::sleep(window).await;
        let bytes = self.received.load(Ordering::Relaxed) - before;
        let cpu = server.cpu_seconds()? - cpu_before;
        let elapsed = started.elapsed().as_secs_f64();
        let rate = bytes as f64 / elapsed;
        stop.store(true, Ordering::Relaxed);
        while let Some(joined) = pushers.join_next().await {
            joined??;
        }
        Ok((rate, cpu / elapsed))
    }
}

/// The server's resident memory, from `/proc`.
#[derive(Debug, Clone, Copy)]
struct Memory {
    rss_kib: u64,
    peak_kib: u64,
}

/// The `ltx tunnel server` process, stopped when dropped.
struct Server {
    child: Child,
    address: SocketAddr,
    public_key: PublicKey,
}

impl Server {
    fn start(
        ltx: &Path,
        scratch: &Path,
        destinations: &[SocketAddr],
        max_streams: usize,
        drivers: Option<usize>,
    ) -> anyhow::Result<Server> {
        let key_file = scratch.join("server.key");
        let keygen = Command::new(ltx)
            .args(["keygen", "--out"])
            .arg(&key_file)
            .stderr(Stdio::null())
            .output()
            .context("running ltx keygen")?;
        if !keygen.status.success() {
            bail!("ltx keygen failed: {}", keygen.status);
        }
        let public_key: PublicKey = String::from_utf8_lossy(&keygen.stdout)
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("ltx keygen printed no public key: {e}"))?;
        let address = std::net::UdpSocket::bind("127.0.0.1:0")?.local_addr()?;
        let mut command = Command::new(ltx);
        command
            .args(["tunnel", "server", "--allow-any-client"])
            .arg("--listen")
            .arg(address.to_string())
            .arg("--key")
            .arg(&key_file)
            .arg("--max-streams")
            .arg(max_streams.to_string());
        if let Some(drivers) = drivers {
            command.arg("--drivers").arg(drivers.to_string());
        }
        for destination in destinations {
            command.arg("--permit").arg(destination.to_string());
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {} tunnel server", ltx.display()))?;
        Ok(Server {
            child,
            address,
            public_key,
        })
    }

    /// Waits until a client can connect.
    async fn wait_ready(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let attempt = tokio::time::timeout(
                Duration::from_secs(1),
                client(self.address, self.public_key),
            )
            .await;
            if let Ok(Ok(_)) = attempt {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the tunnel server did not answer within 20 s");
            }
        }
    }

    /// The CPU time the server process has used, user and system.
    fn cpu_seconds(&self) -> anyhow::Result<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .context("reading the server's /proc stat")?;
        // Fields after the command name, which is in parentheses and may
        // hold spaces: utime and stime are the 12th and 13th of them.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| -> anyhow::Result<f64> {
            fields
                .get(i)
                .and_then(|t| t.parse::<f64>().ok())
                .context("no CPU times in the server's /proc stat")
        };
        // The kernel counts these in clock ticks, 100 per second on Linux.
        Ok((ticks(11)? + ticks(12)?) / 100.0)
    }

    fn memory(&self) -> anyhow::Result<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .context("reading the server's /proc status")?;
        let field = |name: &str| -> anyhow::Result<u64> {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kib| kib.parse().ok())
                .with_context(|| format!("no {name} in the server's /proc status"))
        };
        Ok(Memory {
            rss_kib: field("VmRSS:")?,
            peak_kib: field("VmHWM:")?,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ltx-bench-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
