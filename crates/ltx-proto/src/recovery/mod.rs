//! Loss estimation and redundancy: how much repair to send.
//!
//! [`LossEstimator`] turns the fate of every sent packet into a loss rate and
//! a mean burst length.

pub mod loss_estimator;

pub use loss_estimator::{LossEstimate, LossEstimator};
