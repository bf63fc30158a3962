//! `--metrics` and `--qlog` of both tunnel commands, as flags or in the
//! configuration file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use ltx::{Endpoint, EndpointConfig};
use ltx_cli::metrics::MetricsServer;
use ltx_cli::qlog::prepare_dir;
use ltx_sim::units::parse_duration;

use super::stats::StatsDisplay;
use super::usage;

/// The observation settings of a configuration file.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub(crate) struct ObserveFile {
    /// As `--metrics`.
    pub(crate) metrics: Option<String>,
    /// As `--qlog`.
    pub(crate) qlog: Option<PathBuf>,
    /// As `--stats-interval`.
    pub(crate) stats_interval: Option<String>,
    /// As `--log-format`.
    pub(crate) log_format: Option<LogFormat>,
}

/// The observation flags of a tunnel command.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Observing")]
pub(crate) struct TunnelObserveArgs {
    /// Serve this end's counters for Prometheus at http://ADDR:PORT/metrics
    /// (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<SocketAddr>,
    /// Write each connection's trace into this directory as a qlog file
    /// (`.sqlog`); made if needed.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Each client's figures (RTT, loss, redundancy, rates, streams): on a
    /// terminal a live line per client; otherwise a `stats` log event per
    /// client that moved bytes, every this long; 0 for neither
    /// [default: 60s].
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    stats_interval: Option<Duration>,
    /// How log lines are written: text (default) or json, one object per
    /// line (for journald, Loki, jq).
    #[arg(long, value_name = "FORMAT")]
    log_format: Option<LogFormat>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// For people.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The stats interval when none is given.
const DEFAULT_STATS_INTERVAL: Duration = Duration::from_secs(60);

/// What to observe, the flags over the file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observe {
    metrics: Option<SocketAddr>,
    qlog: Option<PathBuf>,
    /// How often each client's figures are logged (0: never).
    pub(crate) stats_interval: Duration,
    /// How log lines are written.
    pub(crate) log_format: LogFormat,
}

impl Observe {
    /// The flags, or the file's `metrics`, `qlog` (a path relative to the
    /// file, through `here`), `stats_interval` and `log_format`.
    pub(crate) fn new(
        args: &TunnelObserveArgs,
        file: &ObserveFile,
        here: impl Fn(&PathBuf) -> PathBuf,
    ) -> anyhow::Result<Observe> {
        let metrics = file.metrics.as_deref();
        let qlog = file.qlog.as_ref();
        let metrics = match (args.metrics, metrics) {
            (Some(addr), _) => Some(addr),
            (None, Some(text)) => Some(
                text.parse()
                    .map_err(|e| usage(format!("metrics in the file: {text}: {e}")))?,
            ),
            (None, None) => None,
        };
        let qlog = args.qlog.clone().or_else(|| qlog.map(here));
        let stats_interval = match (args.stats_interval, &file.stats_interval) {
            (Some(interval), _) => interval,
            (None, Some(text)) => parse_duration(text)
                .map_err(|e| usage(format!("stats_interval in the file: {e}")))?,
            (None, None) => DEFAULT_STATS_INTERVAL,
        };
        let log_format = args.log_format.or(file.log_format).unwrap_or_default();
        Ok(Observe {
            metrics,
            qlog,
            stats_interval,
            log_format,
        })
    }

    /// Starts logging (every stream with `verbose`) in the chosen format,
    /// and chooses how each client's figures are shown.
    pub(crate) fn start_logging(&self, verbose: bool) -> StatsDisplay {
        let display = StatsDisplay::choose(self.stats_interval);
        super::init_logging(verbose, self.log_format, display.log_writer());
        display
    }

    /// Sets the endpoint's qlog directory, made first if needed.
    pub(crate) fn apply(&self, config: &mut EndpointConfig) -> anyhow::Result<()> {
        config.qlog_dir = self.qlog.as_deref().map(prepare_dir).transpose()?;
        Ok(())
    }

    /// Starts the metrics endpoint, if asked for, and says where it is.
    pub(crate) async fn start_metrics(
        &self,
        endpoint: &Endpoint,
    ) -> anyhow::Result<Option<MetricsServer>> {
        let Some(addr) = self.metrics else {
            return Ok(None);
        };
        let server = MetricsServer::start(addr, endpoint.clone()).await?;
        eprintln!(
            "metrics for Prometheus at http://{}/metrics",
            server.local_addr()
        );
        Ok(Some(server))
    }
}
