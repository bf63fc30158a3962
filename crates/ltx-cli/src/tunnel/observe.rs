//! `--metrics` and `--qlog` of both tunnel commands, as flags or in the
//! configuration file.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use ltx::{Endpoint, EndpointConfig};
use ltx_cli::metrics::MetricsServer;
use ltx_cli::qlog::prepare_dir;

use super::usage;

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
}

/// What to observe, the flags over the file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observe {
    metrics: Option<SocketAddr>,
    qlog: Option<PathBuf>,
}

impl Observe {
    /// The flags, or the file's `metrics` and `qlog` (a path relative to
    /// the file, through `here`).
    pub(crate) fn new(
        args: &TunnelObserveArgs,
        metrics: Option<&str>,
        qlog: Option<&PathBuf>,
        here: impl Fn(&PathBuf) -> PathBuf,
    ) -> anyhow::Result<Observe> {
        let metrics = match (args.metrics, metrics) {
            (Some(addr), _) => Some(addr),
            (None, Some(text)) => Some(
                text.parse()
                    .map_err(|e| usage(format!("metrics in the file: {text}: {e}")))?,
            ),
            (None, None) => None,
        };
        let qlog = args.qlog.clone().or_else(|| qlog.map(here));
        Ok(Observe { metrics, qlog })
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
