//! A server's memory of its clients' paths, for careful resume: the path
//! each client's last connection measured, keyed by the client's public
//! key, in memory only (a restart forgets them; the first connection after
//! it measures as a first contact does).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ltx_proto::congestion::SavedPath;
use ltx_proto::protection::PublicKey;

/// How long a client's path is remembered.
pub(crate) const LIFETIME: Duration = Duration::from_secs(3600);

/// The most clients remembered; the oldest entry goes first.
const MAX_CLIENTS: usize = 4096;

/// Clients' saved paths.
#[derive(Debug, Default)]
pub(crate) struct SavedPaths {
    paths: HashMap<PublicKey, (SavedPath, Instant)>,
}

impl SavedPaths {
    /// The path `client`'s last connection saved, if within [`LIFETIME`].
    pub(crate) fn get(&self, client: &PublicKey, now: Instant) -> Option<SavedPath> {
        let (saved, at) = self.paths.get(client)?;
        (now.saturating_duration_since(*at) <= LIFETIME).then_some(*saved)
    }

    /// Remembers `saved` for `client`.
    pub(crate) fn put(&mut self, client: PublicKey, saved: SavedPath, now: Instant) {
        if self.paths.len() >= MAX_CLIENTS && !self.paths.contains_key(&client) {
            self.paths
                .retain(|_, (_, at)| now.saturating_duration_since(*at) <= LIFETIME);
            if self.paths.len() >= MAX_CLIENTS {
                let oldest = self
                    .paths
                    .iter()
                    .min_by_key(|(_, (_, at))| *at)
                    .map(|(k, _)| *k);
                if let Some(oldest) = oldest {
                    self.paths.remove(&oldest);
                }
            }
        }
        self.paths.insert(client, (saved, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ltx_proto::protection::StaticKeypair;

    #[test]
    fn paths_are_kept_per_client_for_their_lifetime_and_in_bounded_number() {
        let now = Instant::now();
        let key = |n: u32| {
            let mut entropy = [0u8; 32];
            entropy[..4].copy_from_slice(&n.to_le_bytes());
            StaticKeypair::from_entropy(entropy).public()
        };
        let saved = SavedPath {
            rate: 1_000_000,
            min_rtt: Duration::from_millis(600),
        };
        let mut paths = SavedPaths::default();
        paths.put(key(0), saved, now);
        assert_eq!(paths.get(&key(0), now), Some(saved));
        assert_eq!(paths.get(&key(1), now), None);
        assert_eq!(
            paths.get(&key(0), now + LIFETIME + Duration::from_secs(1)),
            None
        );
        for n in 1..=MAX_CLIENTS as u32 {
            paths.put(key(n), saved, now + Duration::from_millis(u64::from(n)));
        }
        assert_eq!(paths.paths.len(), MAX_CLIENTS);
        assert_eq!(paths.get(&key(0), now), None, "the oldest went first");
    }
}
