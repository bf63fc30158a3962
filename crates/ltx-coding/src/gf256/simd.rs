//! Region loops shared by the x86-64 kernels, generic over the register width
//! ([`Vector`]) and over how a register of bytes is multiplied by a constant
//! ([`Multiplier`]).
//!
//! Nothing here has target features of its own. Everything is
//! `#[inline(always)]` and is compiled into the `#[target_feature]` entry
//! points that [`region_kernels!`] generates in each kernel's module, taking
//! on their instruction set. The GFNI kernels, which not every test machine
//! can run, thereby share every line with the AVX2 kernel except the
//! multiplication itself and, at 512 bits, the loads, stores and XOR.
//!
//! Loads and stores are unaligned throughout: regions start wherever the
//! caller's packets do, and on every CPU with these instruction sets an
//! unaligned access that does not cross a cache line costs the same as an
//! aligned one. A region's last partial register goes through a register-sized
//! buffer on the stack and the same multiply: byte-by-byte table lookups
//! would cost more for those few bytes than the rest of a packet does.

use super::scalar;

/// A SIMD register of [`LANES`](Vector::LANES) bytes.
///
/// # Safety
/// Every method may only be called from code compiled with the instruction
/// set the implementation uses, on a CPU that has it.
pub(super) trait Vector: Copy {
    /// Bytes per register.
    const LANES: usize;

    /// Loads `LANES` bytes from `src`, which need not be aligned.
    ///
    /// # Safety
    /// As for the trait, and `src..src + LANES` must be readable.
    unsafe fn load(src: *const u8) -> Self;

    /// Stores the register's bytes to `dst`, which need not be aligned.
    ///
    /// # Safety
    /// As for the trait, and `dst..dst + LANES` must be writable.
    unsafe fn store(self, dst: *mut u8);

    /// Bitwise XOR, which is addition in GF(2^8).
    ///
    /// # Safety
    /// As for the trait.
    unsafe fn xor(self, other: Self) -> Self;

    /// All bytes zero.
    ///
    /// # Safety
    /// As for the trait.
    unsafe fn zero() -> Self;
}

/// Multiplication of every byte of a [`Vector`] by one coefficient.
///
/// # Safety
/// As for [`Vector`].
pub(super) trait Multiplier: Copy {
    /// The register type multiplied.
    type V: Vector;

    /// The multiplier for coefficient `c`. Cheap (a load or two), so that
    /// `dot_product` can make it again for every block it visits.
    ///
    /// # Safety
    /// As for the trait.
    unsafe fn new(c: u8) -> Self;

    /// `c·v` for each byte of `v`.
    ///
    /// # Safety
    /// As for the trait.
    unsafe fn mul(self, v: Self::V) -> Self::V;
}

/// The widest register, in bytes: the size of the tail buffers.
const MAX_LANES: usize = 64;

/// Registers per block in `dot_product`: enough accumulators to hide the
/// latency of the multiplies, few enough to leave room for the tables.
const DOT_BLOCK: usize = 4;

/// `dst ^= src`.
///
/// # Safety
/// As for [`Vector`], and `src` must be at least as long as `dst`.
#[inline(always)]
pub(super) unsafe fn xor<V: Vector>(dst: &mut [u8], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    let len = dst.len();
    let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
    let mut i = 0;
    while i + 2 * V::LANES <= len {
        // SAFETY: both registers lie within `i..i + 2·LANES <= len`, inside
        // both regions; the instruction set is the caller's promise.
        unsafe {
            let a = V::load(s.add(i)).xor(V::load(d.add(i)));
            let b = V::load(s.add(i + V::LANES)).xor(V::load(d.add(i + V::LANES)));
            a.store(d.add(i));
            b.store(d.add(i + V::LANES));
        }
        i += 2 * V::LANES;
    }
    if i + V::LANES <= len {
        // SAFETY: `i..i + LANES <= len`, inside both regions.
        unsafe { V::load(s.add(i)).xor(V::load(d.add(i))).store(d.add(i)) };
        i += V::LANES;
    }
    scalar::xor(&mut dst[i..], &src[i..]);
}

/// `dst = c·src`.
///
/// # Safety
/// As for [`Vector`], and `src` must be at least as long as `dst`.
#[inline(always)]
pub(super) unsafe fn mul<M: Multiplier>(dst: &mut [u8], src: &[u8], c: u8) {
    debug_assert_eq!(dst.len(), src.len());
    match c {
        0 => return dst.fill(0),
        1 => return dst.copy_from_slice(src),
        _ => {}
    }
    let lanes = M::V::LANES;
    let len = dst.len();
    let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
    // SAFETY: the instruction set is the caller's promise.
    let m = unsafe { M::new(c) };
    let mut i = 0;
    while i + 2 * lanes <= len {
        // SAFETY: both registers lie within `i..i + 2·LANES <= len`, inside
        // both regions.
        unsafe {
            let a = m.mul(M::V::load(s.add(i)));
            let b = m.mul(M::V::load(s.add(i + lanes)));
            a.store(d.add(i));
            b.store(d.add(i + lanes));
        }
        i += 2 * lanes;
    }
    if i + lanes <= len {
        // SAFETY: `i..i + LANES <= len`, inside both regions.
        unsafe { m.mul(M::V::load(s.add(i))).store(d.add(i)) };
        i += lanes;
    }
    if i < len {
        // SAFETY: the instruction set is the caller's promise.
        unsafe { store_partial(m.mul(load_partial(&src[i..])), &mut dst[i..]) };
    }
}

/// `dst ^= c·src`.
///
/// # Safety
/// As for [`Vector`], and `src` must be at least as long as `dst`.
#[inline(always)]
pub(super) unsafe fn mul_add<M: Multiplier>(dst: &mut [u8], src: &[u8], c: u8) {
    debug_assert_eq!(dst.len(), src.len());
    match c {
        0 => return,
        // SAFETY: the caller's promises are those of `xor`.
        1 => return unsafe { xor::<M::V>(dst, src) },
        _ => {}
    }
    let lanes = M::V::LANES;
    let len = dst.len();
    let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
    // SAFETY: the instruction set is the caller's promise.
    let m = unsafe { M::new(c) };
    let mut i = 0;
    while i + 2 * lanes <= len {
        // SAFETY: both registers lie within `i..i + 2·LANES <= len`, inside
        // both regions.
        unsafe {
            let a = m.mul(M::V::load(s.add(i))).xor(M::V::load(d.add(i)));
            let b = m
                .mul(M::V::load(s.add(i + lanes)))
                .xor(M::V::load(d.add(i + lanes)));
            a.store(d.add(i));
            b.store(d.add(i + lanes));
        }
        i += 2 * lanes;
    }
    if i + lanes <= len {
        // SAFETY: `i..i + LANES <= len`, inside both regions.
        unsafe {
            m.mul(M::V::load(s.add(i)))
                .xor(M::V::load(d.add(i)))
                .store(d.add(i));
        }
        i += lanes;
    }
    if i < len {
        let tail = &mut dst[i..];
        // SAFETY: the instruction set is the caller's promise.
        unsafe {
            let sum = m.mul(load_partial(&src[i..])).xor(load_partial(tail));
            store_partial(sum, tail);
        }
    }
}

/// `dst = Σ cᵢ·srcᵢ`, or `dst ^= Σ cᵢ·srcᵢ` when `accumulate` is set.
///
/// Walks `dst` in blocks of a few registers; each block gathers the products
/// of all sources in registers and is stored once. Every source byte is read
/// once and every `dst` byte written once, however many sources there are.
///
/// # Safety
/// As for [`Vector`]; `sources` and `coefficients` must be equally many, and
/// every source at least as long as `dst`.
#[inline(always)]
pub(super) unsafe fn dot_product<M: Multiplier>(
    dst: &mut [u8],
    sources: &[&[u8]],
    coefficients: &[u8],
    accumulate: bool,
) {
    debug_assert_eq!(sources.len(), coefficients.len());
    debug_assert!(sources.iter().all(|s| s.len() == dst.len()));
    let lanes = M::V::LANES;
    let len = dst.len();
    let d = dst.as_mut_ptr();
    let mut i = 0;
    while i + DOT_BLOCK * lanes <= len {
        // SAFETY: the block `i..i + DOT_BLOCK·LANES <= len` lies inside `dst`
        // and every source; the rest is the caller's promise.
        unsafe { dot_block::<M, DOT_BLOCK>(d, sources, coefficients, i, accumulate) };
        i += DOT_BLOCK * lanes;
    }
    while i + lanes <= len {
        // SAFETY: the block `i..i + LANES <= len` lies inside `dst` and every
        // source.
        unsafe { dot_block::<M, 1>(d, sources, coefficients, i, accumulate) };
        i += lanes;
    }
    if i < len {
        let tail = &mut dst[i..];
        // SAFETY: the instruction set is the caller's promise; every source
        // is as long as `dst`, so has a tail as long.
        unsafe {
            let mut acc = if accumulate {
                load_partial::<M::V>(tail)
            } else {
                M::V::zero()
            };
            for (source, &c) in sources.iter().zip(coefficients) {
                match c {
                    0 => {}
                    1 => acc = acc.xor(load_partial(&source[i..])),
                    _ => acc = acc.xor(M::new(c).mul(load_partial(&source[i..]))),
                }
            }
            store_partial(acc, tail);
        }
    }
}

/// The bytes of `src` (fewer than a register's worth) in a register, the
/// remaining bytes zero.
///
/// # Safety
/// As for [`Vector`].
#[inline(always)]
unsafe fn load_partial<V: Vector>(src: &[u8]) -> V {
    const { assert!(V::LANES <= MAX_LANES) };
    debug_assert!(src.len() < V::LANES);
    let mut buffer = [0u8; MAX_LANES];
    buffer[..src.len()].copy_from_slice(src);
    // SAFETY: the buffer holds at least `LANES` bytes.
    unsafe { V::load(buffer.as_ptr()) }
}

/// Stores the first `dst.len()` bytes of `v` (fewer than a register's worth)
/// to `dst`.
///
/// # Safety
/// As for [`Vector`].
#[inline(always)]
unsafe fn store_partial<V: Vector>(v: V, dst: &mut [u8]) {
    const { assert!(V::LANES <= MAX_LANES) };
    debug_assert!(dst.len() < V::LANES);
    let mut buffer = [0u8; MAX_LANES];
    // SAFETY: the buffer holds at least `LANES` bytes.
    unsafe { v.store(buffer.as_mut_ptr()) };
    dst.copy_from_slice(&buffer[..dst.len()]);
}

/// One block of `dot_product`: `K` registers of `dst` from `offset` on.
///
/// # Safety
/// As for [`Vector`]; `offset + K·LANES` must be within `dst` (which starts at
/// `dst`) and within every source, and there must be a coefficient per source.
#[inline(always)]
unsafe fn dot_block<M: Multiplier, const K: usize>(
    dst: *mut u8,
    sources: &[&[u8]],
    coefficients: &[u8],
    offset: usize,
    accumulate: bool,
) {
    let lanes = M::V::LANES;
    // SAFETY: every access below is to a register at `offset + k·LANES` for
    // k < K, within `dst` and every source by the caller's promise.
    unsafe {
        let d = dst.add(offset);
        let mut acc = [M::V::zero(); K];
        if accumulate {
            for (k, a) in acc.iter_mut().enumerate() {
                *a = M::V::load(d.add(k * lanes));
            }
        }
        for (source, &c) in sources.iter().zip(coefficients) {
            let s = source.as_ptr().add(offset);
            match c {
                0 => {}
                1 => {
                    for (k, a) in acc.iter_mut().enumerate() {
                        *a = a.xor(M::V::load(s.add(k * lanes)));
                    }
                }
                _ => {
                    let m = M::new(c);
                    for (k, a) in acc.iter_mut().enumerate() {
                        *a = a.xor(m.mul(M::V::load(s.add(k * lanes))));
                    }
                }
            }
        }
        for (k, a) in acc.iter().enumerate() {
            a.store(d.add(k * lanes));
        }
    }
}

/// Defines a kernel's entry points `xor`, `mul`, `mul_add` and `dot_product`
/// in the invoking module: the generic loops above, compiled with the target
/// features `$features` for the multiplier `$multiplier`.
///
/// Each entry point is `unsafe`: the CPU must have `$features`, and the
/// regions must have the lengths [`Kernel`](super::Kernel) checks for.
macro_rules! region_kernels {
    ($features:literal, $multiplier:ty) => {
        /// `dst ^= src`.
        ///
        /// # Safety
        /// The CPU must have this kernel's target features; the regions must
        /// be equally long.
        #[target_feature(enable = $features)]
        pub(in crate::gf256) unsafe fn xor(dst: &mut [u8], src: &[u8]) {
            // SAFETY: this function is compiled with the features the loop
            // needs; the CPU and the lengths are the caller's promise.
            unsafe {
                $crate::gf256::simd::xor::<<$multiplier as $crate::gf256::simd::Multiplier>::V>(
                    dst, src,
                )
            }
        }

        /// `dst = c·src`.
        ///
        /// # Safety
        /// As for `xor`.
        #[target_feature(enable = $features)]
        pub(in crate::gf256) unsafe fn mul(dst: &mut [u8], src: &[u8], c: u8) {
            // SAFETY: as in `xor`.
            unsafe { $crate::gf256::simd::mul::<$multiplier>(dst, src, c) }
        }

        /// `dst ^= c·src`.
        ///
        /// # Safety
        /// As for `xor`.
        #[target_feature(enable = $features)]
        pub(in crate::gf256) unsafe fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
            // SAFETY: as in `xor`.
            unsafe { $crate::gf256::simd::mul_add::<$multiplier>(dst, src, c) }
        }

        /// `dst = Σ cᵢ·srcᵢ`, or `dst ^= Σ cᵢ·srcᵢ` when `accumulate` is set.
        ///
        /// # Safety
        /// As for `xor`, for every source; one coefficient per source.
        #[target_feature(enable = $features)]
        pub(in crate::gf256) unsafe fn dot_product(
            dst: &mut [u8],
            sources: &[&[u8]],
            coefficients: &[u8],
            accumulate: bool,
        ) {
            // SAFETY: as in `xor`.
            unsafe {
                $crate::gf256::simd::dot_product::<$multiplier>(
                    dst,
                    sources,
                    coefficients,
                    accumulate,
                )
            }
        }
    };
}

pub(super) use region_kernels;
