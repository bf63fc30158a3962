//! TinyMT32 (RFC 8682) and the coding coefficients of RFC 8681.
//!
//! RFC 8681 repair symbols carry a 16-bit repair key instead of their
//! coefficients; both ends seed TinyMT32 with the key and draw the same
//! coefficients. Keeping to the RFC's exact draws makes ltx's repair symbols
//! decodable by any other RFC 8681 implementation, and the reverse.

mod coefficients;
mod tinymt32;

pub use coefficients::{coding_coefficients, coding_coefficients_gf2, Density, InvalidDensity};
pub use tinymt32::TinyMt32;
