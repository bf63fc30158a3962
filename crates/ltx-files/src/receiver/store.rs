//! The receiver's files on disk: partial files, locked while written, and
//! the step that gives a verified file its name.

use std::io;
use std::path::{Path, PathBuf};

use tokio::fs::File;
use tokio::io::AsyncWriteExt;

use super::inbox::ReceiveOptions;
use crate::name::{LinkTarget, MAX_COMPONENT_LEN, PART_SUFFIX};
use crate::wire::Metadata;

/// Where an accepted file's data goes.
#[derive(Debug)]
pub(crate) struct Part {
    /// The partial file, open for reading and writing and locked.
    pub(crate) file: File,
    /// Its path.
    pub(crate) path: PathBuf,
    /// Where it goes when it is complete.
    pub(crate) final_path: PathBuf,
}

/// The partial file's path: hidden, beside the final one, named after the
/// file. The file name is cut so that the whole stays within the file
/// system's limit on a name.
pub(crate) fn part_path(final_path: &Path, file_name: &str) -> PathBuf {
    let room = MAX_COMPONENT_LEN - ".".len() - PART_SUFFIX.len();
    let mut end = file_name.len().min(room);
    while !file_name.is_char_boundary(end) {
        end -= 1;
    }
    final_path.with_file_name(format!(".{}{PART_SUFFIX}", &file_name[..end]))
}

/// Why a partial file could not be opened.
pub(crate) enum OpenError {
    /// Another process holds its lock.
    Busy,
    /// Anything else.
    Io(io::Error),
}

/// Opens (or creates) the partial file and takes an exclusive lock on it,
/// so that another receiver process on the same directory cannot write
/// into it too (within one process, claims keep transfers apart).
pub(crate) async fn open_part(path: PathBuf) -> Result<File, OpenError> {
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

/// Opens an existing file for reading without following a link at its
/// name.
pub(crate) async fn open_existing(path: &Path) -> io::Result<File> {
    let mut options = tokio::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    options.custom_flags(libc::O_NOFOLLOW);
    options.open(path).await
}

/// Writes one chunk at byte `at` of the partial file (the file's position).
pub(crate) async fn write_chunk(
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
pub(crate) async fn sync(file: &mut File) -> io::Result<()> {
    file.flush().await?;
    file.sync_all().await
}

/// Gives the complete, verified partial file the sender's metadata (if
/// kept), syncs it and moves it to its final name.
pub(crate) async fn finish_part(
    part: &mut Part,
    metadata: Option<&Metadata>,
    options: &ReceiveOptions,
) -> Result<(), (&'static str, io::Error)> {
    part.file.flush().await.map_err(|e| ("write", e))?;
    if let Some(metadata) = metadata.filter(|_| options.keep_metadata) {
        apply_metadata(&part.file, metadata)
            .await
            .map_err(|e| ("set the mode and time of", e))?;
    }
    part.file.sync_all().await.map_err(|e| ("sync", e))?;
    store(&part.path, &part.final_path, options.force)
        .await
        .map_err(|e| ("store", e))
}

/// Sets the mode's permission bits (never setuid, setgid or sticky, which
/// a sender has no business setting here) and the modification time.
async fn apply_metadata(file: &File, metadata: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let permissions = std::fs::Permissions::from_mode(metadata.mode() & 0o777);
        file.set_permissions(permissions).await?;
    }
    if let Some(modified) = metadata.modified() {
        let file = file.try_clone().await?.into_std().await;
        tokio::task::spawn_blocking(move || file.set_modified(modified))
            .await
            .map_err(io::Error::other)??;
    }
    Ok(())
}

/// Moves the verified partial file to its final name and syncs the
/// directory, so that the new name survives a crash too.
///
/// Without `force` it must not replace a file that appeared during the
/// transfer: a hard link fails if the name is taken, where a rename would
/// replace it. File systems without hard links get a check, then a rename.
pub(crate) async fn store(part: &Path, final_path: &Path, force: bool) -> io::Result<()> {
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

/// Creates a symbolic link at `final_path` pointing at `target`; with
/// `force` it replaces what is there (through `temporary`, then a rename),
/// without it fails if the name is taken.
pub(crate) async fn make_link(
    target: &LinkTarget,
    final_path: &Path,
    temporary: &Path,
    force: bool,
) -> io::Result<()> {
    #[cfg(unix)]
    {
        if force {
            match tokio::fs::remove_file(temporary).await {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            tokio::fs::symlink(target.as_str(), temporary).await?;
            tokio::fs::rename(temporary, final_path).await?;
        } else {
            tokio::fs::symlink(target.as_str(), final_path)
                .await
                .map_err(|e| {
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        appeared()
                    } else {
                        e
                    }
                })?;
        }
        sync_parent(final_path).await
    }
    #[cfg(not(unix))]
    {
        let _ = (target, final_path, temporary, force);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "symbolic links are not supported on this receiver",
        ))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_stay_within_the_component_limit() {
        let short = part_path(Path::new("/in/photo.jpg"), "photo.jpg");
        assert_eq!(short, Path::new("/in/.photo.jpg.ltx-part"));
        let long = "é".repeat(MAX_COMPONENT_LEN / 2);
        let path = part_path(&Path::new("/in").join(&long), &long);
        let file_name = path.file_name().unwrap().to_str().unwrap();
        assert!(file_name.len() <= MAX_COMPONENT_LEN, "{}", file_name.len());
        assert!(file_name.ends_with(PART_SUFFIX));
    }
}
