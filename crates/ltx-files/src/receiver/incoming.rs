//! One offered file's frames on the receiver, after its first answer:
//! the data written to the partial file, or compared with what the
//! receiver holds, or dropped after a final answer; then verified and
//! stored.
//!
//! The hash kept here is always the hash of the file's first `pos` bytes
//! as they will be stored: bytes written, bytes compared equal with the
//! partial file, or, after a SEEK, the bytes the partial file holds. So a
//! file that verifies is byte for byte what its sender hashed.

use std::io::{self, SeekFrom};
use std::path::PathBuf;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWrite, AsyncWriteExt};

use super::inbox::{Claim, ReceiveOptions, Refusal};
use super::prepare::{exists, Reference};
use super::store::{self, finish_part, open_part, part_path, write_chunk, OpenError, Part};
use super::{ReceiveReport, Received};
use crate::error::{Stage, TransferError};
use crate::name::TransferName;
use crate::progress::{Event, EventKind, FileOutcome, Phase, Progress};
use crate::wire::{
    self, FrameBuf, Hash, Metadata, Outcome, ProtocolError, ReadError, ReceiverFrame, SenderFrame,
    Text, MAX_DATA_LEN,
};
use crate::CHUNK_LEN;

/// Where the file's bytes go.
pub(crate) enum Sink {
    /// Into its partial file; `pending` bytes wait to be written in large
    /// pieces after the `flushed` ones.
    Part {
        part: Part,
        pending: Vec<u8>,
        flushed: u64,
    },
    /// To the inbox's writer, as they come.
    Writer(Box<dyn AsyncWrite + Send + Unpin>),
}

impl Sink {
    /// A sink writing into `part` from byte `at`.
    pub(crate) fn part(part: Part, at: u64) -> Self {
        Self::Part {
            part,
            pending: Vec::with_capacity(CHUNK_LEN),
            flushed: at,
        }
    }
}

/// What is done with the file's data.
pub(crate) enum State {
    /// It is written.
    Writing(Sink),
    /// It is compared with the first `have` bytes of `reference`, whose
    /// hash `prefix` holds; nothing is written while it matches.
    Comparing {
        reference: Reference,
        have: u64,
        prefix: Box<blake3::Hasher>,
    },
    /// The file has its final answer; its frames are read and dropped.
    Answered,
}

/// One file being received.
pub(crate) struct Incoming<'a, 'o, F> {
    pub(crate) name: TransferName,
    pub(crate) size: Option<u64>,
    pub(crate) metadata: Option<Metadata>,
    pub(crate) options: &'o ReceiveOptions,
    pub(crate) events: &'o F,
    pub(crate) state: State,
    /// The claim on the name, if it has one.
    pub(crate) claim: Option<Claim<'a>>,
    /// Whether the first answer was HAVE (which DIFFERS and SEEK answer).
    pub(crate) have_sent: bool,
    pos: u64,
    hasher: blake3::Hasher,
    bytes_received: u64,
    resumed_from: u64,
    /// The outcome decided when a final answer went out early.
    answered: Option<FileOutcome<Received>>,
    next_progress: u64,
    compare_buf: Vec<u8>,
}

/// What ends the lane along with the file.
type LaneEnd = Result<(), TransferError>;

/// What the next read gave.
enum Next<'b> {
    Frame(Result<SenderFrame<'b>, ReadError>),
    TakenOver,
}

impl<'a, 'o, F> Incoming<'a, 'o, F>
where
    F: Fn(Event<'_>),
{
    /// A file about to receive its data, answered as `state` says.
    pub(crate) fn new(
        name: TransferName,
        size: Option<u64>,
        metadata: Option<Metadata>,
        options: &'o ReceiveOptions,
        events: &'o F,
        state: State,
    ) -> Self {
        Self {
            name,
            size,
            metadata,
            options,
            events,
            state,
            claim: None,
            have_sent: false,
            pos: 0,
            hasher: blake3::Hasher::new(),
            bytes_received: 0,
            resumed_from: 0,
            answered: None,
            next_progress: 0,
            compare_buf: Vec::new(),
        }
    }

    /// A file refused at its offer: its frames are dropped.
    pub(crate) fn refused(
        name: TransferName,
        size: Option<u64>,
        options: &'o ReceiveOptions,
        events: &'o F,
        error: TransferError,
    ) -> Self {
        let mut incoming = Self::new(name, size, None, options, events, State::Answered);
        incoming.answered = Some(FileOutcome::Failed(error));
        incoming
    }

    /// Reads the file's frames to its END or CANCEL, acting on each, and
    /// answers last. Returns the file's report, and an error if the lane
    /// cannot go on.
    pub(crate) async fn run<R, W>(
        mut self,
        reader: &mut R,
        writer: &mut W,
        buf: &mut FrameBuf,
    ) -> (ReceiveReport, LaneEnd)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        self.progress();
        loop {
            let next = {
                let read = wire::read_sender_frame(reader, buf);
                match &mut self.claim {
                    Some(claim) => tokio::select! {
                        frame = read => Next::Frame(frame),
                        () = claim.taken_over() => Next::TakenOver,
                    },
                    None => Next::Frame(read.await),
                }
            };
            let step = match next {
                Next::TakenOver => Err(self.taken_over().await),
                Next::Frame(Err(ReadError::Closed(source))) => Err(self
                    .broken(TransferError::PeerClosed {
                        stage: Stage::Data,
                        source,
                    })
                    .await),
                Next::Frame(Err(ReadError::Malformed(error))) => {
                    Err(self.violation(writer, error).await)
                }
                Next::Frame(Ok(frame)) => self.handle(writer, frame).await,
            };
            match step {
                Ok(false) => {}
                Ok(true) => return (self.report(), Ok(())),
                Err(end) => {
                    let report = self.report();
                    return (report, Err(end));
                }
            }
        }
    }

    /// Acts on one frame; true once the file is over.
    async fn handle<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        frame: SenderFrame<'_>,
    ) -> Result<bool, TransferError> {
        if matches!(self.state, State::Answered) {
            // Dropped, to the file's end.
            return Ok(matches!(
                frame,
                SenderFrame::End(_) | SenderFrame::Cancel(_)
            ));
        }
        match frame {
            SenderFrame::Data(bytes) => {
                self.data(writer, bytes).await?;
                Ok(false)
            }
            SenderFrame::Seek(to) => {
                self.seek(writer, to).await?;
                Ok(false)
            }
            SenderFrame::Differs => {
                match self.state {
                    State::Comparing { .. } => self.diverge(writer).await,
                    State::Writing(_) if self.have_sent => {}
                    _ => {
                        return Err(self
                            .violation(
                                writer,
                                ProtocolError::Unexpected {
                                    expected: "DATA, END or CANCEL",
                                    got: "DIFFERS",
                                },
                            )
                            .await)
                    }
                }
                Ok(false)
            }
            SenderFrame::End(hash) => {
                self.end(writer, hash).await?;
                Ok(true)
            }
            SenderFrame::Cancel(why) => {
                self.cancel(writer, why).await;
                Ok(true)
            }
            other => Err(self
                .violation(
                    writer,
                    ProtocolError::Unexpected {
                        expected: "DATA, SEEK, DIFFERS, END or CANCEL",
                        got: other.kind(),
                    },
                )
                .await),
        }
    }

    /// The next bytes of the file.
    async fn data<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        bytes: &[u8],
    ) -> Result<(), TransferError> {
        let end = self.pos + bytes.len() as u64;
        if let Some(size) = self.size {
            if end > size {
                return Err(self
                    .violation(writer, ProtocolError::WrongLength { sent: end, size })
                    .await);
            }
        } else if let Some(limit) = self.options.max_file_bytes {
            if end > limit {
                let message = format!(
                    "the stream is larger than the receiver takes in one file ({limit} bytes, \
                     --max-file-size)"
                );
                self.discard_part().await;
                self.fail(
                    writer,
                    TransferError::RemoteIo {
                        message: Text::new(message),
                    },
                )
                .await;
                return Ok(());
            }
        }
        self.bytes_received += bytes.len() as u64;
        let mut rest = bytes;
        while !rest.is_empty() {
            match &mut self.state {
                State::Writing(_) => {
                    self.write(writer, rest).await;
                    rest = &[];
                }
                State::Comparing { have, .. } if self.pos < *have => {
                    let n = rest
                        .len()
                        .min(usize::try_from(*have - self.pos).unwrap_or(usize::MAX));
                    match self.compare(&rest[..n]).await {
                        Ok(None) => {
                            self.hasher.update(&rest[..n]);
                            self.pos += n as u64;
                            rest = &rest[n..];
                        }
                        Ok(Some(same)) => {
                            self.hasher.update(&rest[..same]);
                            self.pos += same as u64;
                            rest = &rest[same..];
                            self.diverge(writer).await;
                        }
                        Err(e) => {
                            let error = TransferError::local("read", self.reference_path(), e);
                            self.fail(writer, error).await;
                            rest = &[];
                        }
                    }
                }
                State::Comparing { .. } => self.past_have(writer).await?,
                State::Answered => rest = &[],
            }
        }
        self.progress();
        Ok(())
    }

    /// Compares `bytes` with the reference's next ones: `None` if equal,
    /// or how many are equal before the first that differs.
    async fn compare(&mut self, bytes: &[u8]) -> io::Result<Option<usize>> {
        let State::Comparing { reference, .. } = &mut self.state else {
            return Ok(None);
        };
        let file = match reference {
            Reference::Part(part) => &mut part.file,
            Reference::Final { file, .. } => file,
        };
        self.compare_buf.resize(bytes.len().min(MAX_DATA_LEN), 0);
        let held = &mut self.compare_buf[..bytes.len()];
        file.read_exact(held).await?;
        Ok(held.iter().zip(bytes).position(|(a, b)| a != b))
    }

    /// Writes bytes that are the file's next ones.
    async fn write<W: AsyncWrite + Unpin>(&mut self, writer: &mut W, bytes: &[u8]) {
        let State::Writing(sink) = &mut self.state else {
            return;
        };
        let failed = match sink {
            Sink::Part {
                part,
                pending,
                flushed,
            } => {
                pending.extend_from_slice(bytes);
                if pending.len() >= CHUNK_LEN {
                    flush(part, pending, flushed, self.options)
                        .await
                        .err()
                        .map(|e| TransferError::local("write", &part.path, e))
                } else {
                    None
                }
            }
            Sink::Writer(out) => out
                .write_all(bytes)
                .await
                .err()
                .map(|e| TransferError::local("write", "-", e)),
        };
        self.hasher.update(bytes);
        self.pos += bytes.len() as u64;
        if let Some(error) = failed {
            // The partial file keeps what it holds: still a prefix, which a
            // rerun after freeing space resumes from.
            self.keep_part().await;
            self.fail(writer, error).await;
        }
    }

    /// The data reached the end of what the receiver has: the rest is new,
    /// written after it.
    async fn past_have<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
    ) -> Result<(), TransferError> {
        match std::mem::replace(&mut self.state, State::Answered) {
            State::Comparing {
                reference: Reference::Part(mut part),
                have,
                ..
            } => match part.file.seek(SeekFrom::Start(have)).await {
                Ok(_) => self.state = State::Writing(Sink::part(part, have)),
                Err(e) => {
                    let error = TransferError::local("seek in", &part.path, e);
                    self.fail(writer, error).await;
                }
            },
            State::Comparing { reference, .. } => {
                // A file of the offered size has no room after it; the
                // size check stops the data first.
                self.state = State::Comparing {
                    reference,
                    have: self.pos,
                    prefix: Box::new(self.hasher.clone()),
                };
                let size = self.size.unwrap_or(self.pos);
                return Err(self
                    .violation(
                        writer,
                        ProtocolError::WrongLength {
                            sent: self.pos + 1,
                            size,
                        },
                    )
                    .await);
            }
            other => self.state = other,
        }
        Ok(())
    }

    /// The data differs from what the receiver has, from `pos` on (or the
    /// sender said so): what is held up to `pos` is kept, the rest is
    /// written; a file of the same name is refused unless it may be
    /// replaced.
    async fn diverge<W: AsyncWrite + Unpin>(&mut self, writer: &mut W) {
        let State::Comparing { reference, .. } =
            std::mem::replace(&mut self.state, State::Answered)
        else {
            return;
        };
        let at = self.pos;
        let result = match reference {
            Reference::Part(mut part) => {
                let cut = async {
                    part.file.set_len(at).await?;
                    part.file.seek(SeekFrom::Start(at)).await?;
                    Ok::<_, io::Error>(())
                };
                match cut.await {
                    Ok(()) => Ok(Sink::part(part, at)),
                    Err(e) => Err(TransferError::local("truncate", &part.path, e)),
                }
            }
            Reference::Final { .. } if !self.options.force => {
                let refusal = exists(&self.name);
                self.refuse(writer, refusal).await;
                return;
            }
            Reference::Final { file, path } => self.replace(file, path, at).await,
        };
        match result {
            Ok(sink) => self.state = State::Writing(sink),
            Err(error) => self.fail(writer, error).await,
        }
    }

    /// Starts the partial file that replaces the file at `path`, with its
    /// first `at` bytes, which the data matched.
    async fn replace(
        &mut self,
        mut existing: tokio::fs::File,
        path: PathBuf,
        at: u64,
    ) -> Result<Sink, TransferError> {
        let part_path = part_path(&path, self.name.file_name());
        let file = open_part(part_path.clone()).await.map_err(|e| match e {
            OpenError::Busy => TransferError::local(
                "open",
                &part_path,
                io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "another receiver process holds it",
                ),
            ),
            OpenError::Io(e) => TransferError::local("open", &part_path, e),
        })?;
        let mut part = Part {
            file,
            path: part_path,
            final_path: path.clone(),
        };
        let copy = async {
            part.file.set_len(0).await?;
            existing.seek(SeekFrom::Start(0)).await?;
            let copied = tokio::io::copy(&mut (&mut existing).take(at), &mut part.file).await?;
            if copied < at {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the existing file shrank",
                ));
            }
            Ok(())
        };
        copy.await
            .map_err(|e| TransferError::local("copy", &part.path, e))?;
        Ok(Sink::part(part, at))
    }

    /// The sender skips to `to`: the first `to` bytes are the ones the
    /// receiver has.
    async fn seek<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        to: u64,
    ) -> Result<(), TransferError> {
        let fits =
            matches!(self.state, State::Comparing { have, .. } if to == have && self.pos <= have);
        if !fits {
            let have = match &self.state {
                State::Comparing { have, .. } => *have,
                _ => 0,
            };
            let error = ProtocolError::BadSeek {
                to,
                at: self.pos,
                have,
            };
            return Err(self.violation(writer, error).await);
        }
        if let State::Comparing {
            reference, prefix, ..
        } = &mut self.state
        {
            self.hasher = (**prefix).clone();
            self.pos = to;
            self.resumed_from = to;
            if let Reference::Final { file, .. } = reference {
                // Nothing more to compare: only END may follow.
                let _ = file.seek(SeekFrom::Start(to)).await;
            }
        }
        (self.events)(Event {
            name: &self.name,
            kind: EventKind::Resumed { at: to },
        });
        if matches!(
            self.state,
            State::Comparing {
                reference: Reference::Part(_),
                ..
            }
        ) {
            self.past_have(writer).await?;
        }
        self.progress();
        Ok(())
    }

    /// The end of the file and its hash: verify, then store.
    async fn end<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        expected: Hash,
    ) -> Result<(), TransferError> {
        if let Some(size) = self.size {
            if self.pos != size {
                let error = ProtocolError::WrongLength {
                    sent: self.pos,
                    size,
                };
                return Err(self.violation(writer, error).await);
            }
        }
        if let State::Writing(Sink::Part {
            part,
            pending,
            flushed,
        }) = &mut self.state
        {
            if let Err(e) = flush(part, pending, flushed, self.options).await {
                let error = TransferError::local("write", &part.path, e);
                self.keep_part().await;
                self.fail(writer, error).await;
                return Ok(());
            }
        }
        if let State::Writing(Sink::Writer(out)) = &mut self.state {
            if let Err(e) = out.flush().await {
                self.fail(writer, TransferError::local("write", "-", e))
                    .await;
                return Ok(());
            }
        }
        let actual = self.hasher.finalize();
        if actual != expected {
            // A file that is wrong whole would only be resumed into another
            // mismatch.
            self.discard_part().await;
            Self::answer(
                writer,
                ReceiverFrame::Outcome(Outcome::HashMismatch { actual }),
            )
            .await;
            self.answered = Some(FileOutcome::Failed(TransferError::HashMismatch {
                expected,
                actual,
            }));
            self.state = State::Answered;
            return Ok(());
        }
        let (path, already_present) = match std::mem::replace(&mut self.state, State::Answered) {
            State::Writing(Sink::Part { mut part, .. })
            | State::Comparing {
                reference: Reference::Part(mut part),
                ..
            } => {
                if let Err((action, e)) =
                    finish_part(&mut part, self.metadata.as_ref(), self.options).await
                {
                    let error = TransferError::local(action, &part.final_path, e);
                    self.fail(writer, error).await;
                    return Ok(());
                }
                (part.final_path, false)
            }
            State::Comparing {
                reference: Reference::Final { path, .. },
                ..
            } => (path, true),
            State::Writing(Sink::Writer(_)) => (PathBuf::from("-"), false),
            State::Answered => return Ok(()),
        };
        let outcome = if already_present {
            Outcome::Present
        } else {
            Outcome::Stored
        };
        // The file is stored whether or not the sender hears about it; if
        // it does not, its rerun finds the file present.
        Self::answer(writer, ReceiverFrame::Outcome(outcome)).await;
        self.answered = Some(FileOutcome::Done(Received {
            name: self.name.clone(),
            path,
            size: self.pos,
            hash: actual,
            resumed_from: if already_present {
                self.pos
            } else {
                self.resumed_from
            },
            bytes_received: self.bytes_received,
            already_present,
        }));
        Ok(())
    }

    /// The sender stops the file: what is held is kept for a rerun.
    async fn cancel<W: AsyncWrite + Unpin>(&mut self, writer: &mut W, why: Text) {
        self.keep_part().await;
        let kept = match &self.state {
            State::Writing(Sink::Part { flushed, .. }) => *flushed,
            State::Comparing {
                reference: Reference::Part(_),
                have,
                ..
            } => *have,
            _ => 0,
        };
        self.state = State::Answered;
        Self::answer(writer, ReceiverFrame::Outcome(Outcome::Canceled { kept })).await;
        self.answered = Some(FileOutcome::Stopped {
            kept,
            why: why.to_string(),
        });
    }

    /// A newer transfer of the same sender takes the file over: stop now,
    /// keep what is held, answer nothing (the old connection is gone).
    async fn taken_over(&mut self) -> TransferError {
        self.keep_part().await;
        self.state = State::Answered;
        let error = || TransferError::PeerClosed {
            stage: Stage::Data,
            source: io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!(
                    "a newer transfer of {} from the same sender took it over",
                    self.name
                ),
            ),
        };
        self.answered = Some(FileOutcome::Failed(error()));
        error()
    }

    /// The stream broke: keep every byte that arrived, for the rerun.
    async fn broken(&mut self, error: TransferError) -> TransferError {
        self.keep_part().await;
        if self.answered.is_none() {
            self.answered = Some(FileOutcome::Failed(copy_error(&error)));
        }
        self.state = State::Answered;
        error
    }

    /// The sender broke the protocol: the file fails, and the lane ends.
    async fn violation<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        error: ProtocolError,
    ) -> TransferError {
        self.keep_part().await;
        if self.answered.is_none() {
            self.fail(writer, TransferError::Protocol(error.clone()))
                .await;
        }
        self.state = State::Answered;
        TransferError::Protocol(error)
    }

    /// Answers a refusal, as the file's final word.
    async fn refuse<W: AsyncWrite + Unpin>(&mut self, writer: &mut W, refusal: Refusal) {
        let message = Text::new(refusal.message);
        Self::answer(
            writer,
            ReceiverFrame::Refuse {
                reason: refusal.reason,
                message: message.clone(),
            },
        )
        .await;
        self.answered = Some(FileOutcome::Failed(TransferError::Refused {
            reason: refusal.reason,
            message,
        }));
        self.state = State::Answered;
    }

    /// Tells the sender the file could not be stored, as its final word.
    async fn fail<W: AsyncWrite + Unpin>(&mut self, writer: &mut W, error: TransferError) {
        // The receiver's paths are its own business; the sender hears the
        // cause.
        let message = match &error {
            TransferError::LocalIo { action, source, .. } => {
                format!("cannot {action} the file: {source}")
            }
            TransferError::RemoteIo { message } => message.to_string(),
            other => other.to_string(),
        };
        Self::answer(
            writer,
            ReceiverFrame::Outcome(Outcome::Failed {
                message: Text::new(message),
            }),
        )
        .await;
        self.answered = Some(FileOutcome::Failed(error));
        self.state = State::Answered;
    }

    /// Writes an answer. Takes no `self`: a borrow of the file held across
    /// the write would make the lane's future need a `Sync` sink.
    async fn answer<W: AsyncWrite + Unpin>(writer: &mut W, frame: ReceiverFrame) {
        // A sender that has gone hears nothing; the lane's next read says so.
        let _ = wire::write_receiver_frame(writer, &frame).await;
    }

    /// Writes what waits and syncs the partial file, which stays.
    async fn keep_part(&mut self) {
        if let State::Writing(Sink::Part {
            part,
            pending,
            flushed,
        }) = &mut self.state
        {
            let _ = flush(part, pending, flushed, self.options).await;
            let _ = store::sync(&mut part.file).await;
        }
    }

    /// Deletes the partial file: what it holds cannot become this file.
    async fn discard_part(&mut self) {
        let path = match &self.state {
            State::Writing(Sink::Part { part, .. })
            | State::Comparing {
                reference: Reference::Part(part),
                ..
            } => Some(part.path.clone()),
            _ => None,
        };
        if let Some(path) = path {
            let _ = tokio::fs::remove_file(path).await;
        }
        self.state = State::Answered;
    }

    fn reference_path(&self) -> PathBuf {
        match &self.state {
            State::Comparing {
                reference: Reference::Part(part),
                ..
            } => part.path.clone(),
            State::Comparing {
                reference: Reference::Final { path, .. },
                ..
            } => path.clone(),
            _ => PathBuf::new(),
        }
    }

    fn progress(&mut self) {
        if self.pos < self.next_progress && Some(self.pos) != self.size {
            return;
        }
        self.next_progress = self.pos + CHUNK_LEN as u64;
        (self.events)(Event {
            name: &self.name,
            kind: EventKind::Progress(Progress {
                phase: Phase::Transferring,
                done: self.pos,
                total: self.size.unwrap_or(0),
            }),
        });
    }

    fn report(&mut self) -> ReceiveReport {
        let outcome = self.answered.take().unwrap_or_else(|| {
            FileOutcome::Failed(TransferError::PeerClosed {
                stage: Stage::Data,
                source: io::Error::from(io::ErrorKind::UnexpectedEof),
            })
        });
        (self.events)(Event {
            name: &self.name,
            kind: EventKind::Finished(outcome.ending()),
        });
        ReceiveReport {
            name: self.name.clone(),
            size: self.size,
            bytes_received: self.bytes_received,
            outcome,
        }
    }
}

/// Writes the pending bytes of a partial file.
async fn flush(
    part: &mut Part,
    pending: &mut Vec<u8>,
    flushed: &mut u64,
    options: &ReceiveOptions,
) -> io::Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let result = write_chunk(&mut part.file, pending, *flushed, options).await;
    if result.is_ok() {
        *flushed += pending.len() as u64;
        pending.clear();
    }
    result
}

/// A copy of an error for a second place to report it (the io error's
/// text and kind).
pub(crate) fn copy_error(error: &TransferError) -> TransferError {
    match error {
        TransferError::PeerClosed { stage, source } => TransferError::PeerClosed {
            stage: *stage,
            source: io::Error::new(source.kind(), source.to_string()),
        },
        TransferError::Protocol(e) => TransferError::Protocol(e.clone()),
        TransferError::Refused { reason, message } => TransferError::Refused {
            reason: *reason,
            message: message.clone(),
        },
        other => TransferError::PeerClosed {
            stage: Stage::Data,
            source: io::Error::other(other.to_string()),
        },
    }
}
