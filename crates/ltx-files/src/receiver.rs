//! The receiving side: the files of one lane, in order.
//!
//! A file's data goes to a partial file beside its final name,
//! `.NAME.ltx-part`, which becomes the final file only once all of it has
//! arrived, hashed right, and been synced. A partial file outlives a broken
//! connection; the next offer of that name compares its data with it (the
//! receiver answers HAVE with its length and hash), so that a rerun of the
//! same file resumes, and one of other content starts over where the bytes
//! first differ. Partial files nobody comes back for are left for the user
//! to delete: the receiver cannot tell one that will never be resumed from
//! one whose sender is about to retry.
//!
//! The checks on the way to the file (no link among the directories, none at
//! the partial file's name) are made by path. They keep a sender inside the
//! receiver's directory; they do not stop a local user who can write into
//! that directory and swaps a directory for a link during a transfer.

mod completion;
mod inbox;
mod incoming;
mod prepare;
mod store;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub use completion::Completion;
pub use inbox::{Inbox, Peer, ReceiveOptions};

use super::error::{Stage, TransferError};
use super::name::{LinkTarget, TransferName};
use super::progress::{Event, EventKind, FileOutcome, Progress};
use super::wire::{
    self, Hash, Lane, Offer, Outcome, ProtocolError, ReadError, ReceiverFrame, RefuseReason,
    SenderFrame, Text, VERSION,
};
use inbox::{Destination, Refusal};
use incoming::{Incoming, Sink, State};
use prepare::{prepare, Prepared};

/// A file this side holds at the end of a transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The name the sender gave it.
    pub name: TransferName,
    /// Where it is: the receiver's directory joined with the name (`-`
    /// for a writer).
    pub path: PathBuf,
    /// Its length in bytes (a link's: 0).
    pub size: u64,
    /// Its BLAKE3 (a link's: its target's).
    pub hash: Hash,
    /// The bytes that were already here from an earlier attempt.
    pub resumed_from: u64,
    /// The bytes of file data that came over the stream this time.
    pub bytes_received: u64,
    /// The file was already here, identical; it was left as it was.
    pub already_present: bool,
}

impl FileOutcome<Received> {
    /// How the file ended, for [`EventKind::Finished`].
    pub fn ending(&self) -> crate::Ending<'_> {
        self.ending_with(|received| received.already_present)
    }
}

/// What became of one file on the receiver.
#[derive(Debug)]
pub struct ReceiveReport {
    /// The name the sender gave it.
    pub name: TransferName,
    /// Its length as offered, if known.
    pub size: Option<u64>,
    /// The bytes of file data that came over the stream.
    pub bytes_received: u64,
    /// Stored, stopped or failed.
    pub outcome: FileOutcome<Received>,
}

/// What one lane brought: its place among the transfer's lanes (once its
/// preamble was read), a report for each file, and how it ended. A lane
/// that said goodbye ended well: every file on it has its last answer.
#[derive(Debug)]
pub struct ReceiveLane {
    /// Which lane of how many, if the preamble was read.
    pub lane: Option<Lane>,
    /// The files, in the order offered.
    pub files: Vec<ReceiveReport>,
    /// How the lane ended.
    pub end: Result<(), TransferError>,
}

/// Receives the files of one lane into `inbox`: reads the preamble and each
/// file's frames from `reader`, answers on `writer` (finished after the
/// goodbye), until the sender's goodbye or until the lane breaks. Nothing
/// appears under a final name unless the whole file verified. It has no
/// timeout of its own (the connection's idle time-out ends a silent
/// sender's lanes); dropping it is as safe as a broken stream.
pub async fn receive_lane<R, W, F>(
    reader: &mut R,
    writer: &mut W,
    inbox: &Inbox,
    peer: &Peer,
    events: &F,
) -> ReceiveLane
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    F: Fn(Event<'_>),
{
    let mut files = Vec::new();
    let lane = match wire::read_preamble(reader).await {
        Ok(lane) => lane,
        Err(error) => {
            let end = preamble_error(writer, error).await;
            let _ = writer.shutdown().await;
            return ReceiveLane {
                lane: None,
                files,
                end: Err(end),
            };
        }
    };
    let mut buf = wire::frame_buf();
    let end = loop {
        let frame = match wire::read_sender_frame(reader, &mut buf).await {
            Ok(frame) => frame,
            Err(ReadError::Closed(source)) => {
                break Err(TransferError::PeerClosed {
                    stage: Stage::Offer,
                    source,
                })
            }
            Err(ReadError::Malformed(error)) => {
                // Answered as the refusal of the file it was to be.
                let refusal = Refusal {
                    reason: match error {
                        ProtocolError::BadName { .. } => RefuseReason::BadName,
                        _ => RefuseReason::Malformed,
                    },
                    message: error.to_string(),
                };
                refuse(writer, refusal).await;
                break Err(error.into());
            }
        };
        match frame {
            SenderFrame::Offer(offer) => {
                let (report, end) =
                    receive_offered(reader, writer, &mut buf, inbox, peer, events, offer).await;
                files.push(report);
                if end.is_err() {
                    break end;
                }
            }
            SenderFrame::Link { name, target } => {
                files.push(receive_link(writer, inbox, peer, events, name, target).await);
            }
            SenderFrame::Bye => {
                let answered = wire::write_receiver_frame(writer, &ReceiverFrame::Bye).await;
                let _ = writer.shutdown().await;
                break answered.map_err(|source| TransferError::PeerClosed {
                    stage: Stage::Goodbye,
                    source,
                });
            }
            other => {
                let error = ProtocolError::Unexpected {
                    expected: "OFFER, LINK or BYE",
                    got: other.kind(),
                };
                refuse(
                    writer,
                    Refusal {
                        reason: RefuseReason::Malformed,
                        message: error.to_string(),
                    },
                )
                .await;
                break Err(error.into());
            }
        }
    };
    if end.is_err() {
        let _ = writer.shutdown().await;
    }
    ReceiveLane {
        lane: Some(lane),
        files,
        end,
    }
}

/// Waits for the sender to end the lane's stream, which it does once it
/// has read the receiver's goodbye: after it, the sender has heard every
/// answer, and the receiver may go. An error if the stream fails instead
/// (or carries more bytes).
pub async fn sender_finished<R: AsyncRead + Unpin>(reader: &mut R) -> io::Result<()> {
    let mut byte = [0; 1];
    match reader.read(&mut byte).await? {
        0 => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "bytes after the sender's goodbye",
        )),
    }
}

/// Receives the one file a sender sends over one stream into `dir`, as a
/// transfer of one lane. `progress` hears of the hashing of what is held
/// and of the data.
pub async fn receive_file<R, W, P>(
    reader: &mut R,
    writer: &mut W,
    dir: &Path,
    options: &ReceiveOptions,
    progress: P,
) -> Result<Received, TransferError>
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
    let inbox = Inbox::directory(dir, options.clone());
    let lane = receive_lane(reader, writer, &inbox, &Peer::unknown(), &events).await;
    match lane.files.into_iter().next().map(|report| report.outcome) {
        Some(FileOutcome::Done(received)) => Ok(received),
        Some(FileOutcome::Failed(error)) => Err(error),
        Some(FileOutcome::Stopped { why, .. }) => Err(TransferError::PeerClosed {
            stage: Stage::Data,
            source: io::Error::new(
                io::ErrorKind::Interrupted,
                format!("the sender stopped: {why}"),
            ),
        }),
        None => Err(lane.end.err().unwrap_or_else(|| TransferError::PeerClosed {
            stage: Stage::Offer,
            source: io::Error::from(io::ErrorKind::UnexpectedEof),
        })),
    }
}

/// The answer to a preamble that is not this version's.
async fn preamble_error<W: AsyncWrite + Unpin>(writer: &mut W, error: ReadError) -> TransferError {
    match error {
        ReadError::Closed(source) => TransferError::PeerClosed {
            stage: Stage::Offer,
            source,
        },
        ReadError::Malformed(ProtocolError::UnsupportedVersion(theirs)) => {
            let message = if theirs < VERSION {
                format!(
                    "the sender speaks file protocol {theirs}; this receiver speaks {VERSION}: \
                     update the sender"
                )
            } else {
                format!(
                    "the sender speaks file protocol {theirs}; this receiver speaks {VERSION}: \
                     update the receiver"
                )
            };
            refuse(
                writer,
                Refusal {
                    reason: RefuseReason::Version,
                    message,
                },
            )
            .await
        }
        // A stream that is not ours at all gets no answer.
        ReadError::Malformed(error) => error.into(),
    }
}

/// Takes one offered file: answers its offer, then its data.
async fn receive_offered<R, W, F>(
    reader: &mut R,
    writer: &mut W,
    buf: &mut wire::FrameBuf,
    inbox: &Inbox,
    peer: &Peer,
    events: &F,
    offer: Offer,
) -> (ReceiveReport, Result<(), TransferError>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    F: Fn(Event<'_>),
{
    let name = offer.name.clone();
    events(Event {
        name: &name,
        kind: EventKind::Started { size: offer.size },
    });
    let mut hashing = |p: Progress| {
        events(Event {
            name: &name,
            kind: EventKind::Progress(p),
        })
    };
    let prepared = prepare(inbox, &offer, peer, &mut hashing).await;
    let options = &inbox.options;
    let state = |state| {
        Incoming::new(
            offer.name.clone(),
            offer.size,
            offer.metadata,
            options,
            events,
            state,
        )
    };
    let (first, incoming) = match prepared {
        Prepared::Refused(refusal) => {
            let message = Text::new(refusal.message);
            let frame = ReceiverFrame::Refuse {
                reason: refusal.reason,
                message: message.clone(),
            };
            let error = TransferError::Refused {
                reason: refusal.reason,
                message,
            };
            let incoming =
                Incoming::refused(offer.name.clone(), offer.size, options, events, error);
            (frame, incoming)
        }
        Prepared::Fresh { claim, part } => {
            let mut incoming = state(State::Writing(Sink::part(part, 0)));
            incoming.claim = Some(claim);
            (ReceiverFrame::Accept, incoming)
        }
        Prepared::ToWriter(out) => (
            ReceiverFrame::Accept,
            state(State::Writing(Sink::Writer(out))),
        ),
        Prepared::Held {
            claim,
            reference,
            len,
            prefix,
        } => {
            let hash = prefix.finalize();
            let mut incoming = state(State::Comparing {
                reference,
                have: len,
                prefix,
            });
            incoming.claim = Some(claim);
            incoming.have_sent = true;
            (ReceiverFrame::Have { len, hash }, incoming)
        }
    };
    let _ = wire::write_receiver_frame(writer, &first).await;
    incoming.run(reader, writer, buf).await
}

/// Takes one link: creates it if its target stays inside the receiver's
/// directory.
async fn receive_link<W, F>(
    writer: &mut W,
    inbox: &Inbox,
    peer: &Peer,
    events: &F,
    name: TransferName,
    target: LinkTarget,
) -> ReceiveReport
where
    W: AsyncWrite + Unpin,
    F: Fn(Event<'_>),
{
    events(Event {
        name: &name,
        kind: EventKind::Started { size: None },
    });
    let outcome = match make_link(inbox, peer, &name, &target).await {
        Ok((path, already_present)) => {
            let outcome = if already_present {
                Outcome::Present
            } else {
                Outcome::Stored
            };
            let _ = wire::write_receiver_frame(writer, &ReceiverFrame::Outcome(outcome)).await;
            FileOutcome::Done(Received {
                name: name.clone(),
                path,
                size: 0,
                hash: blake3::hash(target.as_str().as_bytes()),
                resumed_from: 0,
                bytes_received: 0,
                already_present,
            })
        }
        Err(refusal) => FileOutcome::Failed(refuse(writer, refusal).await),
    };
    events(Event {
        name: &name,
        kind: EventKind::Finished(outcome.ending()),
    });
    ReceiveReport {
        name,
        size: None,
        bytes_received: 0,
        outcome,
    }
}

/// Creates the link `name` → `target` under the inbox's directory; true
/// if it was there already.
async fn make_link(
    inbox: &Inbox,
    peer: &Peer,
    name: &TransferName,
    target: &LinkTarget,
) -> Result<(PathBuf, bool), Refusal> {
    let dir = match &inbox.destination {
        Destination::Directory(dir) => dir,
        Destination::Writer(_) => return Err(prepare::one_file_only()),
    };
    if !target.stays_inside(name) {
        return Err(Refusal {
            reason: RefuseReason::BadName,
            message: format!(
                "the link {name} points outside the receiver's directory ({}); the receiver \
                 creates only links that stay inside",
                target.as_str()
            ),
        });
    }
    let (final_path, temporary) = prepare::prepare_link_directories(dir, name).await?;
    let _claim = inbox
        .claims
        .claim(&temporary, name, peer, &inbox.options)
        .await?;
    match tokio::fs::symlink_metadata(&final_path).await {
        Ok(meta) if meta.file_type().is_symlink() => {
            let same = tokio::fs::read_link(&final_path)
                .await
                .is_ok_and(|existing| existing.as_os_str() == target.as_str());
            if same {
                return Ok((final_path, true));
            }
            if !inbox.options.force {
                return Err(prepare::exists(name));
            }
        }
        Ok(meta) if meta.is_dir() => return Err(prepare::exists(name)),
        Ok(_) if !inbox.options.force => return Err(prepare::exists(name)),
        _ => {}
    }
    store::make_link(target, &final_path, &temporary, inbox.options.force)
        .await
        .map_err(|e| prepare::refuse_io(name, "cannot create the link", e))?;
    Ok((final_path, false))
}

/// Sends a refusal, as far as the peer still listens, and returns it as
/// this side's error.
async fn refuse<W: AsyncWrite + Unpin>(writer: &mut W, refusal: Refusal) -> TransferError {
    let message = Text::new(refusal.message);
    let frame = ReceiverFrame::Refuse {
        reason: refusal.reason,
        message: message.clone(),
    };
    let _ = wire::write_receiver_frame(writer, &frame).await;
    TransferError::Refused {
        reason: refusal.reason,
        message,
    }
}
