//! How a file transfer can fail, on either side.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::wire::{Hash, ProtocolError, RefuseReason, Text};

/// Where in the exchange the stream was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before the lane's preamble or a file's offer had been read or
    /// written.
    Offer,
    /// Waiting for the receiver's answer to an offer.
    Reply,
    /// While a file's data was flowing.
    Data,
    /// Waiting for the receiver's last answer on a file.
    Outcome,
    /// Waiting for the other side's goodbye at the end of the lane.
    Goodbye,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Offer => "before the offer",
            Self::Reply => "before answering the offer",
            Self::Data => "during the data",
            Self::Outcome => "before the final status",
            Self::Goodbye => "before the end of the transfer",
        })
    }
}

/// Why a file was not transferred.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The receiver refused the file (on the receiver: this side refused).
    #[error("refused ({reason}): {message}")]
    Refused {
        /// The reason as a code.
        reason: RefuseReason,
        /// The reason in words.
        message: Text,
    },
    /// The stream ended or failed before the exchange was over, or the
    /// other side gave the file up (the source says how).
    #[error("the peer closed the connection {stage}")]
    PeerClosed {
        /// Where the exchange was.
        stage: Stage,
        /// What the stream reported.
        #[source]
        source: io::Error,
    },
    /// All the data arrived but does not hash to what the sender sent at
    /// its end.
    #[error("hash mismatch: expected {expected}, the data received hashes to {actual}")]
    HashMismatch {
        /// The sender's hash.
        expected: Hash,
        /// The hash of what arrived.
        actual: Hash,
    },
    /// The receiver could not store the data it was sent.
    #[error("the receiver could not store the file: {message}")]
    RemoteIo {
        /// What the receiver reported.
        message: Text,
    },
    /// A local file operation failed.
    #[error("cannot {action} {}", path.display())]
    LocalIo {
        /// What was being done, as a verb ("open", "write").
        action: &'static str,
        /// The file it was done to.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The peer sent something the protocol does not allow.
    #[error("protocol error: {0}")]
    Protocol(#[from] ProtocolError),
}

impl TransferError {
    /// A local I/O error on `path`.
    pub(crate) fn local(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::LocalIo {
            action,
            path: path.into(),
            source,
        }
    }
}
