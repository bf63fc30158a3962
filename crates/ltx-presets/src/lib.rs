//! The research presets of ltx: the five seed papers' congestion
//! controllers and redundancy schemes, and the TCP baselines, reproduced so
//! that ltx can be measured beside them in the same run.
//!
//! Each plugs into a connection through the factories of `ltx-proto`
//! ([`ControllerFactory`](ltx_proto::congestion::ControllerFactory),
//! [`SchemeFactory`](ltx_proto::recovery::SchemeFactory)); the connection
//! never names a preset. [`Profile`] gives every preset a name for the
//! command line (`--profile`).
//!
//! - [`congestion`]: LT-TCP, CCP, Coded TCP's rule alone, FECTCP, NewReno,
//!   CUBIC and BBR.
//! - [`recovery`]: fixed blocks (LT-TCP, Coded TCP), XOR parity steered
//!   towards a residual (TCP-dFEC) and the whole block (FECTCP).
//! - [`profile`]: the named pairs of controller and scheme.

pub mod congestion;
pub mod profile;
pub mod recovery;

pub use profile::{Profile, UnknownProfile};
