//! `ltx-bench loopback --json` end to end: every system carries a small
//! transfer, checked by the receiver, and the report has the lines and
//! fields that scripts read.

use std::process::Command;

use serde_json::Value;

#[test]
fn json_report_has_a_line_per_system_and_comparisons_with_quinn() {
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args(["loopback", "--json", "--size", "4MB", "--runs", "1"])
        .output()
        .expect("running ltx-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "ltx-bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();

    let systems: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["system"].as_str())
        .collect();
    assert_eq!(systems, ["ltx", "ltx-plain", "quinn", "tcp"]);
    for line in lines.iter().filter(|line| line.get("system").is_some()) {
        assert_eq!(line["bench"], "loopback");
        assert_eq!(line["bytes"], 4_000_000);
        assert_eq!(line["runs"], 1);
        for field in ["gbit_per_s", "cpu_s_per_gb"] {
            let value = line[field].as_f64().expect(field);
            assert!(value.is_finite() && value >= 0.0, "{field} = {value}");
        }
    }

    let comparisons: Vec<&Value> = lines
        .iter()
        .filter(|line| line.get("compare").is_some())
        .collect();
    let names: Vec<&Value> = comparisons.iter().map(|c| &c["compare"]).collect();
    assert_eq!(
        names,
        ["ltx/quinn", "ltx-plain/quinn", "tcp/quinn", "ltx/ltx-plain"]
    );
    for comparison in comparisons {
        assert!(comparison["throughput_ratio"].as_f64().is_some());
        assert!(comparison["cpu_per_gb_ratio"].as_f64().is_some());
    }
}

#[test]
fn one_system_alone_has_no_comparison() {
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args([
            "loopback", "--json", "--size", "1MB", "--runs", "1", "--system", "tcp",
        ])
        .output()
        .expect("running ltx-bench");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].contains(r#""system":"tcp""#), "{stdout}");
}

#[test]
fn an_unknown_system_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args(["loopback", "--system", "carrier-pigeon"])
        .output()
        .expect("running ltx-bench");
    assert!(!output.status.success());
}
