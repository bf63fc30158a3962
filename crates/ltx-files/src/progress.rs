//! What each side reports about the files of a lane, for whatever draws
//! them, and what became of each file at the end.

use super::error::TransferError;
use super::name::TransferName;

/// What a side is busy with for one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading a local file to hash it: the prefix the sender compares
    /// with what the receiver has, or what the receiver has, before it
    /// answers.
    Hashing,
    /// Moving the file's data over the stream.
    Transferring,
}

/// One progress report: `done` of `total` bytes in `phase`.
///
/// Reports come once per chunk (see [`CHUNK_LEN`](crate::CHUNK_LEN)), so a
/// callback can afford to update a progress bar each time. In
/// [`Phase::Transferring`] `done` counts from the start of the file, so a
/// bar shows the file, not the session; after a resume it jumps to the
/// resume offset (see [`EventKind::Resumed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// What is being done.
    pub phase: Phase,
    /// Bytes done so far.
    pub done: u64,
    /// Bytes to do in this phase; 0 for a stream of unknown length.
    pub total: u64,
}

/// One report about one file.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// The file's transfer name.
    pub name: &'a TransferName,
    /// What happened.
    pub kind: EventKind<'a>,
}

/// What happened to a file.
#[derive(Debug, Clone, Copy)]
pub enum EventKind<'a> {
    /// The file's exchange begins: the sender offers it, or the receiver
    /// reads the offer. `size` is `None` for a stream.
    Started {
        /// The file's length, if known.
        size: Option<u64>,
    },
    /// Work on the file moved on.
    Progress(Progress),
    /// The receiver had the file's first `at` bytes: they are not sent
    /// again, and the data goes on from there. A rate computed from the
    /// progress should start again here.
    Resumed {
        /// The resume offset.
        at: u64,
    },
    /// The file's exchange is over, this way; the lane's report has the
    /// details. Comes once per file, the last of its events.
    Finished(Ending<'a>),
}

/// How a file's exchange ended, as [`EventKind::Finished`] tells it.
#[derive(Debug, Clone, Copy)]
pub enum Ending<'a> {
    /// Stored whole and verified.
    Stored,
    /// The receiver already had this exact file.
    AlreadyPresent,
    /// The sender stopped it; the receiver keeps `kept` bytes for a rerun.
    Stopped {
        /// The bytes the receiver keeps.
        kept: u64,
    },
    /// Refused, or failed.
    Failed(&'a TransferError),
}

/// What became of one file, on either side.
#[derive(Debug)]
pub enum FileOutcome<T> {
    /// Stored whole and verified, or found already there: `T` says which.
    Done(T),
    /// The sender stopped the file (interrupted, or it could not read
    /// it); the receiver keeps a partial file of `kept` bytes, from which a
    /// rerun resumes.
    Stopped {
        /// The bytes the receiver keeps.
        kept: u64,
        /// Why, in the sender's words.
        why: String,
    },
    /// The file was refused or failed.
    Failed(TransferError),
}

impl<T> FileOutcome<T> {
    /// How it ended, given whether a file that is done was already
    /// present.
    pub(crate) fn ending_with(&self, already_present: impl Fn(&T) -> bool) -> Ending<'_> {
        match self {
            Self::Done(done) if already_present(done) => Ending::AlreadyPresent,
            Self::Done(_) => Ending::Stored,
            Self::Stopped { kept, .. } => Ending::Stopped { kept: *kept },
            Self::Failed(error) => Ending::Failed(error),
        }
    }

    /// The error, if the file failed.
    pub fn error(&self) -> Option<&TransferError> {
        match self {
            Self::Failed(error) => Some(error),
            _ => None,
        }
    }
}
