//! ltx's congestion controller, [`Tolerant`]: tolerant of random loss,
//! answering congestion only.
//!
//! It follows Coded TCP (seed 003): a loss scales the window by
//! `RTTmin / RTT`, so random loss on an empty queue costs little and a
//! standing queue drains. ltx adds, one concern per file:
//! - `startup`: a start-up that measures the bottleneck from the spacing
//!   of ACKs (`bottleneck_rate`) and jumps to its bandwidth-delay
//!   product, leaving on a queue, a mark or loss above the random baseline,
//!   never on random loss;
//! - `queue`: `RTT` taken as the queue that stands (the smallest sample
//!   of the last round trip), a queue target that drains a standing queue
//!   without waiting for a loss, and the step aside when another flow
//!   holds the queue;
//! - the response to loss and ECN in this file: random loss leaves a window
//!   without a standing queue alone, loss above the baseline cuts by at
//!   least 0.85, a CE mark by 0.8;
//! - `delivery_rate`: an optional cap on the window after start-up.
//!
//! Pacing: in start-up at the measured rate (its probe burst at once),
//! after it at `1.25 × cwnd / smoothed RTT`. The derivations and the
//! alternatives weighed are in `docs/design/start-up.md` and
//! `docs/design/congestion-response.md`.

use std::sync::Arc;
use std::time::Instant;

use crate::congestion::{min_window, Controller, SavedPath};
use crate::rtt::RttEstimator;

/// How long a known rate's first flight may run before a round trip is
/// measured: the window then is the rate over this span, and the pacer
/// spreads it. The first sample (the handshake's) normally comes first.
const FIRST_FLIGHT_SPAN: std::time::Duration = std::time::Duration::from_secs(1);

/// The span a cut on delay alone leaves the window to send at the flow's
/// rate, at least: a host's scheduling and batching grain, the span Linux
/// sizes its send quanta on (a millisecond of the pacing rate).
const HOST_SPAN: std::time::Duration = std::time::Duration::from_millis(1);

mod bottleneck_rate;
mod config;
mod delivery_rate;
mod queue;
mod resume;
mod room_probe;
mod startup;
#[cfg(test)]
mod tests;

pub use config::TolerantConfig;
use delivery_rate::DeliveryRate;
use queue::{DrainWatch, StandingQueue, ACK_CLOCK_HEADROOM, STANDING_QUEUE};
use resume::Resume;
use room_probe::RoomProbe;
use startup::Startup;

/// ltx's congestion controller: the window starts from a measured
/// bandwidth-delay product, drains a standing queue, backs off by
/// `RTTmin / RTT` on loss and by 0.8 on ECN, and leaves random loss on an
/// empty queue alone.
#[derive(Debug, Clone)]
pub struct Tolerant {
    config: Arc<TolerantConfig>,
    max_datagram: u64,
    window: u64,
    in_startup: bool,
    /// The start-up phase's round and estimators.
    startup: Startup,
    /// The largest delivery rate measured in start-up, bytes per second:
    /// the larger of its settled rate and this round's pair rate.
    max_rate: Option<u64>,
    /// Whether a known rate was given ([`Controller::on_rate_hint`]), or
    /// taken from a saved path.
    hinted: bool,
    /// Careful resume from a saved path ([`Controller::on_saved_path`]).
    resume: Resume,
    /// Whether the window is a known rate's first flight, set before any
    /// round trip was measured, which the first sample replaces.
    window_before_rtt: bool,
    /// Bytes acknowledged towards the next additive increase.
    acked_towards_increase: u64,
    /// Losses of packets sent at or before this are not answered.
    loss_epoch: Option<Instant>,
    /// The smallest RTT sample of packets sent after `loss_epoch`, over the
    /// last round trip or two: the queue that stands now.
    standing: StandingQueue,
    /// ECN marks on packets sent at or before this are not answered.
    ecn_epoch: Option<Instant>,
    /// The queue-target response: drains that did not drain, and whether
    /// another flow holds the queue.
    drains: DrainWatch,
    /// The rate of delivered bytes over the last rounds.
    delivered: DeliveryRate,
    /// The probe for room the delay does not show.
    room: RoomProbe,
    /// An RTT sample was taken that the standing queue has not seen: every
    /// packet an acknowledgement names is passed to [`Controller::on_ack`],
    /// but they share its one sample, and the queue is judged on enough
    /// samples ([`queue::MIN_QUEUE_SAMPLES`]), not on enough packets.
    sample_unseen: bool,
    /// Bytes in flight after the last packet sent.
    in_flight: u64,
}

impl Tolerant {
    /// A controller in start-up with the configured initial window.
    pub fn new(config: Arc<TolerantConfig>, now: Instant, max_datagram: u16) -> Self {
        let _ = now;
        let max_datagram = u64::from(max_datagram).max(1);
        let window = config.initial_window_packets.saturating_mul(max_datagram);
        Self {
            config,
            max_datagram,
            window,
            in_startup: true,
            startup: Startup::new(),
            max_rate: None,
            hinted: false,
            resume: Resume::Off,
            window_before_rtt: false,
            acked_towards_increase: 0,
            loss_epoch: None,
            standing: StandingQueue::default(),
            ecn_epoch: None,
            drains: DrainWatch::default(),
            delivered: DeliveryRate::default(),
            room: RoomProbe::default(),
            sample_unseen: false,
            in_flight: 0,
        }
    }

    /// Whether the controller is still in start-up.
    pub fn in_startup(&self) -> bool {
        self.in_startup
    }

    /// The largest delivery rate measured in start-up, in bytes per second.
    pub fn max_delivery_rate(&self) -> Option<u64> {
        self.max_rate
    }

    fn min_window(&self) -> u64 {
        min_window(self.max_datagram)
    }

    fn initial_window_bytes(&self) -> u64 {
        self.config
            .initial_window_packets
            .saturating_mul(self.max_datagram)
    }

    /// Multiplies the window by `factor`, down to `floor` (never up).
    fn scale(&mut self, factor: f64, floor: u64) {
        // `as` saturates, and the product is no larger than the window.
        let scaled = (self.window as f64 * factor) as u64;
        self.window = scaled.max(floor).min(self.window).max(self.min_window());
        self.acked_towards_increase = 0;
    }

    /// What the flow's own rate (window over smoothed RTT) sends in `span`:
    /// the window a cut leaves at least. Where the minimum RTT is a few
    /// tens of microseconds (loopback, a LAN at gigabits), the two hosts'
    /// batching, not a queue, sets most of each RTT sample, and
    /// `RTTmin / RTT` would cut the window below one send batch: both ends
    /// then take turns instead of working at once
    /// (`docs/design/congestion-response.md`). On a path whose minimum RTT
    /// is above `span`, a cut by `RTTmin / RTT` never reaches it.
    fn rate_floor(&self, span: std::time::Duration, rtt: &RttEstimator) -> u64 {
        let srtt = rtt.smoothed().as_secs_f64();
        if srtt <= 0.0 {
            return self.min_window();
        }
        // `as` saturates.
        let floor = (self.window as f64 * span.as_secs_f64() / srtt) as u64;
        floor.max(self.min_window())
    }

    /// The floor of a cut for a loss or a mark: the queue margin the queue
    /// target leaves to host scheduling ([`RttEstimator::queue_margin`]).
    fn signal_floor(&self, rtt: &RttEstimator) -> u64 {
        self.rate_floor(rtt.queue_margin(self.config.delay_exit_extra), rtt)
    }

    /// The floor of a cut for delay alone: [`HOST_SPAN`] at least, since a
    /// delay below a host's grain does not tell a queue from batching.
    fn delay_floor(&self, rtt: &RttEstimator) -> u64 {
        let margin = rtt.queue_margin(self.config.delay_exit_extra);
        self.rate_floor(margin.max(HOST_SPAN), rtt)
    }

    /// Takes a rate known before any was measured (a hint, a saved path's
    /// jump): start-up sends at it, a probe burst per round, from the first
    /// packet.
    fn take_known_rate(&mut self, bytes_per_second: u64) {
        self.max_rate = Some(bytes_per_second);
        self.startup.take_rate_hint(bytes_per_second);
        self.startup.measured = true;
        self.hinted = true;
    }

    /// The bandwidth-delay product from the measured rate, if any.
    fn bdp(&self, rtt: &RttEstimator) -> Option<u64> {
        let rate = self.max_rate?;
        let bytes = u128::from(rate) * rtt.min().as_nanos() / 1_000_000_000;
        Some(u64::try_from(bytes).unwrap_or(u64::MAX))
    }

    /// Starts a new loss round at `now`; RTT samples of packets sent before
    /// it no longer describe the queue.
    fn set_loss_epoch(&mut self, now: Instant, rtt: &RttEstimator) {
        self.loss_epoch = Some(now);
        self.standing = StandingQueue::default();
        self.room.cancel(now, rtt.smoothed());
    }

    /// An acknowledgement after start-up: the queue target, then additive
    /// increase (one datagram per window acknowledged), under the delivery
    /// cap if one is set.
    fn on_avoidance_ack(
        &mut self,
        now: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        if self.config.delivery_cap.is_some() {
            self.delivered
                .on_ack(now, bytes, app_limited, rtt.smoothed());
        }
        if app_limited {
            return;
        }
        if self.drain_standing_queue(now, rtt) {
            return;
        }
        self.probe_for_room(now, bytes, rtt);
        self.acked_towards_increase = self.acked_towards_increase.saturating_add(bytes);
        let increments = self.acked_towards_increase / self.window;
        self.acked_towards_increase %= self.window;
        self.window = self
            .window
            .saturating_add(increments.saturating_mul(self.max_datagram));
        if let Some(cap) = self.delivery_cap(rtt) {
            self.window = self.window.min(cap);
        }
    }
}

impl Controller for Tolerant {
    fn on_sent(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        let _ = (now, bytes);
        self.in_flight = in_flight;
        self.startup.burst_left = self.startup.burst_left.saturating_sub(1);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        // The jitter's estimate is per packet acknowledged (see
        // `RoomProbe::on_packet_acked`).
        self.room.on_packet_acked(rtt.latest());
        if std::mem::take(&mut self.sample_unseen) {
            // The sample times the newest packet acknowledged.
            let timed = now.checked_sub(rtt.latest()).unwrap_or(sent);
            if self.loss_epoch.is_none_or(|epoch| timed > epoch) {
                self.standing.on_sample(now, rtt.latest(), rtt.smoothed());
            }
        }
        if self.in_startup {
            self.on_startup_ack(now, sent, bytes, app_limited, rtt);
        } else {
            self.on_avoidance_ack(now, bytes, app_limited, rtt);
        }
    }

    fn deadline(&self) -> Option<Instant> {
        if !self.in_startup {
            return None;
        }
        self.train_deadline()
    }

    fn on_deadline(&mut self, now: Instant, rtt: &RttEstimator) {
        if self.in_startup {
            self.end_train(now, rtt);
        }
    }

    fn on_loss(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        lost_bytes: u64,
        above_baseline: bool,
        rtt: &RttEstimator,
    ) {
        if !self.in_startup && self.config.delivery_cap.is_some() {
            self.delivered.on_loss(lost_bytes);
        }
        if self.in_startup {
            self.on_startup_loss(now, largest_sent, lost_bytes);
        }
        if self.loss_epoch.is_some_and(|epoch| largest_sent <= epoch) {
            return;
        }
        if self.in_startup {
            // Random loss says nothing about the queue; the delay test does.
            if above_baseline {
                self.exit_startup(now, rtt);
            }
            return;
        }
        // The Coded TCP rule: a loss scales the window by RTTmin / RTT, with
        // RTT the queue that stands now, so random loss
        // on an empty queue costs nothing and a standing queue drains. Loss
        // above the random baseline (the connection's judgement) cuts at
        // least by `congestion_beta`.
        let mut factor = self.rtt_ratio(rtt);
        if above_baseline {
            factor = factor.min(self.config.congestion_beta);
        } else if factor > STANDING_QUEUE {
            return;
        }
        if self.standing.is_empty() && factor >= 1.0 {
            // Nothing is known yet of the queue since the last reduction:
            // keep the round open for a loss that can tell.
            return;
        }
        let before = self.window;
        self.scale(factor, self.signal_floor(rtt));
        // Only where the cut trims a queue within the queue target: a
        // deeper one answers a queue that grew past it, most likely losses
        // of congestion the estimate has taken for random ones (four flows
        // on a queue of nine packets), which room kept would only feed.
        let within_target = self
            .config
            .queue_target
            .is_some_and(|target| factor >= 1.0 / (1.0 + target));
        if !above_baseline && within_target {
            // Never more than the rule itself calls no standing queue: on
            // a window of a few datagrams, two more would be a queue.
            let no_queue = (self.window as f64 * (1.0 / STANDING_QUEUE - 1.0)) as u64;
            let headroom = ACK_CLOCK_HEADROOM
                .saturating_mul(self.max_datagram)
                .min(no_queue);
            self.window = self.window.saturating_add(headroom).min(before);
        }
        self.set_loss_epoch(now, rtt);
        if factor <= 0.9 {
            self.ecn_epoch = Some(now);
        }
    }

    fn on_ecn_ce(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        newly_ce: u64,
        rtt: &RttEstimator,
    ) {
        if newly_ce == 0 || self.ecn_epoch.is_some_and(|epoch| largest_sent <= epoch) {
            return;
        }
        if self.in_startup {
            self.exit_startup(now, rtt);
            if self.max_rate.is_none() {
                self.scale(self.config.ecn_beta, self.signal_floor(rtt));
            }
        } else {
            self.scale(self.config.ecn_beta, self.signal_floor(rtt));
        }
        self.ecn_epoch = Some(now);
        self.set_loss_epoch(now, rtt);
    }

    fn on_rtt_sample(&mut self, now: Instant, rtt: &RttEstimator) {
        let _ = now;
        self.sample_unseen = true;
        self.resume_on_rtt_sample(rtt);
        // With a known rate, the first sample (the handshake's) is enough
        // for the bandwidth-delay product: the first flight fills the path.
        if self.in_startup && self.hinted {
            if let Some(bdp) = self.bdp(rtt) {
                self.window = if std::mem::take(&mut self.window_before_rtt) {
                    bdp.max(self.initial_window_bytes())
                } else {
                    self.window.max(bdp)
                };
            }
        }
        self.window_before_rtt = false;
    }

    fn on_rate_hint(&mut self, now: Instant, bytes_per_second: u64) {
        let _ = now;
        if bytes_per_second == 0 {
            return;
        }
        self.take_known_rate(bytes_per_second);
        // Before a round trip is measured the product is not known: the
        // pacer holds the first flight to the rate, and the window lets it
        // run for up to `FIRST_FLIGHT_SPAN` until the first sample sets it.
        let span = u128::from(bytes_per_second) * FIRST_FLIGHT_SPAN.as_nanos() / 1_000_000_000;
        self.window = self.window.max(u64::try_from(span).unwrap_or(u64::MAX));
        self.window_before_rtt = true;
    }

    fn on_saved_path(&mut self, now: Instant, saved: SavedPath) {
        let _ = now;
        self.take_saved_path(saved);
    }

    fn path_to_save(&self, rtt: &RttEstimator) -> Option<SavedPath> {
        if self.resume_unvalidated() || !rtt.has_sample() {
            return None;
        }
        Some(SavedPath {
            rate: self.max_rate.filter(|&rate| rate > 0)?,
            min_rtt: rtt.min(),
        })
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let srtt = rtt.smoothed().as_secs_f64().max(1e-6);
        let by_window = self.window as f64 / srtt;
        if self.in_startup {
            // Start-up measures the bottleneck from the spacing of ACKs,
            // which shows it only while packets leave faster than it
            // drains: pace at the gain over the fastest rate measured, and
            // not at all before there is one.
            return match self.max_rate {
                Some(_) if self.startup.burst_left > 0 && self.startup.measured => Some(u64::MAX),
                Some(max) if self.config.probe_burst > 0 && self.startup.measured => {
                    Some(max.max(1))
                }
                Some(max) => {
                    let rate = self.config.startup_pacing_gain * by_window.max(max as f64);
                    Some((rate as u64).max(1))
                }
                None => Some(self.startup.first_flight_rate.unwrap_or(u64::MAX)),
            };
        }
        let rate = self.config.pacing_gain * by_window;
        // `as` saturates; the floor keeps a zero rate from stalling the pacer.
        Some((rate as u64).max(1))
    }

    fn reads_handshake_spacing(&self) -> bool {
        true
    }

    fn on_handshake_spacing(&mut self, now: Instant, rate: u64, rtt: &RttEstimator) {
        let _ = now;
        if !self.in_startup || self.max_rate.is_some() || !rtt.has_sample() || rate == 0 {
            return;
        }
        let bdp = u128::from(rate) * rtt.min().as_nanos() / 1_000_000_000;
        if bdp < u128::from(self.initial_window()) {
            self.startup.first_flight_rate = Some(rate);
        }
    }

    fn on_handshake_spacing_withdrawn(&mut self, now: Instant) {
        let _ = now;
        self.startup.first_flight_rate = None;
    }

    fn pacing_burst(&self, rtt: &RttEstimator) -> Option<u64> {
        // Only where the path holds fewer than two full bursts: elsewhere
        // the pacer's own bucket bounds it.
        let (datagrams, _) = self.own_burst(rtt)?;
        (datagrams < self.config.probe_burst).then(|| datagrams.saturating_mul(self.max_datagram))
    }

    fn initial_window(&self) -> u64 {
        self.initial_window_bytes()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "ltx"
    }
}
