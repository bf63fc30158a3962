//! `ltx cp` end to end over a real ssh server: Debian's openssh-server in
//! a network namespace of its own, joined to the client's namespace by a
//! veth pair (10.78.0.1 here, 10.78.0.2 there), with a host key and a
//! user key made for the test. The "remote" ltx is this build's binary,
//! named with --remote-ltx.
//!
//! These need root, network namespaces, iproute2 and sshd; where one is
//! missing they say why and pass without running, except under CI (the
//! `CI` variable set), where that is a failure: CI installs them.
//! Namespaces are named after the process id and deleted on every exit
//! path; every command is bounded in time.

#![cfg(unix)]

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ltx_emu::NetNamespace;
use serde_json::Value;

/// The client's and the server's addresses on the veth pair.
const CLIENT_ADDRESS: &str = "10.78.0.1";
const SERVER_ADDRESS: &str = "10.78.0.2";
const CLIENT_ADDRESS_V6: &str = "fd78::1";
const SERVER_ADDRESS_V6: &str = "fd78::2";
const SSHD: &str = "/usr/sbin/sshd";

fn ltx() -> &'static str {
    env!("CARGO_BIN_EXE_ltx")
}

/// An sshd in a namespace of its own and a client namespace that reaches
/// it; torn down on drop (sshd first, then the namespaces, then files).
struct Lab {
    sshd: Option<Child>,
    client: NetNamespace,
    server: NetNamespace,
    dir: tempfile::TempDir,
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(mut sshd) = self.sshd.take() {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
    }
}

/// A lab, or `None` with the reason printed where one cannot be made.
fn lab() -> Option<Lab> {
    match Lab::start() {
        Ok(lab) => Some(lab),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("ltx cp's ssh tests must run under CI: {why}")
        }
        Err(why) => {
            eprintln!("skipped: an sshd cannot be started here ({why})");
            None
        }
    }
}

impl Lab {
    fn start() -> Result<Lab, String> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if uid != 0 {
            return Err(format!("needs root for network namespaces (uid {uid})"));
        }
        let missing: Vec<String> = ltx_emu::missing()
            .into_iter()
            .filter(|m| !matches!(m, ltx_emu::Missing::Tun))
            .map(|m| m.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(missing.join("; "));
        }
        if !Path::new(SSHD).exists() {
            return Err(format!("no {SSHD}: install Debian's openssh-server"));
        }
        for tool in ["ssh", "ssh-keygen"] {
            if Command::new(tool).arg("-V").output().is_err() {
                return Err(format!("no {tool}: install openssh-client"));
            }
        }
        let (client, server) =
            NetNamespace::create_pair().map_err(|e| format!("creating namespaces: {e}"))?;
        client
            .ip_batch(&format!(
                "link add cpc type veth peer name cps netns {}\n\
                 addr add {CLIENT_ADDRESS}/24 dev cpc\n\
                 addr add {CLIENT_ADDRESS_V6}/64 dev cpc nodad\n\
                 link set cpc up\n",
                server.name()
            ))
            .map_err(|e| format!("a veth pair: {e}"))?;
        server
            .ip_batch(&format!(
                "addr add {SERVER_ADDRESS}/24 dev cps\n\
                 addr add {SERVER_ADDRESS_V6}/64 dev cps nodad\n\
                 link set cps up\n"
            ))
            .map_err(|e| format!("a veth pair: {e}"))?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut lab = Lab {
            sshd: None,
            client,
            server,
            dir,
        };
        lab.start_sshd()?;
        Ok(lab)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn start_sshd(&mut self) -> Result<(), String> {
        for key in ["host_key", "user_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(self.path(key))
                .output()
                .map_err(|e| format!("ssh-keygen: {e}"))?;
            if !made.status.success() {
                return Err(format!("ssh-keygen: {made:?}"));
            }
        }
        let read = |name: &str| std::fs::read_to_string(self.path(name)).map_err(|e| e.to_string());
        let write = |name: &str, text: String| {
            std::fs::write(self.path(name), text).map_err(|e| e.to_string())
        };
        write("authorized_keys", read("user_key.pub")?)?;
        let host_key = read("host_key.pub")?;
        write(
            "known_hosts",
            format!("{SERVER_ADDRESS} {host_key}{SERVER_ADDRESS_V6} {host_key}"),
        )?;
        let dir = self.dir.path().display();
        write(
            "sshd_config",
            format!(
                "ListenAddress {SERVER_ADDRESS}:22\n\
                 ListenAddress [{SERVER_ADDRESS_V6}]:22\n\
                 HostKey {dir}/host_key\n\
                 PidFile none\n\
                 AuthorizedKeysFile {dir}/authorized_keys\n\
                 PermitRootLogin yes\n\
                 PubkeyAuthentication yes\n\
                 PasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 UsePAM no\n\
                 StrictModes no\n"
            ),
        )?;
        // sshd's privilege separation directory, which its service makes.
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        let log = std::fs::File::create(self.path("sshd.log")).map_err(|e| e.to_string())?;
        let sshd = self
            .server
            .command(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting sshd: {e}"))?;
        self.sshd = Some(sshd);
        let address: SocketAddr = format!("{SERVER_ADDRESS}:22").parse().expect("an address");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let reached = self
                .client
                .run_inside(move || {
                    TcpStream::connect_timeout(&address, Duration::from_millis(200))
                })
                .map_err(|e| e.to_string())?;
            if reached.is_ok() {
                return Ok(());
            }
            let exited = self.sshd.as_mut().and_then(|s| s.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > deadline {
                return Err(format!(
                    "sshd did not start: {}",
                    std::fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `--ssh`: this lab's keys, and nothing from the machine's ssh config.
    fn ssh(&self) -> String {
        let dir = self.dir.path().display();
        format!(
            "ssh -F /dev/null -i {dir}/user_key -o IdentitiesOnly=yes -o IdentityAgent=none \
             -o UserKnownHostsFile={dir}/known_hosts -o GlobalKnownHostsFile=/dev/null \
             -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=10"
        )
    }

    /// Runs `ltx cp` in the client namespace with this lab's ssh.
    fn cp(&self, args: &[&str]) -> Output {
        self.cp_with_ssh(&self.ssh(), args)
    }

    fn cp_with_ssh(&self, ssh: &str, args: &[&str]) -> Output {
        let child = self
            .client
            .command(ltx())
            .arg("cp")
            .args(["--ssh", ssh])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting ltx cp");
        finish(child, Duration::from_secs(90))
    }

    /// Fails if a process other than sshd is left in the server's
    /// namespace, or any in the client's, a few seconds after a copy.
    fn assert_nothing_left_running(&self) {
        let sshd = self.sshd.as_ref().map(Child::id).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let server: Vec<u32> = pids(&self.server)
                .into_iter()
                .filter(|&p| p != sshd)
                .collect();
            let client = pids(&self.client);
            if server.is_empty() && client.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "left running: server {server:?}, client {client:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Drops incoming UDP to `port` on the server, as a firewall would,
    /// while ssh (TCP) still gets through.
    fn block_udp(&self, port: u16) {
        self.server
            .ip_batch(&format!(
                "rule add pref 10 iif cps ipproto udp dport {port} blackhole\n\
                 rule add pref 100 lookup local\n\
                 rule del pref 0\n"
            ))
            .expect("a rule that drops UDP");
    }
}

/// The processes in a namespace (`ip netns pids`).
fn pids(namespace: &NetNamespace) -> Vec<u32> {
    let out = Command::new("ip")
        .args(["netns", "pids", namespace.name()])
        .output()
        .expect("ip netns pids");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Waits for a child, killing it if it outlives `bound`.
fn finish(mut child: Child, bound: Duration) -> Output {
    let deadline = Instant::now() + bound;
    // Read as it comes, so that a full pipe cannot stall the child.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("polling a child") {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().expect("killing a hung child");
            let _ = child.wait();
            panic!(
                "ltx cp outlived {bound:?}: {}",
                String::from_utf8_lossy(&err.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
    }
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

fn summary(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not one JSON object ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Three files: one of 1 MB (some 750 packets), an empty one, and one in
/// a subdirectory, under `dir`; their names relative to it.
fn make_files(dir: &Path) -> [&'static str; 3] {
    std::fs::create_dir_all(dir.join("tree/sub")).expect("mkdir");
    std::fs::write(dir.join("big.bin"), random_bytes(1_000_000, 1)).expect("write");
    std::fs::write(dir.join("empty"), b"").expect("write");
    std::fs::write(dir.join("tree/sub/nested.bin"), random_bytes(70_001, 2)).expect("write");
    ["big.bin", "empty", "tree/sub/nested.bin"]
}

fn assert_same(names: &[&str], original: &Path, copy: &Path) {
    for name in names {
        let a = std::fs::read(original.join(name)).expect("the original");
        let b = std::fs::read(copy.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", copy.join(name).display()));
        assert!(a == b, "{name} differs");
    }
}

#[test]
fn a_push_and_a_pull_over_ssh_deliver_every_file_byte_for_byte() {
    let Some(lab) = lab() else { return };
    let local = lab.path("local");
    let names = make_files(&local);
    let remote = lab.path("remote");
    let at = |path: &Path| format!("root@{SERVER_ADDRESS}:{}", path.display());

    // A name the remote shell must not split or unquote.
    let remote_dir = remote.join("it's in");
    let dest = format!("{}/", at(&remote_dir));
    let sources = ["big.bin", "empty", "tree"].map(|n| local.join(n).display().to_string());
    let mut args = vec!["-r", "--json", "--remote-ltx", ltx()];
    args.extend(sources.iter().map(String::as_str));
    args.push(&dest);
    let pushed = lab.cp(&args);
    assert!(pushed.status.success(), "push: {}", stderr(&pushed));
    assert_same(&names, &local, &remote_dir);
    let sent = summary(&pushed);
    assert_eq!(sent["files"].as_array().map(Vec::len), Some(3), "{sent}");
    assert_eq!(sent["bytes"], 1_070_001);
    lab.assert_nothing_left_running();

    let back = lab.path("back");
    let sources = ["big.bin", "empty", "tree"].map(|n| at(&remote_dir.join(n)));
    let back_dir = format!("{}/", back.display());
    let mut args = vec!["-r", "--json", "--remote-ltx", ltx()];
    args.extend(sources.iter().map(String::as_str));
    args.push(&back_dir);
    let pulled = lab.cp(&args);
    assert!(pulled.status.success(), "pull: {}", stderr(&pulled));
    assert_same(&names, &local, &back);
    let sent = summary(&pulled);
    assert_eq!(sent["files"].as_array().map(Vec::len), Some(3), "{sent}");
    lab.assert_nothing_left_running();

    // Again: the files are there and identical, so nothing moves.
    let again = lab.cp(&args);
    assert!(again.status.success(), "pull again: {}", stderr(&again));
    let files = summary(&again)["files"].clone();
    assert!(
        files
            .as_array()
            .is_some_and(|f| f.iter().all(|f| f["already_present"] == true)),
        "{files}"
    );
}

#[test]
fn blocked_udp_is_reported_as_such_while_ssh_works() {
    let Some(lab) = lab() else { return };
    lab.block_udp(7000);
    let file = lab.path("report.pdf");
    std::fs::write(&file, random_bytes(10_000, 3)).expect("write");
    let file = file.display().to_string();
    let remote_dir = format!("root@{SERVER_ADDRESS}:{}/", lab.path("in").display());
    let remote_file = format!("root@{SERVER_ADDRESS}:{file}");
    let back = format!("{}/", lab.path("back").display());

    for (what, operands) in [
        ("push", [&file, &remote_dir]),
        ("pull", [&remote_file, &back]),
    ] {
        let mut args = vec!["--timeout", "3s", "--remote-ltx", ltx()];
        args.extend(operands.map(String::as_str));
        let out = lab.cp(&args);
        let message = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{what}: {message}");
        assert!(
            message.contains(&format!("UDP port 7000 on {SERVER_ADDRESS}"))
                && message.contains("seems blocked")
                && message.contains("ssh works")
                && message.contains("--port"),
            "{what}: {message}"
        );
        lab.assert_nothing_left_running();
    }
    assert!(!lab.path("in").exists() && !lab.path("back").exists());

    // The way out the message gives: another port.
    let mut args = vec!["--port", "7001", "--remote-ltx", ltx()];
    args.extend([file.as_str(), remote_dir.as_str()]);
    let out = lab.cp(&args);
    assert!(out.status.success(), "--port 7001: {}", stderr(&out));
    assert_same(&["report.pdf"], &lab.path(""), &lab.path("in"));
}

#[test]
fn a_host_without_ltx_or_without_ssh_is_explained() {
    let Some(lab) = lab() else { return };
    let file = lab.path("f");
    std::fs::write(&file, b"data").expect("write");
    let file = file.display().to_string();
    let dest = format!("root@{SERVER_ADDRESS}:");

    let out = lab.cp(&["--remote-ltx", "/nowhere/ltx", &file, &dest]);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert!(
        message.contains("command not found on 10.78.0.2") && message.contains("cargo install"),
        "{message}"
    );

    // No sshd on port 2: ssh's own message, then what it means.
    let ssh = format!("{} -p 2", lab.ssh());
    let child_out = lab.cp_with_ssh(&ssh, &["--remote-ltx", ltx(), &file, &dest]);
    let message = stderr(&child_out);
    assert_eq!(child_out.status.code(), Some(1), "{message}");
    assert!(
        message.contains("Connection refused") && message.contains("ssh could not run ltx"),
        "{message}"
    );

    // The port taken on the host by another program.
    let taken = lab
        .server
        .run_inside(|| std::net::UdpSocket::bind("0.0.0.0:7000"))
        .expect("entering the namespace")
        .expect("binding port 7000");
    let out = lab.cp(&["--remote-ltx", ltx(), &file, &dest]);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert!(
        message.contains("UDP port 7000 is in use on") && message.contains("--port"),
        "{message}"
    );
    drop(taken);

    // A destination that is not a directory is refused before any data.
    let missing = format!("root@{SERVER_ADDRESS}:{}", lab.path("nowhere").display());
    let out = lab.cp(&["--remote-ltx", ltx(), &file, &missing]);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{message}");
    assert!(
        message.contains("write ") && message.contains("nowhere/"),
        "{message}"
    );
    lab.assert_nothing_left_running();
}

#[test]
fn an_ipv6_host_is_reached_over_ipv6_both_ways() {
    let Some(lab) = lab() else { return };
    let file = lab.path("v6.bin");
    std::fs::write(&file, random_bytes(200_000, 6)).expect("write");
    let at = |path: &Path| format!("root@[{SERVER_ADDRESS_V6}]:{}", path.display());
    let dest = format!("{}/", at(&lab.path("in")));
    let file = file.display().to_string();
    let pushed = lab.cp(&["--json", "--remote-ltx", ltx(), &file, &dest]);
    assert!(pushed.status.success(), "push: {}", stderr(&pushed));
    let peer = summary(&pushed)["peer"].clone();
    assert_eq!(peer, format!("[{SERVER_ADDRESS_V6}]:7000"), "{peer}");
    let source = at(&lab.path("in/v6.bin"));
    let back = format!("{}/", lab.path("back").display());
    let pulled = lab.cp(&["--remote-ltx", ltx(), &source, &back]);
    assert!(pulled.status.success(), "pull: {}", stderr(&pulled));
    assert_same(&["v6.bin"], &lab.path(""), &lab.path("back"));
    lab.assert_nothing_left_running();
}

#[test]
fn operands_without_exactly_one_remote_side_are_refused() {
    for operands in [
        vec!["a", "b"],
        vec!["box:a", "other:b"],
        vec!["box:a", "other:b", "."],
        vec!["a", "box:b", "."],
        vec!["-oProxyCommand=x:y", "."],
    ] {
        let out = Command::new(ltx())
            .arg("cp")
            .arg("--")
            .args(&operands)
            .output()
            .expect("running ltx cp");
        assert_eq!(out.status.code(), Some(2), "{operands:?}: {out:?}");
    }
}

/// The README's "Copy over ssh" block, run as written against the lab:
/// `user@host:` is the lab's server, with the remote home directory in a
/// temporary directory (`backup/` there), and `ltx cp` is given the lab's
/// ssh and this build's ltx. Its `cargo install` line is the one CI runs.
#[test]
fn the_readme_copy_over_ssh_commands_work() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("the README");
    let at = readme
        .find("**Copy over ssh.**")
        .expect("the README's Copy over ssh");
    let block = readme[at..]
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a sh block after Copy over ssh");
    let lines: Vec<&str> = block
        .lines()
        .map(|line| line.split(" #").next().unwrap_or(line).trim())
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0], "cargo install --path crates/ltx-cli");
    assert!(lines[1].starts_with("ltx cp ") && lines[2].starts_with("ltx cp "));
    let Some(lab) = lab() else { return };

    let home = lab.path("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    let here = lab.path("here");
    std::fs::create_dir_all(here.join("photos/2024")).expect("mkdir");
    std::fs::write(here.join("photos/2024/a.jpg"), random_bytes(300_000, 4)).expect("write");
    std::fs::write(here.join("notes.txt"), b"remember the milk\n").expect("write");
    let elsewhere = lab.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let ltx_cp = format!("ltx cp --ssh '{}' --remote-ltx {}", lab.ssh(), ltx());
    let host = format!("root@{SERVER_ADDRESS}:{}/", home.display());
    for (line, dir) in [(lines[1], &here), (lines[2], &elsewhere)] {
        let command = line
            .replacen("ltx cp", &ltx_cp, 1)
            .replace("user@host:", &host);
        let build = Path::new(ltx()).parent().expect("the binary's directory");
        let path = format!(
            "{}:{}",
            build.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = lab
            .client
            .command("sh")
            .args(["-c", &command])
            .current_dir(dir)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh");
        let out = finish(child, Duration::from_secs(90));
        assert!(out.status.success(), "{command}: {}", stderr(&out));
    }
    assert_same(
        &["photos/2024/a.jpg", "notes.txt"],
        &here,
        &home.join("backup"),
    );
    assert_same(&["notes.txt"], &here, &elsewhere);
    lab.assert_nothing_left_running();
}

/// SIGTERM to `ltx cp` in the middle of a push: it stops both ends (the
/// remote one through the end of its ssh session), leaves nothing running
/// and no file under the name, and the same command run again resumes.
#[test]
fn an_interrupted_copy_stops_both_ends_and_a_rerun_resumes() {
    let Some(lab) = lab() else { return };
    let file = lab.path("disk.img");
    std::fs::write(&file, random_bytes(150_000_000, 5)).expect("write");
    let dest_dir = lab.path("in");
    let dest = format!("root@{SERVER_ADDRESS}:{}/", dest_dir.display());
    let file = file.display().to_string();
    let args = [
        "--json",
        "--remote-ltx",
        ltx(),
        file.as_str(),
        dest.as_str(),
    ];

    let child = lab
        .client
        .command(ltx())
        .arg("cp")
        .args(["--ssh", &lab.ssh()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ltx cp");
    // Interrupt once the receiver holds part of the file.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let partial = std::fs::read_dir(&dest_dir).ok().and_then(|entries| {
            entries
                .filter_map(Result::ok)
                .find(|e| e.file_name().to_string_lossy().ends_with(".ltx-part"))
                .and_then(|e| e.metadata().ok())
                .filter(|m| m.len() > 10_000_000)
        });
        if partial.is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "no partial file appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = finish(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    lab.assert_nothing_left_running();
    assert!(
        !dest_dir.join("disk.img").exists(),
        "a partial file under its name"
    );

    let again = lab.cp(&args);
    assert!(again.status.success(), "rerun: {}", stderr(&again));
    assert_same(&["disk.img"], &lab.path(""), &dest_dir);
    let resumed = summary(&again)["files"][0]["resumed_from"].as_u64();
    assert!(resumed.is_some_and(|r| r > 0), "{}", summary(&again));
}
