//! The half of a sending lane that reads the receiver's answers, matches
//! each to the file it is about (the receiver answers the files of a lane
//! in order), and tells the writing half what it must act on.

use std::sync::Mutex;

use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use super::outgoing::Record;
use super::{outcome_of, Sent};

use crate::error::{Stage, TransferError};
use crate::name::TransferName;
use crate::progress::{Event, EventKind, FileOutcome};
use crate::wire::{
    self, Hash, Outcome, ProtocolError, ReadError, ReceiverFrame, RefuseReason, Text,
};

/// What the writing half has put on the lane, in order: what the receiver
/// will answer.
#[derive(Debug)]
pub(super) enum Expect {
    /// An offered file: a first answer, then (unless it refuses) a last.
    Offer {
        /// Its place among the lane's files.
        index: usize,
        /// Its name, for events.
        name: TransferName,
        /// Its size, if known: a HAVE may not exceed it.
        size: Option<u64>,
    },
    /// A link: one answer, the last.
    Link {
        /// Its place among the lane's files.
        index: usize,
        /// Its name, for events.
        name: TransferName,
    },
    /// The sender's goodbye: the receiver's comes once every file has its
    /// last answer.
    Bye,
}

/// What the writing half must act on, about file `index`.
#[derive(Debug)]
pub(super) struct Heard {
    /// The file's place among the lane's files.
    pub(super) index: usize,
    /// What was heard.
    pub(super) kind: HeardKind,
}

/// See [`Heard`].
#[derive(Debug)]
pub(super) enum HeardKind {
    /// The receiver has `len` bytes hashing to `hash`.
    Have {
        /// How many.
        len: u64,
        /// Their BLAKE3.
        hash: Hash,
    },
    /// The file has its last answer: stop sending it.
    Last,
}

/// The last answer on a file.
#[derive(Debug)]
pub(super) enum Answer {
    /// What the receiver made of it.
    Outcome(Outcome),
    /// The receiver refused it.
    Refused {
        /// The reason as a code.
        reason: RefuseReason,
        /// The reason in words.
        message: Text,
    },
}

/// Reads the receiver's answers until its goodbye. At each file's last
/// answer, joins it with what the writing half recorded of the file and
/// pushes the outcome onto `finals` with the file's place among the
/// offered ones.
pub(super) async fn read<R, F>(
    reader: &mut R,
    mut expect: mpsc::UnboundedReceiver<Expect>,
    heard: mpsc::UnboundedSender<Heard>,
    events: &F,
    records: &Mutex<Vec<Record>>,
    finals: &mut Vec<(usize, FileOutcome<Sent>)>,
) -> Result<(), TransferError>
where
    R: AsyncRead + Unpin,
    F: Fn(Event<'_>),
{
    let mut buf = wire::frame_buf();
    // The file (or goodbye) the next frame is about, and whether its
    // first answer came.
    let mut current: Option<(Expect, bool)> = None;
    loop {
        let stage = match &current {
            None | Some((Expect::Offer { .. }, false)) => Stage::Reply,
            Some((Expect::Offer { .. } | Expect::Link { .. }, _)) => Stage::Outcome,
            Some((Expect::Bye, _)) => Stage::Goodbye,
        };
        let frame = match wire::read_receiver_frame(reader, &mut buf).await {
            Ok(frame) => frame,
            Err(ReadError::Closed(source)) => {
                return Err(TransferError::PeerClosed { stage, source })
            }
            Err(ReadError::Malformed(error)) => return Err(error.into()),
        };
        if current.is_none() {
            // The writing half announces each file before it writes it, so
            // an answer's file is always known by now.
            current = expect.try_recv().ok().map(|e| (e, false));
        }
        let Some((expected, answered)) = &mut current else {
            return Err(unexpected("nothing before an offer", &frame));
        };
        let last = match (&*expected, frame) {
            (Expect::Offer { .. }, ReceiverFrame::Accept) if !*answered => {
                *answered = true;
                None
            }
            (Expect::Offer { index, size, .. }, ReceiverFrame::Have { len, hash })
                if !*answered =>
            {
                if let Some(size) = *size {
                    if len > size {
                        return Err(ProtocolError::HaveBeyondSize { len, size }.into());
                    }
                }
                *answered = true;
                let _ = heard.send(Heard {
                    index: *index,
                    kind: HeardKind::Have { len, hash },
                });
                None
            }
            (
                Expect::Offer { .. } | Expect::Link { .. },
                ReceiverFrame::Refuse { reason, message },
            ) => {
                if reason == RefuseReason::Version {
                    // A receiver of another version refuses the lane.
                    return Err(super::refusal(reason, message));
                }
                Some(Answer::Refused { reason, message })
            }
            (Expect::Offer { .. }, ReceiverFrame::Outcome(outcome)) if *answered => {
                Some(Answer::Outcome(outcome))
            }
            (Expect::Link { .. }, ReceiverFrame::Outcome(outcome)) => {
                Some(Answer::Outcome(outcome))
            }
            (Expect::Bye, ReceiverFrame::Bye) => return Ok(()),
            (expected, frame) => {
                let wanted = match expected {
                    Expect::Offer { .. } if !*answered => "ACCEPT, HAVE or REFUSE",
                    Expect::Offer { .. } | Expect::Link { .. } => "OUTCOME or REFUSE",
                    Expect::Bye => "BYE",
                };
                return Err(unexpected(wanted, &frame));
            }
        };
        let file = match &*expected {
            Expect::Offer { index, name, .. } | Expect::Link { index, name } => {
                Some((*index, name))
            }
            Expect::Bye => None,
        };
        if let (Some(answer), Some((index, name))) = (last, file) {
            let _ = heard.send(Heard {
                index,
                kind: HeardKind::Last,
            });
            let outcome = {
                let mut records = records
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match records.iter_mut().find(|r| r.index == Some(index)) {
                    Some(record) => outcome_of(record, Some(answer), &Ok(())),
                    // The writing half records a file before it announces it.
                    None => FileOutcome::Failed(unexpected("no answer", &ReceiverFrame::Bye)),
                }
            };
            events(Event {
                name,
                kind: EventKind::Finished(outcome.ending()),
            });
            finals.push((index, outcome));
            current = None;
        }
    }
}

fn unexpected(expected: &'static str, frame: &ReceiverFrame) -> TransferError {
    ProtocolError::Unexpected {
        expected,
        got: frame.kind(),
    }
    .into()
}
