//! The SSSE3 kernel: 128-bit registers, products by split-nibble `pshufb`.

use std::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_loadu_si128, _mm_set1_epi8, _mm_setzero_si128, _mm_shuffle_epi8,
    _mm_srli_epi16, _mm_storeu_si128, _mm_xor_si128,
};

use super::nibble::NIBBLE_PRODUCTS;
use super::simd::{region_kernels, Multiplier, Vector};

region_kernels!("ssse3", NibbleShuffle128);

impl Vector for __m128i {
    const LANES: usize = 16;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: `src..src + 16` is readable (the caller's promise);
        // `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(src.cast()) }
    }

    #[inline(always)]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: `dst..dst + 16` is writable (the caller's promise);
        // `storeu` has no alignment requirement.
        unsafe { _mm_storeu_si128(dst.cast(), self) }
    }

    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: SSE2 is part of the x86-64 baseline.
        unsafe { _mm_xor_si128(self, other) }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: SSE2 is part of the x86-64 baseline.
        unsafe { _mm_setzero_si128() }
    }
}

/// Multiplication by a constant through two 16-entry nibble tables.
#[derive(Clone, Copy)]
pub(super) struct NibbleShuffle128 {
    /// `c·i` for each low nibble `i`.
    low: __m128i,
    /// `c·(i << 4)` for each high nibble `i`.
    high: __m128i,
}

impl Multiplier for NibbleShuffle128 {
    type V = __m128i;

    #[inline(always)]
    unsafe fn new(c: u8) -> Self {
        let tables = &NIBBLE_PRODUCTS[c as usize];
        // SAFETY: each table is 16 readable bytes.
        unsafe {
            NibbleShuffle128 {
                low: _mm_loadu_si128(tables.low.as_ptr().cast()),
                high: _mm_loadu_si128(tables.high.as_ptr().cast()),
            }
        }
    }

    #[inline(always)]
    unsafe fn mul(self, v: __m128i) -> __m128i {
        // SAFETY: SSSE3 (`pshufb`) is the caller's promise; the rest is SSE2.
        // Both indices are below 16, so `pshufb` never zeroes a byte.
        unsafe {
            let mask = _mm_set1_epi8(0x0F);
            let low = _mm_and_si128(v, mask);
            let high = _mm_and_si128(_mm_srli_epi16::<4>(v), mask);
            _mm_xor_si128(
                _mm_shuffle_epi8(self.low, low),
                _mm_shuffle_epi8(self.high, high),
            )
        }
    }
}
