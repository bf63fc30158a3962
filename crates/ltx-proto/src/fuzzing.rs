//! Drivers that feed arbitrary bytes to the wire parsers, the handshake and
//! established connections, shared by the `cargo fuzz` targets and the
//! property tests that run the same inputs on every CI build. Not part of
//! the stable API.

use ltx_coding::fuzzing::FuzzInput as Input;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::event::codes;
use crate::protection::{
    AllowList, PacketProtection, PlainProtection, PresharedKey, SecurityConfig, StaticKeypair,
    KEY_LEN,
};
use crate::wire::{
    ConnectionId, Frame, Frames, Header, PacketNumber, PacketType, StreamId, VarInt,
    MAX_NOISE_MESSAGE_LEN,
};
use crate::{CloseReason, Connection, EcnCodepoint, Event, ReadOutcome, TransportConfig};

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
/// made to match again; `None` if it has no header to keep.
fn forge(datagram: &[u8], input: &mut Input<'_>) -> Option<Vec<u8>> {
    let (_, header_len) = Header::parse(datagram).ok()?;
    let body_end = datagram.len().checked_sub(4)?.max(header_len);
    let mut packet = datagram[..body_end].to_vec();
    corrupt(&mut packet[header_len..], input);
    PlainProtection.seal(0, header_len, &mut packet);
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
        number,
    }
    .emit(&mut packet);
    let header_len = packet.len();
    packet.extend_from_slice(payload);
    PlainProtection.seal(number.0, header_len, &mut packet);
    packet
}

/// Whether the plain layer would accept `datagram`: a corrupted datagram
/// that still opens is as good as a forgery to an unauthenticated layer.
fn opens_plain(datagram: &[u8]) -> bool {
    let Ok((header, header_len)) = Header::parse(datagram) else {
        return false;
    };
    PlainProtection
        .open(header.number.0, header_len, &mut datagram.to_vec())
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
        if !genuine && !self.protected && opens_plain(&datagram) {
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
                if let Some(forged) = forge(&datagram, input) {
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
            ConnectionId(input.u64())
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
                    let Some(forged) = forge(&replay, input) else {
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
