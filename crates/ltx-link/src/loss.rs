//! Random loss models: which packets the medium erases, independently of
//! the queue. Each model is a Markov chain advanced once per packet.

use rand::Rng;

use crate::LinkConfigError;

/// How a link erases packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// No random loss.
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli {
        /// Loss probability, 0..=1.
        p: f64,
    },
    /// The two-state Gilbert–Elliott chain: a good and a bad state, with
    /// per-packet transitions and a loss probability in each.
    GilbertElliott {
        /// P(good → bad) per packet.
        p: f64,
        /// P(bad → good) per packet.
        r: f64,
        /// Loss probability in the good state (0 for the plain Gilbert model).
        loss_good: f64,
        /// Loss probability in the bad state (1 for the plain Gilbert model).
        loss_bad: f64,
    },
    /// The four-state Markov model of Linux netem's `loss state`: 1 = gap
    /// (received), 2 = burst (received), 3 = burst (lost), 4 = isolated loss
    /// in a gap. A packet is lost when the chain enters state 3 or 4.
    FourState {
        /// P(1 → 3): a gap ends in a burst.
        p13: f64,
        /// P(3 → 1): a burst ends.
        p31: f64,
        /// P(3 → 2): a received packet inside a burst.
        p32: f64,
        /// P(2 → 3): back to losing inside a burst.
        p23: f64,
        /// P(1 → 4): an isolated loss.
        p14: f64,
    },
}

impl LossModel {
    /// The Gilbert model with mean loss rate `mean_loss` (L) and mean burst
    /// length `mean_burst` (E, in packets): r = 1/E, p = L / (E·(1−L)),
    /// every packet in the bad state lost. `mean_burst` ≤ 1 gives
    /// independent losses.
    pub fn bursty(mean_loss: f64, mean_burst: f64) -> LossModel {
        if mean_loss <= 0.0 {
            return LossModel::None;
        }
        if mean_burst <= 1.0 {
            return LossModel::Bernoulli { p: mean_loss };
        }
        LossModel::GilbertElliott {
            p: (mean_loss / (mean_burst * (1.0 - mean_loss))).min(1.0),
            r: 1.0 / mean_burst,
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }

    /// The long-run share of packets lost.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r == 0.0 {
                    return loss_good;
                }
                let bad = p / (p + r);
                bad * loss_bad + (1.0 - bad) * loss_good
            }
            LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => {
                // Stationary distribution from the balance equations, with
                // π1 = 1 (normalised below).
                let pi1 = 1.0;
                let pi4 = p14 * pi1;
                // Flow into and out of the burst: π3·p31 = π1·p13, and
                // π2·p23 = π3·p32.
                if p31 == 0.0 {
                    return if p13 > 0.0 { 1.0 } else { pi4 / (pi1 + pi4) };
                }
                let pi3 = p13 * pi1 / p31;
                let pi2 = if p23 > 0.0 { pi3 * p32 / p23 } else { 0.0 };
                (pi3 + pi4) / (pi1 + pi2 + pi3 + pi4)
            }
        }
    }

    /// Checks that every probability lies in 0..=1.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        let check = |name: &'static str, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(LinkConfigError::NotAProbability { name, value })
            }
        };
        match *self {
            LossModel::None => Ok(()),
            LossModel::Bernoulli { p } => check("p", p),
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                check("p", p)?;
                check("r", r)?;
                check("loss_good", loss_good)?;
                check("loss_bad", loss_bad)
            }
            LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => {
                check("p13", p13)?;
                check("p31", p31)?;
                check("p32", p32)?;
                check("p23", p23)?;
                check("p14", p14)?;
                if p13 + p14 > 1.0 {
                    return Err(LinkConfigError::TransitionsExceedOne { state: 1 });
                }
                if p31 + p32 > 1.0 {
                    return Err(LinkConfigError::TransitionsExceedOne { state: 3 });
                }
                Ok(())
            }
        }
    }
}

/// The state of a [`LossModel`]'s chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LossState {
    /// Good state (Gilbert–Elliott) or state 1 (four-state).
    Good,
    /// Bad state (Gilbert–Elliott).
    Bad,
    /// Four-state chain, states 2, 3 and 4.
    BurstReceived,
    BurstLost,
    IsolatedLoss,
}

impl LossState {
    pub(crate) fn start() -> LossState {
        LossState::Good
    }

    /// Advances the chain by one packet; returns whether that packet is lost.
    pub(crate) fn next_lost(&mut self, model: &LossModel, rng: &mut impl Rng) -> bool {
        match *model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => rng.random_bool(p),
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                *self = match *self {
                    LossState::Bad if rng.random_bool(r) => LossState::Good,
                    LossState::Bad => LossState::Bad,
                    _ if rng.random_bool(p) => LossState::Bad,
                    _ => LossState::Good,
                };
                let loss = if *self == LossState::Bad {
                    loss_bad
                } else {
                    loss_good
                };
                rng.random_bool(loss)
            }
            LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => {
                let u: f64 = rng.random();
                *self = match *self {
                    LossState::Good | LossState::Bad if u < p13 => LossState::BurstLost,
                    LossState::Good | LossState::Bad if u < p13 + p14 => LossState::IsolatedLoss,
                    LossState::Good | LossState::Bad => LossState::Good,
                    LossState::BurstReceived if u < p23 => LossState::BurstLost,
                    LossState::BurstReceived => LossState::BurstReceived,
                    LossState::BurstLost if u < p31 => LossState::Good,
                    LossState::BurstLost if u < p31 + p32 => LossState::BurstReceived,
                    LossState::BurstLost => LossState::BurstLost,
                    LossState::IsolatedLoss => LossState::Good,
                };
                matches!(*self, LossState::BurstLost | LossState::IsolatedLoss)
            }
        }
    }
}
