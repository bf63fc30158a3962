//! Each client's figures while a tunnel runs: on a terminal, a live line
//! per client (RTT, loss, redundancy, rates, streams) redrawn every
//! second; otherwise one `stats` log event per client that moved bytes in
//! each interval, with the same figures as fields (JSON with
//! `--log-format json`).

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ltx::Connection;
use ltx_cli::live::round;
use ltx_cli::live::units::bit_rate;
use ltx_tunnel::TunnelClient;

/// How often the live lines are redrawn.
const LIVE_REFRESH: Duration = Duration::from_secs(1);

/// The connections whose figures are shown, as they come and go.
#[derive(Debug)]
pub(crate) enum Registry {
    /// A server's clients, added as they connect.
    Clients(Mutex<Vec<(u64, Connection)>>),
    /// A tunnel client's connection to its server, whichever it is now.
    Server(Arc<TunnelClient>),
}

impl Registry {
    /// A server's registry, empty.
    pub(crate) fn clients() -> Registry {
        Registry::Clients(Mutex::new(Vec::new()))
    }

    /// Adds a server's client; it is dropped from the registry once its
    /// connection closes.
    pub(crate) fn add(&self, connection: Connection) {
        if let Registry::Clients(clients) = self {
            let mut clients = clients.lock().unwrap_or_else(|e| e.into_inner());
            let id = clients.last().map_or(0, |(id, _)| id + 1);
            clients.push((id, connection));
        }
    }

    /// The open connections, each with an id that stays its own; forgets
    /// the closed ones.
    fn open(&self) -> Vec<(u64, Connection)> {
        match self {
            Registry::Clients(clients) => {
                let mut clients = clients.lock().unwrap_or_else(|e| e.into_inner());
                clients.retain(|(_, c)| c.close_reason().is_none());
                clients.clone()
            }
            Registry::Server(client) => {
                let current = client.current();
                match current.1.close_reason() {
                    None => vec![current],
                    Some(_) => Vec::new(),
                }
            }
        }
    }
}

/// How the figures are shown.
#[derive(Debug, Clone)]
pub(crate) enum StatsDisplay {
    /// Live lines on the terminal, drawn by this.
    Live(MultiProgress),
    /// A log event per active client every this long.
    Log(Duration),
    /// Nothing.
    Off,
}

impl StatsDisplay {
    /// Live lines when stderr is a terminal and `interval` is not zero; log
    /// events every `interval` otherwise; nothing for a zero interval.
    pub(crate) fn choose(interval: Duration) -> StatsDisplay {
        if interval.is_zero() {
            StatsDisplay::Off
        } else if io::stderr().is_terminal() {
            StatsDisplay::Live(MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
        } else {
            StatsDisplay::Log(interval)
        }
    }

    /// Where log lines go: through the live lines (so that they are not
    /// drawn over), or straight to stderr.
    pub(crate) fn log_writer(&self) -> LogWriter {
        LogWriter {
            multi: match self {
                StatsDisplay::Live(multi) => Some(multi.clone()),
                _ => None,
            },
        }
    }
}

/// Stderr for log lines, suspending the live lines while one is written.
#[derive(Debug, Clone)]
pub(crate) struct LogWriter {
    multi: Option<MultiProgress>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &self.multi {
            Some(multi) => multi.suspend(|| io::stderr().write(buf)),
            None => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// What a connection had moved at one moment.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    sent: u64,
    received: u64,
}

/// One client's figures over the last interval.
#[derive(Debug, Clone, PartialEq)]
struct Figures {
    peer: SocketAddr,
    rtt_ms: Option<f64>,
    loss: f64,
    redundancy: f64,
    /// Bytes per second this end sent to the client (with the coding's).
    sent_rate: f64,
    /// Bytes per second this end received from it.
    received_rate: f64,
    streams: u64,
}

impl Figures {
    fn of(connection: &Connection, previous: Option<Sample>, now: Instant) -> (Figures, Sample) {
        let stats = connection.stats();
        let sample = Sample {
            at: now,
            sent: stats.bytes_sent,
            received: stats.bytes_received,
        };
        let rate = |count: u64, before: u64, since: Instant| {
            let seconds = now.saturating_duration_since(since).as_secs_f64();
            if seconds > 0.0 {
                count.saturating_sub(before) as f64 / seconds
            } else {
                0.0
            }
        };
        let (sent_rate, received_rate) = match previous {
            Some(p) => (
                rate(sample.sent, p.sent, p.at),
                rate(sample.received, p.received, p.at),
            ),
            None => (0.0, 0.0),
        };
        // The loss the client's packets met on their way here, if any
        // arrived; the loss this end's estimator sees otherwise.
        let loss = if stats.packets_received > 0 {
            stats.incoming_loss()
        } else {
            stats.loss_rate
        };
        let figures = Figures {
            peer: connection.remote_address(),
            rtt_ms: stats
                .rtt_measured
                .then(|| round(stats.rtt.as_secs_f64() * 1e3, 1)),
            loss,
            redundancy: stats.redundancy,
            sent_rate,
            received_rate,
            streams: stats.streams_open,
        };
        (figures, sample)
    }

    /// The live line.
    fn line(&self) -> String {
        let rtt = match self.rtt_ms {
            Some(ms) => format!("{ms:.0} ms"),
            None => "–".to_owned(),
        };
        format!(
            "{}  rtt {rtt}  loss {:.1} %  redundancy {:.1} %  out {}  in {}  {} stream{}",
            self.peer,
            self.loss * 100.0,
            self.redundancy * 100.0,
            bit_rate(self.sent_rate),
            bit_rate(self.received_rate),
            self.streams,
            if self.streams == 1 { "" } else { "s" }
        )
    }

    fn log(&self) {
        tracing::info!(
            target: "stats",
            peer = %self.peer,
            rtt_ms = self.rtt_ms,
            loss = round(self.loss, 5),
            redundancy = round(self.redundancy, 5),
            sent_bit_s = round(self.sent_rate * 8.0, 0),
            received_bit_s = round(self.received_rate * 8.0, 0),
            streams = self.streams,
            "stats"
        );
    }
}

/// Shows the registry's connections as `display` says, until the task is
/// dropped.
pub(crate) async fn report(registry: Arc<Registry>, display: StatsDisplay) {
    let period = match &display {
        StatsDisplay::Off => return,
        StatsDisplay::Live(_) => LIVE_REFRESH,
        StatsDisplay::Log(interval) => *interval,
    };
    let mut samples: HashMap<u64, Sample> = HashMap::new();
    let mut bars: HashMap<u64, ProgressBar> = HashMap::new();
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let now = Instant::now();
        let open = registry.open();
        for (id, connection) in &open {
            let (figures, sample) = Figures::of(connection, samples.get(id).copied(), now);
            let moved = samples
                .get(id)
                .is_some_and(|p| p.sent != sample.sent || p.received != sample.received);
            samples.insert(*id, sample);
            match &display {
                StatsDisplay::Live(multi) => {
                    let bar = bars.entry(*id).or_insert_with(|| {
                        let bar = multi.add(ProgressBar::new_spinner());
                        bar.set_style(
                            ProgressStyle::with_template("{msg}").expect("a valid template"),
                        );
                        bar
                    });
                    bar.set_message(figures.line());
                }
                StatsDisplay::Log(_) if moved => figures.log(),
                _ => {}
            }
        }
        let live: Vec<u64> = open.iter().map(|(id, _)| *id).collect();
        samples.retain(|id, _| live.contains(id));
        bars.retain(|id, bar| {
            let keep = live.contains(id);
            if !keep {
                bar.finish_and_clear();
            }
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_line_says_each_figure_in_its_unit() {
        let figures = Figures {
            peer: "192.0.2.7:4433".parse().unwrap(),
            rtt_ms: Some(612.4),
            loss: 0.048,
            redundancy: 0.061,
            sent_rate: 1_537_500.0,
            received_rate: 10_000.0,
            streams: 3,
        };
        assert_eq!(
            figures.line(),
            "192.0.2.7:4433  rtt 612 ms  loss 4.8 %  redundancy 6.1 %  out 12.3 Mbit/s  \
             in 80 kbit/s  3 streams"
        );
        let quiet = Figures {
            rtt_ms: None,
            streams: 1,
            ..figures
        };
        assert!(quiet.line().contains("rtt –") && quiet.line().ends_with("1 stream"));
    }
}
