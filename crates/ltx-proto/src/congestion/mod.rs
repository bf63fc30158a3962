//! Congestion control.
//!
//! A [`Controller`] decides how many bytes may be in flight and how fast to
//! pace them. It reacts to congestion signals only (ECN CE marks, queueing
//! delay, loss *above* the path's random-loss baseline), never to random loss
//! as such: erasures are repaired by coding, and the controller does not know
//! about FEC. Controllers are built by a [`ControllerFactory`], which is also
//! their configuration, so one configuration serves every connection.
//!
//! - [`Tolerant`]: ltx's controller: the Coded TCP rule, `cwnd ← cwnd ×
//!   RTTmin/RTT`, applied to the queue that stands, with an ECN response
//!   and a start-up that measures the bottleneck rate (the `ltx` preset).
//!   The seeds' controllers and the TCP baselines live in `ltx-presets`.
//! - [`Pacer`]: the token bucket that spreads a window over a round trip.

use std::time::Instant;

use crate::rtt::RttEstimator;

pub mod pacer;
mod saved_path;
pub mod tolerant;

pub use pacer::Pacer;
pub use saved_path::SavedPath;
pub use tolerant::{Tolerant, TolerantConfig};

/// A congestion controller: the window and pacing rate of one connection,
/// driven by the connection's events.
///
/// Every callback takes `now` (the controller never reads a clock) and does
/// nothing by default.
pub trait Controller: Send + std::fmt::Debug {
    /// `bytes` were sent; `in_flight` bytes are now unacknowledged, these
    /// included.
    fn on_sent(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        let _ = (now, bytes, in_flight);
    }

    /// A packet of `bytes` was acknowledged. `sent` is when it was sent;
    /// `app_limited` says whether the sender had nothing to send when it was,
    /// so that its acknowledgement says nothing about the path's capacity.
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let _ = (now, sent, bytes, app_limited, rtt);
    }

    /// Packets were declared lost (by any cause). `largest_sent` is when the
    /// newest of them was sent; `above_baseline` says whether the recent loss
    /// is above the path's random-loss baseline (the connection decides from
    /// its loss estimator); controllers that follow the loss-tolerant rule use
    /// it or the RTT.
    fn on_loss(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        lost_bytes: u64,
        above_baseline: bool,
        rtt: &RttEstimator,
    ) {
        let _ = (now, largest_sent, lost_bytes, above_baseline, rtt);
    }

    /// When the controller must be told the time though nothing else
    /// happens, if ever: a measurement that ends on silence, such as the
    /// gap that closes a start-up ACK train.
    fn deadline(&self) -> Option<Instant> {
        None
    }

    /// `now` reached [`deadline`](Controller::deadline).
    fn on_deadline(&mut self, now: Instant, rtt: &RttEstimator) {
        let _ = (now, rtt);
    }

    /// The peer reported `newly_ce` new ECN-CE marks on packets up to one
    /// sent at `largest_sent`.
    fn on_ecn_ce(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        newly_ce: u64,
        rtt: &RttEstimator,
    ) {
        let _ = (now, largest_sent, newly_ce, rtt);
    }

    /// The RTT estimator took a sample (the handshake's included, which
    /// comes before any acknowledgement of data).
    fn on_rtt_sample(&mut self, now: Instant, rtt: &RttEstimator) {
        let _ = (now, rtt);
    }

    /// Whether the controller reads the spacing of the handshake's answers
    /// ([`Controller::on_handshake_spacing`]): a client then holds its
    /// first data until the second answer, a few milliseconds at most.
    fn reads_handshake_spacing(&self) -> bool {
        false
    }

    /// The copies of the client's first Initial, sent at one instant, were
    /// answered `rate` bytes per second apart: the bottleneck's rate, read
    /// before any data left (only if [`Controller::reads_handshake_spacing`]).
    fn on_handshake_spacing(&mut self, now: Instant, rate: u64, rtt: &RttEstimator) {
        let _ = (now, rate, rtt);
    }

    /// The rate given to [`Controller::on_handshake_spacing`] is withdrawn:
    /// the next answer came at a spacing far from it, as a path's jitter
    /// spaces answers and a bottleneck does not.
    fn on_handshake_spacing_withdrawn(&mut self, now: Instant) {
        let _ = now;
    }

    /// A known bottleneck rate, bytes per second, given right after the
    /// controller is built (only if its factory
    /// [`reads_rate_hint`](ControllerFactory::reads_rate_hint)).
    fn on_rate_hint(&mut self, now: Instant, bytes_per_second: u64) {
        let _ = (now, bytes_per_second);
    }

    /// The path an earlier connection to the same peer measured, given
    /// right after the controller is built (only if its factory
    /// [`reads_rate_hint`](ControllerFactory::reads_rate_hint)): start-up
    /// may resume from it once the handshake's round trip matches.
    fn on_saved_path(&mut self, now: Instant, saved: SavedPath) {
        let _ = (now, saved);
    }

    /// What this connection has measured of its path, to give the next
    /// connection to the same peer ([`Controller::on_saved_path`]); `None`
    /// until a rate is measured.
    fn path_to_save(&self, rtt: &RttEstimator) -> Option<SavedPath> {
        let _ = rtt;
        None
    }

    /// The congestion window in bytes.
    fn window(&self) -> u64;

    /// The pacing rate in bytes per second (None: pace at window / smoothed
    /// RTT).
    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<u64> {
        let _ = rtt;
        None
    }

    /// The most bytes the pacer lets leave at once, where the controller
    /// bounds its bursts more tightly than the pacer's bucket does (None:
    /// the pacer's own bound, at least 10 datagrams). A controller that
    /// sends a burst of its own size and then paces keeps the burst to
    /// that size: the tokens left from the burst would otherwise follow it.
    fn pacing_burst(&self, rtt: &RttEstimator) -> Option<u64> {
        let _ = rtt;
        None
    }

    /// The window a new connection starts with, in bytes.
    fn initial_window(&self) -> u64;

    /// A copy of this controller, state included.
    fn clone_box(&self) -> Box<dyn Controller>;

    /// The controller's name, for logs and results.
    fn name(&self) -> &'static str;
}

/// A builder of [`Controller`]s, one per connection; also the controllers'
/// configuration.
pub trait ControllerFactory: Send + Sync + std::fmt::Debug {
    /// A controller for a connection starting at `now` whose datagrams carry
    /// at most `max_datagram` bytes.
    fn build(&self, now: Instant, max_datagram: u16) -> Box<dyn Controller>;

    /// The controller's name, for logs and errors.
    fn name(&self) -> &'static str;

    /// Whether its controllers read a known bottleneck rate
    /// ([`Controller::on_rate_hint`]); a rate hint given to one that does
    /// not is refused. By default, no.
    fn reads_rate_hint(&self) -> bool {
        false
    }
}

/// The smallest window any controller goes down to: two datagrams, so that
/// an ACK-eliciting pair can always be in flight.
pub fn min_window(max_datagram: u64) -> u64 {
    max_datagram.saturating_mul(2)
}
