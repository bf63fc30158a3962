//! Erasure coding for the ltx transport.
//!
//! - [`gf256`]: arithmetic in GF(2^8) over 0x11D with SIMD region kernels
//!   chosen at run time.
//! - [`symbol`]: symbol ids, encoding windows and repair keys.

pub mod gf256;
pub mod symbol;

pub use symbol::{RepairKey, SymbolId, Window};
