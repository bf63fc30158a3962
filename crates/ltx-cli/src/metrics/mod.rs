//! `--metrics ADDR:PORT`: an endpoint's counters in the Prometheus text
//! format at `http://ADDR:PORT/metrics`, for long-running receivers.
//!
//! The counters are read from [`Endpoint::stats`] at each scrape, so they
//! count every connection the endpoint has held and never go back; the RTT
//! and loss histograms sample each open connection once a second. Every
//! metric is listed in `docs/observability.md`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ltx::{Endpoint, EndpointStats};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How often each open connection's RTT and loss estimate are sampled
/// into the histograms.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The longest request head read; anything longer is refused.
const MAX_REQUEST: usize = 8 << 10;

/// A running metrics endpoint; dropping it stops it.
#[derive(Debug)]
pub struct MetricsServer {
    local_addr: SocketAddr,
    tasks: [JoinHandle<()>; 2],
}

impl MetricsServer {
    /// Serves `endpoint`'s metrics on `addr` (TCP) until dropped.
    pub async fn start(addr: SocketAddr, endpoint: Endpoint) -> anyhow::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening for metrics scrapes on TCP {addr}"))?;
        let local_addr = listener.local_addr()?;
        let metrics = Arc::new(Metrics::new(endpoint));
        let sampler = tokio::spawn({
            let metrics = metrics.clone();
            async move {
                let mut tick = tokio::time::interval(SAMPLE_EVERY);
                loop {
                    tick.tick().await;
                    metrics.sample();
                }
            }
        });
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let metrics = metrics.clone();
                tokio::spawn(async move {
                    let _ = answer(stream, &metrics).await;
                });
            }
        });
        Ok(MetricsServer {
            local_addr,
            tasks: [sampler, server],
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}

/// The registry and the histograms the sampler fills.
#[derive(Debug)]
struct Metrics {
    registry: Registry,
    endpoint: Endpoint,
    rtt: Histogram,
    loss: Histogram,
}

impl Metrics {
    fn new(endpoint: Endpoint) -> Metrics {
        let mut registry = Registry::default();
        let rtt = Histogram::new([
            0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0, 5.0,
        ]);
        let loss = Histogram::new([0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5]);
        registry.register_with_unit(
            "ltx_connection_rtt",
            "Smoothed RTT of each open connection, sampled once a second",
            Unit::Seconds,
            rtt.clone(),
        );
        registry.register(
            "ltx_connection_loss_estimate",
            "Loss estimate (fraction of packets) of each open connection, sampled once a second",
            loss.clone(),
        );
        registry.register_collector(Box::new(Totals(endpoint.clone())));
        Metrics {
            registry,
            endpoint,
            rtt,
            loss,
        }
    }

    fn sample(&self) {
        for stats in self.endpoint.stats().open {
            if stats.rtt_measured {
                self.rtt.observe(stats.rtt.as_secs_f64());
                self.loss.observe(stats.loss_rate);
            }
        }
    }

    fn render(&self) -> String {
        let mut text = String::new();
        prometheus_text::encode(&mut text, &self.registry)
            .expect("writing to a String does not fail");
        text
    }
}

/// Reads one request on `stream` and answers it: the metrics for `GET
/// /metrics`, 404 for any other path, 400 for what is not a request.
async fn answer(mut stream: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .map_err(|_| std::io::ErrorKind::TimedOut)??;
        if n == 0 || head.len() + n > MAX_REQUEST {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, path) = (words.next(), words.next());
    let (status, content_type, body) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => {
            ("200 OK", prometheus_text::CONTENT_TYPE, metrics.render())
        }
        (Some(b"GET"), Some(_)) => ("404 Not Found", "text/plain", "see /metrics\n".into()),
        _ => ("400 Bad Request", "text/plain", "a GET request\n".into()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// The endpoint's counters, read at each scrape.
#[derive(Debug)]
struct Totals(Endpoint);

impl Collector for Totals {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.stats();
        for (name, help, value) in counters(&stats) {
            let metric = ConstCounter::new(value);
            let descriptor = encoder.encode_descriptor(name, help, None, metric.metric_type())?;
            metric.encode(descriptor)?;
        }
        let closed = &stats.totals.closed;
        let mut descriptor = encoder.encode_descriptor(
            "ltx_connections_closed",
            "Connections that ended, by how they ended",
            None,
            MetricType::Counter,
        )?;
        for (reason, value) in [
            ("clean", closed.clean),
            ("aborted", closed.aborted),
            ("idle_timeout", closed.idle_timeout),
            ("handshake_timeout", closed.handshake_timeout),
            ("unreachable", closed.unreachable),
            ("protocol_violation", closed.protocol_violation),
            ("handshake_refused", closed.handshake_refused),
        ] {
            let labels = [("reason", reason)];
            let family = descriptor.encode_family(&labels)?;
            ConstCounter::new(value).encode(family)?;
        }
        let mut descriptor = encoder.encode_descriptor(
            "ltx_repair_symbols_sent",
            "Repair symbols sent, by why",
            None,
            MetricType::Counter,
        )?;
        let totals = &stats.totals;
        for (kind, value) in [
            ("proactive", totals.repair_proactive),
            ("reactive", totals.repair_reactive),
            ("tail", totals.repair_tail),
            ("probe", totals.repair_probe),
        ] {
            let labels = [("kind", kind)];
            let family = descriptor.encode_family(&labels)?;
            ConstCounter::new(value).encode(family)?;
        }
        for (name, help, value) in [
            (
                "ltx_connections_open",
                "Connections the endpoint holds, in any state",
                stats.connections as i64,
            ),
            (
                "ltx_streams_open",
                "Streams of the open connections with a half still in use",
                stats.open.iter().map(|c| c.streams_open).sum::<u64>() as i64,
            ),
            (
                "ltx_connections_half_open",
                "Server connections whose handshake or address validation is not complete",
                stats.half_open as i64,
            ),
        ] {
            let metric = ConstGauge::new(value);
            let descriptor = encoder.encode_descriptor(name, help, None, metric.metric_type())?;
            metric.encode(descriptor)?;
        }
        Ok(())
    }
}

/// The plain counters: name, help, value.
fn counters(stats: &EndpointStats) -> [(&'static str, &'static str, u64); 18] {
    let t = &stats.totals;
    [
        (
            "ltx_connections_opened",
            "Connections opened as a client",
            t.connections_opened,
        ),
        (
            "ltx_connections_accepted",
            "Connections accepted as a server",
            t.connections_accepted,
        ),
        (
            "ltx_handshakes_completed",
            "Handshakes that completed",
            t.handshakes_completed,
        ),
        (
            "ltx_handshakes_refused",
            "Client handshakes a server refused (key not allowed, or not authentic)",
            stats.handshakes_refused,
        ),
        ("ltx_retries", "Retries a client followed", t.retries),
        (
            "ltx_retries_sent",
            "Stateless retries a server sent",
            stats.accept.retries_sent,
        ),
        ("ltx_bytes_sent", "UDP payload bytes sent", t.bytes_sent),
        (
            "ltx_bytes_received",
            "UDP payload bytes received",
            t.bytes_received,
        ),
        ("ltx_packets_sent", "Datagrams sent", t.packets_sent),
        (
            "ltx_packets_received",
            "Datagrams received and accepted",
            t.packets_received,
        ),
        (
            "ltx_packets_unauthentic",
            "Datagrams that failed authentication",
            t.packets_unauthentic,
        ),
        (
            "ltx_packets_replayed",
            "Datagrams that authenticated but were replays",
            t.packets_replayed,
        ),
        ("ltx_packets_lost", "Packets declared lost", t.packets_lost),
        (
            "ltx_packets_unroutable",
            "Datagrams that reached the socket but no connection",
            stats.unroutable,
        ),
        (
            "ltx_source_symbols_sent",
            "Source symbols sent",
            t.source_symbols_sent,
        ),
        (
            "ltx_symbols_repaired",
            "The peers' source symbols decoded from repair symbols",
            t.symbols_repaired,
        ),
        (
            "ltx_stream_bytes_read",
            "Stream bytes the application read",
            t.stream_bytes_read,
        ),
        (
            "ltx_key_updates",
            "Key updates of the packet protection",
            t.key_updates,
        ),
    ]
}

#[cfg(test)]
mod tests;
