//! The local side of `ltx cp`: starts the remote end over ssh, checks
//! that UDP gets through, then runs the local `ltx send` (push) or
//! `ltx recv` (pull) and watches both ends to their exit.
//!
//! The remote end always listens and this side always sends first, in
//! both directions: the machine a user types on is the one usually behind
//! NAT, and the port to open is on the host that ssh already reaches.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ltx::PublicKey;
use ltx_cli::exit::Failure;

use super::control::{Check, Line, Token};
use super::operands::{check_sources, destination_dir, shell_quote, Plan};
use super::relay::{any_address, free_loopback_port, wait_listening, Relay};
use super::ssh::{udp_addresses, HostConfig, Next, Session, Ssh};
use super::{exit_code, fail, failure_of, spawn_ltx, CpArgs, Running, PRIVATE_KEY_FROM_STDIN};

/// The longest the UDP check waits for an answer.
const CHECK_WINDOW: Duration = Duration::from_secs(10);

/// How often the UDP check sends its hello.
const CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// How long one end may outlive the other once the transfer has ended:
/// each learns of the end through the connection's close.
const GRACE: Duration = Duration::from_secs(10);

/// How long the local child may outlive a remote end that failed: a
/// receiver waiting for a sender that never came stops sooner.
const GRACE_AFTER_FAILURE: Duration = Duration::from_secs(2);

/// What the remote command line starts with: a POSIX shell that finds
/// ltx on the PATH of an ssh session, which often lacks ~/.cargo/bin
/// (shell start-up files add it for interactive shells only), then there.
/// Run through `sh` so that it works whatever the user's login shell.
const FIND_LTX: &str = r#"PATH="$PATH:$HOME/.cargo/bin"; exec "$0" "$@""#;

/// Where this machine is, in messages.
const HERE: &str = "this machine";

/// Runs a copy: the exit code of its outcome.
pub(super) fn run(args: &CpArgs, plan: &Plan) -> anyhow::Result<u8> {
    let interrupted = watch_signals()?;
    match plan {
        Plan::Push { sources, .. } => check_sources(sources, HERE)?,
        Plan::Pull { to, .. } => {
            destination_dir(&to.to_string_lossy(), HERE)?;
        }
    }
    let remote = plan.remote();
    let host = remote.host.as_str();
    let ssh = Ssh::parse(&args.ssh).map_err(|e| fail(Failure::Usage, format!("{e:#}")))?;
    let config = ssh.host_config(&remote.destination, host);
    let addresses = udp_destinations(args, &config, host)?;

    let keypair = ltx::generate_keypair();
    let token = Token::random()?;
    let command = remote_command(args, plan, keypair.public(), addresses[0].is_ipv6());
    let mut session = ssh.start(&remote.destination, &command)?;
    session.say(&token.to_string());
    let ready = wait_ready(&mut session, args, host, &interrupted)?;
    // The address the remote end bound, if the name has it: the one ssh
    // came in on.
    let ip = if addresses.contains(&ready.bound) {
        ready.bound
    } else {
        addresses[0]
    };
    let target = SocketAddr::new(ip, ready.port);
    let window = args.timeout.min(CHECK_WINDOW);
    let (socket, answered_from) =
        check_udp(&mut session, target, token, window, host, &interrupted).map_err(|e| {
            match (&config.proxy, &args.udp_host) {
                (Some(proxy), None) => e.context(format!(
                    "ssh reaches {host} through {proxy}: if UDP cannot go there directly, \
                     give its address with --udp-host"
                )),
                _ => e,
            }
        })?;

    let ltx = LtxChild {
        args,
        keypair: &keypair,
        peer: ready.key,
    };
    let (mut child, relay) = match plan {
        Plan::Push { sources, .. } => {
            drop(socket);
            session.say("go");
            wait_started(&mut session, host, &interrupted)?;
            (ltx.send(sources, target)?, None)
        }
        Plan::Pull { to, .. } => {
            let (child, listen) = ltx.recv(to)?;
            socket
                .connect(answered_from)
                .with_context(|| format!("connecting to {answered_from}"))?;
            let inner = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).context("a loopback socket")?;
            let relay = Relay::start(socket, inner, Some(listen), token)?;
            session.say("go");
            (child, Some(relay))
        }
    };
    let ends = supervise(&mut session, &mut child, &interrupted);
    drop(relay);
    let ssh_status = session.finish(Duration::from_secs(5));
    let ends = ends?;
    if ends.remote.is_none() {
        let status = ssh_status.map_or("killed".into(), |s| s.to_string());
        eprintln!(
            "ltx cp: the ssh session to {host} ended before ltx there finished (ssh: {status})"
        );
    }
    Ok(ends.outcome(plan))
}

/// Turns SIGINT, SIGTERM and SIGHUP into a flag, so that an interrupted
/// copy still stops both ends.
fn watch_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&interrupted))
            .context("handling signals")?;
    }
    Ok(interrupted)
}

/// The addresses UDP may go to: those of `--udp-host`, else those of the
/// host name in the ssh config, of the family ssh uses.
fn udp_destinations(args: &CpArgs, config: &HostConfig, host: &str) -> anyhow::Result<Vec<IpAddr>> {
    match &args.udp_host {
        Some(name) => udp_addresses(name, "any"),
        None => udp_addresses(&config.hostname, &config.family),
    }
    .map_err(|e| {
        let proxy = match &config.proxy {
            Some(proxy) => format!(" (ssh reaches it through {proxy})"),
            None => String::new(),
        };
        fail(
            Failure::Unreachable,
            format!(
                "{e:#}: ltx cp sends its data over UDP to {host} directly{proxy}; \
                 give the address to use with --udp-host"
            ),
        )
    })
}

/// This side's ltx child: its key, and the remote end's public key.
struct LtxChild<'a> {
    args: &'a CpArgs,
    keypair: &'a ltx::StaticKeypair,
    peer: PublicKey,
}

impl LtxChild<'_> {
    /// The options both children take: the key on stdin, the time-out,
    /// the one peer.
    fn command(&self, subcommand: &str) -> Vec<OsString> {
        let timeout = format!("{}ms", self.args.timeout.as_millis());
        [
            subcommand,
            "--key",
            PRIVATE_KEY_FROM_STDIN,
            "--timeout",
            &timeout,
            "--peer",
        ]
        .into_iter()
        .map(OsString::from)
        .chain([OsString::from(self.peer.to_string())])
        .collect()
    }

    /// `ltx send` of a push, to the remote receiver at `target`; its
    /// progress and summary go to this process's terminal and stdout.
    fn send(&self, sources: &[PathBuf], target: SocketAddr) -> anyhow::Result<Running> {
        let mut ltx = self.command("send");
        ltx.extend(self.args.recursive.then(|| "-r".into()));
        ltx.extend(self.args.json.then(|| "--json".into()));
        ltx.push("--".into());
        ltx.extend(sources.iter().map(Into::into));
        ltx.push(target.to_string().into());
        spawn_ltx(
            &ltx_program()?,
            &ltx,
            self.keypair,
            Stdio::inherit(),
            Stdio::inherit(),
        )
    }

    /// `ltx recv --once` of a pull, listening on a loopback port for the
    /// relay; returns once it listens there.
    fn recv(&self, to: &Path) -> anyhow::Result<(Running, SocketAddr)> {
        let listen = free_loopback_port()?;
        let mut ltx = self.command("recv");
        ltx.extend(["--once", "--listen"].map(OsString::from));
        ltx.push(listen.to_string().into());
        ltx.extend(self.args.force.then(|| "--force".into()));
        ltx.extend(self.args.json.then(|| "--json".into()));
        let mut dir = OsString::from("--dir=");
        dir.push(to);
        ltx.push(dir);
        // Its progress bars need the terminal; elsewhere its first line,
        // where it listens on loopback for the relay, is noise.
        let bars = !self.args.json && std::io::stderr().is_terminal();
        let stderr = if bars {
            Stdio::inherit()
        } else {
            Stdio::piped()
        };
        let mut child = spawn_ltx(&ltx_program()?, &ltx, self.keypair, Stdio::null(), stderr)?;
        if let Some(stderr) = child.stderr.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().skip(1).map_while(Result::ok) {
                    eprintln!("{line}");
                }
            });
        }
        wait_listening(listen, &mut child, Duration::from_secs(10))?;
        Ok((child, listen))
    }
}

/// This program, which runs the local `ltx send` or `ltx recv`.
fn ltx_program() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("finding this ltx program")
}

/// What the remote end said when it was ready.
struct Ready {
    port: u16,
    key: PublicKey,
    bound: IpAddr,
}

/// The command ssh runs on the remote host: `ltx cp --remote-end`, found
/// by [`FIND_LTX`], every word quoted for the remote shell.
fn remote_command(args: &CpArgs, plan: &Plan, key: PublicKey, ipv6: bool) -> String {
    let (role, paths) = match plan {
        Plan::Push { to, .. } => ("receive", vec![to.path.clone()]),
        Plan::Pull { from, .. } => ("send", from.iter().map(|r| r.path.clone()).collect()),
    };
    let mut words: Vec<String> = ["sh", "-c", FIND_LTX]
        .iter()
        .map(|w| w.to_string())
        .collect();
    words.push(args.remote_ltx.clone());
    words.extend(["cp", "--remote-end", role, "--peer"].map(String::from));
    words.push(key.to_string());
    words.push("--port".into());
    words.push(args.port.to_string());
    words.push("--timeout".into());
    words.push(format!("{}ms", args.timeout.as_millis()));
    words.extend(ipv6.then(|| "--ipv6".into()));
    words.extend(args.recursive.then(|| "-r".into()));
    words.extend(args.force.then(|| "--force".into()));
    words.extend(args.json.then(|| "--json".into()));
    words.push("--".into());
    words.extend(paths);
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Waits for the remote end's `ready`; an ssh session that ends first is
/// explained by its exit status.
fn wait_ready(
    session: &mut Session,
    args: &CpArgs,
    host: &str,
    interrupted: &AtomicBool,
) -> anyhow::Result<Ready> {
    loop {
        if interrupted.load(Ordering::Relaxed) {
            return Err(fail(Failure::Other, "interrupted".into()));
        }
        match session.next(Duration::from_millis(100)) {
            Next::Line(Line::Ready { port, key, bound }) => return Ok(Ready { port, key, bound }),
            Next::Line(Line::Version(theirs)) => {
                return Err(fail(
                    Failure::Other,
                    format!(
                        "the ltx on {host} speaks version {theirs} of ltx cp, this one {}: \
                         install the same ltx on both machines",
                        super::control::VERSION
                    ),
                ));
            }
            Next::Line(_) | Next::Nothing => {}
            Next::Ended => break,
        }
    }
    let status = session.finish(Duration::from_secs(5));
    let code = status.and_then(|s| s.code());
    let ltx = &args.remote_ltx;
    Err(match code {
        Some(255) => fail(
            Failure::Other,
            format!("ssh could not run ltx on {host} (ssh's message is above)"),
        ),
        Some(127) => {
            let looked = if ltx.contains('/') {
                String::new()
            } else {
                " (looked for on the PATH of its ssh sessions and in ~/.cargo/bin)".into()
            };
            fail(
                Failure::Other,
                format!(
                    "{ltx}: command not found on {host}{looked}: install ltx there with \
                     `cargo install --path crates/ltx-cli` from a checkout of ltx, \
                     or give its path with --remote-ltx"
                ),
            )
        }
        Some(126) => fail(
            Failure::Other,
            format!("{ltx} on {host} cannot be run (its message is above)"),
        ),
        Some(2) => fail(
            Failure::Other,
            format!(
                "the ltx on {host} refused ltx cp's command line (its message is above): \
                 an older version? Install the same ltx on both machines"
            ),
        ),
        Some(code) => fail(
            failure_of(u8::try_from(code).unwrap_or(1)),
            format!("ltx on {host} stopped before it was ready (its message is above)"),
        ),
        None => fail(
            Failure::Other,
            format!("the ssh session to {host} ended before ltx there was ready"),
        ),
    })
}

/// Sends the UDP check to `target` until its answer comes back; returns
/// the socket it used (a NAT on the way now maps it) and where the answer
/// came from. No answer means UDP is blocked while ssh works; the message
/// says which way when the remote end saw the check arrive.
fn check_udp(
    session: &mut Session,
    target: SocketAddr,
    token: Token,
    window: Duration,
    host: &str,
    interrupted: &AtomicBool,
) -> anyhow::Result<(UdpSocket, SocketAddr)> {
    let socket = UdpSocket::bind(any_address(target.is_ipv6()))
        .and_then(|s| {
            s.set_read_timeout(Some(Duration::from_millis(20)))
                .map(|()| s)
        })
        .with_context(|| format!("a UDP socket for {target}"))?;
    let hello = token.datagram(Check::Hello);
    let started = Instant::now();
    let mut next_hello = started;
    let mut arrived = None;
    let mut send_error = None;
    let mut buf = [0; 64];
    while started.elapsed() < window {
        if interrupted.load(Ordering::Relaxed) {
            return Err(fail(Failure::Other, "interrupted".into()));
        }
        if Instant::now() >= next_hello {
            if let Err(e) = socket.send_to(&hello, target) {
                send_error = Some(e);
            }
            next_hello += CHECK_INTERVAL;
        }
        if let Ok((n, from)) = socket.recv_from(&mut buf) {
            if token.is(Check::Ack, &buf[..n]) {
                return Ok((socket, from));
            }
        }
        match session.next(Duration::ZERO) {
            Next::Line(Line::Hello(from)) => arrived = Some(from),
            Next::Line(Line::Exit(_)) | Next::Ended => {
                return Err(fail(
                    Failure::Other,
                    format!("ltx on {host} stopped during the UDP check (its message is above)"),
                ));
            }
            Next::Line(_) | Next::Nothing => {}
        }
    }
    let port = target.port();
    let seconds = window.as_secs_f64();
    let message = match arrived {
        Some(from) => format!(
            "UDP reaches {host} (port {port}, from {from}) but its answers do not come back \
             within {seconds:.0} s (ssh works): a firewall on this side drops UDP from {target}; \
             let it in, or choose another port with --port"
        ),
        None => {
            let error = send_error.map_or(String::new(), |e| format!(" (sending: {e})"));
            let address = if host.parse::<IpAddr>().ok() == Some(target.ip()) {
                String::new()
            } else {
                format!(" ({})", target.ip())
            };
            format!(
                "UDP port {port} on {host}{address} seems blocked: ssh works, but nothing \
                 came back over UDP within {seconds:.0} s{error}; open UDP port {port} \
                 (inbound) on {host} and any firewall on the way, or choose another port \
                 with --port"
            )
        }
    };
    Err(fail(Failure::Unreachable, message))
}

/// Waits for the remote end's `started`: its receiver listens.
fn wait_started(session: &mut Session, host: &str, interrupted: &AtomicBool) -> anyhow::Result<()> {
    loop {
        if interrupted.load(Ordering::Relaxed) {
            return Err(fail(Failure::Other, "interrupted".into()));
        }
        match session.next(Duration::from_millis(100)) {
            Next::Line(Line::Started) => return Ok(()),
            Next::Line(Line::Exit(code)) => {
                return Err(fail(
                    failure_of(code),
                    format!("ltx recv on {host} did not start (its message is above)"),
                ));
            }
            Next::Ended => {
                return Err(fail(
                    Failure::Other,
                    format!(
                        "ltx on {host} stopped before its receiver started (its message is above)"
                    ),
                ));
            }
            Next::Line(_) | Next::Nothing => {}
        }
    }
}

/// How each end finished: its exit code, `None` if not known (killed, or
/// the ssh session lost).
struct Ends {
    local: Option<u8>,
    remote: Option<u8>,
}

impl Ends {
    /// The copy's exit code: the sender's, which succeeded only if the
    /// receiver said every file is stored and verified; else the
    /// receiver's, which ended well only if it got every file offered.
    fn outcome(&self, plan: &Plan) -> u8 {
        let (sender, receiver) = match plan {
            Plan::Push { .. } => (self.local, self.remote),
            Plan::Pull { .. } => (self.remote, self.local),
        };
        match (sender, receiver) {
            (Some(code), _) | (None, Some(code)) => code,
            (None, None) => 1,
        }
    }
}

/// Watches both ends to their exit, passing the remote end's output on;
/// once one has ended the other gets [`GRACE`] to follow (less if the
/// remote end failed). A signal stops
/// both (dropping the session ends the remote end).
fn supervise(
    session: &mut Session,
    child: &mut Running,
    interrupted: &AtomicBool,
) -> anyhow::Result<Ends> {
    let mut local = None;
    let mut remote = None;
    let mut remote_gone = false;
    let mut first_end: Option<Instant> = None;
    loop {
        if interrupted.load(Ordering::Relaxed) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(fail(Failure::Other, "interrupted".into()));
        }
        match session.next(Duration::from_millis(50)) {
            Next::Line(Line::Out(text)) => {
                let _ = writeln!(std::io::stdout().lock(), "{text}");
            }
            Next::Line(Line::Exit(code)) => remote = Some(code),
            Next::Ended => remote_gone = true,
            Next::Line(_) | Next::Nothing => {}
        }
        if local.is_none() {
            if let Some(status) = child.try_wait().context("waiting for ltx")? {
                local = Some(exit_code(status));
            }
        }
        let remote_done = remote.is_some() || remote_gone;
        if local.is_some() && remote_done {
            break;
        }
        let grace = match remote {
            Some(code) if code != 0 && local.is_none() => GRACE_AFTER_FAILURE,
            _ => GRACE,
        };
        let one_ended = local.is_some() || remote_done;
        if one_ended && first_end.get_or_insert_with(Instant::now).elapsed() > grace {
            if local.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
            break;
        }
    }
    Ok(Ends { local, remote })
}
