//! Erasure coding for the ltx transport.
//!
//! - [`gf256`]: arithmetic in GF(2^8) over 0x11D with SIMD region kernels
//!   chosen at run time.

pub mod gf256;
