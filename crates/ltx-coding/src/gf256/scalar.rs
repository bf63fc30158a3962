//! Portable region kernels: what runs where no SIMD kernel can, and the SIMD
//! kernels' `xor` for the last few bytes of a region.
//!
//! Every function expects regions of equal length; [`Kernel`](super::Kernel)
//! checks that before it gets here.

use super::tables::mul as mul_byte;

/// Below this many bytes a region is multiplied byte by byte through the
/// log/exp tables: building a 256-entry product row would cost more than it
/// saves.
const ROW_THRESHOLD: usize = 256;

/// A 256-entry product table for one coefficient: `row[x] = c·x`.
fn product_row(c: u8) -> [u8; 256] {
    let mut row = [0u8; 256];
    for (x, slot) in row.iter_mut().enumerate() {
        *slot = mul_byte(c, x as u8);
    }
    row
}

/// `dst ^= src`.
pub(super) fn xor(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

/// `dst = c·src`.
pub(super) fn mul(dst: &mut [u8], src: &[u8], c: u8) {
    match c {
        0 => dst.fill(0),
        1 => dst.copy_from_slice(src),
        _ if dst.len() < ROW_THRESHOLD => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = mul_byte(c, *s);
            }
        }
        _ => {
            let row = product_row(c);
            for (d, s) in dst.iter_mut().zip(src) {
                *d = row[*s as usize];
            }
        }
    }
}

/// `dst ^= c·src`.
pub(super) fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    match c {
        0 => {}
        1 => xor(dst, src),
        _ if dst.len() < ROW_THRESHOLD => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d ^= mul_byte(c, *s);
            }
        }
        _ => {
            let row = product_row(c);
            for (d, s) in dst.iter_mut().zip(src) {
                *d ^= row[*s as usize];
            }
        }
    }
}

/// `dst = Σ cᵢ·srcᵢ`, or `dst ^= Σ cᵢ·srcᵢ` when `accumulate` is set.
///
/// One source at a time: the scalar kernel is bound by its table lookups, not
/// by memory traffic, so blocking over `dst` would gain nothing.
pub(super) fn dot_product(
    dst: &mut [u8],
    sources: &[&[u8]],
    coefficients: &[u8],
    accumulate: bool,
) {
    if !accumulate {
        dst.fill(0);
    }
    for (source, &c) in sources.iter().zip(coefficients) {
        mul_add(dst, source, c);
    }
}
