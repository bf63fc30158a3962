//! The `ltx` command.

use clap::{Parser, Subcommand};

mod bench;

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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(command) => bench::run(command),
    }
}
