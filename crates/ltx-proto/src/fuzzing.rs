//! Drivers that feed arbitrary bytes to the wire parsers, the handshake,
//! the server's acceptor and established connections, shared by the `cargo fuzz` targets and the
//! property tests that run the same inputs on every CI build. Not part of
//! the stable API.

use ltx_coding::fuzzing::FuzzInput as Input;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::accept::packet::{InitialDatagram, RetryPacket, MAX_COOKIE_LEN};
use crate::accept::{AcceptStats, Acceptor, CookieError, Decision, Refusal, ServerLoad};
use crate::config::{AcceptConfig, RetryPolicy};
use crate::connection::MIN_INITIAL;

use crate::event::codes;
use crate::protection::{
    AllowList, PacketProtection, PlainProtection, PresharedKey, SecurityConfig, StaticKeypair,
    KEY_LEN,
};
use crate::wire::{
    ConnectionId, Frame, Frames, Header, PacketNumber, PacketType, StreamId, TruncatedPacketNumber,
    VarInt, MAX_NOISE_MESSAGE_LEN,
};
use crate::{
    CloseReason, Connection, EcnCodepoint, Event, ReadOutcome, TransportConfig,
    AMPLIFICATION_FACTOR,
};

/// Parses `data` as a packet: the header, then every frame after it.
///
/// Refusals are expected; a panic is not. Each header and frame that
/// parses is emitted again, and must take exactly [`Frame::encoded_len`]
/// bytes and parse back to itself: the encoder and parser agreeing on every
/// value the parser accepts is what lets a frame be forwarded or re-sent as
/// parsed.
///
/// Returns how many frames parsed, so that tests can check they reach past
/// the header.
pub fn parse_packet(data: &[u8]) -> usize {
    let Ok((header, len)) = Header::parse(data) else {
        return 0;
    };
    let mut out = Vec::new();
    header.emit(&mut out);
    assert_eq!(out.len(), header.len(), "header length of {header:?}");
    assert_eq!(
        Header::parse(&out),
        Ok((header, out.len())),
        "header did not re-parse"
    );
    let payload = data.get(len..).unwrap_or_default();
    let mut parsed = 0;
    for frame in Frames::new(payload) {
        let Ok(frame) = frame else { break };
        reemit(&frame);
        parsed += 1;
    }
    parsed
}

fn reemit(frame: &Frame<'_>) {
    let mut out = Vec::new();
    frame.emit(&mut out);
    assert_eq!(
        out.len(),
        frame.encoded_len(),
        "encoded length of {frame:?}"
    );
    assert_eq!(
        Frame::parse(&out),
        Ok((frame.clone(), out.len())),
        "frame did not re-parse"
    );
}

/// Datagrams on their way from one end to the other, and every datagram
/// that end has sent (for replays).
#[derive(Default)]
struct Path {
    queue: VecDeque<Vec<u8>>,
    /// Datagrams held back, to be delivered out of order later.
    held: Vec<Vec<u8>>,
    seen: Vec<Vec<u8>>,
    /// Genuine datagrams handed to the receiving end, copies included.
    delivered: u64,
}

/// Datagrams a path keeps queued, held or seen at most; older ones are lost.
const PATH_CAPACITY: usize = 256;
/// Datagrams taken from one end per drain at most.
const DRAIN_LIMIT: usize = 64;

impl Path {
    /// Takes what `from` has to send into the queue.
    fn drain(&mut self, from: &mut Connection, now: Instant) {
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
enum Treatment {
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
    fn from_bits(bits: u8) -> Treatment {
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
fn corrupt(datagram: &mut [u8], input: &mut Input<'_>) {
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
fn forge(
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
fn forged_packet(input: &mut Input<'_>, dcid: ConnectionId, payload: &[u8]) -> Vec<u8> {
    let packet_type = match input.u8() % 3 {
        0 => PacketType::Initial,
        1 => PacketType::Handshake,
        _ => PacketType::Data,
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
fn opens_plain(datagram: &[u8], largest_received: Option<PacketNumber>) -> bool {
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
const MAX_STEP: Duration = Duration::from_millis(0xffff);

/// Moves time forward by what the input says, or to the next timer of
/// either end, and lets both handle it.
fn step_time(now: &mut Instant, input: &mut Input<'_>, a: &mut Connection, b: &mut Connection) {
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
enum End {
    Client,
    Server,
}

impl End {
    fn other(self) -> End {
        match self {
            End::Client => End::Server,
            End::Server => End::Client,
        }
    }
}

/// The client and server of a driver run, and the paths between them.
struct Pair {
    client: Connection,
    server: Connection,
    to_server: Path,
    to_client: Path,
    now: Instant,
    /// Whether datagrams an unauthenticated end would accept may be forged;
    /// if not, every forgery reaches it with a broken checksum.
    may_forge: bool,
    /// An unauthenticated datagram an end accepted, or may have: past one,
    /// only "no panic" holds.
    forged: bool,
    /// Whether the ends seal with keys from a handshake (a forgery can
    /// then never open).
    protected: bool,
}

impl Pair {
    fn end(&mut self, end: End) -> (&mut Connection, &mut Path) {
        match end {
            End::Client => (&mut self.client, &mut self.to_client),
            End::Server => (&mut self.server, &mut self.to_server),
        }
    }

    fn drain(&mut self) {
        self.to_server.drain(&mut self.client, self.now);
        self.to_client.drain(&mut self.server, self.now);
    }

    /// Hands `datagram` to `end`; `genuine` if an end sent it as it is.
    fn deliver(&mut self, end: End, datagram: &[u8], genuine: bool) {
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
    fn move_one(&mut self, end: End, input: &mut Input<'_>) {
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
    fn release(&mut self, end: End, input: &mut Input<'_>) {
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
    fn inject(&mut self, end: End, input: &mut Input<'_>) {
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

    fn step_time(&mut self, input: &mut Input<'_>) {
        step_time(&mut self.now, input, &mut self.client, &mut self.server);
    }
}

/// The client's (1), the server's (2) and a stranger's (3) static key
/// pairs, made once: deriving a key costs a scalar multiplication, which
/// would take a good part of each run.
fn keypair(n: u8) -> StaticKeypair {
    static KEYS: OnceLock<[StaticKeypair; 3]> = OnceLock::new();
    let keys = KEYS.get_or_init(|| [1, 2, 3].map(|n| StaticKeypair::from_entropy([n; KEY_LEN])));
    keys[usize::from(n - 1)].clone()
}

/// What a run of [`handshake`] came to, so that tests can check the driver
/// reaches the states that matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandshakeOutcome {
    /// The client had every key the server asks for.
    pub rightful: bool,
    /// The client ended established.
    pub client_established: bool,
    /// The server ended established.
    pub server_established: bool,
}

/// Runs the Noise handshake between a client and a server whose keys the
/// input picks (the right server key or not, matching pre-shared keys or
/// not, an allow list that holds the client or not), through a network the
/// input controls: the real handshake datagrams delivered, dropped,
/// duplicated, reordered, corrupted, re-sealed after a change or cut short,
/// arbitrary datagrams and forged handshake packets injected into either
/// end, and time moving at any point.
///
/// Neither end may panic; neither may become established unless the client
/// had the right keys; an end that is established has proved the peer's
/// real key.
pub fn handshake(data: &[u8]) -> HandshakeOutcome {
    let mut input = Input::new(data);
    // The top bit gives the client every key the server asks for; the
    // others pick what it lacks.
    let scenario = match input.u8() {
        s if s & 0x80 != 0 => {
            let psk = if s & 0x02 != 0 { 0x06 } else { 0 };
            let allow_list = if s & 0x10 != 0 { 0x30 } else { 0 };
            psk | allow_list
        }
        s => s,
    };
    let client_keys = keypair(1);
    let server_keys = keypair(2);
    let stranger = keypair(3);
    let wrong_server_key = scenario & 0x01 != 0;
    let server_psk = (scenario & 0x02 != 0).then(|| PresharedKey::from_bytes([7; KEY_LEN]));
    let client_psk = (scenario & 0x04 != 0).then(|| {
        let byte = if scenario & 0x08 != 0 { 8 } else { 7 };
        PresharedKey::from_bytes([byte; KEY_LEN])
    });
    let allow_list = scenario & 0x10 != 0;
    let client_allowed = scenario & 0x20 != 0;
    let psk_match = match (&server_psk, &client_psk) {
        (None, None) => true,
        (Some(_), Some(_)) => scenario & 0x08 == 0,
        _ => false,
    };
    let rightful = !wrong_server_key && psk_match && (!allow_list || client_allowed);

    let mut server_config = SecurityConfig::new(server_keys.clone());
    server_config.psk = server_psk;
    if allow_list {
        let mut allowed = AllowList::default();
        allowed.insert(if client_allowed {
            client_keys.public()
        } else {
            stranger.public()
        });
        server_config.allowed_clients = Some(Arc::new(allowed));
    }
    let mut client_config = SecurityConfig::new(client_keys.clone());
    client_config.psk = client_psk;
    let expected_server = if wrong_server_key {
        stranger.public()
    } else {
        server_keys.public()
    };

    let now = Instant::now();
    let (Ok(client), Ok(server)) = (
        Connection::secure_client(
            TransportConfig::default(),
            client_config,
            expected_server,
            now,
            1,
            [11; KEY_LEN],
        ),
        Connection::secure_server(
            TransportConfig::default(),
            server_config,
            now,
            2,
            [12; KEY_LEN],
        ),
    ) else {
        panic!("the default configuration is valid");
    };
    let mut pair = Pair {
        client,
        server,
        to_server: Path::default(),
        to_client: Path::default(),
        now,
        may_forge: true,
        forged: false,
        protected: true,
    };
    pair.drain();
    while !input.is_empty() {
        let op = input.u8();
        let end = if op & 0x80 == 0 {
            End::Server
        } else {
            End::Client
        };
        match op % 8 {
            0..=4 => pair.move_one(end, &mut input),
            5 => pair.inject(end, &mut input),
            6 => pair.step_time(&mut input),
            _ => pair.release(end, &mut input),
        }
        pair.drain();
        while pair.client.poll_event().is_some() {}
        while pair.server.poll_event().is_some() {}
        check_handshake(&pair, rightful, &client_keys, &server_keys);
    }
    HandshakeOutcome {
        rightful,
        client_established: pair.client.is_established(),
        server_established: pair.server.is_established(),
    }
}

fn check_handshake(
    pair: &Pair,
    rightful: bool,
    client_keys: &StaticKeypair,
    server_keys: &StaticKeypair,
) {
    for conn in [&pair.client, &pair.server] {
        if !rightful {
            assert!(
                !conn.is_established(),
                "{:?} established without the right keys",
                conn.side()
            );
        }
    }
    if pair.client.is_established() {
        assert_eq!(pair.client.peer_key(), Some(server_keys.public()));
    }
    if pair.server.is_established() {
        assert_eq!(pair.server.peer_key(), Some(client_keys.public()));
    }
}

/// What a run of [`connection`] came to, so that tests can check the driver
/// reaches the states that matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionOutcome {
    /// The ends sealed with keys from a Noise handshake.
    pub protected: bool,
    /// Stream bytes the server read from the client.
    pub read_by_server: usize,
    /// Stream bytes the client read from the server.
    pub read_by_client: usize,
    /// An end accepted (or may have) a datagram its peer never sent.
    pub forged: bool,
}

/// Bytes each end has to send on the stream, at most.
const STREAM_BYTES: usize = 1 << 16;

/// The bytes at `offset..` of the stream `seed` names: a sequence whose
/// every window is unlike its shifts, so that a byte delivered at the wrong
/// offset shows.
fn stream_bytes(seed: u32, offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len)
        .map(|i| ((i as u32 ^ seed).wrapping_mul(0x9e37_79b1) >> 24) as u8)
        .collect()
}

/// One end's stream: what it wrote, what it read of the peer's.
#[derive(Default)]
struct StreamEnd {
    id: Option<StreamId>,
    written: usize,
    finished: bool,
    read: usize,
    peer_finished: bool,
}

impl StreamEnd {
    fn write(&mut self, conn: &mut Connection, seed: u32, len: usize) {
        let (Some(id), false) = (self.id, self.finished) else {
            return;
        };
        let len = len.min(STREAM_BYTES - self.written);
        let data = stream_bytes(seed, self.written, len);
        self.written += conn.write(id, &data).unwrap_or(0);
    }

    fn finish(&mut self, conn: &mut Connection) {
        if let (Some(id), false) = (self.id, self.finished) {
            self.finished = conn.finish(id).is_ok();
        }
    }

    /// Reads what there is; every byte must be the peer's, in order,
    /// unless a forgery got through.
    fn read(&mut self, conn: &mut Connection, peer_seed: u32, check: bool) {
        let Some(id) = self.id else { return };
        let mut buf = [0u8; 4096];
        loop {
            match conn.read(id, &mut buf) {
                Ok(ReadOutcome::Data(n)) => {
                    if check {
                        assert_eq!(
                            &buf[..n],
                            &stream_bytes(peer_seed, self.read, n)[..],
                            "stream bytes at {} are not what the peer sent",
                            self.read
                        );
                    }
                    self.read += n;
                }
                Ok(ReadOutcome::Finished) => {
                    self.peer_finished = true;
                    break;
                }
                Ok(ReadOutcome::Blocked) | Err(_) => break,
            }
        }
    }
}

const CLIENT_SEED: u32 = 0x1111;
const SERVER_SEED: u32 = 0x2222;

/// Runs an established connection, plain or protected as the input picks,
/// through a network the input controls while both ends send on one
/// stream: the real datagrams delivered, dropped, duplicated, reordered,
/// corrupted, re-sealed after a change or cut short, arbitrary datagrams,
/// replays and sealed packets of arbitrary frames injected into either end,
/// and time moving at any point.
///
/// Neither end may panic. Unless an end accepted a datagram its peer never
/// sent (which a protected connection never does): every byte read is the
/// byte the peer wrote at that offset, a finished stream was read to its
/// end, and neither end closes for a protocol violation. A protected end
/// never accepts more datagrams than it was given by its peer.
pub fn connection(data: &[u8]) -> ConnectionOutcome {
    let mut input = Input::new(data);
    let mode = input.u8();
    let protected = mode & 1 == 1;
    let Some(mut pair) = established(protected) else {
        panic!("a clean handshake did not establish");
    };
    pair.may_forge = mode & 2 == 2;
    let mut client = StreamEnd::default();
    let mut server = StreamEnd::default();
    client.id = pair.client.open_stream().ok();
    assert!(client.id.is_some(), "an established client opens a stream");
    while !input.is_empty() {
        let op = input.u8();
        let end = if op & 0x80 == 0 {
            End::Server
        } else {
            End::Client
        };
        match op % 8 {
            0..=2 => pair.move_one(end, &mut input),
            3 => pair.inject(end, &mut input),
            4 => pair.step_time(&mut input),
            5 => pair.release(end, &mut input),
            6 => {
                let len = usize::from(input.u8()) * 64;
                match end {
                    End::Client => client.write(&mut pair.client, CLIENT_SEED, len),
                    End::Server => server.write(&mut pair.server, SERVER_SEED, len),
                }
            }
            _ => match (end, op & 0x40 == 0) {
                (End::Client, true) => client.finish(&mut pair.client),
                (End::Server, true) => server.finish(&mut pair.server),
                (End::Client, false) => pair.client.close(pair.now),
                (End::Server, false) => pair.server.close(pair.now),
            },
        }
        if server.id.is_none() {
            server.id = pair.server.accept_stream();
        }
        pair.drain();
        let check = !pair.forged;
        client.read(&mut pair.client, SERVER_SEED, check);
        server.read(&mut pair.server, CLIENT_SEED, check);
        check_connection(&mut pair, &client, &server);
    }
    ConnectionOutcome {
        protected,
        read_by_server: server.read,
        read_by_client: client.read,
        forged: pair.forged,
    }
}

/// A client and server, plain or protected, after a clean handshake.
fn established(protected: bool) -> Option<Pair> {
    let now = Instant::now();
    let config = TransportConfig::default();
    let (client, server) = if protected {
        let server_keys = keypair(2);
        (
            Connection::secure_client(
                config.clone(),
                SecurityConfig::new(keypair(1)),
                server_keys.public(),
                now,
                1,
                [11; KEY_LEN],
            )
            .ok()?,
            Connection::secure_server(
                config,
                SecurityConfig::new(server_keys),
                now,
                2,
                [12; KEY_LEN],
            )
            .ok()?,
        )
    } else {
        (
            Connection::client(config.clone(), now, 1).ok()?,
            Connection::server(config, now, 2).ok()?,
        )
    };
    let mut pair = Pair {
        client,
        server,
        to_server: Path::default(),
        to_client: Path::default(),
        now,
        may_forge: false,
        forged: false,
        protected,
    };
    for _ in 0..4 {
        pair.drain();
        while let Some(datagram) = pair.to_server.queue.pop_front() {
            pair.deliver(End::Server, &datagram, true);
        }
        pair.drain();
        while let Some(datagram) = pair.to_client.queue.pop_front() {
            pair.deliver(End::Client, &datagram, true);
        }
    }
    while pair.client.poll_event().is_some() {}
    while pair.server.poll_event().is_some() {}
    (pair.client.is_established() && pair.server.is_established()).then_some(pair)
}

fn check_connection(pair: &mut Pair, client: &StreamEnd, server: &StreamEnd) {
    let forged = pair.forged;
    for (conn, path) in [
        (&mut pair.client, &pair.to_client),
        (&mut pair.server, &pair.to_server),
    ] {
        if pair.protected {
            let stats = conn.stats();
            assert!(
                stats.packets_received <= path.delivered,
                "{:?} accepted {} datagrams of {} its peer sent",
                conn.side(),
                stats.packets_received,
                path.delivered
            );
        }
        while let Some(event) = conn.poll_event() {
            let Event::Closed(reason) = event else {
                continue;
            };
            if forged {
                continue;
            }
            let violation = match &reason {
                CloseReason::ProtocolViolation(_) => true,
                CloseReason::ByPeer { code, .. } => *code != codes::NO_ERROR,
                _ => false,
            };
            assert!(
                !violation,
                "{:?} closed on genuine traffic: {reason:?}",
                conn.side()
            );
        }
    }
    for (end, peer) in [(client, server), (server, client)] {
        if end.peer_finished && !forged {
            assert_eq!(end.read, peer.written, "finished before the end");
        }
    }
}

/// A source address as the acceptor's cookies see it: an IPv4 address and
/// its IPv4-mapped IPv6 form are the same host.
fn canonical(addr: SocketAddr) -> (Ipv6Addr, u16) {
    let ip = match addr.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    (ip, addr.port())
}

/// A source address the input picks: one of a few IPv4 or IPv6 hosts and
/// ports (so that addresses repeat), the IPv4-mapped form of one, or any
/// address at all.
fn source_address(input: &mut Input<'_>) -> SocketAddr {
    let pick = input.u8();
    let host = pick >> 4;
    let port = 4000 + u16::from(pick >> 2 & 3);
    match pick & 3 {
        0 => SocketAddr::new(Ipv4Addr::new(192, 0, 2, host).into(), port),
        1 => SocketAddr::new(
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, u16::from(host)).into(),
            port,
        ),
        2 => SocketAddr::new(Ipv4Addr::new(192, 0, 2, host).to_ipv6_mapped().into(), port),
        _ => {
            let bits = input.u64();
            if bits & 1 == 0 {
                SocketAddr::new(Ipv4Addr::from((bits >> 16) as u32).into(), bits as u16)
            } else {
                let high = u128::from(input.u64()) << 64;
                SocketAddr::new(Ipv6Addr::from(high | u128::from(bits)).into(), bits as u16)
            }
        }
    }
}

/// The `n`th address of a spoofed flood: every one distinct, IPv4 and
/// IPv6 in turn.
fn flood_address(n: u32) -> SocketAddr {
    if n.is_multiple_of(2) {
        SocketAddr::new(
            Ipv4Addr::from(0x0a00_0000 | n).into(),
            1024 + (n % 60_000) as u16,
        )
    } else {
        SocketAddr::new(
            Ipv6Addr::from(0x2001_0db8_ffff_u128 << 80 | u128::from(n)).into(),
            (n % 60_000) as u16 + 1024,
        )
    }
}

/// A plain-layer Initial to `dcid`, padded with zeros to `len` bytes (or
/// left at its header and checksum if that is longer).
fn forged_initial(dcid: ConnectionId, number: u64, len: usize) -> Vec<u8> {
    let mut packet = Vec::new();
    let number = PacketNumber(number & VarInt::MAX.into_inner());
    Header {
        packet_type: PacketType::Initial,
        key_phase: false,
        dcid,
        number: TruncatedPacketNumber::whole(number),
    }
    .emit(&mut packet);
    let header_len = packet.len();
    packet.resize(len.saturating_sub(4).max(header_len), 0);
    PlainProtection.seal(number.0, header_len, &mut packet);
    packet
}

/// A cookie the acceptor sent: for whom, and until when.
#[derive(Debug, Clone, Copy)]
struct Issued {
    to: (Ipv6Addr, u16),
    dcid: ConnectionId,
    expiry: Instant,
}

/// A connection the driver made from an accepted Initial.
struct Admitted {
    from: SocketAddr,
    dcid: ConnectionId,
    /// Finished its handshake (or, without a connection, was told so).
    complete: bool,
    /// The server connection, for the first few admitted: it answers the
    /// client within the anti-amplification limit.
    server: Option<Connection>,
}

/// A genuine client and where it sends from.
struct AcceptClient {
    conn: Connection,
    from: SocketAddr,
    /// Datagrams it sent, for replays.
    sent: Vec<Vec<u8>>,
}

/// Server connections the driver makes of admitted Initials at most; the
/// others exist only as counts.
const MAX_SERVERS: usize = 4;
/// Spoofed datagrams one flood sends at most.
const MAX_FLOOD: u32 = 64;

/// What a run of [`accept`] came to, so that tests can check the driver
/// reaches the decisions that matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptOutcome {
    /// The acceptor's counters at the end.
    pub stats: AcceptStats,
    /// Retries a genuine client followed.
    pub retries_followed: u64,
    /// Genuine clients that ended established.
    pub clients_established: usize,
}

/// The server's side of [`accept`]: the acceptor, the connections it
/// admitted, and what the driver expects of both.
struct AcceptRun {
    acceptor: Acceptor,
    config: AcceptConfig,
    now: Instant,
    admitted: Vec<Admitted>,
    /// Half-open handshakes of other clients, as the load the input sets.
    other_half_open: usize,
    issued: HashMap<Vec<u8>, Issued>,
    /// Per address: bytes received from it, and bytes sent to it before
    /// it was proved.
    received: HashMap<(Ipv6Addr, u16), u64>,
    sent_unproved: HashMap<(Ipv6Addr, u16), u64>,
    /// What the acceptor's counters must be.
    expected: AcceptStats,
    /// Datagrams from the server to each address, oldest first.
    to_address: Vec<(SocketAddr, Vec<u8>)>,
}

impl AcceptRun {
    fn load(&self, from: SocketAddr) -> ServerLoad {
        let ip = canonical(from).0;
        ServerLoad {
            half_open: self.other_half_open + self.admitted.iter().filter(|a| !a.complete).count(),
            from_same_ip: self
                .admitted
                .iter()
                .filter(|a| canonical(a.from).0 == ip)
                .count(),
        }
    }

    /// What the acceptor must decide, as a refusal or the kind of
    /// decision: `Ok(None)` a retry, `Ok(Some(validated))` an accept.
    fn expect(
        &self,
        from: SocketAddr,
        datagram: &[u8],
        load: ServerLoad,
    ) -> Result<Option<bool>, Refusal> {
        let initial = InitialDatagram::parse(datagram).ok_or(Refusal::NotInitial)?;
        if datagram.len() < MIN_INITIAL {
            return Err(Refusal::TooShort(datagram.len()));
        }
        if load.from_same_ip >= self.config.max_connections_per_ip {
            return Err(Refusal::AddressLimit);
        }
        if let Some(cookie) = initial.cookie {
            let issued = self
                .issued
                .get(cookie)
                .filter(|i| i.to == canonical(from) && i.dcid == initial.dcid)
                .ok_or(Refusal::Cookie(CookieError::Invalid))?;
            if self.now >= issued.expiry {
                return Err(Refusal::Cookie(CookieError::Expired));
            }
            if load.half_open >= self.config.max_half_open {
                return Err(Refusal::HalfOpenLimit);
            }
            return Ok(Some(true));
        }
        let retry = match self.config.retry {
            RetryPolicy::Never => false,
            RetryPolicy::Always => true,
            RetryPolicy::AboveHalfOpen(threshold) => load.half_open >= threshold,
        };
        if retry {
            return Ok(None);
        }
        if load.half_open >= self.config.max_half_open {
            return Err(Refusal::HalfOpenLimit);
        }
        Ok(Some(false))
    }

    /// A datagram from `from` that no connection claims, checked against
    /// what the acceptor must decide.
    fn decide(&mut self, from: SocketAddr, datagram: &[u8]) {
        let load = self.load(from);
        let expected = self.expect(from, datagram, load);
        let decision = self.acceptor.handle(self.now, from, datagram, load);
        match (&decision, expected) {
            (Decision::Retry(retry), Ok(None)) => {
                let parsed = RetryPacket::parse(retry).expect("a retry that parses");
                let initial = InitialDatagram::parse(datagram).expect("an initial");
                assert_eq!(parsed.initial_dcid, initial.dcid, "retry for another id");
                self.issued.insert(
                    parsed.cookie.to_vec(),
                    Issued {
                        to: canonical(from),
                        dcid: initial.dcid,
                        expiry: self.now + self.config.cookie_lifetime,
                    },
                );
                *self.sent_unproved.entry(canonical(from)).or_default() += retry.len() as u64;
                self.expected.retries_sent += 1;
                if self.to_address.len() < PATH_CAPACITY {
                    self.to_address.push((from, retry.clone()));
                }
            }
            (Decision::Accept(accepted), Ok(Some(validated))) => {
                assert_eq!(accepted.address_validated, validated, "{accepted:?}");
                assert!(
                    load.half_open < self.config.max_half_open
                        && load.from_same_ip < self.config.max_connections_per_ip,
                    "admitted beyond the limits: {load:?}"
                );
                if validated {
                    self.expected.accepted_with_cookie += 1;
                } else {
                    self.expected.accepted_unvalidated += 1;
                }
                self.admit(from, accepted.dcid, accepted.packet, validated);
            }
            (Decision::Refuse(refusal), Err(expected)) if *refusal == expected => {
                let counter = match expected {
                    Refusal::NotInitial => &mut self.expected.not_initial,
                    Refusal::TooShort(_) => &mut self.expected.too_short,
                    Refusal::Cookie(CookieError::Invalid) => &mut self.expected.cookies_invalid,
                    Refusal::Cookie(CookieError::Expired) => &mut self.expected.cookies_expired,
                    Refusal::HalfOpenLimit => &mut self.expected.half_open_limit,
                    Refusal::AddressLimit => &mut self.expected.address_limit,
                };
                *counter += 1;
            }
            (decision, expected) => panic!(
                "from {from}, {} bytes, {load:?}: decided {decision:?}, expected {expected:?}",
                datagram.len()
            ),
        }
    }

    /// Makes a connection of an accepted Initial.
    fn admit(&mut self, from: SocketAddr, dcid: ConnectionId, packet: &[u8], validated: bool) {
        let servers = self.admitted.iter().filter(|a| a.server.is_some()).count();
        let server = (servers < MAX_SERVERS)
            .then(|| Connection::server(TransportConfig::default(), self.now, 2).ok())
            .flatten()
            .map(|mut server| {
                if validated {
                    server.validate_address();
                }
                server.handle_datagram(self.now, packet, EcnCodepoint::NotEct);
                server
            });
        self.admitted.push(Admitted {
            from,
            dcid,
            complete: false,
            server,
        });
        self.drain_servers();
    }

    /// A datagram from `from`, routed as a server's driver does: to the
    /// connection whose own id it names, else to the one made of an
    /// Initial from that address to its connection id, else to the
    /// acceptor.
    fn receive(&mut self, from: SocketAddr, datagram: &[u8]) {
        *self.received.entry(canonical(from)).or_default() += datagram.len() as u64;
        let header_dcid = Header::parse(datagram).ok().map(|(h, _)| h.dcid);
        let initial = InitialDatagram::parse(datagram);
        let by_own_id = header_dcid.and_then(|dcid| {
            self.admitted.iter().position(|a| {
                a.server
                    .as_ref()
                    .is_some_and(|server| server.local_cid() == dcid)
            })
        });
        let claimed = by_own_id.map(|at| (at, datagram)).or_else(|| {
            let initial = initial?;
            let at = self
                .admitted
                .iter()
                .position(|a| a.dcid == initial.dcid && canonical(a.from) == canonical(from))?;
            Some((at, initial.packet))
        });
        match claimed {
            Some((at, packet)) => {
                if let Some(server) = &mut self.admitted[at].server {
                    server.handle_datagram(self.now, packet, EcnCodepoint::NotEct);
                }
                self.drain_servers();
            }
            None => self.decide(from, datagram),
        }
    }

    /// Takes what the server connections send, counting what goes to
    /// unproved addresses.
    fn drain_servers(&mut self) {
        for admitted in &mut self.admitted {
            let Some(server) = &mut admitted.server else {
                continue;
            };
            for _ in 0..DRAIN_LIMIT {
                let proved = server.is_address_validated();
                let Some(transmit) = server.poll_transmit(self.now) else {
                    break;
                };
                if !proved {
                    *self
                        .sent_unproved
                        .entry(canonical(admitted.from))
                        .or_default() += transmit.contents.len() as u64;
                }
                if self.to_address.len() < PATH_CAPACITY {
                    self.to_address.push((admitted.from, transmit.contents));
                }
            }
            if server.is_established() {
                admitted.complete = true;
            }
        }
    }

    /// The invariants that hold after every step.
    fn check(&self) {
        assert_eq!(self.acceptor.stats(), self.expected, "stats");
        for (address, &sent) in &self.sent_unproved {
            let received = self.received.get(address).copied().unwrap_or(0);
            assert!(
                sent <= received * AMPLIFICATION_FACTOR,
                "{sent} bytes to unproved {address:?}, which sent {received}"
            );
        }
    }
}

/// Runs a server's [`Acceptor`] (its retry policy, cookie lifetime and
/// limits picked by the input) against a sequence of events the input
/// picks: genuine clients' Initials from their addresses (IPv4, IPv6 or
/// IPv4-mapped) and the retries they follow, replays of their datagrams
/// from other addresses, Initials carrying issued cookies from the address
/// and connection id they were issued to or others, before or after
/// expiry, bit-flipped, arbitrary datagrams, floods of padded Initials
/// from many spoofed addresses, time moving, other clients' half-open
/// handshakes coming and going, and admitted connections completing or
/// closing. The first few admitted Initials become real server connections
/// that answer their clients.
///
/// Every decision is the one the acceptor's rules give for that datagram
/// and load (so no connection is admitted for a cookie issued to another
/// address or connection id, or expired, or beyond the half-open and
/// per-address limits, and without a cookie only when the policy does not
/// ask for one); its counters match the decisions; what goes to an address
/// before it is proved (retries and server connections' datagrams) is at
/// most [`AMPLIFICATION_FACTOR`] times what came from it; and a client
/// follows at most one retry.
pub fn accept(data: &[u8]) -> AcceptOutcome {
    let mut input = Input::new(data);
    let policy = input.u8();
    let config = AcceptConfig {
        retry: match policy % 4 {
            0 => RetryPolicy::Never,
            1 => RetryPolicy::Always,
            _ => RetryPolicy::AboveHalfOpen(usize::from(policy >> 2 & 7)),
        },
        cookie_lifetime: Duration::from_millis(1 + u64::from(input.u16())),
        max_half_open: 1 + usize::from(input.u8() % 16),
        max_connections_per_ip: 1 + usize::from(input.u8() % 8),
    };
    let start = Instant::now();
    let mut run = AcceptRun {
        acceptor: Acceptor::new(config.clone(), [9; 32], start),
        config,
        now: start,
        admitted: Vec::new(),
        other_half_open: 0,
        issued: HashMap::new(),
        received: HashMap::new(),
        sent_unproved: HashMap::new(),
        expected: AcceptStats::default(),
        to_address: Vec::new(),
    };
    let mut clients: Vec<AcceptClient> = Vec::new();
    let mut flood = 0u32;
    while !input.is_empty() {
        let op = input.u8();
        match op % 12 {
            // A new genuine client.
            0 if clients.len() < 3 => {
                let from = source_address(&mut input);
                let seed = 10 + clients.len() as u64;
                if let Ok(conn) = Connection::client(TransportConfig::default(), run.now, seed) {
                    clients.push(AcceptClient {
                        conn,
                        from,
                        sent: Vec::new(),
                    });
                }
            }
            // A client's next datagram, from its address.
            0..=2 if !clients.is_empty() => {
                let at = usize::from(op >> 4) % clients.len();
                let client = &mut clients[at];
                if let Some(transmit) = client.conn.poll_transmit(run.now) {
                    if client.sent.len() < PATH_CAPACITY {
                        client.sent.push(transmit.contents.clone());
                    }
                    run.receive(client.from, &transmit.contents);
                }
            }
            // A client's datagram replayed from anywhere.
            3 if !clients.is_empty() => {
                let client = &clients[usize::from(op >> 4) % clients.len()];
                if !client.sent.is_empty() {
                    let datagram = client.sent[usize::from(input.u8()) % client.sent.len()].clone();
                    let from = source_address(&mut input);
                    run.receive(from, &datagram);
                }
            }
            // The server's datagrams reach whichever client has the address.
            4 => {
                for (to, datagram) in std::mem::take(&mut run.to_address) {
                    let client = clients
                        .iter_mut()
                        .find(|c| canonical(c.from) == canonical(to));
                    if let Some(client) = client {
                        client
                            .conn
                            .handle_datagram(run.now, &datagram, EcnCodepoint::NotEct);
                    }
                }
            }
            // An issued cookie (perhaps changed) on an Initial, from
            // anywhere, for any connection id.
            5 if !run.issued.is_empty() => {
                let mut cookies: Vec<(&Vec<u8>, &Issued)> = run.issued.iter().collect();
                cookies.sort_by(|a, b| a.0.cmp(b.0));
                let (cookie, issued) = cookies[usize::from(input.u16()) % cookies.len()];
                let (mut cookie, issued) = (cookie.clone(), *issued);
                let flags = input.u8();
                if flags & 1 != 0 {
                    let bit = usize::from(input.u8()) % (cookie.len() * 8);
                    cookie[bit / 8] ^= 1 << (bit % 8);
                }
                let dcid = if flags & 2 != 0 {
                    ConnectionId(input.id(u64::from(issued.dcid.0)) as u32)
                } else {
                    issued.dcid
                };
                let from = if flags & 4 != 0 {
                    source_address(&mut input)
                } else {
                    SocketAddr::new(IpAddr::V6(issued.to.0), issued.to.1)
                };
                let len = if flags & 8 != 0 {
                    usize::from(input.u16()) % 1400
                } else {
                    MIN_INITIAL
                };
                let packet = forged_initial(dcid, input.u64(), len);
                run.receive(from, &InitialDatagram::wrap(&cookie, &packet));
            }
            // An arbitrary datagram, or a plain Initial to any id.
            6 => {
                let from = source_address(&mut input);
                let len = usize::from(input.u16()) % 1500;
                let datagram = if op & 0x10 != 0 {
                    input.bytes(len).to_vec()
                } else {
                    forged_initial(ConnectionId(input.u64() as u32), input.u64(), len)
                };
                run.receive(from, &datagram);
            }
            // A flood of padded Initials from distinct spoofed addresses.
            7 => {
                let count = u32::from(input.u8()) % MAX_FLOOD;
                for _ in 0..count {
                    let from = flood_address(flood);
                    let packet = forged_initial(ConnectionId(flood), 0, MIN_INITIAL);
                    flood += 1;
                    run.receive(from, &packet);
                }
            }
            // Time moves, in whole milliseconds.
            8 => {
                let step = u64::from(input.u16()) * u64::from(input.u8() % 4 + 1);
                run.now += Duration::from_millis(step);
                for client in &mut clients {
                    client.conn.handle_timeout(run.now);
                }
                for admitted in &mut run.admitted {
                    if let Some(server) = &mut admitted.server {
                        server.handle_timeout(run.now);
                    }
                }
                run.drain_servers();
            }
            // Other clients' handshakes come and go.
            9 => run.other_half_open = usize::from(input.u8() % 32),
            // An admitted connection completes its handshake, or closes.
            10 if !run.admitted.is_empty() => {
                let at = usize::from(input.u8()) % run.admitted.len();
                if op & 0x10 != 0 {
                    run.admitted.remove(at);
                } else if run.admitted[at].server.is_none() {
                    run.admitted[at].complete = true;
                }
            }
            // A retry sent to a client (its own, another's, or made up).
            11 if !clients.is_empty() => {
                let at = usize::from(op >> 4) % clients.len();
                let client = &mut clients[at];
                let dcid = ConnectionId(input.u64() as u32);
                let len = 1 + usize::from(input.u8()) % MAX_COOKIE_LEN;
                let cookie = input.bytes(len);
                if !cookie.is_empty() {
                    let mut retry = Vec::new();
                    RetryPacket {
                        initial_dcid: dcid,
                        cookie,
                    }
                    .emit(&mut retry);
                    client
                        .conn
                        .handle_datagram(run.now, &retry, EcnCodepoint::NotEct);
                }
            }
            _ => {}
        }
        run.check();
        for client in &clients {
            assert!(
                client.conn.stats().retries <= 1,
                "a client followed two retries"
            );
        }
    }
    AcceptOutcome {
        stats: run.acceptor.stats(),
        retries_followed: clients.iter().map(|c| c.conn.stats().retries).sum(),
        clients_established: clients.iter().filter(|c| c.conn.is_established()).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The acceptor's settings at the front of an [`accept`] input: the
    /// policy byte, the cookie lifetime in milliseconds (at least 1), the
    /// half-open and per-address limits less one.
    fn settings(policy: u8, lifetime_ms: u16, half_open: u8, per_ip: u8) -> Vec<u8> {
        let [low, high] = (lifetime_ms - 1).to_le_bytes();
        vec![policy, low, high, half_open, per_ip]
    }

    /// A client at 192.0.2.1:4000, then `rounds` of: its next datagram
    /// sent, and what the server sent delivered.
    fn client_rounds(rounds: usize) -> Vec<u8> {
        let mut ops = vec![0, 0x10];
        for _ in 0..rounds {
            ops.extend_from_slice(&[1, 4]);
        }
        ops
    }

    /// Inputs that reach each refusal and each kind of admission, written
    /// as the seeds of the fuzz corpus.
    pub(super) fn seeds() -> Vec<(&'static str, Vec<u8>)> {
        let mut seeds = Vec::new();
        let mut retried = settings(1, 10_000, 15, 7);
        retried.extend(client_rounds(8));
        seeds.push(("retry_then_cookie", retried));
        // The client's cookie from another address, bit-flipped for
        // another connection id, from its own address once its connection
        // is gone (admitted again), and after expiry.
        let number = [0u8; 8];
        let mut replays = settings(1, 500, 15, 7);
        replays.extend(client_rounds(2));
        for op in [
            &[5, 0, 0, 4, 0x21][..],
            &number,
            &[5, 0, 0, 3, 7, 2, 1],
            &number,
            &[22, 0, 5, 0, 0, 0],
            &number,
            &[22, 0, 8, 0xf4, 0x01, 0, 5, 0, 0, 0],
            &number,
        ] {
            replays.extend_from_slice(op);
        }
        seeds.push(("cookie_replays", replays));
        // A flood from spoofed addresses: admitted without retries below
        // six half-open handshakes, retried above.
        let mut flood = settings(0x1a, 10_000, 15, 0);
        flood.extend_from_slice(&[7, 40]);
        seeds.push(("spoofed_flood", flood));
        // Without retries: a client admitted at once, a second Initial from
        // its IP address at the per-address limit, arbitrary bytes, a
        // flood at the half-open limit, time passing.
        let mut never = settings(0, 1000, 3, 0);
        never.extend(client_rounds(4));
        never.extend_from_slice(&[6, 0x10, 0x14, 0x05, 1, 2, 3, 4, 5, 6, 7, 8]);
        never.extend_from_slice(&number);
        never.extend_from_slice(&[0x12, 0x11, 10, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]);
        never.extend_from_slice(&[7, 10, 8, 0x30, 0x75, 3, 1, 4]);
        seeds.push(("no_retry", never));
        seeds
    }

    #[test]
    fn a_client_follows_one_retry_and_is_admitted_with_its_cookie() {
        let (_, data) = &seeds()[0];
        let outcome = accept(data);
        assert_eq!(outcome.retries_followed, 1);
        assert_eq!(outcome.stats.retries_sent, 1);
        assert_eq!(outcome.stats.accepted_with_cookie, 1);
        assert_eq!(outcome.clients_established, 1);
    }

    #[test]
    fn cookies_open_only_where_and_while_they_were_issued() {
        let (_, data) = &seeds()[1];
        let stats = accept(data).stats;
        assert_eq!(stats.retries_sent, 1, "{stats:?}");
        assert_eq!(stats.accepted_with_cookie, 2, "{stats:?}");
        assert_eq!(stats.cookies_invalid, 2, "{stats:?}");
        assert_eq!(stats.cookies_expired, 1, "{stats:?}");
    }

    #[test]
    fn a_spoofed_flood_is_retried_above_the_threshold() {
        let (_, data) = &seeds()[2];
        let stats = accept(data).stats;
        assert_eq!(stats.accepted_unvalidated, 6, "{stats:?}");
        assert_eq!(stats.retries_sent, 34, "{stats:?}");
    }

    #[test]
    fn without_retries_the_limits_still_hold() {
        let (_, data) = &seeds()[3];
        let stats = accept(data).stats;
        assert_eq!(stats.retries_sent, 0, "{stats:?}");
        // The client's connection is established, so four more fit.
        assert_eq!(stats.accepted_unvalidated, 5, "{stats:?}");
        assert_eq!(stats.address_limit, 1, "{stats:?}");
        assert_eq!(stats.not_initial, 1, "{stats:?}");
        assert_eq!(stats.half_open_limit, 6, "{stats:?}");
    }

    /// Writes the seeds into the fuzz corpus: `cargo test -p ltx-proto
    /// --lib write_accept_seeds -- --ignored`.
    #[test]
    #[ignore = "writes fuzz/corpus/accept/"]
    fn write_accept_seeds() {
        let dir =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/accept");
        std::fs::create_dir_all(&dir).expect("the corpus directory");
        for (name, data) in seeds() {
            std::fs::write(dir.join(format!("seed-{name}")), data).expect("a seed file");
        }
    }
}
