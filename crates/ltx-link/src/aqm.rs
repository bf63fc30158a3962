//! Active queue management: signals congestion before the queue is full, by
//! marking ECN-capable packets CE (and dropping the others).
//!
//! Decisions are made when a packet starts transmission, from its sojourn
//! time in the queue. The link is FIFO at a known rate, so that moment and
//! that sojourn are known when the packet arrives; deciding then is the same
//! as deciding at the head of the queue, in the same order.

use std::time::{Duration, Instant};

use rand::Rng;

/// Below this many bytes queued, CoDel never signals (one full packet).
const CODEL_MIN_QUEUE_BYTES: usize = 1500;

/// Which AQM a queue runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aqm {
    /// CoDel (RFC 8289): signals once the sojourn time has stayed above
    /// `target` for `interval`, then ever more often (interval / √count)
    /// until it falls below.
    CoDel {
        /// Acceptable standing queue delay (5 ms in the RFC).
        target: Duration,
        /// Window over which the delay must stay high (100 ms in the RFC).
        interval: Duration,
    },
    /// RED on queueing delay: no signal below `min`, then with probability
    /// rising linearly to `max_p_percent` % at `max`, and always above `max`.
    Red {
        /// Delay where signalling starts.
        min: Duration,
        /// Delay where every packet is signalled.
        max: Duration,
        /// Signal probability just below `max`, in percent.
        max_p_percent: u8,
    },
}

impl Aqm {
    /// CoDel with the RFC 8289 defaults (5 ms target, 100 ms interval).
    pub fn codel() -> Aqm {
        Aqm::CoDel {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
        }
    }
}

/// The running state of an [`Aqm`].
#[derive(Debug, Clone)]
pub(crate) struct AqmState {
    aqm: Aqm,
    first_above: Option<Instant>,
    dropping: bool,
    drop_next: Option<Instant>,
    count: u32,
}

impl AqmState {
    pub(crate) fn new(aqm: Aqm) -> AqmState {
        AqmState {
            aqm,
            first_above: None,
            dropping: false,
            drop_next: None,
            count: 0,
        }
    }

    /// Whether the packet that starts transmission at `now` after waiting
    /// `sojourn`, with `queued_bytes` ahead of it, gets a congestion signal.
    pub(crate) fn signal(
        &mut self,
        now: Instant,
        sojourn: Duration,
        queued_bytes: usize,
        rng: &mut impl Rng,
    ) -> bool {
        match self.aqm {
            Aqm::CoDel { target, interval } => {
                self.codel(now, sojourn, queued_bytes, target, interval)
            }
            Aqm::Red {
                min,
                max,
                max_p_percent,
            } => {
                if sojourn < min {
                    false
                } else if sojourn >= max {
                    true
                } else {
                    let share = (sojourn - min).as_secs_f64() / (max - min).as_secs_f64();
                    rng.random_bool((share * f64::from(max_p_percent) / 100.0).clamp(0.0, 1.0))
                }
            }
        }
    }

    fn codel(
        &mut self,
        now: Instant,
        sojourn: Duration,
        queued_bytes: usize,
        target: Duration,
        interval: Duration,
    ) -> bool {
        let control_law =
            |t: Instant, count: u32| t + interval.div_f64(f64::from(count.max(1)).sqrt());
        let mut ok_to_signal = false;
        if sojourn < target || queued_bytes <= CODEL_MIN_QUEUE_BYTES {
            self.first_above = None;
        } else {
            match self.first_above {
                None => self.first_above = Some(now + interval),
                Some(t) => ok_to_signal = now >= t,
            }
        }
        if self.dropping {
            if !ok_to_signal {
                self.dropping = false;
                return false;
            }
            match self.drop_next {
                Some(next) if now >= next => {
                    self.count += 1;
                    self.drop_next = Some(control_law(next, self.count));
                    true
                }
                _ => false,
            }
        } else if ok_to_signal {
            self.dropping = true;
            // Resume near the last rate if the last episode was recent.
            let recent = self
                .drop_next
                .is_some_and(|next| now.saturating_duration_since(next) < interval * 16);
            self.count = if recent && self.count > 2 {
                self.count - 2
            } else {
                1
            };
            self.drop_next = Some(control_law(now, self.count));
            true
        } else {
            false
        }
    }
}
