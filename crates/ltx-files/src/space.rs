//! Free space on the file system that will hold a received file.

use std::io;
use std::path::Path;

/// The bytes an unprivileged process may still write on the file system
/// holding `path`.
#[cfg(unix)]
pub(crate) fn available_space(path: &Path) -> io::Result<u64> {
    use std::ffi::CString;
    use std::mem::MaybeUninit;
    use std::os::unix::ffi::OsStrExt;

    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let mut stats = MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call and
    // `stats` points to writable memory the size of a `statvfs`.
    let status = unsafe { libc::statvfs(c_path.as_ptr(), stats.as_mut_ptr()) };
    if status != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled in the whole structure.
    let stats = unsafe { stats.assume_init() };
    // f_bavail, not f_bfree: blocks reserved for root are not ours to fill.
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    let bytes = (stats.f_bavail as u64).saturating_mul(stats.f_frsize as u64);
    Ok(bytes)
}

/// Elsewhere the check is left to the write itself, which reports a full
/// disk to the sender all the same.
#[cfg(not(unix))]
pub(crate) fn available_space(_path: &Path) -> io::Result<u64> {
    Ok(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_directory_has_some_space() {
        let dir = tempfile::tempdir().unwrap();
        assert!(available_space(dir.path()).unwrap() > 0);
    }

    #[cfg(unix)]
    #[test]
    fn a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let error = available_space(&dir.path().join("missing")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
