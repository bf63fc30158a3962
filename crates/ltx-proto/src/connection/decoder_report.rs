//! What the peer's acknowledgements report of its decoder, and the
//! connection's estimates as a trace event.

use super::streams::Violation;
use super::Connection;
use crate::event::{Event, Metrics, TraceEvent};
use crate::recovery::Feedback;
use crate::wire::AckFrame;

impl Connection {
    /// The newest acknowledgement reported the peer's decoder: the sender
    /// frees what the peer has decoded, and the scheme answers its
    /// deficit.
    pub(super) fn on_decoder_report(&mut self, ack: &AckFrame) -> Result<(), Violation> {
        let state = ack.decoder;
        self.sender.on_decoder_report(&state)?;
        let estimate = self.recovery.loss.estimate();
        // The decoder lacks `missing − rank` equations: repairs it holds
        // but could not yet solve with count already.
        let deficit = state.missing.saturating_sub(state.rank);
        let next = self
            .sender
            .encoder
            .as_ref()
            .map_or(state.end, |e| e.next_id());
        let feedback = Feedback {
            deficit,
            settled: state.settled,
            repairs_in_flight: self.recovery.sent.repairs_in_flight,
            sent_since_report: next.0.saturating_sub(state.end.0),
            horizon: self.horizon(),
            decoded_through: self.sender.peer.decoded_through,
            end: state.end,
            // Nothing to answer without a deficit, and finding the
            // flight walks the packets in flight.
            covered: (deficit > 0).then(|| self.flight_covering_gaps()).flatten(),
        };
        let link_idle = !self.streams.has_pending();
        self.repair.on_feedback(&feedback, &estimate, link_idle);
        Ok(())
    }

    /// The connection's estimates, as a trace event.
    pub(super) fn trace_metrics(&mut self) {
        let estimate = self.recovery.loss.estimate();
        let metrics = Metrics {
            cwnd: self.recovery.controller.window(),
            bytes_in_flight: self.recovery.sent.bytes_in_flight,
            srtt: self.recovery.rtt.smoothed().as_secs_f64(),
            min_rtt: self.recovery.rtt.min().as_secs_f64(),
            latest_rtt: self.recovery.rtt.latest().as_secs_f64(),
            pacing_rate: self.recovery.pacing_rate(),
            loss_rate: estimate.rate,
            burst: estimate.burst,
            redundancy: self.repair.proactive_ratio(&estimate, &self.horizon()),
            peer_decoded_through: self.sender.peer.decoded_through.0,
            peer_missing: self.sender.peer.missing,
            peer_rank: self.sender.peer.rank,
            next_symbol: self.sender.encoder.as_ref().map_or(0, |e| e.next_id().0),
        };
        self.events
            .push_back(Event::Trace(TraceEvent::Metrics(metrics)));
    }
}
