//! `ltx sim run --profile` and `--mix`: what the command accepts, refuses,
//! and reports per flow.

use std::process::{Command, Output};

use serde_json::Value;

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args(["sim", "run", "--rate", "20mbit", "--rtt", "20ms"])
        .args(["--size", "300KB", "--seed", "3", "--json"])
        .args(args)
        .output()
        .expect("the ltx binary runs")
}

fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// A run with `args` on the common path, which must deliver intact.
fn verified(args: &[&str]) -> Value {
    let result = json_of(&sim(args));
    assert_eq!(result["verified"], true, "{args:?}");
    result
}

/// Each of `values` given to `flag` is refused, with the flag named.
fn assert_refused(flag: &str, values: &[&str]) {
    for bad in values {
        let output = sim(&[flag, bad]);
        assert!(!output.status.success(), "{flag} {bad} was taken");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(flag), "{flag} {bad}: {stderr}");
    }
}

#[test]
fn a_mix_is_cycled_over_the_flows_and_each_flow_reports_its_share() {
    let result = json_of(&sim(&["--flows", "3", "--mix", "ltx,cubic"]));
    assert_eq!(result["profile"], "ltx,cubic,ltx");
    let flows = result["flows"].as_array().expect("per-flow results");
    let profiles: Vec<&str> = flows
        .iter()
        .map(|f| f["profile"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["ltx", "cubic", "ltx"]);
    let fair = 20e6 / 3.0;
    for flow in flows {
        let goodput = flow["goodput_bps"].as_f64().unwrap();
        let share = flow["share"].as_f64().unwrap();
        assert!(goodput > 0.0);
        assert!((share - goodput / fair).abs() < 1e-3, "{flow}");
    }
    assert!(result["jain"].as_f64().is_some());
    assert!(result["queue_delay_p95_ms"].as_f64().is_some());
    assert!(result["queue_loss"].as_f64().is_some());
}

#[test]
fn a_single_profile_is_named_in_the_result() {
    let result = json_of(&sim(&["--profile", "bbr"]));
    assert_eq!(result["profile"], "bbr");
    assert_eq!(result["verified"], true);
}

#[test]
fn an_unknown_profile_is_refused_with_the_valid_names() {
    let output = sim(&["--profile", "vegas"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for name in [
        "ltx", "lt-tcp", "ccp", "dfec", "ctcp", "fectcp", "newreno", "cubic", "bbr",
    ] {
        assert!(stderr.contains(name), "{stderr}");
    }
}

#[test]
fn a_mix_longer_than_the_flows_is_refused() {
    let output = sim(&["--flows", "1", "--mix", "ltx,cubic"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--mix names 2 profiles"));
}

#[test]
fn the_answer_quantile_trades_bytes_for_delay_on_a_short_path() {
    // 20 Mbit/s, 20 ms, 20 % loss, 300 KB, seed 3: measured 1.333 wire
    // bytes per byte delivered answering below the need, 1.384 answering it.
    let run = |quantile| verified(&["--loss", "20%", "--cheap-answer-quantile", quantile]);
    let (below, expected) = (run("-1"), run("0"));
    let overhead = |r: &Value| r["overhead"].as_f64().unwrap();
    assert!(
        overhead(&below) < overhead(&expected),
        "{below} against {expected}"
    );
}

#[test]
fn an_answer_quantile_out_of_range_is_refused() {
    assert_refused("--cheap-answer-quantile", &["5", "-4.5", "one", "NaN"]);
}

#[test]
fn a_lower_tail_residual_sends_more_repair_at_the_end() {
    // 20 Mbit/s, 20 ms, 20 % in bursts of 10, 300 KB, seed 3: measured 22
    // tail repairs at 1 % (1.324 wire bytes per byte delivered), 18 at 10 %
    // (1.306).
    let run = |residual| {
        verified(&[
            "--loss",
            "20%",
            "--burst",
            "10",
            "--tail-residual",
            residual,
        ])
    };
    let (one, ten) = (run("1%"), run("0.1"));
    let tail = |r: &Value| r["repairs"]["tail"].as_u64().unwrap();
    assert!(tail(&one) > tail(&ten), "{one} against {ten}");
    let overhead = |r: &Value| r["overhead"].as_f64().unwrap();
    assert!(overhead(&one) > overhead(&ten), "{one} against {ten}");
}

#[test]
fn a_tail_residual_out_of_range_is_refused() {
    assert_refused("--tail-residual", &["0", "60%", "-1", "one", "2"]);
}

#[test]
fn a_narrow_repair_span_leaves_more_to_feedback_on_a_long_path() {
    // 20 Mbit/s, 200 ms, 5 % loss, 3 MB, seed 3: measured 104 proactive
    // repairs with the default span of 256; a span of 16 spreads too widely
    // for its size to be worth a margin, and sends none.
    let run = |span: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_ltx"))
            .args(["sim", "run", "--rate", "20mbit", "--rtt", "200ms"])
            .args(["--size", "3MB", "--seed", "3", "--loss", "5%", "--json"])
            .args(["--max-repair-span", span])
            .output()
            .expect("the ltx binary runs");
        let result = json_of(&output);
        assert_eq!(result["verified"], true, "span {span}");
        result["repairs"]["proactive"].as_u64().expect("a count")
    };
    let (narrow, default) = (run("16"), run("256"));
    assert!(
        narrow < default,
        "{narrow} proactive at 16, {default} at 256"
    );
}

#[test]
fn a_repair_span_out_of_range_is_refused() {
    assert_refused("--max-repair-span", &["0", "16385", "-1", "wide"]);
}
