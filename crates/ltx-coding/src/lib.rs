//! Erasure coding for the ltx transport.
//!
//! - [`gf256`]: arithmetic in GF(2^8) over 0x11D with SIMD region kernels
//!   chosen at run time.
//! - [`symbol`]: symbol ids, encoding windows and repair keys.
//! - [`rfc8681`]: the TinyMT32 generator and the coding coefficients of
//!   RFC 8681, so repair symbols interoperate with other implementations.
//! - [`codec`]: the systematic encoder and the progressive decoder, shared by
//!   the sliding-window RLC, XOR parity and block mode.

pub mod codec;
#[doc(hidden)]
pub mod fuzzing;
pub mod gf256;
pub mod rfc8681;
pub mod symbol;

pub use symbol::{RepairKey, SymbolId, Window};
