//! The paths `ltx send` measured, kept for careful resume: the next
//! connection to the same server (its key and address) within
//! [`LIFETIME`] starts from the saved rate instead of measuring it.
//!
//! One small TOML file under the user's cache directory
//! (`$XDG_CACHE_HOME/ltx/paths.toml`, usually `~/.cache/ltx/paths.toml`),
//! written whole to a temporary file and renamed, so that a crash or a
//! concurrent sender leaves either the old file or the new one. A file
//! that cannot be read or parsed is treated as empty: it is a cache, and
//! losing it costs one round trip of measuring.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ltx_proto::congestion::SavedPath;
use ltx_proto::protection::PublicKey;
use serde::{Deserialize, Serialize};

/// How long a saved path is used: paths change (another hop, another
/// satellite beam) over hours, and careful resume confirms the rest.
pub const LIFETIME: Duration = Duration::from_secs(3600);

/// The most paths the file keeps; the oldest go first.
const MAX_ENTRIES: usize = 256;

/// One saved path, as the file holds it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Entry {
    /// Bytes per second.
    rate: u64,
    /// Microseconds.
    min_rtt_us: u64,
    /// Seconds since the UNIX epoch.
    saved_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    path: BTreeMap<String, Entry>,
}

/// The cache file of one user.
#[derive(Debug, Clone)]
pub struct PathCache {
    file: PathBuf,
}

impl PathCache {
    /// The user's cache file, if the system has a cache directory.
    pub fn for_user() -> Option<PathCache> {
        dirs::cache_dir().map(|dir| PathCache::at(dir.join("ltx").join("paths.toml")))
    }

    /// A cache kept in `file`.
    pub fn at(file: PathBuf) -> PathCache {
        PathCache { file }
    }

    /// The file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The path saved for `server` at `address`, if saved within
    /// [`LIFETIME`] of `now`.
    pub fn get(
        &self,
        server: &PublicKey,
        address: SocketAddr,
        now: SystemTime,
    ) -> Option<SavedPath> {
        let entry = *self.read().path.get(&key(server, address))?;
        let age = seconds(now).checked_sub(entry.saved_at)?;
        if age > LIFETIME.as_secs() || entry.rate == 0 || entry.min_rtt_us == 0 {
            return None;
        }
        Some(SavedPath {
            rate: entry.rate,
            min_rtt: Duration::from_micros(entry.min_rtt_us),
        })
    }

    /// Saves `saved` for `server` at `address`, dropping expired and the
    /// oldest entries.
    pub fn put(
        &self,
        server: &PublicKey,
        address: SocketAddr,
        saved: SavedPath,
        now: SystemTime,
    ) -> std::io::Result<()> {
        let now = seconds(now);
        let mut file = self.read();
        file.path
            .retain(|_, e| now.saturating_sub(e.saved_at) <= LIFETIME.as_secs());
        file.path.insert(
            key(server, address),
            Entry {
                rate: saved.rate,
                min_rtt_us: u64::try_from(saved.min_rtt.as_micros()).unwrap_or(u64::MAX),
                saved_at: now,
            },
        );
        while file.path.len() > MAX_ENTRIES {
            let oldest = file
                .path
                .iter()
                .min_by_key(|(_, e)| e.saved_at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => file.path.remove(&k),
                None => break,
            };
        }
        let text = toml::to_string(&file).map_err(std::io::Error::other)?;
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let temporary = self
            .file
            .with_extension(format!("toml.{}", std::process::id()));
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &self.file)
    }

    fn read(&self) -> File {
        std::fs::read_to_string(&self.file)
            .ok()
            .and_then(|text| toml::from_str(&text).ok())
            .unwrap_or_default()
    }
}

fn key(server: &PublicKey, address: SocketAddr) -> String {
    format!("{server}@{address}")
}

fn seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ltx_proto::protection::StaticKeypair;

    #[test]
    fn a_path_is_kept_per_server_and_address_for_its_lifetime() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PathCache::at(dir.path().join("ltx").join("paths.toml"));
        let server = StaticKeypair::from_entropy([1; 32]).public();
        let other = StaticKeypair::from_entropy([2; 32]).public();
        let address: SocketAddr = "192.0.2.1:7000".parse().unwrap();
        let saved = SavedPath {
            rate: 6_250_000,
            min_rtt: Duration::from_millis(600),
        };
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(cache.get(&server, address, now), None);
        cache.put(&server, address, saved, now).unwrap();
        assert_eq!(cache.get(&server, address, now), Some(saved));
        assert_eq!(cache.get(&other, address, now), None);
        let moved: SocketAddr = "192.0.2.2:7000".parse().unwrap();
        assert_eq!(cache.get(&server, moved, now), None);
        let later = now + LIFETIME + Duration::from_secs(1);
        assert_eq!(cache.get(&server, address, later), None);
    }

    #[test]
    fn a_damaged_file_reads_as_empty_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PathCache::at(dir.path().join("paths.toml"));
        std::fs::write(cache.file(), "not = [toml").unwrap();
        let server = StaticKeypair::from_entropy([1; 32]).public();
        let address: SocketAddr = "[2001:db8::1]:7000".parse().unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(cache.get(&server, address, now), None);
        let saved = SavedPath {
            rate: 1,
            min_rtt: Duration::from_micros(1),
        };
        cache.put(&server, address, saved, now).unwrap();
        assert_eq!(cache.get(&server, address, now), Some(saved));
    }
}
