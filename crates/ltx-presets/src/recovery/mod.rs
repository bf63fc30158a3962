//! The seeds' redundancy schemes, each built by a
//! [`SchemeFactory`](ltx_proto::recovery::SchemeFactory) that a
//! [`TransportConfig`](ltx_proto::TransportConfig) can hold:
//!
//! | scheme | windows | coefficients | seed |
//! | --- | --- | --- | --- |
//! | [`BlockScheme`] | fixed aligned blocks | RLC | 000 LT-TCP, 003 Coded TCP |
//! | [`DfecScheme`] | XOR groups sized by the ratio | XOR, RLC for feedback | 002 TCP-dFEC |
//! | [`WholeBlockScheme`] | the whole application block | RLC | 004 FECTCP |
//!
//! Every repair is a frame naming its window, key and density byte, so the
//! receiver decodes all of them through one path: a block repair is a
//! repair whose window is the block, an XOR parity a repair whose density
//! byte says its coefficients are all 1.

pub mod blocks;
pub mod dfec;
pub mod whole_block;

pub use blocks::{BlockConfig, BlockScheme, Provisioning};
pub use dfec::{DfecConfig, DfecScheme};
pub use whole_block::{WholeBlockConfig, WholeBlockScheme};
