//! When a receiver knows a transfer is over: from its lanes, not from the
//! connection's close, which may be lost.

use std::time::{Duration, Instant};

use super::ReceiveLane;
use crate::wire::Lane;

/// A set of lane indices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LaneSet([u64; 4]);

impl LaneSet {
    fn insert(&mut self, index: u8) {
        self.0[usize::from(index / 64)] |= 1 << (index % 64);
    }

    fn contains(&self, index: u8) -> bool {
        self.0[usize::from(index / 64)] & (1 << (index % 64)) != 0
    }

    fn holds_all_below(&self, count: u8) -> bool {
        (0..count).all(|index| self.contains(index))
    }
}

/// A receiver's tally of the lanes of one transfer (one sender's
/// connection).
///
/// The transfer is *complete* once every lane of the count its preambles
/// give has said goodbye: each file on it then has its last answer, and
/// each stored one is whole and verified. The sender *has heard* every
/// answer once it has ended each lane's stream after the receiver's
/// goodbye ([`sender_finished`](crate::sender_finished)), which a reliable
/// stream delivers even when the connection's close that follows is lost.
/// A receiver reports success once the transfer is complete, and may go
/// once the sender has heard, or after a grace if it never says so.
///
/// Sans-IO: the caller passes the time.
///
/// ```
/// use std::time::{Duration, Instant};
/// use ltx_files::{Completion, Lane, ReceiveLane};
///
/// let mut completion = Completion::default();
/// let start = Instant::now();
/// for index in 0..2 {
///     let lane = Lane::new(index, 2).unwrap();
///     let said_goodbye = ReceiveLane { lane: Some(lane), files: Vec::new(), end: Ok(()) };
///     completion.lane_ended(start + Duration::from_secs(u64::from(index) + 1), &said_goodbye);
/// }
/// assert_eq!(completion.completed_at(), Some(start + Duration::from_secs(2)));
/// assert!(!completion.may_go(start + Duration::from_secs(2), Duration::from_secs(1)));
/// completion.lane_heard(Lane::new(0, 2).unwrap());
/// completion.lane_heard(Lane::new(1, 2).unwrap());
/// assert!(completion.may_go(start + Duration::from_secs(2), Duration::from_secs(1)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Completion {
    /// The count of lanes the first preamble gave.
    count: Option<u8>,
    /// The lanes that said goodbye.
    said_goodbye: LaneSet,
    /// The lanes whose stream the sender ended after the goodbye.
    heard: LaneSet,
    /// When the last lane said goodbye, once all have.
    completed_at: Option<Instant>,
}

impl Completion {
    /// Records how a lane ended, at `now`. A lane that said goodbye counts
    /// towards completion; one whose count differs from the first lane's
    /// does not (a sender that cannot count is not complete).
    pub fn lane_ended(&mut self, now: Instant, lane: &ReceiveLane) {
        let Some(which) = lane.lane else { return };
        if lane.end.is_err() || *self.count.get_or_insert(which.count()) != which.count() {
            return;
        }
        self.said_goodbye.insert(which.index());
        if self.completed_at.is_none() && self.said_goodbye.holds_all_below(which.count()) {
            self.completed_at = Some(now);
        }
    }

    /// Records that the sender ended `lane`'s stream after its goodbye:
    /// it has heard every answer on it.
    pub fn lane_heard(&mut self, lane: Lane) {
        if self.said_goodbye.contains(lane.index()) {
            self.heard.insert(lane.index());
        }
    }

    /// Whether every lane has said goodbye.
    pub fn is_complete(&self) -> bool {
        self.completed_at.is_some()
    }

    /// When the last lane said goodbye: the transfer's last byte.
    pub fn completed_at(&self) -> Option<Instant> {
        self.completed_at
    }

    /// Whether the sender has heard every answer of every lane.
    pub fn sender_heard_all(&self) -> bool {
        match (self.count, self.completed_at) {
            (Some(count), Some(_)) => self.heard.holds_all_below(count),
            _ => false,
        }
    }

    /// Until when a complete transfer waits for the sender to say it has
    /// heard everything: `grace` after completion; `None` while the
    /// transfer is not complete.
    pub fn wait_until(&self, grace: Duration) -> Option<Instant> {
        self.completed_at.map(|at| at + grace)
    }

    /// Whether the receiver may let the transfer go at `now`: it is
    /// complete, and the sender has heard everything or `grace` has passed
    /// since it completed.
    pub fn may_go(&self, now: Instant, grace: Duration) -> bool {
        self.sender_heard_all() || self.wait_until(grace).is_some_and(|until| now >= until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Stage, TransferError};

    fn lane(index: u8, count: u8, ok: bool) -> ReceiveLane {
        ReceiveLane {
            lane: Lane::new(index, count),
            files: Vec::new(),
            end: if ok {
                Ok(())
            } else {
                Err(TransferError::PeerClosed {
                    stage: Stage::Data,
                    source: std::io::ErrorKind::UnexpectedEof.into(),
                })
            },
        }
    }

    /// Three lanes of three: complete at the third goodbye, not the second;
    /// a lane that broke does not count, nor one that gives another count.
    #[test]
    fn complete_once_every_lane_said_goodbye() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut completion = Completion::default();
        completion.lane_ended(at(1), &lane(2, 3, true));
        completion.lane_ended(at(2), &lane(0, 3, false));
        completion.lane_ended(at(3), &lane(0, 4, true));
        completion.lane_ended(at(4), &lane(1, 3, true));
        assert!(!completion.is_complete());
        completion.lane_ended(at(5), &lane(0, 3, true));
        assert_eq!(completion.completed_at(), Some(at(5)));
        // A later lane does not move the end.
        completion.lane_ended(at(6), &lane(1, 3, true));
        assert_eq!(completion.completed_at(), Some(at(5)));
    }

    /// The receiver goes when the sender has heard every lane's answers,
    /// or `grace` after completion: not a moment before either.
    #[test]
    fn goes_when_heard_or_after_the_grace() {
        let t0 = Instant::now();
        let grace = Duration::from_secs(2);
        let mut completion = Completion::default();
        completion.lane_heard(Lane::new(0, 2).unwrap());
        assert!(!completion.may_go(t0, grace));
        completion.lane_ended(t0, &lane(0, 2, true));
        completion.lane_ended(t0, &lane(1, 2, true));
        completion.lane_heard(Lane::new(0, 2).unwrap());
        assert!(!completion.sender_heard_all());
        assert!(!completion.may_go(t0 + grace - Duration::from_millis(1), grace));
        assert!(completion.may_go(t0 + grace, grace));
        completion.lane_heard(Lane::new(1, 2).unwrap());
        assert!(completion.may_go(t0, grace));
    }
}
