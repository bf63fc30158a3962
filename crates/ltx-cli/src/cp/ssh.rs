//! The ssh side of `ltx cp`: the system's OpenSSH client, so that the
//! user's config, agent and known hosts apply; where its config says the
//! host is; and the session that runs the remote end.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::control::Line;
use super::operands::split_words;

/// Options that keep the session a plain pipe, as scp sets them: no X11
/// or agent forwarding, no terminal, no forwarded ports, no local or
/// configured remote command. Given before the user's, so they hold.
const SESSION_OPTIONS: [&str; 6] = [
    "-x",
    "-oForwardAgent=no",
    "-oPermitLocalCommand=no",
    "-oClearAllForwardings=yes",
    "-oRemoteCommand=none",
    "-oRequestTTY=no",
];

/// The ssh command: a program and the user's options (`--ssh`).
#[derive(Debug, Clone)]
pub(super) struct Ssh {
    program: String,
    options: Vec<String>,
}

/// What the ssh config says about a destination (`ssh -G`).
#[derive(Debug, Clone, Default)]
pub(super) struct HostConfig {
    /// The name or address ssh connects to (`HostName`).
    pub(super) hostname: String,
    /// `inet`, `inet6` or `any` (`AddressFamily`).
    pub(super) family: String,
    /// The proxy ssh goes through, if any (`ProxyJump`, `ProxyCommand`):
    /// then the host may not be reachable from here over UDP.
    pub(super) proxy: Option<String>,
}

impl Ssh {
    /// Reads `--ssh`: a program and its options, split as a shell would.
    pub(super) fn parse(command: &str) -> anyhow::Result<Ssh> {
        let mut words = split_words(command)?.into_iter();
        let Some(program) = words.next() else {
            bail!("--ssh is empty: give the ssh command, such as \"ssh -p 2222\"");
        };
        Ok(Ssh {
            program,
            options: words.collect(),
        })
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(SESSION_OPTIONS).args(&self.options);
        command
    }

    /// Where `destination` leads by the ssh config (`ssh -G`, OpenSSH 6.8
    /// and later); `fallback` as the host name where that fails.
    pub(super) fn host_config(&self, destination: &str, fallback: &str) -> HostConfig {
        let output = Command::new(&self.program)
            .args(&self.options)
            .arg("-G")
            .arg(destination)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        let mut config = HostConfig {
            hostname: fallback.to_owned(),
            family: "any".into(),
            proxy: None,
        };
        let Some(output) = output.ok().filter(|o| o.status.success()) else {
            return config;
        };
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "hostname" => config.hostname = value.to_owned(),
                "addressfamily" => config.family = value.to_owned(),
                "proxyjump" | "proxycommand" if value != "none" => {
                    config.proxy = Some(format!("{key} {value}"));
                }
                _ => {}
            }
        }
        config
    }

    /// Starts `remote_command` on `destination`; the session's stdin and
    /// stdout are pipes, its stderr (ssh's own messages and the remote
    /// end's) goes to this process's stderr as it comes.
    pub(super) fn start(&self, destination: &str, remote_command: &str) -> anyhow::Result<Session> {
        let mut child = self
            .command()
            .arg(destination)
            .arg(remote_command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                let hint = if e.kind() == std::io::ErrorKind::NotFound {
                    " (ltx cp runs the OpenSSH client: install it, or name it with --ssh)"
                } else {
                    ""
                };
                anyhow::Error::new(e).context(format!("starting {}{hint}", self.program))
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("ltx-cp-ssh".into())
            .spawn(move || {
                let mut reader = BufReader::new(stdout);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match reader.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let text = String::from_utf8_lossy(&buf);
                            let text = text.trim_end_matches(['\n', '\r']);
                            if tx.send(Line::parse(text)).is_err() {
                                break;
                            }
                        }
                    }
                }
            })
            .context("starting the ssh reader")?;
        Ok(Session {
            child,
            stdin,
            lines,
            ended: false,
        })
    }
}

/// Addresses of `hostname` for UDP, in the resolver's order, of the family
/// ssh is told to use.
pub(super) fn udp_addresses(hostname: &str, family: &str) -> anyhow::Result<Vec<IpAddr>> {
    let addresses: Vec<IpAddr> = (hostname, 0)
        .to_socket_addrs()
        .with_context(|| format!("looking up {hostname}"))?
        .map(|a| a.ip().to_canonical())
        .filter(|ip| match family {
            "inet" => ip.is_ipv4(),
            "inet6" => ip.is_ipv6(),
            _ => true,
        })
        .collect();
    if addresses.is_empty() {
        bail!("{hostname} has no address of the family ssh uses ({family})");
    }
    Ok(addresses)
}

/// A running ssh session: the remote end's lines, and its stdin. Dropping
/// it ends ssh, which ends the remote end.
pub(super) struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    ended: bool,
}

/// What [`Session::next`] saw.
#[derive(Debug)]
pub(super) enum Next {
    /// A line from the remote end.
    Line(Line),
    /// Nothing within the wait.
    Nothing,
    /// The session's output ended: ssh is exiting.
    Ended,
}

impl Session {
    /// Writes a line to the remote end; a failure shows later as the
    /// session's end, so it is not an error here.
    pub(super) fn say(&mut self, line: &str) {
        if let Some(stdin) = &mut self.stdin {
            if writeln!(stdin, "{line}")
                .and_then(|()| stdin.flush())
                .is_err()
            {
                self.stdin = None;
            }
        }
    }

    /// The next line, waiting at most `wait`.
    pub(super) fn next(&mut self, wait: Duration) -> Next {
        if self.ended {
            std::thread::sleep(wait);
            return Next::Ended;
        }
        match self.lines.recv_timeout(wait) {
            Ok(line) => Next::Line(line),
            Err(RecvTimeoutError::Timeout) => Next::Nothing,
            Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                Next::Ended
            }
        }
    }

    /// Closes the remote end's stdin, which stops it, and waits for ssh
    /// to exit, at most `within` before it is killed.
    pub(super) fn finish(&mut self, within: Duration) -> Option<ExitStatus> {
        self.stdin = None;
        let deadline = Instant::now() + within;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                }
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
