//! The encoder of this end's symbols, and what the peer's decoder has
//! reported of them.

use ltx_coding::codec::Encoder;
use ltx_coding::SymbolId;

/// The sending side of the coding.
#[derive(Default)]
pub(super) struct SymbolSender {
    /// The encoder (created at the handshake).
    pub(super) encoder: Option<Encoder>,
    /// The peer's decoder, as its acknowledgements report it.
    pub(super) peer: PeerDecoder,
    /// The key of the next repair symbol.
    pub(super) next_repair_key: u16,
    /// The first source symbol sent since the encoder last held none the
    /// peer had not decoded: where the transfer under way began.
    pub(super) busy_since: SymbolId,
    /// A symbol's buffer, kept between packets.
    pub(super) scratch: Vec<u8>,
}

/// The peer's decoder, as its latest acknowledgements report it.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PeerDecoder {
    /// Source symbols the peer may hold beyond its first unknown one.
    pub(super) window: u64,
    /// The peer's first unknown source symbol.
    pub(super) decoded_through: SymbolId,
    /// One past the newest symbol the peer has seen.
    pub(super) end: SymbolId,
    /// The largest end the peer has reported: its decoder's end is never
    /// below it, which truncated symbol ids rely on.
    pub(super) largest_end: SymbolId,
    /// Unknown source symbols the peer reported.
    pub(super) missing: u64,
    /// Repair equations the peer holds that it could not yet solve with.
    pub(super) rank: u64,
}
