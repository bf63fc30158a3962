//! The sender's record of its packets: numbers, acknowledgements and
//! losses, the round trip, the loss estimate and the congestion
//! controller and pacer they feed.

use std::time::Instant;

use super::loss_round::LossRound;
use super::sent::SentPackets;
use crate::config::TransportConfig;
use crate::congestion::{Controller, Pacer};
use crate::recovery::LossEstimator;
use crate::rtt::RttEstimator;

/// Loss recovery and congestion control of one connection.
pub(super) struct Recovery {
    /// The number the next packet takes.
    pub(super) next_number: u64,
    /// The packets in flight.
    pub(super) sent: SentPackets,
    /// The largest packet number the peer has acknowledged.
    pub(super) largest_acked: Option<u64>,
    /// Probe time-outs in a row without an acknowledgement.
    pub(super) pto_count: u32,
    /// Whether the peer has acknowledged a packet that carried a symbol:
    /// until then the probe time-out is shorter (see `Connection::pto`).
    pub(super) symbols_acked: bool,
    /// Losses and RTT samples per round trip, for the baseline test.
    pub(super) loss_round: LossRound,
    pub(super) rtt: RttEstimator,
    pub(super) loss: LossEstimator,
    pub(super) controller: Box<dyn Controller>,
    pub(super) pacer: Pacer,
    /// When the last packet in flight left.
    pub(super) last_sent: Instant,
    /// ECN-CE marks the peer has reported so far.
    pub(super) peer_ce: u64,
}

impl Recovery {
    /// Nothing sent yet, with `controller` built for the connection.
    pub(super) fn new(
        config: &TransportConfig,
        controller: Box<dyn Controller>,
        now: Instant,
    ) -> Recovery {
        Recovery {
            next_number: 0,
            sent: SentPackets::default(),
            largest_acked: None,
            pto_count: 0,
            symbols_acked: false,
            loss_round: LossRound::default(),
            rtt: RttEstimator::new(config.initial_rtt),
            loss: LossEstimator::new(),
            controller,
            pacer: Pacer::new(config.max_datagram),
            last_sent: now,
            peer_ce: 0,
        }
    }
}
