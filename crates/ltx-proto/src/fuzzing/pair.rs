//! Two ends joined by a path that the input drives: what it delivers,
//! drops, duplicates, corrupts or forges, and when time moves.

use crate::protection::{PacketProtection, PlainProtection};
use crate::wire::{
    ConnectionId, Frame, Header, PacketNumber, PacketType, TruncatedPacketNumber, VarInt,
    MAX_NOISE_MESSAGE_LEN,
};
use crate::{Connection, EcnCodepoint};
use ltx_coding::fuzzing::FuzzInput as Input;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Datagrams on their way from one end to the other, and every datagram
/// that end has sent (for replays).
#[derive(Default)]
pub(super) struct Path {
    pub(super) queue: VecDeque<Vec<u8>>,
    /// Datagrams held back, to be delivered out of order later.
    pub(super) held: Vec<Vec<u8>>,
    pub(super) seen: Vec<Vec<u8>>,
    /// Genuine datagrams handed to the receiving end, copies included.
    pub(super) delivered: u64,
}

/// Datagrams a path keeps queued, held or seen at most; older ones are lost.
pub(super) const PATH_CAPACITY: usize = 256;

/// Datagrams taken from one end per drain at most.
pub(super) const DRAIN_LIMIT: usize = 64;

impl Path {
    /// Takes what `from` has to send into the queue.
    pub(super) fn drain(&mut self, from: &mut Connection, now: Instant) {
        for _ in 0..DRAIN_LIMIT {
            let Some(transmit) = from.poll_transmit(now) else {
                break;
            };
            if self.seen.len() < PATH_CAPACITY {
                self.seen.push(transmit.contents.clone());
            }
            if self.queue.len() == PATH_CAPACITY {
                self.queue.pop_front();
            }
            self.queue.push_back(transmit.contents);
        }
    }
}

/// What the input does to the next datagram of a path.
#[derive(Debug, Clone, Copy)]
pub(super) enum Treatment {
    Deliver,
    Drop,
    /// Delivered twice.
    Duplicate,
    /// Kept back, for a later `Release`.
    Hold,
    /// Bytes changed; the checksum no longer matches.
    Corrupt,
    /// Bytes changed after the header, then sealed again with the plain
    /// layer's checksum: a forgery, for an unauthenticated layer.
    Forge,
    Truncate,
}

impl Treatment {
    pub(super) fn from_bits(bits: u8) -> Treatment {
        match bits % 10 {
            0..=3 => Treatment::Deliver,
            4 => Treatment::Drop,
            5 => Treatment::Duplicate,
            6 => Treatment::Hold,
            7 => Treatment::Corrupt,
            8 => Treatment::Forge,
            _ => Treatment::Truncate,
        }
    }
}

/// Changes one to four bytes of `datagram` at positions the input picks.
pub(super) fn corrupt(datagram: &mut [u8], input: &mut Input<'_>) {
    if datagram.is_empty() {
        return;
    }
    for _ in 0..=input.u8() % 4 {
        let at = usize::from(input.u16()) % datagram.len();
        datagram[at] ^= input.u8() | 1;
    }
}

/// `datagram` with bytes after its header changed and the plain checksum
/// made to match again for a receiver whose largest received packet number
/// is `largest_received`; `None` if it has no header to keep.
pub(super) fn forge(
    datagram: &[u8],
    input: &mut Input<'_>,
    largest_received: Option<PacketNumber>,
) -> Option<Vec<u8>> {
    let (header, header_len) = Header::parse(datagram).ok()?;
    let body_end = datagram.len().checked_sub(4)?.max(header_len);
    let mut packet = datagram[..body_end].to_vec();
    corrupt(&mut packet[header_len..], input);
    let number = header.number.expand(largest_received);
    PlainProtection.seal(number.0, header_len, &mut packet);
    Some(packet)
}

/// A packet to `dcid` of the type the input picks, its frames `payload`,
/// sealed with the plain checksum.
pub(super) fn forged_packet(input: &mut Input<'_>, dcid: ConnectionId, payload: &[u8]) -> Vec<u8> {
    let packet_type = match input.u8() % 4 {
        0 => PacketType::Initial,
        1 => PacketType::Handshake,
        2 => PacketType::Data,
        _ => PacketType::EarlyData,
    };
    let number = PacketNumber(input.u64() & VarInt::MAX.into_inner());
    let mut packet = Vec::new();
    Header {
        packet_type,
        key_phase: input.u8() & 1 == 1,
        dcid,
        number: TruncatedPacketNumber::whole(number),
    }
    .emit(&mut packet);
    let header_len = packet.len();
    packet.extend_from_slice(payload);
    PlainProtection.seal(number.0, header_len, &mut packet);
    packet
}

/// Whether the plain layer of a receiver whose largest received packet
/// number is `largest_received` would accept `datagram`: a corrupted
/// datagram that still opens is as good as a forgery to an unauthenticated
/// layer.
pub(super) fn opens_plain(datagram: &[u8], largest_received: Option<PacketNumber>) -> bool {
    let Ok((header, header_len)) = Header::parse(datagram) else {
        return false;
    };
    let number = header.number.expand(largest_received);
    PlainProtection
        .open(number.0, header_len, &mut datagram.to_vec())
        .is_ok()
}

/// Longest one step of time may be: a jump to a timer further off stops
/// short of it.
pub(super) const MAX_STEP: Duration = Duration::from_millis(0xffff);

/// Moves time forward by what the input says, or to the next timer of
/// either end, and lets both handle it.
pub(super) fn step_time(
    now: &mut Instant,
    input: &mut Input<'_>,
    a: &mut Connection,
    b: &mut Connection,
) {
    let choice = input.u16();
    let next = [a.poll_timeout(), b.poll_timeout()]
        .into_iter()
        .flatten()
        .min();
    *now = match next {
        Some(at) if choice & 1 == 0 => at.max(*now).min(*now + MAX_STEP),
        _ => *now + Duration::from_millis(u64::from(choice >> 1)),
    };
    a.handle_timeout(*now);
    b.handle_timeout(*now);
}

/// Which end a datagram goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Client,
    Server,
}

impl End {
    pub(super) fn other(self) -> End {
        match self {
            End::Client => End::Server,
            End::Server => End::Client,
        }
    }
}

/// The client and server of a driver run, and the paths between them.
pub(super) struct Pair {
    pub(super) client: Connection,
    pub(super) server: Connection,
    pub(super) to_server: Path,
    pub(super) to_client: Path,
    pub(super) now: Instant,
    /// Whether datagrams an unauthenticated end would accept may be forged;
    /// if not, every forgery reaches it with a broken checksum.
    pub(super) may_forge: bool,
    /// An unauthenticated datagram an end accepted, or may have: past one,
    /// only "no panic" holds.
    pub(super) forged: bool,
    /// Whether the ends seal with keys from a handshake (a forgery can
    /// then never open).
    pub(super) protected: bool,
}

impl Pair {
    pub(super) fn end(&mut self, end: End) -> (&mut Connection, &mut Path) {
        match end {
            End::Client => (&mut self.client, &mut self.to_client),
            End::Server => (&mut self.server, &mut self.to_server),
        }
    }

    pub(super) fn drain(&mut self) {
        self.to_server.drain(&mut self.client, self.now);
        self.to_client.drain(&mut self.server, self.now);
    }

    /// Hands `datagram` to `end`; `genuine` if an end sent it as it is.
    pub(super) fn deliver(&mut self, end: End, datagram: &[u8], genuine: bool) {
        let mut datagram = datagram.to_vec();
        let largest_received = self.end(end).0.largest_received();
        if !genuine && !self.protected && opens_plain(&datagram, largest_received) {
            if self.may_forge {
                self.forged = true;
            } else if let Some(last) = datagram.last_mut() {
                // Spoil the checksum: the run tests what a checksum stops.
                *last ^= 1;
            }
        }
        let now = self.now;
        let (conn, path) = self.end(end);
        if genuine {
            path.delivered += 1;
        }
        conn.handle_datagram(now, &datagram, EcnCodepoint::Ect0);
    }

    /// Takes the next datagram towards `end` and treats it as the input says.
    pub(super) fn move_one(&mut self, end: End, input: &mut Input<'_>) {
        let treatment = Treatment::from_bits(input.u8());
        let (_, path) = self.end(end);
        let Some(mut datagram) = path.queue.pop_front() else {
            return;
        };
        let original = datagram.clone();
        match treatment {
            Treatment::Deliver => self.deliver(end, &datagram, true),
            Treatment::Drop => {}
            Treatment::Duplicate => {
                self.deliver(end, &datagram, true);
                self.deliver(end, &datagram, true);
            }
            Treatment::Hold => {
                let (_, path) = self.end(end);
                if path.held.len() < PATH_CAPACITY {
                    path.held.push(datagram);
                }
            }
            // Changes may cancel out: what is left as it was is genuine.
            Treatment::Corrupt => {
                corrupt(&mut datagram, input);
                self.deliver(end, &datagram, datagram == original);
            }
            Treatment::Forge => {
                let largest_received = self.end(end).0.largest_received();
                if let Some(forged) = forge(&datagram, input, largest_received) {
                    self.deliver(end, &forged, forged == original);
                }
            }
            Treatment::Truncate => {
                let len = usize::from(input.u16()) % datagram.len().max(1);
                self.deliver(end, &datagram[..len], false);
            }
        }
    }

    /// Delivers a held datagram, late.
    pub(super) fn release(&mut self, end: End, input: &mut Input<'_>) {
        let pick = usize::from(input.u8());
        let (_, path) = self.end(end);
        if path.held.is_empty() {
            return;
        }
        let datagram = path.held.swap_remove(pick % path.held.len());
        self.deliver(end, &datagram, true);
    }

    /// Sends `end` a datagram that did not come from its peer: arbitrary
    /// bytes, a replay (as it was or forged), or a packet with a valid
    /// header and arbitrary frames (a NOISE frame with arbitrary contents,
    /// among them).
    pub(super) fn inject(&mut self, end: End, input: &mut Input<'_>) {
        let kind = input.u8();
        let dcid = match end {
            End::Client => self.client.local_cid(),
            End::Server => self.server.local_cid(),
        };
        let dcid = if kind & 0x80 == 0 {
            dcid
        } else {
            ConnectionId(input.u64() as u32)
        };
        let len = usize::from(input.u16() % 1500);
        let (datagram, genuine) = match kind % 5 {
            0 => (input.bytes(len).to_vec(), false),
            1 | 2 => {
                // A datagram the peer sent before (a replay), or one this
                // end sent itself (a reflection).
                let from_peer = kind % 5 == 1;
                let sender = match (end, from_peer) {
                    (End::Client, true) | (End::Server, false) => End::Server,
                    _ => End::Client,
                };
                let (_, path) = self.end(sender.other());
                if path.seen.is_empty() {
                    return;
                }
                let replay = path.seen[usize::from(input.u8()) % path.seen.len()].clone();
                if kind & 0x40 == 0 {
                    (replay, from_peer)
                } else {
                    let largest_received = self.end(end).0.largest_received();
                    let Some(forged) = forge(&replay, input, largest_received) else {
                        return;
                    };
                    let genuine = from_peer && forged == replay;
                    (forged, genuine)
                }
            }
            3 => {
                let mut payload = Vec::new();
                Frame::Noise(input.bytes(len.min(MAX_NOISE_MESSAGE_LEN))).emit(&mut payload);
                if kind & 0x20 != 0 {
                    payload.resize(payload.len() + len, 0);
                }
                (forged_packet(input, dcid, &payload), false)
            }
            _ => {
                let payload = input.bytes(len).to_vec();
                (forged_packet(input, dcid, &payload), false)
            }
        };
        self.deliver(end, &datagram, genuine);
    }

    pub(super) fn step_time(&mut self, input: &mut Input<'_>) {
        step_time(&mut self.now, input, &mut self.client, &mut self.server);
    }
}
