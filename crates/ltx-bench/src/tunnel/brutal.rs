//! Brutal, Hysteria 2's congestion control, as a quinn controller: a fixed
//! target rate the user states (the link's), raised by the loss it measures
//! so that what arrives is the target rate.
//!
//! As Hysteria's `brutal` does, the controller counts acknowledged and lost
//! packets in one-second slots over the last five seconds; the ack rate is
//! acked / (acked + lost), 1 with fewer than 50 samples, and never below
//! 0.8. Hysteria's window is `rate × RTT × 2 / ack rate`, with a pacer of
//! its own at `rate / ack rate`. quinn's controller cannot set a pacing
//! rate: quinn paces a window per 0.8 smoothed RTT. So the window here is
//! `rate × RTT / ack rate`, which makes quinn pace at 1.25 × rate / ack
//! rate and keeps no more than the path's bandwidth-delay product (at the
//! measured RTT, queueing included) in flight.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory};
use quinn_proto::RttEstimator;

/// The slots of loss accounting, one second each.
const SLOTS: usize = 5;
/// Fewer samples than this in the slots: the ack rate is taken as 1.
const MIN_SAMPLES: u64 = 50;
/// The ack rate is never taken below this: at most 1.25 × the target.
const MIN_ACK_RATE: f64 = 0.8;

/// Brutal's configuration and factory: the target rate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BrutalConfig {
    /// The rate to deliver, bytes per second.
    pub(crate) bytes_per_s: u64,
}

impl ControllerFactory for BrutalConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Brutal {
            bytes_per_s: self.bytes_per_s,
            epoch: now,
            slots: [Slot::default(); SLOTS],
            smoothed_rtt: None,
            mtu: u64::from(current_mtu),
        })
    }
}

/// Acknowledged and lost packets in one second.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    second: u64,
    acked: u64,
    lost: u64,
}

/// The controller of one connection.
#[derive(Debug, Clone)]
struct Brutal {
    bytes_per_s: u64,
    epoch: Instant,
    slots: [Slot; SLOTS],
    smoothed_rtt: Option<Duration>,
    mtu: u64,
}

impl Brutal {
    /// The slot of `now`'s second, emptied if it held an older second.
    fn slot(&mut self, now: Instant) -> &mut Slot {
        let second = now.saturating_duration_since(self.epoch).as_secs();
        let slot = &mut self.slots[(second % SLOTS as u64) as usize];
        if slot.second != second {
            *slot = Slot {
                second,
                ..Slot::default()
            };
        }
        slot
    }

    /// acked / (acked + lost) over the slots of the last five seconds.
    fn ack_rate(&self) -> f64 {
        let newest = self.slots.iter().map(|s| s.second).max().unwrap_or(0);
        let (acked, lost) = self
            .slots
            .iter()
            .filter(|s| s.second + SLOTS as u64 > newest)
            .fold((0, 0), |(a, l), s| (a + s.acked, l + s.lost));
        if acked + lost < MIN_SAMPLES {
            return 1.0;
        }
        (acked as f64 / (acked + lost) as f64).max(MIN_ACK_RATE)
    }
}

impl Controller for Brutal {
    fn on_ack(
        &mut self,
        now: Instant,
        _sent: Instant,
        bytes: u64,
        _app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.smoothed_rtt = Some(rtt.get());
        let packets = bytes.div_ceil(self.mtu).max(1);
        self.slot(now).acked += packets;
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        _sent: Instant,
        _is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        let packets = lost_bytes.div_ceil(self.mtu);
        self.slot(now).lost += packets;
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = u64::from(new_mtu);
    }

    fn window(&self) -> u64 {
        match self.smoothed_rtt {
            Some(rtt) => {
                let window = self.bytes_per_s as f64 * rtt.as_secs_f64() / self.ack_rate();
                (window as u64).max(self.initial_window())
            }
            None => self.initial_window(),
        }
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        // Hysteria's initial window: 10 packets... of its own MTU; quinn's
        // minimum is two packets, so ten keeps the start comparable.
        10 * self.mtu
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brutal(bytes_per_s: u64) -> Brutal {
        let factory = Arc::new(BrutalConfig { bytes_per_s });
        let controller = factory.build(Instant::now(), 1200);
        *controller.into_any().downcast::<Brutal>().unwrap()
    }

    /// Below 50 samples the loss is not trusted; at 10 % loss the rate
    /// rises by 1/0.9; at 40 % it stops at 1.25 ×.
    #[test]
    fn the_ack_rate_follows_loss_down_to_its_floor() {
        let mut b = brutal(1_000_000);
        let now = b.epoch;
        b.slot(now).acked = 9;
        b.slot(now).lost = 1;
        assert_eq!(b.ack_rate(), 1.0);
        b.slot(now).acked = 90;
        b.slot(now).lost = 10;
        assert!((b.ack_rate() - 0.9).abs() < 1e-9);
        b.slot(now).lost = 60;
        assert_eq!(b.ack_rate(), MIN_ACK_RATE);
    }

    #[test]
    fn old_seconds_fall_out_of_the_account() {
        let mut b = brutal(1_000_000);
        let start = b.epoch;
        b.slot(start).lost = 1000;
        let later = start + Duration::from_secs(SLOTS as u64);
        b.slot(later).acked = 100;
        assert_eq!(b.ack_rate(), 1.0);
    }

    #[test]
    fn the_window_is_the_rate_times_the_round_trip_over_the_ack_rate() {
        let mut b = brutal(6_250_000);
        b.smoothed_rtt = Some(Duration::from_millis(600));
        assert_eq!(b.window(), 3_750_000);
        let now = b.epoch;
        b.slot(now).acked = 80;
        b.slot(now).lost = 20;
        assert_eq!(b.window(), 4_687_500);
    }
}
