//! The coding coefficients of RFC 8681 (`generate_coding_coefficients`):
//! a repair key and a density regenerate, at both ends, the coefficients of
//! one repair symbol.

use super::TinyMt32;
use crate::RepairKey;

/// The RFC 8681 density parameter DT, 0..=15: each coefficient is non-zero
/// with probability (DT + 1) / 16, and DT = 15 makes every one non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Density(u8);

/// A density outside 0..=15.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("density {0} is out of range (RFC 8681 allows 0 to 15)")]
pub struct InvalidDensity(pub u8);

impl Density {
    /// Every coefficient non-zero: the dense code, best at recovering losses.
    pub const FULL: Density = Density(15);

    /// The density `dt`, if it is in 0..=15.
    pub fn new(dt: u8) -> Result<Density, InvalidDensity> {
        if dt <= 15 {
            Ok(Density(dt))
        } else {
            Err(InvalidDensity(dt))
        }
    }

    /// The DT value, 0..=15.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl Default for Density {
    fn default() -> Density {
        Density::FULL
    }
}

/// Fills `out` with the GF(2^8) coefficients (RFC 8681, m = 8) of the repair
/// symbol with this key, one per source symbol of its window, oldest first.
///
/// ```
/// use ltx_coding::rfc8681::{coding_coefficients, Density};
/// use ltx_coding::RepairKey;
///
/// let mut coefficients = [0u8; 4];
/// coding_coefficients(RepairKey(1), Density::FULL, &mut coefficients);
/// assert!(coefficients.iter().all(|&c| c != 0));
/// ```
pub fn coding_coefficients(key: RepairKey, density: Density, out: &mut [u8]) {
    let mut rng = TinyMt32::new(u32::from(key.0));
    let nonzero = |rng: &mut TinyMt32| loop {
        let c = rng.rand256();
        if c != 0 {
            break c;
        }
    };
    if density == Density::FULL {
        // Zero is redrawn so that every source symbol is covered.
        for c in out {
            *c = nonzero(&mut rng);
        }
    } else {
        for c in out {
            *c = if rng.rand16() <= density.0 {
                nonzero(&mut rng)
            } else {
                0
            };
        }
    }
}

/// Fills `out` with the GF(2) coefficients (RFC 8681, m = 1), each 0 or 1,
/// of the repair symbol with this key; at full density all are 1 (plain XOR).
pub fn coding_coefficients_gf2(key: RepairKey, density: Density, out: &mut [u8]) {
    if density == Density::FULL {
        out.fill(1);
        return;
    }
    let mut rng = TinyMt32::new(u32::from(key.0));
    for c in out {
        *c = u8::from(rng.rand16() <= density.0);
    }
}
