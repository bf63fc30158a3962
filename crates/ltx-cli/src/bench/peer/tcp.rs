//! The kernel's TCP: one connection, Cubic or BBR set on the socket.
//!
//! The sender writes the payload, shuts its write half and then waits for
//! the receiver to close, which it does once it has checked the last byte:
//! the sending process so outlives its data rather than leaving the rest to
//! the kernel after it has gone.

use std::net::SocketAddr;
use std::os::fd::AsFd;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use super::super::payload::{Pattern, Verifier};
use super::report::{cpu_seconds, monotonic_ns, ClientReport, ServerReport};
use super::{sockets, PayloadArgs, RustSystem};

/// Bytes asked for in each read.
const READ_SIZE: usize = 1 << 20;

fn controller(system: RustSystem) -> anyhow::Result<&'static str> {
    match system {
        RustSystem::TcpCubic => Ok("cubic"),
        RustSystem::TcpBbr => Ok("bbr"),
        other => anyhow::bail!("{} is not a TCP system", other.name()),
    }
}

/// A socket of `address`'s family with the system's controller and the
/// buffers asked for, set before the handshake so that the window scale it
/// announces fits them.
fn socket(address: SocketAddr, args: &PayloadArgs) -> anyhow::Result<TcpSocket> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }?;
    let name = controller(args.system)?;
    sockets::set_congestion_control(socket.as_fd(), name)
        .with_context(|| format!("setting TCP congestion control {name}"))?;
    if let Some(bytes) = args.socket_buffer {
        sockets::set_buffers(socket.as_fd(), bytes).context("setting socket buffers")?;
    }
    Ok(socket)
}

/// Takes one connection on `listen` and checks what it carries.
pub(super) async fn receive(
    listen: SocketAddr,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<ServerReport> {
    let socket = socket(listen, args)?;
    socket.set_reuseaddr(true)?;
    socket
        .bind(listen)
        .with_context(|| format!("binding {listen}"))?;
    let listener = socket.listen(1)?;
    let (mut stream, _) = listener.accept().await.context("accepting")?;
    let mut verifier = Verifier::new(pattern);
    let mut buffer = vec![0u8; READ_SIZE];
    let mut first_ns = None;
    loop {
        let n = stream.read(&mut buffer).await.context("reading")?;
        if n == 0 {
            break;
        }
        first_ns.get_or_insert(monotonic_ns()?);
        verifier.feed(&buffer[..n]);
    }
    let end_ns = monotonic_ns()?;
    let report = ServerReport::new(
        args.system.name(),
        args.size,
        verifier.finish(),
        first_ns.unwrap_or(end_ns),
        end_ns,
    )?;
    drop(stream);
    Ok(report)
}

/// Sends the payload to `connect` and waits for the receiver to close.
pub(super) async fn send(
    connect: SocketAddr,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<ClientReport> {
    let socket = socket(connect, args)?;
    let start_ns = monotonic_ns()?;
    let mut stream = socket
        .connect(connect)
        .await
        .with_context(|| format!("connecting to {connect}"))?;
    for chunk in pattern.chunks(args.size) {
        stream.write_all(&chunk).await.context("writing")?;
    }
    stream.shutdown().await?;
    let mut rest = Vec::new();
    stream
        .read_to_end(&mut rest)
        .await
        .context("waiting for the receiver to close")?;
    Ok(ClientReport {
        system: args.system.name().to_owned(),
        bytes: args.size,
        start_ns,
        cpu_s: cpu_seconds()?,
        wire_bytes: None,
    })
}
