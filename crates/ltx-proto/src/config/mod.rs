//! The settings of a connection and of a server's admission, with their
//! defaults and their checks, in one place.
//!
//! - [`TransportConfig`]: sizes, limits, timers, and the congestion
//!   controller and redundancy scheme a connection runs;
//! - [`RepairConfig`]: the numbers every redundancy scheme spends;
//! - [`RepairSettings`]: a user's changes to a preset's repair numbers;
//! - [`AcceptConfig`]: a server's retry policy and admission limits.
//!
//! A preset (a controller and a scheme, with their numbers) is applied
//! first, then the user's settings; [`TransportConfig::validate`] refuses a
//! changed setting that the preset does not read.

mod accept;
mod error;
mod repair;
mod transport;

pub use accept::{AcceptConfig, RetryPolicy};
pub use error::{ConfigError, Setting};
pub use repair::{RepairConfig, MAX_REPAIR_SPAN};
pub(crate) use transport::DECODER_HISTORY;
pub use transport::{RepairSettings, TransportConfig, MIN_DATAGRAM};
