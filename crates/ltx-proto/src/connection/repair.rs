//! When to send repair, and which: the redundancy scheme and what it has
//! asked for.

use crate::recovery::RedundancyScheme;

/// The repair the scheme has asked for and the sender has yet to send.
pub(super) struct RepairScheduler {
    pub(super) scheme: Box<dyn RedundancyScheme>,
    /// Proactive credit: one repair per whole unit, earned by source
    /// symbols.
    pub(super) credit: f64,
    /// Repairs that answer the peer's reported deficit.
    pub(super) reactive_owed: u64,
    /// Repairs that protect the tail of the data sent.
    pub(super) tail_owed: u64,
    /// Whether data was sent since the tail was last armed.
    pub(super) tail_armed: bool,
    /// Probes owed after a probe time-out (repairs, or pings with nothing
    /// to repair).
    pub(super) probe_owed: u32,
}

impl RepairScheduler {
    /// Nothing owed yet, spending what `scheme` decides.
    pub(super) fn new(scheme: Box<dyn RedundancyScheme>) -> RepairScheduler {
        RepairScheduler {
            scheme,
            credit: 0.0,
            reactive_owed: 0,
            tail_owed: 0,
            tail_armed: false,
            probe_owed: 0,
        }
    }
}
