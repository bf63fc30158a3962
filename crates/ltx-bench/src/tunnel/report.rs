//! The rows of `runs.csv`, the medians, the tables and the summary lines
//! of `ltx-bench tunnel`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ltx_cli::live::round;
use serde_json::{json, Value};

use super::super::emu::cells::{pattern_name, percent, Cell};
use super::super::emu::record::{number, quote};
use super::run::Measured;
use super::systems::TunnelSystem;
use super::workload::WorkloadKind;

/// The columns of `runs.csv`, in order.
pub(crate) const COLUMNS: [&str; 21] = [
    "scenario",
    "rate_mbit",
    "rtt_ms",
    "loss",
    "burst",
    "workload",
    "bulk_bytes",
    "system",
    "rep",
    "ran",
    "completed",
    "verified",
    "time_s",
    "delay_p50_ms",
    "delay_p95_ms",
    "answered",
    "sent",
    "wire_bytes",
    "reverse_wire_bytes",
    "bound_s",
    "note",
];

/// One run of one workload through one system.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The path.
    pub(crate) cell: Cell,
    /// The workload.
    pub(crate) workload: WorkloadKind,
    /// The system.
    pub(crate) system: TunnelSystem,
    /// The repetition, from 1: the links' seed.
    pub(crate) rep: u64,
    /// Whether it was run (see the note when not).
    pub(crate) ran: bool,
    /// What it came to.
    pub(crate) measured: Measured,
    /// Its bound, seconds.
    pub(crate) bound_s: f64,
}

impl Row {
    /// The figure medians are taken of: seconds to the last byte (bulk,
    /// web) or the 95th percentile of the added delay in ms
    /// (interactive); `None` (∞) unless the run completed intact.
    pub(crate) fn value(&self) -> Option<f64> {
        let m = &self.measured;
        if !(m.completed && m.verified) {
            return None;
        }
        match self.workload {
            WorkloadKind::Interactive => m.delay_ms.map(|d| d.1),
            _ => m.time_s,
        }
    }

    /// The row as JSON, with the CSV's columns.
    pub(crate) fn to_json(&self) -> Value {
        let (c, m) = (&self.cell, &self.measured);
        json!({
            "scenario": c.table.name(),
            "rate_mbit": number(c.rate_bps as f64 / 1e6),
            "rtt_ms": number(c.rtt.as_secs_f64() * 1e3),
            "loss": number(c.loss),
            "burst": number(c.burst),
            "workload": self.workload.name(),
            "bulk_bytes": c.size,
            "system": self.system.name(),
            "rep": self.rep,
            "ran": self.ran,
            "completed": m.completed,
            "verified": m.verified,
            "time_s": m.time_s.map(|s| round(s, 4)),
            "delay_p50_ms": m.delay_ms.map(|d| round(d.0, 2)),
            "delay_p95_ms": m.delay_ms.map(|d| round(d.1, 2)),
            "answered": m.answered.map(|a| a.0),
            "sent": m.answered.map(|a| a.1),
            "wire_bytes": self.ran.then_some(m.wire_bytes.0),
            "reverse_wire_bytes": self.ran.then_some(m.wire_bytes.1),
            "bound_s": round(self.bound_s, 2),
            "note": m.note,
        })
    }

    /// The row as a CSV line, in [`COLUMNS`] order.
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

/// A cell and workload: where medians are compared.
pub(crate) type Key = (String, u64, u64, WorkloadKind);

/// The key of a cell and workload (table, loss ‰, burst × 10).
pub(crate) fn key(cell: &Cell, workload: WorkloadKind) -> Key {
    (
        cell.table.name().to_owned(),
        (cell.loss * 1000.0).round() as u64,
        (cell.burst * 10.0).round() as u64,
        workload,
    )
}

/// The median of runs that were run, ∞ (`None`) counted as larger than
/// any time; `Some(None)` when it is ∞, `None` when nothing ran.
pub(crate) fn median(rows: &[&Row]) -> Option<Option<f64>> {
    let mut values: Vec<f64> = rows
        .iter()
        .filter(|r| r.ran)
        .map(|r| r.value().unwrap_or(f64::INFINITY))
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let m = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    Some(m.is_finite().then_some(m))
}

/// The rows of each cell and workload, by system.
pub(crate) fn group(rows: &[Row]) -> BTreeMap<Key, BTreeMap<TunnelSystem, Vec<&Row>>> {
    let mut groups: BTreeMap<Key, BTreeMap<TunnelSystem, Vec<&Row>>> = BTreeMap::new();
    for row in rows {
        groups
            .entry(key(&row.cell, row.workload))
            .or_default()
            .entry(row.system)
            .or_default()
            .push(row);
    }
    groups
}

/// The peers ltx out of the box is compared with (the best of them).
const PEERS: [TunnelSystem; 4] = [
    TunnelSystem::DirectCubic,
    TunnelSystem::DirectBbr,
    TunnelSystem::Kcptun,
    TunnelSystem::QuicBbr,
];

/// Within 2 % is a tie.
pub(crate) const TIE: f64 = 1.02;

/// The summary line of a cell and workload: ltx's median, the best peer's,
/// their ratio, and each of the targets met or not (null when a
/// figure it needs is missing).
pub(crate) fn summary(
    cell: &Cell,
    workload: WorkloadKind,
    systems: &BTreeMap<TunnelSystem, Vec<&Row>>,
) -> Value {
    // A system whose runs were all skipped (it completed nothing at a
    // lower loss with the same pattern) counts as not completing: ∞.
    let med = |s: TunnelSystem| systems.get(&s).map(|rows| median(rows).flatten());
    let show = |m: Option<Option<f64>>| match m {
        None => Value::Null,
        Some(None) => json!("inf"),
        Some(Some(v)) => json!(round(v, 4)),
    };
    // A ratio a / b with ∞ handled: ∞ / finite = ∞ (fails), finite / ∞ = 0.
    let ratio = |a: Option<Option<f64>>, b: Option<Option<f64>>| -> Option<f64> {
        match (a?, b?) {
            (Some(a), Some(b)) => Some(a / b),
            (None, Some(_)) => Some(f64::INFINITY),
            (Some(_), None) => Some(0.0),
            (None, None) => None,
        }
    };
    let best = PEERS
        .iter()
        .filter_map(|&s| med(s).map(|m| (s, m)))
        .min_by(|a, b| {
            a.1.unwrap_or(f64::INFINITY)
                .total_cmp(&b.1.unwrap_or(f64::INFINITY))
        });
    let ltx = med(TunnelSystem::Ltx);
    let over_best = ratio(ltx, best.map(|b| b.1));
    let within = |r: Option<f64>, limit: f64| r.map(|r| r <= limit);
    let long_lossy = cell.rtt.as_millis() >= 600 && cell.loss >= 0.05;
    let mut targets = serde_json::Map::new();
    targets.insert("vs_best_peer".into(), json!(within(over_best, TIE)));
    let brutal = ratio(med(TunnelSystem::LtxHint), med(TunnelSystem::QuicBrutal));
    match workload {
        WorkloadKind::Bulk => {
            let send = ratio(ltx, med(TunnelSystem::LtxSend));
            targets.insert("vs_ltx_send_1.10".into(), json!(within(send, 1.10)));
            targets.insert("hint_vs_brutal".into(), json!(within(brutal, TIE)));
            if long_lossy {
                let bbr = ratio(ltx, med(TunnelSystem::DirectBbr));
                targets.insert("vs_direct_bbr_0.5".into(), json!(within(bbr, 0.5)));
            }
        }
        WorkloadKind::Web => {
            targets.insert("hint_vs_brutal".into(), json!(within(brutal, TIE)));
            if long_lossy {
                let direct = [TunnelSystem::DirectCubic, TunnelSystem::DirectBbr]
                    .into_iter()
                    .filter_map(med)
                    .min_by(|a, b| {
                        a.unwrap_or(f64::INFINITY)
                            .total_cmp(&b.unwrap_or(f64::INFINITY))
                    });
                let r = ratio(ltx, direct);
                targets.insert("vs_direct_tcp_0.5".into(), json!(within(r, 0.5)));
            }
        }
        WorkloadKind::Interactive => {
            if cell.loss <= 0.10 {
                let rtt_ms = cell.rtt.as_secs_f64() * 1e3;
                let r = ltx.map(|m| m.map_or(f64::INFINITY, |v| v / rtt_ms));
                targets.insert("p95_within_1_rtt".into(), json!(within(r, 1.0)));
            }
            let kcp = ratio(ltx, med(TunnelSystem::Kcptun));
            targets.insert("vs_kcptun_0.5".into(), json!(within(kcp, 0.5)));
        }
    }
    json!({
        "summary": true,
        "scenario": cell.table.name(),
        "rate_mbit": number(cell.rate_bps as f64 / 1e6),
        "rtt_ms": number(cell.rtt.as_secs_f64() * 1e3),
        "loss": number(cell.loss),
        "burst": number(cell.burst),
        "workload": workload.name(),
        "unit": if workload == WorkloadKind::Interactive { "p95 added ms" } else { "s" },
        "ltx_median": show(ltx),
        "best_peer": best.map(|b| b.0.name()),
        "best_peer_median": show(best.map(|b| b.1)),
        "ltx_over_best_peer": over_best.map(ratio_json),
        "ltx_hint_over_quic_brutal": brutal.map(ratio_json),
        "targets": targets,
    })
}

fn ratio_json(r: f64) -> Value {
    if r.is_finite() {
        json!(round(r, 3))
    } else {
        json!("inf")
    }
}

/// The markdown tables: one per workload, a row per cell, a column per
/// system, medians (∞: no run completed; ∞†: not run after completing
/// nothing at a lower loss), and the missing systems.
pub(crate) fn markdown(
    cells: &[Cell],
    workloads: &[WorkloadKind],
    rows: &[Row],
    systems: &[TunnelSystem],
    missing: &[(TunnelSystem, String)],
) -> String {
    let groups = group(rows);
    let mut out = String::new();
    for &workload in workloads {
        let unit = match workload {
            WorkloadKind::Bulk => "seconds to the last byte of the bulk download, median",
            WorkloadKind::Web => "seconds to the last byte of the page, median",
            WorkloadKind::Interactive => {
                "added delay per message over the path's RTT, ms: median of the runs' p50 / p95"
            }
        };
        let _ = writeln!(out, "### {workload} ({unit})\n");
        let shown: Vec<TunnelSystem> = systems
            .iter()
            .copied()
            .filter(|s| workload == WorkloadKind::Bulk || *s != TunnelSystem::LtxSend)
            .collect();
        out.push_str("| path | loss | pattern |");
        for s in &shown {
            let _ = write!(out, " {} |", s.name());
        }
        out.push_str("\n| --- | --- | --- |");
        out.push_str(&" ---: |".repeat(shown.len()));
        out.push('\n');
        for cell in cells {
            let Some(by_system) = groups.get(&key(cell, workload)) else {
                continue;
            };
            let _ = write!(
                out,
                "| {} {} Mbit/s {} ms | {}% | {} |",
                cell.table,
                cell.rate_bps / 1_000_000,
                cell.rtt.as_millis(),
                percent(cell.loss),
                pattern_name(cell.burst)
            );
            for s in &shown {
                let text = match by_system.get(s) {
                    None => "–".to_owned(),
                    Some(rows) => entry(workload, rows),
                };
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
        }
        out.push('\n');
    }
    for (system, why) in missing {
        let _ = writeln!(out, "- `{}` missing: {why}", system.name());
    }
    out
}

/// One table entry.
fn entry(workload: WorkloadKind, rows: &[&Row]) -> String {
    if rows.iter().all(|r| !r.ran) {
        return "∞†".to_owned();
    }
    match workload {
        WorkloadKind::Interactive => {
            let p50: Vec<Row> = rows
                .iter()
                .map(|r| {
                    let mut r = (*r).clone();
                    r.measured.delay_ms = r.measured.delay_ms.map(|d| (d.0, d.0));
                    r
                })
                .collect();
            let p50 = median(&p50.iter().collect::<Vec<_>>());
            match (p50, median(rows)) {
                (Some(Some(a)), Some(Some(b))) => format!("{a:.0} / {b:.0}"),
                _ => "∞".to_owned(),
            }
        }
        _ => match median(rows) {
            Some(Some(v)) => format!("{v:.2}"),
            _ => "∞".to_owned(),
        },
    }
}
