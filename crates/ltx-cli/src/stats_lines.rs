//! `--stats-interval`: one JSON line per connection per interval with the
//! connection's statistics, for scripts and for `jq`.

use std::time::{Duration, Instant};

use ltx::{Connection, ConnectionStats};
use serde_json::{json, Value};

use crate::live::round;

/// A connection's statistics as a JSON object: the fields of
/// [`ConnectionStats`], durations in milliseconds (`null` before the first
/// RTT measurement), rates in bytes per second, fractions as fractions.
pub fn stats_json(stats: &ConnectionStats) -> Value {
    json!({
        "rtt_ms": stats.rtt_measured.then(|| round(stats.rtt.as_secs_f64() * 1e3, 3)),
        "min_rtt_ms": stats.rtt_measured.then(|| round(stats.min_rtt.as_secs_f64() * 1e3, 3)),
        "loss_rate": round(stats.loss_rate, 5),
        "loss_burst": round(stats.loss_burst, 3),
        "incoming_loss": round(stats.incoming_loss(), 5),
        "redundancy": round(stats.redundancy, 5),
        "cwnd": stats.cwnd,
        "pacing_rate": stats.pacing_rate,
        "bytes_in_flight": stats.bytes_in_flight,
        "bytes_sent": stats.bytes_sent,
        "bytes_received": stats.bytes_received,
        "packets_sent": stats.packets_sent,
        "packets_received": stats.packets_received,
        "packets_dropped": stats.packets_dropped,
        "packets_unauthentic": stats.packets_unauthentic,
        "packets_replayed": stats.packets_replayed,
        "packets_lost": stats.packets_lost,
        "packets_missing": stats.packets_missing,
        "key_updates": stats.key_updates,
        "source_symbols_sent": stats.source_symbols_sent,
        "repair_symbols_sent": stats.repair_symbols_sent,
        "repair_proactive": stats.repair_proactive,
        "repair_reactive": stats.repair_reactive,
        "repair_tail": stats.repair_tail,
        "repair_probe": stats.repair_probe,
        "symbols_repaired": stats.symbols_repaired,
        "repairs_stale": stats.repairs_stale,
        "repairs_redundant": stats.repairs_redundant,
        "ce_marks": stats.ce_marks,
        "retries": stats.retries,
        "amplification_limited": stats.amplification_limited,
        "stream_bytes_read": stats.stream_bytes_read,
        "streams_open": stats.streams_open,
    })
}

/// One line: `{"event": "stats", "time_s", "peer", …the statistics}`,
/// `time_s` counted from `start`.
pub fn stats_line(start: Instant, now: Instant, connection: &Connection) -> Value {
    let mut line = json!({
        "event": "stats",
        "time_s": round(now.saturating_duration_since(start).as_secs_f64(), 3),
        "peer": connection.remote_address().to_string(),
    });
    if let (Value::Object(line), Value::Object(stats)) =
        (&mut line, stats_json(&connection.stats()))
    {
        line.extend(stats);
    }
    line
}

/// Gives [`stats_line`] of `connection` to `print` every `interval`, from
/// one interval after now, until the returned task is aborted.
pub fn print_every(
    interval: Duration,
    start: Instant,
    connection: Connection,
    print: fn(&Value),
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tick.tick().await;
            print(&stats_line(start, Instant::now(), &connection));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_of_the_stats_is_a_field() {
        let stats = ConnectionStats {
            rtt: Duration::from_millis(600),
            rtt_measured: true,
            packets_lost: 7,
            repair_tail: 3,
            ..ConnectionStats::default()
        };
        let json = stats_json(&stats);
        assert_eq!(json["rtt_ms"], 600.0);
        assert_eq!(json["packets_lost"], 7);
        assert_eq!(json["repair_tail"], 3);
        assert_eq!(json.as_object().map(|o| o.len()), Some(33));
        let unmeasured = ConnectionStats {
            rtt_measured: false,
            ..stats
        };
        assert_eq!(stats_json(&unmeasured)["rtt_ms"], Value::Null);
    }
}
