//! The settings of a connection and of a server's admission, with their
//! defaults and their validation, in one place.
//!
//! - [`TransportConfig`]: sizes, limits, timers, and the congestion
//!   controller and redundancy scheme a connection runs;
//! - [`RedundancyConfig`]: the numbers every redundancy scheme spends;
//! - [`AcceptConfig`]: a server's retry policy and admission limits.

mod accept;
mod repair;
mod transport;

pub use accept::{AcceptConfig, RetryPolicy};
pub use repair::RedundancyConfig;
pub(crate) use transport::DECODER_HISTORY;
pub use transport::{ConfigError, RepairSettings, TransportConfig};
