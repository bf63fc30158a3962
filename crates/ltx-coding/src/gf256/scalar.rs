//! Portable region kernels: the reference the SIMD kernels must match byte
//! for byte.

use super::tables::mul;

/// A 256-entry product table for one coefficient: `row[x] = c·x`.
fn product_row(c: u8) -> [u8; 256] {
    let mut row = [0u8; 256];
    for (x, slot) in row.iter_mut().enumerate() {
        *slot = mul(c, x as u8);
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
pub(super) fn mul_region(dst: &mut [u8], src: &[u8], c: u8) {
    match c {
        0 => dst.fill(0),
        1 => dst.copy_from_slice(src),
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
        _ => {
            let row = product_row(c);
            for (d, s) in dst.iter_mut().zip(src) {
                *d ^= row[*s as usize];
            }
        }
    }
}
