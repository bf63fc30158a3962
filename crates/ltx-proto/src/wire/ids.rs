//! Connection ids, packet numbers, stream ids and the two sides of a
//! connection.

use std::fmt;

/// The id by which an endpoint finds the connection a datagram belongs to,
/// chosen by the endpoint that receives under it.
///
/// Four bytes on the wire, in every packet's header: eight, as QUIC
/// allows, cost 0.3 % of every full datagram. An endpoint draws its ids at
/// random and draws again on a clash with one of its own connections. The
/// client's first id for the server is random too, and a retry must echo it
/// (see [`crate::accept`]): an off-path host that forges one guesses right
/// once in 2^32 datagrams, and a right guess only makes that handshake fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ConnectionId(pub u32);

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

/// The number of a packet, counted from 0 in each direction.
///
/// Never reused, not even for a packet that carries the same data again, so
/// that every acknowledgement is an unambiguous round-trip sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PacketNumber(pub u64);

impl fmt::Display for PacketNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pn {}", self.0)
    }
}

/// The two endpoints of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The endpoint that opened the connection.
    Client,
    /// The endpoint that accepted it.
    Server,
}

impl Side {
    /// The other side.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Client => "client",
            Side::Server => "server",
        })
    }
}

/// The id of a bidirectional stream: its index among the streams its
/// initiator opened, shifted left, with the initiator in the low bit (0 for
/// the client, 1 for the server), so that the two sides never pick the
/// same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The `index`-th stream (from 0) opened by `initiator`.
    ///
    /// # Panics
    /// If `index` is 2^61 or more: the id would not fit a varint. The peer's
    /// stream limit keeps real indices far below that.
    pub fn new(initiator: Side, index: u64) -> StreamId {
        assert!(index < 1 << 61, "stream index {index} is out of range");
        let side = match initiator {
            Side::Client => 0,
            Side::Server => 1,
        };
        StreamId(index << 1 | side)
    }

    /// The side that opened the stream.
    pub fn initiator(self) -> Side {
        if self.0 & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// The stream's index among those its initiator opened, from 0.
    pub fn index(self) -> u64 {
        self.0 >> 1
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stream {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_interleave_the_two_sides() {
        assert_eq!(StreamId::new(Side::Client, 0), StreamId(0));
        assert_eq!(StreamId::new(Side::Server, 0), StreamId(1));
        assert_eq!(StreamId::new(Side::Client, 3), StreamId(6));
        assert_eq!(StreamId::new(Side::Server, 3), StreamId(7));
        for id in [0, 1, 6, 7, 0x3fff_ffff_ffff_ffff] {
            let id = StreamId(id);
            assert_eq!(StreamId::new(id.initiator(), id.index()), id);
        }
    }

    #[test]
    fn the_largest_index_fits_a_varint() {
        let id = StreamId::new(Side::Server, (1 << 61) - 1);
        assert_eq!(id.0, (1 << 62) - 1);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn an_index_past_the_varint_range_is_a_bug() {
        StreamId::new(Side::Client, 1 << 61);
    }

    #[test]
    fn display() {
        assert_eq!(ConnectionId(0xab).to_string(), "000000ab");
        assert_eq!(PacketNumber(7).to_string(), "pn 7");
        assert_eq!(StreamId(4).to_string(), "stream 4");
        assert_eq!(Side::Server.peer().to_string(), "client");
    }
}
