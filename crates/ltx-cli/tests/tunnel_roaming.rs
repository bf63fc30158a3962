//! Roaming through `ltx tunnel`, with real processes in two network
//! namespaces joined by a veth pair: a download through a `-L` forward
//! survives the client's address changing under it, and a 20 s outage.
//!
//! These need root, iproute2 and python3 (the download's source and
//! reader); where any is missing they say so and pass without running (CI
//! runs as root). Namespaces are named after the test process and removed
//! when a test ends; every wait is bounded and no test asserts a duration.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The bound on any one wait: a wait that reaches it is a hang, a failure.
const BOUND: Duration = Duration::from_secs(90);

/// The download's source, run in the server's namespace: serves `size`
/// bytes of a fixed pattern to one connection, in 64 KiB pieces `pause`
/// seconds apart, so that the transfer lasts a while.
const SOURCE: &str = r#"
import socket, sys, time
size, pause = int(sys.argv[1]), float(sys.argv[2])
data = bytes((i * 7 + i // 251) % 256 for i in range(size))
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
for i in range(0, size, 65536):
    c.sendall(data[i:i + 65536])
    time.sleep(pause)
c.close()
"#;

/// The reader, run in the client's namespace: reads the forward to its
/// end and says whether the bytes are the pattern.
const READER: &str = r#"
import socket, sys
size = int(sys.argv[2])
data = bytes((i * 7 + i // 251) % 256 for i in range(size))
host, port = sys.argv[1].rsplit(":", 1)
c = socket.create_connection((host, int(port)), timeout=80)
print("connected", flush=True)
got = bytearray()
while True:
    b = c.recv(65536)
    if not b:
        break
    got += b
print("intact" if bytes(got) == data else "altered", len(got), flush=True)
"#;

fn supported() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let tools = ["ip", "python3"].iter().all(|tool| {
        Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    });
    if !(root && tools) {
        eprintln!("skipped: needs root, iproute2 and python3");
    }
    root && tools
}

fn run(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("running a command");
    assert!(out.status.success(), "{args:?}: {out:?}");
}

/// Two namespaces, the server's (10.213.0.1) and the client's
/// (10.213.0.2), joined by a veth pair; removed when dropped.
struct Namespaces {
    server: String,
    client: String,
    client_link: String,
}

impl Namespaces {
    fn new(tag: &str) -> Namespaces {
        let pid = std::process::id();
        let ns = Namespaces {
            server: format!("ltxroam{pid}{tag}s"),
            client: format!("ltxroam{pid}{tag}c"),
            client_link: format!("r{pid}{tag}c"),
        };
        let server_link = format!("r{pid}{tag}s");
        run(&["ip", "netns", "add", &ns.server]);
        run(&["ip", "netns", "add", &ns.client]);
        run(&[
            "ip",
            "link",
            "add",
            &server_link,
            "netns",
            &ns.server,
            "type",
            "veth",
            "peer",
            "name",
            &ns.client_link,
            "netns",
            &ns.client,
        ]);
        for (name, link, addr) in [
            (&ns.server, &server_link, "10.213.0.1/24"),
            (&ns.client, &ns.client_link, "10.213.0.2/24"),
        ] {
            run(&["ip", "-n", name, "addr", "add", addr, "dev", link]);
            run(&["ip", "-n", name, "link", "set", link, "up"]);
            run(&["ip", "-n", name, "link", "set", "lo", "up"]);
        }
        // Deleting the client's first address keeps the second, which
        // takes its place as the source of its packets.
        run(&[
            "ip",
            "netns",
            "exec",
            &ns.client,
            "sysctl",
            "-qw",
            "net.ipv4.conf.all.promote_secondaries=1",
        ]);
        run(&[
            "ip",
            "netns",
            "exec",
            &ns.client,
            "sysctl",
            "-qw",
            &format!("net.ipv4.conf.{}.promote_secondaries=1", ns.client_link),
        ]);
        ns
    }

    fn client_ip(&self, verb: &str, addr: &str) {
        run(&[
            "ip",
            "-n",
            &self.client,
            "addr",
            verb,
            addr,
            "dev",
            &self.client_link,
        ]);
    }

    fn client_link(&self, state: &str) {
        run(&[
            "ip",
            "-n",
            &self.client,
            "link",
            "set",
            &self.client_link,
            state,
        ]);
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in [&self.server, &self.client] {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

/// A child in a namespace, killed when dropped, with its output lines.
struct Running {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    /// Runs `program args` in namespace `ns`; reads stdout if `stdout`,
    /// else stderr.
    fn start(ns: &str, program: &str, args: &[&str], stdout: bool) -> Running {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", ns, program])
            .args(args)
            .stdin(Stdio::null());
        if stdout {
            command.stdout(Stdio::piped()).stderr(Stdio::inherit());
        } else {
            command.stdout(Stdio::null()).stderr(Stdio::piped());
        }
        let mut child = command.spawn().expect("starting a child");
        let pipe: Box<dyn Read + Send> = if stdout {
            Box::new(child.stdout.take().expect("piped"))
        } else {
            Box::new(child.stderr.take().expect("piped"))
        };
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next output line that contains `needle`.
    fn line_with(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line with {needle:?}; output: {:#?}", self.seen),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ltx"))
        .args(["keygen", "--out"])
        .arg(path)
        .output()
        .expect("running ltx keygen");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A download of `size` bytes served `pause` seconds per 64 KiB, through
/// a tunnel between the namespaces; `meanwhile` runs once the reader is
/// connected. Returns the reader's verdict line and, if `logged` is
/// given, the server's first log line with it.
fn download_through_tunnel(
    ns: &Namespaces,
    size: usize,
    pause: &str,
    logged: Option<&str>,
    meanwhile: impl FnOnce(),
) -> (String, Option<String>) {
    let ltx = env!("CARGO_BIN_EXE_ltx");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server_key = dir.path().join("server.key");
    keygen(&server_key);
    let client_key = dir.path().join("client.key");
    let client_public = keygen(&client_key);
    let allow = dir.path().join("clients.txt");
    std::fs::write(&allow, format!("{client_public}\n")).unwrap();

    let size_arg = size.to_string();
    let mut source = Running::start(
        &ns.server,
        "python3",
        &["-c", SOURCE, &size_arg, pause],
        true,
    );
    let port = source.line_with("");
    let target = format!("127.0.0.1:{}", port.trim());
    let mut server = Running::start(
        &ns.server,
        ltx,
        &[
            "tunnel",
            "server",
            "--listen",
            "10.213.0.1:0",
            "--key",
            server_key.to_str().unwrap(),
            "--allow",
            allow.to_str().unwrap(),
            "--permit",
            &target,
        ],
        false,
    );
    let line = server.line_with("tunnel server on");
    let addr = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the server's address")
        .to_owned();
    let key: String = line
        .split("public key ")
        .nth(1)
        .map(|rest| rest.chars().take(64).collect())
        .expect("the server's key");
    let forward = format!("127.0.0.1:0:{target}");
    let mut client = Running::start(
        &ns.client,
        ltx,
        &[
            "tunnel",
            "client",
            "--server",
            &addr,
            "--peer",
            &key,
            "--key",
            client_key.to_str().unwrap(),
            "-L",
            &forward,
        ],
        false,
    );
    let line = client.line_with("forwarding ");
    let local = line
        .strip_prefix("forwarding ")
        .and_then(|rest| rest.split(" -> ").next())
        .expect("the forward's address")
        .trim()
        .to_owned();
    let mut reader = Running::start(
        &ns.client,
        "python3",
        &["-c", READER, &local, &size_arg],
        true,
    );
    reader.line_with("connected");
    let started = Instant::now();
    meanwhile();
    let verdict = reader.line_with(" ");
    eprintln!("{verdict} after {:?}", started.elapsed());
    let log = logged.map(|needle| server.line_with(needle));
    drop(client);
    drop(server);
    drop(source);
    (verdict, log)
}

#[test]
fn a_download_survives_the_client_changing_address() {
    if !supported() {
        return;
    }
    let ns = Namespaces::new("a");
    let size = 4 << 20;
    let moved = "the peer's address changed";
    let (verdict, log) = download_through_tunnel(&ns, size, "0.02", Some(moved), || {
        std::thread::sleep(Duration::from_millis(500));
        ns.client_ip("add", "10.213.0.3/24");
        ns.client_ip("del", "10.213.0.2/24");
    });
    assert_eq!(verdict, format!("intact {size}"));
    let log = log.expect("asked for");
    eprintln!("server: {log}");
    assert!(log.contains("10.213.0.3:"), "{log}");
}

#[test]
fn a_download_survives_a_twenty_second_outage() {
    if !supported() {
        return;
    }
    let ns = Namespaces::new("b");
    let size = 3 << 20;
    let (verdict, _) = download_through_tunnel(&ns, size, "0.05", None, || {
        std::thread::sleep(Duration::from_millis(500));
        ns.client_link("down");
        std::thread::sleep(Duration::from_secs(20));
        ns.client_link("up");
    });
    assert_eq!(verdict, format!("intact {size}"));
}
