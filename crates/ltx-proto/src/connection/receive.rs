//! The decoder of the peer's symbols.

use ltx_coding::codec::Decoder;
use ltx_coding::SymbolId;

/// The receiving side of the coding: the decoder (created at the
/// handshake) and what the peer's repairs say of its sending.
#[derive(Default)]
pub(super) struct Receiver {
    pub(super) decoder: Option<Decoder>,
    /// The first symbol of the repair window received that starts furthest
    /// on: the peer's proactive repairs slide forward from there, and the
    /// unknown symbols before it wait for an answer (`DecoderState::settled`).
    pub(super) newest_window_start: SymbolId,
    /// A symbol's buffer, kept between packets.
    pub(super) scratch: Vec<u8>,
}
