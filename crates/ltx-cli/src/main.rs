//! The `ltx` command.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
// Driven by `ltx send` and `ltx recv` once they exist; until then only the
// tests use it.
#[allow(dead_code, unused_imports)]
mod files;
mod sim;

/// ltx: a loss-tolerant reliable transport.
#[derive(Debug, Parser)]
#[command(name = "ltx", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a benchmark.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Run the deterministic simulator.
    #[command(subcommand)]
    Sim(sim::SimCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(command) => bench::run(command),
        Command::Sim(command) => sim::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
