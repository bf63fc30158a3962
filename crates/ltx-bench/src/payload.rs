//! What the benchmarks' transfers carry, and how the receiver checks it.
//!
//! The peers of `ltx-bench emu` written in C and Go (bench/peers/) make the
//! same bytes from the same seed, so the generator is one that every
//! language has in a few lines: SplitMix64.

use bytes::Bytes;

/// Length of the repeated pattern: 3 bytes short of 1 MiB, so that no
/// power-of-two shift of the stream (a packet, a buffer, a window) lines the
/// pattern up with itself again and a misplaced block is caught.
const PATTERN_LEN: usize = (1 << 20) - 3;

/// The bytes every transfer sends: one pseudo-random block, repeated and cut
/// to length. Clones share the block.
///
/// Output `k` of a SplitMix64 generator seeded with the seed gives bytes
/// `8k..8k+7` of the block, least significant first; the block's last bytes
/// take the first ones of the last output.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    block: Bytes,
}

impl Pattern {
    /// The pattern drawn from `seed`.
    pub(crate) fn new(seed: u64) -> Pattern {
        let mut state = seed;
        let mut block = Vec::with_capacity(PATTERN_LEN + 7);
        while block.len() < PATTERN_LEN {
            block.extend_from_slice(&splitmix64(&mut state).to_le_bytes());
        }
        block.truncate(PATTERN_LEN);
        Pattern {
            block: Bytes::from(block),
        }
    }

    /// The repeated block itself.
    pub(crate) fn block(&self) -> &[u8] {
        &self.block
    }

    /// The first `bytes` bytes of the stream, as slices of the shared block
    /// that a sender can write in order without copying.
    pub(crate) fn chunks(&self, bytes: u64) -> impl Iterator<Item = Bytes> + Send + 'static {
        let block = self.block.clone();
        let len = block.len() as u64;
        let mut left = bytes;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let n = left.min(len);
            left -= n;
            Some(block.slice(..n as usize))
        })
    }
}

/// The next output of SplitMix64 (Steele, Lea and Flood, 2014).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a receiver got: how many bytes, and where the first one that differs
/// from the pattern was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// Bytes received before the end of the stream.
    pub(crate) bytes: u64,
    /// Stream offset of the first byte that is not the pattern's.
    pub(crate) first_mismatch: Option<u64>,
}

impl Delivery {
    /// Ok when exactly the pattern's first `sent` bytes arrived.
    pub(crate) fn check(&self, sent: u64) -> anyhow::Result<()> {
        if let Some(offset) = self.first_mismatch {
            anyhow::bail!("received data differs from what was sent at byte {offset}");
        }
        anyhow::ensure!(
            self.bytes == sent,
            "received {} bytes of {sent} sent",
            self.bytes
        );
        Ok(())
    }
}

/// Compares a received stream with the pattern as it arrives.
///
/// A comparison with the known pattern costs less than any checksum and
/// finds the exact offset of a fault; it runs inside the timed window, at the
/// same cost for every system.
#[derive(Debug)]
pub(crate) struct Verifier {
    block: Bytes,
    received: u64,
    first_mismatch: Option<u64>,
}

impl Verifier {
    /// A verifier at the start of the stream.
    pub(crate) fn new(pattern: &Pattern) -> Verifier {
        Verifier {
            block: pattern.block.clone(),
            received: 0,
            first_mismatch: None,
        }
    }

    /// Takes the next bytes of the stream, in order.
    pub(crate) fn feed(&mut self, mut data: &[u8]) {
        let len = self.block.len();
        while !data.is_empty() {
            let at = (self.received % len as u64) as usize;
            let n = data.len().min(len - at);
            let expected = &self.block[at..at + n];
            if self.first_mismatch.is_none() && data[..n] != *expected {
                let i = data[..n]
                    .iter()
                    .zip(expected)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                self.first_mismatch = Some(self.received + i as u64);
            }
            self.received += n as u64;
            data = &data[n..];
        }
    }

    /// What arrived, once the stream has ended.
    pub(crate) fn finish(self) -> Delivery {
        Delivery {
            bytes: self.received,
            first_mismatch: self.first_mismatch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(pattern: &Pattern, bytes: u64) -> Vec<u8> {
        pattern.chunks(bytes).flat_map(|c| c.to_vec()).collect()
    }

    /// Feeds `data` in pieces of awkward sizes, as a socket would hand it over.
    fn verify(pattern: &Pattern, data: &[u8]) -> Delivery {
        let mut verifier = Verifier::new(pattern);
        for piece in data.chunks(65_537) {
            verifier.feed(piece);
        }
        verifier.finish()
    }

    /// The first outputs of SplitMix64 seeded with 0, as its reference
    /// implementation prints them: the C and Go peers are written against
    /// the same numbers.
    #[test]
    fn the_block_starts_with_splitmix64s_reference_outputs() {
        let pattern = Pattern::new(0);
        let first = u64::from_le_bytes(pattern.block[..8].try_into().unwrap());
        let second = u64::from_le_bytes(pattern.block[8..16].try_into().unwrap());
        assert_eq!(first, 0xe220_a839_7b1d_cdaf);
        assert_eq!(second, 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(pattern.block.len(), PATTERN_LEN);
    }

    #[test]
    fn chunks_add_up_to_the_size_across_pattern_boundaries() {
        let pattern = Pattern::new(1);
        for bytes in [0, 1, PATTERN_LEN as u64, 2 * PATTERN_LEN as u64 + 5] {
            let total: u64 = pattern.chunks(bytes).map(|c| c.len() as u64).sum();
            assert_eq!(total, bytes);
        }
    }

    #[test]
    fn the_whole_stream_passes() {
        let pattern = Pattern::new(1);
        let sent = 3 * PATTERN_LEN as u64 + 11;
        let delivery = verify(&pattern, &stream(&pattern, sent));
        assert_eq!(delivery.first_mismatch, None);
        delivery.check(sent).expect("an intact stream is accepted");
    }

    #[test]
    fn one_byte_short_fails_and_so_does_one_byte_too_many() {
        let pattern = Pattern::new(1);
        let sent = 2 * PATTERN_LEN as u64;
        let data = stream(&pattern, sent + 1);
        assert!(verify(&pattern, &data[..data.len() - 2])
            .check(sent)
            .is_err());
        assert!(verify(&pattern, &data).check(sent).is_err());
    }

    #[test]
    fn a_flipped_byte_is_found_at_its_offset() {
        let pattern = Pattern::new(1);
        let sent = 2 * PATTERN_LEN as u64;
        let mut data = stream(&pattern, sent);
        let at = PATTERN_LEN + 1234;
        data[at] ^= 0x01;
        let delivery = verify(&pattern, &data);
        assert_eq!(delivery.first_mismatch, Some(at as u64));
        assert!(delivery.check(sent).is_err());
    }

    #[test]
    fn swapped_blocks_of_a_power_of_two_are_caught() {
        let pattern = Pattern::new(1);
        let sent = 2 * PATTERN_LEN as u64;
        let mut data = stream(&pattern, sent);
        let block = 1 << 16;
        let (a, b) = data.split_at_mut(block);
        a.swap_with_slice(&mut b[..block]);
        assert_eq!(verify(&pattern, &data).first_mismatch, Some(0));
    }
}
