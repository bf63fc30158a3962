//! How a connection is sized and which policies it runs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::RedundancyConfig;
use crate::congestion::{ControllerFactory, TolerantConfig};
use crate::recovery::{SchemeFactory, SlidingWindowFactory};

/// Symbols of history the receiver keeps below its first unknown symbol, so
/// that a repair symbol whose window starts before it can still be used:
/// the sender learns of the receiver's progress a round trip late, and in a
/// round trip the receiver may decode a whole window's worth.
pub(crate) const DECODER_HISTORY: u16 = 8192;

/// The settings of one connection: sizes, limits, timers and the policies
/// (congestion controller, redundancy) it runs.
///
/// Memory per connection is bounded by these numbers, whatever the peer
/// sends (a peer that goes past one is closed with a protocol violation):
/// - the sender holds at most `max_window` unacknowledged symbols of
///   `symbol_size` bytes (its encoder ring) plus `send_buffer` bytes per
///   stream;
/// - the receiver's decoder holds `max_window + 8192` symbols (allocated on
///   the first symbol: at the defaults 24 576 × 1352 bytes, about 33 MB),
///   and its pending repair equations are bounded by the same window (it
///   keeps them reduced, one per unknown symbol at most, and drops the
///   redundant ones); symbols beyond the window it announced are refused;
/// - reassembly holds at most `stream_receive_window` bytes per stream and
///   `receive_window` bytes in all waiting to be read, and at most
///   `max_streams` streams opened by the peer.
///
/// A server bounds the number of connections with
/// [`AcceptConfig`](super::AcceptConfig) and its driver's total; one that takes many clients
/// should lower `max_window` (the decoder dominates) or the count.
#[derive(Clone)]
pub struct TransportConfig {
    /// Largest UDP payload sent, in bytes (≥ 1200). Symbols are sized so a
    /// packet with a symbol, its headers and a 16-byte authentication tag
    /// fits.
    pub max_datagram: u16,
    /// Most source symbols the peer may send beyond the first one this end
    /// has not decoded: the decoding window, 1 to 57 343 (the decoder keeps
    /// 8192 symbols of history on top, within 65 535). Default: 16 384,
    /// about 22 MB of data, a bandwidth-delay product of 300 Mbit/s over a
    /// 600 ms path; it also bounds the pending repair equations.
    pub max_window: u16,
    /// Bytes in all streams the peer may send beyond what the application
    /// has read (connection flow control). Default: 64 MiB, more than the
    /// decoding window carries, so that a slow reader, not the window,
    /// holds the sender back.
    pub receive_window: u64,
    /// Bytes per stream the peer may send beyond what the application has
    /// read (stream flow control): the reassembly buffer of one stream.
    /// Default: 32 MiB, half the connection's, so that one stalled stream
    /// leaves room for the others.
    pub stream_receive_window: u64,
    /// Bytes a stream buffers from the application before they are put in
    /// symbols; `write` accepts no more until they are sent.
    pub send_buffer: u64,
    /// Streams the peer may open; more close the connection. Default: 256,
    /// each costing its buffers only while it holds data.
    pub max_streams: u64,
    /// The connection closes when nothing has been received for this long.
    pub idle_timeout: Duration,
    /// Sends a ping when nothing has been sent for this long (keeps NAT
    /// bindings and the peer's idle timer alive); `None` sends none.
    pub keep_alive: Option<Duration>,
    /// RTT assumed before the first sample.
    pub initial_rtt: Duration,
    /// Longest the receiver waits before acknowledging.
    pub max_ack_delay: Duration,
    /// Ack-eliciting packets received before an acknowledgement is sent at
    /// once.
    pub ack_frequency: u32,
    /// Widest window, in symbols, a proactive repair symbol covers. The
    /// span follows the symbols a round trip carries, from 256 (or this, if
    /// smaller) up to this (default 256): a wider span needs a thinner
    /// margin for the same residual, and costs each repair's encoding and
    /// decoding in proportion. At 1024, a 10 MB transfer over 50 Mbit/s,
    /// 600 ms and 50 % loss took 1.4 s of CPU in the simulator against
    /// 0.7 s at 256, for a margin 1 to 2 % thinner.
    pub max_repair_span: u16,
    /// The numbers the redundancy scheme spends (residuals, the price of
    /// waiting, margins).
    pub redundancy: RedundancyConfig,
    /// The redundancy scheme: ltx's sliding window by default.
    pub scheme: Arc<dyn SchemeFactory>,
    /// The congestion controller.
    pub congestion: Arc<dyn ControllerFactory>,
    /// Whether to emit trace events (packets, symbols, metrics) through
    /// `poll_event`; off by default, since each costs an allocation.
    pub trace: bool,
}

impl Default for TransportConfig {
    fn default() -> TransportConfig {
        TransportConfig {
            max_datagram: 1400,
            max_window: 16_384,
            receive_window: 64 << 20,
            stream_receive_window: 32 << 20,
            send_buffer: 4 << 20,
            max_streams: 256,
            idle_timeout: Duration::from_secs(30),
            keep_alive: None,
            initial_rtt: Duration::from_millis(333),
            max_ack_delay: Duration::from_millis(25),
            ack_frequency: 2,
            max_repair_span: 256,
            redundancy: RedundancyConfig::default(),
            scheme: Arc::new(SlidingWindowFactory),
            congestion: Arc::new(TolerantConfig::default()),
            trace: false,
        }
    }
}

impl fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportConfig")
            .field("max_datagram", &self.max_datagram)
            .field("max_window", &self.max_window)
            .field("receive_window", &self.receive_window)
            .field("stream_receive_window", &self.stream_receive_window)
            .field("send_buffer", &self.send_buffer)
            .field("max_streams", &self.max_streams)
            .field("idle_timeout", &self.idle_timeout)
            .field("keep_alive", &self.keep_alive)
            .field("scheme", &self.scheme)
            .field("congestion", &self.congestion)
            .finish_non_exhaustive()
    }
}

/// Changes to a preset's repair settings, each left out (`None`) keeping
/// the preset's value: how the sender weighs repair bytes against waiting
/// for feedback. One value serves every place a connection is configured
/// (the simulator, its comparison, the file transfer), so that a trade
/// measured in one is taken to the others as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RepairSettings {
    /// [`RedundancyConfig::delay_per_percent`].
    pub delay_per_percent: Option<Duration>,
    /// [`RedundancyConfig::cheap_answer_quantile`].
    pub cheap_answer_quantile: Option<f64>,
    /// [`RedundancyConfig::tail_residual`].
    pub tail_residual: Option<f64>,
    /// [`TransportConfig::max_repair_span`].
    pub max_repair_span: Option<u16>,
}

impl RepairSettings {
    /// Writes the settings given into `transport`, leaving the others as
    /// they are.
    pub fn apply(&self, transport: &mut TransportConfig) {
        if let Some(price) = self.delay_per_percent {
            transport.redundancy.delay_per_percent = price;
        }
        if let Some(quantile) = self.cheap_answer_quantile {
            transport.redundancy.cheap_answer_quantile = quantile;
        }
        if let Some(residual) = self.tail_residual {
            transport.redundancy.tail_residual = residual;
        }
        if let Some(span) = self.max_repair_span {
            transport.max_repair_span = span;
        }
    }

    /// Whether every setting is left to the preset.
    pub fn is_default(&self) -> bool {
        *self == RepairSettings::default()
    }
}

/// A configuration the connection cannot run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A datagram size below the 1200 bytes every path must carry.
    #[error("max_datagram {0} is below 1200 bytes")]
    DatagramTooSmall(u16),
    /// A decoding window of zero, or one that leaves no room for history.
    #[error("max_window {0} is out of range (1 to {max})", max = u16::MAX - DECODER_HISTORY)]
    Window(u16),
    /// A repair span of zero.
    #[error("max_repair_span must be at least 1")]
    RepairSpan,
    /// The handshake could not be started with the keys given.
    #[error("the handshake could not start: {0}")]
    Handshake(crate::protection::HandshakeError),
}

impl TransportConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_datagram < 1200 {
            return Err(ConfigError::DatagramTooSmall(self.max_datagram));
        }
        if self.max_window == 0 || self.max_window > u16::MAX - DECODER_HISTORY {
            return Err(ConfigError::Window(self.max_window));
        }
        if self.max_repair_span == 0 {
            return Err(ConfigError::RepairSpan);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_settings_change_only_what_they_give() {
        let preset = TransportConfig::default();
        let mut transport = preset.clone();
        RepairSettings::default().apply(&mut transport);
        assert_eq!(transport.redundancy, preset.redundancy);
        assert_eq!(transport.max_repair_span, preset.max_repair_span);

        let settings = RepairSettings {
            tail_residual: Some(0.05),
            ..RepairSettings::default()
        };
        assert!(!settings.is_default());
        settings.apply(&mut transport);
        assert_eq!(transport.redundancy.tail_residual, 0.05);
        assert_eq!(
            transport.redundancy.delay_per_percent,
            preset.redundancy.delay_per_percent
        );
        assert_eq!(transport.max_repair_span, preset.max_repair_span);
    }
}
