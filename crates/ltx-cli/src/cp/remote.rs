//! The remote end of `ltx cp` (`ltx cp --remote-end`), which the local
//! side starts over ssh: it makes a one-time key pair, binds the UDP port,
//! answers the UDP check, then runs `ltx recv` (push) or `ltx send` (pull)
//! with the private key on the child's stdin, so that no key touches the
//! disk. When its stdin closes (the local side is done, or gone) it stops
//! its child: nothing is left running on the host.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdout, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use ltx::PublicKey;

use super::control::{Check, Line, Token};
use super::operands::{check_sources, destination_dir, expand_home};
use super::relay::{any_address, wait_listening, Relay};
use super::{exit_code, fail, failure_of, spawn_ltx, Role, Running, PRIVATE_KEY_FROM_STDIN};

/// How long the remote end waits for the local side's UDP check to end
/// with `go`: the local side gives up long before.
const CHECK_LIMIT: Duration = Duration::from_secs(300);

/// The lines of the receiver's stderr kept to show if it fails.
const KEPT_LINES: usize = 200;

/// What the local side asked for on the command line.
pub(super) struct RemoteEnd<'a> {
    /// Receive (push) or send (pull).
    pub(super) role: Role,
    /// The local side's one-time public key.
    pub(super) peer: PublicKey,
    /// The UDP port to bind (0: any).
    pub(super) port: u16,
    /// Bind an IPv6 address (the local side reaches this host over IPv6).
    pub(super) ipv6: bool,
    /// The directory (receive) or the files (send).
    pub(super) paths: &'a [String],
    /// Options for the child: `--timeout`, `-r`, `--force`, `--json`.
    pub(super) child_options: Vec<String>,
}

/// What the local side says on stdin after the token.
enum Control {
    Go,
    Closed,
}

/// Runs the remote end; returns the exit code of its ltx child.
pub(super) fn run(end: &RemoteEnd) -> anyhow::Result<u8> {
    let host = hostname();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let paths: Vec<PathBuf> = end
        .paths
        .iter()
        .map(|p| expand_home(p, home.as_deref()))
        .collect();
    match end.role {
        Role::Receive => {
            let [dir] = end.paths else {
                bail!("the remote end receives into one directory");
            };
            destination_dir(&expand_home(dir, home.as_deref()).to_string_lossy(), &host)?;
        }
        Role::Send => check_sources(&paths, &host)?,
    }
    let mut stdin = BufReader::new(std::io::stdin());
    let mut first = String::new();
    stdin
        .read_line(&mut first)
        .context("reading the token from the local side")?;
    let token = Token::parse(&first).ok_or_else(|| anyhow!("no token from the local side"))?;
    let controls = watch_stdin(stdin)?;

    let keypair = ltx::generate_keypair();
    let socket = bind_public(end.port, end.ipv6, &host)?;
    let bound = socket.local_addr().context("the bound address")?;
    emit(&Line::Ready {
        port: bound.port(),
        key: keypair.public(),
        bound: bound.ip(),
    })?;
    let Some(local) = answer_checks(&socket, token, &controls)? else {
        return Ok(1);
    };
    let ltx = LtxChild {
        exe: std::env::current_exe().context("finding this ltx program")?,
        keypair: &keypair,
        peer: end.peer,
        options: &end.child_options,
    };
    let (mut child, _relay) = match end.role {
        Role::Receive => {
            drop(socket);
            (ltx.recv(bound, &paths[0], &host)?, None)
        }
        Role::Send => {
            let (child, relay) = ltx.send(socket, local, &paths, token)?;
            (child, Some(relay))
        }
    };
    let stdout = child.stdout.take().map(forward_stdout);
    let stderr = child
        .stderr
        .take()
        .map(|e| collect_stderr(e, &host, end.role));
    emit(&Line::Started)?;
    loop {
        if child.try_wait().context("waiting for ltx")?.is_some() {
            break;
        }
        match controls.recv_timeout(Duration::from_millis(50)) {
            Ok(Control::Closed) | Err(RecvTimeoutError::Disconnected) => {
                let _ = child.kill();
                break;
            }
            Ok(Control::Go) | Err(RecvTimeoutError::Timeout) => {}
        }
    }
    let code = finish_child(&mut child, &host, stdout.zip(stderr));
    let _ = emit(&Line::Exit(code));
    Ok(code)
}

/// The remote end's ltx child: its key, the local side's public key,
/// and the options the local side passed on.
struct LtxChild<'a> {
    exe: PathBuf,
    keypair: &'a ltx::StaticKeypair,
    peer: PublicKey,
    options: &'a [String],
}

impl LtxChild<'_> {
    fn command(&self, subcommand: &str) -> Vec<OsString> {
        [subcommand, "--key", PRIVATE_KEY_FROM_STDIN, "--peer"]
            .into_iter()
            .map(OsString::from)
            .chain([OsString::from(self.peer.to_string())])
            .chain(self.options.iter().map(OsString::from))
            .collect()
    }

    /// `ltx recv --once` of a push, on the port the check went through
    /// (just released); returns once it listens there.
    fn recv(&self, listen: SocketAddr, dir: &Path, host: &str) -> anyhow::Result<Running> {
        let mut args = self.command("recv");
        args.extend(["--once", "--listen"].map(OsString::from));
        args.push(listen.to_string().into());
        let mut dir_arg = OsString::from("--dir=");
        dir_arg.push(dir);
        args.push(dir_arg);
        let mut child = spawn_ltx(
            &self.exe,
            &args,
            self.keypair,
            Stdio::null(),
            Stdio::piped(),
        )?;
        if let Err(e) = wait_listening(listen, &mut child, Duration::from_secs(10)) {
            let _ = child.kill();
            let code = finish_child(&mut child, host, None);
            return Err(fail(failure_of(code), format!("on {host}: {e:#}")));
        }
        Ok(child)
    }

    /// `ltx send` of a pull, to a loopback socket relayed through
    /// `socket`, which the check connected to the local side at `local`.
    fn send(
        &self,
        socket: UdpSocket,
        local: SocketAddr,
        paths: &[PathBuf],
        token: Token,
    ) -> anyhow::Result<(Running, Relay)> {
        let inner = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).context("a loopback socket")?;
        let inner_addr = inner.local_addr().context("the loopback address")?;
        socket
            .connect(local)
            .context("connecting to the local side")?;
        let relay = Relay::start(socket, inner, None, token)?;
        let mut args = self.command("send");
        args.push("--".into());
        args.extend(paths.iter().map(Into::into));
        args.push(inner_addr.to_string().into());
        let child = spawn_ltx(
            &self.exe,
            &args,
            self.keypair,
            Stdio::piped(),
            Stdio::piped(),
        )?;
        Ok((child, relay))
    }
}

/// Reaps the child, waits for its output to be passed on, and shows the
/// stderr kept if it failed; returns its exit code.
fn finish_child(
    child: &mut Running,
    host: &str,
    output: Option<(JoinHandle<()>, JoinHandle<Vec<String>>)>,
) -> u8 {
    let code = match child.wait() {
        Ok(status) => exit_code(status),
        Err(_) => 1,
    };
    let kept = match output {
        Some((stdout, stderr)) => {
            let _ = stdout.join();
            stderr.join().unwrap_or_default()
        }
        None => child
            .stderr
            .take()
            .map(|e| BufReader::new(e).lines().map_while(Result::ok).collect())
            .unwrap_or_default(),
    };
    if code != 0 {
        let mut err = std::io::stderr().lock();
        for line in kept {
            let _ = writeln!(err, "{host}: {line}");
        }
    }
    code
}

/// Writes one line for the local side; an error means it is gone.
fn emit(line: &Line) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .context("writing to the local side")
}

/// Passes the local side's `go` and the end of its input on as they come.
fn watch_stdin(stdin: BufReader<std::io::Stdin>) -> anyhow::Result<Receiver<Control>> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("ltx-cp-stdin".into())
        .spawn(move || {
            for line in stdin.lines() {
                match line {
                    Ok(line) if line.trim() == "go" => {
                        let _ = tx.send(Control::Go);
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(Control::Closed);
        })
        .context("starting the stdin thread")?;
    Ok(rx)
}

/// Binds the UDP port: on the address the ssh connection came in on, as
/// mosh-server does, so that on a host with several addresses the answers
/// leave from the address the local side sends to; on every address of
/// the family if that address is not of it or cannot be bound.
fn bind_public(port: u16, ipv6: bool, host: &str) -> anyhow::Result<UdpSocket> {
    let in_use = |e: std::io::Error| {
        anyhow::Error::new(e).context(format!(
            "UDP port {port} is in use on {host}: choose another with --port"
        ))
    };
    let ssh_address = std::env::var("SSH_CONNECTION")
        .ok()
        .and_then(|c| c.split_whitespace().nth(2)?.parse::<IpAddr>().ok())
        .map(|ip| ip.to_canonical())
        .filter(|ip| ip.is_ipv6() == ipv6);
    if let Some(ip) = ssh_address {
        match UdpSocket::bind((ip, port)) {
            Ok(socket) => return Ok(socket),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => return Err(in_use(e)),
            Err(_) => {}
        }
    }
    let any = SocketAddr::new(any_address(ipv6).ip(), port);
    UdpSocket::bind(any).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            in_use(e)
        } else {
            anyhow::Error::new(e).context(format!("binding UDP {any} on {host}"))
        }
    })
}

/// Answers every UDP check of `token` until the local side says `go`;
/// returns where the first check came from, or `None` if the local side
/// went away first.
fn answer_checks(
    socket: &UdpSocket,
    token: Token,
    controls: &Receiver<Control>,
) -> anyhow::Result<Option<SocketAddr>> {
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .context("setting the socket's time-out")?;
    let ack = token.datagram(Check::Ack);
    let mut first = None;
    let mut buf = [0; 64];
    let deadline = Instant::now() + CHECK_LIMIT;
    while Instant::now() < deadline {
        match controls.try_recv() {
            Ok(Control::Go) => {
                return first
                    .map(Some)
                    .ok_or_else(|| anyhow!("the local side said go before any UDP check"));
            }
            Ok(Control::Closed) | Err(TryRecvError::Disconnected) => return Ok(None),
            Err(TryRecvError::Empty) => {}
        }
        if let Ok((n, from)) = socket.recv_from(&mut buf) {
            if token.is(Check::Hello, &buf[..n]) {
                let _ = socket.send_to(&ack, from);
                if first.is_none() {
                    first = Some(from);
                    emit(&Line::Hello(from))?;
                }
            }
        }
    }
    bail!("no go from the local side within {CHECK_LIMIT:?}")
}

/// Passes each line of the child's stdout to the local side.
fn forward_stdout(stdout: ChildStdout) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if emit(&Line::Out(line)).is_err() {
                break;
            }
        }
    })
}

/// The child's stderr: a sender's lines go to the local side as they come
/// (a skipped file is news even when all goes well); a receiver's are
/// kept, to be shown only if it fails (the sender already reports what
/// matters, a refusal included).
fn collect_stderr(stderr: ChildStderr, host: &str, role: Role) -> JoinHandle<Vec<String>> {
    let host = host.to_owned();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            match role {
                Role::Send => {
                    let _ = writeln!(std::io::stderr().lock(), "{host}: {line}");
                }
                Role::Receive => {
                    if kept.len() == KEPT_LINES {
                        kept.remove(0);
                    }
                    kept.push(line);
                }
            }
        }
        kept
    })
}

/// This host's name, for messages.
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, which is passed.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(name) if ok && !name.is_empty() => name.to_owned(),
        _ => "the remote host".to_owned(),
    }
}
