//! Loss estimation and redundancy: how much repair to send, and over what.
//!
//! [`LossEstimator`] turns the fate of every sent packet into a loss rate
//! and a mean burst length. A [`RedundancyScheme`], built per connection by
//! a [`SchemeFactory`], is the policy the connection consults wherever it
//! decides on repair — how much proactive credit a source symbol earns, how
//! many repairs answer the peer's feedback and the tail of a transfer, and
//! which window each repair covers in which code.
//!
//! The connection owns the mechanism (the encoder, the congestion window,
//! the pacer, the wire); a scheme only answers its questions. ltx's own
//! scheme is the sliding window ([`SlidingWindow`], built by
//! [`SlidingWindowFactory`]); the seeds' block, XOR and whole-block schemes
//! live in the `ltx-presets` crate and reach a connection through the same
//! [`SchemeFactory`]. The pure statistics the sliding window sizes repair
//! with are in `statistics.rs`.
//!
//! Every repair is a frame naming its window, key and density byte, so the
//! receiver decodes all of them through one path: a block repair is a
//! repair whose window is the block, an XOR parity a repair whose density
//! byte says its coefficients are all 1.

use std::fmt;
use std::time::Duration;

use ltx_coding::codec::Code;
use ltx_coding::{SymbolId, Window};

use crate::config::{RepairConfig, Setting};

pub mod loss_estimator;
mod sliding_window;
mod statistics;

pub use loss_estimator::{LossEstimate, LossEstimator, DEFAULT_WINDOW};
pub use sliding_window::{SlidingWindow, SlidingWindowFactory};

/// Widest window, in symbols, of a repair sent in answer to feedback by the
/// sliding-window policy: wider windows cost both ends work in proportion,
/// and the oldest gap is what holds delivery back.
pub const REACTIVE_SPAN: u64 = 4_096;

/// Why a repair symbol is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RepairReason {
    /// Ahead of loss, from the credit source symbols earn.
    Proactive,
    /// In answer to the peer's reported deficit.
    Reactive,
    /// For the tail of a transfer, when the sender has no new data; or for
    /// a message sent in the middle of other data, over its symbol alone.
    Tail,
    /// At a probe time-out, when feedback stopped.
    Probe,
}

/// The symbols a repair may cover, as the sender sees them when it builds
/// one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairRange {
    /// The oldest source symbol the sender holds: the peer has decoded every
    /// symbol before it.
    pub oldest: SymbolId,
    /// The next source symbol to be sent; a window ends at or before it.
    pub next: SymbolId,
    /// The end of the symbols the peer has reported seeing.
    pub peer_end: SymbolId,
    /// The widest proactive window the transport allows
    /// ([`RepairConfig::max_repair_span`]).
    pub max_span: u64,
    /// Whether a reactive repair may reach past the gaps the peer reported,
    /// to the newest symbol sent: so it may where the answer was sized for
    /// the losses of the whole flight too
    /// ([`RedundancyScheme::answer_reaches_flight`]).
    pub reach_flight: bool,
}

/// One repair symbol to build: the window it combines and its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairPlan {
    /// The source symbols combined; inside the [`RepairRange`] it was
    /// planned for.
    pub window: Window,
    /// The code its coefficients come from; the density byte on the wire
    /// says which.
    pub code: Code,
}

/// What proactive repair is sized for: the source symbols a sliding-window
/// repair covers, and the round trip feedback takes to make up a shortfall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    /// The newest source symbols a proactive repair covers.
    pub span: u64,
    /// The smoothed round-trip time.
    pub rtt: Duration,
}

/// What the peer's latest acknowledgement says about its decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feedback {
    /// Equations the decoder lacks: unknown source symbols that no held
    /// repair covers.
    pub deficit: u64,
    /// The part of `deficit` that the peer's symbols before its newest
    /// repair window lack (see [`DecoderState::settled`]): what proactive
    /// repairs, which slide forward, will not make up. The rest is the
    /// peer's newest gaps, which the proactive repairs sent after its report
    /// cover.
    ///
    /// [`DecoderState::settled`]: crate::wire::DecoderState::settled
    pub settled: u64,
    /// Repairs over the peer's gaps still in flight (reactive, tail, probe).
    pub repairs_in_flight: u64,
    /// Source symbols sent after the newest one the peer reported (its
    /// decoder's end): the proactive repairs sent with them reach back over
    /// its newest gaps.
    pub sent_since_report: u64,
    /// What proactive repair is sized for now.
    pub horizon: Horizon,
    /// The peer's first unknown source symbol.
    pub decoded_through: SymbolId,
    /// One past the newest source symbol the peer's decoder knows of: its
    /// unknown symbols lie from `decoded_through` up to here.
    pub end: SymbolId,
    /// What is in flight, when every repair in flight covers the peer's
    /// first unknown symbol: then what will arrive can be set against the
    /// deficit; `None` otherwise (and when there is no deficit).
    pub covered: Option<Flight>,
}

/// Symbols in flight, for [`Feedback::covered`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flight {
    /// Source symbols sent before the newest repair in flight, so covered
    /// by it; those sent after it wait for repairs not yet sent.
    pub sources: u64,
    /// Repair symbols of any kind.
    pub repairs: u64,
    /// The smoothed round-trip time: what a shortfall left to the next
    /// answer costs.
    pub rtt: Duration,
    /// Source symbols whose delivery a shortfall of this flight holds up:
    /// those sent since the sender last held none the peer had not
    /// decoded, the transfer so far.
    pub at_stake: u64,
    /// Equations the peer lacked at its last report, beyond this flight:
    /// the gaps that answers to its reports are to make up. The tail
    /// covers their shortfall as well as the flight's; 0 elsewhere.
    pub owed: u64,
    /// Repairs in flight answering the peer's reports, not counted in
    /// `repairs` where `owed` is given.
    pub answers: u64,
    /// Source symbols a proactive repair of the flight covers, where the
    /// tail is sized: a loss that more than a span of symbols has passed
    /// is out of reach of the proactive repairs after it. 0: unlimited.
    pub span: u64,
}

/// A policy that decides on repair for a connection. Every method has the
/// loss estimate it needs passed in; the scheme reads no clock.
///
/// The fate hooks (`on_*_sent`, `on_packet_acked`, `on_packet_lost`) let a
/// scheme follow its own packets, as TCP-dFEC follows its parity; they do
/// nothing by default.
pub trait RedundancyScheme: fmt::Debug + Send {
    /// The scheme's name, for logs.
    fn name(&self) -> &'static str;

    /// Repair symbols per source symbol it sends ahead of loss now, for
    /// statistics and traces.
    fn proactive_ratio(&self, estimate: &LossEstimate, horizon: &Horizon) -> f64;

    /// The proactive credit after source symbol `id` was sent with the
    /// credit at `credit`; one repair is sent per whole unit of credit,
    /// before the next source symbol.
    fn credit_after_source(
        &mut self,
        id: SymbolId,
        credit: f64,
        estimate: &LossEstimate,
        horizon: &Horizon,
    ) -> f64;

    /// How many repairs answer the peer's feedback.
    fn reactive_repairs(&mut self, feedback: &Feedback, estimate: &LossEstimate) -> u64;

    /// Whether the answer to `feedback` is sized for the losses of the
    /// whole flight in flight, not only the gaps the peer reported: then
    /// its repairs may cover the flight ([`RepairRange::reach_flight`]).
    /// By default, never.
    fn answer_reaches_flight(&self, _feedback: &Feedback) -> bool {
        false
    }

    /// How many repairs protect the tail of a transfer: the sender ran out
    /// of data (or may not send more) with `unconfirmed` source symbols
    /// before `next` whose fate it does not know.
    fn tail_repairs(&self, unconfirmed: u64, next: SymbolId, estimate: &LossEstimate) -> u64;

    /// Whether a message sent in the middle of other data (a keystroke, a
    /// reply) gets a repair of its own a few packets later, where the path
    /// loses packets, rather than waiting for feedback if it is lost. By
    /// default, no.
    fn guards_messages(&self) -> bool {
        false
    }

    /// How many repairs the tail needs for the whole `flight` whose fate is
    /// not known yet, when the sender ran out of data: the sender takes the
    /// larger of this and [`tail_repairs`](Self::tail_repairs). A scheme
    /// whose proactive repair leaves spans to feedback counts here what the
    /// flight is expected to lack; by default, nothing.
    fn tail_repairs_for_flight(&self, _flight: &Flight, _estimate: &LossEstimate) -> u64 {
        0
    }

    /// The window and code of the next repair sent for `reason`, or `None`
    /// if it has nothing to cover.
    fn plan_repair(&mut self, reason: RepairReason, range: &RepairRange) -> Option<RepairPlan>;

    /// Whether source symbol `next` may be sent now, given the peer's first
    /// unknown symbol. A scheme that sends one block at a time holds the
    /// next block back until the peer has the current one.
    fn may_send_source(&self, _next: SymbolId, _peer_decoded_through: SymbolId) -> bool {
        true
    }

    /// Packet `number` carried source symbol `id`.
    fn on_source_sent(&mut self, _number: u64, _id: SymbolId) {}

    /// Packet `number` carried the repair `plan`, sent for `reason`.
    fn on_repair_sent(&mut self, _number: u64, _reason: RepairReason, _plan: &RepairPlan) {}

    /// Packet `number` was acknowledged.
    fn on_packet_acked(&mut self, _number: u64) {}

    /// Packet `number` was declared lost.
    fn on_packet_lost(&mut self, _number: u64) {}
}

/// A builder of [`RedundancyScheme`]s, one per connection; also the
/// scheme's own settings (block size, XOR ratio, ...), as a
/// [`ControllerFactory`](crate::congestion::ControllerFactory) is the
/// controller's. The connection names no scheme: it builds whichever its
/// [`TransportConfig`](crate::TransportConfig) holds.
pub trait SchemeFactory: fmt::Debug + Send + Sync {
    /// The scheme for a connection whose peer holds at most `peer_window`
    /// unacknowledged symbols, spending `repair`'s numbers.
    fn build(&self, repair: &RepairConfig, peer_window: u16) -> Box<dyn RedundancyScheme>;

    /// The scheme's name, for logs and errors.
    fn name(&self) -> &'static str;

    /// Whether the scheme's repair depends on `setting` of its
    /// [`RepairConfig`]: a changed setting it does not read is refused
    /// ([`TransportConfig::validate`](crate::TransportConfig::validate)).
    /// By default, none.
    fn reads(&self, setting: Setting) -> bool {
        let _ = setting;
        false
    }
}

/// A window of the symbols `[first, end)`, cut to the `u16` a frame carries
/// by dropping its oldest symbols; `None` if empty.
pub fn window_between(first: u64, end: u64) -> Option<Window> {
    if end <= first {
        return None;
    }
    let len = (end - first).min(u64::from(u16::MAX)) as u16;
    Some(Window::new(SymbolId(end - u64::from(len)), len))
}

/// The sliding-window policy's reactive window: from the peer's first
/// unknown symbol to the newest it reported (or to the newest sent if it
/// reported none past it), at most [`REACTIVE_SPAN`] symbols.
pub fn gap_window(range: &RepairRange) -> Option<Window> {
    let (oldest, next) = (range.oldest.0, range.next.0);
    let reported = range.peer_end.0.clamp(oldest, next);
    let end = if reported > oldest { reported } else { next };
    window_between(oldest, end.min(oldest + REACTIVE_SPAN))
}

/// The sliding-window policy's tail window: from the peer's first unknown
/// symbol to the newest sent, at most [`REACTIVE_SPAN`] symbols. Unlike
/// [`gap_window`] it does not stop at what the peer reported: the tail's
/// repairs are for the symbols sent within the last round trip, which no
/// report names yet.
pub fn tail_window(range: &RepairRange) -> Option<Window> {
    let (oldest, next) = (range.oldest.0, range.next.0);
    window_between(oldest.max(next.saturating_sub(REACTIVE_SPAN)), next)
}
