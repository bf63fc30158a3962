//! The sending side: the files of a transfer, taken in turn by its lanes,
//! one stream each.
//!
//! A lane writes each file's offer and its data at once, without waiting
//! for the receiver's answer, and goes on to the next file as soon as the
//! last byte is written. The receiver's answers come back while the data
//! flows, read by a second half of the lane ([`answers`]), and redirect it:
//! a refusal or a final answer stops the file; a HAVE starts a hash of the
//! same length of the local file beside the data, and if it matches while
//! the data is still short of it, a SEEK skips what the receiver has.

mod answers;
mod outgoing;

use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;
use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::error::{Stage, TransferError};
use super::name::{LinkTarget, TransferName};
use super::plan::{PlannedFile, PlannedKind};
use super::progress::{Ending, Event, EventKind, FileOutcome, Progress};
use super::wire::{Hash, Lane, Outcome, ProtocolError, RefuseReason, Text, VERSION};

use answers::Answer;
use outgoing::Record;

/// One thing to send.
pub enum Source {
    /// A regular file, read from `path`.
    File {
        /// Where it is here.
        path: PathBuf,
        /// The name it gets on the receiver.
        name: TransferName,
    },
    /// A symbolic link, sent as a link.
    Link {
        /// The name it gets on the receiver.
        name: TransferName,
        /// What it points at.
        target: LinkTarget,
    },
    /// A stream of unknown length, such as standard input: sent as it is
    /// read, once (it cannot resume).
    Stream {
        /// Where the bytes come from.
        reader: Box<dyn AsyncRead + Send + Unpin>,
        /// The name it gets on the receiver.
        name: TransferName,
    },
}

impl Source {
    /// The name the source gets on the receiver.
    pub fn name(&self) -> &TransferName {
        match self {
            Self::File { name, .. } | Self::Link { name, .. } | Self::Stream { name, .. } => name,
        }
    }
}

impl From<PlannedFile> for Source {
    /// The source a planned file stands for: a file, or a link as a link.
    fn from(file: PlannedFile) -> Self {
        match file.kind {
            PlannedKind::File => Source::File {
                path: file.local,
                name: file.name,
            },
            PlannedKind::Link(target) => Source::Link {
                name: file.name,
                target,
            },
        }
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File { path, name } => f
                .debug_struct("File")
                .field("path", path)
                .field("name", name)
                .finish(),
            Self::Link { name, target } => f
                .debug_struct("Link")
                .field("name", name)
                .field("target", target)
                .finish(),
            Self::Stream { name, .. } => f.debug_struct("Stream").field("name", name).finish(),
        }
    }
}

/// The sources of one transfer, in order: each lane takes the next one as
/// soon as it has written the last one's data, so that a large file on one
/// lane does not hold back small ones on the others.
#[derive(Debug, Default)]
pub struct Sources {
    queue: Mutex<VecDeque<Source>>,
}

impl Sources {
    /// The sources to send, in this order.
    pub fn new(sources: impl IntoIterator<Item = Source>) -> Self {
        Self {
            queue: Mutex::new(sources.into_iter().collect()),
        }
    }

    fn take(&self) -> Option<Source> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
    }
}

/// How the sender sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendOptions {
    /// Send each file's mode and modification time for the receiver to
    /// keep (as `rsync -a` and `scp -p` do).
    pub metadata: bool,
}

impl Default for SendOptions {
    fn default() -> Self {
        Self { metadata: true }
    }
}

/// Tells lanes to stop: each cancels the file it is sending (the receiver
/// keeps what it has, for a rerun to resume from), offers nothing more and
/// ends the lane cleanly.
#[derive(Debug)]
pub struct Stopper(watch::Sender<bool>);

impl Stopper {
    /// Stops every lane given a [`Stop`] of this stopper.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

/// What a lane checks to know whether to stop; see [`Stopper`].
#[derive(Debug, Clone)]
pub struct Stop(watch::Receiver<bool>);

impl Stop {
    /// A stopper and what its lanes check.
    pub fn new() -> (Stopper, Stop) {
        let (sender, receiver) = watch::channel(false);
        (Stopper(sender), Stop(receiver))
    }

    /// A stop that never comes.
    pub fn never() -> Stop {
        Stop(watch::channel(false).1)
    }

    fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }
}

/// A file the receiver now holds: stored, or found there already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The name the file was sent under.
    pub name: TransferName,
    /// The file's length in bytes (a link's: 0).
    pub size: u64,
    /// The bytes of file data that went over the stream this time.
    pub bytes_sent: u64,
    /// Where the data went on from: the bytes the receiver already had.
    pub resumed_from: u64,
    /// The file's BLAKE3 (a link's: its target's).
    pub hash: Hash,
    /// The receiver already had this exact file; it was left as it was.
    pub already_present: bool,
}

/// What became of one file on the sender.
#[derive(Debug)]
pub struct SendReport {
    /// The name it was sent under.
    pub name: TransferName,
    /// Its length, as far as it is known.
    pub size: Option<u64>,
    /// The bytes of file data that went over the stream.
    pub bytes_sent: u64,
    /// Stored, stopped or failed.
    pub outcome: FileOutcome<Sent>,
}

/// What one lane did: a report for each file it took, and how the lane
/// itself ended. A lane that breaks (the stream fails, the receiver breaks
/// the protocol) fails the files that had no last answer yet.
#[derive(Debug)]
pub struct SendLane {
    /// The files, in the order taken.
    pub files: Vec<SendReport>,
    /// How the lane ended.
    pub end: Result<(), TransferError>,
}

/// Sends files from `sources` over one lane: writes on `writer` (finished
/// once the receiver has answered everything) and reads the receiver's
/// answers from `reader`. Takes sources until there are none left or
/// `stop` comes; `events` hears of each file as it goes.
pub async fn send_lane<R, W, F>(
    reader: &mut R,
    writer: &mut W,
    lane: Lane,
    sources: &Sources,
    options: &SendOptions,
    stop: &Stop,
    events: &F,
) -> SendLane
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    F: Fn(Event<'_>),
{
    let (expect_tx, expect_rx) = mpsc::unbounded_channel();
    let (answer_tx, answer_rx) = mpsc::unbounded_channel();
    // Each file's record, kept here so that a lane that breaks mid-file
    // still reports what it did.
    let records = Mutex::new(Vec::new());
    let mut finals = Vec::new();
    let (read_end, write_end) = {
        let lane_writer = outgoing::LaneWriter {
            writer: &mut *writer,
            options: *options,
            stop,
            events,
            expect: expect_tx,
            answers: answer_rx,
            records: &records,
        };
        let written = lane_writer.run(lane, sources);
        let heard = answers::read(reader, expect_rx, answer_tx, events, &records, &mut finals);
        tokio::pin!(written, heard);
        let mut write_end = None;
        // The receiver's BYE answers the sender's, so the writing half is
        // done once the answers are, unless the lane broke: then it stops
        // where it is.
        let read_end = loop {
            tokio::select! {
                w = &mut written, if write_end.is_none() => write_end = Some(w),
                r = &mut heard => break r,
            }
        };
        (read_end, write_end.unwrap_or(Ok(())))
    };
    if read_end.is_ok() {
        // The end of the stream tells the receiver this side has heard
        // every answer.
        let _ = writer.shutdown().await;
    }
    let end = read_end.and(write_end);
    let records = records
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let files = merge(records, finals, &end);
    for report in files.iter().filter(|r| r.unanswered) {
        // The lane broke before the file's last answer: its end comes here.
        events(Event {
            name: &report.name,
            kind: EventKind::Finished(report.outcome.ending()),
        });
    }
    let files = files.into_iter().map(|r| r.report).collect();
    SendLane { files, end }
}

/// Sends the one file at `path` under `name` over one stream, as a
/// transfer of one lane; returns once the receiver has stored it (or
/// found it there). `progress` hears of the data as it goes.
pub async fn send_file<R, W, P>(
    reader: &mut R,
    writer: &mut W,
    path: &std::path::Path,
    name: &TransferName,
    progress: P,
) -> Result<Sent, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    P: FnMut(Progress) + Send,
{
    // A mutex, not a cell: the future holds the callback across awaits and
    // must stay `Send` for a multi-threaded runtime.
    let progress = Mutex::new(progress);
    let events = |event: Event<'_>| {
        if let EventKind::Progress(p) = event.kind {
            let mut progress = progress
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (*progress)(p);
        }
    };
    let sources = Sources::new([Source::File {
        path: path.to_path_buf(),
        name: name.clone(),
    }]);
    let lane = send_lane(
        reader,
        writer,
        Lane::single(),
        &sources,
        &SendOptions::default(),
        &Stop::never(),
        &events,
    )
    .await;
    match lane.files.into_iter().next().map(|report| report.outcome) {
        Some(FileOutcome::Done(sent)) => Ok(sent),
        Some(FileOutcome::Failed(error)) => Err(error),
        Some(FileOutcome::Stopped { .. }) | None => {
            Err(lane.end.err().unwrap_or_else(|| TransferError::PeerClosed {
                stage: Stage::Outcome,
                source: io::Error::from(io::ErrorKind::UnexpectedEof),
            }))
        }
    }
}

/// A file's report, and whether it had no last answer (its lane broke
/// first).
struct Merged {
    report: SendReport,
    unanswered: bool,
}

impl std::ops::Deref for Merged {
    type Target = SendReport;

    fn deref(&self) -> &SendReport {
        &self.report
    }
}

/// Joins what the writing half recorded of each file with the outcome its
/// last answer gave it, in the order taken.
fn merge(
    records: Vec<Record>,
    mut finals: Vec<(usize, FileOutcome<Sent>)>,
    end: &Result<(), TransferError>,
) -> Vec<Merged> {
    records
        .into_iter()
        .map(|mut record| {
            let answered = record
                .index
                .and_then(|index| finals.iter().position(|(i, _)| *i == index))
                .map(|at| finals.swap_remove(at).1);
            let unanswered = answered.is_none() && record.index.is_some();
            let outcome = answered.unwrap_or_else(|| outcome_of(&mut record, None, end));
            Merged {
                report: SendReport {
                    name: record.name,
                    size: record.size,
                    bytes_sent: record.bytes_sent,
                    outcome,
                },
                unanswered,
            }
        })
        .collect()
}

impl FileOutcome<Sent> {
    /// How the file ended, for [`EventKind::Finished`].
    pub fn ending(&self) -> Ending<'_> {
        self.ending_with(|sent| sent.already_present)
    }
}

/// What a file's record and its last answer mean together.
fn outcome_of(
    record: &mut Record,
    answer: Option<Answer>,
    end: &Result<(), TransferError>,
) -> FileOutcome<Sent> {
    let sent = |already_present: bool, hash: Hash| {
        let size = record.size.unwrap_or(record.bytes_sent);
        FileOutcome::Done(Sent {
            name: record.name.clone(),
            size,
            bytes_sent: record.bytes_sent,
            resumed_from: if already_present {
                size
            } else {
                record.resumed_from
            },
            hash,
            already_present,
        })
    };
    let failed = |error| FileOutcome::Failed(error);
    // A failure here goes first: the receiver's answer to a file this side
    // gave up on only says it kept what it had.
    if let Some(error) = record.local_error.take() {
        return failed(error);
    }
    let Some(answer) = answer else {
        return failed(lane_error(end));
    };
    match (answer, record.hash) {
        (Answer::Outcome(Outcome::Stored), Some(hash)) => sent(false, hash),
        (Answer::Outcome(Outcome::Present), Some(hash)) => sent(true, hash),
        (Answer::Outcome(Outcome::Stored | Outcome::Present), None) => {
            failed(TransferError::Protocol(ProtocolError::Unexpected {
                expected: "OUTCOME after the data's END",
                got: "OUTCOME",
            }))
        }
        (Answer::Outcome(Outcome::HashMismatch { actual }), Some(expected)) => {
            failed(TransferError::HashMismatch { expected, actual })
        }
        (Answer::Outcome(Outcome::HashMismatch { .. }), None) => {
            failed(TransferError::Protocol(ProtocolError::Unexpected {
                expected: "OUTCOME after the data's END",
                got: "OUTCOME",
            }))
        }
        (Answer::Outcome(Outcome::Failed { message }), _) => {
            failed(TransferError::RemoteIo { message })
        }
        (Answer::Outcome(Outcome::Canceled { kept }), _) if record.stopped => {
            FileOutcome::Stopped {
                kept,
                why: "interrupted".to_owned(),
            }
        }
        (Answer::Outcome(Outcome::Canceled { .. }), _) => {
            failed(TransferError::Protocol(ProtocolError::Unexpected {
                expected: "OUTCOME of a file not canceled",
                got: "OUTCOME (canceled)",
            }))
        }
        (Answer::Refused { reason, message }, _) => failed(refusal(reason, message)),
    }
}

/// The error for a file that got no last answer: the lane's, or a broken
/// stream.
fn lane_error(end: &Result<(), TransferError>) -> TransferError {
    match end {
        Err(TransferError::Refused { reason, message }) => TransferError::Refused {
            reason: *reason,
            message: message.clone(),
        },
        Err(TransferError::Protocol(error)) => TransferError::Protocol(error.clone()),
        Err(TransferError::PeerClosed { stage, source }) => TransferError::PeerClosed {
            stage: *stage,
            source: io::Error::new(source.kind(), source.to_string()),
        },
        Err(other) => TransferError::PeerClosed {
            stage: Stage::Outcome,
            source: io::Error::other(other.to_string()),
        },
        Ok(()) => TransferError::PeerClosed {
            stage: Stage::Outcome,
            source: io::Error::from(io::ErrorKind::UnexpectedEof),
        },
    }
}

/// A refusal as the user reads it. A receiver of another version refuses
/// in the words of its own version; this says which version to update.
pub(crate) fn refusal(reason: RefuseReason, message: Text) -> TransferError {
    let message = if reason == RefuseReason::Version {
        Text::new(version_advice(message.as_str()))
    } else {
        message
    };
    TransferError::Refused { reason, message }
}

/// What to do about a receiver that refused this version, from its words
/// ("... (this side speaks 1)" in version 1).
fn version_advice(text: &str) -> String {
    let theirs = text
        .rsplit("speaks ")
        .next()
        .filter(|_| text.contains("speaks "))
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u8>().ok()
        });
    match theirs {
        Some(theirs) if theirs < VERSION => {
            format!("the receiver speaks file protocol {theirs}; update it (this sender speaks {VERSION})")
        }
        Some(theirs) => {
            format!("the receiver speaks file protocol {theirs}; update this sender (it speaks {VERSION})")
        }
        None => format!("the receiver does not speak file protocol {VERSION} ({text}); update it"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_of_the_version_says_what_to_update() {
        assert_eq!(
            version_advice("protocol version 2 is not supported (this side speaks 1)"),
            "the receiver speaks file protocol 1; update it (this sender speaks 2)"
        );
        assert_eq!(
            version_advice("the sender speaks file protocol 2; this receiver speaks 3"),
            "the receiver speaks file protocol 3; update this sender (it speaks 2)"
        );
        assert!(version_advice("no").contains("does not speak file protocol 2"));
    }
}
