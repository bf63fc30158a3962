//! ltx: one bidirectional stream, its send half carrying the bytes.

use std::net::SocketAddr;

use anyhow::Context;
use ltx::{Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use super::payload::Verifier;
use super::{Mark, RunMeasurement, Sides, Transfer};

/// One transfer over ltx: see [`super::RunFn`]. Both ends run ltx's
/// defaults (the plain packet protection, as the connection has no keys).
pub(super) fn run(sides: &Sides, transfer: &Transfer) -> anyhow::Result<RunMeasurement> {
    let (address_tx, address_rx) = oneshot::channel();
    let (start, (end, delivery)) = sides.join(
        transfer.time_limit(),
        send(address_rx, transfer.clone()),
        receive(address_tx, transfer.clone()),
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

async fn send(address: oneshot::Receiver<SocketAddr>, transfer: Transfer) -> anyhow::Result<Mark> {
    let endpoint = Endpoint::bind(loopback(), EndpointConfig::client())?;
    let address = address.await.context("the receiver's address")?;
    let connection = endpoint.connect(address).await.context("the handshake")?;
    let start = Mark::now()?;
    let (mut stream, _recv) = connection.open_stream()?;
    for chunk in transfer.pattern.chunks(transfer.bytes) {
        stream.write_all(&chunk).await?;
    }
    stream.shutdown().await?;
    // A graceful close returns once the receiver has decoded everything.
    connection.close().await?;
    Ok(start)
}

async fn receive(
    address: oneshot::Sender<SocketAddr>,
    transfer: Transfer,
) -> anyhow::Result<(Mark, super::Delivery)> {
    let endpoint = Endpoint::bind(loopback(), EndpointConfig::server())?;
    address
        .send(endpoint.local_addr())
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
