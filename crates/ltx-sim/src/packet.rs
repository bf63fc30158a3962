//! What the simulator's links carry: a datagram and where it is on its route.

use ltx_link::{Datagram, Ecn, LinkPacket};

/// A datagram on its way along a route. The routing fields ride along
/// outside the datagram so they take no space on the wire: the link sees
/// only the datagram's bytes.
#[derive(Debug, Clone)]
pub(crate) struct Packet {
    pub(crate) datagram: Datagram,
    /// Index of the route in the network's route table.
    pub(crate) route: usize,
    /// Index, within the route, of the link the packet is on.
    pub(crate) hop: usize,
}

impl LinkPacket for Packet {
    fn wire_len(&self) -> usize {
        self.datagram.wire_len()
    }

    fn ecn(&self) -> Ecn {
        self.datagram.ecn()
    }

    fn mark_ce(&mut self) {
        self.datagram.mark_ce();
    }

    fn flip_bit(&mut self, bit: usize) {
        self.datagram.flip_bit(bit);
    }

    fn corruptible_bits(&self) -> usize {
        self.datagram.corruptible_bits()
    }
}
