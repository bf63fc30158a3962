//! A stream's bytes not yet put in a symbol. Chunks the application hands
//! over whole ([`Connection::write_chunk`](super::Connection::write_chunk))
//! are held as they are, without a copy, and copied once, into the packet;
//! bytes written from a slice are copied into a ring first. At gigabits
//! that first copy shows in a profile of the sender (`docs/results.md`,
//! "Loopback").

use std::collections::VecDeque;

use bytes::{Buf, Bytes};

use super::spare_buffer::SpareBuffer;

/// A stream's unsent bytes, in order: the chunks, then the copied bytes.
#[derive(Debug, Default)]
pub(super) struct SendBuffer {
    /// Chunks handed over whole, oldest first; all of them come before
    /// `copied`.
    chunks: VecDeque<Bytes>,
    /// The bytes the chunks hold.
    chunks_len: usize,
    /// Bytes written from slices, after every chunk.
    copied: VecDeque<u8>,
}

impl SendBuffer {
    /// The bytes waiting.
    pub(super) fn len(&self) -> usize {
        self.chunks_len + self.copied.len()
    }

    /// Whether no byte waits.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory it holds: the chunks' bytes and the ring's capacity.
    pub(super) fn footprint(&self) -> usize {
        self.chunks_len + self.copied.capacity()
    }

    /// Appends a copy of `data`, in the spare ring if the buffer was empty
    /// and the spare is larger than its own.
    pub(super) fn extend_from_slice(&mut self, data: &[u8], spare: &mut SpareBuffer) {
        if self.copied.is_empty() {
            spare.lend(&mut self.copied);
        }
        self.copied.extend(data);
    }

    /// Appends `chunk` without copying it. Copied bytes before it become a
    /// chunk of their own, so that the order holds (a copy, but only when
    /// a writer mixes the two kinds of write).
    pub(super) fn push_chunk(&mut self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        if !self.copied.is_empty() {
            let copied: Vec<u8> = self.copied.drain(..).collect();
            self.chunks_len += copied.len();
            self.chunks.push_back(Bytes::from(copied));
        }
        self.chunks_len += chunk.len();
        self.chunks.push_back(chunk);
    }

    /// Moves the first `len` bytes to the end of `out` (`len` at most
    /// [`len`](Self::len)). A ring left empty and larger than `keep` bytes
    /// goes to `spare`.
    pub(super) fn move_front(
        &mut self,
        mut len: usize,
        out: &mut Vec<u8>,
        spare: &mut SpareBuffer,
        keep: usize,
    ) {
        debug_assert!(len <= self.len(), "more bytes asked for than held");
        while len > 0 {
            let Some(chunk) = self.chunks.front_mut() else {
                break;
            };
            let n = len.min(chunk.len());
            out.extend_from_slice(&chunk[..n]);
            chunk.advance(n);
            if chunk.is_empty() {
                self.chunks.pop_front();
            }
            self.chunks_len -= n;
            len -= n;
        }
        let len = len.min(self.copied.len());
        if len == 0 {
            return;
        }
        // Straight from the ring's one or two slices: making it contiguous
        // first would move all of it whenever it wraps.
        let (front, back) = self.copied.as_slices();
        let from_front = len.min(front.len());
        out.extend_from_slice(&front[..from_front]);
        out.extend_from_slice(&back[..len - from_front]);
        self.copied.drain(..len);
        if self.copied.is_empty() && self.copied.capacity() > keep {
            // Drained: the burst's ring goes to the connection's spare
            // rather than stay with the stream for its life.
            spare.keep(std::mem::take(&mut self.copied));
        }
    }

    /// Drops every byte (the stream was reset) and frees the memory.
    pub(super) fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(buffer: &mut SendBuffer, spare: &mut SpareBuffer, step: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while !buffer.is_empty() {
            let n = step.min(buffer.len());
            buffer.move_front(n, &mut out, spare, 0);
        }
        out
    }

    #[test]
    fn mixed_writes_come_out_in_the_order_written() {
        for step in [1, 3, 7, 64, 1000] {
            let mut spare = SpareBuffer::default();
            let mut buffer = SendBuffer::default();
            buffer.extend_from_slice(b"ab", &mut spare);
            buffer.push_chunk(Bytes::from_static(b"cde"));
            buffer.push_chunk(Bytes::new());
            buffer.push_chunk(Bytes::from_static(b"f"));
            buffer.extend_from_slice(b"ghij", &mut spare);
            buffer.push_chunk(Bytes::from_static(b"klm"));
            buffer.extend_from_slice(b"n", &mut spare);
            assert_eq!(buffer.len(), 14);
            assert_eq!(drain(&mut buffer, &mut spare, step), b"abcdefghijklmn");
            assert_eq!(buffer.footprint(), 0, "step {step}");
        }
    }

    #[test]
    fn a_chunk_is_held_without_a_copy() {
        let mut buffer = SendBuffer::default();
        let chunk = Bytes::from(vec![7u8; 100]);
        let at = chunk.as_ptr();
        buffer.push_chunk(chunk);
        assert_eq!(buffer.chunks.front().map(|c| c.as_ptr()), Some(at));
        let mut out = Vec::new();
        buffer.move_front(40, &mut out, &mut SpareBuffer::default(), 0);
        assert_eq!(buffer.len(), 60);
        assert_eq!(
            buffer.chunks.front().map(|c| c.as_ptr()),
            Some(at.wrapping_add(40))
        );
    }

    #[test]
    fn a_drained_ring_goes_to_the_spare() {
        let mut spare = SpareBuffer::default();
        let mut buffer = SendBuffer::default();
        buffer.extend_from_slice(&[1; 5000], &mut spare);
        let mut out = Vec::new();
        buffer.move_front(5000, &mut out, &mut spare, 4096);
        assert!(spare.capacity() >= 5000);
        assert_eq!(buffer.footprint(), 0);
    }
}
