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
//!
//! A path whose delay jitters holds packets behind a delayed one: it
//! clumps copies and answers, and spaces the clumps by the jitter, not the
//! bottleneck. A first flight paced at such a reading would crawl. A
//! bottleneck spaces every copy alike, so a gap is read only where the
//! answers around it can agree: not after a first answer that already names
//! two copies (they came together), nor where no copy is left to be
//! answered after it. The gap is read at once, so that the first data
//! waits no longer than the second answer, and the answer after it checks
//! it and may withdraw it.

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

/// How far apart, as a ratio, the spacing per copy of the first gap and
/// of the next may be for the reading to stand: batching moves an answer
/// by a few hundred microseconds, a jittering delay by milliseconds.
const AGREEMENT: f64 = 1.5;

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
    /// The rate read is withdrawn: the next answer came at a spacing far
    /// from it, which jitter gives, not a bottleneck.
    Withdrawn,
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
    /// Whether the first answer named more than the first copy: the
    /// copies it names came at no spacing.
    clumped: bool,
    /// The spacing per copy that the rate was read from, while the next
    /// answer may still check it.
    read_spacing: Option<Duration>,
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
            clumped: false,
            read_spacing: None,
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
        let last = self.first_number.saturating_add(self.copies - 1);
        if self.read_spacing.is_some() {
            return self.check(largest, now, last);
        }
        if self.reading != Reading::Pending {
            return self.reading;
        }
        if largest < self.first_number || largest > last {
            return self.reading;
        }
        match self.answered {
            None => {
                self.answered = Some((largest, now));
                self.clumped = largest > self.first_number;
            }
            Some((number, at)) if largest > number => {
                let spacing = now.saturating_duration_since(at);
                // A gap is read only where an answer is still to come that
                // can check it.
                self.reading = if spacing < MIN_SPACING || self.clumped || largest >= last {
                    Reading::None
                } else {
                    let slots = largest - number;
                    let bytes = u128::from(self.copy_bytes) * u128::from(slots);
                    let rate = bytes * 1_000_000_000 / spacing.as_nanos().max(1);
                    self.answered = Some((largest, now));
                    self.read_spacing = Some(spacing / u32::try_from(slots).unwrap_or(u32::MAX));
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

    /// The answer after the one the rate was read at, acknowledging
    /// packets up to `largest` at `now`: [`Reading::Withdrawn`] if its
    /// spacing per copy is not within [`AGREEMENT`] of the reading's. An
    /// acknowledgement of a later packet ends the check.
    fn check(&mut self, largest: u64, now: Instant, last: u64) -> Reading {
        let (Some(read), Some((number, at))) = (self.read_spacing, self.answered) else {
            return self.reading;
        };
        if largest <= number {
            return self.reading;
        }
        self.read_spacing = None;
        if largest > last {
            return self.reading;
        }
        let slots = u32::try_from(largest - number).unwrap_or(u32::MAX);
        let spacing = now.saturating_duration_since(at) / slots;
        let (short, long) = (spacing.min(read), spacing.max(read));
        if long.as_secs_f64() > short.as_secs_f64() * AGREEMENT {
            self.reading = Reading::Withdrawn;
        }
        self.reading
    }

    /// Whether a reading was given that a later answer may still
    /// withdraw.
    pub(super) fn is_checking(&self) -> bool {
        self.read_spacing.is_some()
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

    /// A flight of `copies` copies whose handshake completed after `rtt`,
    /// and when: the first data waits for the reading.
    fn established(copies: u64, rtt: Duration) -> (CopySpacing, Instant) {
        let start = Instant::now();
        let mut spacing = CopySpacing::new(0, COPY, start);
        for number in 1..copies {
            assert!(spacing.on_copy(number, COPY, start));
        }
        let first = start + rtt;
        assert!(spacing.on_established(first, rtt).is_some());
        (spacing, first)
    }

    /// A flight of three copies whose first answer, to copy 0, came after
    /// `rtt`: the reading waits for the next.
    fn first_answered(rtt: Duration) -> (CopySpacing, Instant) {
        let (mut spacing, first) = established(3, rtt);
        assert_eq!(spacing.on_ack(0, first), Reading::Pending);
        (spacing, first)
    }

    #[test]
    fn answers_a_slot_apart_read_the_bottleneck() {
        let (mut spacing, first) = first_answered(Duration::from_millis(26));
        assert!(spacing.hold(first + Duration::from_micros(500)).is_some());
        // 1200 bytes in 960 µs: 10 Mbit/s.
        let second = first + Duration::from_micros(960);
        assert_eq!(spacing.on_ack(1, second), Reading::Rate(1_250_000));
        assert_eq!(spacing.hold(second), None);
        // The next answer, a slot later give or take a host's batching,
        // bears it out.
        assert!(spacing.is_checking());
        let third = second + Duration::from_micros(1100);
        assert_eq!(spacing.on_ack(2, third), Reading::Rate(1_250_000));
        assert!(!spacing.is_checking());
    }

    #[test]
    fn a_lost_copy_counts_as_a_slot() {
        let (mut spacing, first) = established(4, Duration::from_millis(26));
        assert_eq!(spacing.on_ack(0, first), Reading::Pending);
        // Copy 1 lost: copy 2's answer comes two slots later, copy 3's one
        // slot after it.
        let third = first + Duration::from_micros(1920);
        assert_eq!(spacing.on_ack(2, third), Reading::Rate(1_250_000));
        let fourth = third + Duration::from_micros(960);
        assert_eq!(spacing.on_ack(3, fourth), Reading::Rate(1_250_000));
    }

    #[test]
    fn a_gap_no_answer_can_check_is_not_read() {
        let (mut spacing, first) = first_answered(Duration::from_millis(26));
        // Copy 1 lost: copy 2's is the last answer to come.
        let third = first + Duration::from_micros(1920);
        assert_eq!(spacing.on_ack(2, third), Reading::None);
        assert_eq!(spacing.hold(third), None);
    }

    #[test]
    fn answers_spaced_by_jitter_withdraw_the_reading() {
        // A delay that jitters held the answer to copy 1 for 2 ms, and the
        // answer to copy 2 came right behind it.
        let (mut spacing, first) = first_answered(Duration::from_millis(40));
        let second = first + Duration::from_millis(2);
        assert_eq!(spacing.on_ack(1, second), Reading::Rate(600_000));
        let third = second + Duration::from_micros(200);
        assert_eq!(spacing.on_ack(2, third), Reading::Withdrawn);
        assert!(!spacing.is_checking());
        // So does a gap far longer than the one read.
        let (mut spacing, first) = first_answered(Duration::from_millis(40));
        let second = first + Duration::from_millis(1);
        assert_eq!(spacing.on_ack(1, second), Reading::Rate(1_200_000));
        assert_eq!(
            spacing.on_ack(2, second + Duration::from_millis(3)),
            Reading::Withdrawn
        );
    }

    #[test]
    fn a_gap_after_copies_answered_together_is_not_read() {
        let (mut spacing, first) = established(3, Duration::from_millis(40));
        // Copies 0 and 1 came together, copy 2 2 ms later: a bottleneck
        // would have spaced them alike, a jittering delay clumps them.
        assert_eq!(spacing.on_ack(1, first), Reading::Pending);
        let third = first + Duration::from_millis(2);
        assert_eq!(spacing.on_ack(2, third), Reading::None);
    }

    #[test]
    fn an_acknowledgement_of_later_packets_ends_the_check() {
        let (mut spacing, first) = first_answered(Duration::from_millis(26));
        let second = first + Duration::from_micros(960);
        assert_eq!(spacing.on_ack(1, second), Reading::Rate(1_250_000));
        // Copy 2 lost; the first data's acknowledgement comes instead.
        let later = second + Duration::from_millis(26);
        assert_eq!(spacing.on_ack(9, later), Reading::Rate(1_250_000));
        assert!(!spacing.is_checking());
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
        let (mut spacing, first) = established(3, Duration::from_millis(26));
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
