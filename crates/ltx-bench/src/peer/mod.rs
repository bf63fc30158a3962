//! `ltx-bench peer …`: the peers of the emulated-link benchmark.
//!
//! Each system under test has a server program, which receives one payload
//! and checks it, and a client program, which sends it; `ltx emu` runs the
//! two in network namespaces of their own, joined by the emulated link. The
//! Rust systems (ltx, kernel TCP, quinn) are the hidden subcommands `recv`
//! and `send` here; NORM and kcp-go are small drivers in C and Go under
//! `bench/peers/`, built by [`systems::prepare`].
//!
//! Every program prints one JSON line once its part is done (see
//! [`report`]); a server may then stay a few seconds for the client to
//! close, and a harness may stop it once it has the line. The
//! completion time of a transfer is the same for every system: from the
//! moment the client starts to connect (after its own set-up) to the moment
//! the server has read and checked the last byte. Both read
//! `CLOCK_MONOTONIC`, which every process on the machine shares whatever
//! network namespace it is in, so the two ends' marks can be subtracted.
//! That window holds what the ideal time `T*` counts: the handshake (for the
//! systems that have one), the one-way delay and the bytes themselves.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use ltx_sim::units::{parse_duration, parse_size};

mod check;
mod ltx;
pub(crate) mod quic;
pub(crate) mod report;
pub(crate) mod sockets;
pub(crate) mod systems;
mod tcp;

use super::payload::Pattern;

/// The peers' subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PeerCommand {
    /// Receive one payload, check it, print a JSON line, exit.
    Recv(RecvArgs),
    /// Send one payload, wait until the receiver has it, print a JSON line.
    Send(SendArgs),
    /// Build every system's peers and run each over loopback with a small
    /// payload: which can be built, and whether they deliver it intact.
    Check(check::CheckArgs),
}

/// A system whose peers are written in Rust and run by this binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RustSystem {
    /// ltx with its defaults.
    Ltx,
    /// ltx told the path's rate (`--rate-hint`).
    LtxHint,
    /// ltx resuming a path an earlier connection measured: the sender
    /// starts from the path in `--saved-path`.
    LtxResumed,
    /// The kernel's TCP with Cubic.
    TcpCubic,
    /// The kernel's TCP with BBR.
    TcpBbr,
    /// quinn with its Cubic controller.
    QuicCubic,
    /// quinn with its BBR controller.
    QuicBbr,
}

impl RustSystem {
    /// The system's name in reports and on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RustSystem::Ltx => "ltx",
            RustSystem::LtxHint => "ltx-hint",
            RustSystem::LtxResumed => "ltx-resumed",
            RustSystem::TcpCubic => "tcp-cubic",
            RustSystem::TcpBbr => "tcp-bbr",
            RustSystem::QuicCubic => "quic-cubic",
            RustSystem::QuicBbr => "quic-bbr",
        }
    }
}

/// What both ends of a transfer are told.
#[derive(Debug, Clone, Args)]
pub(crate) struct PayloadArgs {
    /// Which system carries the payload.
    #[arg(long, value_enum)]
    system: RustSystem,
    /// Payload bytes, such as 10MB or 10000000.
    #[arg(long, value_parser = parse_size)]
    size: u64,
    /// Seed of the payload's bytes; both ends must be given the same.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Kernel socket buffers, bytes (kernel TCP and QUIC); the kernel's own
    /// choice when not given. See `sockets::set_buffers`.
    #[arg(long, value_parser = parse_size)]
    socket_buffer: Option<u64>,
    /// Give up when the transfer has not ended after this long.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    timeout: Duration,
    /// ltx writes a qlog trace of the timed transfer into this directory
    /// (the other systems ignore it).
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
}

/// Options of `ltx-bench peer recv`.
#[derive(Debug, Args)]
pub(crate) struct RecvArgs {
    /// Address to listen on (UDP for ltx and QUIC, TCP for TCP).
    #[arg(long)]
    listen: SocketAddr,
    #[command(flatten)]
    payload: PayloadArgs,
}

/// Options of `ltx-bench peer send`.
#[derive(Debug, Args)]
pub(crate) struct SendArgs {
    /// The receiver's address.
    #[arg(long)]
    connect: SocketAddr,
    /// The path's rate in bits per second, given to ltx as its rate hint
    /// (the other Rust systems take no such hint).
    #[arg(long)]
    rate_hint: Option<u64>,
    /// ltx: after the transfer, write the path it measured (rate and
    /// minimum RTT, JSON) to this file, for `ltx-resumed` to start from.
    #[arg(long)]
    save_path: Option<PathBuf>,
    /// `ltx-resumed`: the path to resume from, as `--save-path` wrote it.
    #[arg(long, required_if_eq("system", "ltx-resumed"))]
    saved_path: Option<PathBuf>,
    #[command(flatten)]
    payload: PayloadArgs,
}

/// Runs a peer subcommand.
pub(crate) fn run(command: PeerCommand) -> anyhow::Result<()> {
    match command {
        PeerCommand::Recv(args) => runtime()?.block_on(async {
            let received = tokio::time::timeout(args.payload.timeout, receive(&args))
                .await
                .map_err(|_| {
                    anyhow::anyhow!("no whole payload after {:?}", args.payload.timeout)
                })??;
            // The report goes out first: a harness that stops this process
            // while it lingers still has it.
            println!("{}", received.report.to_json());
            std::io::stdout().flush()?;
            let _ = tokio::time::timeout(LINGER_LIMIT, received.linger).await;
            Ok(())
        }),
        PeerCommand::Send(args) => {
            let report = runtime()?.block_on(async {
                tokio::time::timeout(args.payload.timeout, send(&args))
                    .await
                    .map_err(|_| {
                        anyhow::anyhow!("not delivered after {:?}", args.payload.timeout)
                    })?
            })?;
            println!("{}", report.to_json());
            Ok(())
        }
        PeerCommand::Check(args) => check::run(&args),
    }
}

/// One thread per peer: each end is a process of its own, as NORM's and
/// kcp-go's are, and its CPU time is what it spends, whatever the threads.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime")
}

/// What a receiver has when the payload is in: its report, and what is
/// left to do before the process ends (staying until the sender has closed,
/// where the protocol has a close to wait for).
pub(crate) struct Received {
    /// The server's report.
    pub(crate) report: report::ServerReport,
    /// The rest of the connection's life.
    pub(crate) linger: Pin<Box<dyn Future<Output = ()>>>,
}

/// The longest a receiver stays after its report for the sender to close.
const LINGER_LIMIT: Duration = Duration::from_secs(30);

async fn receive(args: &RecvArgs) -> anyhow::Result<Received> {
    let payload = &args.payload;
    let pattern = Pattern::new(payload.seed);
    match payload.system {
        RustSystem::Ltx | RustSystem::LtxHint | RustSystem::LtxResumed => {
            ltx::receive(args.listen, payload, &pattern).await
        }
        RustSystem::TcpCubic | RustSystem::TcpBbr => {
            tcp::receive(args.listen, payload, &pattern).await
        }
        RustSystem::QuicCubic | RustSystem::QuicBbr => {
            quic::receive(args.listen, payload, &pattern).await
        }
    }
}

async fn send(args: &SendArgs) -> anyhow::Result<report::ClientReport> {
    let payload = &args.payload;
    let pattern = Pattern::new(payload.seed);
    match payload.system {
        RustSystem::Ltx | RustSystem::LtxHint | RustSystem::LtxResumed => {
            let resume = ltx::Resume {
                save_to: args.save_path.as_deref(),
                saved: args.saved_path.as_deref(),
            };
            ltx::send(args.connect, args.rate_hint, resume, payload, &pattern).await
        }
        RustSystem::TcpCubic | RustSystem::TcpBbr => {
            tcp::send(args.connect, payload, &pattern).await
        }
        RustSystem::QuicCubic | RustSystem::QuicBbr => {
            quic::send(args.connect, payload, &pattern).await
        }
    }
}
