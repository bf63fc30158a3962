//! ltx's trace events written as qlog, the transport tracing format that
//! qvis and other tools read.
//!
//! A [`QlogWriter`] writes one connection's trace in qlog's JSON-SEQ
//! serialization (version 0.3, file extension `.sqlog`): a header record,
//! then one record per event, each opened by the record separator `0x1E`
//! and closed by a line feed. Times are milliseconds relative to the
//! header's `reference_time`. Events that have a standard qlog equivalent
//! use its name and fields (`transport:packet_sent`,
//! `recovery:metrics_updated`, …); ltx's coding has its own events in the
//! `ltx:` namespace. Every event and field is listed, with its unit, in
//! `docs/observability.md` of the repository, and `schema/qlog.schema.json`
//! beside this crate describes every record it writes.
//!
//! The writer is sans-IO in time: the caller says when each event
//! happened, so a simulated connection's trace is written in virtual time.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use ltx_proto::{event::PacketKind, wire::PacketNumber, TraceEvent};
//! use ltx_qlog::{QlogWriter, Vantage};
//!
//! let mut writer = QlogWriter::new(Vec::new(), "a transfer", Vantage::Client, 1.7e12)?;
//! let sent = TraceEvent::PacketSent { number: PacketNumber(0), bytes: 1200, kind: PacketKind::Handshake };
//! writer.event(Duration::from_millis(3), &sent)?;
//! let file = writer.finish()?;
//! assert_eq!(file.iter().filter(|&&b| b == 0x1E).count(), 2); // header and one event
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

use ltx_proto::event::{Metrics, PacketKind};
use ltx_proto::recovery::RepairReason;
use ltx_proto::{CloseReason, TraceEvent, Unreachable};
use serde_json::{json, Map, Value};

/// The qlog version written, the one qvis reads.
pub const QLOG_VERSION: &str = "0.3";

/// The record separator that opens each JSON-SEQ record (RFC 7464).
pub const RECORD_SEPARATOR: u8 = 0x1E;

/// Which end of the connection the trace was taken at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vantage {
    /// The end that opened the connection.
    Client,
    /// The end that accepted it.
    Server,
}

impl Vantage {
    fn name(self) -> &'static str {
        match self {
            Vantage::Client => "client",
            Vantage::Server => "server",
        }
    }
}

/// Writes one connection's trace as qlog JSON-SEQ to `W`.
#[derive(Debug)]
pub struct QlogWriter<W: Write> {
    out: W,
}

impl<W: Write> QlogWriter<W> {
    /// Starts a trace titled `title`, taken at `vantage`, whose times count
    /// from `reference_unix_ms` (milliseconds since the Unix epoch), and
    /// writes its header.
    pub fn new(out: W, title: &str, vantage: Vantage, reference_unix_ms: f64) -> io::Result<Self> {
        let mut writer = QlogWriter { out };
        writer.record(&header(title, vantage, reference_unix_ms))?;
        Ok(writer)
    }

    /// The connection started at `at`, from `local` (when known) to
    /// `remote`.
    pub fn connection_started(
        &mut self,
        at: Duration,
        local: Option<SocketAddr>,
        remote: SocketAddr,
    ) -> io::Result<()> {
        self.record(&record(
            at,
            "connectivity:connection_started",
            connection_started(local, remote),
        ))
    }

    /// Writes the records of `event`, which happened at `at`.
    pub fn event(&mut self, at: Duration, event: &TraceEvent) -> io::Result<()> {
        for (name, data) in records(event) {
            self.record(&record(at, name, data))?;
        }
        Ok(())
    }

    /// The connection ended at `at` for `reason`.
    pub fn connection_closed(&mut self, at: Duration, reason: &CloseReason) -> io::Result<()> {
        self.record(&record(
            at,
            "connectivity:connection_closed",
            connection_closed(reason),
        ))
    }

    /// The output, e.g. to flush it.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes what was written and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    fn record(&mut self, value: &Value) -> io::Result<()> {
        self.out.write_all(&[RECORD_SEPARATOR])?;
        serde_json::to_writer(&mut self.out, value)?;
        self.out.write_all(b"\n")
    }
}

fn header(title: &str, vantage: Vantage, reference_unix_ms: f64) -> Value {
    json!({
        "qlog_version": QLOG_VERSION,
        "qlog_format": "JSON-SEQ",
        "title": title,
        "trace": {
            "title": title,
            "vantage_point": { "name": "ltx", "type": vantage.name() },
            "common_fields": {
                "protocol_type": ["LTX"],
                "time_format": "relative",
                "reference_time": reference_unix_ms,
            },
        },
    })
}

fn record(at: Duration, name: &str, data: Value) -> Value {
    json!({ "time": millis(at), "name": name, "data": data })
}

/// Milliseconds, to the microsecond.
fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Seconds as milliseconds, to the microsecond.
fn seconds_to_ms(s: f64) -> f64 {
    (s * 1e6).round() / 1e3
}

/// The qlog records (name and data) that stand for `event`.
pub fn records(event: &TraceEvent) -> Vec<(&'static str, Value)> {
    match event {
        TraceEvent::PacketSent {
            number,
            bytes,
            kind,
        } => {
            let mut out = vec![(
                "transport:packet_sent",
                json!({
                    "header": { "packet_type": packet_type(kind), "packet_number": number.0 },
                    "raw": { "length": bytes },
                    "frames": [frame(kind)],
                }),
            )];
            if let PacketKind::Repair { reason, window } = kind {
                out.push((
                    "ltx:repair_sent",
                    json!({
                        "packet_number": number.0,
                        "reason": repair_reason(*reason),
                        "window_first": window.first.0,
                        "window_len": window.len,
                    }),
                ));
            }
            out
        }
        TraceEvent::PacketReceived { number, bytes } => vec![(
            "transport:packet_received",
            json!({
                "header": { "packet_type": "1RTT", "packet_number": number.0 },
                "raw": { "length": bytes },
            }),
        )],
        TraceEvent::PacketLost { number } => vec![(
            "recovery:packet_lost",
            json!({ "header": { "packet_type": "1RTT", "packet_number": number.0 } }),
        )],
        TraceEvent::SymbolRecovered(id) => {
            vec![("ltx:symbol_recovered", json!({ "symbol": id.0 }))]
        }
        TraceEvent::StreamDataSent { id, offset, len } => vec![(
            "transport:data_moved",
            json!({
                "stream_id": id.0,
                "offset": offset,
                "length": len,
                "from": "application",
                "to": "transport",
            }),
        )],
        TraceEvent::Metrics(metrics) => vec![
            ("recovery:metrics_updated", recovery_metrics(metrics)),
            ("ltx:coding_updated", coding_metrics(metrics)),
        ],
    }
}

fn packet_type(kind: &PacketKind) -> &'static str {
    match kind {
        PacketKind::Handshake => "handshake",
        _ => "1RTT",
    }
}

fn frame(kind: &PacketKind) -> Value {
    match kind {
        PacketKind::Handshake => json!({ "frame_type": "crypto" }),
        PacketKind::Source(id) => json!({ "frame_type": "ltx_source", "symbol": id.0 }),
        PacketKind::Repair { reason, window } => json!({
            "frame_type": "ltx_repair",
            "reason": repair_reason(*reason),
            "window_first": window.first.0,
            "window_len": window.len,
        }),
        PacketKind::Ack => json!({ "frame_type": "ack" }),
        PacketKind::Ping => json!({ "frame_type": "ping" }),
        PacketKind::Close => json!({ "frame_type": "connection_close" }),
    }
}

fn repair_reason(reason: RepairReason) -> &'static str {
    match reason {
        RepairReason::Proactive => "proactive",
        RepairReason::Reactive => "reactive",
        RepairReason::Tail => "tail",
        RepairReason::Probe => "probe",
    }
}

fn recovery_metrics(m: &Metrics) -> Value {
    json!({
        "congestion_window": m.cwnd,
        "bytes_in_flight": m.bytes_in_flight,
        "smoothed_rtt": seconds_to_ms(m.srtt),
        "min_rtt": seconds_to_ms(m.min_rtt),
        "latest_rtt": seconds_to_ms(m.latest_rtt),
        "pacing_rate": m.pacing_rate.saturating_mul(8),
    })
}

fn coding_metrics(m: &Metrics) -> Value {
    json!({
        "loss_estimate": round6(m.loss_rate),
        "loss_burst": round6(m.burst),
        "redundancy": round6(m.redundancy),
        "next_symbol": m.next_symbol,
        "peer_decoded_through": m.peer_decoded_through,
        "peer_missing": m.peer_missing,
        "peer_rank": m.peer_rank,
    })
}

fn round6(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1e6).round() / 1e6
    } else {
        0.0
    }
}

fn connection_started(local: Option<SocketAddr>, remote: SocketAddr) -> Value {
    let mut data = Map::new();
    data.insert(
        "ip_version".into(),
        json!(if remote.is_ipv4() { "ipv4" } else { "ipv6" }),
    );
    if let Some(local) = local {
        data.insert("src_ip".into(), json!(local.ip().to_string()));
        data.insert("src_port".into(), json!(local.port()));
    }
    data.insert("dst_ip".into(), json!(remote.ip().to_string()));
    data.insert("dst_port".into(), json!(remote.port()));
    data.insert("protocol".into(), json!("LTX"));
    Value::Object(data)
}

fn connection_closed(reason: &CloseReason) -> Value {
    let (owner, trigger, code, text): (&str, &str, Option<u64>, String) = match reason {
        CloseReason::LocallyClosed => ("local", "clean", Some(0), String::new()),
        CloseReason::LocallyAborted { code, reason } => {
            ("local", "application", Some(*code), reason.clone())
        }
        CloseReason::ByPeer { code, reason } => (
            "remote",
            if *code == 0 { "clean" } else { "application" },
            Some(*code),
            reason.clone(),
        ),
        CloseReason::IdleTimeout => ("local", "idle_timeout", None, String::new()),
        CloseReason::HandshakeTimeout => ("local", "handshake_timeout", None, String::new()),
        CloseReason::Unreachable(why) => ("local", "unreachable", None, unreachable(*why).into()),
        CloseReason::ProtocolViolation(text) => ("local", "error", None, text.clone()),
        CloseReason::HandshakeRefused(why) => ("local", "handshake_refused", None, why.to_string()),
    };
    let mut data = Map::new();
    data.insert("owner".into(), json!(owner));
    data.insert("trigger".into(), json!(trigger));
    if let Some(code) = code {
        data.insert("connection_code".into(), json!(code));
    }
    if !text.is_empty() {
        data.insert("reason".into(), json!(text));
    }
    Value::Object(data)
}

fn unreachable(why: Unreachable) -> &'static str {
    match why {
        Unreachable::PortClosed => "nothing listens on the port",
        Unreachable::HostUnreachable => "the host cannot be reached",
    }
}

#[cfg(test)]
mod tests;
