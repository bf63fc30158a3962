//! The sans-IO ltx protocol: a reliable, ordered transport whose losses are
//! repaired by coding rather than by retransmission.
//!
//! Nothing here reads a clock, opens a socket or draws its own randomness:
//! time comes in as `now`, datagrams go in and out as byte buffers, and
//! randomness comes from a seed. The same code runs in the simulator, over
//! UDP and in every test.
//!
//! - [`wire`]: the packet and frame format, parsed through checked views.
//! - [`rtt`]: round-trip time estimation.
//! - [`recovery`]: the loss estimator and the redundancy policy.
//! - [`congestion`]: the [`congestion::Controller`] trait and its controllers.

pub mod congestion;
#[doc(hidden)]
pub mod fuzzing;
pub mod recovery;
pub mod rtt;
pub mod wire;
