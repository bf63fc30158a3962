//! Hashing local files as they are read, with progress.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::progress::{Phase, Progress};
use super::CHUNK_LEN;

/// Reads `reader` until its end or until `limit` bytes, feeding them to
/// `hasher`; returns how many bytes were read.
///
/// `total` is what progress reports count towards: the limit, or the
/// expected length of the file when there is no limit.
pub(crate) async fn hash_from<R: AsyncRead + Unpin>(
    reader: &mut R,
    hasher: &mut blake3::Hasher,
    limit: Option<u64>,
    total: u64,
    progress: &mut impl FnMut(Progress),
) -> io::Result<u64> {
    let mut buf = vec![0; CHUNK_LEN];
    let mut done = 0u64;
    progress(Progress {
        phase: Phase::Hashing,
        done,
        total,
    });
    loop {
        let want = match limit {
            Some(limit) => CHUNK_LEN.min(usize::try_from(limit - done).unwrap_or(usize::MAX)),
            None => CHUNK_LEN,
        };
        if want == 0 {
            break;
        }
        let n = reader.read(&mut buf[..want]).await?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
        progress(Progress {
            phase: Phase::Hashing,
            done,
            total: total.max(done),
        });
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_limit_stops_the_read() {
        let data: Vec<u8> = (0..CHUNK_LEN * 2 + 5).map(|i| i as u8).collect();
        let mut hasher = blake3::Hasher::new();
        let mut reports = Vec::new();
        let n = hash_from(
            &mut &data[..],
            &mut hasher,
            Some(CHUNK_LEN as u64 + 3),
            CHUNK_LEN as u64 + 3,
            &mut |p| reports.push(p.done),
        )
        .await
        .unwrap();
        assert_eq!(n, CHUNK_LEN as u64 + 3);
        assert_eq!(hasher.finalize(), blake3::hash(&data[..CHUNK_LEN + 3]));
        assert_eq!(reports, [0, CHUNK_LEN as u64, CHUNK_LEN as u64 + 3]);
    }

    #[tokio::test]
    async fn without_a_limit_it_reads_to_the_end() {
        let data = vec![7u8; CHUNK_LEN + 1];
        let mut hasher = blake3::Hasher::new();
        let n = hash_from(&mut &data[..], &mut hasher, None, 0, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(n, data.len() as u64);
        assert_eq!(hasher.finalize(), blake3::hash(&data));
    }
}
