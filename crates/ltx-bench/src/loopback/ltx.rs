//! ltx: one bidirectional stream, its send half carrying the bytes; with
//! its packet protection (`ltx`), and with the plain layer (`ltx-plain`,
//! a checksum only) to measure what protection costs; and with each end
//! writing its qlog trace (`ltx-qlog`) to measure what tracing costs.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use ltx::{Endpoint, EndpointConfig, PublicKey, Security};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use super::payload::Verifier;
use super::{Mark, RunMeasurement, Sides, Transfer};

/// One transfer over ltx: see [`super::RunFn`]. Both ends run ltx's
/// defaults: the Noise handshake with fresh keys, and AES-256-GCM.
pub(super) fn run(sides: &Sides, transfer: &Transfer) -> anyhow::Result<RunMeasurement> {
    run_with(sides, transfer, true)
}

/// One transfer over ltx with the plain layer on both ends.
pub(super) fn run_plain(sides: &Sides, transfer: &Transfer) -> anyhow::Result<RunMeasurement> {
    run_with(sides, transfer, false)
}

/// One transfer over ltx, both ends writing a qlog file into a temporary
/// directory that is deleted afterwards.
pub(super) fn run_traced(sides: &Sides, transfer: &Transfer) -> anyhow::Result<RunMeasurement> {
    let dir = std::env::temp_dir().join(format!("ltx-bench-qlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
    let traced = Tracing {
        protected: true,
        qlog_dir: Some(dir.clone()),
    };
    let result = run_configured(sides, transfer, traced);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// How both ends are configured.
#[derive(Debug, Clone)]
struct Tracing {
    protected: bool,
    qlog_dir: Option<PathBuf>,
}

fn run_with(sides: &Sides, transfer: &Transfer, protected: bool) -> anyhow::Result<RunMeasurement> {
    let untraced = Tracing {
        protected,
        qlog_dir: None,
    };
    run_configured(sides, transfer, untraced)
}

fn run_configured(
    sides: &Sides,
    transfer: &Transfer,
    ends: Tracing,
) -> anyhow::Result<RunMeasurement> {
    let (address_tx, address_rx) = oneshot::channel();
    let (start, (end, delivery)) = sides.join(
        transfer.time_limit(),
        send(address_rx, transfer.clone(), ends.clone()),
        receive(address_tx, transfer.clone(), ends),
    )?;
    Ok(RunMeasurement {
        start,
        end,
        delivery,
    })
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn config(base: EndpointConfig, ends: &Tracing) -> EndpointConfig {
    let base = EndpointConfig {
        qlog_dir: ends.qlog_dir.clone(),
        ..base
    };
    if ends.protected {
        base
    } else {
        EndpointConfig {
            security: Security::Plain,
            ..base
        }
    }
}

async fn send(
    address: oneshot::Receiver<(SocketAddr, PublicKey)>,
    transfer: Transfer,
    ends: Tracing,
) -> anyhow::Result<Mark> {
    let endpoint = Endpoint::bind(loopback(), config(EndpointConfig::client(), &ends))?;
    let (address, key) = address.await.context("the receiver's address")?;
    let connection = endpoint
        .connect(address, key)
        .await
        .context("the handshake")?;
    let start = Mark::now()?;
    let (mut stream, _recv) = connection.open_stream()?;
    for chunk in transfer.pattern.chunks(transfer.bytes) {
        stream.write_chunk(chunk).await?;
    }
    stream.shutdown().await?;
    // A graceful close returns once the receiver has decoded everything.
    connection.close().await?;
    Ok(start)
}

async fn receive(
    address: oneshot::Sender<(SocketAddr, PublicKey)>,
    transfer: Transfer,
    ends: Tracing,
) -> anyhow::Result<(Mark, super::Delivery)> {
    let endpoint = Endpoint::bind(loopback(), config(EndpointConfig::server(), &ends))?;
    // A plain endpoint has no key; the sender then ignores the one given.
    let key = endpoint
        .public_key()
        .unwrap_or_else(|| ltx::generate_keypair().public());
    address
        .send((endpoint.local_addr(), key))
        .map_err(|_| anyhow::anyhow!("the sender has gone"))?;
    let connection = endpoint.accept().await.context("the endpoint closed")?;
    let (_send, mut stream) = connection.accept_stream().await?;
    let mut verifier = Verifier::new(&transfer.pattern);
    let mut buf = vec![0; 1 << 20];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        verifier.feed(&buf[..n]);
    }
    let end = Mark::now()?;
    connection.closed().await;
    Ok((end, verifier.finish()))
}
