//! How a connection is sized and which policies it runs: every default,
//! and every check of a value, in one place.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::error::{ConfigError, Setting};
use super::repair::{RepairConfig, REPAIR_SETTINGS};
use crate::congestion::{ControllerFactory, SavedPath, TolerantConfig};
use crate::recovery::{SchemeFactory, SlidingWindowFactory};

/// Symbols of history the receiver keeps below its first unknown symbol, so
/// that a repair symbol whose window starts before it can still be used:
/// the sender learns of the receiver's progress a round trip late, and in a
/// round trip the receiver may decode a whole window's worth.
pub(crate) const DECODER_HISTORY: u16 = 8192;

/// The smallest datagram every path must carry, in bytes.
pub const MIN_DATAGRAM: u16 = 1200;

/// The settings of one connection: sizes, limits, timers and the policies
/// (congestion controller, redundancy scheme) it runs.
///
/// Start from [`TransportConfig::default`] (or a preset's configuration),
/// then change what you need through the setters; each documents its
/// default and checks its value. [`validate`](Self::validate) refuses a
/// changed setting that the chosen controller or scheme does not read, so
/// that nothing is silently ignored; a connection validates its
/// configuration when it is made.
///
/// Memory per connection is bounded by these numbers whatever the peer
/// sends: the sender holds at most `max_window` unacknowledged symbols plus
/// `send_buffer` bytes per stream; the receiver's decoder holds at most
/// `max_window + 8192` symbols (about 33 MB at the defaults); reassembly
/// holds at most `stream_receive_window` bytes per stream and
/// `receive_window` in all. Those are ceilings: the coding buffers take
/// memory a page of 32 symbols at a time as the window in use grows and
/// give it back as symbols are acknowledged and consumed; one drained
/// stream buffer per direction is kept for the next bytes while it is in
/// use (freed after a second unused); and a connection quiet for a few
/// probe time-outs holds none
/// ([`Connection::buffered_bytes`](crate::Connection::buffered_bytes)).
/// A server for many clients bounds their number with
/// [`AcceptConfig`](super::AcceptConfig).
#[derive(Clone)]
pub struct TransportConfig {
    pub(crate) max_datagram: u16,
    pub(crate) max_window: u16,
    pub(crate) receive_window: u64,
    pub(crate) stream_receive_window: u64,
    pub(crate) send_buffer: u64,
    pub(crate) max_streams: u64,
    pub(crate) idle_timeout: Duration,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) silence_probe: Option<Duration>,
    pub(crate) initial_rtt: Duration,
    pub(crate) expected_loss: Option<f64>,
    pub(crate) max_ack_delay: Duration,
    pub(crate) ack_frequency: u32,
    pub(crate) repair: RepairConfig,
    pub(crate) scheme: Arc<dyn SchemeFactory>,
    pub(crate) congestion: Arc<dyn ControllerFactory>,
    pub(crate) rate_hint: Option<u64>,
    pub(crate) saved_path: Option<SavedPath>,
    pub(crate) early_data: bool,
    pub(crate) trace: bool,
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
            silence_probe: None,
            initial_rtt: Duration::from_millis(333),
            expected_loss: None,
            max_ack_delay: Duration::from_millis(25),
            ack_frequency: 2,
            repair: RepairConfig::default(),
            scheme: Arc::new(SlidingWindowFactory),
            congestion: Arc::new(TolerantConfig::default()),
            rate_hint: None,
            saved_path: None,
            early_data: false,
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
            .field("silence_probe", &self.silence_probe)
            .field("repair", &self.repair)
            .field("scheme", &self.scheme)
            .field("congestion", &self.congestion)
            .field("rate_hint", &self.rate_hint)
            .field("expected_loss", &self.expected_loss)
            .field("saved_path", &self.saved_path)
            .field("early_data", &self.early_data)
            .finish_non_exhaustive()
    }
}

impl TransportConfig {
    /// The largest UDP payload sent, bytes. Default 1400.
    pub fn max_datagram(&self) -> u16 {
        self.max_datagram
    }

    /// Sets [`max_datagram`](Self::max_datagram): at least
    /// [`MIN_DATAGRAM`]. Symbols are sized so that a packet with a symbol,
    /// its headers and a 16-byte authentication tag fits.
    pub fn set_max_datagram(&mut self, bytes: u16) -> Result<&mut Self, ConfigError> {
        if bytes < MIN_DATAGRAM {
            return Err(ConfigError::out_of_range(
                Setting::MaxDatagram,
                bytes,
                "1200 to 65535 bytes",
            ));
        }
        self.max_datagram = bytes;
        Ok(self)
    }

    /// The symbol size a connection with this configuration uses at most
    /// (both ends use the one for the smaller of their datagram sizes).
    pub fn symbol_size(&self) -> usize {
        crate::connection::symbol_size(self.max_datagram)
    }

    /// The decoding window: source symbols the peer may send beyond the
    /// first one this end has not decoded. Default 16 384, about 22 MB, a
    /// bandwidth-delay product of 300 Mbit/s over 600 ms; it also bounds
    /// the pending repair equations.
    pub fn max_window(&self) -> u16 {
        self.max_window
    }

    /// Sets [`max_window`](Self::max_window): 1 to 57 343 (the decoder keeps
    /// 8192 symbols of history on top, within 65 535).
    pub fn set_max_window(&mut self, symbols: u16) -> Result<&mut Self, ConfigError> {
        if symbols == 0 || symbols > u16::MAX - DECODER_HISTORY {
            return Err(ConfigError::out_of_range(
                Setting::MaxWindow,
                symbols,
                "1 to 57343 symbols",
            ));
        }
        self.max_window = symbols;
        Ok(self)
    }

    /// Bytes in all streams the peer may send beyond what the application
    /// has read (connection flow control). Default 64 MiB, more than the
    /// decoding window carries, so that a slow reader, not the window,
    /// holds the sender back.
    pub fn receive_window(&self) -> u64 {
        self.receive_window
    }

    /// Sets [`receive_window`](Self::receive_window).
    pub fn set_receive_window(&mut self, bytes: u64) -> &mut Self {
        self.receive_window = bytes;
        self
    }

    /// Bytes per stream the peer may send beyond what the application has
    /// read: one stream's reassembly buffer. Default 32 MiB, half the
    /// connection's, so that one stalled stream leaves room for the others.
    pub fn stream_receive_window(&self) -> u64 {
        self.stream_receive_window
    }

    /// Sets [`stream_receive_window`](Self::stream_receive_window).
    pub fn set_stream_receive_window(&mut self, bytes: u64) -> &mut Self {
        self.stream_receive_window = bytes;
        self
    }

    /// Bytes a stream buffers from the application before they are put in
    /// symbols; `write` takes no more until they are sent. Default 4 MiB.
    pub fn send_buffer(&self) -> u64 {
        self.send_buffer
    }

    /// Sets [`send_buffer`](Self::send_buffer).
    pub fn set_send_buffer(&mut self, bytes: u64) -> &mut Self {
        self.send_buffer = bytes;
        self
    }

    /// Streams the peer may open; more close the connection. Default 256,
    /// each costing its buffers only while it holds data.
    pub fn max_streams(&self) -> u64 {
        self.max_streams
    }

    /// Sets [`max_streams`](Self::max_streams).
    pub fn set_max_streams(&mut self, streams: u64) -> &mut Self {
        self.max_streams = streams;
        self
    }

    /// The connection closes when nothing has been received for this long,
    /// the handshake included. Default 30 s.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// Sets [`idle_timeout`](Self::idle_timeout): above zero.
    pub fn set_idle_timeout(&mut self, timeout: Duration) -> Result<&mut Self, ConfigError> {
        if timeout.is_zero() {
            return Err(ConfigError::out_of_range(
                Setting::IdleTimeout,
                "0s",
                "durations above zero",
            ));
        }
        self.idle_timeout = timeout;
        Ok(self)
    }

    /// A ping is sent when nothing has been sent for this long (keeps NAT
    /// bindings and the peer's idle timer alive); `None` sends none, the
    /// default.
    pub fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// Sets [`keep_alive`](Self::keep_alive).
    pub fn set_keep_alive(&mut self, interval: Option<Duration>) -> &mut Self {
        self.keep_alive = interval;
        self
    }

    /// A ping is sent when the peer has sent nothing that asks for an
    /// acknowledgement for this long while a stream is open, then after
    /// twice as long, and so on up to the keep-alive interval (or 15 s).
    /// A client whose address changed while it only received says so
    /// this way, rather than at its next keep-alive. `None` sends none,
    /// the default.
    pub fn silence_probe(&self) -> Option<Duration> {
        self.silence_probe
    }

    /// Sets [`silence_probe`](Self::silence_probe).
    pub fn set_silence_probe(&mut self, after: Option<Duration>) -> &mut Self {
        self.silence_probe = after;
        self
    }

    /// The round trip assumed before the first sample. Default 333 ms
    /// (RFC 9002's).
    pub fn initial_rtt(&self) -> Duration {
        self.initial_rtt
    }

    /// Sets [`initial_rtt`](Self::initial_rtt).
    pub fn set_initial_rtt(&mut self, rtt: Duration) -> &mut Self {
        self.initial_rtt = rtt;
        self
    }

    /// The loss rate the sender assumes before it has measured one, for a
    /// path known to lose: its first flights then carry proactive repair,
    /// and a loss among them does not hold up the stream for a round trip.
    /// The assumption weighs as much as [`PRIOR_PACKETS`] packets and fades
    /// as the connection's own fates come in, gone once that many are
    /// counted. Default `None`: a path is assumed clean until it loses.
    ///
    /// [`PRIOR_PACKETS`]: crate::recovery::loss_estimator::PRIOR_PACKETS
    pub fn expected_loss(&self) -> Option<f64> {
        self.expected_loss
    }

    /// Sets [`expected_loss`](Self::expected_loss): a fraction from 0 to
    /// 0.9.
    pub fn set_expected_loss(&mut self, rate: Option<f64>) -> Result<&mut Self, ConfigError> {
        if let Some(rate) = rate {
            if !(0.0..=0.9).contains(&rate) {
                return Err(ConfigError::out_of_range(
                    Setting::ExpectedLoss,
                    rate,
                    "0 to 0.9",
                ));
            }
        }
        self.expected_loss = rate;
        Ok(self)
    }

    /// The longest the receiver waits before acknowledging. Default 25 ms.
    pub fn max_ack_delay(&self) -> Duration {
        self.max_ack_delay
    }

    /// Sets [`max_ack_delay`](Self::max_ack_delay).
    pub fn set_max_ack_delay(&mut self, delay: Duration) -> &mut Self {
        self.max_ack_delay = delay;
        self
    }

    /// Ack-eliciting packets received before an acknowledgement goes out at
    /// once. Default 2.
    pub fn ack_frequency(&self) -> u32 {
        self.ack_frequency
    }

    /// Sets [`ack_frequency`](Self::ack_frequency).
    pub fn set_ack_frequency(&mut self, packets: u32) -> &mut Self {
        self.ack_frequency = packets;
        self
    }

    /// The numbers the redundancy scheme spends.
    pub fn repair(&self) -> &RepairConfig {
        &self.repair
    }

    /// The numbers the redundancy scheme spends, to change (each setter of
    /// [`RepairConfig`] checks its value).
    pub fn repair_mut(&mut self) -> &mut RepairConfig {
        &mut self.repair
    }

    /// The redundancy scheme. Default: ltx's sliding window.
    pub fn redundancy_scheme(&self) -> &Arc<dyn SchemeFactory> {
        &self.scheme
    }

    /// Sets the redundancy scheme (a preset's, for instance).
    pub fn set_redundancy_scheme(&mut self, scheme: Arc<dyn SchemeFactory>) -> &mut Self {
        self.scheme = scheme;
        self
    }

    /// The congestion controller. Default: ltx's
    /// [`Tolerant`](crate::congestion::Tolerant).
    pub fn congestion_controller(&self) -> &Arc<dyn ControllerFactory> {
        &self.congestion
    }

    /// Sets the congestion controller (a preset's, for instance).
    pub fn set_congestion_controller(
        &mut self,
        controller: Arc<dyn ControllerFactory>,
    ) -> &mut Self {
        self.congestion = controller;
        self
    }

    /// A known bottleneck rate, bytes per second, for controllers that
    /// read one ([`ControllerFactory::reads_rate_hint`]): start-up takes it
    /// as measured and fills the path from the first round trip. Default:
    /// none.
    pub fn rate_hint(&self) -> Option<u64> {
        self.rate_hint
    }

    /// Sets [`rate_hint`](Self::rate_hint): above zero.
    pub fn set_rate_hint(
        &mut self,
        bytes_per_second: Option<u64>,
    ) -> Result<&mut Self, ConfigError> {
        if bytes_per_second == Some(0) {
            return Err(ConfigError::out_of_range(
                Setting::RateHint,
                0,
                "rates above zero",
            ));
        }
        self.rate_hint = bytes_per_second;
        Ok(self)
    }

    /// The path an earlier connection to the same peer measured
    /// ([`Connection::path_to_save`](crate::Connection::path_to_save)),
    /// for careful resume: if the handshake's round trip matches it,
    /// start-up begins at half its rate and confirms it within the first
    /// round trip, or retreats to what the path shows. A rate hint wins
    /// over it; controllers that read no rate hint ignore it. Default:
    /// none.
    pub fn saved_path(&self) -> Option<SavedPath> {
        self.saved_path
    }

    /// Sets [`saved_path`](Self::saved_path).
    pub fn set_saved_path(&mut self, saved: Option<SavedPath>) -> &mut Self {
        self.saved_path = saved;
        self
    }

    /// Whether trace events (packets, symbols, metrics) come out of
    /// `poll_event`; off by default, since each costs an allocation.
    pub fn trace(&self) -> bool {
        self.trace
    }

    /// Whether stream data goes in the client's first flight (0-RTT), off
    /// by default. A client sends the data written before the handshake
    /// completes in EarlyData packets right after its Initial copies, as
    /// much as the congestion controller's first window allows (the
    /// round trip that would size more from a rate hint is not known
    /// yet); the rest, and everything the server refuses, goes once the
    /// handshake completes. A server delivers early data at once, unless
    /// its [`EarlyDataRecord`](crate::protection::EarlyDataRecord) finds
    /// the flight replayed or stale. Early data needs a secured connection
    /// with a [`clock`](crate::protection::SecurityConfig::clock) on the
    /// client and an
    /// [`early_data_record`](crate::protection::SecurityConfig::early_data_record)
    /// on the server; it has no forward secrecy against a later
    /// compromise of the server's static key. The client builds its early
    /// symbols for its own [`max_datagram`](Self::set_max_datagram): a
    /// server whose own is smaller refuses them, and the client sends
    /// their data again in symbols of the size both ends agree on.
    pub fn early_data(&self) -> bool {
        self.early_data
    }

    /// Sets [`early_data`](Self::early_data).
    pub fn set_early_data(&mut self, on: bool) -> &mut Self {
        self.early_data = on;
        self
    }

    /// Sets [`trace`](Self::trace).
    pub fn set_trace(&mut self, on: bool) -> &mut Self {
        self.trace = on;
        self
    }

    /// Refuses a setting changed from the defaults that the chosen
    /// redundancy scheme or congestion controller does not read: a repair
    /// setting the scheme ignores, or a rate hint the controller ignores.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for setting in REPAIR_SETTINGS {
            if self.repair.is_changed(setting) && !self.scheme.reads(setting) {
                return Err(ConfigError::NoEffect {
                    setting,
                    policy: format!("the {} redundancy scheme", self.scheme.name()),
                });
            }
        }
        if self.rate_hint.is_some() && !self.congestion.reads_rate_hint() {
            return Err(ConfigError::NoEffect {
                setting: Setting::RateHint,
                policy: format!("the {} congestion controller", self.congestion.name()),
            });
        }
        Ok(())
    }
}

/// Changes to a preset's repair settings, each left out (`None`) keeping
/// the preset's value: how the sender weighs repair bytes against waiting
/// for feedback. One value serves every place a connection is configured
/// (the simulator, its comparison, the file transfer), so that a trade
/// measured in one is taken to the others as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RepairSettings {
    /// [`RepairConfig::delay_per_percent`].
    pub delay_per_percent: Option<Duration>,
    /// [`RepairConfig::cheap_answer_quantile`].
    pub cheap_answer_quantile: Option<f64>,
    /// [`RepairConfig::tail_residual`].
    pub tail_residual: Option<f64>,
    /// [`RepairConfig::max_repair_span`].
    pub max_repair_span: Option<u16>,
    /// [`TransportConfig::expected_loss`]: read by every scheme, since it
    /// seeds the loss estimate they all size repair from.
    pub expected_loss: Option<f64>,
}

impl RepairSettings {
    /// Writes the settings given into `transport`, each checked by its
    /// setter, leaving the others as they are. Apply the preset first:
    /// [`TransportConfig::validate`] then refuses those its scheme does
    /// not read.
    pub fn apply(&self, transport: &mut TransportConfig) -> Result<(), ConfigError> {
        self.apply_where(transport, |_| true)
    }

    /// As [`apply`](Self::apply), but only the settings `transport`'s
    /// scheme reads: for a comparison that applies one set of changes to
    /// every preset.
    pub fn apply_where_read(&self, transport: &mut TransportConfig) -> Result<(), ConfigError> {
        let scheme = Arc::clone(&transport.scheme);
        self.apply_where(transport, |setting| scheme.reads(setting))
    }

    fn apply_where(
        &self,
        transport: &mut TransportConfig,
        wanted: impl Fn(Setting) -> bool,
    ) -> Result<(), ConfigError> {
        let repair = &mut transport.repair;
        if let Some(price) = self
            .delay_per_percent
            .filter(|_| wanted(Setting::DelayPerPercent))
        {
            repair.set_delay_per_percent(price);
        }
        if let Some(quantile) = self
            .cheap_answer_quantile
            .filter(|_| wanted(Setting::CheapAnswerQuantile))
        {
            repair.set_cheap_answer_quantile(quantile)?;
        }
        if let Some(residual) = self.tail_residual.filter(|_| wanted(Setting::TailResidual)) {
            repair.set_tail_residual(residual)?;
        }
        if let Some(span) = self
            .max_repair_span
            .filter(|_| wanted(Setting::MaxRepairSpan))
        {
            repair.set_max_repair_span(span)?;
        }
        if let Some(rate) = self.expected_loss {
            transport.set_expected_loss(Some(rate))?;
        }
        Ok(())
    }

    /// Whether every setting is left to the preset.
    pub fn is_default(&self) -> bool {
        *self == RepairSettings::default()
    }

    /// The settings given.
    pub fn given(&self) -> Vec<Setting> {
        [
            (self.delay_per_percent.is_some(), Setting::DelayPerPercent),
            (
                self.cheap_answer_quantile.is_some(),
                Setting::CheapAnswerQuantile,
            ),
            (self.tail_residual.is_some(), Setting::TailResidual),
            (self.max_repair_span.is_some(), Setting::MaxRepairSpan),
            (self.expected_loss.is_some(), Setting::ExpectedLoss),
        ]
        .into_iter()
        .filter_map(|(given, setting)| given.then_some(setting))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_settings_change_only_what_they_give() {
        let preset = TransportConfig::default();
        let mut transport = preset.clone();
        RepairSettings::default().apply(&mut transport).unwrap();
        assert_eq!(transport.repair, preset.repair);

        let settings = RepairSettings {
            tail_residual: Some(0.05),
            ..RepairSettings::default()
        };
        assert!(!settings.is_default());
        settings.apply(&mut transport).unwrap();
        assert_eq!(transport.repair.tail_residual(), 0.05);
        assert_eq!(
            transport.repair.delay_per_percent(),
            preset.repair.delay_per_percent()
        );
        assert_eq!(
            transport.repair.max_repair_span(),
            preset.repair.max_repair_span()
        );
        assert!(transport.validate().is_ok());
    }

    #[test]
    fn a_value_out_of_range_is_refused_naming_its_setting() {
        let mut transport = TransportConfig::default();
        let settings = RepairSettings {
            tail_residual: Some(0.9),
            ..RepairSettings::default()
        };
        let err = settings.apply(&mut transport).unwrap_err();
        assert_eq!(err.setting(), Some(Setting::TailResidual));
        assert_eq!(
            transport.set_max_datagram(1199).unwrap_err().setting(),
            Some(Setting::MaxDatagram)
        );
        assert!(transport.set_max_datagram(1200).is_ok());
        assert!(transport.set_max_window(0).is_err());
        assert_eq!(
            transport
                .set_expected_loss(Some(0.95))
                .unwrap_err()
                .setting(),
            Some(Setting::ExpectedLoss)
        );
        assert!(transport.set_expected_loss(Some(0.1)).is_ok());
        assert!(transport.set_max_window(u16::MAX - DECODER_HISTORY).is_ok());
        assert!(transport
            .set_max_window(u16::MAX - DECODER_HISTORY + 1)
            .is_err());
        assert!(transport.set_idle_timeout(Duration::ZERO).is_err());
        assert!(transport.set_rate_hint(Some(0)).is_err());
    }

    #[test]
    fn the_default_reads_every_repair_setting_and_a_rate_hint() {
        let mut transport = TransportConfig::default();
        transport.repair_mut().set_tail_residual(0.02).unwrap();
        transport.repair_mut().set_max_repair_span(512).unwrap();
        transport.set_rate_hint(Some(6_250_000)).unwrap();
        assert_eq!(transport.validate(), Ok(()));
        // The fixed windows' residual is the seeds' blocks': the sliding
        // window has no use for it.
        transport.repair_mut().set_target_residual(0.2).unwrap();
        assert_eq!(
            transport.validate(),
            Err(ConfigError::NoEffect {
                setting: Setting::TargetResidual,
                policy: "the sliding-window redundancy scheme".into(),
            })
        );
    }
}
