//! A deterministic discrete-event network simulator: endpoints exchange
//! datagrams over [`ltx_link`] links in virtual time, driven by one seeded
//! random source.
//!
//! The simulator knows nothing of any protocol. An endpoint is anything that
//! implements [`Node`], the sans-IO shape (`handle_*` inputs, `poll_*`
//! outputs, time passed in as `now`). A [`Network`] holds nodes, links and
//! the routes between them, and [`Network::run`] moves datagrams from event
//! to event without ever reading a clock, so the same seed and the same
//! nodes give the same result, bit for bit.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use ltx_sim::{Datagram, LinkConfig, Network, Node, StopReason};
//!
//! /// Sends one datagram at the start; records when one arrives.
//! #[derive(Default)]
//! struct Ping { sent: bool, got: Option<Instant> }
//!
//! impl Node for Ping {
//!     fn handle_datagram(&mut self, now: Instant, _: Datagram) { self.got = Some(now); }
//!     fn poll_transmit(&mut self, _: Instant) -> Option<Datagram> {
//!         (!std::mem::replace(&mut self.sent, true)).then(Datagram::default)
//!     }
//!     fn poll_timeout(&mut self) -> Option<Instant> { None }
//!     fn handle_timeout(&mut self, _: Instant) {}
//! }
//!
//! let epoch = Instant::now();
//! let path = LinkConfig { delay: Duration::from_millis(300), ..LinkConfig::default() };
//! let (mut net, a, b) =
//!     Network::single_path(epoch, 1, path.clone(), path, Ping::default(), Ping::default())?;
//! let outcome = net.run(epoch + Duration::from_secs(10), |_| false);
//! assert_eq!(outcome.reason, StopReason::Idle);
//! assert_eq!(net.node(b).got, Some(epoch + Duration::from_millis(300)));
//! assert_eq!(net.node(a).got, Some(epoch + Duration::from_millis(300)));
//! # Ok::<(), ltx_sim::LinkConfigError>(())
//! ```

pub mod compare;
pub mod metrics;
mod network;
mod node;
mod packet;
pub mod scenario;
pub mod soak;
mod topology;
pub mod transfer;
pub mod units;

pub use ltx_link;
pub use ltx_link::{
    Aqm, Datagram, DelayHistogram, DropCause, Ecn, Jitter, LinkConfig, LinkConfigError, LinkStats,
    LossModel, Outage, QueueLimit, Rate,
};
pub use network::{ConnectError, LinkId, Network, NodeId, NodeStats, RunOutcome, StopReason};
pub use node::Node;
pub use topology::Access;
