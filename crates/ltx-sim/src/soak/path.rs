//! A soak run's path: each direction's rate, delay, queue, loss, jitter,
//! duplication, corruption and outages, and how a seed draws them.

use super::{MAX_BURST, MAX_LOSS, MAX_RATE_BPS, MAX_SIZE, MIN_RATE_BPS, WIRE_PACKET};
use ltx_link::{Aqm, Jitter, LinkConfig, LossModel, Outage, QueueLimit, Rate};
use rand::rngs::SmallRng;
use rand::Rng;
use std::fmt;
use std::time::Duration;

/// Highest duplication or corruption probability drawn.
const MAX_DUPLICATE: f64 = 0.1;

/// One direction of a soak path, as drawn; [`to_link`](Direction::to_link)
/// makes the simulator's link of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Direction {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail limit of the bottleneck queue.
    pub queue: QueueLimit,
    /// Whether the bottleneck runs CoDel (marks ECN-capable packets).
    pub codel: bool,
    /// Mean random loss rate.
    pub loss: f64,
    /// Mean loss burst, packets (1: independent losses).
    pub burst: f64,
    /// Random extra delay, if any.
    pub jitter: Option<Jitter>,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Probability that a packet has one bit flipped.
    pub corrupt: f64,
    /// Times this direction is down, from the start of the run.
    pub outages: Vec<Outage>,
}

impl Direction {
    /// The link the simulator runs for this direction.
    pub fn to_link(&self) -> LinkConfig {
        LinkConfig {
            delay: self.delay,
            jitter: self.jitter,
            rate: Some(Rate(self.rate_bps)),
            queue: self.queue,
            aqm: self.codel.then(Aqm::codel),
            loss: LossModel::bursty(self.loss, self.burst),
            duplicate: self.duplicate,
            corrupt: self.corrupt,
            outages: self.outages.clone(),
        }
    }

    /// Total time this direction is down.
    pub fn down_time(&self) -> Duration {
        self.outages.iter().map(|o| o.end - o.start).sum()
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.3} Mbit/s, delay {:.3} ms, queue ",
            self.rate_bps as f64 / 1e6,
            self.delay.as_secs_f64() * 1e3
        )?;
        match self.queue {
            QueueLimit::Packets(n) => write!(f, "{n} packets")?,
            QueueLimit::Bytes(n) => write!(f, "{n} bytes")?,
            QueueLimit::Unlimited => write!(f, "unlimited")?,
        }
        if self.codel {
            write!(f, " (CoDel)")?;
        }
        if self.loss > 0.0 {
            write!(f, ", loss {:.2} %", self.loss * 100.0)?;
            if self.burst > 1.0 {
                write!(f, " in bursts of {:.1}", self.burst)?;
            }
        }
        if let Some(jitter) = self.jitter {
            write!(
                f,
                ", jitter up to {:.3} ms{}",
                jitter.max.as_secs_f64() * 1e3,
                if jitter.reorder { " (reordering)" } else { "" }
            )?;
        }
        if self.duplicate > 0.0 {
            write!(f, ", duplicates {:.2} %", self.duplicate * 100.0)?;
        }
        if self.corrupt > 0.0 {
            write!(f, ", bit flips {:.2} %", self.corrupt * 100.0)?;
        }
        for outage in &self.outages {
            write!(
                f,
                ", down {:.3}–{:.3} s",
                outage.start.as_secs_f64(),
                outage.end.as_secs_f64()
            )?;
        }
        Ok(())
    }
}

pub(super) fn log_uniform(rng: &mut SmallRng, low: f64, high: f64) -> f64 {
    (rng.random_range(low.ln()..=high.ln())).exp()
}

pub(super) fn draw_rate(rng: &mut SmallRng) -> u64 {
    log_uniform(rng, MIN_RATE_BPS as f64, MAX_RATE_BPS as f64).round() as u64
}

pub(super) fn draw_direction(
    rng: &mut SmallRng,
    rate_bps: u64,
    delay: Duration,
    rtt: Duration,
) -> Direction {
    let bdp = rate_bps as f64 * rtt.as_secs_f64() / 8.0;
    let queue = match rng.random_range(0..10) {
        0..6 => {
            let bytes = bdp * log_uniform(rng, 0.25, 4.0);
            QueueLimit::Bytes((bytes.round() as usize).max(WIRE_PACKET))
        }
        6..8 => QueueLimit::Packets(rng.random_range(2..=256)),
        _ => QueueLimit::Unlimited,
    };
    let codel = rng.random_bool(0.15);
    let (loss, burst) = if rng.random_bool(0.3) {
        (0.0, 1.0)
    } else {
        let loss = rng.random_range(0.0..=MAX_LOSS);
        let burst = if rng.random_bool(0.4) {
            1.0
        } else {
            log_uniform(rng, 1.0, MAX_BURST)
        };
        (loss, burst)
    };
    let jitter = rng.random_bool(0.25).then(|| {
        let most = (rtt.as_secs_f64() / 2.0).max(1e-4);
        Jitter {
            max: Duration::from_secs_f64(log_uniform(rng, 1e-4, most)),
            reorder: rng.random_bool(0.5),
        }
    });
    let duplicate = if rng.random_bool(0.15) {
        rng.random_range(0.0..=MAX_DUPLICATE)
    } else {
        0.0
    };
    let corrupt = if rng.random_bool(0.15) {
        rng.random_range(0.0..=MAX_DUPLICATE)
    } else {
        0.0
    };
    Direction {
        rate_bps,
        delay,
        queue,
        codel,
        loss,
        burst,
        jitter,
        duplicate,
        corrupt,
        outages: Vec::new(),
    }
}

pub(super) fn draw_size(rng: &mut SmallRng, symbol: usize) -> u64 {
    let symbol = symbol as u64;
    match rng.random_range(0..1000) {
        0..150 => match rng.random_range(0..4) {
            0 => rng.random_range(0..=2),
            k => (k * symbol).saturating_add_signed(rng.random_range(-16..=16)),
        },
        150..600 => log_uniform(rng, 2.0, 64e3).round() as u64,
        600..923 => log_uniform(rng, 64e3, 1e6).round() as u64,
        923..998 => log_uniform(rng, 1e6, 8e6).round() as u64,
        _ => log_uniform(rng, 8e6, MAX_SIZE as f64).round() as u64,
    }
}
