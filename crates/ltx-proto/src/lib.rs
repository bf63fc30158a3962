//! The sans-IO ltx protocol: a reliable, ordered transport whose losses are
//! repaired by coding rather than by retransmission.
//!
//! Nothing here reads a clock, opens a socket or draws its own randomness:
//! time comes in as `now`, datagrams go in and out as byte buffers, and
//! randomness comes from a seed. The same code runs in the simulator, over
//! UDP and in every test.
//!
//! - [`Connection`]: one association, with its streams; the type's docs say
//!   how to drive it.
//! - [`wire`]: the packet and frame format, parsed through checked views.
//! - [`protection`]: the layer that seals and opens packets.
//! - [`rtt`]: round-trip time estimation.
//! - [`recovery`]: the loss estimator and the redundancy policy.
//! - [`congestion`]: the [`congestion::Controller`] trait and its controllers.
//! - [`accept`]: a server's stateless admission of new connections
//!   (retries with address-bound cookies, half-open and per-address limits).
//!
//! How reliability works: stream data (and flow-control frames) travel in
//! *source symbols*, each sent exactly once. The sender also sends *repair
//! symbols* — random linear combinations (RFC 8681) of a window of source
//! symbols — ahead of need, as many as the loss estimate calls for, and
//! more when the receiver's acknowledgements report symbols it still lacks.
//! Any repair symbol stands in for any one missing symbol of its window, so
//! nothing is ever retransmitted, and the congestion controller sees
//! congestion signals rather than every loss.

pub mod accept;
pub mod config;
pub mod congestion;
mod connection;
pub mod event;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod protection;
pub mod recovery;
pub mod rtt;
pub mod wire;

pub use config::{
    AcceptConfig, ConfigError, RepairConfig, RepairSettings, RetryPolicy, Setting, TransportConfig,
};
pub use connection::{
    symbol_size, Connection, ConnectionStats, EcnCodepoint, ReadOutcome, StreamError, Transmit,
    AMPLIFICATION_FACTOR, EARLY_MAX_DATA, EARLY_MAX_STREAMS, EARLY_MAX_SYMBOLS,
};
pub use event::{CloseReason, Event, TraceEvent, Unreachable};
pub use wire::{Side, StreamId};
