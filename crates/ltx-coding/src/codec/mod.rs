//! The codes: a systematic encoder and a progressive decoder shared by the
//! sliding-window RLC, XOR parity and block mode.

mod code;
mod decoder;
mod encoder;
mod pages;

pub use code::{Code, CodeError, XOR_PARITY_DENSITY};
pub use decoder::{DecodeError, Decoder, DecoderConfig, Outcome};
pub use encoder::{repair_from_sources, ConfigError, EncodeError, Encoder, EncoderConfig};

/// The largest symbol the encoder and decoder accept, in bytes: a jumbo
/// frame's payload. ltx sends symbols of about 1400 bytes.
pub const MAX_SYMBOL_SIZE: usize = 9000;
