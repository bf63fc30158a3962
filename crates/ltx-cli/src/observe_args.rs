//! The observation flags of the commands that make real connections
//! (`ltx send`, `ltx recv`, `ltx tunnel`): qlog traces and periodic JSON
//! statistics, the same flags with the same meaning everywhere.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use ltx::EndpointConfig;
use ltx_sim::units::parse_duration;

use crate::qlog::prepare_dir;

/// Where traces go and how often statistics are printed.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Observing")]
pub struct ObserveArgs {
    /// Write each connection's trace into this directory as a qlog file
    /// (`.sqlog`, which qvis opens and `ltx plot` draws); made if needed.
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// With --json, also print every INTERVAL (e.g. 1s) one JSON line per
    /// connection with its statistics.
    #[arg(long, value_name = "INTERVAL", value_parser = parse_interval, requires = "json")]
    pub stats_interval: Option<Duration>,
}

impl ObserveArgs {
    /// Sets the endpoint's qlog directory, made first if it does not exist.
    pub fn apply(&self, config: &mut EndpointConfig) -> anyhow::Result<()> {
        config.qlog_dir = self.qlog.as_deref().map(prepare_dir).transpose()?;
        Ok(())
    }
}

fn parse_interval(input: &str) -> Result<Duration, String> {
    let interval = parse_duration(input).map_err(|e| e.to_string())?;
    if interval < Duration::from_millis(10) {
        return Err(format!("{input}: the interval is at least 10ms"));
    }
    Ok(interval)
}
