//! A receive stream's bytes between the application's read offset and the
//! highest byte received: the bytes that follow on from the read offset in
//! one ring buffer, the ones that arrived ahead of a gap in chunks by
//! offset. Symbols are decoded mostly in order, so nearly every frame
//! extends the ring: no allocation and no map lookup per frame, which a map
//! of chunks alone cost on every packet at gigabits.

use std::collections::{BTreeMap, VecDeque};

use super::spare_buffer::SpareBuffer;

/// Capacity a drained ring keeps; a larger one goes to the connection's
/// spare, so that an idle stream does not hold a burst's buffer for its
/// life.
const KEEP_RING_CAPACITY: usize = 4096;

/// The unread bytes of a stream, by offset. The caller owns the read
/// offset and passes it in: the bytes held start at it.
#[derive(Debug, Default)]
pub(super) struct Reassembly {
    /// The bytes from the read offset on, without a gap.
    ring: VecDeque<u8>,
    /// Bytes past a gap after `ring`, by offset; none starts at or before
    /// the ring's end (those are moved into the ring).
    ahead: BTreeMap<u64, Vec<u8>>,
}

impl Reassembly {
    /// Takes `data` at `offset`, given the read offset `read`. Peers send
    /// each byte once, but a hostile one may overlap: the first copy of
    /// every byte is kept.
    /// An empty ring first takes the connection's `spare`, if larger.
    pub(super) fn insert(&mut self, read: u64, offset: u64, data: &[u8], spare: &mut SpareBuffer) {
        let end = offset.saturating_add(data.len() as u64);
        let ring_end = read + self.ring.len() as u64;
        let mut start = offset.max(ring_end);
        if start >= end {
            return;
        }
        if start == ring_end {
            // In order: into the ring, up to the first chunk ahead.
            let until = self.ahead.keys().next().map_or(end, |&k| k.min(end));
            let (from, to) = ((start - offset) as usize, (until - offset) as usize);
            spare.lend(&mut self.ring);
            self.ring.extend(&data[from..to]);
            start = until;
        }
        while start < end {
            if let Some((&s, chunk)) = self.ahead.range(..=start).next_back() {
                let covered = s + chunk.len() as u64;
                if covered > start {
                    start = covered;
                    continue;
                }
            }
            let next = self.ahead.range(start..end).next().map_or(end, |(&s, _)| s);
            let (from, to) = ((start - offset) as usize, (next - offset) as usize);
            self.ahead.insert(start, data[from..to].to_vec());
            start = next;
        }
        self.join_ahead(read);
    }

    /// Moves the chunks ahead that now touch the ring's end into it.
    fn join_ahead(&mut self, read: u64) {
        while let Some(entry) = self.ahead.first_entry() {
            let ring_end = read + self.ring.len() as u64;
            let start = *entry.key();
            if start > ring_end {
                break;
            }
            let chunk = entry.remove();
            let skip = ((ring_end - start) as usize).min(chunk.len());
            self.ring.extend(&chunk[skip..]);
        }
    }

    /// Copies the bytes at the read offset into `buf`; how many. A large
    /// ring left empty goes to `spare`.
    pub(super) fn read(&mut self, buf: &mut [u8], spare: &mut SpareBuffer) -> usize {
        let n = self.ring.len().min(buf.len());
        let (front, back) = self.ring.as_slices();
        let from_front = n.min(front.len());
        buf[..from_front].copy_from_slice(&front[..from_front]);
        buf[from_front..n].copy_from_slice(&back[..n - from_front]);
        self.ring.drain(..n);
        if self.ring.is_empty() && self.ring.capacity() > KEEP_RING_CAPACITY {
            spare.keep(std::mem::take(&mut self.ring));
        }
        n
    }

    /// Whether bytes wait at the read offset.
    pub(super) fn has_next(&self) -> bool {
        !self.ring.is_empty()
    }

    /// Bytes the buffers hold, by capacity.
    pub(super) fn capacity(&self) -> usize {
        self.ring.capacity() + self.ahead.values().map(Vec::capacity).sum::<usize>()
    }

    /// Drops every byte held (the stream was reset).
    pub(super) fn clear(&mut self) {
        *self = Reassembly::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(r: &mut Reassembly, read: &mut u64) -> Vec<u8> {
        let mut out = vec![0; 1 << 16];
        let n = r.read(&mut out, &mut SpareBuffer::default());
        *read += n as u64;
        out.truncate(n);
        out
    }

    #[test]
    fn in_order_bytes_go_to_the_ring_and_a_gap_waits_for_its_bytes() {
        let mut r = Reassembly::default();
        let mut read = 0;
        r.insert(read, 0, b"abc", &mut SpareBuffer::default());
        assert!(r.ahead.is_empty());
        r.insert(read, 6, b"ghi", &mut SpareBuffer::default());
        r.insert(read, 3, b"de", &mut SpareBuffer::default());
        assert_eq!(read_all(&mut r, &mut read), b"abcde");
        assert!(!r.has_next());
        r.insert(read, 5, b"f", &mut SpareBuffer::default());
        assert_eq!(read_all(&mut r, &mut read), b"fghi");
        assert_eq!(read, 9);
    }

    #[test]
    fn overlaps_keep_the_first_copy_of_every_byte() {
        let mut r = Reassembly::default();
        let mut read = 0;
        r.insert(read, 0, b"ab", &mut SpareBuffer::default());
        r.insert(read, 4, b"EF", &mut SpareBuffer::default());
        // Overlaps the ring, the gap and the chunk ahead.
        r.insert(read, 1, b"xcdyz", &mut SpareBuffer::default());
        assert_eq!(read_all(&mut r, &mut read), b"abcdEF");
        // Bytes already read are not taken again.
        r.insert(read, 0, b"zzzzzzg", &mut SpareBuffer::default());
        assert_eq!(read_all(&mut r, &mut read), b"g");
    }

    #[test]
    fn every_order_of_the_same_frames_reads_the_same_bytes() {
        let data: Vec<u8> = (0..200u8).collect();
        let frames: Vec<(u64, &[u8])> = (0..10)
            .map(|i| (i * 20, &data[i as usize * 20..(i as usize + 1) * 20]))
            .collect();
        // A few fixed permutations, overlapping duplicates among them.
        for order in [
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
            [3, 0, 7, 1, 9, 2, 8, 4, 6, 5],
        ] {
            let mut r = Reassembly::default();
            let mut read = 0;
            let mut got = Vec::new();
            for i in order {
                let (offset, bytes) = frames[i];
                r.insert(read, offset, bytes, &mut SpareBuffer::default());
                r.insert(
                    read,
                    offset.saturating_sub(5),
                    &data[offset.saturating_sub(5) as usize..(offset + 10) as usize],
                    &mut SpareBuffer::default(),
                );
                got.extend(read_all(&mut r, &mut read));
            }
            assert_eq!(got, data, "order {order:?}");
            assert!(r.ahead.is_empty() && !r.has_next());
        }
    }

    #[test]
    fn a_drained_ring_goes_to_the_spare_and_back_for_the_next_bytes() {
        let mut spare = SpareBuffer::default();
        let mut r = Reassembly::default();
        let big = vec![7u8; 1 << 16];
        r.insert(0, 0, &big, &mut spare);
        let mut out = vec![0; 1 << 16];
        assert_eq!(r.read(&mut out, &mut spare), big.len());
        assert_eq!(r.capacity(), 0, "the empty ring went to the spare");
        let kept = spare.capacity();
        assert!(kept >= big.len());
        r.insert(big.len() as u64, big.len() as u64, b"next", &mut spare);
        assert_eq!(r.capacity(), kept, "and came back for the next bytes");
        assert_eq!(spare.capacity(), 0);
    }
}
