//! Named network namespaces, created with iproute2 and deleted when their
//! handle is dropped.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};

use crate::preflight::ip_command;
use crate::EmuError;

/// Where `ip netns add` mounts the namespaces it names.
const NETNS_DIR: &str = "/run/netns";

/// Numbers namespace pairs within this process; with the process id it
/// makes names that parallel runs do not share.
static NEXT_PAIR: AtomicU32 = AtomicU32::new(0);

/// A named network namespace (`ip netns add`), deleted on drop.
///
/// Processes still inside it keep it alive after that, unnamed, until they
/// exit.
#[derive(Debug)]
pub struct NetNamespace {
    name: String,
}

impl NetNamespace {
    /// Creates two namespaces named `ltx<pid>-<n>c` and `ltx<pid>-<n>s`,
    /// with `n` the first number for which neither name is taken (a
    /// leftover of an earlier process with the same id is skipped, not
    /// reused).
    pub fn create_pair() -> Result<(NetNamespace, NetNamespace), EmuError> {
        let pid = std::process::id();
        loop {
            let n = NEXT_PAIR.fetch_add(1, Ordering::Relaxed);
            let client = format!("ltx{pid}-{n}c");
            let server = format!("ltx{pid}-{n}s");
            if path_of(&client).exists() || path_of(&server).exists() {
                continue;
            }
            let client = NetNamespace::create(client)?;
            let server = NetNamespace::create(server)?;
            return Ok((client, server));
        }
    }

    /// Creates the namespace `name`.
    pub fn create(name: String) -> Result<NetNamespace, EmuError> {
        run_ip(&["netns", "add", &name], None)?;
        let namespace = NetNamespace { name };
        namespace.ip_batch("link set dev lo up\n")?;
        Ok(namespace)
    }

    /// The namespace's name, for `ip netns exec` and `ip -n`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the namespace is mounted.
    pub fn path(&self) -> PathBuf {
        path_of(&self.name)
    }

    /// A command that runs `program` inside the namespace (through
    /// `ip netns exec`, which also shows it the namespace's own `/sys`).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(ip_command());
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }

    /// Runs iproute2 commands (one per line, as `ip -batch` reads them)
    /// in the namespace.
    pub fn ip_batch(&self, commands: &str) -> Result<(), EmuError> {
        run_ip(&["-n", &self.name, "-batch", "-"], Some(commands))
    }

    /// Runs `work` on a thread of its own that has entered the namespace,
    /// and returns what it returned. Sockets and devices it opens belong to
    /// the namespace and stay there when used from other threads.
    pub fn run_inside<T, F>(&self, work: F) -> Result<T, EmuError>
    where
        T: Send,
        F: FnOnce() -> T + Send,
    {
        let file = File::open(self.path()).map_err(|e| self.enter_failed(e))?;
        std::thread::scope(|scope| {
            let thread = scope.spawn(|| {
                move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))
                    .map_err(io::Error::from)?;
                Ok(work())
            });
            match thread.join() {
                Ok(result) => result.map_err(|e| self.enter_failed(e)),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// Starts `work` on a thread of its own inside the namespace, as
    /// [`run_inside`](NetNamespace::run_inside) does, without waiting for
    /// it. The thread's result is an error if it could not enter.
    pub fn spawn_inside<T, F>(
        &self,
        work: F,
    ) -> Result<std::thread::JoinHandle<io::Result<T>>, EmuError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let file = File::open(self.path()).map_err(|e| self.enter_failed(e))?;
        std::thread::Builder::new()
            .name(format!("{}-inside", self.name))
            .spawn(move || {
                move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))?;
                Ok(work())
            })
            .map_err(|e| self.enter_failed(e))
    }

    fn enter_failed(&self, error: io::Error) -> EmuError {
        EmuError::Enter {
            namespace: self.name.clone(),
            error,
        }
    }
}

impl Drop for NetNamespace {
    /// Deletes the namespace's name; a failure is logged.
    fn drop(&mut self) {
        if let Err(error) = run_ip(&["netns", "delete", &self.name], None) {
            tracing::warn!(%error, "cannot delete a network namespace");
        }
    }
}

fn path_of(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

/// Runs `ip` with `args`, `stdin` fed to it if given; an error carries its
/// message.
fn run_ip(args: &[&str], stdin: Option<&str>) -> Result<(), EmuError> {
    let failed = |detail: String| EmuError::Ip {
        args: args.join(" "),
        detail,
    };
    let mut child = Command::new(ip_command())
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .map_err(|e| failed(e.to_string()))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        let message = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        Err(failed(format!("{}: {message}", output.status)))
    }
}
