//! `ltx-bench tunnel --quick` end to end for `ltx tunnel` and direct kernel
//! TCP: the emulator, the application server, curl and the tunnel
//! together. It checks that every workload completed intact, not how
//! fast. Needs root, network namespaces, the TUN driver, iproute2, curl
//! and the `ltx` binary beside `ltx-bench`; where any is missing it says so
//! and passes without running (CI runs as root).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

fn supported() -> bool {
    let missing = ltx_emu::missing();
    if !missing.is_empty() {
        let what: Vec<String> = missing.iter().map(ToString::to_string).collect();
        eprintln!(
            "skipped: the emulator cannot run here ({})",
            what.join("; ")
        );
        return false;
    }
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("skipped: no curl");
        return false;
    }
    let ltx = Path::new(env!("CARGO_BIN_EXE_ltx-bench")).with_file_name("ltx");
    if !ltx.is_file() {
        eprintln!("skipped: {} is not built", ltx.display());
        return false;
    }
    true
}

/// Two cells, three workloads, two systems, one run each: within a few
/// minutes on a shared two-core machine.
#[test]
fn the_quick_suite_carries_every_workload_intact_through_ltx_and_direct_tcp() {
    if !supported() {
        return;
    }
    let start = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args([
            "tunnel",
            "--quick",
            "--json",
            "--systems",
            "ltx,direct-cubic",
        ])
        .output()
        .expect("ltx-bench runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "ltx-bench tunnel --quick failed ({}):\n{stderr}",
        output.status
    );
    assert!(start.elapsed() < Duration::from_secs(300), "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect();
    let runs: Vec<&Value> = lines.iter().filter(|l| l.get("rep").is_some()).collect();
    assert_eq!(runs.len(), 2 * 3 * 2, "{stdout}");
    for run in &runs {
        assert_eq!(run["completed"], true, "{run}");
        assert_eq!(run["verified"], true, "{run}");
    }
    let summaries = lines.iter().filter(|l| l["summary"] == true).count();
    assert_eq!(summaries, 2 * 3, "{stdout}");
}
