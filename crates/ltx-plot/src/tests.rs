//! A simulated lossy transfer's qlog read back and drawn.

use std::time::Duration;

use ltx_qlog::{QlogWriter, Vantage};
use ltx_sim::scenario::Scenario;

use super::*;

/// The sender's qlog of a 1 MB transfer over 100 ms at 10 % loss.
fn sender_qlog(seed: u64) -> Vec<u8> {
    let mut scenario = Scenario {
        rate_bps: 20_000_000,
        rtt: Duration::from_millis(100),
        loss: 0.10,
        size: 1_000_000,
        seed,
        ..Scenario::default()
    };
    scenario.trace = true;
    let result = scenario.run().expect("the scenario runs");
    let mut writer =
        QlogWriter::new(Vec::new(), "simulated", Vantage::Client, 0.0).expect("header");
    for (at, event) in &result.trace {
        writer
            .event(Duration::from_secs_f64(*at), event)
            .expect("write");
    }
    writer.finish().expect("flush")
}

#[test]
fn what_is_not_a_qlog_file_is_refused_with_a_reason() {
    assert!(matches!(
        Trace::parse(b"{\"a\":1}"),
        Err(TraceError::NotJsonSeq)
    ));
    assert!(matches!(
        Trace::parse(b"\x1e{\"a\":1}\n"),
        Err(TraceError::NoHeader)
    ));
    let bad = b"\x1e{\"qlog_version\":\"0.3\"}\n\x1e{not json\n";
    assert!(matches!(
        Trace::parse(bad),
        Err(TraceError::BadRecord { index: 1, .. })
    ));
}

#[test]
fn a_senders_trace_fills_every_panel_and_its_rates_add_up() {
    let seed = 5;
    let bytes = sender_qlog(seed);
    let trace = Trace::parse(&bytes).expect("the trace reads");
    let titles: Vec<&str> = panels(&trace).iter().map(|p| p.title).collect();
    assert_eq!(titles.len(), 6, "seed {seed}: {titles:?}");

    let sent: f64 = trace.sent.iter().map(|p| p.1).sum();
    let bin = trace.bin_s();
    let from_rate: f64 = bit_rate(&trace.sent, bin, trace.duration_s)
        .iter()
        .map(|p| p.1 * 1e6 / 8.0 * bin)
        .sum();
    assert!(
        (from_rate - sent).abs() < 1.0,
        "seed {seed}: {from_rate} against {sent}"
    );
    assert!(
        trace.repairs[0].len() > 10,
        "seed {seed}: proactive repairs at 10 % loss"
    );
    for (s, m) in trace.smoothed_rtt.iter().zip(&trace.min_rtt) {
        assert!(
            s.1 >= m.1 - 1e-9,
            "seed {seed}: smoothed {s:?} below min {m:?}"
        );
    }
}

#[test]
fn the_plot_is_written_as_svg_or_png_by_its_name() {
    let trace = Trace::parse(&sender_qlog(6)).expect("the trace reads");
    let dir = tempfile::tempdir().expect("a directory");
    for name in ["trace.svg", "trace.png"] {
        let out = dir.path().join(name);
        draw(&trace, &out).expect("drawn");
        let len = std::fs::metadata(&out).expect("written").len();
        assert!(len > 10_000, "{name}: {len} bytes");
    }
    let out = dir.path().join("trace.jpeg");
    assert!(matches!(
        draw(&trace, &out),
        Err(PlotError::UnknownFormat(_))
    ));
}
