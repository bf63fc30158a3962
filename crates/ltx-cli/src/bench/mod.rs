//! `ltx bench …`: benchmarks that print one JSON object per line.

use clap::Subcommand;

mod coding;
mod emu;
mod fidelity;
mod forwarder;
mod loopback;
mod measure;
mod payload;
mod peer;
pub(crate) mod plots;

/// The benchmarks `ltx bench` can run.
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// GF(2^8) region kernels, encoder and decoder throughput, beside plain
    /// XOR and reed-solomon-erasure on the same buffers.
    Coding(coding::CodingArgs),
    /// The side-by-side suite: seed 000's tables across the emulator for
    /// ltx and every peer; runs.csv, tables, plots (root).
    Emu(emu::EmuBenchArgs),
    /// One transfer simulated and run for real through the shim on
    /// loopback: do their completion times agree?
    Fidelity(fidelity::FidelityArgs),
    /// The emulator's forwarder with no impairment: kernel TCP throughput
    /// and added round-trip time, beside a veth pair (root).
    Forwarder(forwarder::ForwarderArgs),
    /// One connection over 127.0.0.1, no impairment: throughput and CPU per
    /// gigabyte of each transport, beside quinn and the kernel's TCP.
    Loopback(loopback::LoopbackArgs),
    /// The peers of the emulated-link benchmark: one end of one transfer
    /// of each Rust system, and a check of every system over loopback.
    #[command(subcommand, hide = true)]
    Peer(peer::PeerCommand),
}

/// Runs one benchmark.
pub(crate) fn run(command: BenchCommand) -> anyhow::Result<()> {
    if matches!(
        command,
        BenchCommand::Coding(_) | BenchCommand::Fidelity(_) | BenchCommand::Loopback(_)
    ) {
        ltx_cli::end_quietly_on_closed_stdout();
    }
    match command {
        BenchCommand::Coding(args) => coding::run(&args),
        BenchCommand::Emu(args) => emu::run(&args),
        BenchCommand::Fidelity(args) => fidelity::run(&args),
        BenchCommand::Forwarder(args) => forwarder::run(&args),
        BenchCommand::Loopback(args) => loopback::run(&args),
        BenchCommand::Peer(command) => peer::run(command),
    }
}
