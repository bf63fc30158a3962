//! The bottleneck's rate read from the client's first Initial flight.
//!
//! The client sends its first Initial in several copies at one instant, and
//! the server answers each as it arrives: the answers come back spaced by
//! the time the bottleneck takes to send one copy, a packet-pair reading of
//! its rate before any data has left. It is worth having where the initial
//! window is more than the path holds: sent at one instant, the window
//! overflows a queue of one bandwidth-delay product, and the rate says how
//! to spread it.
//!
//! Answers are told apart by the packet number they acknowledge, so a copy
//! lost on the way counts as a slot (its neighbours' answers are two slots
//! apart). Spacings below [`MIN_SPACING`] say only that the path is fast:
//! real endpoints read datagrams in batches and answer them together.

use std::time::{Duration, Instant};

/// The shortest spacing read as a rate, as for start-up's packet pairs:
/// real endpoints read and answer datagrams in batches, which moves an
/// answer by up to a few hundred microseconds.
pub(super) const MIN_SPACING: Duration = Duration::from_micros(500);

/// The longest the first data waits for a second answer after the first:
/// a path whose copies are further apart (slower than about 1 Mbit/s for
/// 1200-byte copies) is not read, and waiting longer would cost a path that
/// lost the later copies more than the reading is worth.
const MAX_HOLD: Duration = Duration::from_millis(10);

/// The longest the first data waits, as a fraction of the handshake's
/// round trip: on a short path the window's overflow costs little time to
/// repair, and the wait must cost less.
const HOLD_PER_RTT: u32 = 4;

/// What the answers to the copies said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Not yet concluded: the first data waits.
    Pending,
    /// The bottleneck's rate, bytes per second.
    Rate(u64),
    /// No rate: the answers came too close together to read one, or too
    /// late, or not at all. The first data goes.
    None,
}

/// The copies of the client's first Initial flight and their answers.
#[derive(Debug, Clone)]
pub(super) struct CopySpacing {
    /// The packet number of the first copy.
    first_number: u64,
    /// Copies sent so far, all at `sent`.
    copies: u64,
    /// The size of one copy on the wire.
    copy_bytes: u64,
    sent: Instant,
    /// The newest copy answered so far, and when.
    answered: Option<(u64, Instant)>,
    /// Until when the first data waits for the reading.
    hold_until: Option<Instant>,
    reading: Reading,
}

impl CopySpacing {
    /// The first copy, packet `number` of `bytes`, left at `now`.
    pub(super) fn new(number: u64, bytes: u64, now: Instant) -> Self {
        Self {
            first_number: number,
            copies: 1,
            copy_bytes: bytes,
            sent: now,
            answered: None,
            hold_until: None,
            reading: Reading::Pending,
        }
    }

    /// Another copy, packet `number` of `bytes`, left at `now`. False if it
    /// is not one of the flight (sent later, of another size, or out of
    /// order): the reading is then void.
    pub(super) fn on_copy(&mut self, number: u64, bytes: u64, now: Instant) -> bool {
        let next = self.first_number.saturating_add(self.copies);
        if number != next || bytes != self.copy_bytes || now != self.sent {
            return false;
        }
        self.copies += 1;
        true
    }

    /// The handshake completed at `now` (the first answer), its round trip
    /// `rtt`: the first data waits at most until the returned instant.
    pub(super) fn on_established(&mut self, now: Instant, rtt: Duration) -> Option<Instant> {
        if self.reading != Reading::Pending || self.copies < 2 {
            self.reading = Reading::None;
            return None;
        }
        let until = now + (rtt / HOLD_PER_RTT).min(MAX_HOLD);
        self.hold_until = Some(until);
        Some(until)
    }

    /// An acknowledgement whose largest packet number is `largest` arrived
    /// at `now`. Returns the reading, once concluded.
    pub(super) fn on_ack(&mut self, largest: u64, now: Instant) -> Reading {
        if self.reading != Reading::Pending {
            return self.reading;
        }
        let last = self.first_number.saturating_add(self.copies - 1);
        if largest < self.first_number || largest > last {
            return self.reading;
        }
        match self.answered {
            None => self.answered = Some((largest, now)),
            Some((number, at)) if largest > number => {
                let spacing = now.saturating_duration_since(at);
                self.reading = if spacing < MIN_SPACING {
                    Reading::None
                } else {
                    let bytes = u128::from(self.copy_bytes) * u128::from(largest - number);
                    let rate = bytes * 1_000_000_000 / spacing.as_nanos().max(1);
                    Reading::Rate(u64::try_from(rate).unwrap_or(u64::MAX))
                };
                return self.reading;
            }
            Some(_) => {}
        }
        // The last copy answered first: no later answer will come.
        if largest == last {
            self.reading = Reading::None;
        }
        self.reading
    }

    /// Until when the first data still waits, seen at `now`; past the
    /// hold, the reading is given up.
    pub(super) fn hold(&mut self, now: Instant) -> Option<Instant> {
        if self.reading != Reading::Pending {
            return None;
        }
        match self.hold_until {
            Some(until) if now < until => Some(until),
            Some(_) => {
                self.reading = Reading::None;
                None
            }
            None => None,
        }
    }

    /// Whether the reading is concluded.
    pub(super) fn is_concluded(&self) -> bool {
        self.reading != Reading::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COPY: u64 = 1200;

    fn flight(now: Instant) -> CopySpacing {
        let mut spacing = CopySpacing::new(0, COPY, now);
        assert!(spacing.on_copy(1, COPY, now));
        assert!(spacing.on_copy(2, COPY, now));
        spacing
    }

    /// A flight of three copies whose first answer, to copy 0, came after
    /// `rtt`: the reading waits for the next.
    fn first_answered(rtt: Duration) -> (CopySpacing, Instant) {
        let start = Instant::now();
        let mut spacing = flight(start);
        let first = start + rtt;
        assert!(spacing.on_established(first, rtt).is_some());
        assert_eq!(spacing.on_ack(0, first), Reading::Pending);
        (spacing, first)
    }

    #[test]
    fn answers_a_slot_apart_read_the_bottleneck() {
        let start = Instant::now();
        let mut spacing = flight(start);
        let first = start + Duration::from_millis(26);
        assert!(spacing
            .on_established(first, Duration::from_millis(26))
            .is_some());
        assert_eq!(spacing.on_ack(0, first), Reading::Pending);
        assert!(spacing.hold(first + Duration::from_micros(500)).is_some());
        // 1200 bytes in 960 µs: 10 Mbit/s.
        let second = first + Duration::from_micros(960);
        assert_eq!(spacing.on_ack(1, second), Reading::Rate(1_250_000));
        assert_eq!(spacing.hold(second), None);
    }

    #[test]
    fn a_lost_copy_counts_as_a_slot() {
        let (mut spacing, first) = first_answered(Duration::from_millis(26));
        // Copy 1 lost: copy 2's answer comes two slots later.
        let third = first + Duration::from_micros(1920);
        assert_eq!(spacing.on_ack(2, third), Reading::Rate(1_250_000));
    }

    #[test]
    fn repeated_acknowledgements_of_one_copy_wait_for_the_next() {
        let (mut spacing, first) = first_answered(Duration::from_millis(26));
        assert_eq!(
            spacing.on_ack(0, first + Duration::from_micros(18)),
            Reading::Pending
        );
        let second = first + Duration::from_micros(960);
        assert_eq!(spacing.on_ack(1, second), Reading::Rate(1_250_000));
    }

    #[test]
    fn close_answers_say_only_that_the_path_is_fast() {
        let (mut spacing, first) = first_answered(Duration::from_millis(20));
        let second = first + Duration::from_micros(96);
        assert_eq!(spacing.on_ack(1, second), Reading::None);
        assert_eq!(spacing.hold(second), None);
    }

    #[test]
    fn the_wait_is_bounded() {
        let start = Instant::now();
        let rtt = Duration::from_millis(600);
        let mut spacing = flight(start);
        let first = start + rtt;
        let until = spacing.on_established(first, rtt).expect("a hold");
        assert_eq!(until, first + MAX_HOLD);
        spacing.on_ack(0, first);
        assert_eq!(spacing.hold(until - Duration::from_micros(1)), Some(until));
        assert_eq!(spacing.hold(until), None);
        // An answer after the hold is not read.
        assert_eq!(spacing.on_ack(1, until), Reading::None);

        let rtt = Duration::from_millis(20);
        let mut spacing = flight(start);
        let until = spacing.on_established(start + rtt, rtt).expect("a hold");
        assert_eq!(until, start + rtt + rtt / HOLD_PER_RTT);
    }

    #[test]
    fn the_last_copy_answered_first_ends_the_wait() {
        let start = Instant::now();
        let mut spacing = flight(start);
        let first = start + Duration::from_millis(26);
        spacing.on_established(first, Duration::from_millis(26));
        assert_eq!(spacing.on_ack(2, first), Reading::None);
        assert_eq!(spacing.hold(first), None);
    }

    #[test]
    fn only_the_flight_counts() {
        let start = Instant::now();
        let mut spacing = CopySpacing::new(0, COPY, start);
        assert!(!spacing.on_copy(1, COPY, start + Duration::from_millis(1)));
        assert!(!spacing.on_copy(2, COPY, start));
        assert!(!spacing.on_copy(1, COPY + 1, start));
        // Acknowledgements of later packets say nothing.
        let mut spacing = flight(start);
        spacing.on_established(start, Duration::from_millis(26));
        assert_eq!(spacing.on_ack(7, start), Reading::Pending);
        // One copy cannot be read.
        let mut single = CopySpacing::new(0, COPY, start);
        assert_eq!(
            single.on_established(start, Duration::from_millis(26)),
            None
        );
        assert_eq!(single.hold(start), None);
    }
}
