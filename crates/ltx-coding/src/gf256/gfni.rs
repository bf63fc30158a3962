//! The GFNI kernels: products by `gf2p8affineqb` with the bit matrix of each
//! coefficient (see [`affine`](super::affine)), on 256-bit registers (with
//! AVX2) and on 512-bit registers (with AVX-512).
//!
//! Only the multiplication and the 512-bit register are defined here; the
//! loops are the generic ones every kernel shares.

use std::arch::x86_64::{
    __m256i, __m512i, _mm256_gf2p8affine_epi64_epi8, _mm256_set1_epi64x,
    _mm512_gf2p8affine_epi64_epi8, _mm512_loadu_si512, _mm512_set1_epi64, _mm512_setzero_si512,
    _mm512_storeu_si512, _mm512_xor_si512,
};

use super::affine::MATRICES;
use super::simd::{Multiplier, Vector};

/// The 256-bit GFNI kernel's entry points (GFNI with AVX2).
pub(super) mod ymm {
    super::super::simd::region_kernels!("gfni,avx,avx2", super::Affine256);
}

/// The 512-bit GFNI kernel's entry points (GFNI with AVX-512F and -BW).
pub(super) mod zmm {
    super::super::simd::region_kernels!("gfni,avx512f,avx512bw", super::Affine512);
}

/// Multiplication by a constant: its matrix, in every qword of a 256-bit
/// register.
#[derive(Clone, Copy)]
pub(super) struct Affine256(__m256i);

impl Multiplier for Affine256 {
    type V = __m256i;

    #[inline(always)]
    unsafe fn new(c: u8) -> Self {
        // SAFETY: AVX is the caller's promise.
        unsafe { Affine256(_mm256_set1_epi64x(MATRICES[c as usize] as i64)) }
    }

    #[inline(always)]
    unsafe fn mul(self, v: __m256i) -> __m256i {
        // SAFETY: GFNI and AVX are the caller's promise.
        unsafe { _mm256_gf2p8affine_epi64_epi8::<0>(v, self.0) }
    }
}

impl Vector for __m512i {
    const LANES: usize = 64;

    #[inline(always)]
    unsafe fn load(src: *const u8) -> Self {
        // SAFETY: `src..src + 64` is readable (the caller's promise);
        // `loadu` has no alignment requirement.
        unsafe { _mm512_loadu_si512(src.cast()) }
    }

    #[inline(always)]
    unsafe fn store(self, dst: *mut u8) {
        // SAFETY: `dst..dst + 64` is writable (the caller's promise);
        // `storeu` has no alignment requirement.
        unsafe { _mm512_storeu_si512(dst.cast(), self) }
    }

    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: AVX-512F is the caller's promise.
        unsafe { _mm512_xor_si512(self, other) }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX-512F is the caller's promise.
        unsafe { _mm512_setzero_si512() }
    }
}

/// Multiplication by a constant: its matrix, in every qword of a 512-bit
/// register.
#[derive(Clone, Copy)]
pub(super) struct Affine512(__m512i);

impl Multiplier for Affine512 {
    type V = __m512i;

    #[inline(always)]
    unsafe fn new(c: u8) -> Self {
        // SAFETY: AVX-512F is the caller's promise.
        unsafe { Affine512(_mm512_set1_epi64(MATRICES[c as usize] as i64)) }
    }

    #[inline(always)]
    unsafe fn mul(self, v: __m512i) -> __m512i {
        // SAFETY: GFNI and AVX-512F are the caller's promise.
        unsafe { _mm512_gf2p8affine_epi64_epi8::<0>(v, self.0) }
    }
}
