//! `ltx emu` as a user runs it. These need root, network namespaces, the
//! TUN driver and iproute2; where any is missing they say so and pass
//! without running (CI runs as root).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn ltx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ltx"))
}

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

/// The namespaces a process with this id named.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("ltx{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_client_and_server_run_and_the_counters_come_out_as_json() {
    if !supported() {
        return;
    }
    if Command::new("python3").arg("-V").output().is_err() {
        eprintln!("skipped: needs python3");
        return;
    }
    // The server reads one datagram; the client sends three, on a path
    // that duplicates every packet.
    let output = ltx()
        .args([
            "emu",
            "--rtt",
            "20ms",
            "--rate",
            "10mbit",
            "--duplicate",
            "100%",
            "--json",
            "--server",
            "exec python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
             s.bind((\"10.77.0.2\", 7000)); s.recv(10)'",
            "--client",
            "exec python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
             [s.sendto(b\"ping\", (\"10.77.0.2\", 7000)) for _ in range(3)]'",
        ])
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["client_exit"], 0);
    assert_eq!(report["interrupted"], false);
    let forward = &report["forward"];
    assert_eq!(forward["offered"], 3);
    assert_eq!(forward["duplicated"], 3);
    assert_eq!(forward["delivered"].as_u64().unwrap() % 2, 0, "{forward}");
    for direction in [forward, &report["reverse"]] {
        let count = |key: &str| direction[key].as_u64().unwrap();
        assert_eq!(
            count("offered") + count("duplicated"),
            count("delivered") + count("dropped") + count("in_flight"),
            "{direction}"
        );
    }
    let client = report["client_namespace"].as_str().unwrap();
    assert!(
        !Path::new("/run/netns").join(client).exists(),
        "{client} left behind"
    );
}

#[test]
fn a_signal_stops_the_run_and_the_namespaces_are_deleted() {
    if !supported() {
        return;
    }
    for signal in ["INT", "TERM"] {
        let mut child = ltx()
            .args(["emu", "--rtt", "10ms", "--client", "sleep 60"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(20);
        while namespaces_of(pid).len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(namespaces_of(pid).len(), 2, "the emulator started");
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert!(!status.success(), "SIG{signal}: an interrupted run fails");
        assert_eq!(status.code(), Some(1), "SIG{signal}: it exited, not killed");
        assert!(
            namespaces_of(pid).is_empty(),
            "SIG{signal}: namespaces left"
        );
    }
}

/// The numbers in a line of the text report, in order.
fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter_map(|word| word.parse().ok())
        .collect()
}

#[test]
fn the_text_report_adds_up() {
    if !supported() {
        return;
    }
    if Command::new("python3").arg("-V").output().is_err() {
        eprintln!("skipped: needs python3");
        return;
    }
    // 300 datagrams into a 20-packet queue at 1 Mbit/s with 20 % loss:
    // the loss model and the full queue both drop.
    let output = ltx()
        .args([
            "emu",
            "--rtt",
            "20ms",
            "--rate",
            "1mbit",
            "--queue",
            "20pkt",
            "--loss",
            "20%",
            "--server",
            "exec python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
             s.bind((\"10.77.0.2\", 7000)); [s.recv(2000) for _ in range(300)]'",
            "--client",
            "exec python3 -c 'import socket, time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
             [s.sendto(bytes(1000), (\"10.77.0.2\", 7000)) for _ in range(300)]; time.sleep(0.1)'",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    let mut lines = stderr
        .lines()
        .skip_while(|l| !l.contains("client → server"));
    let total = numbers(lines.next().expect("the forward direction"));
    let [offered, delivered, dropped, on_link] = total[..] else {
        panic!("{stderr}")
    };
    assert_eq!(offered, 300, "{stderr}");
    assert_eq!(offered, delivered + dropped + on_link, "{stderr}");
    let causes = numbers(lines.next().unwrap());
    assert_eq!(causes.iter().sum::<u64>(), dropped, "{stderr}");
    assert!(causes[0] > 0 && causes[1] > 0, "{stderr}");
    assert!(delivered > 0, "{stderr}");
}
