//! The receiver's record of packet numbers, for acknowledgements and to
//! drop duplicates.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::time::Instant;

use crate::protection::REPLAY_WINDOW;
use crate::wire::{EcnCounts, MAX_ACK_RANGES};

/// What this end owes the peer in acknowledgements.
#[derive(Debug, Default)]
pub(super) struct AckState {
    /// The packet numbers received.
    pub(super) received: ReceivedPackets,
    /// When the largest of them arrived, for the acknowledgement delay.
    pub(super) largest_received_time: Option<Instant>,
    /// Ack-eliciting packets received since the last acknowledgement.
    pub(super) eliciting_unacked: u32,
    /// Whether an acknowledgement is to be sent now.
    pub(super) needed: bool,
    /// The ECN codepoints counted on the packets received.
    pub(super) ecn: EcnCounts,
}

/// Ranges of received packet numbers, the newest [`MAX_ACK_RANGES`] kept.
#[derive(Debug, Default)]
pub(crate) struct ReceivedPackets {
    /// start → end (inclusive).
    ranges: BTreeMap<u64, u64>,
    /// The smallest number ever accepted.
    first: Option<u64>,
    /// How many numbers were accepted.
    accepted: u64,
}

impl ReceivedPackets {
    /// Records `number`; false if it was seen before (or is older than
    /// anything remembered, or [`REPLAY_WINDOW`] or more below the largest,
    /// which is treated the same way: a packet that late carries nothing
    /// the coding has not already replaced). Whatever the protection, the
    /// symbols of an accepted packet are thus never more than that many
    /// behind the newest, which truncated symbol ids rely on.
    pub(crate) fn insert(&mut self, number: u64) -> bool {
        if self
            .largest()
            .is_some_and(|l| l.saturating_sub(number) >= REPLAY_WINDOW)
        {
            return false;
        }
        // The common case, the next number in order, extends the newest
        // range in place.
        if let Some(mut newest) = self.ranges.last_entry() {
            if newest.get().checked_add(1) == Some(number) {
                *newest.get_mut() = number;
                self.accepted += 1;
                return true;
            }
        }
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
        self.first = Some(self.first.map_or(number, |f| f.min(number)));
        self.accepted += 1;
        true
    }

    /// Numbers between the smallest and the largest accepted that never
    /// arrived (or not yet): the peer's packets the path lost.
    pub(crate) fn missing(&self) -> u64 {
        match (self.first, self.largest()) {
            (Some(first), Some(largest)) => (largest - first + 1).saturating_sub(self.accepted),
            _ => 0,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_a_replay_window_behind_the_newest_is_refused() {
        let mut received = ReceivedPackets::default();
        assert!(received.insert(10_000));
        assert!(received.insert(10_000 - REPLAY_WINDOW + 1));
        assert!(!received.insert(10_000 - REPLAY_WINDOW));
        assert!(!received.insert(0));
        // Duplicates are refused too; newer packets are not.
        assert!(!received.insert(10_000));
        assert!(received.insert(10_001));
        assert_eq!(received.largest(), Some(10_001));
    }

    #[test]
    fn the_gaps_are_counted_as_missing_until_they_arrive() {
        let mut received = ReceivedPackets::default();
        assert_eq!(received.missing(), 0);
        for number in [3, 4, 7, 8, 12] {
            assert!(received.insert(number));
        }
        assert_eq!(received.missing(), 5, "5, 6, 9, 10, 11");
        assert!(received.insert(10));
        assert!(!received.insert(10));
        assert_eq!(received.missing(), 4);
        // A number below the first widens the span by what lies between.
        assert!(received.insert(1));
        assert_eq!(received.missing(), 5, "2, 5, 6, 9, 11");
    }
}
