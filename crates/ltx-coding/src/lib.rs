//! Erasure coding for the ltx transport: the code that repairs lost packets
//! so that the sender never has to retransmit them.
//!
//! - [`gf256`]: arithmetic in GF(2^8) over 0x11D (the field of RFC 5510 and
//!   RFC 8681), with SIMD region kernels (SSSE3, AVX2, GFNI) chosen at run
//!   time and forced with `LTX_GF_KERNEL`.
//! - [`rfc8681`]: TinyMT32 and the coding coefficients of RFC 8681, so that
//!   ltx's repair symbols interoperate with other RFC 8681 implementations.
//! - [`codec`]: a systematic encoder and a progressive decoder, shared by the
//!   three codes of [`codec::Code`] — the sliding-window random linear code
//!   (the default), XOR parity over a group, and fixed blocks.
//! - [`symbol`]: symbol ids, encoding windows and repair keys.
//!
//! The coder is mechanism only: how many repair symbols to send, and over
//! which windows, is the recovery policy's decision, made elsewhere.
//!
//! ```
//! use ltx_coding::codec::{Code, Decoder, DecoderConfig, Encoder, EncoderConfig};
//! use ltx_coding::{RepairKey, SymbolId, Window};
//!
//! let code = Code::default();
//! let mut encoder = Encoder::new(EncoderConfig { symbol_size: 1200, max_window: 64, code })?;
//! let mut decoder = Decoder::new(DecoderConfig { symbol_size: 1200, max_window: 64, code })?;
//! let packets: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 1200]).collect();
//! for packet in &packets {
//!     encoder.push(packet)?;
//! }
//!
//! // Packets 3 and 7 are lost; two repair symbols over the window replace them.
//! for (i, packet) in packets.iter().enumerate() {
//!     if i != 3 && i != 7 {
//!         decoder.receive_source(SymbolId(i as u64), packet)?;
//!     }
//! }
//! let window = Window::new(SymbolId(0), 10);
//! let mut repair = vec![0u8; 1200];
//! for key in [RepairKey(1), RepairKey(2)] {
//!     encoder.repair(window, key, &mut repair)?;
//!     decoder.receive_repair(window, key, &repair)?;
//! }
//! assert_eq!(decoder.missing(), 0);
//! assert_eq!(decoder.symbol(SymbolId(7)), Some(&packets[7][..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod codec;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gf256;
pub mod rfc8681;
pub mod symbol;

pub use symbol::{RepairKey, SymbolId, Window};
