//! A deterministic discrete-event network simulator: endpoints exchange
//! datagrams over [`ltx_link`] links in virtual time, driven by one seeded
//! random source.

pub mod metrics;
pub mod units;

pub use ltx_link;
pub use ltx_link::QueueLimit;
