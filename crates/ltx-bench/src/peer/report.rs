//! The JSON line each peer prints when it ends, in every language, and
//! what one transfer's two lines add up to.
//!
//! Server (receiver): `{"system", "role": "recv", "bytes", "verified",
//! "first_mismatch", "first_ns", "end_ns", "cpu_s"}`. Client (sender):
//! `{"system", "role": "send", "bytes", "start_ns", "cpu_s"}`, with
//! `"wire_bytes"` when the system counts what it sent. Times are
//! `CLOCK_MONOTONIC` in nanoseconds; `cpu_s` is the process's user plus
//! system time when it printed the line. The Rust peers add `run_queue_s`
//! to both lines: the seconds their thread was ready to run but waited for
//! a CPU, which a loaded machine adds to every round trip they measure.

use std::mem::MaybeUninit;

use serde_json::{json, Value};

use super::super::measure::process_cpu_time;
use super::super::payload::Delivery;

/// `CLOCK_MONOTONIC` now, in nanoseconds: a clock that the processes of
/// both ends share, whatever network namespace each runs in.
pub(crate) fn monotonic_ns() -> anyhow::Result<u64> {
    let mut now = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: clock_gettime writes a whole timespec through the pointer,
    // which is valid for writes of that size and not aliased.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, now.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: clock_gettime returned 0, so it has filled the struct.
    let now = unsafe { now.assume_init() };
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
    Ok(secs * 1_000_000_000 + nanos)
}

/// Seconds the process's main thread (the one a current-thread runtime
/// runs on) has waited on a run queue, ready to run, from the kernel's
/// scheduler statistics; `None` where they cannot be read.
pub(crate) fn run_queue_seconds() -> Option<f64> {
    let stats = std::fs::read_to_string("/proc/self/schedstat").ok()?;
    let waited_ns: u64 = stats.split_whitespace().nth(1)?.parse().ok()?;
    Some(waited_ns as f64 / 1e9)
}

/// The process's CPU seconds so far.
pub(crate) fn cpu_seconds() -> anyhow::Result<f64> {
    Ok(process_cpu_time()?.as_secs_f64())
}

/// What a server prints: what it received and when.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerReport {
    /// The system's name.
    pub(crate) system: String,
    /// What arrived and whether it is the payload.
    pub(crate) delivery: Delivery,
    /// Whether exactly the payload arrived.
    pub(crate) verified: bool,
    /// When the first byte was read (for NORM, when NORM told of the new
    /// sender, which can be later): for information, as completion times
    /// run from the client's start.
    pub(crate) first_ns: u64,
    /// When the last byte had arrived and been checked.
    pub(crate) end_ns: u64,
    /// The server's CPU seconds.
    pub(crate) cpu_s: f64,
    /// Seconds the server waited for a CPU, where it says.
    pub(crate) run_queue_s: Option<f64>,
}

impl ServerReport {
    /// The report of a receiver that got `delivery` of a `size`-byte payload.
    pub(crate) fn new(
        system: &str,
        size: u64,
        delivery: Delivery,
        first_ns: u64,
        end_ns: u64,
    ) -> anyhow::Result<ServerReport> {
        Ok(ServerReport {
            system: system.to_owned(),
            delivery,
            verified: delivery.check(size).is_ok(),
            first_ns,
            end_ns,
            cpu_s: cpu_seconds()?,
            run_queue_s: run_queue_seconds(),
        })
    }

    /// The line the server prints.
    pub(crate) fn to_json(&self) -> Value {
        let mut line = json!({
            "system": self.system,
            "role": "recv",
            "bytes": self.delivery.bytes,
            "verified": self.verified,
            "first_mismatch": self.delivery.first_mismatch,
            "first_ns": self.first_ns,
            "end_ns": self.end_ns,
            "cpu_s": self.cpu_s,
        });
        if let Some(waited) = self.run_queue_s {
            line["run_queue_s"] = json!(waited);
        }
        line
    }

    /// Reads a server's line.
    pub(crate) fn parse(line: &str) -> Result<ServerReport, ReportError> {
        let value = parse_line(line, "recv")?;
        Ok(ServerReport {
            system: string(&value, "system")?,
            delivery: Delivery {
                bytes: integer(&value, "bytes")?,
                first_mismatch: value.get("first_mismatch").and_then(Value::as_u64),
            },
            verified: value
                .get("verified")
                .and_then(Value::as_bool)
                .ok_or(ReportError::Field("verified"))?,
            first_ns: integer(&value, "first_ns")?,
            end_ns: integer(&value, "end_ns")?,
            cpu_s: number(&value, "cpu_s")?,
            run_queue_s: value.get("run_queue_s").and_then(Value::as_f64),
        })
    }
}

/// What a client prints: when it started.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClientReport {
    /// The system's name.
    pub(crate) system: String,
    /// Payload bytes sent.
    pub(crate) bytes: u64,
    /// When the client began to connect.
    pub(crate) start_ns: u64,
    /// The client's CPU seconds.
    pub(crate) cpu_s: f64,
    /// UDP payload bytes the transport sent, as it counts them, where it
    /// does (ltx, QUIC, kcp-go); the emulator's count of IP bytes is the
    /// figure that compares across systems.
    pub(crate) wire_bytes: Option<u64>,
    /// Seconds the client waited for a CPU, where it says.
    pub(crate) run_queue_s: Option<f64>,
}

impl ClientReport {
    /// The line the client prints.
    pub(crate) fn to_json(&self) -> Value {
        let mut line = json!({
            "system": self.system,
            "role": "send",
            "bytes": self.bytes,
            "start_ns": self.start_ns,
            "cpu_s": self.cpu_s,
        });
        if let Some(wire) = self.wire_bytes {
            line["wire_bytes"] = json!(wire);
        }
        if let Some(waited) = self.run_queue_s {
            line["run_queue_s"] = json!(waited);
        }
        line
    }

    /// Reads a client's line.
    pub(crate) fn parse(line: &str) -> Result<ClientReport, ReportError> {
        let value = parse_line(line, "send")?;
        Ok(ClientReport {
            system: string(&value, "system")?,
            bytes: integer(&value, "bytes")?,
            start_ns: integer(&value, "start_ns")?,
            cpu_s: number(&value, "cpu_s")?,
            wire_bytes: value.get("wire_bytes").and_then(Value::as_u64),
            run_queue_s: value.get("run_queue_s").and_then(Value::as_f64),
        })
    }
}

/// Why a peer's line could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ReportError {
    /// The output has no line that is a JSON object.
    #[error("no JSON report in the output")]
    Missing,
    /// The line is a report of the other end.
    #[error("the report is not a {0} report")]
    Role(&'static str),
    /// A field is absent or of the wrong type.
    #[error("the report's field {0:?} is missing or malformed")]
    Field(&'static str),
}

/// The last line of `output` that is a JSON object, checked to be of `role`.
fn parse_line(output: &str, role: &'static str) -> Result<Value, ReportError> {
    let value = output
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(Value::is_object)
        .ok_or(ReportError::Missing)?;
    if value.get("role").and_then(Value::as_str) != Some(role) {
        return Err(ReportError::Role(role));
    }
    Ok(value)
}

fn string(value: &Value, field: &'static str) -> Result<String, ReportError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(ReportError::Field(field))
}

fn integer(value: &Value, field: &'static str) -> Result<u64, ReportError> {
    value
        .get(field)
        .and_then(Value::as_u64)
        .ok_or(ReportError::Field(field))
}

fn number(value: &Value, field: &'static str) -> Result<f64, ReportError> {
    value
        .get(field)
        .and_then(Value::as_f64)
        .ok_or(ReportError::Field(field))
}

/// One transfer's figures, from both ends' reports.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// Whether exactly the payload arrived.
    pub(crate) verified: bool,
    /// From the client's start to the server's last checked byte.
    pub(crate) completion_s: f64,
    /// Payload bits per second over that time.
    pub(crate) goodput_bps: f64,
    /// Both ends' CPU seconds.
    pub(crate) cpu_s: f64,
    /// What the sending transport counted, where it does.
    pub(crate) wire_bytes: Option<u64>,
    /// Seconds both ends waited for a CPU, where both say.
    pub(crate) run_queue_s: Option<f64>,
}

impl Outcome {
    /// Puts a transfer's two reports together. A server that ended before
    /// the client started is a report of some other transfer: an error.
    pub(crate) fn of(
        server: &ServerReport,
        client: &ClientReport,
    ) -> Result<Outcome, OutcomeError> {
        if server.system != client.system {
            return Err(OutcomeError::Systems);
        }
        let nanos = server
            .end_ns
            .checked_sub(client.start_ns)
            .filter(|&n| n > 0)
            .ok_or(OutcomeError::Order)?;
        let completion_s = nanos as f64 / 1e9;
        Ok(Outcome {
            verified: server.verified,
            completion_s,
            goodput_bps: server.delivery.bytes as f64 * 8.0 / completion_s,
            cpu_s: server.cpu_s + client.cpu_s,
            wire_bytes: client.wire_bytes,
            run_queue_s: server
                .run_queue_s
                .zip(client.run_queue_s)
                .map(|(s, c)| s + c),
        })
    }
}

/// Why two reports do not make one transfer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum OutcomeError {
    /// The reports name different systems.
    #[error("the server's and the client's reports name different systems")]
    Systems,
    /// The server finished before the client started.
    #[error("the server's end is not after the client's start")]
    Order,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(end_ns: u64, verified: bool) -> ServerReport {
        ServerReport {
            system: "tcp-cubic".to_owned(),
            delivery: Delivery {
                bytes: 1_000_000,
                first_mismatch: None,
            },
            verified,
            first_ns: 1_100_000_000,
            end_ns,
            cpu_s: 0.25,
            run_queue_s: Some(0.125),
        }
    }

    fn client() -> ClientReport {
        ClientReport {
            system: "tcp-cubic".to_owned(),
            bytes: 1_000_000,
            start_ns: 1_000_000_000,
            cpu_s: 0.5,
            wire_bytes: None,
            run_queue_s: Some(0.25),
        }
    }

    #[test]
    fn reports_read_back_what_they_print_with_noise_around() {
        let s = server(3_000_000_000, true);
        let printed = format!("starting\n{}\n", s.to_json());
        assert_eq!(ServerReport::parse(&printed), Ok(s));
        let c = ClientReport {
            wire_bytes: Some(1_100_000),
            ..client()
        };
        assert_eq!(ClientReport::parse(&c.to_json().to_string()), Ok(c));
    }

    #[test]
    fn a_report_of_the_other_end_or_none_is_refused() {
        let c = client().to_json().to_string();
        assert_eq!(ServerReport::parse(&c), Err(ReportError::Role("recv")));
        assert_eq!(
            ServerReport::parse("error: refused\n"),
            Err(ReportError::Missing)
        );
        assert_eq!(
            ClientReport::parse(r#"{"role":"send","system":"x","bytes":1,"cpu_s":0}"#),
            Err(ReportError::Field("start_ns"))
        );
    }

    /// A megabyte delivered two seconds after the client began: 4 Mbit/s,
    /// and both ends' CPU added up.
    #[test]
    fn an_outcome_runs_from_the_clients_start_to_the_servers_end() {
        let outcome = Outcome::of(&server(3_000_000_000, true), &client()).unwrap();
        assert_eq!(outcome.completion_s, 2.0);
        assert_eq!(outcome.goodput_bps, 4e6);
        assert_eq!(outcome.cpu_s, 0.75);
        assert_eq!(outcome.run_queue_s, Some(0.375));
        assert!(outcome.verified);
    }

    /// NORM's and kcp-go's drivers do not say how long they waited: the
    /// outcome has no figure rather than one end's.
    #[test]
    fn the_wait_for_a_cpu_adds_up_only_when_both_ends_say() {
        let silent = ClientReport {
            run_queue_s: None,
            ..client()
        };
        let printed = silent.to_json().to_string();
        assert!(!printed.contains("run_queue_s"), "{printed}");
        assert_eq!(ClientReport::parse(&printed), Ok(silent.clone()));
        let outcome = Outcome::of(&server(3_000_000_000, true), &silent).unwrap();
        assert_eq!(outcome.run_queue_s, None);
    }

    #[test]
    fn this_process_has_waited_for_a_cpu_for_a_finite_time() {
        let waited = run_queue_seconds().expect("Linux keeps scheduler statistics");
        assert!(waited.is_finite() && waited >= 0.0, "{waited}");
    }

    #[test]
    fn an_end_before_the_start_is_not_a_transfer() {
        assert_eq!(
            Outcome::of(&server(1_000_000_000, true), &client()),
            Err(OutcomeError::Order)
        );
        assert_eq!(
            Outcome::of(&server(1_000_000_001, true), &client()).map(|o| o.completion_s),
            Ok(1e-9)
        );
        let other = ClientReport {
            system: "norm".to_owned(),
            ..client()
        };
        assert_eq!(
            Outcome::of(&server(3_000_000_000, true), &other),
            Err(OutcomeError::Systems)
        );
    }
}
