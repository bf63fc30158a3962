//! `ltx cp FILE... [user@]host:DIR` and `ltx cp [user@]host:FILE... DIR`:
//! files to or from a machine reached over ssh, with no key copied by
//! hand. mosh's bootstrap applied to files: ssh starts ltx on the other
//! machine with one-time keys, then the data goes over UDP.
//!
//! - [`operands`]: which operand is remote, which way the copy goes;
//! - [`ssh`]: the OpenSSH client, the host's config, the session;
//! - [`control`]: the lines over ssh and the UDP check;
//! - [`local`]: this machine's side; [`remote`]: the other's
//!   (`ltx cp --remote-end`, hidden from `--help`);
//! - [`relay`]: the UDP relay that lets a pull go through the port the
//!   remote host listens on.
//!
//! Both sides run this same program's `ltx send` and `ltx recv` as child
//! processes. How it works, and what port to open, is in docs/cp.md.

use std::ffi::OsString;
use std::fmt;
use std::io::Write;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use ltx::{PublicKey, StaticKeypair};
use ltx_cli::exit::Failure;
use ltx_sim::units::parse_duration;

mod control;
mod local;
mod operands;
mod relay;
mod remote;
mod ssh;

/// The `--key` that makes an ltx child read its private key from the pipe
/// its parent writes it to, so that no key file is ever written.
const PRIVATE_KEY_FROM_STDIN: &str = "/dev/stdin";

/// What `ltx cp --help` adds after the options.
const EXAMPLES: &str = "\
Examples:
  ltx cp -r photos notes.txt user@host:backup/   push into ~/backup/ on host
  ltx cp user@host:backup/notes.txt .            pull into this directory
  ltx cp --ssh \"ssh -p 2222\" big.iso host:/srv/  ssh options, as rsync's -e

The data goes over UDP port 7000 of the remote host (or --port): let it in
through that host's firewall; this machine needs no open port. ltx must be
installed on both machines. Exit codes: see ltx --help.";

/// The arguments of `ltx cp`.
#[derive(Debug, Args)]
#[command(
    override_usage = "ltx cp [OPTIONS] FILE... [user@]host:DIR\n       \
                      ltx cp [OPTIONS] [user@]host:FILE... DIR",
    after_help = EXAMPLES
)]
pub(crate) struct CpArgs {
    /// Local files then [user@]host:DIR (a push), or [user@]host:FILE...
    /// then a local DIR (a pull). DIR must exist, or end with / to be
    /// created; remote paths are relative to the remote home directory.
    #[arg(value_name = "SOURCE... DEST", required_unless_present = "remote_end")]
    operands: Vec<String>,
    /// Copy directories with everything in them (names keep their
    /// relative paths).
    #[arg(short = 'r', long)]
    recursive: bool,
    /// Replace existing files at the destination (once the new one is
    /// whole and verified).
    #[arg(long)]
    force: bool,
    /// Print the sender's summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// Give up when nothing is heard from the other end for this long;
    /// the UDP check waits at most 10 s of it.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// The UDP port the data goes through on the remote host, which its
    /// firewall must let in (0: any free port).
    #[arg(long, default_value_t = 7000)]
    port: u16,
    /// The ssh command and its options, as one string (like rsync's -e),
    /// e.g. "ssh -p 2222 -i ~/.ssh/other".
    #[arg(long, default_value = "ssh", value_name = "COMMAND")]
    ssh: String,
    /// The ltx program on the remote host (by default `ltx` on the PATH of
    /// its ssh sessions, then ~/.cargo/bin/ltx).
    #[arg(long, default_value = "ltx", value_name = "PATH")]
    remote_ltx: String,
    /// Where the UDP goes when the ssh destination does not lead there
    /// (ssh through a jump host, a NAT's port forward).
    #[arg(long, value_name = "HOST")]
    udp_host: Option<String>,
    /// Run as the remote end of `ltx cp` (started by ltx cp over ssh).
    #[arg(long, hide = true, value_name = "ROLE")]
    remote_end: Option<Role>,
    /// The remote end's peer: the local side's one-time public key.
    #[arg(long, hide = true, requires = "remote_end")]
    peer: Option<PublicKey>,
    /// The remote end binds an IPv6 address.
    #[arg(long, hide = true, requires = "remote_end")]
    ipv6: bool,
}

/// What the remote end does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Role {
    /// Runs `ltx recv` (a push).
    Receive,
    /// Runs `ltx send` (a pull).
    Send,
}

/// Runs `ltx cp`, either side. Exits with the code of the transfer's
/// outcome: an ltx child's failure was already told by the child.
pub(crate) fn run(args: &CpArgs) -> anyhow::Result<()> {
    let outcome = match args.remote_end {
        Some(role) => run_remote_end(args, role),
        None => operands::Plan::from_operands(&args.operands).and_then(|p| local::run(args, &p)),
    };
    match outcome {
        Ok(0) => Ok(()),
        Ok(code) => {
            let _ = std::io::stdout().flush();
            std::process::exit(code.into())
        }
        Err(e) => match e.chain().find_map(|c| c.downcast_ref::<CpError>()) {
            Some(failure) => {
                eprintln!("error: {e:#}");
                std::process::exit(failure.failure as i32)
            }
            None => Err(e),
        },
    }
}

fn run_remote_end(args: &CpArgs, role: Role) -> anyhow::Result<u8> {
    let Some(peer) = args.peer else {
        return Err(fail(Failure::Usage, "--remote-end needs --peer".into()));
    };
    let mut child_options = vec![
        "--timeout".to_owned(),
        format!("{}ms", args.timeout.as_millis()),
    ];
    match role {
        Role::Receive => child_options.extend(args.force.then(|| "--force".to_owned())),
        Role::Send => {
            child_options.extend(args.recursive.then(|| "-r".to_owned()));
            child_options.extend(args.json.then(|| "--json".to_owned()));
        }
    }
    remote::run(&remote::RemoteEnd {
        role,
        peer,
        port: args.port,
        ipv6: args.ipv6,
        paths: &args.operands,
        child_options,
    })
}

/// A failure of `ltx cp` itself, with the exit code it stands for; its
/// message says what to do.
#[derive(Debug)]
struct CpError {
    failure: Failure,
    message: String,
}

impl fmt::Display for CpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CpError {}

/// An error of `ltx cp` that exits with `failure`'s code.
fn fail(failure: Failure, message: String) -> anyhow::Error {
    anyhow::Error::new(CpError { failure, message })
}

/// The exit code an error of `ltx cp` stands for.
#[cfg(test)]
fn failure(error: &anyhow::Error) -> Option<Failure> {
    error
        .chain()
        .find_map(|c| c.downcast_ref::<CpError>())
        .map(|e| e.failure)
}

/// The failure an ltx child's exit code stands for.
fn failure_of(code: u8) -> Failure {
    match code {
        2 => Failure::Usage,
        3 => Failure::Unreachable,
        4 => Failure::Refused,
        5 => Failure::TimedOut,
        6 => Failure::LocalFile,
        7 => Failure::Integrity,
        _ => Failure::Other,
    }
}

/// A child's exit code; one killed by a signal counts as 1.
fn exit_code(status: ExitStatus) -> u8 {
    status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1))
}

/// An ltx child, killed if it still runs when dropped: no early return
/// leaves one running, waiting for a peer that will not come.
struct Running(Child);

impl std::ops::Deref for Running {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts the ltx program `exe` with `args` and writes the private key of
/// `keypair` to its stdin, which it reads as its `--key` file.
fn spawn_ltx(
    exe: &Path,
    args: &[OsString],
    keypair: &StaticKeypair,
    stdout: Stdio,
    stderr: Stdio,
) -> anyhow::Result<Running> {
    let child = std::process::Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let mut child = Running(child);
    let mut stdin = child.stdin.take().expect("piped");
    let written = writeln!(stdin, "{}", keypair.private_hex());
    drop(stdin);
    written.context("giving ltx its key")?;
    Ok(child)
}
