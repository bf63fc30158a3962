//! `ltx-bench compare --quick` from the outside: the files it writes, one
//! CSV row per run with the documented columns, every run delivered
//! intact, and a summary whose targets come from the runs.

use std::collections::HashSet;
use std::process::Command;

use serde_json::Value;

/// The presets the quick check runs, and its seeds.
const PROFILES: &str = "ltx,cubic,bbr";
const SEEDS: u64 = 2;

#[test]
fn quick_writes_every_file_and_every_run_is_verified() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("compare");
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args(["compare", "--quick", "--json", "--jobs", "2"])
        .args(["--seeds", &SEEDS.to_string(), "--profiles", PROFILES])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("ltx-bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");

    // Standard output: one object per run, then the summary.
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let (summary, runs) = lines.split_last().expect("a summary line");
    assert_eq!(summary["summary"], true, "{summary}");
    assert_eq!(summary["runs"], runs.len(), "{summary}");
    assert_eq!(summary["verified"], runs.len(), "{summary}");
    for run in runs {
        assert_eq!(run["verified"], true, "{run}");
        assert_eq!(run["completed"], true, "{run}");
    }
    // Every section's quick cells, every preset, every seed.
    let sections: HashSet<&str> = runs.iter().filter_map(|r| r["section"].as_str()).collect();
    assert_eq!(sections.len(), 7, "{sections:?}");
    let profiles: HashSet<&str> = runs.iter().filter_map(|r| r["profile"].as_str()).collect();
    assert_eq!(profiles, PROFILES.split(',').collect());
    let seeds: HashSet<u64> = runs.iter().filter_map(|r| r["seed"].as_u64()).collect();
    assert_eq!(seeds, (1..=SEEDS).collect());
    // The targets are checked on the runs: the shared bottleneck's on its
    // two cells (drop-tail and ECN), the overhead on every single-flow one.
    let targets = summary["targets"].as_array().expect("targets");
    let checked = |word: &str| {
        targets
            .iter()
            .find(|t| t["target"].as_str().is_some_and(|n| n.contains(word)))
            .and_then(|t| t["checked"].as_u64())
    };
    assert_eq!(checked("jain"), Some(2), "{summary}");
    assert_eq!(checked("overhead"), Some(6), "{summary}");

    // runs.csv: the header, then one row per run with every column.
    let csv = std::fs::read_to_string(out.join("runs.csv")).expect("runs.csv");
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().expect("a header").split(',').collect();
    for column in [
        "section",
        "rtt_ms",
        "loss",
        "burst",
        "size",
        "profile",
        "seed",
        "completed",
        "verified",
        "completion_s",
        "ideal_s",
        "ratio",
        "goodput_bps",
        "overhead",
        "delay_p50_ms",
        "delay_p99_ms",
        "queue_delay_p95_ms",
        "queue_loss",
        "jain",
    ] {
        assert!(header.contains(&column), "no {column} in {header:?}");
    }
    let rows: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
    assert_eq!(rows.len(), runs.len());
    let verified = header.iter().position(|&c| c == "verified").unwrap();
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
        assert_eq!(row[verified], "true", "{row:?}");
    }

    // summary.jsonl: one line per cell and preset.
    let jsonl = std::fs::read_to_string(out.join("summary.jsonl")).expect("summary.jsonl");
    let cells = runs.len() / SEEDS as usize;
    assert_eq!(jsonl.lines().count(), cells);
    let tables = std::fs::read_to_string(out.join("tables.md")).expect("tables.md");
    assert!(tables.contains("## Shared bottleneck"), "{tables}");
    assert!(out.join("targets.txt").is_file());
    // The plots, unless the machine has no font for their text.
    if !out.join("plots/MISSING.txt").exists() {
        for stem in [
            "time-vs-loss-correlated-e2",
            "time-vs-rtt-delay-sweep-loss-0_5pct",
            "time-vs-loss-loss-sweep-rtt-20ms",
            "throughput-vs-queue-delay-shared-ecn",
        ] {
            for extension in ["png", "svg"] {
                let plot = out.join(format!("plots/{stem}.{extension}"));
                assert!(plot.is_file(), "no {}", plot.display());
            }
        }
    }
}

#[test]
fn an_unknown_section_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_ltx-bench"))
        .args(["compare", "--quick", "--sections", "tables"])
        .output()
        .expect("ltx-bench runs");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown section"));
}
