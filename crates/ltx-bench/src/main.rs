//! `ltx-bench`: the benchmarks of ltx, each a subcommand that prints one
//! JSON object per line (with `--json`) or a table, and some write runs,
//! tables and plots to a directory. How to run each and what it produced:
//! `docs/benchmarks.md` and `docs/results.md`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ltx_cli::{end_quietly_on_closed_stdout, exit};

mod coding;
mod compare;
mod emu;
mod fidelity;
mod forwarder;
mod frontier;
mod loopback;
mod measure;
mod payload;
mod peer;
mod plots;
mod scale;
mod tunnel;

/// ltx-bench: the benchmarks of the ltx transport.
#[derive(Debug, Parser)]
#[command(name = "ltx-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The benchmarks `ltx-bench` can run.
#[derive(Debug, Subcommand)]
enum Command {
    /// GF(2^8) region kernels, encoder and decoder throughput, beside plain
    /// XOR and reed-solomon-erasure on the same buffers.
    Coding(coding::CodingArgs),
    /// Run every preset over the seed scenario matrix (several seeds per
    /// cell, on all cores) and write runs.csv, tables.md, summary.jsonl
    /// and plots; report which targets the runs meet.
    Compare(compare::CompareArgs),
    /// Wire bytes against delivery delay as the price of waiting for
    /// feedback goes from nothing to a second, with and without an expected
    /// loss rate, on the seed tables' paths (simulator).
    Frontier(frontier::FrontierArgs),
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
    /// TCP applications (a bulk download, a page load, an interactive
    /// stream) through ltx tunnel and its peers across the emulator;
    /// runs.csv, tables, plots (root).
    Tunnel(tunnel::TunnelBenchArgs),
    /// The programs of the tunnel benchmark: the application server, the
    /// interactive client, the QUIC tunnel's ends.
    #[command(subcommand, hide = true)]
    TunnelPeer(tunnel::TunnelPeerCommand),
    /// The peers of the emulated-link benchmark: one end of one transfer
    /// of each Rust system, and a check of every system over loopback.
    #[command(subcommand, hide = true)]
    Peer(peer::PeerCommand),
    /// One tunnel server on loopback under many clients and streams: its
    /// memory per idle connection, no stream lost, and how it uses the cores.
    Scale(scale::ScaleArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Coding(_)
            | Command::Compare(_)
            | Command::Fidelity(_)
            | Command::Frontier(_)
            | Command::Loopback(_)
    ) {
        end_quietly_on_closed_stdout();
    }
    let result = match cli.command {
        Command::Coding(args) => coding::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Emu(args) => emu::run(&args),
        Command::Fidelity(args) => fidelity::run(&args),
        Command::Forwarder(args) => forwarder::run(&args),
        Command::Frontier(args) => frontier::run(&args),
        Command::Loopback(args) => loopback::run(&args),
        Command::Peer(command) => peer::run(command),
        Command::Scale(args) => scale::run(&args),
        Command::Tunnel(args) => tunnel::run(&args),
        Command::TunnelPeer(command) => tunnel::run_peer(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::Failure::of(&e).code()
        }
    }
}
