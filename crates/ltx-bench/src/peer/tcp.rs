//! The kernel's TCP: one connection, Cubic or BBR set on the socket.
//!
//! The sender writes the payload, shuts its write half and then waits for
//! the receiver to close, which it does once it has checked the last byte:
//! the sending process so outlives its data rather than leaving the rest to
//! the kernel after it has gone.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::super::payload::{Pattern, Verifier};
use super::report::{cpu_seconds, monotonic_ns, run_queue_seconds, ClientReport, ServerReport};
use super::{sockets, PayloadArgs, Received, RustSystem};

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
) -> anyhow::Result<Received> {
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
    // Closing tells the sender that everything arrived; nothing to wait for.
    drop(stream);
    Ok(Received {
        report,
        linger: Box::pin(std::future::ready(())),
    })
}

/// How long a refused connection is tried again: the server may still be
/// starting in its namespace when the client is started.
const LISTEN_WAIT: Duration = Duration::from_secs(5);

/// Connects, trying again while the server refuses (it is not listening
/// yet); the start mark is taken at the attempt that succeeds, as the other
/// systems' clients, which send datagrams, have it at their first one.
async fn connect_when_listening(
    connect: SocketAddr,
    args: &PayloadArgs,
) -> anyhow::Result<(u64, TcpStream)> {
    let give_up = Instant::now() + LISTEN_WAIT;
    loop {
        let socket = socket(connect, args)?;
        let start_ns = monotonic_ns()?;
        match socket.connect(connect).await {
            Ok(stream) => return Ok((start_ns, stream)),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused && Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e).with_context(|| format!("connecting to {connect}")),
        }
    }
}

/// Sends the payload to `connect` and waits for the receiver to close.
pub(super) async fn send(
    connect: SocketAddr,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<ClientReport> {
    let (start_ns, mut stream) = connect_when_listening(connect, args).await?;
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
        run_queue_s: run_queue_seconds(),
        wire_bytes: None,
    })
}
