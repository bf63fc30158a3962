//! Log/exp tables for GF(2^8) over 0x11D, built at compile time.

use super::POLYNOMIAL;

/// `EXP[i] = α^i` for i in 0..510, doubled so that `EXP[log a + log b]`
/// needs no reduction modulo 255.
static EXP: [u8; 510] = build_exp();
/// `LOG[a]` for a ≠ 0; `LOG[0]` is unused.
static LOG: [u8; 256] = build_log();

const fn build_exp() -> [u8; 510] {
    let mut table = [0u8; 510];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 510 {
        table[i] = x as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= POLYNOMIAL;
        }
        i += 1;
    }
    table
}

const fn build_log() -> [u8; 256] {
    let exp = build_exp();
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 255 {
        table[exp[i] as usize] = i as u8;
        i += 1;
    }
    table
}

/// Carry-less multiply then reduce: the definition of the field product.
///
/// Slow, but usable in constants: the SIMD kernels' per-coefficient tables are
/// built from it at compile time, and the log/exp tables are tested against it.
// Only the x86-64 kernels build tables from it outside tests.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) const fn mul_by_definition(a: u8, b: u8) -> u8 {
    let mut product: u16 = 0;
    let mut bit = 0;
    while bit < 8 {
        if b & (1 << bit) != 0 {
            product ^= (a as u16) << bit;
        }
        bit += 1;
    }
    let mut bit = 15;
    while bit >= 8 {
        if product & (1 << bit) != 0 {
            product ^= POLYNOMIAL << (bit - 8);
        }
        bit -= 1;
    }
    product as u8
}

/// The product `a·b` in GF(2^8).
#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        return 0;
    }
    EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
}

/// The multiplicative inverse of `a`, or `None` for zero.
#[inline]
pub fn inv(a: u8) -> Option<u8> {
    if a == 0 {
        return None;
    }
    Some(EXP[255 - LOG[a as usize] as usize])
}

/// The quotient `a / b`, or `None` when `b` is zero.
#[inline]
pub fn div(a: u8, b: u8) -> Option<u8> {
    Some(mul(a, inv(b)?))
}

/// `α^i`, where α = 2 is the generator of the multiplicative group.
#[inline]
pub fn exp(i: u8) -> u8 {
    EXP[i as usize]
}

/// The discrete logarithm of `a` to base α, or `None` for zero.
#[inline]
pub fn log(a: u8) -> Option<u8> {
    if a == 0 {
        return None;
    }
    Some(LOG[a as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_product_matches_the_definition_for_every_pair() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), mul_by_definition(a, b), "{a}·{b}");
            }
        }
    }

    #[test]
    fn every_nonzero_element_has_an_inverse_and_zero_has_none() {
        assert_eq!(inv(0), None);
        for a in 1..=255u8 {
            let a_inv = inv(a).unwrap();
            assert_eq!(mul(a, a_inv), 1, "{a}");
            assert_eq!(div(a, a), Some(1));
        }
        assert_eq!(div(7, 0), None);
    }

    #[test]
    fn alpha_generates_the_whole_multiplicative_group() {
        let mut seen = [false; 256];
        for i in 0..255u8 {
            let x = exp(i);
            assert!(!seen[x as usize], "α^{i} repeats");
            seen[x as usize] = true;
            assert_eq!(log(x), Some(i));
        }
        assert!(!seen[0]);
    }
}
