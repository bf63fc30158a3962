//! One row per transfer: what `runs.csv` holds and what `--json` prints.

use std::fmt::Write as _;

use ltx_cli::live::round;
use serde_json::{json, Value};

use super::cells::Cell;

/// The columns of `runs.csv`, in order.
pub(crate) const COLUMNS: [&str; 22] = [
    "scenario",
    "rate_mbit",
    "rtt_ms",
    "loss",
    "burst",
    "size_bytes",
    "system",
    "rep",
    "ran",
    "completed",
    "verified",
    "completion_s",
    "ideal_s",
    "bound_s",
    "goodput_bps",
    "wire_bytes",
    "reverse_wire_bytes",
    "cpu_s",
    "run_queue_s",
    "queue_delay_p95_ms",
    "sim_s",
    "note",
];

/// What one transfer of one system on one cell came to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    /// The cell.
    pub(crate) cell: Cell,
    /// The system's name.
    pub(crate) system: &'static str,
    /// The repetition, from 1; also the seed of the links and payload.
    pub(crate) rep: u64,
    /// Whether the transfer was run at all (see [`Run::note`] when not).
    pub(crate) ran: bool,
    /// Whether the payload arrived within the bound.
    pub(crate) completed: bool,
    /// Whether what arrived is exactly the payload.
    pub(crate) verified: bool,
    /// From the client's start to the server's last checked byte.
    pub(crate) completion_s: Option<f64>,
    /// The time after which the run was stopped.
    pub(crate) bound_s: f64,
    /// Payload bits per second over the completion time.
    pub(crate) goodput_bps: Option<f64>,
    /// IP bytes the emulated link delivered client to server.
    pub(crate) wire_bytes: Option<u64>,
    /// IP bytes it delivered server to client.
    pub(crate) reverse_wire_bytes: Option<u64>,
    /// Both ends' CPU seconds.
    pub(crate) cpu_s: Option<f64>,
    /// Seconds both ends waited for a CPU, ready to run (the Rust peers
    /// say; NORM's and kcp-go's drivers do not).
    pub(crate) run_queue_s: Option<f64>,
    /// 95th percentile of the time packets waited in the client-to-server
    /// bottleneck queue.
    pub(crate) queue_delay_p95_ms: Option<f64>,
    /// ltx's completion in the simulator on the same cell and seed.
    pub(crate) sim_s: Option<f64>,
    /// Why a run did not complete or was not run; empty otherwise.
    pub(crate) note: String,
}

impl Run {
    /// A run that was not made, and why.
    pub(crate) fn not_run(
        cell: Cell,
        system: &'static str,
        rep: u64,
        bound_s: f64,
        note: String,
    ) -> Run {
        Run {
            cell,
            system,
            rep,
            ran: false,
            completed: false,
            verified: false,
            completion_s: None,
            bound_s,
            goodput_bps: None,
            wire_bytes: None,
            reverse_wire_bytes: None,
            cpu_s: None,
            run_queue_s: None,
            queue_delay_p95_ms: None,
            sim_s: None,
            note,
        }
    }

    /// The completion time if the run completed intact; `None` counts as ∞.
    pub(crate) fn time(&self) -> Option<f64> {
        self.completion_s
            .filter(|_| self.completed && self.verified)
    }

    /// The row as a JSON object with the CSV's columns (null for empty).
    pub(crate) fn to_json(&self) -> Value {
        let cell = &self.cell;
        json!({
            "scenario": cell.table.name(),
            "rate_mbit": number(cell.rate_bps as f64 / 1e6),
            "rtt_ms": number(cell.rtt.as_secs_f64() * 1e3),
            "loss": number(cell.loss),
            "burst": number(cell.burst),
            "size_bytes": cell.size,
            "system": self.system,
            "rep": self.rep,
            "ran": self.ran,
            "completed": self.completed,
            "verified": self.verified,
            "completion_s": self.completion_s.map(|s| round(s, 4)),
            "ideal_s": round(cell.ideal().as_secs_f64(), 4),
            "bound_s": round(self.bound_s, 3),
            "goodput_bps": self.goodput_bps.map(|g| g.round() as u64),
            "wire_bytes": self.wire_bytes,
            "reverse_wire_bytes": self.reverse_wire_bytes,
            "cpu_s": self.cpu_s.map(|s| round(s, 4)),
            "run_queue_s": self.run_queue_s.map(|s| round(s, 4)),
            "queue_delay_p95_ms": self.queue_delay_p95_ms.map(|s| round(s, 3)),
            "sim_s": self.sim_s.map(|s| round(s, 4)),
            "note": self.note,
        })
    }

    /// The row as a CSV line (no newline), in [`COLUMNS`] order.
    pub(crate) fn to_csv(&self) -> String {
        let object = self.to_json();
        let mut line = String::new();
        for (n, column) in COLUMNS.iter().enumerate() {
            if n > 0 {
                line.push(',');
            }
            match &object[column] {
                Value::Null => {}
                Value::String(text) => line.push_str(&quote(text)),
                other => {
                    let _ = write!(line, "{other}");
                }
            }
        }
        line
    }
}

/// A number for JSON and CSV: an integer when it is one (`20`, not
/// `20.0`), else rounded to six decimals.
pub(crate) fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        json!(value as i64)
    } else {
        json!(round(value, 6))
    }
}

/// The CSV header line.
pub(crate) fn csv_header() -> String {
    COLUMNS.join(",")
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
pub(crate) fn quote(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::cells::quick;
    use super::*;

    #[test]
    fn a_row_has_every_column_in_order_and_empty_fields_for_what_was_not_measured() {
        let run = Run::not_run(
            quick()[0],
            "tcp-bbr",
            2,
            10.0,
            "missing: no bbr, sorry".into(),
        );
        let line = run.to_csv();
        let fields: Vec<&str> = line.split(',').collect();
        // The note holds a comma, so it is quoted and splits in two here.
        assert_eq!(fields.len(), COLUMNS.len() + 1);
        assert_eq!(fields[0], "long-delay");
        assert_eq!(fields[1], "20");
        assert_eq!(fields[2], "600");
        assert_eq!(fields[6], "tcp-bbr");
        assert_eq!(fields[7], "2");
        assert_eq!(fields[8], "false");
        assert_eq!(fields[11], "");
        assert!(line.ends_with("\"missing: no bbr, sorry\""), "{line}");
        assert_eq!(csv_header().split(',').count(), COLUMNS.len());
    }

    #[test]
    fn only_a_completed_verified_run_has_a_time() {
        let mut run = Run::not_run(quick()[0], "ltx", 1, 10.0, String::new());
        run.completion_s = Some(1.5);
        assert_eq!(run.time(), None);
        run.completed = true;
        assert_eq!(run.time(), None);
        run.verified = true;
        assert_eq!(run.time(), Some(1.5));
    }
}
