//! `ltx bench …`: benchmarks that print one JSON object per line.

use clap::Subcommand;

mod coding;
mod measure;

/// The benchmarks `ltx bench` can run.
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// GF(2^8) region kernels, encoder and decoder throughput, beside plain
    /// XOR and reed-solomon-erasure on the same buffers.
    Coding(coding::CodingArgs),
}

/// Runs one benchmark.
pub(crate) fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::Coding(args) => coding::run(&args),
    }
}
