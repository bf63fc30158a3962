//! The sending side of one file.

use std::future::Future;
use std::io::{self, SeekFrom};
use std::path::Path;
use std::pin::Pin;

use tokio::fs::File;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWrite, AsyncWriteExt};

use super::error::{Stage, TransferError};
use super::hashing::hash_from;
use super::name::TransferName;
use super::progress::{Phase, Progress};
use super::wire::{self, Hash, Message, Offer, Outcome, ProtocolError, ReadError};
use super::CHUNK_LEN;

/// What a completed send did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The name the file was sent under.
    pub name: TransferName,
    /// The file's length in bytes.
    pub size: u64,
    /// The bytes of file data that went over the stream this time.
    pub bytes_sent: u64,
    /// Where the data started: the bytes the receiver already had.
    pub resumed_from: u64,
    /// The file's BLAKE3.
    pub hash: Hash,
    /// The receiver already had this exact file; no data was sent.
    pub already_present: bool,
}

/// Sends the file at `path` under `name` over one stream: writes on `writer`
/// (shut down on return, unless the stream failed) and reads the receiver's
/// answers from `reader`, also while the data flows, so that a receiver that
/// gives up is heard at once. Returns once the receiver reports the file
/// verified and stored. The file is read to hash it and again to send it
/// (a resume also rereads the prefix to compare); should it change in
/// between, the receiver's check fails and nothing is stored.
pub async fn send_file<R, W, P>(
    reader: &mut R,
    writer: &mut W,
    path: &Path,
    name: &TransferName,
    mut progress: P,
) -> Result<Sent, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    P: FnMut(Progress),
{
    let local = |action, e| TransferError::local(action, path, e);
    let mut file = File::open(path).await.map_err(|e| local("open", e))?;
    let meta = file.metadata().await.map_err(|e| local("inspect", e))?;
    if !meta.is_file() {
        let e = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        return Err(local("send", e));
    }
    let mut hasher = blake3::Hasher::new();
    // The size sent is the size hashed, whatever the metadata said.
    let size = hash_from(&mut file, &mut hasher, None, meta.len(), &mut progress)
        .await
        .map_err(|e| local("read", e))?;
    let hash = hasher.finalize();

    let offer = Message::Offer(Offer {
        name: name.clone(),
        size,
        hash,
    });
    wire::write_messages(writer, &wire::preamble(), &[offer])
        .await
        .map_err(|source| TransferError::PeerClosed {
            stage: Stage::Offer,
            source,
        })?;
    let sent = |bytes_sent, resumed_from, already_present| Sent {
        name: name.clone(),
        size,
        bytes_sent,
        resumed_from,
        hash,
        already_present,
    };

    let (offset, prefix_hash) = match wire::read_message(reader).await {
        Ok(Message::Accept {
            offset,
            prefix_hash,
        }) => (offset, prefix_hash),
        Ok(Message::Present) => {
            let _ = writer.shutdown().await;
            return Ok(sent(0, size, true));
        }
        Ok(Message::Refuse { reason, message }) => {
            return Err(TransferError::Refused { reason, message })
        }
        Ok(other) => {
            return Err(ProtocolError::Unexpected {
                expected: "ACCEPT, PRESENT or REFUSE",
                got: other.kind(),
            }
            .into())
        }
        Err(ReadError::Malformed(error)) => return Err(error.into()),
        Err(ReadError::Closed(source)) => {
            return Err(TransferError::PeerClosed {
                stage: Stage::Reply,
                source,
            })
        }
    };
    if offset > size {
        return Err(ProtocolError::OffsetBeyondSize { offset, size }.into());
    }

    let start = if offset == 0 {
        0
    } else {
        file.seek(SeekFrom::Start(0))
            .await
            .map_err(|e| local("seek in", e))?;
        let mut ours = blake3::Hasher::new();
        let n = hash_from(&mut file, &mut ours, Some(offset), offset, &mut progress)
            .await
            .map_err(|e| local("read", e))?;
        if n == offset && ours.finalize() == prefix_hash {
            offset
        } else {
            // The receiver holds something else: a damaged partial file,
            // or one from a file that has since changed here.
            0
        }
    };
    file.seek(SeekFrom::Start(start))
        .await
        .map_err(|e| local("seek in", e))?;

    let outcome = send_data(reader, writer, &mut file, path, start, size, &mut progress).await?;
    let _ = writer.shutdown().await;
    match outcome {
        Outcome::Stored => Ok(sent(size - start, start, false)),
        Outcome::HashMismatch { actual } => Err(TransferError::HashMismatch {
            expected: hash,
            actual,
        }),
        Outcome::Failed { message } => Err(TransferError::RemoteIo { message }),
    }
}

/// Sends START and the file from `start` to `size`, and returns the
/// receiver's outcome.
async fn send_data<R, W>(
    reader: &mut R,
    writer: &mut W,
    file: &mut File,
    path: &Path,
    start: u64,
    size: u64,
    progress: &mut impl FnMut(Progress),
) -> Result<Outcome, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    // One read of the receiver's answer spans the whole data phase, so that
    // a receiver that stops early is heard, and no half-read frame is lost
    // between chunks.
    let reply = wire::read_message(reader);
    tokio::pin!(reply);
    let mut start_frame = Vec::new();
    Message::Start { offset: start }.emit(&mut start_frame);
    let mut buf = vec![0; CHUNK_LEN];
    let mut sent = start;
    progress(Progress {
        phase: Phase::Transferring,
        done: sent,
        total: size,
    });
    let interrupted = 'send: {
        if let Err(stop) = or_hear(writer.write_all(&start_frame), reply.as_mut()).await {
            break 'send Some(stop);
        }
        while sent < size {
            let want = usize::try_from(size - sent)
                .unwrap_or(usize::MAX)
                .min(CHUNK_LEN);
            let chunk = &mut buf[..want];
            let n = read_full(file, chunk)
                .await
                .map_err(|e| TransferError::local("read", path, e))?;
            if n < want {
                let e = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while it was being sent",
                );
                return Err(TransferError::local("read", path, e));
            }
            if let Err(stop) = or_hear(writer.write_all(chunk), reply.as_mut()).await {
                break 'send Some(stop);
            }
            sent += want as u64;
            progress(Progress {
                phase: Phase::Transferring,
                done: sent,
                total: size,
            });
        }
        or_hear(writer.flush(), reply.as_mut()).await.err()
    };
    match interrupted {
        Some(Interrupted::Heard(message)) => Err(early(message)),
        // Even when the stream broke under a write, the receiver may have
        // said why before it went.
        Some(Interrupted::Broken(source)) => Err(match reply.await {
            Err(ReadError::Closed(_)) => TransferError::PeerClosed {
                stage: Stage::Data,
                source,
            },
            other => early(other),
        }),
        None => match reply.await {
            Ok(Message::Outcome(outcome)) => Ok(outcome),
            Ok(other) => Err(ProtocolError::Unexpected {
                expected: "OUTCOME",
                got: other.kind(),
            }
            .into()),
            Err(ReadError::Malformed(error)) => Err(error.into()),
            Err(ReadError::Closed(source)) => Err(TransferError::PeerClosed {
                stage: Stage::Outcome,
                source,
            }),
        },
    }
}

/// Why a write of the data phase did not complete.
enum Interrupted {
    /// The stream failed.
    Broken(io::Error),
    /// The receiver spoke first.
    Heard(Result<Message, ReadError>),
}

/// Runs a write on the stream unless the receiver's answer comes first.
async fn or_hear<F>(
    write: impl Future<Output = io::Result<()>>,
    reply: Pin<&mut F>,
) -> Result<(), Interrupted>
where
    F: Future<Output = Result<Message, ReadError>>,
{
    tokio::select! {
        biased;
        message = reply => Err(Interrupted::Heard(message)),
        written = write => written.map_err(Interrupted::Broken),
    }
}

/// The error for a message from the receiver before all the data was sent.
/// Only a failure may come early.
fn early(message: Result<Message, ReadError>) -> TransferError {
    match message {
        Ok(Message::Outcome(Outcome::Failed { message })) => TransferError::RemoteIo { message },
        Ok(other) => ProtocolError::Unexpected {
            expected: "nothing before the end of the data",
            got: other.kind(),
        }
        .into(),
        Err(ReadError::Malformed(error)) => error.into(),
        Err(ReadError::Closed(source)) => TransferError::PeerClosed {
            stage: Stage::Data,
            source,
        },
    }
}

/// Reads until `buf` is full or the file ends.
async fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]).await? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}
