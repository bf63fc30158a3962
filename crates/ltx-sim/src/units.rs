//! Parsers for the quantities a scenario is written in — rates, durations,
//! fractions, sizes, queue limits — with errors that quote the input and
//! say what was expected. Units are case-insensitive; negative, NaN, empty,
//! unknown units and overflow are refused.
//!
//! Numbers are plain decimals (`2.5`, `0.1`, `600`), no exponents, so that
//! `inf`, `nan` and `1e400` cannot slip through.

use std::time::Duration;

use ltx_link::QueueLimit;
use thiserror::Error;

const RATE: &str =
    "a rate in bits per second with its unit, such as 50mbit, 50M, 50Mbps, 2.5Mbit/s, 500kbit or 1gbit";
const DURATION: &str = "a duration such as 600ms, 1.5s, 5min, 1h, 250us, 10ns or 0";
const FRACTION: &str = "a fraction from 0 to 1 such as 10%, 0.1 or 0";
const SIZE: &str = "a size in bytes such as 1500, 1500B, 64KiB, 10MB, 100MiB or 1GB";
const QUEUE: &str = "a queue limit such as 1bdp, 0.5bdp, 100pkt, 64KB or unlimited";

/// A quantity that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    /// Nothing was given.
    #[error("empty input: expected {expected}")]
    Empty {
        /// What would have been accepted.
        expected: &'static str,
    },
    /// Not a plain decimal number followed by a unit.
    #[error("{input:?} is malformed: expected {expected}")]
    Malformed {
        /// The input as given.
        input: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A number without the unit it needs.
    #[error("{input:?} has no unit: expected {expected}")]
    MissingUnit {
        /// The input as given.
        input: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A unit this quantity does not have.
    #[error("{input:?} has an unknown unit {unit:?}: expected {expected}")]
    UnknownUnit {
        /// The input as given.
        input: String,
        /// The unit as given.
        unit: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A negative number.
    #[error("{input:?} is negative: expected {expected}")]
    Negative {
        /// The input as given.
        input: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A number too large (or, for a rate, zero).
    #[error("{input:?} is out of range: expected {expected}")]
    OutOfRange {
        /// The input as given.
        input: String,
        /// What would have been accepted.
        expected: &'static str,
    },
}

/// How big a bottleneck queue is, as written in a scenario; turned into a
/// [`QueueLimit`] once the path's rate and round trip are known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueSpec {
    /// This many bandwidth-delay products (`0.5bdp`).
    Bdp(f64),
    /// This many packets (`100pkt`).
    Packets(usize),
    /// This many bytes (`64KB`).
    Bytes(u64),
    /// Never full (`unlimited`).
    Unlimited,
}

impl QueueSpec {
    /// The queue limit on a path of `rate_bps` bits per second and round
    /// trip `rtt`. A BDP-sized queue holds at least one `packet_size`
    /// packet, because a queue smaller than a packet would drop them all.
    pub fn limit(&self, rate_bps: u64, rtt: Duration, packet_size: usize) -> QueueLimit {
        match *self {
            QueueSpec::Bdp(bdps) => {
                let bytes = rate_bps as f64 * rtt.as_secs_f64() / 8.0 * bdps;
                // `as` saturates, so an absurd product still gives a limit.
                QueueLimit::Bytes((bytes.round() as usize).max(packet_size))
            }
            QueueSpec::Packets(packets) => QueueLimit::Packets(packets),
            QueueSpec::Bytes(bytes) => {
                QueueLimit::Bytes(usize::try_from(bytes).unwrap_or(usize::MAX))
            }
            QueueSpec::Unlimited => QueueLimit::Unlimited,
        }
    }
}

/// Parses a rate in bits per second: a number and a decimal unit,
/// `50mbit`, `50M`, `50Mbps`, `50Mbit/s` (and `k`, `g`, or `bit`/`bps`
/// alone). A bare number is refused: bits or bytes, per second or not,
/// are too easily confused.
pub fn parse_rate(input: &str) -> Result<u64, UnitError> {
    let (number, unit) = split(input, RATE)?;
    let lower = unit.to_ascii_lowercase();
    if lower.is_empty() {
        return Err(UnitError::MissingUnit {
            input: input.to_owned(),
            expected: RATE,
        });
    }
    let (prefix, rest) = match lower.as_bytes()[0] {
        b'k' => (1_000, &lower[1..]),
        b'm' => (1_000_000, &lower[1..]),
        b'g' => (1_000_000_000, &lower[1..]),
        _ => (1, lower.as_str()),
    };
    let per_second_bits = matches!(rest, "bit" | "bps" | "bit/s" | "bits/s");
    let bare_prefix = rest.is_empty() && prefix > 1;
    if !(per_second_bits || bare_prefix) {
        return Err(unknown_unit(input, unit, RATE));
    }
    match scaled(input, number, prefix, RATE)? {
        0 => Err(UnitError::OutOfRange {
            input: input.to_owned(),
            expected: "a rate above zero",
        }),
        bits => Ok(bits),
    }
}

/// Parses a duration: `600ms`, `1s`, `1.5s`, `5min`, `1h`, `250us` (or `µs`), `10ns`, or
/// a bare `0`. Any other number needs a unit, since none is obvious.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let (number, unit) = split(input, DURATION)?;
    let scale = match unit.to_lowercase().as_str() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => {
            return match scaled(input, number, 1, DURATION)? {
                0 => Ok(Duration::ZERO),
                _ => Err(UnitError::MissingUnit {
                    input: input.to_owned(),
                    expected: DURATION,
                }),
            }
        }
        _ => return Err(unknown_unit(input, unit, DURATION)),
    };
    scaled(input, number, scale, DURATION).map(Duration::from_nanos)
}

/// Parses a fraction from 0 to 1: `10%`, `0.1` or `0`.
pub fn parse_fraction(input: &str) -> Result<f64, UnitError> {
    let (number, unit) = split(input, FRACTION)?;
    let divisor = match unit {
        "" => 1.0,
        "%" => 100.0,
        _ => return Err(unknown_unit(input, unit, FRACTION)),
    };
    let value = parse_f64(input, number, FRACTION)? / divisor;
    if value > 1.0 {
        return Err(UnitError::OutOfRange {
            input: input.to_owned(),
            expected: FRACTION,
        });
    }
    Ok(value)
}

/// Parses a size in bytes: `1500`, `1500B`, `64KiB`, `10MB`, `100MiB`,
/// `1GB`. `KB`, `MB`, `GB`, `TB` are powers of 10; `KiB`, `MiB`, `GiB`,
/// `TiB` powers of 2. A fractional size is rounded to the nearest byte.
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let (number, unit) = split(input, SIZE)?;
    let scale = size_scale(unit).ok_or_else(|| unknown_unit(input, unit, SIZE))?;
    scaled(input, number, scale, SIZE)
}

/// Parses a queue limit: `1bdp`, `0.5bdp` (bandwidth-delay products),
/// `100pkt` (packets), a size such as `64KB` (bytes), or `unlimited`.
/// A bare number is refused: packets or bytes would both be plausible.
pub fn parse_queue(input: &str) -> Result<QueueSpec, UnitError> {
    if input.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(QueueSpec::Unlimited);
    }
    let (number, unit) = split(input, QUEUE)?;
    match unit.to_ascii_lowercase().as_str() {
        "" => Err(UnitError::MissingUnit {
            input: input.to_owned(),
            expected: QUEUE,
        }),
        "bdp" => parse_f64(input, number, QUEUE).map(QueueSpec::Bdp),
        "pkt" | "pkts" | "packets" => {
            if number.contains('.') {
                return Err(UnitError::Malformed {
                    input: input.to_owned(),
                    expected: "a whole number of packets such as 100pkt",
                });
            }
            let packets = scaled(input, number, 1, QUEUE)?;
            usize::try_from(packets)
                .map(QueueSpec::Packets)
                .map_err(|_| out_of_range(input, QUEUE))
        }
        _ => match size_scale(unit) {
            Some(scale) => scaled(input, number, scale, QUEUE).map(QueueSpec::Bytes),
            None => Err(unknown_unit(input, unit, QUEUE)),
        },
    }
}

fn size_scale(unit: &str) -> Option<u128> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return None,
    })
}

/// Splits `input` into a plain non-negative decimal and the unit after it.
fn split<'a>(input: &'a str, expected: &'static str) -> Result<(&'a str, &'a str), UnitError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(UnitError::Empty { expected });
    }
    if trimmed.starts_with('-') {
        return Err(UnitError::Negative {
            input: input.to_owned(),
            expected,
        });
    }
    let end = trimmed
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(end);
    let digits = number.bytes().filter(u8::is_ascii_digit).count();
    if digits == 0 || number.len() - digits > 1 {
        return Err(UnitError::Malformed {
            input: input.to_owned(),
            expected,
        });
    }
    Ok((number, unit.trim()))
}

/// `number · scale` rounded to the nearest integer, computed exactly in
/// decimal, so that `0.1s` is 100 000 000 ns and not one off.
fn scaled(
    input: &str,
    number: &str,
    scale: u128,
    expected: &'static str,
) -> Result<u64, UnitError> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    // Digits past the 18th decimal change nothing at any scale used here,
    // and dropping them keeps 10^digits within u128.
    let frac = &frac[..frac.len().min(18)];
    let overflow = || out_of_range(input, expected);
    let mut mantissa: u128 = 0;
    for digit in int.bytes().chain(frac.bytes()) {
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(u128::from(digit - b'0')))
            .ok_or_else(overflow)?;
    }
    let divisor = 10u128.pow(frac.len() as u32);
    let value = mantissa.checked_mul(scale).ok_or_else(overflow)?;
    let value = (value + divisor / 2) / divisor;
    u64::try_from(value).map_err(|_| overflow())
}

fn parse_f64(input: &str, number: &str, expected: &'static str) -> Result<f64, UnitError> {
    // `split` let through only digits and one dot, so no NaN or infinity;
    // a number too long for f64 still parses, to a large finite value or
    // infinity, which is refused.
    match number.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(out_of_range(input, expected)),
    }
}

fn unknown_unit(input: &str, unit: &str, expected: &'static str) -> UnitError {
    UnitError::UnknownUnit {
        input: input.to_owned(),
        unit: unit.to_owned(),
        expected,
    }
}

fn out_of_range(input: &str, expected: &'static str) -> UnitError {
    UnitError::OutOfRange {
        input: input.to_owned(),
        expected,
    }
}
