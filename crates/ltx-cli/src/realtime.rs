//! One transfer in real time over loopback, through the impairment shim:
//! the path of a simulator scenario, run by real endpoints on real sockets.
//! `ltx demo` shows it; `ltx-bench fidelity` compares it with the
//! simulator's run of the same scenario.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use ltx::shim::ImpairedPath;
use ltx::{Connection, ConnectionStats, Endpoint, EndpointConfig};
use ltx_link::LinkStats;
use ltx_sim::scenario::Scenario;
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What one real-time transfer measured.
#[derive(Debug, Clone)]
pub struct RealtimeResult {
    /// From the client's first packet to the receiver's last byte.
    pub completion_s: f64,
    /// The scenario's ideal time T*.
    pub ideal_s: f64,
    /// Bytes delivered.
    pub bytes: u64,
    /// Whether the received bytes hash-equal the sent ones.
    pub verified: bool,
    /// The sender's counters at the end.
    pub sender: ConnectionStats,
    /// The data direction's link counters.
    pub forward: LinkStats,
}

impl RealtimeResult {
    /// T / T*.
    pub fn ratio(&self) -> f64 {
        self.completion_s / self.ideal_s
    }

    /// Bits per second delivered.
    pub fn goodput_bps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.completion_s
    }

    /// Goodput over the erasure channel's capacity, rate × (1 − loss).
    pub fn efficiency(&self, scenario: &Scenario) -> f64 {
        self.goodput_bps() / (scenario.rate_bps as f64 * (1.0 - scenario.loss))
    }

    /// Bytes the sender put on the wire per byte delivered.
    pub fn overhead(&self) -> f64 {
        self.sender.bytes_sent as f64 / self.bytes.max(1) as f64
    }

    /// Repair symbols per source symbol.
    pub fn redundancy(&self) -> f64 {
        self.sender.repair_symbols_sent as f64 / self.sender.source_symbols_sent.max(1) as f64
    }

    /// The loss the data direction actually had (the medium's, not the
    /// queue's).
    pub fn medium_loss(&self) -> f64 {
        let offered = self.forward.offered.max(1);
        self.forward.dropped_random as f64 / offered as f64
    }
}

/// What the transfer reports while it runs: bytes received so far and the
/// sender's connection, for its live estimates.
pub trait Progress: Send + Sync {
    /// Called a few times a second.
    fn update(&self, received: u64, sender: &ConnectionStats);
}

/// A progress report that shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn update(&self, _received: u64, _sender: &ConnectionStats) {}
}

/// The payload of a run: `size` bytes drawn from the seed, so a run is
/// repeatable and its bytes are not trivially compressible.
fn payload(size: u64, seed: u64) -> anyhow::Result<Vec<u8>> {
    let size = usize::try_from(size).context("the payload does not fit in memory")?;
    let mut bytes = vec![0; size];
    SmallRng::seed_from_u64(seed ^ 0x0070_6179_6c6f_6164).fill_bytes(&mut bytes);
    Ok(bytes)
}

/// Runs `scenario`'s single transfer through the shim on loopback, with
/// the endpoints on a tokio runtime of its own, writing each end's qlog
/// file into `qlog_dir` when given. Refuses what the real-time path does
/// not model (several flows; faults beyond random loss are modelled by the
/// shim's links, as in the simulator).
pub fn run(
    scenario: &Scenario,
    progress: Arc<dyn Progress>,
    qlog_dir: Option<&Path>,
) -> anyhow::Result<RealtimeResult> {
    if scenario.flows != 1 {
        bail!("a real-time run carries one flow");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(transfer(scenario, progress, qlog_dir))
}

async fn transfer(
    scenario: &Scenario,
    progress: Arc<dyn Progress>,
    qlog_dir: Option<&Path>,
) -> anyhow::Result<RealtimeResult> {
    let data = payload(scenario.size, scenario.seed)?;
    let expected = blake3::hash(&data);
    let loopback = "127.0.0.1:0".parse().expect("a valid address");
    let mut server_config = EndpointConfig::server();
    server_config.transport = scenario.transport.clone();
    server_config.qlog_dir = qlog_dir.map(Path::to_owned);
    let mut client_config = EndpointConfig::client();
    client_config.transport = scenario.transport.clone();
    client_config.qlog_dir = qlog_dir.map(Path::to_owned);
    let server = Endpoint::bind(loopback, server_config).context("binding the receiver")?;
    let client = Endpoint::bind(loopback, client_config).context("binding the sender")?;
    let (forward, reverse) = scenario.links();
    let path = ImpairedPath::start(server.local_addr(), forward, reverse, scenario.seed)
        .context("starting the emulated path")?;

    // Bytes the receiver has read, for progress reports.
    let counter = Arc::new(AtomicU64::new(0));
    let receiver = {
        let server = server.clone();
        let counter = counter.clone();
        tokio::spawn(async move {
            let connection = server
                .accept()
                .await
                .ok_or_else(|| anyhow!("the receiver stopped"))?;
            let (_send, mut recv) = connection.accept_stream().await?;
            let mut hasher = blake3::Hasher::new();
            let mut buf = vec![0; 256 << 10];
            let mut received = 0u64;
            loop {
                let n = recv.read(&mut buf).await.context("receiving")?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                received += n as u64;
                counter.store(received, Ordering::Relaxed);
            }
            Ok::<_, anyhow::Error>((received, hasher.finalize(), Instant::now(), connection))
        })
    };

    let start = Instant::now();
    // Both ends' keys are made in this process, fresh for the run: the
    // demo needs no configuration, and its packets are protected as any.
    let server_key = server.public_key().context("the receiver's key")?;
    let connection = client
        .connect(path.client_facing_addr(), server_key)
        .await
        .context("connecting through the emulated path")?;
    let reporter = tokio::spawn(report(connection.clone(), counter, progress.clone()));
    let (mut send, _recv) = connection.open_stream()?;
    send.write_all(&data).await.context("sending")?;
    send.shutdown().await?;
    let (received, hash, finished, _server_connection) =
        receiver.await.context("the receiver task")??;
    reporter.abort();
    let sender = connection.stats();
    progress.update(received, &sender);
    connection.close().await.context("closing")?;
    let (forward, _) = path.stats();
    path.shutdown().context("stopping the emulated path")?;
    Ok(RealtimeResult {
        completion_s: finished.duration_since(start).as_secs_f64(),
        ideal_s: scenario.ideal().as_secs_f64(),
        bytes: received,
        verified: received == scenario.size && hash == expected,
        sender,
        forward,
    })
}

async fn report(connection: Connection, received: Arc<AtomicU64>, progress: Arc<dyn Progress>) {
    loop {
        let received = received.load(Ordering::Relaxed);
        progress.update(received, &connection.stats());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
