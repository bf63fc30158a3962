//! The receiving side of one file.
//!
//! The data goes to a partial file beside its final name,
//! `.NAME.<first 16 hex digits of the BLAKE3>.ltx-part`, which becomes the
//! final file only once all of it has arrived, hashed right, and been synced.
//! A partial file outlives a broken connection, so that the same offer (same
//! name, same hash) resumes from it; an offer of other content has another
//! hash and so another partial file, and never reads this one. Such stale
//! partial files are left for the user to delete: the receiver cannot tell
//! one that will never be resumed from one whose sender is about to retry.
//!
//! The checks on the way to the file (no link among the directories, none at
//! the partial file's name) are made by path. They keep a sender inside the
//! receiver's directory; they do not stop a local user who can write into
//! that directory and swaps a directory for a link during a transfer.

use std::io::{self, SeekFrom};
use std::path::{Path, PathBuf};

use tokio::fs::File;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWrite, AsyncWriteExt};

use super::error::{Stage, TransferError};
use super::hashing::hash_from;
use super::name::{TransferName, MAX_COMPONENT_LEN, PART_SUFFIX};
use super::progress::{Phase, Progress};
use super::space::available_space;
use super::wire::{
    self, Hash, Message, Offer, Outcome, ProtocolError, ReadError, RefuseReason, Text,
};
use super::CHUNK_LEN;

/// What a receiver allows.
#[derive(Debug, Clone, Default)]
pub struct ReceiveOptions {
    /// Replace an existing file of the same name (atomically, once the new
    /// one is complete and verified).
    pub force: bool,
    /// Treat the disk as if at most this many bytes of any one file fit on
    /// it: an offer needing more is refused as for a full disk.
    pub max_file_bytes: Option<u64>,
    /// Fail writes that would take the partial file past this many bytes,
    /// as a disk that fills up during the transfer would.
    #[cfg(test)]
    pub(crate) disk_full_after: Option<u64>,
}

impl ReceiveOptions {
    /// Options for a receiver: whether to replace existing files, and the
    /// largest file it takes.
    pub fn new(force: bool, max_file_bytes: Option<u64>) -> Self {
        Self {
            force,
            max_file_bytes,
            #[cfg(test)]
            disk_full_after: None,
        }
    }
}

/// A file this side holds at the end of a transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The name the sender gave it.
    pub name: TransferName,
    /// Where it is: the receiver's directory joined with the name.
    pub path: PathBuf,
    /// Its length in bytes.
    pub size: u64,
    /// Its BLAKE3.
    pub hash: Hash,
    /// The bytes that were already here from an earlier attempt.
    pub resumed_from: u64,
    /// The bytes that came over the stream this time.
    pub bytes_received: u64,
    /// The file was already here, identical; nothing was written.
    pub already_present: bool,
}

/// Receives one file into `dir` over one stream: reads the offer from
/// `reader`, answers on `writer` (shut down on return), and stores the data.
/// An identical file already there (same size and BLAKE3) is reported
/// present, even without `force`, and nothing is sent. Nothing appears under
/// the final name unless the whole file verified; the partial file stays for
/// a rerun, unless its hash was wrong. It has no timeout of its own (wrap it
/// in `tokio::time::timeout`); dropping it is as safe as a broken stream.
pub async fn receive_file<R, W, P>(
    reader: &mut R,
    writer: &mut W,
    dir: &Path,
    options: &ReceiveOptions,
    mut progress: P,
) -> Result<Received, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    P: FnMut(Progress),
{
    let offer = read_offer(reader, writer).await?;
    let mut part = match prepare(dir, &offer, options, &mut progress).await {
        Ok(Prepared::Present(path)) => return answer_present(writer, offer, path).await,
        Ok(Prepared::Ready(part)) => part,
        Err(refusal) => return Err(refuse(writer, refusal).await),
    };

    // What is already here, and its hash, which stays in the hasher so that
    // the prefix is read once.
    let mut hasher = blake3::Hasher::new();
    let offset = match hash_held_prefix(&mut part, &offer, &mut hasher, &mut progress).await {
        Ok(offset) => offset,
        Err(refusal) => return Err(refuse(writer, refusal).await),
    };
    let accept = Message::Accept {
        offset,
        prefix_hash: hasher.finalize(),
    };
    wire::write_messages(writer, &[], &[accept])
        .await
        .map_err(|source| TransferError::PeerClosed {
            stage: Stage::Reply,
            source,
        })?;

    let start = read_start(reader, writer, offset).await?;
    if let Err(error) = position_at_start(&mut part, &mut hasher, start, offset).await {
        return Err(fail(writer, error).await);
    }
    receive_data(
        reader,
        writer,
        &mut part,
        &offer,
        start,
        &mut hasher,
        options,
        &mut progress,
    )
    .await?;
    verify_and_store(writer, part, offer, hasher, start, options).await
}

/// Answers an offer of a file that is already here, identical: nothing is
/// sent, and the file counts as received.
async fn answer_present<W: AsyncWrite + Unpin>(
    writer: &mut W,
    offer: Offer,
    path: PathBuf,
) -> Result<Received, TransferError> {
    wire::write_messages(writer, &[], &[Message::Present])
        .await
        .map_err(|source| TransferError::PeerClosed {
            stage: Stage::Reply,
            source,
        })?;
    let _ = writer.shutdown().await;
    Ok(Received {
        name: offer.name,
        path,
        size: offer.size,
        hash: offer.hash,
        resumed_from: offer.size,
        bytes_received: 0,
        already_present: true,
    })
}

/// Feeds the prefix the partial file already holds into `hasher` and
/// returns its length, the offset the receiver offers to resume from.
async fn hash_held_prefix(
    part: &mut Part,
    offer: &Offer,
    hasher: &mut blake3::Hasher,
    progress: &mut impl FnMut(Progress),
) -> Result<u64, Refusal> {
    if part.held > offer.size {
        // Longer than the file it is named after: not a prefix of it.
        part.file
            .set_len(0)
            .await
            .map_err(|e| refuse_io(&offer.name, "cannot reset the partial file of", e))?;
        Ok(0)
    } else if part.held > 0 {
        hash_from(&mut part.file, hasher, Some(part.held), part.held, progress)
            .await
            .map_err(|e| refuse_io(&offer.name, "cannot read the partial file of", e))
    } else {
        Ok(0)
    }
}

/// Reads the sender's START: the offer's offset, or 0 to start over.
/// Anything else is answered as a failure.
async fn read_start<R, W>(reader: &mut R, writer: &mut W, offset: u64) -> Result<u64, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match wire::read_message(reader).await {
        Ok(Message::Start { offset: start }) if start == offset || start == 0 => Ok(start),
        Ok(Message::Start { offset: got }) => {
            let error = ProtocolError::BadStart {
                offered: offset,
                got,
            };
            Err(fail(writer, error.into()).await)
        }
        Ok(other) => {
            let error = ProtocolError::Unexpected {
                expected: "START",
                got: other.kind(),
            };
            Err(fail(writer, error.into()).await)
        }
        Err(ReadError::Malformed(error)) => Err(fail(writer, error.into()).await),
        Err(ReadError::Closed(source)) => Err(TransferError::PeerClosed {
            stage: Stage::Start,
            source,
        }),
    }
}

/// Places the partial file at `start`; a sender that starts over (at 0
/// rather than at `offset`) makes the prefix held here useless.
async fn position_at_start(
    part: &mut Part,
    hasher: &mut blake3::Hasher,
    start: u64,
    offset: u64,
) -> Result<(), TransferError> {
    if start != offset {
        // The sender's prefix differs from ours: ours is of no use.
        hasher.reset();
        part.file
            .set_len(0)
            .await
            .map_err(|e| TransferError::local("truncate", &part.path, e))?;
    }
    part.file
        .seek(SeekFrom::Start(start))
        .await
        .map_err(|e| TransferError::local("seek in", &part.path, e))?;
    Ok(())
}

/// Syncs the complete partial file, checks its hash against the offer's,
/// stores it under its final name and tells the sender the outcome.
async fn verify_and_store<W: AsyncWrite + Unpin>(
    writer: &mut W,
    mut part: Part,
    offer: Offer,
    hasher: blake3::Hasher,
    start: u64,
    options: &ReceiveOptions,
) -> Result<Received, TransferError> {
    if let Err(e) = sync(&mut part.file).await {
        return Err(fail(writer, TransferError::local("sync", &part.path, e)).await);
    }
    let actual = hasher.finalize();
    if actual != offer.hash {
        drop(part.file);
        // A file that is wrong whole would only be resumed into another
        // mismatch.
        let _ = tokio::fs::remove_file(&part.path).await;
        let _ = wire::write_messages(
            writer,
            &[],
            &[Message::Outcome(Outcome::HashMismatch { actual })],
        )
        .await;
        let _ = writer.shutdown().await;
        return Err(TransferError::HashMismatch {
            expected: offer.hash,
            actual,
        });
    }
    if let Err(e) = store(&part.path, &part.final_path, options.force).await {
        return Err(fail(writer, TransferError::local("store", &part.final_path, e)).await);
    }
    drop(part.file);
    // The file is stored whether or not the sender hears about it; if it
    // does not, its rerun finds the file present.
    let _ = wire::write_messages(writer, &[], &[Message::Outcome(Outcome::Stored)]).await;
    let _ = writer.shutdown().await;
    Ok(Received {
        name: offer.name,
        path: part.final_path,
        size: offer.size,
        hash: actual,
        resumed_from: start,
        bytes_received: offer.size - start,
        already_present: false,
    })
}

/// A refusal decided before any data was accepted.
#[derive(Debug)]
struct Refusal {
    reason: RefuseReason,
    message: String,
}

/// Where an accepted file's data goes.
#[derive(Debug)]
struct Part {
    /// The partial file, open for reading and writing and locked.
    file: File,
    /// Its path.
    path: PathBuf,
    /// Where it goes when it is complete.
    final_path: PathBuf,
    /// How long it was when opened.
    held: u64,
}

/// What to do with an offer.
#[derive(Debug)]
enum Prepared {
    /// The file is already here, identical.
    Present(PathBuf),
    /// Receive it into this partial file.
    Ready(Part),
}

/// Reads the preamble and the offer. Faults in the offer are answered with
/// a refusal; a stream that is not ours at all gets no answer.
async fn read_offer<R, W>(reader: &mut R, writer: &mut W) -> Result<Offer, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let closed = |source| TransferError::PeerClosed {
        stage: Stage::Offer,
        source,
    };
    match wire::read_preamble(reader).await {
        Ok(()) => {}
        Err(ReadError::Closed(source)) => return Err(closed(source)),
        Err(ReadError::Malformed(error @ ProtocolError::UnsupportedVersion(_))) => {
            let refusal = Refusal {
                reason: RefuseReason::Version,
                message: error.to_string(),
            };
            return Err(refuse(writer, refusal).await);
        }
        Err(ReadError::Malformed(error)) => return Err(error.into()),
    }
    let error = match wire::read_message(reader).await {
        Ok(Message::Offer(offer)) => return Ok(offer),
        Err(ReadError::Closed(source)) => return Err(closed(source)),
        Err(ReadError::Malformed(error @ ProtocolError::BadName { .. })) => {
            let refusal = Refusal {
                reason: RefuseReason::BadName,
                message: error.to_string(),
            };
            return Err(refuse(writer, refusal).await);
        }
        Err(ReadError::Malformed(error)) => error,
        Ok(other) => ProtocolError::Unexpected {
            expected: "OFFER",
            got: other.kind(),
        },
    };
    let refusal = Refusal {
        reason: RefuseReason::Malformed,
        message: error.to_string(),
    };
    refuse(writer, refusal).await;
    Err(error.into())
}

/// Decides whether to take the offer and, if so, opens its partial file.
/// Nothing is created before every check has passed.
async fn prepare(
    dir: &Path,
    offer: &Offer,
    options: &ReceiveOptions,
    progress: &mut impl FnMut(Progress),
) -> Result<Prepared, Refusal> {
    let name = &offer.name;
    let final_path = name.under(dir);
    let directories = check_directories(dir, name).await?;

    let part_path = part_path(&final_path, name.file_name(), &offer.hash);
    let mut held = 0;
    if directories.missing.is_empty() {
        if check_final_name(&final_path, offer, options, progress).await? {
            return Ok(Prepared::Present(final_path));
        }
        held = held_bytes(&part_path, name).await?;
    }
    check_space(&directories.deepest_existing, offer, held, options)?;
    create_directories(&directories.missing, name).await?;

    let file = open_part(part_path.clone()).await.map_err(|e| match e {
        OpenError::Busy => Refusal {
            reason: RefuseReason::Io,
            message: format!("another transfer of {name} is in progress on the receiver"),
        },
        OpenError::Io(e) => refuse_io(name, "cannot open the partial file of", e),
    })?;
    Ok(Prepared::Ready(Part {
        file,
        path: part_path,
        final_path,
        held,
    }))
}

/// The directories on the way to a file, as found before any is created.
#[derive(Debug)]
struct Directories {
    /// The deepest one that exists, where the free space is read.
    deepest_existing: PathBuf,
    /// The ones to create, outermost first.
    missing: Vec<PathBuf>,
}

/// Checks the directories on the way to `name` under `dir`: each must be a
/// real directory or absent. A symbolic link is refused, so the name cannot
/// lead out of `dir`.
async fn check_directories(dir: &Path, name: &TransferName) -> Result<Directories, Refusal> {
    let components: Vec<&str> = name.components().collect();
    let directories = &components[..components.len() - 1];
    let mut deepest_existing = dir.to_path_buf();
    let mut missing = Vec::new();
    let mut path = dir.to_path_buf();
    for (depth, component) in directories.iter().enumerate() {
        path.push(component);
        if !missing.is_empty() {
            missing.push(path.clone());
            continue;
        }
        let shown = directories[..=depth].join("/");
        match tokio::fs::symlink_metadata(&path).await {
            Ok(meta) if meta.is_dir() => deepest_existing = path.clone(),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Refusal {
                    reason: RefuseReason::BadName,
                    message: format!("{shown} is a symbolic link on the receiver"),
                })
            }
            Ok(_) => {
                return Err(Refusal {
                    reason: RefuseReason::Io,
                    message: format!("{shown} exists on the receiver and is not a directory"),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(path.clone()),
            Err(e) => return Err(refuse_io(name, "cannot inspect a directory of", e)),
        }
    }
    Ok(Directories {
        deepest_existing,
        missing,
    })
}

/// Checks what is at the file's final name: true if it is the offered file
/// already, identical; an error if something else is there that may not be
/// replaced.
async fn check_final_name(
    final_path: &Path,
    offer: &Offer,
    options: &ReceiveOptions,
    progress: &mut impl FnMut(Progress),
) -> Result<bool, Refusal> {
    let name = &offer.name;
    match tokio::fs::symlink_metadata(final_path).await {
        Ok(meta) if meta.is_dir() => Err(Refusal {
            reason: RefuseReason::Exists,
            message: format!("{name} exists on the receiver and is a directory"),
        }),
        Ok(meta) => {
            if meta.is_file() && meta.len() == offer.size {
                match hash_existing(final_path, meta.len(), progress).await {
                    Ok(hash) if hash == offer.hash => return Ok(true),
                    Ok(_) => {}
                    Err(e) => return Err(refuse_io(name, "cannot read the existing", e)),
                }
            }
            if !options.force {
                return Err(Refusal {
                    reason: RefuseReason::Exists,
                    message: format!(
                        "{name} already exists on the receiver (overwrite with --force)"
                    ),
                });
            }
            Ok(false)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(refuse_io(name, "cannot inspect", e)),
    }
}

/// How many bytes the partial file from an earlier attempt holds; 0 if
/// there is none.
async fn held_bytes(part_path: &Path, name: &TransferName) -> Result<u64, Refusal> {
    match tokio::fs::symlink_metadata(part_path).await {
        Ok(meta) if meta.is_file() => Ok(meta.len()),
        Ok(_) => Err(Refusal {
            reason: RefuseReason::Io,
            message: format!("the partial file of {name} is not a regular file"),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(refuse_io(name, "cannot inspect the partial file of", e)),
    }
}

/// Refuses the offer if the rest of the file does not fit on the disk, or
/// within the receiver's limit on one file.
fn check_space(
    deepest_existing: &Path,
    offer: &Offer,
    held: u64,
    options: &ReceiveOptions,
) -> Result<(), Refusal> {
    // A partial file longer than the offer is started over, so it counts
    // for nothing here.
    let kept = if held <= offer.size { held } else { 0 };
    let need = offer.size - kept;
    let mut have = available_space(deepest_existing)
        .map_err(|e| refuse_io(&offer.name, "cannot read the free space for", e))?;
    if let Some(limit) = options.max_file_bytes {
        have = have.min(limit.saturating_sub(kept));
    }
    if need > have {
        return Err(Refusal {
            reason: RefuseReason::NoSpace,
            message: format!("not enough space: need {need} bytes, have {have} bytes"),
        });
    }
    Ok(())
}

/// Creates the missing directories on the way to the file, outermost first.
async fn create_directories(missing: &[PathBuf], name: &TransferName) -> Result<(), Refusal> {
    for path in missing {
        match tokio::fs::create_dir(path).await {
            Ok(()) => {}
            // Another transfer made it meanwhile; it must still be a real
            // directory.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let is_dir = tokio::fs::symlink_metadata(path)
                    .await
                    .is_ok_and(|meta| meta.is_dir());
                if !is_dir {
                    return Err(refuse_io(name, "cannot create a directory for", e));
                }
            }
            Err(e) => return Err(refuse_io(name, "cannot create a directory for", e)),
        }
    }
    Ok(())
}

/// The partial file's path: hidden, beside the final one, named after the
/// file and its hash. The file name is cut so that the whole stays within
/// the file system's limit on a name.
fn part_path(final_path: &Path, file_name: &str, hash: &Hash) -> PathBuf {
    const HASH_DIGITS: usize = 16;
    let room = MAX_COMPONENT_LEN - ".".len() - ".".len() - HASH_DIGITS - PART_SUFFIX.len();
    let mut end = file_name.len().min(room);
    while !file_name.is_char_boundary(end) {
        end -= 1;
    }
    let hex = hash.to_hex();
    final_path.with_file_name(format!(
        ".{}.{}{PART_SUFFIX}",
        &file_name[..end],
        &hex[..HASH_DIGITS]
    ))
}

enum OpenError {
    Busy,
    Io(io::Error),
}

/// Opens (or creates) the partial file and takes an exclusive lock on it,
/// so that a second transfer of the same file, such as a rerun while the
/// first one's connection has not yet timed out, cannot write into it too.
async fn open_part(path: PathBuf) -> Result<File, OpenError> {
    let file = tokio::task::spawn_blocking(move || {
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // A link planted at the partial file's name must not redirect
            // the writes.
            options.custom_flags(libc::O_NOFOLLOW);
        }
        let file = options.open(&path).map_err(OpenError::Io)?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(OpenError::Busy),
            Err(std::fs::TryLockError::Error(e)) => Err(OpenError::Io(e)),
        }
    })
    .await
    .map_err(|e| OpenError::Io(io::Error::other(e)))??;
    Ok(File::from_std(file))
}

async fn hash_existing(
    path: &Path,
    len: u64,
    progress: &mut impl FnMut(Progress),
) -> io::Result<Hash> {
    let mut file = File::open(path).await?;
    let mut hasher = blake3::Hasher::new();
    hash_from(&mut file, &mut hasher, None, len, progress).await?;
    Ok(hasher.finalize())
}

/// Reads the data from `start` to the end of the offer into the partial
/// file.
#[allow(clippy::too_many_arguments)] // the state of one transfer, used once
async fn receive_data<R, W>(
    reader: &mut R,
    writer: &mut W,
    part: &mut Part,
    offer: &Offer,
    start: u64,
    hasher: &mut blake3::Hasher,
    options: &ReceiveOptions,
    progress: &mut impl FnMut(Progress),
) -> Result<(), TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0; CHUNK_LEN];
    let mut written = start;
    progress(Progress {
        phase: Phase::Transferring,
        done: written,
        total: offer.size,
    });
    while written < offer.size {
        let want = usize::try_from(offer.size - written)
            .unwrap_or(usize::MAX)
            .min(CHUNK_LEN);
        // Fill a whole chunk before writing it, so that the disk sees large
        // writes whatever the size of the stream's reads.
        let mut filled = 0;
        let mut broken = None;
        while filled < want {
            match reader.read(&mut buf[filled..want]).await {
                Ok(0) => {
                    broken = Some(io::Error::from(io::ErrorKind::UnexpectedEof));
                    break;
                }
                Ok(n) => {
                    filled += n;
                    progress(Progress {
                        phase: Phase::Transferring,
                        done: written + filled as u64,
                        total: offer.size,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        let chunk = &buf[..filled];
        hasher.update(chunk);
        if let Err(e) = write_chunk(&mut part.file, chunk, written, options).await {
            // The partial file is kept: what it holds is still a prefix,
            // and a rerun after freeing space resumes from it.
            let _ = sync(&mut part.file).await;
            return Err(fail(writer, TransferError::local("write", &part.path, e)).await);
        }
        written += filled as u64;
        if let Some(source) = broken {
            // Keep every byte that arrived, for the rerun to resume from.
            let _ = sync(&mut part.file).await;
            return Err(TransferError::PeerClosed {
                stage: Stage::Data,
                source,
            });
        }
    }
    Ok(())
}

/// Writes one chunk at byte `at` of the partial file.
async fn write_chunk(
    file: &mut File,
    chunk: &[u8],
    at: u64,
    options: &ReceiveOptions,
) -> io::Result<()> {
    #[cfg(test)]
    if let Some(limit) = options.disk_full_after {
        let room = usize::try_from(limit.saturating_sub(at)).unwrap_or(usize::MAX);
        if chunk.len() > room {
            file.write_all(&chunk[..room]).await?;
            return Err(disk_full());
        }
    }
    #[cfg(not(test))]
    let _ = (at, options);
    file.write_all(chunk).await
}

/// The error a full disk gives.
#[cfg(test)]
pub(crate) fn disk_full() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::ENOSPC);
    #[cfg(not(unix))]
    return io::Error::from(io::ErrorKind::StorageFull);
}

/// Flushes the file's buffered writes and syncs it to the disk.
async fn sync(file: &mut File) -> io::Result<()> {
    file.flush().await?;
    file.sync_all().await
}

/// Moves the verified partial file to its final name and syncs the
/// directory, so that the new name survives a crash too.
///
/// Without `force` it must not replace a file that appeared during the
/// transfer: a hard link fails if the name is taken, where a rename would
/// replace it. File systems without hard links get a check, then a rename.
async fn store(part: &Path, final_path: &Path, force: bool) -> io::Result<()> {
    if force {
        tokio::fs::rename(part, final_path).await?;
    } else {
        match tokio::fs::hard_link(part, final_path).await {
            Ok(()) => {
                // Both names hold the file now; a leftover partial name
                // costs no space, so a failure here is not the transfer's.
                let _ = tokio::fs::remove_file(part).await;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(appeared()),
            Err(_) => {
                if tokio::fs::symlink_metadata(final_path).await.is_ok() {
                    return Err(appeared());
                }
                tokio::fs::rename(part, final_path).await?;
            }
        }
    }
    sync_parent(final_path).await
}

fn appeared() -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        "a file of that name appeared during the transfer",
    )
}

#[cfg(unix)]
async fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) => File::open(parent).await?.sync_all().await,
        None => Ok(()),
    }
}

/// Elsewhere a directory cannot be opened to sync it.
#[cfg(not(unix))]
async fn sync_parent(_path: &Path) -> io::Result<()> {
    Ok(())
}

fn refuse_io(name: &TransferName, what: &str, error: io::Error) -> Refusal {
    Refusal {
        reason: RefuseReason::Io,
        message: format!("{what} {name}: {error}"),
    }
}

/// Sends a refusal, as far as the peer still listens, and returns it as this
/// side's error.
async fn refuse<W: AsyncWrite + Unpin>(writer: &mut W, refusal: Refusal) -> TransferError {
    let message = Text::new(refusal.message);
    let frame = Message::Refuse {
        reason: refusal.reason,
        message: message.clone(),
    };
    let _ = wire::write_messages(writer, &[], &[frame]).await;
    let _ = writer.shutdown().await;
    TransferError::Refused {
        reason: refusal.reason,
        message,
    }
}

/// Tells the sender, as far as it still listens, that the file could not be
/// stored, and returns the error.
async fn fail<W: AsyncWrite + Unpin>(writer: &mut W, error: TransferError) -> TransferError {
    // The receiver's paths are its own business; the sender hears the
    // cause.
    let message = match &error {
        TransferError::LocalIo { action, source, .. } => {
            format!("cannot {action} the file: {source}")
        }
        other => other.to_string(),
    };
    let frame = Message::Outcome(Outcome::Failed {
        message: Text::new(message),
    });
    let _ = wire::write_messages(writer, &[], &[frame]).await;
    let _ = writer.shutdown().await;
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_stay_within_the_component_limit() {
        let hash = blake3::hash(b"x");
        let short = part_path(Path::new("/in/photo.jpg"), "photo.jpg", &hash);
        assert_eq!(
            short,
            Path::new(&format!("/in/.photo.jpg.{}.ltx-part", &hash.to_hex()[..16]))
        );
        let long = "é".repeat(MAX_COMPONENT_LEN / 2);
        let path = part_path(&Path::new("/in").join(&long), &long, &hash);
        let file_name = path.file_name().unwrap().to_str().unwrap();
        assert!(file_name.len() <= MAX_COMPONENT_LEN, "{}", file_name.len());
        assert!(file_name.ends_with(PART_SUFFIX));
    }
}
