//! The four ways a sender's handshake fails, told apart: nothing listens
//! (the host's ICMP answer ends the wait at once), the wrong public key
//! for the receiver, a sender key the receiver does not allow, and another
//! pre-shared key. The receiver logs each refusal with its reason; the
//! sender's message names what to check.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn ltx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ltx"))
}

fn keygen(dir: &Path, name: &str) -> String {
    let out = ltx()
        .args(["keygen", "--out"])
        .arg(dir.join(name))
        .output()
        .expect("keygen runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A receiver on 127.0.0.1, its port, and its stderr lines as they come.
struct Receiver {
    child: Child,
    port: u16,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Receiver {
    fn start(dir: &Path, extra: &[&str]) -> Receiver {
        let mut child = ltx()
            .args(["recv", "--listen", "127.0.0.1:0", "--key"])
            .arg(dir.join("recv.key"))
            .arg("--dir")
            .arg(dir.join("inbox"))
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("recv runs");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the receiver says where it listens");
        let port = first
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {first:?}"));
        Receiver { child, port, lines }
    }

    /// The first refusal line the receiver logs.
    fn refusal(&self) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .expect("the receiver logs the refusal");
            if line.starts_with("refused a handshake") {
                return line;
            }
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ltx send` of a small file to the receiver on `port`, which gives up
/// after 2 s of silence unless `extra` says otherwise.
fn send(dir: &Path, port: u16, peer: &str, extra: &[&str]) -> Output {
    let file = dir.join("a.txt");
    std::fs::write(&file, b"hello").unwrap();
    let mut command = ltx();
    command
        .arg("send")
        .arg(&file)
        .arg(format!("127.0.0.1:{port}"))
        .args(["--peer", peer])
        .args(extra);
    if !extra.contains(&"--timeout") {
        command.args(["--timeout", "2s"]);
    }
    command.output().expect("send runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn nothing_listening_is_told_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let key = keygen(dir.path(), "recv.key");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // A long time-out: only the host's answer can end the wait early.
    let out = send(dir.path(), port, &key, &["--timeout", "1h"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing listens"), "{}", stderr(&out));
}

#[test]
fn a_wrong_receiver_key_is_logged_as_unauthentic_and_the_sender_told_what_to_check() {
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path(), "recv.key");
    let other = keygen(dir.path(), "other.key");
    let receiver = Receiver::start(dir.path(), &[]);
    let out = send(dir.path(), receiver.port, &other, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("--psk"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--peer"), "{}", stderr(&out));
    assert!(
        receiver.refusal().contains("did not authenticate"),
        "the receiver's log"
    );
}

#[test]
fn a_sender_key_not_allowed_is_logged_with_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let recv_key = keygen(dir.path(), "recv.key");
    let sender = keygen(dir.path(), "send.key");
    let someone_else = keygen(dir.path(), "someone.key");
    let receiver = Receiver::start(dir.path(), &["--peer", &someone_else]);
    let send_key = dir.path().join("send.key");
    let out = send(
        dir.path(),
        receiver.port,
        &recv_key,
        &["--key", send_key.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let refusal = receiver.refusal();
    assert!(refusal.contains("not allowed"), "{refusal}");
    assert!(refusal.contains(&sender), "{refusal}");
}

#[test]
fn another_preshared_key_is_logged_as_unauthentic() {
    let dir = tempfile::tempdir().unwrap();
    let recv_key = keygen(dir.path(), "recv.key");
    let psk = |name: &str, byte: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, byte.repeat(64)).unwrap();
        path
    };
    let ours = psk("ours.psk", "a");
    let theirs = psk("theirs.psk", "b");
    let receiver = Receiver::start(dir.path(), &["--psk", ours.to_str().unwrap()]);
    let out = send(
        dir.path(),
        receiver.port,
        &recv_key,
        &["--psk", theirs.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        receiver.refusal().contains("did not authenticate"),
        "the receiver's log"
    );
}
