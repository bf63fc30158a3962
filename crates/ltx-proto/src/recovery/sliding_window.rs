//! ltx's redundancy scheme, the sliding window.
//!
//! Each source symbol earns proactive credit at a ratio sized from the loss
//! estimate for the span of symbols a round trip carries; the quantile a
//! span is sized for weighs the repairs it wastes against the wait for
//! feedback it spares, at the price of waiting
//! ([`RepairConfig::delay_per_percent`]). The peer's feedback is
//! answered with repairs over its oldest gaps, less what the proactive
//! repairs already on their way will make up; when the data runs out, the
//! tail makes up what the last flight is expected to lack. The derivations
//! are in `docs/design/repair-sizing.md` and `docs/design/tail.md`.

use std::time::Duration;

use ltx_coding::codec::Code;
use ltx_coding::SymbolId;

use super::statistics::{
    flight_spread, inverse_normal_cdf, last_symbols_short, least_cost_quantile, loss_spread,
    normal_cdf, packets_for, spans_short, usable_rate,
};
use super::{
    gap_window, tail_window, window_between, Feedback, Flight, Horizon, LossEstimate,
    RedundancyScheme, RepairPlan, RepairRange, RepairReason, SchemeFactory,
};
use crate::config::{RepairConfig, Setting};

/// The fewest of its spans that the sliding window leaves to feedback,
/// whatever the price of waiting (see
/// [`RepairConfig::delay_per_percent`]).
const FEWEST_LEFT: f64 = 0.01;

/// The fewest transfers whose last flight the tail leaves short, however
/// long the transfer (see [`RepairConfig::tail_residual`]).
const FEWEST_TAILS_SHORT: f64 = 1e-4;

/// The lowest quantile a span is sized for: eight standard deviations below
/// its expected losses, where a span of 256 symbols with up to 20 %
/// independent loss gets no repair at all (see
/// [`RepairConfig::delay_per_percent`]).
const LOWEST_QUANTILE: f64 = -8.0;

/// The factory of ltx's sliding-window policy ([`SlidingWindow`]), the
/// default scheme: it keeps no settings of its own beyond the
/// [`RepairConfig`] every scheme is given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlidingWindowFactory;

impl SchemeFactory for SlidingWindowFactory {
    fn build(&self, repair: &RepairConfig, _peer_window: u16) -> Box<dyn RedundancyScheme> {
        Box::new(SlidingWindow::new(*repair))
    }

    fn name(&self) -> &'static str {
        "sliding-window"
    }

    /// Every setting but the fixed windows' residual, which only the seeds'
    /// blocks are sized by.
    fn reads(&self, setting: Setting) -> bool {
        setting != Setting::TargetResidual
    }
}

/// ltx's redundancy scheme, the sliding window: how many repair symbols to
/// send and over which window, given a [`LossEstimate`]. Policy only; the
/// connection builds the symbols.
#[derive(Debug, Clone, Copy)]
pub struct SlidingWindow {
    config: RepairConfig,
    /// `Φ⁻¹(1 − target_residual)`, computed once.
    z: f64,
    /// `Φ⁻¹(1 − tail_residual)`, computed once.
    tail_z: f64,
}

impl Default for SlidingWindow {
    fn default() -> Self {
        Self::new(RepairConfig::default())
    }
}

impl SlidingWindow {
    /// A policy with the given configuration.
    pub fn new(config: RepairConfig) -> Self {
        let residual = config.target_residual.clamp(1e-9, 0.5);
        let tail_residual = config.tail_residual.clamp(1e-9, 0.5);
        Self {
            config,
            z: inverse_normal_cdf(1.0 - residual),
            tail_z: inverse_normal_cdf(1.0 - tail_residual),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RepairConfig {
        &self.config
    }

    /// Repair symbols per source symbol to send ahead of loss, sized so that
    /// a window of `window` source symbols needs reactive repair with
    /// probability about `target_residual` (see `docs/design/repair-sizing.md`).
    pub fn proactive_ratio_over(&self, est: &LossEstimate, window: u64) -> f64 {
        self.ratio(est, window, self.z)
    }

    /// Repair symbols per source symbol to send ahead of loss by the sliding
    /// window: sized so that a span of `horizon.span` source symbols needs
    /// reactive repair with the probability that weighs wasted repairs
    /// against the wait for feedback (see
    /// [`RepairConfig::delay_per_percent`] and
    /// `docs/design/repair-sizing.md`).
    pub fn proactive_ratio_for(&self, est: &LossEstimate, horizon: &Horizon) -> f64 {
        self.ratio(est, horizon.span, self.quantile_for(est, horizon))
    }

    /// The fraction of spans of `horizon.span` source symbols that the
    /// sliding window leaves to feedback: `1 − Φ(z)` for the quantile it
    /// sizes them for (see [`RepairConfig::delay_per_percent`]).
    pub fn residual_for(&self, est: &LossEstimate, horizon: &Horizon) -> f64 {
        1.0 - normal_cdf(self.quantile_for(est, horizon))
    }

    /// Whether a round trip of `rtt` is short enough for reactive answers
    /// to cover the flight and round to the nearest repair
    /// ([`RepairConfig::cheap_feedback_rtt`]).
    fn feedback_is_cheap(&self, rtt: Duration) -> bool {
        rtt <= self.config.cheap_feedback_rtt
    }

    /// The quantile `z` a span of the sliding window is sized for: the root
    /// of `φ(z)/Φ(z) = σ / (n·λ·RTT)` (`docs/design/repair-sizing.md`), from
    /// [`LOWEST_QUANTILE`] to the one that leaves [`FEWEST_LEFT`].
    fn quantile_for(&self, est: &LossEstimate, horizon: &Horizon) -> f64 {
        let (low, high) = (LOWEST_QUANTILE, inverse_normal_cdf(1.0 - FEWEST_LEFT));
        let Some(p) = usable_rate(est) else {
            return high;
        };
        let per_second = 0.01 / self.config.delay_per_percent.as_secs_f64();
        let wait = per_second * horizon.rtt.as_secs_f64();
        // A free wait, or a priceless one, sits at an end of the range.
        if wait.is_nan() || wait <= 0.0 {
            return low;
        }
        if wait.is_infinite() {
            return high;
        }
        let n = horizon.span.max(1) as f64;
        let spread = loss_spread(n / (1.0 - p), p, est) / n;
        least_cost_quantile(spread / wait, low, high)
    }

    /// The quantile the tail of `flight` is sized for, whose loss count
    /// spreads by `spread`: the one of [`RepairConfig::tail_residual`],
    /// or a higher one where the wait it spares delays more: the cost of
    /// `docs/design/repair-sizing.md` with the wait priced over the transfer so
    /// far (`flight.at_stake`), not a span, from that quantile up to the
    /// one that leaves [`FEWEST_TAILS_SHORT`].
    fn tail_quantile(&self, spread: f64, flight: &Flight) -> f64 {
        let per_second = 0.01 / self.config.delay_per_percent.as_secs_f64();
        let wait = per_second * flight.rtt.as_secs_f64() * flight.at_stake as f64;
        if !(wait > 0.0 && wait.is_finite() && spread > 0.0) {
            return self.tail_z;
        }
        let high = inverse_normal_cdf(1.0 - FEWEST_TAILS_SHORT).max(self.tail_z);
        least_cost_quantile(spread / wait, self.tail_z, high)
    }

    fn ratio(&self, est: &LossEstimate, window: u64, z: f64) -> f64 {
        let Some(p) = usable_rate(est) else {
            return 0.0;
        };
        let n = window.max(1) as f64;
        let cap = self.config.max_ratio.max(0.0);
        // The cap wins over the channel minimum: past it the path is hopeless
        // for proactive repair and feedback must do the rest.
        match packets_for(n, p, est, z) {
            // Most spans are left to feedback: below the channel minimum.
            Some(m) if z < 0.0 => (m / n - 1.0).max(0.0).min(cap),
            Some(m) => (m / n - 1.0).max(p / (1.0 - p)).min(cap),
            None => cap,
        }
    }

    /// The part of the peer's reported deficit that a reactive answer
    /// makes up, when its repairs cannot also cover the flight: the settled
    /// part, which the proactive repairs sliding forward no longer reach,
    /// and of the peer's newest gaps what the margin of the proactive
    /// repairs sent since its report, `((1−p)·ratio − p)·min(span, sent)`,
    /// is not expected to cover (`docs/design/repair-sizing.md`).
    pub fn deficit_to_answer(&self, feedback: &Feedback, est: &LossEstimate) -> u64 {
        let newest = feedback.deficit.saturating_sub(feedback.settled);
        if newest == 0 {
            return feedback.deficit;
        }
        let p = usable_rate(est).unwrap_or(0.0);
        let span = feedback.horizon.span;
        let ratio = self.proactive_ratio_for(est, &feedback.horizon);
        let reach = feedback.sent_since_report.min(span) as f64;
        // What those repairs bring beyond the losses of the symbols sent
        // with them, which they cover too.
        let coming = ((1.0 - p) * ratio - p) * reach;
        // They reach back a span from the peer's newest symbol at most: of
        // its newest gaps, spread over its unknown symbols as far as the
        // report tells, only the share within that span can be made up so.
        // A first flight sent before any repair leaves gaps the whole
        // flight back, which the peer cannot report as settled (it holds
        // no repair window yet).
        let unknown = feedback.end.0.saturating_sub(feedback.decoded_through.0);
        let within = if unknown > span {
            span as f64 / unknown as f64
        } else {
            1.0
        };
        let coming = coming.min(newest as f64 * within);
        // `as` saturates; `coming` is finite and not negative.
        let uncovered = (newest as f64 - coming).max(0.0).ceil() as u64;
        feedback.settled + uncovered.min(newest)
    }

    /// How many repair symbols to send now after the receiver reported
    /// `missing` unknown source symbols, with `repairs_in_flight` repair
    /// symbols that can cover them still on their way.
    ///
    /// `ceil((missing − (1−p)·in_flight)·(1 + margin)/(1−p)) + extra`, or 0
    /// when nothing is missing or the repairs in flight are expected to cover
    /// it.
    pub fn reactive_repairs(
        &self,
        missing: u64,
        repairs_in_flight: u64,
        est: &LossEstimate,
    ) -> u64 {
        if missing == 0 {
            return 0;
        }
        let p = usable_rate(est).unwrap_or(0.0);
        let deficit = missing as f64 - repairs_in_flight as f64 * (1.0 - p);
        if deficit <= 0.0 {
            return 0;
        }
        let need = (deficit * (1.0 + self.config.reactive_margin.max(0.0)) / (1.0 - p)).ceil();
        // `as` saturates: an absurd `missing` gives u64::MAX, not a wrap.
        (need as u64).saturating_add(self.config.reactive_extra)
    }

    /// How many repair symbols to send after the receiver reported
    /// `deficit` missing equations, when every repair in `flight` covers its
    /// first unknown symbol ([`Feedback::covered`]): what makes up the
    /// expected shortfall `D + p·S − (1−p)·R`, counting what the flight
    /// will bring. Where feedback is cheap ([`RepairConfig::cheap_feedback_rtt`])
    /// it is sized at [`RepairConfig::cheap_answer_quantile`] of the
    /// flight's spread and rounded to the nearest repair, elsewhere rounded
    /// up (`docs/design/repair-sizing.md`).
    ///
    /// [`Feedback::covered`]: super::Feedback::covered
    pub fn reactive_repairs_covered(
        &self,
        deficit: u64,
        flight: &Flight,
        est: &LossEstimate,
    ) -> u64 {
        if deficit == 0 {
            return 0;
        }
        let p = usable_rate(est).unwrap_or(0.0);
        let (sources, repairs) = (flight.sources as f64, flight.repairs as f64);
        let short = deficit as f64 + p * sources - (1.0 - p) * repairs;
        if short <= 0.0 {
            return 0;
        }
        // `as` saturates.
        if self.feedback_is_cheap(flight.rtt) {
            let short =
                short + self.config.cheap_answer_quantile * loss_spread(sources + repairs, p, est);
            (short.max(0.0) / (1.0 - p)).round() as u64
        } else {
            (short / (1.0 - p)).ceil() as u64
        }
    }

    /// How many repair symbols the end of a transfer needs for the whole
    /// `flight` whose fate is not known yet (`flight.sources` source
    /// symbols and `flight.repairs` proactive repairs over them, and the
    /// `flight.answers` in flight for the `flight.owed` equations the peer
    /// reported lacking): the larger of the shortfall of its last symbols,
    /// which only repairs sent after them reach, and of the whole flight
    /// with the answers, with the channel's and the estimate's spread, each
    /// at the tail's residual; none on a clean path or with nothing in
    /// flight (`docs/design/tail.md`).
    pub fn tail_repairs_for_flight(&self, flight: &Flight, est: &LossEstimate) -> u64 {
        let Some(p) = usable_rate(est) else {
            return 0;
        };
        if flight.sources == 0 {
            return 0;
        }
        let (sources, repairs) = (flight.sources as f64, flight.repairs as f64);
        let spread = flight_spread(sources + repairs, p, est);
        let z = self.tail_quantile(spread, flight);
        let whole = p * sources - (1.0 - p) * repairs + z * spread;
        // The last symbols and the spans went with the ratio of late, which
        // may be below the flight's (an estimate that fell): they are sized
        // at the lower of the two.
        let at_ratio_now = if flight.span > 0 {
            let horizon = Horizon {
                span: flight.span,
                rtt: flight.rtt,
            };
            repairs.min(sources * self.proactive_ratio_for(est, &horizon))
        } else {
            repairs
        };
        let flight_short = whole
            .max(last_symbols_short(sources, at_ratio_now, p, est, z))
            .max(spans_short(sources, at_ratio_now, flight.span, p, est, z))
            .max(0.0);
        // The answers cover older gaps than the flight's: what they may
        // lack comes on top, and a surplus they bring makes up none of the
        // flight's shortfall. Where feedback is cheap they are sized below
        // the need on purpose, and what they lack is left to the next.
        let answers = flight.answers as f64;
        let answers_short = if self.feedback_is_cheap(flight.rtt) {
            0.0
        } else {
            (flight.owed as f64 - (1.0 - p) * answers + z * loss_spread(answers, p, est)).max(0.0)
        };
        let short = flight_short + answers_short;
        if short <= 0.0 {
            return 0;
        }
        let cap = (sources * self.config.max_ratio.max(0.0)).ceil();
        // `as` saturates.
        (short / (1.0 - p)).ceil().min(cap) as u64
    }
}

impl RedundancyScheme for SlidingWindow {
    fn name(&self) -> &'static str {
        "sliding-window"
    }

    fn proactive_ratio(&self, estimate: &LossEstimate, horizon: &Horizon) -> f64 {
        SlidingWindow::proactive_ratio_for(self, estimate, horizon)
    }

    fn credit_after_source(
        &mut self,
        _id: SymbolId,
        credit: f64,
        estimate: &LossEstimate,
        horizon: &Horizon,
    ) -> f64 {
        let ratio = SlidingWindow::proactive_ratio_for(self, estimate, horizon);
        // Banked credit is bounded, so that a burst of proactive repairs
        // after a window-limited stretch stays short.
        (credit + ratio).min(ratio.max(1.0) * 4.0)
    }

    fn reactive_repairs(&mut self, feedback: &Feedback, estimate: &LossEstimate) -> u64 {
        match feedback.covered {
            Some(flight) => {
                SlidingWindow::reactive_repairs_covered(self, feedback.deficit, &flight, estimate)
            }
            None => SlidingWindow::reactive_repairs(
                self,
                self.deficit_to_answer(feedback, estimate),
                feedback.repairs_in_flight,
                estimate,
            ),
        }
    }

    fn answer_reaches_flight(&self, feedback: &Feedback) -> bool {
        feedback
            .covered
            .is_some_and(|flight| self.feedback_is_cheap(flight.rtt))
    }

    fn tail_repairs(&self, unconfirmed: u64, _next: SymbolId, estimate: &LossEstimate) -> u64 {
        // The flight's count (`tail_repairs_for_flight`) sizes the tail;
        // one repair at least where loss is known and symbols are
        // unconfirmed.
        u64::from(unconfirmed > 0 && estimate.rate > 0.0)
    }

    fn tail_repairs_for_flight(&self, flight: &Flight, estimate: &LossEstimate) -> u64 {
        SlidingWindow::tail_repairs_for_flight(self, flight, estimate)
    }

    fn guards_messages(&self) -> bool {
        true
    }

    fn plan_repair(&mut self, reason: RepairReason, range: &RepairRange) -> Option<RepairPlan> {
        let window = match reason {
            RepairReason::Proactive => {
                let (oldest, next) = (range.oldest.0, range.next.0);
                window_between(next.saturating_sub(range.max_span).max(oldest), next)
            }
            RepairReason::Tail => tail_window(range),
            // The answer counted the flight's losses: cover them too.
            RepairReason::Reactive if range.reach_flight => tail_window(range),
            RepairReason::Reactive | RepairReason::Probe => gap_window(range),
        }?;
        Some(RepairPlan {
            window,
            code: Code::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::recovery::statistics::{normal_pdf, MIN_SAMPLES};
    use crate::recovery::DEFAULT_WINDOW;

    /// A mature estimate: its standard error is negligible.
    fn mature(rate: f64, burst: f64) -> LossEstimate {
        LossEstimate {
            rate,
            burst,
            samples: 1 << 40,
        }
    }

    fn horizon(span: u64, rtt_ms: u64) -> Horizon {
        Horizon {
            span,
            rtt: Duration::from_millis(rtt_ms),
        }
    }

    #[test]
    fn documented_figures() {
        let policy = SlidingWindow::default();
        let est = mature(0.2, 1.25);
        // Fixed windows at the default residual of 10 %.
        let r64 = policy.proactive_ratio_over(&est, 64);
        let r1024 = policy.proactive_ratio_over(&est, 1024);
        assert!((r64 - 0.344).abs() < 0.002, "{r64}");
        assert!((r1024 - 0.276).abs() < 0.002, "{r1024}");
        // The sliding window's spans of 256, by round trip.
        for (rtt, want) in [
            (20, 0.0),
            (50, 0.115),
            (78, 0.168),
            (120, 0.205),
            (240, 0.246),
            (600, 0.281),
        ] {
            let r = policy.proactive_ratio_for(&est, &horizon(256, rtt));
            assert!((r - want).abs() < 0.002, "{rtt} ms: {r}");
        }
        // The lowest quantile leaves a span of 256 with no repair up to
        // 20 % independent loss, not beyond.
        let at_20_ms = |rate: f64| {
            policy.proactive_ratio_for(&mature(rate, 1.0 / (1.0 - rate)), &horizon(256, 20))
        };
        assert_eq!(at_20_ms(0.2), 0.0);
        assert!(at_20_ms(0.25) > 0.0);
        let wide = policy.proactive_ratio_for(&est, &horizon(1024, 600));
        assert!((wide - 0.278).abs() < 0.002, "{wide}");
    }

    #[test]
    fn a_deep_quantile_with_a_young_estimate_sends_less_not_the_cap() {
        // On a short path the span is sized far below its expected losses;
        // with a young estimate of a heavy loss rate the estimate's error
        // alone would make the quadratic's leading term negative. The
        // span must still get at most what a mature estimate gives it,
        // never the cap that stands for a hopeless path.
        let policy = SlidingWindow::default();
        for rate in [0.3, 0.5, 0.7] {
            for rtt in [20, 40, 60] {
                let h = horizon(256, rtt);
                let young = LossEstimate {
                    rate,
                    burst: 1.0 / (1.0 - rate),
                    samples: 0,
                };
                let ratio = policy.proactive_ratio_for(&young, &h);
                let mature_ratio =
                    policy.proactive_ratio_for(&mature(rate, 1.0 / (1.0 - rate)), &h);
                assert!(
                    (0.0..=mature_ratio + 1e-12).contains(&ratio),
                    "p {rate}, {rtt} ms: {ratio} young, {mature_ratio} mature"
                );
                assert!(mature_ratio < rate / (1.0 - rate), "p {rate}, {rtt} ms");
            }
        }
    }

    #[test]
    fn a_young_estimate_buys_a_margin_that_fades() {
        // The figures of the module documentation.
        let policy = SlidingWindow::default();
        let ratio_after = |samples| {
            let est = LossEstimate {
                rate: 0.2,
                burst: 1.25,
                samples,
            };
            policy.proactive_ratio_for(&est, &horizon(256, 600))
        };
        for (samples, want) in [(32, 0.355), (160, 0.303), (2048, 0.282)] {
            let got = ratio_after(samples);
            assert!((got - want).abs() < 0.002, "{samples} fates: {got}");
        }
        // Fewer fates than the floor count as the floor; more than the
        // estimator's window holds count as the window.
        assert_eq!(ratio_after(0), ratio_after(MIN_SAMPLES));
        assert_eq!(ratio_after(1 << 20), ratio_after(2 * DEFAULT_WINDOW));
        // A clean path still pays nothing, however young.
        let clean = policy.proactive_ratio_for(&LossEstimate::CLEAN, &horizon(256, 600));
        assert_eq!(clean, 0.0);
    }

    #[test]
    fn the_quantile_is_the_least_cost_within_its_range() {
        let policy = SlidingWindow::default();
        let per_second = 0.01 / policy.config.delay_per_percent.as_secs_f64();
        let (low, high) = (LOWEST_QUANTILE, inverse_normal_cdf(1.0 - FEWEST_LEFT));
        for (rate, burst) in [(0.05, 1.05), (0.2, 1.25), (0.4, 10.0), (0.5, 2.0)] {
            let est = mature(rate, burst);
            for span in [256, 1024] {
                for rtt in [20, 100, 240, 600, 1200, 5000] {
                    let h = horizon(span, rtt);
                    // The cost of the module documentation, by its definition.
                    let n = span as f64;
                    let f = (2.0 * burst * (1.0 - rate) - 1.0).max(1.0);
                    let spread = (n / (1.0 - rate) * rate * (1.0 - rate) * f).sqrt() / n;
                    let wait = per_second * rtt as f64 / 1000.0;
                    let cost = |z: f64| {
                        let (cdf, pdf) = (normal_cdf(z), normal_pdf(z));
                        spread * (z * cdf + pdf) + wait * (1.0 - cdf)
                    };
                    let best = (0..=4000)
                        .map(|i| low + (high - low) * f64::from(i) / 4000.0)
                        .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
                        .unwrap();
                    let z = policy.quantile_for(&est, &h);
                    // Far below zero the cost is flat to within the error
                    // of the normal approximation, and the grid's least is
                    // as likely to be that error as the minimum: there the
                    // quantile must cost no more than it, to one part in 10⁸.
                    assert!(
                        (z - best).abs() < 2e-3 || cost(z) <= cost(best) * (1.0 + 1e-8),
                        "p {rate}, B {burst}, span {span}, {rtt} ms: z {z} vs {best}: {} vs {}",
                        cost(z),
                        cost(best)
                    );
                }
            }
        }
        // No loss: no margin is wanted, and the top of the range is harmless.
        assert_eq!(
            policy.quantile_for(&LossEstimate::CLEAN, &horizon(256, 600)),
            high
        );
        // A round trip of zero makes the wait free.
        assert_eq!(
            policy.quantile_for(&mature(0.2, 1.25), &horizon(256, 0)),
            low
        );
        // A longer round trip buys more margin, never less.
        let est = mature(0.1, 1.1);
        let mut last = 0.0;
        for rtt in [10, 100, 200, 400, 800, 3000, 10_000] {
            let r = policy.proactive_ratio_for(&est, &horizon(1024, rtt));
            assert!(r >= last, "{rtt} ms: {r} < {last}");
            last = r;
        }
    }

    #[test]
    fn a_wider_spread_leaves_more_spans_to_feedback() {
        let policy = SlidingWindow::default();
        let residual = |est: &LossEstimate| policy.residual_for(est, &horizon(256, 600));
        // The price is set so that independent losses of 20 % leave a fifth.
        let iid = residual(&mature(0.2, 1.25));
        assert!((iid - 0.2).abs() < 0.005, "{iid}");
        // Bursts of 10 at 40 %: 87 %.
        let bursty = residual(&mature(0.4, 10.0));
        assert!((bursty - 0.87).abs() < 0.01, "{bursty}");
        let mut last = 0.0;
        for burst in [1.0, 1.5, 2.0, 5.0, 10.0, 20.0] {
            let r = residual(&mature(0.3, burst));
            assert!(r >= last, "burst {burst}: {r} < {last}");
            last = r;
        }
    }

    #[test]
    fn the_tail_makes_up_what_the_last_flight_is_expected_to_lack() {
        let policy = SlidingWindow::default();
        let flight = |sources, repairs| Flight {
            sources,
            repairs,
            rtt: Duration::from_millis(600),
            at_stake: 0,
            owed: 0,
            answers: 0,
            span: 0,
        };
        // 20 % independent, 1000 sources with 300 repairs: 200 lost against
        // 240 arriving, and the margin at 1 %, 2.326 · √(1300 · 0.16 ·
        // (1 + 1300/4096)) = 38.5, fits the whole flight. Its last symbols
        // are short by more: a walk of drift 0.8 · 0.3 − 0.2 = 0.04 and
        // variance 1.3 · 0.16 = 0.208 per symbol, 0.208 · ln 100 / 0.08 =
        // 11.97 at the estimate (under the bound without drift, √208 · 2.576
        // = 37.2); over the estimate's error, ±3 standard errors of
        // √(0.16/4096) = 0.0063, 13.6; over 0.8: 18.
        let iid = mature(0.2, 1.25);
        assert_eq!(policy.tail_repairs_for_flight(&flight(1000, 300), &iid), 18);
        // A thin margin, 400 sources with 101 repairs: drift 0.8 · 0.2525 −
        // 0.2 = 0.002 would ask for 0.2004 · ln 100 / 0.004 = 230.7, but
        // the walk is 400 symbols long: √(400 · 0.2004) · 2.576 = 23.06
        // (23.12 over the estimate's error; the whole flight: −0.8 + 21.3),
        // over 0.8: 29.
        assert_eq!(policy.tail_repairs_for_flight(&flight(400, 101), &iid), 29);
        // 5 % in bursts of 10 (F = 18), 2600 sources with 156 repairs:
        // 130 − 148.2 + 2.326 · √(2756 · 0.0475 · 18 · (1 + 2756/4096)) =
        // 127.9, over 0.95: 134.6.
        let bursty = mature(0.05, 10.0);
        assert_eq!(
            policy.tail_repairs_for_flight(&flight(2600, 156), &bursty),
            135
        );
        // The same from 64 fates: the estimate's error dwarfs the
        // channel's, √(1 + 2756/64) = 6.6 times the spread: 770.
        let young = LossEstimate {
            samples: 64,
            ..bursty
        };
        assert_eq!(
            policy.tail_repairs_for_flight(&flight(2600, 156), &young),
            770
        );
        // The seeds' 10 % in place of 1 %: the whole flight 1.2816 · 62.78
        // = 80.5, 62.3 short; its last symbols more, a walk of drift 0.95 ·
        // 0.06 − 0.05 = 0.007 and variance 1.06 · 0.0475 · 18 = 0.906, held
        // to the walk without drift, √(0.906 · 2600) · 1.645 = 79.8, over
        // 0.95: 84.0.
        let ten = SlidingWindow::new({
            let mut repair = RepairConfig::default();
            repair
                .set_tail_residual(0.1)
                .expect("a valid tail residual");
            repair
        });
        assert_eq!(ten.tail_repairs_for_flight(&flight(2600, 156), &bursty), 85);
        // Nothing in flight, or a clean path: nothing.
        assert_eq!(policy.tail_repairs_for_flight(&flight(0, 10), &bursty), 0);
        assert_eq!(
            policy.tail_repairs_for_flight(&flight(2600, 0), &LossEstimate::CLEAN),
            0
        );
        // A hopeless path is capped at max_ratio per source.
        let lossy = mature(0.9, 50.0);
        assert_eq!(policy.tail_repairs_for_flight(&flight(10, 0), &lossy), 15);
    }

    /// The tail's residual falls as the transfer its wait would delay
    /// grows: 20 % independent loss, 600 ms, a flight of 2 700 sources
    /// with 760 repairs (spread 31.96).
    #[test]
    fn a_longer_transfer_buys_a_surer_tail() {
        let policy = SlidingWindow::default();
        let iid = mature(0.2, 1.25);
        let flight = |at_stake| Flight {
            sources: 2700,
            repairs: 760,
            rtt: Duration::from_millis(600),
            at_stake,
            owed: 0,
            answers: 0,
            span: 0,
        };
        // 10 MB (7 430 symbols): the wait is worth 0.133 · 0.6 · 7 430 =
        // 594 symbols, φ(z)/Φ(z) = 31.96/594 = 0.054 lies above the 1 %
        // quantile's 0.027: the configured residual holds, the last
        // symbols' walk asks 0.205 · ln 100 / 0.0504 = 18.7 at the
        // estimate, 27.2 over its error (0.0063), over 0.8: 34.
        assert_eq!(policy.tail_repairs_for_flight(&flight(7430), &iid), 34);
        assert_eq!(policy.tail_repairs_for_flight(&flight(0), &iid), 34);
        // 100 MB (74 000): 5 920 symbols of wait, 0.0054, z = 2.934
        // (0.17 % short): the whole flight −68 + 2.934 · 31.96 = 25.8, the
        // last symbols 0.205 · 6.39 / 0.0504 = 26.0 at the estimate, 44.8
        // over its error, over 0.8: 56.
        assert_eq!(policy.tail_repairs_for_flight(&flight(74_000), &iid), 56);
        // However long, no surer than FEWEST_TAILS_SHORT (z = 3.719): the
        // last symbols' walk over the estimate's error, 71.3, over 0.8: 90,
        // more than the whole flight asks.
        let endless = policy.tail_repairs_for_flight(&flight(u64::MAX), &iid);
        let z = inverse_normal_cdf(1.0 - FEWEST_TAILS_SHORT);
        let whole = 540.0 - 608.0 + z * 31.957;
        assert_eq!(endless, 90);
        assert!(endless > (whole / 0.8).ceil() as u64, "{whole}");
    }

    /// On a 600 ms path with 20 % independent loss each span carries a
    /// margin of `(1−p)·ratio − p` per source symbol: the peer's newest gaps
    /// are left to it, the settled part is answered whole.
    #[test]
    fn an_answer_leaves_the_newest_gaps_to_the_margin_of_the_spans() {
        let policy = SlidingWindow::default();
        let est = mature(0.2, 1.25);
        let long = horizon(256, 600);
        let margin = (0.8 * policy.proactive_ratio_for(&est, &long) - 0.2) * 256.0;
        assert!((6.0..7.0).contains(&margin), "{margin}");
        let feedback = |deficit, settled, sent| Feedback {
            deficit,
            settled,
            repairs_in_flight: 0,
            sent_since_report: sent,
            horizon: long,
            decoded_through: ltx_coding::SymbolId(0),
            end: ltx_coding::SymbolId(0),
            covered: None,
        };
        // 10 short, 2 of them settled: 2 + ⌈8 − 6.4⌉.
        assert_eq!(policy.deficit_to_answer(&feedback(10, 2, 3000), &est), 4);
        // The newest 4 are within the margin of the span sent since.
        assert_eq!(policy.deficit_to_answer(&feedback(6, 2, 3000), &est), 2);
        // Half a span sent since the report brings half the margin.
        assert_eq!(policy.deficit_to_answer(&feedback(6, 2, 128), &est), 3);
        // Nothing sent since: nothing is coming for them.
        assert_eq!(policy.deficit_to_answer(&feedback(10, 2, 0), &est), 10);
        // All settled: all answered.
        assert_eq!(policy.deficit_to_answer(&feedback(10, 10, 3000), &est), 10);
        // Unknown symbols four spans long (a first flight sent before any
        // repair): a quarter of the newest gaps is within the spans'
        // reach, 2 of 8, and the rest is answered: 2 + 8 − 2.
        let first_flight = Feedback {
            end: ltx_coding::SymbolId(1024),
            ..feedback(10, 2, 3000)
        };
        assert_eq!(policy.deficit_to_answer(&first_flight, &est), 8);
        // Within one span, the margin counts as before.
        let recent = Feedback {
            end: ltx_coding::SymbolId(256),
            ..feedback(10, 2, 3000)
        };
        assert_eq!(policy.deficit_to_answer(&recent, &est), 4);
        // A 20 ms path sends no repair ahead of loss.
        let short = Feedback {
            horizon: horizon(256, 20),
            ..feedback(10, 2, 3000)
        };
        assert_eq!(policy.deficit_to_answer(&short, &est), 10);
        // 40 % in bursts of 10: the spans are sized below the channel's
        // minimum, with no margin to leave the newest gaps to.
        let bursty = mature(0.4, 10.0);
        assert!(policy.proactive_ratio_for(&bursty, &long) < 0.4 / 0.6);
        assert_eq!(
            policy.deficit_to_answer(&feedback(10, 2, 3000), &bursty),
            10
        );
    }

    #[test]
    fn an_answer_to_a_covered_flight_counts_what_it_carries() {
        let policy = SlidingWindow::default();
        let est = mature(0.2, 1.25);
        let flight = |sources, repairs| Flight {
            sources,
            repairs,
            rtt: Duration::from_millis(20),
            at_stake: 0,
            owed: 0,
            answers: 0,
            span: 0,
        };
        // 100 sources in flight lose 20 in expectation; 30 repairs bring 24:
        // 4 to spare against a deficit of 3, nothing to send.
        assert_eq!(
            policy.reactive_repairs_covered(3, &flight(100, 30), &est),
            0
        );
        // A deficit of 10: 6 short in expectation, less one standard
        // deviation of the flight, √(130 · 0.2 · 0.8) = 4.56: 1.44 / 0.8 =
        // 1.8, to the nearest: 2.
        assert_eq!(
            policy.reactive_repairs_covered(10, &flight(100, 30), &est),
            2
        );
        // Sized for the expected need: 6 / 0.8 = 7.5, to the nearest: 8.
        let expected = SlidingWindow::new({
            let mut repair = RepairConfig::default();
            repair
                .set_cheap_answer_quantile(0.0)
                .expect("a valid cheap answer quantile");
            repair
        });
        assert_eq!(
            expected.reactive_repairs_covered(10, &flight(100, 30), &est),
            8
        );
        // A deficit that outgrows the flight's spread is answered: 16 short,
        // 11.44 / 0.8 = 14.3: 14.
        assert_eq!(
            policy.reactive_repairs_covered(20, &flight(100, 30), &est),
            14
        );
        // Nothing in flight: the deficit itself, 10 / 0.8 = 12.5: 13.
        assert_eq!(policy.reactive_repairs_covered(10, &flight(0, 0), &est), 13);
        // One equation short: 1 / 0.8 = 1.25, one repair, not two.
        assert_eq!(policy.reactive_repairs_covered(1, &flight(0, 0), &est), 1);
        // One short with one repair in flight: 0.2 short, 0.25 of a repair:
        // none; the repair in flight most likely solves it.
        assert_eq!(policy.reactive_repairs_covered(1, &flight(0, 1), &est), 0);
        // On a 600 ms path a shortfall is rounded up, with no discount for
        // the flight's spread: 1.25 is 2, and a fifth of an equation short
        // is a repair; 6 short is 7.5: 8.
        let far = |sources, repairs| Flight {
            rtt: Duration::from_millis(600),
            at_stake: 0,
            owed: 0,
            answers: 0,
            span: 0,
            ..flight(sources, repairs)
        };
        assert_eq!(policy.reactive_repairs_covered(1, &far(0, 0), &est), 2);
        assert_eq!(policy.reactive_repairs_covered(1, &far(0, 1), &est), 1);
        assert_eq!(policy.reactive_repairs_covered(10, &far(100, 30), &est), 8);
        // No deficit, no answer, whatever is in flight.
        assert_eq!(
            policy.reactive_repairs_covered(0, &flight(1000, 0), &est),
            0
        );
        assert_eq!(
            policy.reactive_repairs_covered(u64::MAX, &flight(0, 0), &est),
            u64::MAX
        );
    }
}
