//! The AVX2 kernel: 256-bit registers, products by split-nibble `vpshufb`.
//!
//! Its register type is shared with the 256-bit GFNI kernel.

use std::arch::x86_64::{
    __m256i, _mm256_and_si256, _mm256_broadcastsi128_si256, _mm256_loadu_si256, _mm256_set1_epi8,
    _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16, _mm256_storeu_si256,
    _mm256_xor_si256, _mm_loadu_si128,
};

use super::nibble::NIBBLE_PRODUCTS;
use super::simd::{region_kernels, Multiplier, Vector};

region_kernels!("avx2", NibbleShuffle256);

impl Vector for __m256i {
    const LANES: usize = 32;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: `src..src + 32` is readable (the caller's promise);
        // `loadu` has no alignment requirement.
        unsafe { _mm256_loadu_si256(src.cast()) }
    }

    #[inline(always)]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: `dst..dst + 32` is writable (the caller's promise);
        // `storeu` has no alignment requirement.
        unsafe { _mm256_storeu_si256(dst.cast(), self) }
    }

    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: AVX2 is the caller's promise.
        unsafe { _mm256_xor_si256(self, other) }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX is the caller's promise (implied by AVX2).
        unsafe { _mm256_setzero_si256() }
    }
}

/// Multiplication by a constant through two 16-entry nibble tables, each
/// repeated in both 128-bit lanes because `vpshufb` looks up within a lane.
#[derive(Clone, Copy)]
pub(super) struct NibbleShuffle256 {
    /// `c·i` for each low nibble `i`.
    low: __m256i,
    /// `c·(i << 4)` for each high nibble `i`.
    high: __m256i,
}

impl Multiplier for NibbleShuffle256 {
    type V = __m256i;

    #[inline(always)]
    unsafe fn new(c: u8) -> Self {
        let tables = &NIBBLE_PRODUCTS[c as usize];
        // SAFETY: each table is 16 readable bytes; AVX2 is the caller's
        // promise.
        unsafe {
            NibbleShuffle256 {
                low: _mm256_broadcastsi128_si256(_mm_loadu_si128(tables.low.as_ptr().cast())),
                high: _mm256_broadcastsi128_si256(_mm_loadu_si128(tables.high.as_ptr().cast())),
            }
        }
    }

    #[inline(always)]
    unsafe fn mul(self, v: __m256i) -> __m256i {
        // SAFETY: AVX2 is the caller's promise. Both indices are below 16, so
        // `vpshufb` never zeroes a byte.
        unsafe {
            let mask = _mm256_set1_epi8(0x0F);
            let low = _mm256_and_si256(v, mask);
            let high = _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask);
            _mm256_xor_si256(
                _mm256_shuffle_epi8(self.low, low),
                _mm256_shuffle_epi8(self.high, high),
            )
        }
    }
}
