//! The `ltx` command.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod demo;
mod emu;
mod exit;
mod keys;
mod live;
mod realtime;
mod recv;
mod repair_args;
mod send;
mod sim;
mod sim_compare;
mod sim_soak;

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
    /// Make a key pair for `ltx recv` / `ltx send` (--key): writes the
    /// private key to a new file (mode 0600) and prints the public key.
    Keygen(keys::KeygenArgs),
    /// Receive files from `ltx send`.
    Recv(recv::RecvArgs),
    /// Send files to `ltx recv` (resumes a partial file from an earlier run).
    Send(send::SendArgs),
    /// Run the deterministic simulator.
    #[command(subcommand)]
    Sim(sim::SimCommand),
}

/// Lets a closed stdout end the process as it ends any Unix filter
/// (`ltx sim compare --json | head`), instead of a panic in the first print
/// after it: the default action of SIGPIPE, which Rust's runtime ignores.
/// Only for the commands that compute and print and hold nothing to clean
/// up (the simulator's, and the benchmarks on loopback): the others own
/// namespaces or partial files, which a signal would leave behind.
pub(crate) fn end_quietly_on_closed_stdout() {
    // SAFETY: `signal` with a standard signal and `SIG_DFL` only resets a
    // disposition; the process has no handler for SIGPIPE to lose.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(command) => bench::run(command),
        Command::Demo(args) => demo::run(&args),
        Command::Emu(args) => emu::run(&args),
        Command::Keygen(args) => keys::run_keygen(&args),
        Command::Recv(args) => recv::run(&args),
        Command::Send(args) => send::run(&args),
        Command::Sim(command) => {
            end_quietly_on_closed_stdout();
            sim::run(command)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::Failure::of(&e).code()
        }
    }
}
