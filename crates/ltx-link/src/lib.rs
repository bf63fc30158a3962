//! The impairment model of one direction of a network path, shared by the
//! ltx simulator (virtual time) and emulator (real time), so that simulated
//! and emulated results mean the same thing.
//!
//! A [`Link`] applies, in order: outages, a drop-tail FIFO bottleneck with a
//! rate and an optional AQM ([`Aqm`]: CoDel or RED on queueing delay,
//! marking ECN-capable packets CE and dropping the rest), random loss on the
//! medium ([`LossModel`]: Bernoulli, Gilbert–Elliott, the netem four-state
//! chain; a lost packet has used its transmission time, as on a radio or
//! satellite link), corruption, propagation delay with optional jitter and
//! reordering, and duplication. It is pure: time comes in as `now`, randomness from a seed.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use ltx_link::{Datagram, Link, LinkConfig, LossModel, QueueLimit, Rate};
//!
//! let epoch = Instant::now();
//! let config = LinkConfig {
//!     delay: Duration::from_millis(300),
//!     rate: Some(Rate::mbit(50.0)),
//!     queue: QueueLimit::Bytes(1_875_000),
//!     loss: LossModel::bursty(0.10, 5.0),
//!     ..LinkConfig::default()
//! };
//! let mut link = Link::new(config, epoch, 1)?;
//! link.enqueue(epoch, Datagram { payload: vec![0; 1200], ..Datagram::default() });
//! if let Some(at) = link.next_event() {
//!     // 1200 bytes at 50 Mbit/s take 192 µs, then 300 ms of propagation.
//!     assert_eq!(at - epoch, Duration::from_micros(300_192));
//!     assert!(link.dequeue_ready(at).is_some());
//! }
//! # Ok::<(), ltx_link::LinkConfigError>(())
//! ```

mod aqm;
mod histogram;
mod link;
mod loss;
mod packet;

pub use aqm::Aqm;
pub use histogram::DelayHistogram;
pub use link::{
    Admission, DropCause, Jitter, Link, LinkConfig, LinkConfigError, LinkStats, Outage, QueueLimit,
    Rate,
};
pub use loss::LossModel;
pub use packet::{Datagram, Ecn, LinkPacket};
