//! Loss estimation and redundancy: how much repair to send, and over what.
//!
//! [`LossEstimator`] turns the fate of every sent packet into a loss rate and
//! a mean burst length; a [`RedundancyScheme`] turns that estimate into
//! repair symbols to send (proactive, reactive and for the tail of a
//! transfer) and the window and code of each, built by a [`SchemeFactory`].
//! [`RedundancyPolicy`] is ltx's own sliding-window scheme; the seeds'
//! schemes live in the `ltx-presets` crate. None builds a symbol: the
//! connection does, with the coder.

pub mod loss_estimator;
pub mod redundancy;
pub mod scheme;

pub use loss_estimator::{LossEstimate, LossEstimator};
pub use redundancy::{RedundancyConfig, RedundancyPolicy};
pub use scheme::{
    gap_window, tail_window, window_between, Feedback, Flight, Horizon, RedundancyScheme,
    RepairPlan, RepairRange, RepairReason, SchemeFactory, SlidingWindowFactory, REACTIVE_SPAN,
};
