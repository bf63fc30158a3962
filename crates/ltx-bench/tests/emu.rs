//! `ltx-bench emu --quick --json` end to end: the harness, the emulator
//! and the peers of ltx and kernel TCP (Cubic, BBR) together. It checks
//! that every transfer completed and arrived intact, not how fast. Needs
//! root, network namespaces, the TUN driver and iproute2; where any is
//! missing it says so and passes without running (CI runs as root).

use std::process::Command;

use serde_json::Value;

fn supported() -> bool {
    let missing = ltx_emu::missing();
    if !missing.is_empty() {
        let what: Vec<String> = missing.iter().map(ToString::to_string).collect();
        eprintln!(
            "skipped: the emulator cannot run here ({})",
            what.join("; ")
        );
    }
    missing.is_empty()
}

#[test]
fn the_quick_suite_completes_every_transfer_intact() {
    if !supported() {
        return;
    }
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args(["emu", "--quick", "--json"])
        .output()
        .expect("ltx-bench runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "ltx-bench emu --quick failed ({}):\n{stderr}",
        output.status
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect();
    let runs: Vec<&Value> = lines.iter().filter(|l| l.get("rep").is_some()).collect();
    // Three cells, three systems, one repetition each.
    assert_eq!(runs.len(), 9, "{stdout}");
    for system in ["ltx", "tcp-cubic", "tcp-bbr"] {
        assert_eq!(
            runs.iter().filter(|r| r["system"] == system).count(),
            3,
            "{system}: {stdout}"
        );
    }
    for run in &runs {
        assert_eq!(run["completed"], true, "{run}");
        assert_eq!(run["verified"], true, "{run}");
        let time = run["completion_s"].as_f64().expect("a completion time");
        let one_way_s = run["rtt_ms"].as_f64().expect("a round trip") / 2e3;
        // No byte crosses the path faster than its one-way delay: a time
        // below it would be a measurement that does not span the transfer.
        assert!(time > one_way_s, "{run}");
        assert!(
            run["wire_bytes"].as_u64().unwrap() >= run["size_bytes"].as_u64().unwrap(),
            "{run}"
        );
    }
    let summaries = lines.iter().filter(|l| l["summary"] == "cell").count();
    assert_eq!(summaries, 3, "{stdout}");
}

#[test]
fn a_resumed_row_counts_the_timed_transfer_alone() {
    // `ltx-resumed` first moves the payload untimed, over a path of its
    // own, to save the path it then resumes: the row's bytes on the wire
    // are the timed transfer's, not both transfers' (twice the payload).
    if !supported() {
        return;
    }
    let out = std::env::temp_dir().join(format!("ltx-bench-emu-resumed-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args([
            "emu",
            "--full",
            "--table",
            "correlated",
            "--loss",
            "0",
            "--systems",
            "ltx-resumed",
            "--reps",
            "1",
            "--no-sim",
            "--json",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("ltx-bench runs");
    let _ = std::fs::remove_dir_all(&out);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "ltx-bench emu failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let runs: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .filter(|l: &Value| l.get("rep").is_some())
        .collect();
    assert_eq!(runs.len(), 1, "{stdout}");
    let run = &runs[0];
    assert_eq!(run["system"], "ltx-resumed", "{run}");
    assert_eq!(run["completed"], true, "{run}");
    assert_eq!(run["verified"], true, "{run}");
    let size = run["size_bytes"].as_u64().expect("a size");
    let wire = run["wire_bytes"].as_u64().expect("wire bytes");
    assert!(wire >= size && wire < size * 3 / 2, "{run}");
}
