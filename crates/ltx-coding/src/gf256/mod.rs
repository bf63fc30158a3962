//! Arithmetic in GF(2^8) with the field polynomial x^8+x^4+x^3+x^2+1 (0x11D),
//! the field of RFC 5510 and RFC 8681.
//!
//! Single elements are multiplied through log/exp tables ([`mul`], [`inv`],
//! [`div`]); this is the reference every region kernel is tested against.
//! Region operations (`dst ^= c·src` and friends) go through a [`Kernel`],
//! chosen once per process by [`kernel()`]: the fastest one the CPU supports,
//! unless the `LTX_GF_KERNEL` environment variable names another.

mod scalar;
mod tables;

#[cfg(target_arch = "x86_64")]
mod affine;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod gfni;
#[cfg(target_arch = "x86_64")]
mod nibble;
#[cfg(target_arch = "x86_64")]
mod simd;
#[cfg(target_arch = "x86_64")]
mod ssse3;

pub use tables::{div, exp, inv, log, mul};

/// The field polynomial x^8+x^4+x^3+x^2+1, with the x^8 term.
pub const POLYNOMIAL: u16 = 0x11D;

/// The environment variable that forces a region kernel (`scalar`, `ssse3`,
/// `avx2`, `gfni256`, `gfni512`).
pub const KERNEL_ENV: &str = "LTX_GF_KERNEL";

mod kernel;

pub use kernel::{kernel, Kernel, KernelKind, KernelUnavailable, UnknownKernel};
