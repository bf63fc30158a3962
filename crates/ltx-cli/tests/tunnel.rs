//! `ltx tunnel server` and `ltx tunnel client` end to end on loopback, as
//! processes: bytes both ways, half-close, refusals, keys, SOCKS5 and a
//! stalled reader beside a live connection.
//!
//! Every wait is bounded; no test asserts a duration. Every port is
//! chosen by the system (port 0) and read back from what the commands
//! print.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The bound on any one wait: a wait that reaches it is a hang, a failure.
const BOUND: Duration = Duration::from_secs(60);

fn ltx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ltx"))
}

/// Makes a key pair with `ltx keygen --out path`; returns the public key.
fn keygen(path: &Path) -> String {
    let out = ltx()
        .args(["keygen", "--out"])
        .arg(path)
        .output()
        .expect("running ltx keygen");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A running `ltx` child, killed when dropped, with its stderr lines as
/// they come.
struct Running {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    fresh: mpsc::Receiver<String>,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = ltx()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting ltx");
        let stderr = BufReader::new(child.stderr.take().expect("piped"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (send, fresh) = mpsc::channel();
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line.clone());
                let _ = send.send(line);
            }
        });
        Running {
            child,
            lines,
            fresh,
        }
    }

    /// The next stderr line that contains `needle`.
    fn line_with(&self, needle: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.fresh.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => panic!("no line with {needle:?}; stderr: {:#?}", self.stderr()),
            }
        }
    }

    /// The next stderr line that starts with one of `starts`.
    fn line_starting(&self, starts: &[&str]) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.fresh.recv_timeout(left) {
                Ok(line) if starts.iter().any(|s| line.starts_with(s)) => return line,
                Ok(_) => {}
                Err(_) => panic!("no line starting {starts:?}; stderr: {:#?}", self.stderr()),
            }
        }
    }

    fn stderr(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until stderr has a line with `needle`, among all so far.
    fn wait_for_log(&self, needle: &str) {
        if !self.stderr().iter().any(|l| l.contains(needle)) {
            self.line_with(needle);
        }
    }

    /// Waits for the child to exit by itself; its exit code.
    fn exit_code(mut self) -> Option<i32> {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().expect("polling a child") {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "ltx outlived {BOUND:?}: {:#?}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tunnel server and the keys around it.
struct Server {
    running: Running,
    addr: String,
    key: String,
    dir: tempfile::TempDir,
}

/// Starts a server permitting `permits` and allowing one client key,
/// made in its directory as `client.key`.
fn start_server(permits: &[String], extra: &[&str]) -> Server {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server_key = dir.path().join("server.key");
    keygen(&server_key);
    let client_key = keygen(&dir.path().join("client.key"));
    let allow = dir.path().join("clients.txt");
    std::fs::write(&allow, format!("# the test's client\n{client_key}\n")).unwrap();
    let mut args = vec![
        "tunnel".to_owned(),
        "server".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--key".into(),
        server_key.display().to_string(),
        "--allow".into(),
        allow.display().to_string(),
    ];
    for permit in permits {
        args.extend(["--permit".into(), permit.clone()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let running = Running::start(&refs);
    let line = running.line_with("tunnel server on");
    let (addr, key) = server_address_and_key(&line);
    Server {
        running,
        addr,
        key,
        dir,
    }
}

/// The address and public key in the server's first line.
fn server_address_and_key(line: &str) -> (String, String) {
    let addr = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    let key = line
        .split("public key ")
        .nth(1)
        .map(|rest| rest.chars().take(64).collect())
        .unwrap_or_else(|| panic!("no key in {line:?}"));
    (addr, key)
}

/// A client of `server` with the allowed key and `forwards` (`-L` or
/// `--socks` arguments); the local address of each forward, in order.
fn start_client(server: &Server, forwards: &[&str]) -> (Running, Vec<SocketAddr>) {
    let key = server.dir.path().join("client.key");
    let mut args = vec![
        "tunnel",
        "client",
        "--server",
        &server.addr,
        "--peer",
        &server.key,
        "--key",
        key.to_str().unwrap(),
    ];
    args.extend_from_slice(forwards);
    let running = Running::start(&args);
    running.line_with("connected to the tunnel server");
    let count = forwards
        .iter()
        .filter(|a| **a == "-L" || **a == "--socks")
        .count();
    let locals = (0..count)
        .map(|_| local_address(&running.line_starting(&["forwarding ", "SOCKS5 on "])))
        .collect();
    (running, locals)
}

/// The local address in "forwarding A -> B" or "SOCKS5 on A".
fn local_address(line: &str) -> SocketAddr {
    let text = line
        .strip_prefix("forwarding ")
        .and_then(|rest| rest.split(" -> ").next())
        .or_else(|| line.strip_prefix("SOCKS5 on "))
        .unwrap_or_else(|| panic!("no local address in {line:?}"));
    text.trim().parse().unwrap()
}

/// Connects to a local forward, with bounded reads and writes.
fn connect(addr: SocketAddr) -> TcpStream {
    let tcp = TcpStream::connect(addr).expect("connecting to the forward");
    tcp.set_read_timeout(Some(BOUND)).unwrap();
    tcp.set_write_timeout(Some(BOUND)).unwrap();
    tcp
}

/// A destination that serves each connection on a thread of its own.
fn serve(handler: fn(TcpStream)) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for tcp in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || handler(tcp));
        }
    });
    addr
}

/// Echoes every byte, and half-closes after the client's half-close.
fn echo(mut tcp: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tcp.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tcp.shutdown(Shutdown::Write);
}

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes `data` on one thread while reading the answer on this one, to
/// the answer's end.
fn exchange(tcp: TcpStream, data: Vec<u8>) -> Vec<u8> {
    let mut writer = tcp.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        writer.write_all(&data).unwrap();
        writer.shutdown(Shutdown::Write).unwrap();
    });
    let mut answer = Vec::new();
    (&tcp).read_to_end(&mut answer).expect("the whole answer");
    sender.join().unwrap();
    answer
}

/// A port on loopback where nothing listens.
fn closed_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[test]
fn bytes_through_a_forward_arrive_intact_both_ways() {
    let target = serve(echo);
    let server = start_server(&[target.to_string()], &[]);
    let forward = format!("127.0.0.1:0:{target}");
    let (_client, locals) = start_client(&server, &["-L", &forward]);
    for (round, len) in [(1, 1), (2, 100_000), (3, 3_000_000)] {
        let data = random_bytes(len, round);
        let answer = exchange(connect(locals[0]), data.clone());
        assert!(
            answer == data,
            "round {round}: {} bytes back of {len}",
            answer.len()
        );
    }
}

#[test]
fn a_client_that_stops_writing_still_reads_the_whole_reply() {
    // The destination reads the request to its end (the half-close),
    // then answers with it reversed, many times over.
    let target = serve(|mut tcp| {
        let mut request = Vec::new();
        tcp.read_to_end(&mut request).unwrap();
        request.reverse();
        for _ in 0..10_000 {
            tcp.write_all(&request).unwrap();
        }
    });
    let server = start_server(&[target.to_string()], &[]);
    let forward = format!("127.0.0.1:0:{target}");
    let (_client, locals) = start_client(&server, &["-L", &forward]);
    let mut tcp = connect(locals[0]);
    tcp.write_all(b"GET /half-close").unwrap();
    tcp.shutdown(Shutdown::Write).unwrap();
    let mut reply = Vec::new();
    tcp.read_to_end(&mut reply).unwrap();
    assert_eq!(reply.len(), 15 * 10_000);
    assert!(reply.starts_with(b"esolc-flah/ TEG"));
}

/// What a read from a forwarded connection that the tunnel gave up on
/// says: a reset, not an end of data and not a hang.
fn assert_reset(mut tcp: TcpStream) {
    let mut byte = [0u8; 1];
    match tcp.read(&mut byte) {
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[test]
fn a_refused_target_resets_the_local_connection() {
    let closed = closed_port();
    let server = start_server(&[closed.to_string()], &[]);
    let forward = format!("127.0.0.1:0:{closed}");
    let (client, locals) = start_client(&server, &["-L", &forward]);
    assert_reset(connect(locals[0]));
    client.wait_for_log("refused by the destination");
}

#[test]
fn a_target_not_permitted_is_refused_and_logged() {
    let target = serve(echo);
    let permitted = closed_port();
    let server = start_server(&[permitted.to_string()], &[]);
    let forward = format!("127.0.0.1:0:{target}");
    let (client, locals) = start_client(&server, &["-L", &forward]);
    let mut tcp = connect(locals[0]);
    // Bytes sent before the answer are not delivered either. The reset may
    // come before them, and then the write itself is reset.
    match tcp.write_all(b"hello") {
        Ok(()) => assert_reset(tcp),
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
    }
    client.wait_for_log("not permitted");
    server
        .running
        .wait_for_log(&format!("{target}: not permitted"));
}

#[test]
fn a_client_whose_key_is_not_allowed_gets_nothing() {
    let target = serve(echo);
    let server = start_server(&[target.to_string()], &[]);
    let stranger = server.dir.path().join("stranger.key");
    keygen(&stranger);
    let forward = format!("127.0.0.1:0:{target}");
    let client = Running::start(&[
        "tunnel",
        "client",
        "--server",
        &server.addr,
        "--peer",
        &server.key,
        "--key",
        stranger.to_str().unwrap(),
        "--connect-timeout",
        "2s",
        "-L",
        &forward,
    ]);
    server.running.wait_for_log("is not allowed");
    // It never reports a forward ready, and exits as `ltx send` does when
    // nothing answers.
    assert_eq!(client.exit_code(), Some(3), "the exit code for no answer");
}

#[test]
fn more_streams_than_permitted_are_refused_and_the_others_go_on() {
    let target = serve(echo);
    let server = start_server(&[target.to_string()], &["--max-streams", "1"]);
    let forward = format!("127.0.0.1:0:{target}");
    let (client, locals) = start_client(&server, &["-L", &forward]);
    // The first holds the one stream allowed.
    let mut first = connect(locals[0]);
    first.write_all(b"one").unwrap();
    let mut echoed = [0u8; 3];
    first.read_exact(&mut echoed).unwrap();
    assert_reset(connect(locals[0]));
    client.wait_for_log("too many streams");
    first.write_all(b"two").unwrap();
    first.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"two");
}

/// Connects through a SOCKS5 front end to `host:port` with a name
/// (resolved at the server); the reply's code and the connection.
fn socks_connect(socks: SocketAddr, host: &str, port: u16) -> (u8, TcpStream) {
    let mut tcp = connect(socks);
    tcp.write_all(&[0x05, 0x01, 0x00]).unwrap();
    let mut choice = [0u8; 2];
    tcp.read_exact(&mut choice).unwrap();
    assert_eq!(choice, [0x05, 0x00]);
    let mut request = vec![0x05, 0x01, 0x00, 0x03, host.len() as u8];
    request.extend_from_slice(host.as_bytes());
    request.extend_from_slice(&port.to_be_bytes());
    tcp.write_all(&request).unwrap();
    let mut reply = [0u8; 10];
    tcp.read_exact(&mut reply).unwrap();
    assert_eq!(reply[0], 0x05);
    (reply[1], tcp)
}

#[test]
fn socks5_connects_names_resolved_at_the_server_and_only_permitted_ones() {
    let target = serve(echo);
    let forbidden = serve(echo);
    let server = start_server(&[format!("localhost:{}", target.port())], &[]);
    let (_client, locals) = start_client(&server, &["--socks", "127.0.0.1:0"]);
    let (code, tcp) = socks_connect(locals[0], "localhost", target.port());
    assert_eq!(code, 0x00, "succeeded");
    let data = random_bytes(200_000, 7);
    assert!(exchange(tcp, data.clone()) == data);
    let (code, _) = socks_connect(locals[0], "localhost", forbidden.port());
    assert_eq!(code, 0x02, "not allowed by the rules");
    let closed = closed_port();
    let server = start_server(&[closed.to_string()], &[]);
    let (_client, locals) = start_client(&server, &["--socks", "127.0.0.1:0"]);
    let (code, _) = socks_connect(locals[0], "127.0.0.1", closed.port());
    assert_eq!(code, 0x05, "connection refused");
}

#[test]
fn curl_fetches_a_page_through_socks5_hostname() {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("skipped: curl is not installed");
        return;
    }
    let web = serve(|mut tcp| {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && tcp.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        let body = "through the tunnel\n".repeat(1000);
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tcp.write_all(answer.as_bytes());
    });
    let server = start_server(&[format!("localhost:{}", web.port())], &[]);
    let (_client, locals) = start_client(&server, &["--socks", "127.0.0.1:0"]);
    let out = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--max-time",
            "60",
            "--socks5-hostname",
        ])
        .arg(locals[0].to_string())
        .arg(format!("http://localhost:{}/", web.port()))
        .output()
        .expect("running curl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, "through the tunnel\n".repeat(1000).as_bytes());
}

#[test]
fn a_stalled_reader_does_not_hold_up_a_live_connection() {
    // The destination streams bytes to a "bulk" connection for as long
    // as they are taken, and echoes on the others.
    static BULK_WRITTEN: AtomicU64 = AtomicU64::new(0);
    let target = serve(|mut tcp| {
        let mut first = [0u8; 4];
        if tcp.read_exact(&mut first).is_err() {
            return;
        }
        if &first == b"BULK" {
            let chunk = vec![0x42u8; 64 * 1024];
            // Bounded: 256 MiB at most, far more than the path can hold.
            for _ in 0..4096 {
                if tcp.write_all(&chunk).is_err() {
                    return;
                }
                BULK_WRITTEN.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        } else {
            tcp.write_all(&first).unwrap();
            echo(tcp);
        }
    });
    let server = start_server(&[target.to_string()], &[]);
    let forward = format!("127.0.0.1:0:{target}");
    let (_client, locals) = start_client(&server, &["-L", &forward]);
    let mut stalled = connect(locals[0]);
    stalled.write_all(b"BULK").unwrap();
    // Never read: the stream's window fills, then the buffers behind it,
    // and the destination's writes stop. Wait until more than a stream's
    // window has left it and its writes have stopped.
    let deadline = Instant::now() + BOUND;
    let mut last = 0;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let written = BULK_WRITTEN.load(Ordering::Relaxed);
        if written > ltx_tunnel::TUNNEL_STREAM_WINDOW && written == last {
            break;
        }
        last = written;
        assert!(
            Instant::now() < deadline,
            "the bulk transfer never stalled: {written} bytes"
        );
    }
    let mut live = connect(locals[0]);
    for round in 0..20u8 {
        let message = [b'E', b'C', b'H', round];
        live.write_all(&message).unwrap();
        let mut echoed = [0u8; 4];
        live.read_exact(&mut echoed).unwrap();
        assert_eq!(echoed, message);
    }
    let data = random_bytes(1_000_000, 9);
    live.write_all(&data).unwrap();
    let mut echoed = vec![0u8; data.len()];
    live.read_exact(&mut echoed).unwrap();
    assert!(echoed == data);
    drop(stalled);
}

#[test]
fn the_server_and_client_run_from_their_configuration_files() {
    let target = serve(echo);
    let dir = tempfile::tempdir().unwrap();
    keygen(&dir.path().join("server.key"));
    let client_key = keygen(&dir.path().join("client.key"));
    std::fs::write(dir.path().join("clients.txt"), format!("{client_key}\n")).unwrap();
    let server_toml = dir.path().join("server.toml");
    std::fs::write(
        &server_toml,
        format!(
            "listen = \"127.0.0.1:0\"\nkey = \"server.key\"\nallow = \"clients.txt\"\n\
             permit = [\"{target}\"]\nmax_streams = 8\ndrivers = 2\n\n\
             [repair]\ndelay_per_percent = \"25ms\"\nexpect_loss = \"10%\"\n"
        ),
    )
    .unwrap();
    let server = Running::start(&[
        "tunnel",
        "server",
        "--config",
        server_toml.to_str().unwrap(),
    ]);
    let (addr, key) = server_address_and_key(&server.line_with("tunnel server on"));
    let client_toml = dir.path().join("client.toml");
    std::fs::write(
        &client_toml,
        format!(
            "server = \"{addr}\"\npeer = \"{key}\"\nkey = \"client.key\"\n\n\
             [[forward]]\nlisten = \"127.0.0.1:0\"\nto = \"{target}\"\n\n\
             [repair]\nexpect_loss = \"5%\"\n"
        ),
    )
    .unwrap();
    let client = Running::start(&[
        "tunnel",
        "client",
        "--config",
        client_toml.to_str().unwrap(),
    ]);
    let local = local_address(&client.line_with("forwarding"));
    let data = random_bytes(50_000, 3);
    assert!(exchange(connect(local), data.clone()) == data);
}

#[test]
fn mistakes_get_the_usage_exit_code_and_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("server.key");
    keygen(&key);
    let key = key.to_str().unwrap();
    let cases: [(&[&str], &str); 8] = [
        (
            &["tunnel", "server", "--listen", "127.0.0.1:0"],
            "ltx keygen",
        ),
        (
            &["tunnel", "server", "--key", key, "--allow-any-client"],
            "--permit",
        ),
        (
            &["tunnel", "server", "--key", key, "--permit", "*"],
            "--allow",
        ),
        (
            &[
                "tunnel",
                "server",
                "--key",
                key,
                "--allow-any-client",
                "--permit",
                "10.1.2.3/8:22",
            ],
            "10.0.0.0/8:22",
        ),
        (
            &[
                "tunnel",
                "server",
                "--key",
                key,
                "--allow-any-client",
                "--permit",
                "*",
                "--rate-limit",
                "4kbit",
            ],
            "at least 8000 bit/s",
        ),
        (
            &[
                "tunnel",
                "server",
                "--key",
                key,
                "--allow-any-client",
                "--permit",
                "*",
                "--drivers",
                "0",
            ],
            "between 1 and 64",
        ),
        (
            &[
                "tunnel",
                "server",
                "--key",
                key,
                "--allow-any-client",
                "--permit",
                "*",
                "--expect-loss",
                "95%",
            ],
            "--expect-loss",
        ),
        (
            &[
                "tunnel",
                "client",
                "--server",
                "127.0.0.1:9",
                "--peer",
                &"0".repeat(64),
            ],
            "-L",
        ),
    ];
    for (args, hint) in cases {
        let out = ltx().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
    }
}

#[test]
fn both_sides_tell_systemd_when_they_are_ready() {
    use std::os::unix::net::UnixDatagram;
    let target = serve(echo);
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let notify = UnixDatagram::bind(&socket_path).unwrap();
    notify.set_read_timeout(Some(BOUND)).unwrap();
    let server_key = dir.path().join("server.key");
    keygen(&server_key);
    let mut server = ltx();
    server
        .args([
            "tunnel",
            "server",
            "--listen",
            "127.0.0.1:0",
            "--allow-any-client",
        ])
        .arg("--key")
        .arg(&server_key)
        .args(["--permit", &target.to_string()])
        .env("NOTIFY_SOCKET", &socket_path)
        .stderr(Stdio::piped());
    let mut server = server.spawn().unwrap();
    let mut message = [0u8; 256];
    let n = notify
        .recv(&mut message)
        .expect("the server's notification");
    assert!(String::from_utf8_lossy(&message[..n]).contains("READY=1"));
    let mut first = String::new();
    BufReader::new(server.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let (addr, key) = server_address_and_key(&first);
    let forward = format!("127.0.0.1:0:{target}");
    let mut client = ltx()
        .args([
            "tunnel", "client", "--server", &addr, "--peer", &key, "-L", &forward,
        ])
        .env("NOTIFY_SOCKET", &socket_path)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let n = notify
        .recv(&mut message)
        .expect("the client's notification");
    assert!(String::from_utf8_lossy(&message[..n]).contains("READY=1"));
    let _ = client.kill();
    let _ = server.kill();
    let _ = client.wait();
    let _ = server.wait();
}

/// The text `GET /metrics` on `addr` answers with.
fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut tcp = TcpStream::connect(addr).expect("the metrics endpoint");
    tcp.set_read_timeout(Some(BOUND)).unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).expect("the answer");
    text
}

#[test]
fn a_server_serves_metrics_and_both_ends_write_qlog() {
    let target = serve(echo);
    let traces = tempfile::tempdir().expect("a temporary directory");
    let (server_qlog, client_qlog) = (traces.path().join("s"), traces.path().join("c"));
    let server = start_server(
        &[target.to_string()],
        &[
            "--metrics",
            "127.0.0.1:0",
            "--qlog",
            server_qlog.to_str().unwrap(),
        ],
    );
    let metrics = server
        .running
        .line_with("metrics for Prometheus at http://");
    let metrics = metrics
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .expect("the metrics address")
        .to_owned();
    let forward = format!("127.0.0.1:0:{target}");
    let (client, locals) = start_client(
        &server,
        &["-L", &forward, "--qlog", client_qlog.to_str().unwrap()],
    );
    let data = random_bytes(200_000, 9);
    assert!(exchange(connect(locals[0]), data.clone()) == data);

    let text = scrape(&metrics);
    assert!(
        text.contains("ltx_connections_accepted_total 1\n"),
        "{text}"
    );
    assert!(text.contains("ltx_connections_open 1\n"), "{text}");
    let read: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("ltx_stream_bytes_read_total "))
        .and_then(|v| v.parse().ok())
        .expect("stream bytes read");
    assert!(read >= 200_000.0, "{text}");

    drop(client);
    for dir in [&server_qlog, &client_qlog] {
        let files: Vec<_> = std::fs::read_dir(dir).expect("a qlog directory").collect();
        assert_eq!(files.len(), 1, "{dir:?}");
    }
}

/// A client held to 8 Mbit/s (1 MB/s each way) takes at least the time its
/// bytes take at that rate, less the bucket's 64 KiB burst, and they
/// arrive intact; the server says the limit when it starts.
#[test]
fn a_rate_limited_client_moves_no_faster_than_its_limit() {
    let target = serve(echo);
    let server = start_server(&[target.to_string()], &["--rate-limit", "8mbit"]);
    let said = server.running.stderr();
    assert!(
        said.iter().any(|l| l.contains("8.0 Mbit/s each way")),
        "{said:#?}"
    );
    let forward = format!("127.0.0.1:0:{target}");
    let (_client, locals) = start_client(&server, &["-L", &forward]);
    let data = random_bytes(1_500_000, 7);
    let start = std::time::Instant::now();
    let answer = exchange(connect(locals[0]), data.clone());
    let elapsed = start.elapsed();
    assert!(
        answer == data,
        "{} bytes back of {}",
        answer.len(),
        data.len()
    );
    assert!(
        elapsed >= Duration::from_millis(1_300),
        "1.5 MB each way at 1 MB/s in {elapsed:?}"
    );
}

/// With --socks-users, a SOCKS client must log in: offering only "no
/// authentication" gets "no acceptable methods", a wrong password a
/// failure status, the right one the connection.
#[test]
fn socks5_users_must_log_in() {
    let target = serve(echo);
    let server = start_server(&[target.to_string()], &[]);
    let users = server.dir.path().join("socks-users.txt");
    std::fs::write(&users, "# the test's users\nalice:s3cret:too\n").unwrap();
    let (_client, locals) = start_client(
        &server,
        &[
            "--socks",
            "127.0.0.1:0",
            "--socks-users",
            users.to_str().unwrap(),
        ],
    );
    let login = |password: &str| {
        let mut tcp = connect(locals[0]);
        tcp.write_all(&[0x05, 0x01, 0x02]).unwrap();
        let mut choice = [0u8; 2];
        tcp.read_exact(&mut choice).unwrap();
        assert_eq!(choice, [0x05, 0x02], "username/password chosen");
        let mut request = vec![0x01, 5];
        request.extend_from_slice(b"alice");
        request.push(password.len() as u8);
        request.extend_from_slice(password.as_bytes());
        tcp.write_all(&request).unwrap();
        let mut status = [0u8; 2];
        tcp.read_exact(&mut status).unwrap();
        (status, tcp)
    };
    let mut anonymous = connect(locals[0]);
    anonymous.write_all(&[0x05, 0x01, 0x00]).unwrap();
    let mut choice = [0u8; 2];
    anonymous.read_exact(&mut choice).unwrap();
    assert_eq!(choice, [0x05, 0xff], "no acceptable method without a login");
    let (status, _) = login("wrong");
    assert_eq!(status, [0x01, 0x01], "a wrong password fails");
    let (status, mut tcp) = login("s3cret:too");
    assert_eq!(status, [0x01, 0x00]);
    let mut request = vec![0x05, 0x01, 0x00, 0x01];
    request.extend_from_slice(&[127, 0, 0, 1]);
    request.extend_from_slice(&target.port().to_be_bytes());
    tcp.write_all(&request).unwrap();
    let mut reply = [0u8; 10];
    tcp.read_exact(&mut reply).unwrap();
    assert_eq!(reply[1], 0x00, "succeeded");
    let data = random_bytes(50_000, 9);
    assert!(exchange(tcp, data.clone()) == data);
}

/// Not on a terminal, the server logs each client's figures every
/// --stats-interval while the client moves bytes; with --log-format json
/// every log line is one JSON object.
#[test]
fn the_server_logs_each_active_clients_figures_as_json() {
    let target = serve(echo);
    let server = start_server(
        &[target.to_string()],
        &["--stats-interval", "300ms", "--log-format", "json"],
    );
    let forward = format!("127.0.0.1:0:{target}");
    let (_client, locals) = start_client(&server, &["-L", &forward]);
    // Traffic until a line comes: a client is logged once bytes moved
    // between two of the server's samples.
    let data = random_bytes(200_000, 11);
    let deadline = Instant::now() + BOUND;
    while !server
        .running
        .stderr()
        .iter()
        .any(|l| l.contains("\"stats\""))
    {
        assert!(Instant::now() < deadline, "{:#?}", server.running.stderr());
        assert!(exchange(connect(locals[0]), data.clone()) == data);
        std::thread::sleep(Duration::from_millis(100));
    }
    let lines = server.running.stderr();
    let stats: Vec<serde_json::Value> = lines
        .iter()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .filter(|v: &serde_json::Value| v["fields"]["message"] == "stats")
        .collect();
    let line = stats.first().unwrap_or_else(|| panic!("{lines:#?}"));
    let fields = &line["fields"];
    for name in [
        "peer",
        "loss",
        "redundancy",
        "sent_bit_s",
        "received_bit_s",
        "streams",
    ] {
        assert!(!fields[name].is_null(), "{name} missing from {line}");
    }
    assert!(lines
        .iter()
        .any(|l| l.starts_with('{') && l.contains("client connected")));
}

/// -R: the server listens where --permit-listen allows and carries each
/// connection there back to the client, which connects it on its side;
/// a listen the server does not permit ends the client with exit 4.
#[test]
fn a_remote_forward_carries_connections_to_the_server_back_to_the_client() {
    let target = serve(echo);
    let server = start_server(
        &["127.0.0.1:9".to_owned()],
        &["--permit-listen", "127.0.0.1:*"],
    );
    let remote = format!("127.0.0.1:0:{target}");
    let (client, _) = start_client(&server, &["-R", &remote]);
    let line = client.line_with("remote forward: the server is listening on ");
    let listening: SocketAddr = line
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split(" -> ").next())
        .and_then(|a| a.trim().parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    for round in 0..3 {
        let data = random_bytes(300_000, 20 + round);
        assert!(
            exchange(connect(listening), data.clone()) == data,
            "round {round}"
        );
    }

    let forbidden = format!("0.0.0.0:0:{target}");
    let key = server.dir.path().join("client.key");
    let out = ltx()
        .args([
            "tunnel",
            "client",
            "--server",
            &server.addr,
            "--peer",
            &server.key,
        ])
        .args(["--key", key.to_str().unwrap(), "-R", &forbidden])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("not permitted"), "{stderr}");
}
