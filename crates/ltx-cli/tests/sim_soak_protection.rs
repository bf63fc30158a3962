//! `ltx sim soak --protection`: AEAD after a Noise handshake by default,
//! the plain checksum on request, and the counts of corrupted and refused
//! packets in each run's JSON and the summary.

use std::process::Command;

use serde_json::Value;

fn soak(args: &[&str]) -> Vec<Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args(["sim", "soak", "--json", "--runs", "2", "--seed", "1"])
        .args(args)
        .output()
        .expect("ltx runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn runs_are_sealed_with_aead_unless_asked_for_plain() {
    for (args, label) in [(&[][..], "aead"), (&["--protection", "plain"][..], "plain")] {
        let lines = soak(args);
        assert_eq!(lines.len(), 3, "{lines:?}");
        for run in &lines[..2] {
            assert_eq!(run["protection"], label, "{run}");
            let corrupted = run["corrupted"].as_u64().expect("a count");
            let unauthentic = run["unauthentic"].as_u64().expect("a count");
            assert!(unauthentic <= corrupted, "{run}");
        }
        let summary = &lines[2];
        assert_eq!(summary["by_protection"][label]["runs"], 2, "{summary}");
    }
}
