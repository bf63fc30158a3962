//! Mistakes on the command line: each gets the exit code `ltx --help`
//! documents and a message that says what to do.

use std::process::{Command, Output};

fn ltx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args(args)
        .output()
        .expect("the ltx binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_send_without_the_receivers_key_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    std::fs::write(&file, b"x").unwrap();
    let out = ltx(&["send", file.to_str().unwrap(), "127.0.0.1:9"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--peer"), "{}", stderr(&out));
}

#[test]
fn a_receiver_without_a_key_is_a_usage_error() {
    let out = ltx(&["recv", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ltx keygen"), "{}", stderr(&out));
}

#[test]
fn a_missing_key_file_is_a_local_file_error() {
    let out = ltx(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--key",
        "/nonexistent/recv.key",
    ]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/nonexistent/recv.key"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_listen_address_that_is_no_address_says_what_form_it_wants() {
    let out = ltx(&["recv", "--listen", "localhost:7001"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ADDRESS:PORT"), "{}", stderr(&out));
}

#[test]
fn a_rate_without_a_unit_is_refused() {
    let out = ltx(&["sim", "run", "--rate", "50", "--size", "10kB"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("50mbit"), "{}", stderr(&out));
    let out = ltx(&["sim", "run", "--rate", "50M", "--size", "10kB", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_jitter_outside_the_round_trip_is_refused() {
    for bad in ["--jitter=150", "--jitter=-1", "--jitter=lots"] {
        let out = ltx(&["sim", "run", bad, "--size", "10kB"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains("--jitter"), "{bad}: {}", stderr(&out));
    }
    let out = ltx(&["sim", "run", "--jitter", "10%", "--size", "10kB", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn each_sides_help_speaks_of_its_own_keys() {
    let send = String::from_utf8_lossy(&ltx(&["send", "--help"]).stdout).into_owned();
    assert!(!send.contains("--allow <FILE>"), "{send}");
    assert!(send.contains("The receiver's public key"), "{send}");
    let recv = String::from_utf8_lossy(&ltx(&["recv", "--help"]).stdout).into_owned();
    assert!(recv.contains("--allow <FILE>"), "{recv}");
    assert!(recv.contains("A sender's public key"), "{recv}");
}
