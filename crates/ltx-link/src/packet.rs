//! What the link carries: anything with a size, an ECN codepoint and bytes
//! that can be corrupted.

/// The two ECN bits of the IP header (RFC 3168).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ecn {
    /// Not ECN-capable: an AQM drops it instead of marking it.
    #[default]
    NotEct,
    /// ECN-capable transport, codepoint 1.
    Ect1,
    /// ECN-capable transport, codepoint 0.
    Ect0,
    /// Congestion experienced: marked by a queue.
    Ce,
}

impl Ecn {
    /// Whether a queue may mark the packet instead of dropping it.
    pub fn is_capable(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }
}

/// A packet the link can carry.
pub trait LinkPacket: Clone {
    /// Bytes on the wire, for serialization time and byte-limited queues.
    fn wire_len(&self) -> usize;
    /// The packet's ECN codepoint.
    fn ecn(&self) -> Ecn;
    /// Sets the CE codepoint (congestion experienced).
    fn mark_ce(&mut self);
    /// Flips bit `bit` of the payload, `bit < 8 · payload length`; a packet
    /// without payload ignores it.
    fn flip_bit(&mut self, bit: usize);
    /// Bits that [`flip_bit`](LinkPacket::flip_bit) may flip.
    fn corruptible_bits(&self) -> usize;
}

/// A datagram with an ECN codepoint: the plain packet type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Datagram {
    /// The bytes, all of them on the wire.
    pub payload: Vec<u8>,
    /// The ECN codepoint.
    pub ecn: Ecn,
}

impl LinkPacket for Datagram {
    fn wire_len(&self) -> usize {
        self.payload.len()
    }

    fn ecn(&self) -> Ecn {
        self.ecn
    }

    fn mark_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }

    fn flip_bit(&mut self, bit: usize) {
        if let Some(byte) = self.payload.get_mut(bit / 8) {
            *byte ^= 1 << (bit % 8);
        }
    }

    fn corruptible_bits(&self) -> usize {
        self.payload.len() * 8
    }
}
