//! The seeds' congestion controllers and the TCP baselines, each a
//! [`ControllerFactory`](ltx_proto::congestion::ControllerFactory) that a
//! [`TransportConfig`](ltx_proto::TransportConfig) can hold.
//!
//! - [`LtTcp`]: seed 000's window, which answers ECN CE marks only.
//! - [`Ccp`]: seed 001's delay-based control, holding the queue at a small
//!   operating point.
//! - [`CodedTcp`]: seed 003's rule alone, `cwnd ← cwnd × RTTmin/sRTT` on
//!   every loss (ltx's own controller adds to it).
//! - [`Fectcp`]: seed 004's window, driven by time-outs that hide isolated
//!   losses.
//! - [`NewReno`] and [`Cubic`]: the loss-based baselines.
//! - [`Bbr`]: a model-based controller (bandwidth and propagation time).

pub mod bbr;
pub mod ccp;
pub mod coded_tcp;
pub mod cubic;
pub mod fectcp;
pub mod lt_tcp;
pub mod newreno;
#[cfg(test)]
mod test_path;

pub use bbr::{Bbr, BbrConfig};
pub use ccp::{Ccp, CcpConfig};
pub use coded_tcp::{CodedTcp, CodedTcpConfig};
pub use cubic::{Cubic, CubicConfig};
pub use fectcp::{Fectcp, FectcpConfig};
pub use lt_tcp::{LtTcp, LtTcpConfig};
pub use newreno::{NewReno, NewRenoConfig};
