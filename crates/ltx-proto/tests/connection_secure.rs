//! Secured connections: the Noise handshake and the sealed packets after
//! it, over a lossless instantaneous wire that tests may tamper with.
//!
//! Every attack here must be refused and counted, and must leave a
//! legitimate connection as it was: a client without the server's key, a
//! client whose key the server does not allow, a wrong pre-shared key,
//! replayed packets, bit-flipped packets and a replayed first message.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ltx_proto::protection::{
    AllowList, HandshakeError, PresharedKey, PublicKey, SecurityConfig, StaticKeypair,
};
use ltx_proto::wire::{
    ConnectionId, Frame, Header, PacketNumber, PacketType, TruncatedPacketNumber,
};
use ltx_proto::{
    CloseReason, Connection, EcnCodepoint, Event, ReadOutcome, StreamId, TransportConfig,
};
use proptest::prelude::*;

fn keypair(n: u8) -> StaticKeypair {
    StaticKeypair::from_entropy([n; 32])
}

fn client(security: SecurityConfig, server: PublicKey, now: Instant) -> Connection {
    Connection::secure_client(
        TransportConfig::default(),
        security,
        server,
        now,
        1,
        [11; 32],
    )
    .expect("valid config")
}

fn server(security: SecurityConfig, now: Instant) -> Connection {
    Connection::secure_server(TransportConfig::default(), security, now, 2, [12; 32])
        .expect("valid config")
}

/// What crossed the wire, for tests that replay or forge it.
#[derive(Default)]
struct Wire {
    to_server: Vec<Vec<u8>>,
    to_client: Vec<Vec<u8>>,
}

/// Moves datagrams both ways until both ends are quiet, then lets time run
/// to the next timer if it is due within a tenth of a second (pacing, acks;
/// not the idle timeout), `rounds` times; returns every datagram that moved.
fn run(now: &mut Instant, client: &mut Connection, server: &mut Connection, rounds: usize) -> Wire {
    let mut wire = Wire::default();
    for _ in 0..rounds {
        loop {
            let mut moved = false;
            while let Some(t) = client.poll_transmit(*now) {
                server.handle_datagram(*now, &t.contents, t.ecn);
                wire.to_server.push(t.contents);
                moved = true;
            }
            while let Some(t) = server.poll_transmit(*now) {
                client.handle_datagram(*now, &t.contents, t.ecn);
                wire.to_client.push(t.contents);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        let next = [client.poll_timeout(), server.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next.filter(|&t| t <= *now + Duration::from_millis(100)) else {
            break;
        };
        *now = next.max(*now);
        client.handle_timeout(*now);
        server.handle_timeout(*now);
    }
    wire
}

fn events(conn: &mut Connection) -> Vec<Event> {
    std::iter::from_fn(|| conn.poll_event()).collect()
}

fn read_all(conn: &mut Connection, id: StreamId) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(ReadOutcome::Data(n)) = conn.read(id, &mut buf) {
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Sends `len` patterned bytes client → server; returns what the server
/// read and the datagrams that moved.
fn transfer(
    now: &mut Instant,
    client: &mut Connection,
    server: &mut Connection,
    len: usize,
) -> (Vec<u8>, Vec<u8>, Wire) {
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let id = client.open_stream().expect("established");
    let mut written = 0;
    let mut received = Vec::new();
    let mut wire = Wire::default();
    let mut accepted = None;
    for _ in 0..10_000 {
        if written < data.len() {
            written += client.write(id, &data[written..]).unwrap_or(0);
            if written == data.len() {
                client.finish(id).unwrap();
            }
        }
        let w = run(now, client, server, 1);
        wire.to_server.extend(w.to_server);
        wire.to_client.extend(w.to_client);
        if accepted.is_none() {
            accepted = server.accept_stream();
        }
        if let Some(sid) = accepted {
            received.extend(read_all(server, sid));
        }
        if received.len() == data.len() {
            break;
        }
    }
    (data, received, wire)
}

fn established_pair(now: &mut Instant) -> (Connection, Connection, SecurityConfig) {
    let server_keys = keypair(2);
    let server_config = SecurityConfig::new(server_keys.clone());
    let mut c = client(SecurityConfig::new(keypair(1)), server_keys.public(), *now);
    let mut s = server(server_config.clone(), *now);
    run(now, &mut c, &mut s, 2);
    assert!(
        c.is_established() && s.is_established(),
        "{:?}\n{:?}",
        events(&mut c),
        events(&mut s)
    );
    (c, s, server_config)
}

#[test]
fn both_ends_prove_their_keys_and_the_payload_is_sealed() {
    let mut now = Instant::now();
    let (mut c, mut s, _) = established_pair(&mut now);
    assert_eq!(c.peer_key(), Some(keypair(2).public()));
    assert_eq!(s.peer_key(), Some(keypair(1).public()));
    assert!(events(&mut c).contains(&Event::Connected));
    assert!(events(&mut s).contains(&Event::Connected));
    let (sent, received, wire) = transfer(&mut now, &mut c, &mut s, 50_000);
    assert_eq!(received, sent);
    // The pattern's bytes never appear in clear on the wire.
    let needle = &sent[1000..1032];
    assert!(!wire
        .to_server
        .iter()
        .any(|d| d.windows(needle.len()).any(|w| w == needle)));
    assert_eq!(s.stats().packets_unauthentic, 0);
    assert_eq!(s.stats().packets_replayed, 0);
}

#[test]
fn the_server_is_connected_only_once_the_client_proves_it_has_the_keys() {
    let now = Instant::now();
    let server_keys = keypair(2);
    let mut c = client(SecurityConfig::new(keypair(1)), server_keys.public(), now);
    let mut s = server(SecurityConfig::new(server_keys), now);
    let initial = c.poll_transmit(now).expect("the client's first packet");
    assert!(initial.contents.len() >= 1200, "the Initial is padded");
    s.handle_datagram(now, &initial.contents, EcnCodepoint::Ect0);
    let answer = s.poll_transmit(now).expect("the server answers");
    assert!(!s.is_established());
    c.handle_datagram(now, &answer.contents, EcnCodepoint::Ect0);
    assert!(c.is_established(), "one round trip for the client");
    // The client's first sealed packet (a ping if it has nothing to say).
    let first = c.poll_transmit(now).expect("a sealed packet");
    s.handle_datagram(now, &first.contents, EcnCodepoint::Ect0);
    assert!(
        s.is_established(),
        "{:?} {:x?}",
        s.stats(),
        &first.contents[..20]
    );
}

#[test]
fn a_replayed_first_message_gets_an_answer_but_never_a_connection() {
    let mut now = Instant::now();
    let server_keys = keypair(2);
    let mut c = client(SecurityConfig::new(keypair(1)), server_keys.public(), now);
    let mut s = server(SecurityConfig::new(server_keys.clone()), now);
    let wire = run(&mut now, &mut c, &mut s, 2);
    assert!(s.is_established());
    // An attacker replays the client's Initial to a fresh server connection
    // (whose ephemeral key, from fresh entropy, differs).
    let mut victim = Connection::secure_server(
        TransportConfig::default(),
        SecurityConfig::new(server_keys),
        now,
        3,
        [13; 32],
    )
    .unwrap();
    victim.handle_datagram(now, &wire.to_server[0], EcnCodepoint::Ect0);
    assert!(victim.poll_transmit(now).is_some(), "it answers");
    // Even every later packet of the real client, replayed, opens nothing.
    for datagram in &wire.to_server[1..] {
        victim.handle_datagram(now, datagram, EcnCodepoint::Ect0);
    }
    assert!(!victim.is_established());
    assert!(!events(&mut victim).contains(&Event::Connected));
    // All but the three copies of the Initial carry sealed data.
    let data_packets = wire.to_server.len() as u64 - 3;
    assert!(victim.stats().packets_unauthentic >= data_packets);
}

/// A client the server must refuse: no answer, the server closes with
/// `expected`, the client times out.
fn refused(
    client_config: SecurityConfig,
    server_key: PublicKey,
    server_config: SecurityConfig,
) -> HandshakeError {
    let mut now = Instant::now();
    let mut c = client(client_config, server_key, now);
    let mut s = server(server_config, now);
    let initial = c.poll_transmit(now).expect("a first packet");
    s.handle_datagram(now, &initial.contents, EcnCodepoint::Ect0);
    assert!(
        s.poll_transmit(now).is_none(),
        "a refused client hears nothing"
    );
    assert!(s.is_closed());
    let reason = events(&mut s)
        .into_iter()
        .find_map(|e| match e {
            Event::Closed(CloseReason::HandshakeRefused(why)) => Some(why),
            _ => None,
        })
        .expect("the server says why it refused");
    assert!(s.stats().packets_dropped >= 1);
    // The client retries, then gives up after the idle timeout.
    for _ in 0..1000 {
        let Some(t) = c.poll_timeout() else { break };
        now = t;
        c.handle_timeout(now);
        while c.poll_transmit(now).is_some() {}
    }
    assert!(events(&mut c).contains(&Event::Closed(CloseReason::HandshakeTimeout)));
    reason
}

#[test]
fn a_client_without_the_servers_key_is_refused_without_an_answer() {
    let server_keys = keypair(2);
    let why = refused(
        SecurityConfig::new(keypair(1)),
        keypair(3).public(),
        SecurityConfig::new(server_keys),
    );
    assert_eq!(why, HandshakeError::Unauthentic);
}

#[test]
fn a_client_whose_key_is_not_allowed_is_refused_and_an_allowed_one_is_not() {
    let server_keys = keypair(2);
    let mut server_config = SecurityConfig::new(server_keys.clone());
    server_config.allowed_clients = Some(Arc::new(AllowList::from_iter([keypair(1).public()])));
    let why = refused(
        SecurityConfig::new(keypair(4)),
        server_keys.public(),
        server_config.clone(),
    );
    assert_eq!(why, HandshakeError::NotAllowed(keypair(4).public()));
    let mut now = Instant::now();
    let mut c = client(SecurityConfig::new(keypair(1)), server_keys.public(), now);
    let mut s = server(server_config, now);
    run(&mut now, &mut c, &mut s, 2);
    assert!(c.is_established() && s.is_established());
}

#[test]
fn a_wrong_preshared_key_is_refused_and_the_right_one_connects() {
    let server_keys = keypair(2);
    let mut server_config = SecurityConfig::new(server_keys.clone());
    server_config.psk = Some(PresharedKey::from_bytes([7; 32]));
    let mut wrong = SecurityConfig::new(keypair(1));
    wrong.psk = Some(PresharedKey::from_bytes([8; 32]));
    assert_eq!(
        refused(wrong, server_keys.public(), server_config.clone()),
        HandshakeError::Unauthentic
    );
    let none = SecurityConfig::new(keypair(1));
    assert_eq!(
        refused(none, server_keys.public(), server_config.clone()),
        HandshakeError::Unauthentic
    );
    let mut right = SecurityConfig::new(keypair(1));
    right.psk = Some(PresharedKey::from_bytes([7; 32]));
    let mut now = Instant::now();
    let mut c = client(right, server_keys.public(), now);
    let mut s = server(server_config, now);
    run(&mut now, &mut c, &mut s, 2);
    assert!(c.is_established() && s.is_established());
}

#[test]
fn replayed_and_bit_flipped_packets_are_counted_and_the_transfer_is_unaffected() {
    let mut now = Instant::now();
    let (mut c, mut s, _) = established_pair(&mut now);
    let (_, _, wire) = transfer(&mut now, &mut c, &mut s, 20_000);
    let before = s.stats();
    // Replays of every packet the client sent so far.
    let data: Vec<&Vec<u8>> = wire.to_server.iter().collect();
    for datagram in &data {
        s.handle_datagram(now, datagram, EcnCodepoint::Ect0);
    }
    // Bit flips in the header, the payload and the tag of each.
    let mut flipped = 0;
    for datagram in &data {
        for at in [0, 12, datagram.len() / 2, datagram.len() - 1] {
            let mut bad = datagram.to_vec();
            bad[at] ^= 0x08;
            s.handle_datagram(now, &bad, EcnCodepoint::Ect0);
            flipped += 1;
        }
    }
    let after = s.stats();
    assert_eq!(
        after.packets_replayed - before.packets_replayed,
        data.len() as u64
    );
    // A flip in byte 0 may break the header's fixed form instead; every
    // other flip fails authentication.
    let unauthentic = after.packets_unauthentic - before.packets_unauthentic;
    assert!(
        unauthentic >= flipped - data.len() as u64,
        "{unauthentic} of {flipped}"
    );
    assert_eq!(after.packets_received, before.packets_received);
    assert_eq!(after.stream_bytes_read, before.stream_bytes_read);
    // The connection goes on as if nothing happened.
    let (sent, received, _) = transfer(&mut now, &mut c, &mut s, 30_000);
    assert_eq!(received, sent);
    assert!(!s.is_closed() && !c.is_closed());
}

#[test]
fn a_forged_answer_is_ignored_and_the_real_one_completes_the_handshake() {
    let now = Instant::now();
    let server_keys = keypair(2);
    let mut c = client(SecurityConfig::new(keypair(1)), server_keys.public(), now);
    let mut s = server(SecurityConfig::new(server_keys), now);
    let initial = c.poll_transmit(now).unwrap();
    s.handle_datagram(now, &initial.contents, EcnCodepoint::Ect0);
    let answer = s.poll_transmit(now).unwrap().contents;
    // Flip a bit inside the Noise message and fix the checksum, as an
    // attacker can.
    let mut forged = answer[..answer.len() - 4].to_vec();
    let middle = forged.len() / 2 + 10;
    forged[middle] ^= 1;
    let crc = crc32c(&forged);
    forged.extend_from_slice(&crc.to_be_bytes());
    c.handle_datagram(now, &forged, EcnCodepoint::Ect0);
    assert!(!c.is_established());
    assert_eq!(c.stats().packets_unauthentic, 1);
    c.handle_datagram(now, &answer, EcnCodepoint::Ect0);
    assert!(c.is_established());
}

/// CRC-32C (Castagnoli), bit by bit: the plain layer's checksum.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn keys_update_during_a_transfer_without_losing_a_byte() {
    let mut now = Instant::now();
    let server_keys = keypair(2);
    let mut client_config = SecurityConfig::new(keypair(1));
    client_config.key_update_packets = 16;
    let mut server_config = SecurityConfig::new(server_keys.clone());
    server_config.key_update_packets = 16;
    let mut c = client(client_config, server_keys.public(), now);
    let mut s = server(server_config, now);
    run(&mut now, &mut c, &mut s, 2);
    let (sent, received, wire) = transfer(&mut now, &mut c, &mut s, 200_000);
    assert_eq!(received, sent);
    // Each end counts its own updates and those it followed.
    let sealed = wire.to_server.len() as u64;
    assert!(sealed > 100);
    assert!(c.stats().key_updates >= sealed / 16 - 1, "{:?}", c.stats());
    assert!(
        s.stats().key_updates >= (sealed - 3) / 16 - 1,
        "{:?}",
        s.stats()
    );
    assert_eq!(s.stats().packets_unauthentic, 0);
}

/// A handshake packet of `packet_type` to `dcid` carrying `message` as its
/// Noise message, with a valid checksum.
fn handshake_packet(packet_type: PacketType, dcid: ConnectionId, message: &[u8]) -> Vec<u8> {
    let mut packet = Vec::new();
    Header {
        packet_type,
        key_phase: false,
        dcid,
        number: TruncatedPacketNumber::whole(PacketNumber(0)),
    }
    .emit(&mut packet);
    Frame::Noise(message).emit(&mut packet);
    let crc = crc32c(&packet);
    packet.extend_from_slice(&crc.to_be_bytes());
    packet
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_noise_messages_never_panic_either_end(message in prop::collection::vec(any::<u8>(), 0..300)) {
        let now = Instant::now();
        let server_keys = keypair(2);
        let mut s = server(SecurityConfig::new(server_keys.clone()), now);
        s.handle_datagram(now, &handshake_packet(PacketType::Initial, ConnectionId(5), &message), EcnCodepoint::Ect0);
        prop_assert!(s.poll_transmit(now).is_none());
        prop_assert!(!s.is_established());
        let mut c = client(SecurityConfig::new(keypair(1)), server_keys.public(), now);
        while c.poll_transmit(now).is_some() {}
        let packet = handshake_packet(PacketType::Handshake, c.local_cid(), &message);
        c.handle_datagram(now, &packet, EcnCodepoint::Ect0);
        prop_assert!(!c.is_established());
        prop_assert_eq!(c.stats().packets_unauthentic, 1);
    }
}

#[test]
fn an_unanswered_initial_flight_is_followed_by_a_longer_one() {
    // Bursty loss takes back-to-back copies together: each flight after an
    // unanswered first one carries twelve copies, one time-out after it,
    // three times; only then do the time-outs double.
    let start = Instant::now();
    let mut now = start;
    let mut client = client(SecurityConfig::new(keypair(1)), keypair(2).public(), now);
    let mut flights = Vec::new();
    let mut sent_at = Vec::new();
    for _ in 0..6 {
        let copies = std::iter::from_fn(|| client.poll_transmit(now)).count();
        flights.push(copies);
        sent_at.push(now - start);
        now = client
            .poll_timeout()
            .expect("the client waits for an answer");
        client.handle_timeout(now);
    }
    assert_eq!(flights, [3, 12, 12, 12, 12, 12]);
    let gaps: Vec<Duration> = sent_at.windows(2).map(|w| w[1] - w[0]).collect();
    let timeout = gaps[0];
    assert!(timeout > Duration::ZERO);
    assert_eq!(
        gaps,
        [timeout, timeout, timeout, timeout * 2, timeout * 2],
        "flights left at {sent_at:?}"
    );
}
