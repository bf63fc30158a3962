//! `ltx sim soak` from the outside: its JSON lines, and a replay that
//! prints the same run.

use std::process::Command;

use serde_json::Value;

fn soak(args: &[&str]) -> (bool, Vec<Value>) {
    let output = Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args(["sim", "soak", "--json"])
        .args(args)
        .output()
        .expect("ltx runs");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    (output.status.success(), lines)
}

#[test]
fn json_gives_one_object_per_run_then_a_summary() {
    let (ok, lines) = soak(&["--runs", "3", "--seed", "1", "--jobs", "2"]);
    assert!(ok, "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
    for (run, seed) in lines[..3].iter().zip(1..) {
        assert_eq!(run["seed"], seed, "{run}");
        let outcome = run["outcome"].as_str().expect("an outcome");
        assert!(
            ["delivered", "error", "wrong", "hang"].contains(&outcome),
            "{run}"
        );
    }
    let summary = &lines[3];
    assert_eq!(summary["summary"], true, "{summary}");
    assert_eq!(summary["runs"], 3, "{summary}");
    let counted: u64 = ["delivered", "error", "wrong", "hang"]
        .iter()
        .map(|k| summary[k].as_u64().expect("a count"))
        .sum();
    assert_eq!(counted, 3, "{summary}");
}

#[test]
fn a_replay_prints_the_run_of_the_batch() {
    let (_, batch) = soak(&["--runs", "3", "--seed", "1"]);
    let (_, replay) = soak(&["--replay", "2"]);
    assert_eq!(replay.len(), 2, "{replay:?}");
    assert_eq!(replay[0], batch[1]);
}

#[test]
fn zero_runs_are_refused() {
    let (ok, lines) = soak(&["--runs", "0"]);
    assert!(!ok);
    assert!(lines.is_empty());
}

#[test]
fn a_reader_that_stops_early_ends_the_run_without_a_panic() {
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;

    // 3000 runs print far more than a pipe holds, so the soak is still
    // printing when the reader goes away after the first line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args(["sim", "soak", "--json", "--runs", "3000", "--seed", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ltx runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut first)
        .expect("a first line");
    // The reader (and with it the pipe's read end) is dropped here.
    assert!(first.starts_with('{'), "{first}");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("ltx ends");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {stderr}");
}
