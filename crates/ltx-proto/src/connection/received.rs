//! The receiver's record of packet numbers, for acknowledgements and to
//! drop duplicates.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use crate::wire::MAX_ACK_RANGES;

/// Ranges of received packet numbers, the newest [`MAX_ACK_RANGES`] kept.
#[derive(Debug, Default)]
pub(crate) struct ReceivedPackets {
    /// start → end (inclusive).
    ranges: BTreeMap<u64, u64>,
}

impl ReceivedPackets {
    /// Records `number`; false if it was seen before (or is older than
    /// anything remembered, which is treated the same way: a packet that
    /// late carries nothing the coding has not already replaced).
    pub(crate) fn insert(&mut self, number: u64) -> bool {
        if let Some((&oldest, _)) = self.ranges.first_key_value() {
            if self.ranges.len() >= MAX_ACK_RANGES && number < oldest {
                return false;
            }
        }
        let before = self
            .ranges
            .range(..=number)
            .next_back()
            .map(|(&s, &e)| (s, e));
        if let Some((_, end)) = before {
            if number <= end {
                return false;
            }
        }
        let mut start = number;
        let mut end = number;
        if let Some((s, e)) = before {
            if e.checked_add(1) == Some(number) {
                start = s;
                self.ranges.remove(&s);
            }
        }
        if let Some(next) = number.checked_add(1) {
            if let Some(e) = self.ranges.remove(&next) {
                end = e;
            }
        }
        self.ranges.insert(start, end);
        while self.ranges.len() > MAX_ACK_RANGES {
            self.ranges.pop_first();
        }
        true
    }

    /// The largest number received.
    pub(crate) fn largest(&self) -> Option<u64> {
        self.ranges.last_key_value().map(|(_, &e)| e)
    }

    /// The newest `max` ranges, newest first. Older ones are left out: the
    /// sender has declared those packets lost or delivered long since, and
    /// coding does not need their fate to be exact.
    pub(crate) fn ranges(&self, max: usize) -> Vec<RangeInclusive<u64>> {
        self.ranges
            .iter()
            .rev()
            .take(max)
            .map(|(&s, &e)| s..=e)
            .collect()
    }
}
