//! Split-nibble product tables for the shuffle kernels (SSSE3, AVX2).
//!
//! Multiplication by a constant is linear over GF(2), so
//! `c·x = c·(x & 0x0F) ^ c·(x & 0xF0)`: two 16-entry tables per coefficient,
//! looked up with `pshufb` by the low and the high nibble of every byte.

use super::tables::mul_by_definition;

/// The products of one coefficient `c` with every nibble value.
///
/// Aligned so that each half is one aligned 16-byte load.
#[repr(C, align(32))]
pub(super) struct NibbleProducts {
    /// `low[i] = c·i`.
    pub(super) low: [u8; 16],
    /// `high[i] = c·(i << 4)`.
    pub(super) high: [u8; 16],
}

/// The nibble tables of every coefficient, indexed by the coefficient
/// (8 KiB, built at compile time).
///
/// A kernel loads a coefficient's pair of tables from here rather than
/// computing it, so that `dot_product` can afford to fetch them again for
/// every block of the destination.
pub(super) static NIBBLE_PRODUCTS: [NibbleProducts; 256] = build();

const fn build() -> [NibbleProducts; 256] {
    let mut tables = [const {
        NibbleProducts {
            low: [0; 16],
            high: [0; 16],
        }
    }; 256];
    let mut c = 0;
    while c < 256 {
        let mut i = 0;
        while i < 16 {
            tables[c].low[i] = mul_by_definition(c as u8, i as u8);
            tables[c].high[i] = mul_by_definition(c as u8, (i as u8) << 4);
            i += 1;
        }
        c += 1;
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::super::tables::mul;
    use super::*;

    #[test]
    fn low_and_high_lookups_sum_to_the_product_for_every_pair() {
        for c in 0..=255u8 {
            let tables = &NIBBLE_PRODUCTS[c as usize];
            for x in 0..=255u8 {
                let split = tables.low[(x & 0x0F) as usize] ^ tables.high[(x >> 4) as usize];
                assert_eq!(split, mul(c, x), "{c}·{x}");
            }
        }
    }
}
