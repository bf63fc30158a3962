//! One drained stream buffer kept per direction for the connection's next
//! bytes. A bulk stream empties its send buffer or its reassembly ring
//! many times a second at gigabits; freeing it each time and growing a new
//! one from nothing cost a reallocation per doubling and a page fault for
//! every fresh page (measured in `docs/results.md`, "Loopback"). Kept here
//! rather than in the stream, the buffer serves whichever stream fills
//! next and idle streams hold nothing; one left unused for
//! [`SPARE_IDLE`] is freed, as is any when the connection goes quiet.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a kept buffer may go unused before it is freed: a bulk
/// transfer drains and refills its buffers far more often, while a burst's
/// buffer is not held long after the burst.
pub(super) const SPARE_IDLE: Duration = Duration::from_secs(1);

/// A drained buffer waiting for a stream that needs one.
#[derive(Debug, Default)]
pub(super) struct SpareBuffer {
    buffer: VecDeque<u8>,
    /// Kept or lent since the last [`SpareBuffer::age`].
    used: bool,
    /// When `age` last found it used, or first found it kept.
    idle_since: Option<Instant>,
}

impl SpareBuffer {
    /// Takes a drained buffer in, if it is larger than the one kept;
    /// otherwise it is freed.
    pub(super) fn keep(&mut self, drained: VecDeque<u8>) {
        debug_assert!(drained.is_empty(), "only an empty buffer is kept");
        if drained.is_empty() && drained.capacity() > self.buffer.capacity() {
            self.buffer = drained;
            self.used = true;
        }
    }

    /// Gives the kept buffer to `empty`, a stream buffer about to take
    /// bytes, if the kept one is larger.
    pub(super) fn lend(&mut self, empty: &mut VecDeque<u8>) {
        if empty.is_empty() && self.buffer.capacity() > empty.capacity() {
            std::mem::swap(empty, &mut self.buffer);
            self.buffer.clear();
            self.used = true;
        }
    }

    /// Frees the kept buffer if it has gone unused for [`SPARE_IDLE`],
    /// as far as calls to this can tell.
    pub(super) fn age(&mut self, now: Instant) {
        if self.buffer.capacity() == 0 {
            self.idle_since = None;
            return;
        }
        if std::mem::take(&mut self.used) {
            self.idle_since = Some(now);
            return;
        }
        match self.idle_since {
            Some(since) if now.saturating_duration_since(since) >= SPARE_IDLE => self.release(),
            Some(_) => {}
            None => self.idle_since = Some(now),
        }
    }

    /// Frees the kept buffer.
    pub(super) fn release(&mut self) {
        *self = SpareBuffer::default();
    }

    /// Bytes the kept buffer holds, by capacity.
    pub(super) fn capacity(&self) -> usize {
        self.buffer.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_larger_drained_buffer_is_kept_and_lent_to_an_empty_one() {
        let mut spare = SpareBuffer::default();
        spare.keep(VecDeque::with_capacity(1 << 16));
        spare.keep(VecDeque::with_capacity(1 << 10));
        assert!(spare.capacity() >= 1 << 16, "the smaller one is freed");
        let mut stream = VecDeque::new();
        spare.lend(&mut stream);
        assert!(stream.capacity() >= 1 << 16);
        assert!(spare.capacity() < 1 << 16);
    }

    #[test]
    fn a_buffer_holding_bytes_is_not_swapped() {
        let mut spare = SpareBuffer::default();
        spare.keep(VecDeque::with_capacity(1 << 16));
        let mut stream: VecDeque<u8> = b"abc".iter().copied().collect();
        spare.lend(&mut stream);
        assert_eq!(stream, b"abc");
        assert!(spare.capacity() >= 1 << 16);
    }

    #[test]
    fn a_buffer_in_use_is_kept_and_one_left_unused_is_freed() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut spare = SpareBuffer::default();
        spare.keep(VecDeque::with_capacity(1 << 16));
        // Lent and kept again between checks for longer than SPARE_IDLE.
        for ms in (0..3000).step_by(100) {
            spare.age(at(ms));
            let mut stream = VecDeque::new();
            spare.lend(&mut stream);
            spare.keep(stream);
        }
        assert!(spare.capacity() >= 1 << 16);
        spare.age(at(3000));
        spare.age(at(3000 + 999));
        assert!(spare.capacity() >= 1 << 16, "not yet idle long enough");
        spare.age(at(3000 + 1000));
        assert_eq!(spare.capacity(), 0);
    }
}
