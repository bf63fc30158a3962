//! The peers of the emulated-link benchmark, end to end over loopback: every
//! system that can be built here carries a small payload from a client
//! process to a server process that checks it; and a server given another
//! payload than the one sent says so.
//!
//! Building NORM's driver may install `libnorm-dev` with apt-get, and
//! kcp-go's fetches Go modules the first time, so a machine without root,
//! apt or the Go module proxy reports those systems as missing. In CI (the
//! `CI` variable set, running as root) every system must build: a missing
//! one fails the test with its reason.

use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use serde_json::Value;

const SYSTEMS: [&str; 10] = [
    "ltx",
    "ltx-hint",
    "ltx-resumed",
    "tcp-cubic",
    "tcp-bbr",
    "norm",
    "norm-cc",
    "kcp-fec",
    "quic-cubic",
    "quic-bbr",
];

fn bench() -> &'static str {
    env!("CARGO_BIN_EXE_ltx-bench")
}

fn every_system_required() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    std::env::var_os("CI").is_some() && unsafe { libc::geteuid() } == 0
}

/// A server address on loopback other than 127.0.0.1, with a port that is
/// free as far as one can tell (NORM's sender also takes the next one up).
fn server_address() -> String {
    let socket = UdpSocket::bind((Ipv4Addr::new(127, 0, 0, 2), 0)).expect("a probe socket");
    socket.local_addr().expect("its address").to_string()
}

fn spawn(program: &Path, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()))
}

/// Runs a server that expects the payload of seed 1 and a client that sends
/// the payload of seed 2, and returns the server's report.
fn mismatched_transfer(program: &Path, recv: &[&str], send: &[&str]) -> Value {
    let address = server_address();
    let mut recv_args: Vec<&str> = recv.to_vec();
    recv_args.extend(["--listen", &address, "--size", "300000", "--seed", "1"]);
    let mut send_args: Vec<&str> = send.to_vec();
    send_args.extend(["--connect", &address, "--size", "300000", "--seed", "2"]);
    let server = spawn(program, &recv_args);
    sleep(Duration::from_millis(500));
    let client = spawn(program, &send_args);
    let server = server.wait_with_output().expect("the server's output");
    let client = client.wait_with_output().expect("the client's output");
    assert!(
        client.status.success(),
        "{}: client failed: {}",
        program.display(),
        String::from_utf8_lossy(&client.stderr)
    );
    assert!(
        server.status.success(),
        "{}: server failed: {}",
        program.display(),
        String::from_utf8_lossy(&server.stderr)
    );
    let stdout = String::from_utf8_lossy(&server.stdout);
    serde_json::from_str(stdout.lines().last().expect("a report line")).expect("a JSON report")
}

#[test]
fn every_system_that_builds_delivers_a_small_payload_and_a_wrong_one_is_caught() {
    let mut args = vec!["peer", "check", "--size", "2MB"];
    if every_system_required() {
        args.push("--require-all");
    }
    let output = Command::new(bench())
        .args(&args)
        .output()
        .expect("running ltx-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "check failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    let names: Vec<&str> = lines.iter().filter_map(|l| l["system"].as_str()).collect();
    assert_eq!(names, SYSTEMS);
    for line in &lines {
        if let Some(reason) = line.get("missing") {
            assert!(!every_system_required(), "{line}");
            eprintln!("{} is missing here: {reason}", line["system"]);
            continue;
        }
        assert_eq!(line["completed"], true, "{line}");
        assert_eq!(line["verified"], true, "{line}");
        assert_eq!(line["size_bytes"], 2_000_000, "{line}");
        let seconds = line["completion_s"].as_f64().expect("completion_s");
        assert!(seconds > 0.0, "{line}");
        assert!(line["cpu_s"].as_f64().expect("cpu_s") > 0.0, "{line}");
    }

    // The same programs, told different payloads: the server's check fails
    // at the first byte, rather than reporting a transfer.
    let rust = PathBuf::from(bench());
    let report = mismatched_transfer(
        &rust,
        &["peer", "recv", "--system", "tcp-cubic"],
        &["peer", "send", "--system", "tcp-cubic"],
    );
    assert_eq!(report["verified"], false, "{report}");
    assert_eq!(report["first_mismatch"], 0, "{report}");
    assert_eq!(report["bytes"], 300_000, "{report}");

    let built = Path::new(bench())
        .parent()
        .expect("a directory")
        .join("peers");
    let drivers = [
        ("norm", "norm-peer", vec!["--rate", "1000000000"]),
        ("kcp-fec", "kcp-peer", vec![]),
    ];
    for (system, program, send_extra) in drivers {
        if lines
            .iter()
            .any(|l| l["system"] == system && l.get("missing").is_some())
        {
            continue;
        }
        let mut send = vec!["send"];
        send.extend(send_extra);
        let report = mismatched_transfer(&built.join(program), &["recv"], &send);
        assert_eq!(report["verified"], false, "{system}: {report}");
        assert_eq!(report["first_mismatch"], 0, "{system}: {report}");
    }
}
