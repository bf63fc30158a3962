//! The kernel's TCP, through tokio: write everything, shut down the write
//! half, read to end of stream.
//!
//! Socket buffers are left to the kernel: setting SO_RCVBUF or SO_SNDBUF
//! turns Linux's buffer autotuning off for that socket and caps the window
//! at the value given, while autotuning grows them as far as
//! `net.ipv4.tcp_rmem` / `tcp_wmem` allow. What the application controls is
//! the size of its reads and writes, which are large (about 1 MiB) so that
//! system calls are few.

use std::net::{Ipv4Addr, SocketAddr};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::payload::{Delivery, Verifier};
use super::{Mark, RunMeasurement, Sides, Transfer};

/// Bytes asked for in each read.
const READ_SIZE: usize = 1 << 20;

/// One transfer over TCP: see [`super::RunFn`].
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

async fn send(address: oneshot::Receiver<SocketAddr>, transfer: Transfer) -> anyhow::Result<Mark> {
    let address = address.await.context("the receiver's address")?;
    let mut stream = TcpStream::connect(address).await.context("connecting")?;
    let start = Mark::now()?;
    for chunk in transfer.pattern.chunks(transfer.bytes) {
        stream.write_all(&chunk).await?;
    }
    stream.shutdown().await?;
    Ok(start)
}

async fn receive(
    address: oneshot::Sender<SocketAddr>,
    transfer: Transfer,
) -> anyhow::Result<(Mark, Delivery)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    address
        .send(listener.local_addr()?)
        .map_err(|_| anyhow::anyhow!("the sender has gone"))?;
    let (mut stream, _) = listener.accept().await.context("accepting")?;
    let mut verifier = Verifier::new(&transfer.pattern);
    let mut buffer = vec![0u8; READ_SIZE];
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            break;
        }
        verifier.feed(&buffer[..n]);
    }
    let end = Mark::now()?;
    Ok((end, verifier.finish()))
}
