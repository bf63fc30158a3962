//! Running a program in each namespace: the server first, the client once
//! the server is ready, and the server stopped when the client is done.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use crate::{EmuError, Emulator};

/// How often a waiting loop looks at its processes and at the interrupt
/// flag.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long a stopped process has to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// The TCP state "listening" in `/proc/net/tcp`.
const TCP_LISTEN: &str = "0A";

/// When the client may start after the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerWait {
    /// Once a TCP socket listens or a UDP socket is bound in the server's
    /// namespace, or this long at most.
    Listening(Duration),
    /// After this long.
    Fixed(Duration),
}

/// How the client and server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The client's exit status; `None` if it never started (interrupted
    /// while the server was starting).
    pub client: Option<ExitStatus>,
    /// The server's exit status if it exited by itself before the client
    /// was done; `None` if it was still running and was stopped.
    pub server_exited: Option<ExitStatus>,
    /// Whether the run was interrupted (the client was stopped, or never
    /// started).
    pub interrupted: bool,
}

impl Emulator {
    /// Runs `server` (if any) in the server namespace and, once it is ready
    /// as `wait` says, `client` in the client namespace; waits for the client,
    /// then stops the server's process group (SIGTERM, SIGKILL two seconds
    /// later). Build both with [`NetNamespace::command`](crate::NetNamespace::command).
    /// When `interrupted` becomes true, the client is stopped the same way.
    pub fn run_commands(
        &self,
        server: Option<Command>,
        mut client: Command,
        wait: ServerWait,
        interrupted: &AtomicBool,
    ) -> Result<CommandOutcome, EmuError> {
        let mut server = match server {
            Some(mut command) => {
                // A group of its own, so that stopping it reaches whatever
                // it started, and a Ctrl-C meant for the client does not.
                command.process_group(0);
                let child = command.spawn().map_err(|error| EmuError::Command {
                    what: "cannot start the server command".into(),
                    error,
                })?;
                Some(ServerProcess::new(child))
            }
            None => None,
        };
        let mut server_exited = None;
        if let Some(process) = &mut server {
            server_exited = self.wait_for_server(process, wait, interrupted)?;
        }
        let client_run = if interrupted.load(Ordering::Relaxed) {
            Ok(None)
        } else {
            client
                .spawn()
                .map_err(|error| EmuError::Command {
                    what: "cannot start the client command".into(),
                    error,
                })
                .and_then(|mut child| wait_or_stop(&mut child, interrupted))
                .map(Some)
        };
        // The server is stopped whatever became of the client.
        if let Some(process) = server {
            process.stop()?;
        }
        let client_run = client_run?;
        Ok(CommandOutcome {
            client: client_run.map(|(status, _)| status),
            server_exited,
            interrupted: client_run.is_none_or(|(_, stopped)| stopped),
        })
    }

    /// Waits until the server is ready: returns its exit status if it
    /// exited first.
    fn wait_for_server(
        &self,
        server: &mut ServerProcess,
        wait: ServerWait,
        interrupted: &AtomicBool,
    ) -> Result<Option<ExitStatus>, EmuError> {
        let (limit, mut sockets) = match wait {
            ServerWait::Listening(limit) => (limit, Some(self.server_sockets()?)),
            ServerWait::Fixed(delay) => (delay, None),
        };
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline && !interrupted.load(Ordering::Relaxed) {
            if let Some(status) = server.try_wait()? {
                return Ok(Some(status));
            }
            if let Some(sockets) = &mut sockets {
                if sockets.any_ready().unwrap_or(false) {
                    return Ok(None);
                }
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        Ok(None)
    }

    fn server_sockets(&self) -> Result<SocketTables, EmuError> {
        self.server()
            .run_inside(|| -> io::Result<SocketTables> {
                let open = |name: &str| File::open(format!("/proc/thread-self/net/{name}"));
                Ok(SocketTables {
                    tcp: [open("tcp")?, open("tcp6")?],
                    udp: [open("udp")?, open("udp6")?],
                })
            })?
            .map_err(|error| EmuError::Command {
                what: "cannot read the server namespace's sockets".into(),
                error,
            })
    }
}

/// The server namespace's socket tables, opened from inside it.
struct SocketTables {
    tcp: [File; 2],
    udp: [File; 2],
}

impl SocketTables {
    /// Whether a TCP socket listens or a UDP socket is bound.
    fn any_ready(&mut self) -> io::Result<bool> {
        for file in &mut self.tcp {
            // Columns: sl local_address rem_address st ...
            if read_rows(file)?
                .iter()
                .any(|row| row.split_whitespace().nth(3) == Some(TCP_LISTEN))
            {
                return Ok(true);
            }
        }
        for file in &mut self.udp {
            if !read_rows(file)?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The rows of a `/proc/net` socket table, its header left out.
fn read_rows(file: &mut File) -> io::Result<Vec<String>> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_string(&mut text)?;
    Ok(text.lines().skip(1).map(str::to_owned).collect())
}

/// The server's process, leader of its own group.
struct ServerProcess {
    child: Child,
    exited: Option<ExitStatus>,
}

impl ServerProcess {
    fn new(child: Child) -> ServerProcess {
        ServerProcess {
            child,
            exited: None,
        }
    }

    fn try_wait(&mut self) -> Result<Option<ExitStatus>, EmuError> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().map_err(|error| EmuError::Command {
                what: "cannot wait for the server command".into(),
                error,
            })?;
        }
        Ok(self.exited)
    }

    /// Stops the whole group, even if its leader has exited (what it
    /// started may still run); returns the leader's status.
    fn stop(mut self) -> Result<ExitStatus, EmuError> {
        let group = Pid::from_child(&self.child);
        let signal_group = |signal| {
            // ESRCH: the group is already empty.
            let _ = kill_process_group(group, signal);
        };
        signal_group(Signal::TERM);
        let deadline = Instant::now() + GRACE;
        while self.try_wait()?.is_none() && Instant::now() < deadline {
            std::thread::sleep(POLL_INTERVAL);
        }
        signal_group(Signal::KILL);
        match self.exited {
            Some(status) => Ok(status),
            None => self.child.wait().map_err(|error| EmuError::Command {
                what: "cannot wait for the server command".into(),
                error,
            }),
        }
    }
}

/// Waits for `child`, stopping it (SIGTERM, then SIGKILL) if `interrupted`
/// becomes true: its status, and whether it was interrupted.
fn wait_or_stop(
    child: &mut Child,
    interrupted: &AtomicBool,
) -> Result<(ExitStatus, bool), EmuError> {
    let failed = |error| EmuError::Command {
        what: "cannot wait for the client command".into(),
        error,
    };
    loop {
        if let Some(status) = child.try_wait().map_err(failed)? {
            return Ok((status, false));
        }
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let pid = Pid::from_child(child);
    let _ = kill_process(pid, Signal::TERM);
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().map_err(failed)? {
            return Ok((status, true));
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let _ = kill_process(pid, Signal::KILL);
    Ok((child.wait().map_err(failed)?, true))
}
