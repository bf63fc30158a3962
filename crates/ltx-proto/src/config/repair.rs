//! The numbers every redundancy scheme is given, with their defaults and
//! the ranges they may take.

use std::time::Duration;

use super::error::{ConfigError, Setting};

/// The widest proactive repair window a configuration may ask for, in
/// source symbols: the decoder's default window, beyond which a repair's
/// coding cost buys nothing.
pub const MAX_REPAIR_SPAN: u16 = 16_384;

/// The numbers a redundancy scheme spends: the residuals it sizes repair
/// for, the price of waiting for feedback, the margins of its answers, the
/// widest window a proactive repair covers.
///
/// Each setter checks its value and records that it was changed, so that a
/// [`TransportConfig`](super::TransportConfig) whose scheme does not read a
/// changed setting is refused ([`ConfigError::NoEffect`]). ltx's sliding
/// window reads all but `target_residual`; the seeds' block schemes read
/// `target_residual`, `max_ratio` and the reactive margins (see
/// [`SchemeFactory::reads`](crate::recovery::SchemeFactory::reads)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepairConfig {
    pub(crate) target_residual: f64,
    pub(crate) delay_per_percent: Duration,
    pub(crate) cheap_feedback_rtt: Duration,
    pub(crate) cheap_answer_quantile: f64,
    pub(crate) tail_residual: f64,
    pub(crate) max_ratio: f64,
    pub(crate) reactive_margin: f64,
    pub(crate) reactive_extra: u64,
    pub(crate) max_repair_span: u16,
    /// The settings changed since the defaults.
    changed: Changed,
}

/// Which settings a [`RepairConfig`]'s setters changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Changed(u16);

impl Changed {
    fn bit(setting: Setting) -> u16 {
        1 << (setting as u16)
    }

    fn insert(&mut self, setting: Setting) {
        self.0 |= Changed::bit(setting);
    }

    fn contains(self, setting: Setting) -> bool {
        self.0 & Changed::bit(setting) != 0
    }
}

/// The settings a [`RepairConfig`] holds.
pub(crate) const REPAIR_SETTINGS: [Setting; 8] = [
    Setting::TargetResidual,
    Setting::DelayPerPercent,
    Setting::CheapAnswerQuantile,
    Setting::TailResidual,
    Setting::MaxRatio,
    Setting::ReactiveMargin,
    Setting::MaxRepairSpan,
    Setting::CheapFeedbackRtt,
];

impl Default for RepairConfig {
    fn default() -> Self {
        Self {
            target_residual: 0.1,
            delay_per_percent: Duration::from_millis(75),
            cheap_feedback_rtt: Duration::from_millis(240),
            cheap_answer_quantile: -1.0,
            tail_residual: 0.01,
            max_ratio: 1.5,
            reactive_margin: 0.1,
            reactive_extra: 1,
            max_repair_span: 256,
            changed: Changed::default(),
        }
    }
}

impl RepairConfig {
    /// The fraction of fixed-size windows (the seeds' blocks) allowed to
    /// need reactive repair. Default 0.1.
    pub fn target_residual(&self) -> f64 {
        self.target_residual
    }

    /// Sets [`target_residual`](Self::target_residual): above 0, at most
    /// one half.
    pub fn set_target_residual(&mut self, value: f64) -> Result<&mut Self, ConfigError> {
        self.target_residual = residual(Setting::TargetResidual, value)?;
        self.changed.insert(Setting::TargetResidual);
        Ok(self)
    }

    /// The price of waiting for feedback: the mean wait per span of the
    /// sliding window worth one percent of its bytes. Higher sends fewer
    /// bytes ahead of loss and lets more gaps wait a round trip; lower
    /// buys delivery delay with bytes. Default 75 ms
    /// (`docs/design/repair-sizing.md`).
    pub fn delay_per_percent(&self) -> Duration {
        self.delay_per_percent
    }

    /// Sets [`delay_per_percent`](Self::delay_per_percent); any duration
    /// (zero sends the most repair ahead of loss).
    pub fn set_delay_per_percent(&mut self, value: Duration) -> &mut Self {
        self.delay_per_percent = value;
        self.changed.insert(Setting::DelayPerPercent);
        self
    }

    /// The round trip up to which reactive answers also cover the flight
    /// and round to the nearest repair. Default 240 ms.
    pub fn cheap_feedback_rtt(&self) -> Duration {
        self.cheap_feedback_rtt
    }

    /// Sets [`cheap_feedback_rtt`](Self::cheap_feedback_rtt).
    pub fn set_cheap_feedback_rtt(&mut self, value: Duration) -> &mut Self {
        self.cheap_feedback_rtt = value;
        self.changed.insert(Setting::CheapFeedbackRtt);
        self
    }

    /// Where feedback is cheap, the quantile of the flight's spread an
    /// answer is sized for, in standard deviations from the expected need:
    /// below 0 saves bytes and answers the shortfall a short round trip
    /// later. Default −1.
    pub fn cheap_answer_quantile(&self) -> f64 {
        self.cheap_answer_quantile
    }

    /// Sets [`cheap_answer_quantile`](Self::cheap_answer_quantile): −4 to 4
    /// (beyond, the normal approximation it feeds means nothing).
    pub fn set_cheap_answer_quantile(&mut self, value: f64) -> Result<&mut Self, ConfigError> {
        if !(-4.0..=4.0).contains(&value) {
            return Err(ConfigError::out_of_range(
                Setting::CheapAnswerQuantile,
                value,
                "-4 to 4 standard deviations",
            ));
        }
        self.cheap_answer_quantile = value;
        self.changed.insert(Setting::CheapAnswerQuantile);
        Ok(self)
    }

    /// The fraction of transfers whose last flight the tail may leave
    /// short for a round trip of feedback; a long transfer is left short
    /// less often (`docs/design/tail.md`). Default 0.01.
    pub fn tail_residual(&self) -> f64 {
        self.tail_residual
    }

    /// Sets [`tail_residual`](Self::tail_residual): above 0, at most one
    /// half (a tail that means to leave most transfers short is no tail).
    pub fn set_tail_residual(&mut self, value: f64) -> Result<&mut Self, ConfigError> {
        self.tail_residual = residual(Setting::TailResidual, value)?;
        self.changed.insert(Setting::TailResidual);
        Ok(self)
    }

    /// The cap on proactive repair symbols per source symbol. Default 1.5.
    pub fn max_ratio(&self) -> f64 {
        self.max_ratio
    }

    /// Sets [`max_ratio`](Self::max_ratio): 0 or more.
    pub fn set_max_ratio(&mut self, value: f64) -> Result<&mut Self, ConfigError> {
        if !(value >= 0.0 && value.is_finite()) {
            return Err(ConfigError::out_of_range(
                Setting::MaxRatio,
                value,
                "0 or more",
            ));
        }
        self.max_ratio = value;
        self.changed.insert(Setting::MaxRatio);
        Ok(self)
    }

    /// The fraction a reactive answer adds to the expected need. Default
    /// 0.1.
    pub fn reactive_margin(&self) -> f64 {
        self.reactive_margin
    }

    /// Repairs added to any non-zero reactive answer, so that a small
    /// deficit is not missed by rounding or by the loss of its only repair.
    /// Default 1.
    pub fn reactive_extra(&self) -> u64 {
        self.reactive_extra
    }

    /// Sets [`reactive_margin`](Self::reactive_margin) (0 or more) and
    /// [`reactive_extra`](Self::reactive_extra).
    pub fn set_reactive_margin(
        &mut self,
        margin: f64,
        extra: u64,
    ) -> Result<&mut Self, ConfigError> {
        if !(margin >= 0.0 && margin.is_finite()) {
            return Err(ConfigError::out_of_range(
                Setting::ReactiveMargin,
                margin,
                "0 or more",
            ));
        }
        self.reactive_margin = margin;
        self.reactive_extra = extra;
        self.changed.insert(Setting::ReactiveMargin);
        Ok(self)
    }

    /// The widest window, in source symbols, a proactive repair covers: the
    /// span follows the symbols a round trip carries, from 256 (or this, if
    /// smaller) up to this. Wider needs a thinner margin for the same
    /// residual and costs coding time in proportion. Default 256.
    pub fn max_repair_span(&self) -> u16 {
        self.max_repair_span
    }

    /// Sets [`max_repair_span`](Self::max_repair_span): 1 to
    /// [`MAX_REPAIR_SPAN`].
    pub fn set_max_repair_span(&mut self, value: u16) -> Result<&mut Self, ConfigError> {
        if !(1..=MAX_REPAIR_SPAN).contains(&value) {
            return Err(ConfigError::out_of_range(
                Setting::MaxRepairSpan,
                value,
                "1 to 16384 symbols",
            ));
        }
        self.max_repair_span = value;
        self.changed.insert(Setting::MaxRepairSpan);
        Ok(self)
    }

    /// Whether a setter changed `setting` from its default.
    pub fn is_changed(&self, setting: Setting) -> bool {
        self.changed.contains(setting)
    }
}

/// A residual: above 0, at most one half.
fn residual(setting: Setting, value: f64) -> Result<f64, ConfigError> {
    if value > 0.0 && value <= 0.5 {
        Ok(value)
    } else {
        Err(ConfigError::out_of_range(setting, value, "(0, 0.5]"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setter_refuses_a_value_out_of_range_and_keeps_the_old_one() {
        let mut repair = RepairConfig::default();
        let err = repair.set_tail_residual(0.6).unwrap_err();
        assert_eq!(err.setting(), Some(Setting::TailResidual));
        assert_eq!(repair.tail_residual(), 0.01);
        assert!(!repair.is_changed(Setting::TailResidual));
        assert!(repair.set_tail_residual(0.5).is_ok());
        assert!(repair.is_changed(Setting::TailResidual));
        // Both sides of each boundary.
        assert!(repair.set_tail_residual(0.0).is_err());
        assert!(repair.set_cheap_answer_quantile(4.0).is_ok());
        assert!(repair.set_cheap_answer_quantile(4.01).is_err());
        assert!(repair.set_max_repair_span(MAX_REPAIR_SPAN).is_ok());
        assert!(repair.set_max_repair_span(MAX_REPAIR_SPAN + 1).is_err());
        assert!(repair.set_max_repair_span(0).is_err());
        assert!(repair.set_max_ratio(f64::NAN).is_err());
    }

    #[test]
    fn defaults_are_unchanged() {
        let repair = RepairConfig::default();
        for setting in REPAIR_SETTINGS {
            assert!(!repair.is_changed(setting), "{setting}");
        }
    }
}
