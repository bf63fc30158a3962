//! A qlog trace read back into the time series a person looks at after a
//! bad transfer. Only what the plots need is kept; records it does not
//! know are skipped, so traces of other qlog writers read too.

use serde_json::Value;

/// A time series: (seconds, value) points in time order.
pub type Points = Vec<(f64, f64)>;

/// A trace that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The bytes do not start with a JSON-SEQ record separator.
    #[error("not a qlog JSON-SEQ file (.sqlog): it does not start with the record separator 0x1E")]
    NotJsonSeq,
    /// A record is not JSON.
    #[error("record {index} is not JSON: {source}")]
    BadRecord {
        /// Its position, from 0 (the header).
        index: usize,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The first record is not a qlog header.
    #[error("the first record is not a qlog header (no qlog_version)")]
    NoHeader,
}

/// The series of one trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The header's title.
    pub title: String,
    /// `client` or `server`.
    pub vantage: String,
    /// Seconds from the first event to the last.
    pub duration_s: f64,
    /// Bytes of each packet sent, at its time.
    pub sent: Points,
    /// Bytes of each packet received.
    pub received: Points,
    /// Congestion window, bytes.
    pub cwnd: Points,
    /// Bytes in flight.
    pub in_flight: Points,
    /// Smoothed RTT, ms.
    pub smoothed_rtt: Points,
    /// Minimum RTT, ms.
    pub min_rtt: Points,
    /// Latest RTT sample, ms.
    pub latest_rtt: Points,
    /// The loss estimate, a fraction.
    pub loss_estimate: Points,
    /// Proactive repair per source symbol.
    pub redundancy: Points,
    /// Source symbols sent so far.
    pub next_symbol: Points,
    /// The peer's first undecoded symbol, as reported.
    pub peer_decoded_through: Points,
    /// Times of repair symbols sent, by reason: proactive, reactive,
    /// tail, probe.
    pub repairs: [Vec<f64>; 4],
    /// Times of symbols recovered (at a receiver).
    pub recovered: Vec<f64>,
    /// Times of packets declared lost.
    pub lost: Vec<f64>,
    /// Mean stream bytes per source symbol, from `transport:data_moved`.
    pub symbol_payload: Option<f64>,
}

/// The names of the repair reasons, in the order of [`Trace::repairs`].
pub const REPAIR_REASONS: [&str; 4] = ["proactive", "reactive", "tail", "probe"];

impl Trace {
    /// Reads a qlog JSON-SEQ file.
    pub fn parse(bytes: &[u8]) -> Result<Trace, TraceError> {
        if bytes.first() != Some(&0x1E) {
            return Err(TraceError::NotJsonSeq);
        }
        let mut records = bytes.split(|&b| b == 0x1E).skip(1).enumerate();
        let header: Value = match records.next() {
            Some((index, record)) => serde_json::from_slice(record)
                .map_err(|source| TraceError::BadRecord { index, source })?,
            None => return Err(TraceError::NoHeader),
        };
        if header.get("qlog_version").is_none() {
            return Err(TraceError::NoHeader);
        }
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let mut trace = Trace {
            title: text(&header["title"]),
            vantage: text(&header["trace"]["vantage_point"]["type"]),
            ..Trace::default()
        };
        let (mut moved_bytes, mut moved_count) = (0.0, 0u64);
        for (index, record) in records {
            let record: Value = serde_json::from_slice(record)
                .map_err(|source| TraceError::BadRecord { index, source })?;
            let Some(t) = record["time"].as_f64().map(|ms| ms / 1e3) else {
                continue;
            };
            trace.duration_s = trace.duration_s.max(t);
            let data = &record["data"];
            let num = |v: &Value| v.as_f64();
            let push = |points: &mut Points, v: &Value| {
                if let Some(v) = num(v) {
                    points.push((t, v));
                }
            };
            match record["name"].as_str().unwrap_or_default() {
                "transport:packet_sent" => push(&mut trace.sent, &data["raw"]["length"]),
                "transport:packet_received" => push(&mut trace.received, &data["raw"]["length"]),
                "recovery:packet_lost" => trace.lost.push(t),
                "recovery:metrics_updated" => {
                    push(&mut trace.cwnd, &data["congestion_window"]);
                    push(&mut trace.in_flight, &data["bytes_in_flight"]);
                    push(&mut trace.smoothed_rtt, &data["smoothed_rtt"]);
                    push(&mut trace.min_rtt, &data["min_rtt"]);
                    push(&mut trace.latest_rtt, &data["latest_rtt"]);
                }
                "ltx:coding_updated" => {
                    push(&mut trace.loss_estimate, &data["loss_estimate"]);
                    push(&mut trace.redundancy, &data["redundancy"]);
                    push(&mut trace.next_symbol, &data["next_symbol"]);
                    push(
                        &mut trace.peer_decoded_through,
                        &data["peer_decoded_through"],
                    );
                }
                "ltx:repair_sent" => {
                    let reason = data["reason"].as_str().unwrap_or_default();
                    if let Some(i) = REPAIR_REASONS.iter().position(|&r| r == reason) {
                        trace.repairs[i].push(t);
                    }
                }
                "ltx:symbol_recovered" => trace.recovered.push(t),
                "transport:data_moved" => {
                    if let Some(len) = num(&data["length"]) {
                        moved_bytes += len;
                        moved_count += 1;
                    }
                }
                _ => {}
            }
        }
        trace.symbol_payload = (moved_count > 0).then(|| moved_bytes / moved_count as f64);
        Ok(trace)
    }

    /// The width of the bins rates are counted in: about 200 bins over
    /// the trace, at least 10 ms.
    pub fn bin_s(&self) -> f64 {
        (self.duration_s / 200.0).max(0.01)
    }
}

/// The rate of `points` (bytes at times) per bin of `bin_s` seconds, in
/// Mbit/s, one point at the middle of each bin.
pub fn bit_rate(points: &[(f64, f64)], bin_s: f64, duration_s: f64) -> Points {
    binned(points.iter().copied(), bin_s, duration_s)
        .into_iter()
        .map(|(t, bytes)| (t, bytes * 8.0 / bin_s / 1e6))
        .collect()
}

/// How many of `times` fall in each bin of `bin_s` seconds.
pub fn counts(times: &[f64], bin_s: f64, duration_s: f64) -> Points {
    binned(times.iter().map(|&t| (t, 1.0)), bin_s, duration_s)
}

/// The rate at which a growing count (`points`) grows, per second,
/// between successive bins, times `scale`.
pub fn growth_rate(points: &[(f64, f64)], bin_s: f64, duration_s: f64, scale: f64) -> Points {
    let bins = (duration_s / bin_s).ceil().max(1.0) as usize;
    let mut last_in_bin = vec![None; bins];
    for &(t, v) in points {
        let i = ((t / bin_s) as usize).min(bins - 1);
        last_in_bin[i] = Some(v);
    }
    let mut out = Vec::with_capacity(bins);
    let mut previous = 0.0;
    for (i, v) in last_in_bin.into_iter().enumerate() {
        let v = v.unwrap_or(previous);
        out.push((
            (i as f64 + 0.5) * bin_s,
            (v - previous).max(0.0) * scale / bin_s,
        ));
        previous = v;
    }
    out
}

fn binned(values: impl Iterator<Item = (f64, f64)>, bin_s: f64, duration_s: f64) -> Points {
    let bins = (duration_s / bin_s).ceil().max(1.0) as usize;
    let mut sums = vec![0.0; bins];
    for (t, v) in values {
        let i = ((t / bin_s) as usize).min(bins - 1);
        sums[i] += v;
    }
    sums.into_iter()
        .enumerate()
        .map(|(i, v)| ((i as f64 + 0.5) * bin_s, v))
        .collect()
}
