//! What the receiver answers an offer: every check it can make before any
//! byte is written (the name, the directories on the way, a file already
//! there, free space, another transfer of the same name), and what it
//! holds that the file may begin with.

use std::io;
use std::path::{Path, PathBuf};

use tokio::fs::File;
use tokio::io::{AsyncSeekExt, AsyncWrite};

use super::inbox::{Claim, Destination, Inbox, Peer, ReceiveOptions, Refusal};
use super::store::{open_existing, open_part, part_path, OpenError, Part};
use crate::hashing::hash_from;
use crate::name::TransferName;
use crate::progress::Progress;
use crate::space::available_space;
use crate::wire::{Offer, RefuseReason};

/// Bytes the receiver holds that the offered file may begin with.
#[derive(Debug)]
pub(crate) enum Reference {
    /// The partial file of an earlier transfer of this name.
    Part(Part),
    /// A file of this name and size, which may be the same file.
    Final {
        /// It, open for reading.
        file: File,
        /// Its path.
        path: PathBuf,
    },
}

/// How the receiver takes an offer.
pub(crate) enum Prepared<'a> {
    /// Not at all: nothing was written.
    Refused(Refusal),
    /// Every byte, into an empty partial file (ACCEPT).
    Fresh { claim: Claim<'a>, part: Part },
    /// Comparing what comes with the first `len` bytes it holds, whose
    /// hash is in `prefix` (HAVE).
    Held {
        claim: Claim<'a>,
        reference: Reference,
        len: u64,
        prefix: Box<blake3::Hasher>,
    },
    /// Every byte, to the inbox's writer (ACCEPT).
    ToWriter(Box<dyn AsyncWrite + Send + Unpin>),
}

/// What is done with what the receiver holds.
enum Choice {
    /// Compare with the file of this name.
    Final,
    /// Resume the partial file of `held` bytes.
    Part(u64),
    /// Start an empty partial file.
    Fresh,
}

/// Decides how to take `offer` into `inbox`, and opens what it needs.
pub(crate) async fn prepare<'a>(
    inbox: &'a Inbox,
    offer: &Offer,
    peer: &Peer,
    progress: &mut impl FnMut(Progress),
) -> Prepared<'a> {
    let dir = match &inbox.destination {
        Destination::Directory(dir) => dir,
        Destination::Writer(slot) => {
            return match slot.lock().await.take() {
                Some(writer) => Prepared::ToWriter(writer),
                None => Prepared::Refused(one_file_only()),
            }
        }
    };
    match prepare_in(dir, inbox, offer, peer, progress).await {
        Ok(prepared) => prepared,
        Err(refusal) => Prepared::Refused(refusal),
    }
}

/// The refusal of a second file by a receiver that writes one to a writer.
pub(crate) fn one_file_only() -> Refusal {
    Refusal {
        reason: RefuseReason::OneFileOnly,
        message: "the receiver writes one file to its standard output and has one already; \
                  send one file, or the others to a receiver without --stdout"
            .to_owned(),
    }
}

async fn prepare_in<'a>(
    dir: &Path,
    inbox: &'a Inbox,
    offer: &Offer,
    peer: &Peer,
    progress: &mut impl FnMut(Progress),
) -> Result<Prepared<'a>, Refusal> {
    let options = &inbox.options;
    let name = &offer.name;
    let final_path = name.under(dir);
    let directories = check_directories(dir, name).await?;
    let part_path = part_path(&final_path, name.file_name());
    let claim = inbox.claims.claim(&part_path, name, peer, options).await?;

    let mut same_size_file = false;
    let mut held = 0;
    if directories.missing.is_empty() {
        same_size_file = check_final_name(&final_path, name, offer.size, options).await?;
        held = held_bytes(&part_path, name).await?;
    }
    let choice = match offer.size {
        Some(_) if same_size_file && !options.force => Choice::Final,
        Some(size) if held > 0 && held <= size => Choice::Part(held),
        Some(_) if same_size_file => Choice::Final,
        _ => Choice::Fresh,
    };
    let (need, kept) = match (&choice, offer.size) {
        // Compared only: nothing is written unless it is replaced.
        (Choice::Final, _) if !options.force => (0, 0),
        (Choice::Part(held), Some(size)) => (size - held, *held),
        (_, size) => (size.unwrap_or(0), 0),
    };
    check_space(&directories.deepest_existing, name, need, kept, options)?;
    create_directories(&directories.missing, name).await?;

    let mut prefix = Box::new(blake3::Hasher::new());
    match choice {
        Choice::Final => {
            let mut file = open_existing(&final_path)
                .await
                .map_err(|e| refuse_io(name, "cannot open the existing", e))?;
            let len = offer.size.unwrap_or(0);
            hash_from(&mut file, &mut prefix, Some(len), len, progress)
                .await
                .map_err(|e| refuse_io(name, "cannot read the existing", e))?;
            // Read again from the start, to compare.
            file.seek(io::SeekFrom::Start(0))
                .await
                .map_err(|e| refuse_io(name, "cannot read the existing", e))?;
            Ok(Prepared::Held {
                claim,
                reference: Reference::Final {
                    file,
                    path: final_path,
                },
                len,
                prefix,
            })
        }
        Choice::Part(held) => {
            let mut part = open(name, part_path, final_path).await?;
            let read = hash_from(&mut part.file, &mut prefix, Some(held), held, progress)
                .await
                .map_err(|e| refuse_io(name, "cannot read the partial file of", e))?;
            if read < held {
                // It shrank since it was measured: start over.
                reset(&mut part, name).await?;
                return Ok(Prepared::Fresh { claim, part });
            }
            part.file
                .seek(io::SeekFrom::Start(0))
                .await
                .map_err(|e| refuse_io(name, "cannot read the partial file of", e))?;
            Ok(Prepared::Held {
                claim,
                reference: Reference::Part(part),
                len: held,
                prefix,
            })
        }
        Choice::Fresh => {
            let mut part = open(name, part_path, final_path).await?;
            reset(&mut part, name).await?;
            Ok(Prepared::Fresh { claim, part })
        }
    }
}

/// Opens the partial file.
async fn open(name: &TransferName, path: PathBuf, final_path: PathBuf) -> Result<Part, Refusal> {
    let file = open_part(path.clone()).await.map_err(|e| match e {
        OpenError::Busy => Refusal {
            reason: RefuseReason::Busy,
            message: format!(
                "another receiver process is writing {name} into the same directory: \
                 run again once it has ended"
            ),
        },
        OpenError::Io(e) => refuse_io(name, "cannot open the partial file of", e),
    })?;
    Ok(Part {
        file,
        path,
        final_path,
    })
}

/// Empties a partial file that is no use: longer than the file, or of a
/// stream that cannot resume.
async fn reset(part: &mut Part, name: &TransferName) -> Result<(), Refusal> {
    part.file
        .set_len(0)
        .await
        .map_err(|e| refuse_io(name, "cannot reset the partial file of", e))
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

/// Checks the directories on the way to a link, and creates them; returns
/// the link's path and its temporary one.
pub(crate) async fn prepare_link_directories(
    dir: &Path,
    name: &TransferName,
) -> Result<(PathBuf, PathBuf), Refusal> {
    let directories = check_directories(dir, name).await?;
    create_directories(&directories.missing, name).await?;
    let final_path = name.under(dir);
    let temporary = part_path(&final_path, name.file_name());
    Ok((final_path, temporary))
}

/// Checks what is at the file's final name: true if it is a regular file
/// of the offered size (maybe the same file); an error if something is
/// there that may not be replaced.
async fn check_final_name(
    final_path: &Path,
    name: &TransferName,
    size: Option<u64>,
    options: &ReceiveOptions,
) -> Result<bool, Refusal> {
    match tokio::fs::symlink_metadata(final_path).await {
        Ok(meta) if meta.is_dir() => Err(Refusal {
            reason: RefuseReason::Exists,
            message: format!("{name} exists on the receiver and is a directory"),
        }),
        Ok(meta) if meta.is_file() && Some(meta.len()) == size => Ok(true),
        Ok(_) if !options.force => Err(exists(name)),
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(refuse_io(name, "cannot inspect", e)),
    }
}

/// The refusal of a file whose name is taken.
pub(crate) fn exists(name: &TransferName) -> Refusal {
    Refusal {
        reason: RefuseReason::Exists,
        message: format!(
            "{name} exists on the receiver and differs; the receiver can overwrite it with \
             `ltx recv --force`"
        ),
    }
}

/// How many bytes the partial file from an earlier attempt holds; 0 if
/// there is none.
async fn held_bytes(part_path: &Path, name: &TransferName) -> Result<u64, Refusal> {
    match tokio::fs::symlink_metadata(part_path).await {
        Ok(meta) if meta.is_file() => Ok(meta.len()),
        Ok(_) => Err(Refusal {
            reason: RefuseReason::Io,
            message: format!(
                "the partial file of {name} on the receiver is not a regular file: remove {}",
                part_path.file_name().map_or_else(
                    || part_path.display().to_string(),
                    |n| n.to_string_lossy().into_owned()
                )
            ),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(refuse_io(name, "cannot inspect the partial file of", e)),
    }
}

/// Refuses the offer if the `need` bytes still to store do not fit on the
/// disk, or within the receiver's limit on one file (of which `kept` bytes
/// are already stored).
fn check_space(
    deepest_existing: &Path,
    name: &TransferName,
    need: u64,
    kept: u64,
    options: &ReceiveOptions,
) -> Result<(), Refusal> {
    let mut have = available_space(deepest_existing)
        .map_err(|e| refuse_io(name, "cannot read the free space for", e))?;
    let mut limit_binds = false;
    if let Some(limit) = options.max_file_bytes {
        let room = limit.saturating_sub(kept);
        if room < have {
            have = room;
            limit_binds = true;
        }
    }
    if need > have {
        let advice = if limit_binds {
            "the receiver takes no larger file (--max-file-size)"
        } else {
            "free some space on the receiver"
        };
        return Err(Refusal {
            reason: RefuseReason::NoSpace,
            message: format!("not enough space: need {need} bytes, have {have} bytes; {advice}"),
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

pub(crate) fn refuse_io(name: &TransferName, what: &str, error: io::Error) -> Refusal {
    Refusal {
        reason: RefuseReason::Io,
        message: format!("{what} {name} on the receiver: {error}"),
    }
}
