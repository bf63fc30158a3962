//! Probing for room that the delay does not show: after start-up, whether
//! the delay follows the window. The reasoning is in
//! `docs/design/congestion-response.md` ("Jitter is not a queue").
//!
//! A path whose delay jitters without reordering delays a flow's packets
//! more the more densely it sends, so the round trip it sees stands above
//! RTTmin though it built no queue, and its window, sized from RTTmin or
//! cut by `RTTmin / RTT`, falls short of the path. The probe raises the
//! window towards what the measured rate fills over the round trip seen,
//! a quarter at most, and keeps the step only where the standing round
//! trip does not rise with it: a queue the flow built grows by the bytes
//! added over the rate; jitter does not.
//!
//! Start-up reads the rate from ACKs the jitter clumps, and may read it
//! low. Where the window already fills the measured rate and the round
//! trip stands above RTTmin as the jitter makes it, the probe steps an
//! eighth beyond it, judged the same way; and a step's rounds that
//! deliver more than the measured rate raise it: the next probe then
//! fills the higher rate.
//!
//! It runs only where the delay jitters: where the RTT sample changes by
//! more than a datagram's time at the measured rate on average from one
//! acknowledged packet to the next (packets one ACK names share its
//! sample), or start-up's flights came back in clumps. A queue, the flow's own or
//! one shared with other flows, changes by about a datagram's time between
//! two of a flow's samples; where other flows drain it, a step taken into
//! it would show no rise and be kept, at their expense.

use std::time::{Duration, Instant};

use super::Tolerant;
use crate::rtt::{RttEstimator, MIN_QUEUE_MARGIN};

/// The largest step of one probe, as a fraction of the window.
const STEP: f64 = 0.25;

/// The step of a probe beyond what the measured rate fills, as a fraction
/// of the window: small, since it builds a queue wherever the rate was
/// read right.
const BEYOND_STEP: f64 = 0.125;

/// How far above RTTmin the standing round trip must stand, as a fraction
/// of RTTmin, for a probe to step beyond what the measured rate fills: the
/// rise that jitter shows a dense flow. Without it, a step beyond adds a
/// queue that random loss then cuts the window for.
const BEYOND_ABOVE_MIN: f64 = 0.02;

/// A window this close to what the measured rate fills over the round
/// trip seen is not probed: the room is too small to tell from noise.
const ROOM_MARGIN: f64 = 1.05;

/// Round trips from a probe's step to its judgement: one for the larger
/// flight to reach the receiver and come back, one for the standing
/// queue's round to be made of it alone.
const JUDGE_ROUNDS: u32 = 3;

/// Round trips between probes once one found no room, doubled after each
/// such probe up to [`MAX_WAIT_ROUNDS`]; after one that found room the
/// next follows at once.
const FIRST_WAIT_ROUNDS: u32 = 8;

/// Round trips after a reduction before a probe: the standing queue
/// measures anew from it.
const AFTER_REDUCTION_ROUNDS: u32 = 2;

/// The longest wait between probes, in round trips.
const MAX_WAIT_ROUNDS: u32 = 64;

/// The share of the rise a queue of its own would show, `added / rate`,
/// that the standing round trip must rise by for the step to be undone.
const FOLLOWS: f64 = 0.5;

/// Weight of each acknowledged packet in [`RoomProbe`]'s mean change of
/// the RTT sample.
const JITTER_GAIN: f64 = 1.0 / 16.0;

/// The mean change of the RTT sample per acknowledged packet, in datagram
/// times at the measured rate, from which the delay counts as jittering.
const JITTERY: f64 = 1.0;

/// The probe's state.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RoomProbe {
    /// The last RTT sample, and its mean change per acknowledged packet,
    /// seconds.
    jitter: Option<(Duration, f64)>,
    /// Not before this may the next probe start.
    next: Option<Instant>,
    /// Round trips to wait after a probe that found no room.
    wait_rounds: u32,
    /// The probe under way.
    pending: Option<Step>,
}

/// A probe's step, waiting for its judgement.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Bytes added to the window.
    added: u64,
    /// The standing round trip before the step.
    before: Duration,
    /// When the step is judged.
    judge_at: Instant,
    /// From when acknowledged bytes count towards the rate the step
    /// delivers: a round trip after it, when the larger flight's ACKs
    /// come back.
    count_from: Instant,
    /// Bytes acknowledged since `count_from`.
    acked: u64,
}

impl Step {
    /// Counts bytes acknowledged at `now`.
    fn on_acked(&mut self, now: Instant, bytes: u64) {
        if now >= self.count_from {
            self.acked = self.acked.saturating_add(bytes);
        }
    }

    /// The rate, bytes per second, the step's rounds delivered by `now`.
    fn delivered(&self, now: Instant) -> Option<u64> {
        let span = now.saturating_duration_since(self.count_from);
        // `as` saturates.
        (!span.is_zero()).then(|| (self.acked as f64 / span.as_secs_f64()) as u64)
    }
}

impl RoomProbe {
    /// Takes the RTT sample of one acknowledged packet. Packets one ACK
    /// names share its sample, so a change counts once and its repeats as
    /// none: the mean is per packet, not per sample. Taken per sample, it
    /// reads the sawtooth of a queue shared with other ltx flows as jitter
    /// and turns the probe on where it takes room from them
    /// (`docs/design/congestion-response.md`, "Jitter is not a queue").
    pub(super) fn on_packet_acked(&mut self, sample: Duration) {
        self.jitter = Some(match self.jitter {
            None => (sample, 0.0),
            Some((last, mean)) => {
                let change = sample.abs_diff(last).as_secs_f64();
                (sample, mean + (change - mean) * JITTER_GAIN)
            }
        });
    }

    /// Whether the RTT sample changes by more than [`JITTERY`] datagram
    /// times at `rate` (bytes per second) per acknowledged packet on
    /// average.
    fn jittery(&self, max_datagram: u64, rate: u64) -> bool {
        let datagram_time = max_datagram as f64 / rate.max(1) as f64;
        self.jitter
            .is_some_and(|(_, mean)| mean > JITTERY * datagram_time)
    }

    /// Drops the probe under way: a reduction answered the path, and the
    /// standing queue starts anew. The next probe waits for it.
    pub(super) fn cancel(&mut self, now: Instant, srtt: Duration) {
        self.pending = None;
        self.next = Some(now + srtt * AFTER_REDUCTION_ROUNDS);
    }

    fn wait(&mut self, now: Instant, srtt: Duration) {
        let rounds = self.wait_rounds.max(FIRST_WAIT_ROUNDS);
        self.next = Some(now + srtt * rounds);
    }
}

impl Tolerant {
    /// An acknowledgement of `bytes` after start-up with data waiting:
    /// judges the probe under way, or starts one.
    pub(super) fn probe_for_room(&mut self, now: Instant, bytes: u64, rtt: &RttEstimator) {
        if !self.config.room_probe {
            return;
        }
        if let Some(step) = &mut self.room.pending {
            step.on_acked(now, bytes);
        }
        let (Some(rate), Some(standing)) = (self.max_rate, self.standing.min()) else {
            return;
        };
        if !self.startup.held_in_clumps && !self.room.jittery(self.max_datagram, rate) {
            return;
        }
        let srtt = rtt.smoothed();
        if let Some(step) = self.room.pending {
            if now < step.judge_at {
                return;
            }
            self.room.pending = None;
            // What the path delivered through the step is its rate at
            // least, whatever the delay did.
            if let Some(delivered) = step.delivered(now).filter(|&d| d > rate) {
                self.max_rate = Some(delivered);
            }
            let queue_of_its_own = step.added as f64 / rate.max(1) as f64;
            let rise = standing.saturating_sub(step.before).as_secs_f64();
            if rise >= FOLLOWS * queue_of_its_own {
                // The delay followed the window: the path is full. The
                // queue the step built drains from here on: losses of the
                // packets sent into it are the step's, answered by undoing
                // it, and the standing queue measures anew.
                self.window = self
                    .window
                    .saturating_sub(step.added)
                    .max(self.min_window());
                self.set_loss_epoch(now, rtt);
                self.room.wait_rounds = self
                    .room
                    .wait_rounds
                    .max(FIRST_WAIT_ROUNDS / 2)
                    .saturating_mul(2)
                    .min(MAX_WAIT_ROUNDS);
                self.room.wait(now, srtt);
            } else {
                self.room.wait_rounds = 0;
                self.room.next = Some(now);
            }
            return;
        }
        if self.room.next.is_some_and(|next| now < next) {
            return;
        }
        let fills = rate as f64 * standing.as_secs_f64();
        let window = self.window as f64;
        // `as` saturates; the step is at most a quarter of the window.
        let added = if fills > window * ROOM_MARGIN {
            (fills - window).min(window * STEP) as u64
        } else if window <= fills * (1.0 + STEP) && self.delay_hides_rate(standing, rtt) {
            (window * BEYOND_STEP) as u64
        } else {
            // No sign that the jitter hid the rate: the round trip stands
            // at RTTmin, or the window is already well past what the rate
            // fills (the path's queue too short to show a delay, or the
            // rate read high).
            self.room.next = Some(now + srtt);
            return;
        };
        self.window = self.window.saturating_add(added);
        self.room.pending = Some(Step {
            added,
            before: standing,
            judge_at: now + srtt * JUDGE_ROUNDS,
            count_from: now + srtt,
            acked: 0,
        });
    }

    /// Whether the standing round trip stands above RTTmin by more than
    /// [`BEYOND_ABOVE_MIN`] of it (and the host's scheduling margin), as
    /// the jitter that can hide the path's rate makes it stand.
    fn delay_hides_rate(&self, standing: Duration, rtt: &RttEstimator) -> bool {
        let min = rtt.min();
        let above = min.mul_f64(BEYOND_ABOVE_MIN).max(MIN_QUEUE_MARGIN);
        standing > min + above
    }
}
