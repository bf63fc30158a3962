//! `ltx plot`: a qlog trace drawn as stacked time series.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use ltx_plot::Trace;

/// What to draw and where.
#[derive(Debug, Args)]
pub(crate) struct PlotArgs {
    /// A qlog file written with `--qlog` (`.sqlog`).
    trace: PathBuf,
    /// The picture to write: `.png` or `.svg`.
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
}

/// Runs `ltx plot`.
pub(crate) fn run(args: &PlotArgs) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.trace).with_context(|| format!("reading {}", args.trace.display()))?;
    let trace =
        Trace::parse(&bytes).with_context(|| format!("reading {}", args.trace.display()))?;
    draw(&trace, &args.output)
}

/// Draws `trace` into `output` and says where it went.
pub(crate) fn draw(trace: &Trace, output: &Path) -> anyhow::Result<()> {
    ltx_plot::draw(trace, output)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}
