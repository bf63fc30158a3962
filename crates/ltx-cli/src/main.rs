//! The `ltx` command.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod demo;
mod emu;
mod exit;
mod files;
mod live;
mod realtime;
mod recv;
mod send;
mod sim;

/// ltx: a loss-tolerant reliable transport.
#[derive(Debug, Parser)]
#[command(name = "ltx", version, about, after_help = exit::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a benchmark.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Transfer a generated payload over an emulated lossy long-delay path
    /// on loopback (no root, no configuration) and show how it went.
    Demo(demo::DemoArgs),
    /// Emulate a path between two network namespaces in real time (root).
    Emu(emu::EmuArgs),
    /// Receive files from `ltx send`.
    Recv(recv::RecvArgs),
    /// Send files to `ltx recv` (resumes a partial file from an earlier run).
    Send(send::SendArgs),
    /// Run the deterministic simulator.
    #[command(subcommand)]
    Sim(sim::SimCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(command) => bench::run(command),
        Command::Demo(args) => demo::run(&args),
        Command::Emu(args) => emu::run(&args),
        Command::Recv(args) => recv::run(&args),
        Command::Send(args) => send::run(&args),
        Command::Sim(command) => sim::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::Failure::of(&e).code()
        }
    }
}
