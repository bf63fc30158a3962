//! `ltx demo`: a real transfer over the emulated path on loopback, then the
//! same path in the simulator beside the presets it is compared with.

use std::process::Command;

#[test]
fn the_demo_delivers_and_sets_ltx_beside_the_presets_it_compares_with() {
    let out = Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args([
            "demo",
            "--size",
            "200kB",
            "--json",
            "--compare",
            "cubic,bbr",
        ])
        .output()
        .expect("the demo runs");
    assert!(out.status.success(), "{out:?}");
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(value["verified"], true);
    let compared: Vec<&str> = value["compare"]
        .as_array()
        .expect("a comparison")
        .iter()
        .map(|run| run["profile"].as_str().expect("a preset name"))
        .collect();
    assert_eq!(compared, ["ltx", "cubic", "bbr"]);
    // ltx in virtual time finishes the demo's transfer.
    assert!(value["compare"][0]["completion_s"].is_number(), "{value}");
}

#[test]
fn no_comparison_when_asked_for_none() {
    let out = Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args(["demo", "--size", "50kB", "--json", "--compare", "none"])
        .output()
        .expect("the demo runs");
    assert!(out.status.success(), "{out:?}");
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(value["compare"].as_array().map(Vec::len), Some(0));
}
