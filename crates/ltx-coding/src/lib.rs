//! Erasure coding for the ltx transport.
//!
//! - [`gf256`]: arithmetic in GF(2^8) over 0x11D with SIMD region kernels
//!   chosen at run time.
//! - [`symbol`]: symbol ids, encoding windows and repair keys.
//! - [`rfc8681`]: the TinyMT32 generator and the coding coefficients of
//!   RFC 8681, so repair symbols interoperate with other implementations.
//! - [`encoder`] and [`decoder`]: the sliding-window systematic code.
//! - [`code`]: which code a stream uses (sliding-window RLC, XOR parity,
//!   fixed blocks), all behind the same symbol interfaces.

pub mod code;
pub mod decoder;
pub mod encoder;
pub mod gf256;
pub mod rfc8681;
pub mod symbol;

pub use symbol::{RepairKey, SymbolId, Window};
