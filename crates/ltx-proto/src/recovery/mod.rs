//! Loss estimation and redundancy: how much repair to send.
//!
//! [`LossEstimator`] turns the fate of every sent packet into a loss rate and
//! a mean burst length; [`RedundancyPolicy`] turns that estimate into numbers
//! of repair symbols (proactive, reactive and for the tail of a transfer).
//! Neither builds a symbol: the connection does, with the coder.

pub mod loss_estimator;
pub mod redundancy;

pub use loss_estimator::{LossEstimate, LossEstimator};
pub use redundancy::{RedundancyConfig, RedundancyPolicy};
