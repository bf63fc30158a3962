//! Early data: the key that seals a client's first-flight data, the wall
//! clock its first message is stamped with, and the server's record of
//! first flights seen, which keeps a replayed flight from delivering its
//! data twice.
//!
//! The early key comes from the Noise chaining key after the client's
//! first message (`es` and `ss` mixed in, and the pre-shared key if any):
//! both ends hold it once the server has read that message. It has no
//! contribution from the server's ephemeral key, so early data has no
//! forward secrecy against a later compromise of the server's static key,
//! and anyone can send a recorded first flight again. The
//! [`EarlyDataRecord`] answers the second; nothing answers the first.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::aead::derive_secret;
use super::KEY_LEN;

/// The label the early key is derived under, apart from every other key
/// drawn from the same handshake.
const EARLY_DATA_LABEL: &[u8] = b"ltx early data";

/// How far a first message's stamp may be behind the server's clock, and
/// how long a first flight is remembered, by default.
pub const EARLY_DATA_WINDOW: Duration = Duration::from_secs(10);
/// How far a first message's stamp may be ahead of the server's clock
/// (a client's clock a little fast), and so how long a server refuses
/// early data after it starts: short, so that a restarted server takes
/// early data again within a second.
pub const EARLY_DATA_AHEAD: Duration = Duration::from_secs(1);
/// First flights an [`EarlyDataRecord`] remembers at most, by default.
pub const EARLY_DATA_RECORD_CAPACITY: usize = 0x1_0000;
/// Bytes of a client's first message that name its flight: its ephemeral
/// public key, fresh in every connection.
pub const FLIGHT_ID_LEN: usize = 32;

/// The secret early data is sealed under, from the first half of the
/// handshake's split right after the client's first message.
pub(crate) fn early_data_secret(split: &[u8; KEY_LEN]) -> [u8; KEY_LEN] {
    derive_secret(split, EARLY_DATA_LABEL)
}

/// Milliseconds since the UNIX epoch, as the driver's wall clock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixMillis(pub u64);

/// A wall clock the core can read without reading one: the driver gives a
/// monotonic instant and the wall-clock time at that instant, once; later
/// readings add the monotonic time elapsed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    instant: Instant,
    unix: UnixMillis,
}

impl WallClock {
    /// The clock that reads `unix` at `instant`.
    pub fn new(instant: Instant, unix: UnixMillis) -> WallClock {
        WallClock { instant, unix }
    }

    /// The wall-clock time at `now` (the anchor's time before it).
    pub fn at(&self, now: Instant) -> UnixMillis {
        let elapsed = now.saturating_duration_since(self.instant);
        UnixMillis(
            self.unix
                .0
                .saturating_add(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
        )
    }
}

/// The name of a client's first flight: the first [`FLIGHT_ID_LEN`] bytes
/// of its first message, its ephemeral public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlightId([u8; FLIGHT_ID_LEN]);

impl FlightId {
    /// The flight of `first_message`, if it is long enough to name one.
    pub fn of(first_message: &[u8]) -> Option<FlightId> {
        first_message
            .get(..FLIGHT_ID_LEN)
            .and_then(|b| <[u8; FLIGHT_ID_LEN]>::try_from(b).ok())
            .map(FlightId)
    }
}

/// Why a server refused a first flight's early data. The handshake goes
/// on; the client sends the data again once it completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EarlyRefusal {
    /// The client's stamp is more than the window behind the server's
    /// clock, or more than [`EARLY_DATA_AHEAD`] ahead of it.
    #[error("the client's clock is outside the window")]
    OutsideWindow,
    /// The flight was seen before: a replay.
    #[error("the first flight was seen before")]
    Replayed,
    /// The record is full of flights still inside the window.
    #[error("the record of first flights is full")]
    Full,
    /// The client's stamp is less than [`EARLY_DATA_AHEAD`] after the
    /// server started: flights it saw before a restart are not in the
    /// record.
    #[error("the server started too recently")]
    Starting,
    /// The server does not take early data: it is off, or the client's
    /// symbols would not fit the server's datagrams.
    #[error("the server does not take early data on this connection")]
    NotTaken,
}

/// A server's record of the first flights whose early data it accepted,
/// shared by every connection of an endpoint: a replayed flight makes a
/// new connection, so only a record wider than one connection can see it.
/// Clones share one record.
///
/// A flight's early data is accepted only if its stamp is at most the
/// window behind the server's clock and at most [`EARLY_DATA_AHEAD`]
/// ahead of it, its [`FlightId`] is not in the record, and the stamp is
/// later than [`EARLY_DATA_AHEAD`] after the record was made: flights
/// accepted before a restart (whose record is gone) carried stamps at most
/// that far past the restart, so none of them is accepted again.
/// A flight is remembered until its stamp is a window behind the server's
/// clock, when a replay of it is refused by the stamp alone. When the
/// record holds `capacity` flights still inside the window, early data is
/// refused rather than a flight forgotten.
#[derive(Debug, Clone)]
pub struct EarlyDataRecord(Arc<Mutex<Record>>);

#[derive(Debug)]
struct Record {
    clock: WallClock,
    window: u64,
    /// How far ahead of the clock a stamp may be, milliseconds.
    ahead: u64,
    capacity: usize,
    /// The first stamp accepted: `ahead` past the record's start.
    first_stamp: u64,
    by_stamp: BTreeSet<(u64, FlightId)>,
    seen: HashSet<FlightId>,
}

impl EarlyDataRecord {
    /// An empty record for a server whose wall clock is `clock`, started
    /// now, with the default window and capacity.
    pub fn new(clock: WallClock) -> EarlyDataRecord {
        EarlyDataRecord::with_limits(clock, EARLY_DATA_WINDOW, EARLY_DATA_RECORD_CAPACITY)
    }

    /// An empty record with a `window` and a `capacity` of flights; a
    /// stamp may be ahead of the clock by [`EARLY_DATA_AHEAD`] or the
    /// window, whichever is shorter.
    pub fn with_limits(clock: WallClock, window: Duration, capacity: usize) -> EarlyDataRecord {
        let window = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        let ahead = (EARLY_DATA_AHEAD.as_millis() as u64).min(window);
        EarlyDataRecord(Arc::new(Mutex::new(Record {
            clock,
            window,
            ahead,
            capacity,
            first_stamp: clock.at(clock.instant).0.saturating_add(ahead),
            by_stamp: BTreeSet::new(),
            seen: HashSet::new(),
        })))
    }

    /// Whether the early data of flight `id`, stamped `stamp` by the
    /// client, may be delivered at `now`; if so, the flight is recorded.
    pub fn admit(&self, now: Instant, id: FlightId, stamp: UnixMillis) -> Result<(), EarlyRefusal> {
        // A poisoned lock only means another connection panicked while
        // holding it; the record itself is always consistent.
        let mut record = self.0.lock().unwrap_or_else(|e| e.into_inner());
        record.admit(now, id, stamp.0)
    }

    /// Flights remembered now.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).seen.len()
    }

    /// Whether no flight is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Record {
    fn admit(&mut self, now: Instant, id: FlightId, stamp: u64) -> Result<(), EarlyRefusal> {
        let clock = self.clock.at(now).0;
        if stamp > clock.saturating_add(self.ahead) || clock.saturating_sub(stamp) > self.window {
            return Err(EarlyRefusal::OutsideWindow);
        }
        if stamp <= self.first_stamp {
            return Err(EarlyRefusal::Starting);
        }
        // Forget flights whose stamps the window already refuses.
        let horizon = clock.saturating_sub(self.window);
        while let Some(&(oldest, old)) = self.by_stamp.first() {
            if oldest >= horizon {
                break;
            }
            self.by_stamp.pop_first();
            self.seen.remove(&old);
        }
        if self.seen.contains(&id) {
            return Err(EarlyRefusal::Replayed);
        }
        if self.seen.len() >= self.capacity {
            return Err(EarlyRefusal::Full);
        }
        self.seen.insert(id);
        self.by_stamp.insert((stamp, id));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(10);
    const START: u64 = 1_700_000_000_000;

    fn record(capacity: usize) -> (EarlyDataRecord, Instant) {
        let t0 = Instant::now();
        let clock = WallClock::new(t0, UnixMillis(START));
        (EarlyDataRecord::with_limits(clock, WINDOW, capacity), t0)
    }

    fn flight(n: u8) -> FlightId {
        FlightId([n; FLIGHT_ID_LEN])
    }

    /// A server clock of one window and a half after the record started.
    fn settled(t0: Instant) -> (Instant, u64) {
        let now = t0 + WINDOW + WINDOW / 2;
        (now, START + 15_000)
    }

    #[test]
    fn a_flight_is_admitted_once_and_its_replay_refused() {
        let (record, t0) = record(16);
        let (now, ms) = settled(t0);
        assert_eq!(record.admit(now, flight(1), UnixMillis(ms)), Ok(()));
        assert_eq!(
            record.admit(now, flight(1), UnixMillis(ms)),
            Err(EarlyRefusal::Replayed)
        );
        assert_eq!(record.admit(now, flight(2), UnixMillis(ms)), Ok(()));
        assert_eq!(record.len(), 2);
    }

    #[test]
    fn a_stamp_just_inside_the_window_passes_and_just_outside_fails() {
        let (record, t0) = record(16);
        let (now, ms) = settled(t0);
        let ahead = EARLY_DATA_AHEAD.as_millis() as u64;
        assert_eq!(record.admit(now, flight(1), UnixMillis(ms + ahead)), Ok(()));
        assert_eq!(
            record.admit(now, flight(2), UnixMillis(ms + ahead + 1)),
            Err(EarlyRefusal::OutsideWindow)
        );
        let later = now + WINDOW;
        assert_eq!(record.admit(later, flight(3), UnixMillis(ms)), Ok(()));
        assert_eq!(
            record.admit(later, flight(4), UnixMillis(ms - 1)),
            Err(EarlyRefusal::OutsideWindow)
        );
    }

    #[test]
    fn a_fresh_record_refuses_stamps_within_the_allowance_ahead_of_its_start() {
        let ahead = EARLY_DATA_AHEAD.as_millis() as u64;
        let (restarted, t0) = record(16);
        let now = t0 + Duration::from_millis(500);
        // Stamped before the start: could have been taken by a server
        // before a restart.
        assert_eq!(
            restarted.admit(now, flight(1), UnixMillis(START - 5)),
            Err(EarlyRefusal::Starting)
        );
        assert_eq!(
            restarted.admit(now, flight(1), UnixMillis(START + ahead)),
            Err(EarlyRefusal::Starting)
        );
        assert_eq!(
            restarted.admit(now, flight(1), UnixMillis(START + ahead + 1)),
            Ok(())
        );
        // A server a little over the allowance old takes a flight stamped
        // by a client whose clock agrees with its own.
        let (young, t0) = record(16);
        let now = t0 + EARLY_DATA_AHEAD + Duration::from_millis(2);
        assert_eq!(
            young.admit(now, flight(2), UnixMillis(START + ahead + 2)),
            Ok(())
        );
    }

    #[test]
    fn a_full_record_refuses_until_its_flights_leave_the_window() {
        let (record, t0) = record(2);
        let (now, ms) = settled(t0);
        assert_eq!(record.admit(now, flight(1), UnixMillis(ms)), Ok(()));
        assert_eq!(record.admit(now, flight(2), UnixMillis(ms)), Ok(()));
        assert_eq!(
            record.admit(now, flight(3), UnixMillis(ms)),
            Err(EarlyRefusal::Full)
        );
        // The first two are a window old: a replay of them fails on its
        // stamp, so they may be forgotten.
        let later = now + WINDOW + Duration::from_millis(1);
        assert_eq!(
            record.admit(later, flight(3), UnixMillis(ms + 10_001)),
            Ok(())
        );
        assert_eq!(record.len(), 1);
        assert_eq!(
            record.admit(later, flight(1), UnixMillis(ms)),
            Err(EarlyRefusal::OutsideWindow)
        );
    }

    #[test]
    fn clones_share_one_record() {
        let (record, t0) = record(16);
        let (now, ms) = settled(t0);
        let other = record.clone();
        assert_eq!(record.admit(now, flight(7), UnixMillis(ms)), Ok(()));
        assert_eq!(
            other.admit(now, flight(7), UnixMillis(ms)),
            Err(EarlyRefusal::Replayed)
        );
    }

    #[test]
    fn the_early_secret_is_not_the_split_itself() {
        let split = [3u8; KEY_LEN];
        assert_ne!(early_data_secret(&split), split);
        assert_eq!(early_data_secret(&split), early_data_secret(&split));
    }
}
