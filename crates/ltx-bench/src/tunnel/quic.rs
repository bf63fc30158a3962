//! The QUIC tunnels of `ltx-bench tunnel`, in the style of QPEP, TUIC and
//! Hysteria 2: one quinn connection between the tunnel's ends, one
//! bidirectional QUIC stream per TCP connection, with quinn's BBR or with
//! Brutal told the link's rate ([`super::brutal`]).
//!
//! `tunnel-peer quic-server` accepts connections and connects each stream
//! to `--target`; `tunnel-peer quic-client` connects once, then accepts TCP
//! connections on `--listen`. A TCP end of stream becomes the QUIC stream's
//! finish and the other way round, so half-closed connections work.

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use quinn::congestion::{BbrConfig, ControllerFactory};
use quinn::{
    Endpoint, EndpointConfig, RecvStream, SendStream, TokioRuntime, TransportConfig, VarInt,
};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::super::peer::quic::{
    any_certificate_client_config, self_signed_server_config, SERVER_NAME,
};
use super::super::peer::sockets;
use super::brutal::BrutalConfig;

/// Which congestion controller the tunnel's connection runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum QuicCc {
    /// quinn's BBR.
    Bbr,
    /// Brutal at `--rate`.
    Brutal,
}

/// Options of both ends of the QUIC tunnel.
#[derive(Debug, Args)]
pub(crate) struct QuicArgs {
    /// UDP (server) or TCP (client) address to listen on.
    #[arg(long)]
    listen: SocketAddr,
    /// The TCP address each stream is connected to (server).
    #[arg(long)]
    target: Option<SocketAddr>,
    /// The server's UDP address (client).
    #[arg(long)]
    remote: Option<SocketAddr>,
    /// The congestion controller.
    #[arg(long, value_enum)]
    cc: QuicCc,
    /// Brutal's target rate, bits per second.
    #[arg(long)]
    rate: Option<u64>,
    /// UDP socket buffers, bytes.
    #[arg(long)]
    socket_buffer: Option<u64>,
}

/// Flow-control windows above any bandwidth-delay product of the suite, as
/// the emulated-link suite's QUIC peer has them.
const WINDOW: u32 = 64 << 20;

fn transport(args: &QuicArgs) -> anyhow::Result<Arc<TransportConfig>> {
    let controller: Arc<dyn ControllerFactory + Send + Sync> = match args.cc {
        QuicCc::Bbr => Arc::new(BbrConfig::default()),
        QuicCc::Brutal => {
            let rate = args.rate.context("brutal needs --rate")?;
            Arc::new(BrutalConfig {
                bytes_per_s: rate / 8,
            })
        }
    };
    let mut transport = TransportConfig::default();
    transport
        .congestion_controller_factory(controller)
        .stream_receive_window(VarInt::from_u32(WINDOW))
        .receive_window(VarInt::MAX)
        .send_window(u64::from(WINDOW))
        .max_concurrent_bidi_streams(VarInt::from_u32(1024))
        .max_idle_timeout(Some(VarInt::from_u32(120_000).into()))
        .keep_alive_interval(Some(Duration::from_secs(5)));
    Ok(Arc::new(transport))
}

fn udp_socket(address: SocketAddr, args: &QuicArgs) -> anyhow::Result<std::net::UdpSocket> {
    let socket =
        std::net::UdpSocket::bind(address).with_context(|| format!("binding {address}"))?;
    if let Some(bytes) = args.socket_buffer {
        sockets::set_buffers(socket.as_fd(), bytes).context("setting socket buffers")?;
    }
    Ok(socket)
}

/// The server end: serves until stopped.
pub(crate) async fn server(args: &QuicArgs) -> anyhow::Result<()> {
    let target = args.target.context("the server needs --target")?;
    let mut config = self_signed_server_config()?;
    config.transport_config(transport(args)?);
    let endpoint = Endpoint::new(
        EndpointConfig::default(),
        Some(config),
        udp_socket(args.listen, args)?,
        Arc::new(TokioRuntime),
    )?;
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(async move {
            let Ok(connection) = incoming.await else {
                return;
            };
            while let Ok((send, recv)) = connection.accept_bi().await {
                tokio::spawn(async move {
                    match TcpStream::connect(target).await {
                        Ok(tcp) => relay(tcp, send, recv).await,
                        Err(e) => eprintln!("connecting to {target}: {e}"),
                    }
                });
            }
        });
    }
    Ok(())
}

/// The client end: connects, then forwards every TCP connection until
/// stopped.
pub(crate) async fn client(args: &QuicArgs) -> anyhow::Result<()> {
    let remote = args.remote.context("the client needs --remote")?;
    let mut config = any_certificate_client_config()?;
    config.transport_config(transport(args)?);
    let endpoint = Endpoint::new(
        EndpointConfig::default(),
        None,
        udp_socket(SocketAddr::from(([0, 0, 0, 0], 0)), args)?,
        Arc::new(TokioRuntime),
    )?;
    let connection = endpoint
        .connect_with(config, remote, SERVER_NAME)?
        .await
        .context("the handshake")?;
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    loop {
        let (tcp, _) = listener.accept().await?;
        let (send, recv) = connection.open_bi().await?;
        tokio::spawn(relay(tcp, send, recv));
    }
}

/// Copies a TCP connection and a QUIC stream into each other, each
/// direction's end passed on as the other's.
async fn relay(tcp: TcpStream, mut send: SendStream, mut recv: RecvStream) {
    let _ = tcp.set_nodelay(true);
    let (mut tcp_read, mut tcp_write) = tcp.into_split();
    let up = async {
        let copied = tokio::io::copy(&mut tcp_read, &mut send).await;
        if copied.is_ok() {
            let _ = send.finish();
        } else {
            let _ = send.reset(VarInt::from_u32(1));
        }
    };
    let down = async {
        if tokio::io::copy(&mut recv, &mut tcp_write).await.is_ok() {
            let _ = tcp_write.shutdown().await;
        }
    };
    tokio::join!(up, down);
    let _ = send.stopped().await;
}
