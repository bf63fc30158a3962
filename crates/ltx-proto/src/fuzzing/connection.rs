//! Established connections under arbitrary streams, paths and forged
//! packets.

use super::handshake::keypair;
use super::pair::{End, Pair, Path};
use crate::event::codes;
use crate::protection::{SecurityConfig, KEY_LEN};
use crate::wire::StreamId;
use crate::{CloseReason, Connection, Event, ReadOutcome, TransportConfig};
use ltx_coding::fuzzing::FuzzInput as Input;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Instant;

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
pub(super) const STREAM_BYTES: usize = 1 << 16;

/// The bytes at `offset..` of the stream `seed` names: a sequence whose
/// every window is unlike its shifts, so that a byte delivered at the wrong
/// offset shows.
pub(super) fn stream_bytes(seed: u32, offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len)
        .map(|i| ((i as u32 ^ seed).wrapping_mul(0x9e37_79b1) >> 24) as u8)
        .collect()
}

/// One end's stream: what it wrote, what it read of the peer's.
#[derive(Default)]
pub(super) struct StreamEnd {
    pub(super) id: Option<StreamId>,
    pub(super) written: usize,
    pub(super) finished: bool,
    pub(super) read: usize,
    pub(super) peer_finished: bool,
}

impl StreamEnd {
    pub(super) fn write(&mut self, conn: &mut Connection, seed: u32, len: usize) {
        let (Some(id), false) = (self.id, self.finished) else {
            return;
        };
        let len = len.min(STREAM_BYTES - self.written);
        let data = stream_bytes(seed, self.written, len);
        self.written += conn.write(id, &data).unwrap_or(0);
    }

    pub(super) fn finish(&mut self, conn: &mut Connection) {
        if let (Some(id), false) = (self.id, self.finished) {
            self.finished = conn.finish(id).is_ok();
        }
    }

    /// Reads what there is; every byte must be the peer's, in order,
    /// unless a forgery got through.
    pub(super) fn read(&mut self, conn: &mut Connection, peer_seed: u32, check: bool) {
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

pub(super) const CLIENT_SEED: u32 = 0x1111;

pub(super) const SERVER_SEED: u32 = 0x2222;

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
pub(super) fn established(protected: bool) -> Option<Pair> {
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

pub(super) fn check_connection(pair: &mut Pair, client: &StreamEnd, server: &StreamEnd) {
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
pub(super) fn canonical(addr: SocketAddr) -> (Ipv6Addr, u16) {
    let ip = match addr.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    (ip, addr.port())
}
