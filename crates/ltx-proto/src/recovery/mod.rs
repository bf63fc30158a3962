//! Loss estimation and redundancy: how much repair to send, and over what.
//!
//! [`LossEstimator`] turns the fate of every sent packet into a loss rate and
//! a mean burst length; a [`RedundancyScheme`] turns that estimate into
//! repair symbols to send (proactive, reactive and for the tail of a
//! transfer) and the window and code of each. [`RedundancyPolicy`] is ltx's
//! own sliding-window scheme; [`BlockScheme`], [`DfecScheme`] and
//! [`WholeBlockScheme`] are the seeds'. None builds a symbol: the connection
//! does, with the coder.

pub mod blocks;
pub mod dfec;
pub mod loss_estimator;
pub mod redundancy;
pub mod scheme;
pub mod whole_block;

pub use blocks::{BlockConfig, BlockScheme, Provisioning};
pub use dfec::{DfecConfig, DfecScheme};
pub use loss_estimator::{LossEstimate, LossEstimator};
pub use redundancy::{RedundancyConfig, RedundancyPolicy};
pub use scheme::{
    Feedback, Flight, Horizon, RedundancyScheme, RepairPlan, RepairRange, RepairReason,
    SchemeConfig, REACTIVE_SPAN,
};
pub use whole_block::{WholeBlockConfig, WholeBlockScheme};
