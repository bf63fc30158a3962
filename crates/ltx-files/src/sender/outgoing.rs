//! The half of a sending lane that writes: each file's offer and data at
//! once, redirected by what the answering half hears.

use std::io::{self, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::fs::File;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::answers::{Expect, Heard, HeardKind};
use super::{SendOptions, Source, Sources, Stop};
use crate::error::{Stage, TransferError};
use crate::name::{LinkTarget, TransferName};
use crate::progress::{Ending, Event, EventKind, Phase, Progress};
use crate::wire::{self, Hash, Lane, Metadata, Offer, SenderFrame, Text, MAX_DATA_LEN};
use crate::CHUNK_LEN;

/// What the writing half did with one file.
#[derive(Debug)]
pub(super) struct Record {
    /// Its name.
    pub(super) name: TransferName,
    /// Its size, if known.
    pub(super) size: Option<u64>,
    /// Its place among the lane's offered files, if it went on the wire
    /// (an OFFER or LINK) and so gets answers.
    pub(super) index: Option<usize>,
    /// Bytes of data written.
    pub(super) bytes_sent: u64,
    /// Where the data went on from after a SEEK.
    pub(super) resumed_from: u64,
    /// The hash sent with END (a link's: its target's).
    pub(super) hash: Option<Hash>,
    /// The sender stopped it.
    pub(super) stopped: bool,
    /// A failure on this side, which ended the file.
    pub(super) local_error: Option<TransferError>,
}

/// The writing half of a lane.
pub(super) struct LaneWriter<'a, W, F> {
    pub(super) writer: &'a mut W,
    pub(super) options: SendOptions,
    pub(super) stop: &'a Stop,
    pub(super) events: &'a F,
    /// What the answering half must expect, in order.
    pub(super) expect: mpsc::UnboundedSender<Expect>,
    /// What it heard that this half must act on.
    pub(super) answers: mpsc::UnboundedReceiver<Heard>,
    /// Each file's record, pushed when the file is taken.
    pub(super) records: &'a Mutex<Vec<Record>>,
}

/// Where a file's bytes come from.
enum Input<'s> {
    /// A file of known size, which can be reread and skipped in.
    File {
        file: File,
        path: PathBuf,
        size: u64,
        stamp: Stamp,
    },
    /// A stream, read once to its end.
    Stream(&'s mut (dyn AsyncRead + Send + Unpin)),
}

impl Input<'_> {
    /// Its path, for errors (`-` for a stream).
    fn path(&self) -> PathBuf {
        match self {
            Input::File { path, .. } => path.clone(),
            Input::Stream(_) => PathBuf::from("-"),
        }
    }
}

/// What shows that a file changed while it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

/// A hash of the local file's first `len` bytes, run beside the data to
/// compare with what the receiver has.
struct PrefixCheck {
    len: u64,
    theirs: Hash,
    task: JoinHandle<io::Result<(blake3::Hasher, u64)>>,
    cancel: Arc<AtomicBool>,
}

impl Drop for PrefixCheck {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// Where the receiver's HAVE stands: a hash of the local prefix under
/// way, and whether it has been answered (SEEK, DIFFERS, or by the data
/// passing it).
#[derive(Default)]
struct Redirect {
    check: Option<PrefixCheck>,
    settled: bool,
}

/// How a file's data loop ended.
enum Ended {
    /// Every byte was written: END goes next.
    Complete,
    /// The file ended here, for the reason given (CANCEL was written).
    Cancelled,
}

impl<W, F> LaneWriter<'_, W, F>
where
    W: AsyncWrite + Unpin,
    F: Fn(Event<'_>),
{
    /// Writes the preamble, the files taken from `sources` until none are
    /// left or the stop comes, and the goodbye.
    pub(super) async fn run(mut self, lane: Lane, sources: &Sources) -> Result<(), TransferError> {
        self.write(&wire::preamble(lane), Stage::Offer).await?;
        let mut index = 0;
        while !self.stop.is_stopped() {
            let Some(source) = sources.take() else { break };
            let offered = match source {
                Source::File { path, name } => self.send_path(index, path, name).await?,
                Source::Link { name, target } => {
                    self.send_link(index, name, target).await?;
                    true
                }
                Source::Stream { mut reader, name } => {
                    self.send_stream(index, &mut *reader, name).await?;
                    true
                }
            };
            if offered {
                index += 1;
            }
        }
        let _ = self.expect.send(Expect::Bye);
        let mut bye = Vec::new();
        SenderFrame::Bye.emit(&mut bye);
        self.write(&bye, Stage::Goodbye).await?;
        self.writer
            .flush()
            .await
            .map_err(|source| TransferError::PeerClosed {
                stage: Stage::Goodbye,
                source,
            })
    }

    /// Offers and sends one regular file; false if it failed here before
    /// anything went on the wire.
    async fn send_path(
        &mut self,
        index: usize,
        path: PathBuf,
        name: TransferName,
    ) -> Result<bool, TransferError> {
        let opened = async {
            let file = File::open(&path).await.map_err(|e| ("open", e))?;
            let meta = file.metadata().await.map_err(|e| ("inspect", e))?;
            if !meta.is_file() {
                let e = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
                return Err(("send", e));
            }
            Ok((file, meta))
        };
        let (file, meta) = match opened.await {
            Ok(opened) => opened,
            Err((action, e)) => {
                self.event(&name, EventKind::Started { size: None });
                let error = TransferError::local(action, &path, e);
                self.event(&name, EventKind::Finished(Ending::Failed(&error)));
                self.push(Record {
                    local_error: Some(error),
                    ..Record::new(name.clone(), None, None)
                });
                return Ok(false);
            }
        };
        let size = meta.len();
        let offer = Offer {
            name: name.clone(),
            size: Some(size),
            metadata: self.options.metadata.then(|| metadata_of(&meta)),
        };
        let input = Input::File {
            file,
            path,
            size,
            stamp: Stamp::of(&meta),
        };
        self.offer_and_send(index, offer, input).await?;
        Ok(true)
    }

    /// Offers and sends a stream of unknown length.
    async fn send_stream(
        &mut self,
        index: usize,
        reader: &mut (dyn AsyncRead + Send + Unpin),
        name: TransferName,
    ) -> Result<(), TransferError> {
        let offer = Offer {
            name,
            size: None,
            metadata: None,
        };
        self.offer_and_send(index, offer, Input::Stream(reader))
            .await
    }

    /// Sends a link: one frame, one answer.
    async fn send_link(
        &mut self,
        index: usize,
        name: TransferName,
        target: LinkTarget,
    ) -> Result<(), TransferError> {
        self.event(&name, EventKind::Started { size: None });
        self.push(Record {
            hash: Some(blake3::hash(target.as_str().as_bytes())),
            ..Record::new(name.clone(), None, Some(index))
        });
        let _ = self.expect.send(Expect::Link {
            index,
            name: name.clone(),
        });
        let mut out = Vec::new();
        SenderFrame::Link { name, target }.emit(&mut out);
        self.write(&out, Stage::Offer).await
    }

    /// Writes the offer and the data after it, then END, or CANCEL if the
    /// file ended early.
    async fn offer_and_send(
        &mut self,
        index: usize,
        offer: Offer,
        mut input: Input<'_>,
    ) -> Result<(), TransferError> {
        let name = offer.name.clone();
        self.event(&name, EventKind::Started { size: offer.size });
        self.push(Record::new(name.clone(), offer.size, Some(index)));
        let _ = self.expect.send(Expect::Offer {
            index,
            name: name.clone(),
            size: offer.size,
        });
        let mut out = Vec::new();
        SenderFrame::Offer(offer).emit(&mut out);
        self.write(&out, Stage::Offer).await?;
        let mut hasher = blake3::Hasher::new();
        match self
            .send_data(index, &name, &mut input, &mut hasher)
            .await?
        {
            Ended::Cancelled => {}
            Ended::Complete => {
                let hash = hasher.finalize();
                let mut out = Vec::new();
                SenderFrame::End(hash).emit(&mut out);
                self.write(&out, Stage::Data).await?;
                self.update(|record| record.hash = Some(hash));
            }
        }
        self.writer
            .flush()
            .await
            .map_err(|source| TransferError::PeerClosed {
                stage: Stage::Data,
                source,
            })
    }

    /// Writes the file's data in DATA frames, acting on what the receiver
    /// says meanwhile, until the end of the file or until it ends early.
    /// The answers are looked at before every frame, so that a SEEK or a
    /// stop comes at most one frame after the news.
    async fn send_data(
        &mut self,
        index: usize,
        name: &TransferName,
        input: &mut Input<'_>,
        hasher: &mut blake3::Hasher,
    ) -> Result<Ended, TransferError> {
        let size = match input {
            Input::File { size, .. } => Some(*size),
            Input::Stream(_) => None,
        };
        let mut buf = vec![0; CHUNK_LEN];
        let mut frame = Vec::with_capacity(MAX_DATA_LEN + 3);
        let mut redirect = Redirect::default();
        let mut pos = 0u64;
        self.progress(name, pos, size);
        'chunks: loop {
            if let Some(ended) = self
                .listen(index, name, input, hasher, &mut redirect, &mut pos)
                .await?
            {
                return Ok(ended);
            }
            let want = match size {
                Some(size) => usize::try_from(size - pos)
                    .unwrap_or(usize::MAX)
                    .min(CHUNK_LEN),
                None => CHUNK_LEN,
            };
            if want == 0 {
                break;
            }
            let n = match read_full(input, &mut buf[..want]).await {
                Ok(n) => n,
                Err(e) => return self.fail_local(input.path(), "read", e).await,
            };
            if n == 0 {
                if size.is_some() {
                    let e = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the file shrank while it was being sent",
                    );
                    return self.fail_local(input.path(), "read", e).await;
                }
                break;
            }
            for (i, piece) in buf[..n].chunks(MAX_DATA_LEN).enumerate() {
                if i > 0 {
                    let at = pos;
                    if let Some(ended) = self
                        .listen(index, name, input, hasher, &mut redirect, &mut pos)
                        .await?
                    {
                        return Ok(ended);
                    }
                    if pos != at {
                        // Skipped ahead: the rest of this chunk is behind.
                        continue 'chunks;
                    }
                }
                hasher.update(piece);
                frame.clear();
                SenderFrame::Data(piece).emit(&mut frame);
                self.write(&frame, Stage::Data).await?;
                let len = piece.len() as u64;
                pos += len;
                self.update(|record| record.bytes_sent += len);
            }
            self.progress(name, pos, size);
        }
        if let Input::File { file, stamp, .. } = input {
            let now = file.metadata().await.map(|meta| Stamp::of(&meta));
            if now.ok() != Some(*stamp) {
                let e = io::Error::other("the file changed while it was being sent; send it again");
                return self.fail_local(input.path(), "read", e).await;
            }
        }
        if size.is_none() {
            self.update(|record| record.size = Some(pos));
        }
        Ok(Ended::Complete)
    }

    /// Acts on what the receiver said and on a stop: `Some` if the file
    /// ends here; moves `pos` (and the hasher) if what the receiver has
    /// turned out to be the file's first bytes.
    async fn listen(
        &mut self,
        index: usize,
        name: &TransferName,
        input: &mut Input<'_>,
        hasher: &mut blake3::Hasher,
        redirect: &mut Redirect,
        pos: &mut u64,
    ) -> Result<Option<Ended>, TransferError> {
        let mut last = false;
        while let Ok(heard) = self.answers.try_recv() {
            if heard.index != index {
                continue;
            }
            match heard.kind {
                HeardKind::Last => last = true,
                HeardKind::Have { len, hash } => match input {
                    Input::File { path, .. } if !redirect.settled && *pos < len => {
                        redirect.check = Some(start_prefix_check(path.clone(), len, hash));
                    }
                    // The data has passed what the receiver has: it
                    // compares all of it itself.
                    Input::File { .. } => redirect.settled = true,
                    Input::Stream(_) => {
                        // A stream cannot be reread to compare.
                        redirect.settled = true;
                        self.frame(&SenderFrame::Differs).await?;
                    }
                },
            }
        }
        if last {
            return self.cancel("the receiver has answered").await.map(Some);
        }
        if self.stop.is_stopped() {
            self.update(|record| record.stopped = true);
            return self.cancel("interrupted").await.map(Some);
        }
        if !redirect
            .check
            .as_ref()
            .is_some_and(|c| c.task.is_finished())
        {
            return Ok(None);
        }
        let Some(mut done) = redirect.check.take() else {
            return Ok(None);
        };
        redirect.settled = true;
        let (len, theirs) = (done.len, done.theirs);
        match (&mut done.task).await {
            Ok(Ok((ours, read))) if read == len && ours.finalize() == theirs => {
                if *pos < len {
                    self.seek(input, len).await?;
                    *hasher = ours;
                    *pos = len;
                    self.update(|record| record.resumed_from = len);
                    self.event(name, EventKind::Resumed { at: len });
                    let size = match input {
                        Input::File { size, .. } => Some(*size),
                        Input::Stream(_) => None,
                    };
                    self.progress(name, *pos, size);
                }
            }
            // Other bytes, or ones that could not be read: the receiver
            // compares what comes and takes it.
            _ => self.frame(&SenderFrame::Differs).await?,
        }
        Ok(None)
    }

    /// Skips the input to `to` and tells the receiver.
    async fn seek(&mut self, input: &mut Input<'_>, to: u64) -> Result<(), TransferError> {
        if let Input::File { file, path, .. } = input {
            if let Err(e) = file.seek(SeekFrom::Start(to)).await {
                let path = path.clone();
                self.cancel("cannot read the file on the sender").await?;
                return Err(TransferError::local("seek in", path, e));
            }
        }
        self.frame(&SenderFrame::Seek(to)).await
    }

    /// Ends the file on a local failure: CANCEL goes out, the error goes
    /// in its record.
    async fn fail_local(
        &mut self,
        path: PathBuf,
        action: &'static str,
        error: io::Error,
    ) -> Result<Ended, TransferError> {
        let text = format!("cannot read the file on the sender: {error}");
        self.update(|record| record.local_error = Some(TransferError::local(action, path, error)));
        self.cancel(&text).await
    }

    /// Ends the file early with CANCEL.
    async fn cancel(&mut self, why: &str) -> Result<Ended, TransferError> {
        self.frame(&SenderFrame::Cancel(Text::new(why))).await?;
        Ok(Ended::Cancelled)
    }

    async fn frame(&mut self, frame: &SenderFrame<'_>) -> Result<(), TransferError> {
        let mut out = Vec::new();
        frame.emit(&mut out);
        self.write(&out, Stage::Data).await
    }

    async fn write(&mut self, bytes: &[u8], stage: Stage) -> Result<(), TransferError> {
        self.writer
            .write_all(bytes)
            .await
            .map_err(|source| TransferError::PeerClosed { stage, source })
    }

    fn event(&self, name: &TransferName, kind: EventKind<'_>) {
        (self.events)(Event { name, kind });
    }

    fn progress(&self, name: &TransferName, done: u64, total: Option<u64>) {
        self.event(
            name,
            EventKind::Progress(Progress {
                phase: Phase::Transferring,
                done,
                total: total.unwrap_or(0),
            }),
        );
    }

    fn push(&self, record: Record) {
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(record);
    }

    /// Changes the record of the file being sent: the last one.
    fn update(&self, change: impl FnOnce(&mut Record)) {
        let mut records = self
            .records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(record) = records.last_mut() {
            change(record);
        }
    }
}

impl Record {
    fn new(name: TransferName, size: Option<u64>, index: Option<usize>) -> Self {
        Self {
            name,
            size,
            index,
            bytes_sent: 0,
            resumed_from: 0,
            hash: None,
            stopped: false,
            local_error: None,
        }
    }
}

/// Starts hashing the first `len` bytes of the file at `path`, on the
/// blocking pool, so that the data does not wait for it.
fn start_prefix_check(path: PathBuf, len: u64, theirs: Hash) -> PrefixCheck {
    let cancel = Arc::new(AtomicBool::new(false));
    let stop = cancel.clone();
    let task = tokio::task::spawn_blocking(move || hash_prefix(&path, len, &stop));
    PrefixCheck {
        len,
        theirs,
        task,
        cancel,
    }
}

/// The hasher after the first `len` bytes of the file (fewer if it is
/// shorter), and how many it read.
fn hash_prefix(path: &Path, len: u64, cancel: &AtomicBool) -> io::Result<(blake3::Hasher, u64)> {
    use std::io::Read;

    let mut file = std::fs::File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0; CHUNK_LEN];
    let mut done = 0u64;
    while done < len {
        if cancel.load(Ordering::Relaxed) {
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(CHUNK_LEN);
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    Ok((hasher, done))
}

/// Reads until `buf` is full or the input ends.
async fn read_full(input: &mut Input<'_>, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = match input {
            Input::File { file, .. } => file.read(&mut buf[filled..]).await,
            Input::Stream(reader) => reader.read(&mut buf[filled..]).await,
        };
        match n {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The mode and modification time of a local file, to send.
fn metadata_of(meta: &std::fs::Metadata) -> Metadata {
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode()
    };
    #[cfg(not(unix))]
    let mode = if meta.permissions().readonly() {
        0o444
    } else {
        0o644
    };
    let (seconds, nanos) = match meta.modified() {
        Ok(time) => match time.duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => (
                i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
                after.subsec_nanos(),
            ),
            Err(before) => {
                let before = before.duration();
                let seconds = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
                match before.subsec_nanos() {
                    0 => (-seconds, 0),
                    n => (-seconds - 1, 1_000_000_000 - n),
                }
            }
        },
        Err(_) => (0, 0),
    };
    // Both parts are in range by construction.
    Metadata::new(mode, seconds, nanos)
        .unwrap_or_else(|| Metadata::new(mode, 0, 0).expect("zero nanoseconds are in range"))
}
