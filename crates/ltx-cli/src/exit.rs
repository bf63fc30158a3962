//! Exit codes: distinct for each kind of failure a script may want to
//! tell apart, each with the error that caused it.

use std::fmt;
use std::process::ExitCode;

use ltx::{CloseReason, ConnectError, ConnectionError};

use ltx_files::TransferError;

/// What went wrong, as the process reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Anything not listed below.
    Other = 1,
    /// The command line asks for something that cannot run: a value out of
    /// range, or a flag the chosen preset would ignore (the code clap
    /// gives its own parse errors).
    Usage = 2,
    /// The peer did not answer the handshake.
    Unreachable = 3,
    /// The peer refused the transfer, or closed or aborted the connection.
    Refused = 4,
    /// The connection went silent for the idle time-out.
    TimedOut = 5,
    /// A local file could not be read or written.
    LocalFile = 6,
    /// A file arrived but did not hash to what the sender announced.
    Integrity = 7,
    /// The user interrupted the command (Ctrl-C): 128 + SIGINT, as a shell
    /// reports it.
    Interrupted = 130,
}

impl Failure {
    /// The process exit code.
    pub fn code(self) -> ExitCode {
        ExitCode::from(self as u8)
    }

    /// The failure a connection's end stands for.
    pub fn of_close(reason: &CloseReason) -> Failure {
        match reason {
            CloseReason::HandshakeTimeout | CloseReason::Unreachable(_) => Failure::Unreachable,
            CloseReason::IdleTimeout => Failure::TimedOut,
            CloseReason::ByPeer { .. }
            | CloseReason::ProtocolViolation(_)
            | CloseReason::HandshakeRefused(_) => Failure::Refused,
            CloseReason::LocallyClosed | CloseReason::LocallyAborted { .. } => Failure::Other,
        }
    }

    /// Classifies an error by the first cause in its chain that says
    /// something.
    pub fn of(error: &anyhow::Error) -> Failure {
        if let Some(failed) = error.downcast_ref::<Failed>() {
            return failed.0;
        }
        for cause in error.chain() {
            if let Some(failure) = cause.downcast_ref::<Failed>() {
                return failure.0;
            }
            if let Some(e) = cause.downcast_ref::<ConnectError>() {
                return match e {
                    ConnectError::Closed(reason) => Failure::of_close(reason),
                    _ => Failure::Other,
                };
            }
            if let Some(e) = cause.downcast_ref::<ConnectionError>() {
                return Failure::of_close(&e.reason);
            }
            // An ltx stream's error carries the connection's end inside,
            // where `source()` does not lead.
            if let Some(e) = cause
                .downcast_ref::<std::io::Error>()
                .and_then(|e| e.get_ref())
                .and_then(|inner| inner.downcast_ref::<ConnectionError>())
            {
                return Failure::of_close(&e.reason);
            }
            if let Some(e) = cause.downcast_ref::<TransferError>() {
                match e {
                    TransferError::Refused { .. } | TransferError::RemoteIo { .. } => {
                        return Failure::Refused
                    }
                    TransferError::HashMismatch { .. } => return Failure::Integrity,
                    TransferError::LocalIo { .. } => return Failure::LocalFile,
                    TransferError::Protocol(_) => return Failure::Refused,
                    // The stream's error says why: look further down.
                    TransferError::PeerClosed { .. } => {}
                }
            }
        }
        Failure::Other
    }
}

/// An error already classified, for failures no library error names.
#[derive(Debug)]
pub struct Failed(pub Failure);

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Failure::Other => "failed",
            Failure::Usage => "bad command line",
            Failure::Unreachable => "no answer from the peer",
            Failure::Refused => "refused by the peer",
            Failure::TimedOut => "timed out",
            Failure::LocalFile => "local file error",
            Failure::Integrity => "integrity check failed",
            Failure::Interrupted => "interrupted",
        })
    }
}

impl std::error::Error for Failed {}

/// The exit codes, for `--help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  other errors
  2  bad command line
  3  the peer did not answer (unreachable or not listening)
  4  the peer refused the transfer or closed the connection (its reason is printed)
  5  the connection timed out (nothing heard from the peer)
  6  a local file could not be read or written
  7  a file arrived corrupted (hash mismatch); nothing was stored under its name
130  interrupted (Ctrl-C); running the same command again resumes";
