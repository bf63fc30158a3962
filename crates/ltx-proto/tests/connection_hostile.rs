//! No datagram, however crafted, panics a connection: it is dropped, or the
//! connection closes with a reason. The plain protection's checksum would
//! reject random bytes before any frame is read, so these packets are
//! sealed correctly: they reach the frame parser and the state machine.

use std::time::{Duration, Instant};

use ltx_proto::protection::{PacketProtection, PlainProtection};
use ltx_proto::wire::{Header, PacketNumber, PacketType, TruncatedPacketNumber};
use ltx_proto::{Connection, EcnCodepoint, Event, TransportConfig};
use proptest::prelude::*;

/// An established pair, and the datagrams of a short exchange between them.
fn established() -> (Connection, Connection, Vec<Vec<u8>>, Instant) {
    let now = Instant::now();
    let mut client = Connection::client(TransportConfig::default(), now, 1).unwrap();
    let mut server = Connection::server(TransportConfig::default(), now, 2).unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        while let Some(t) = client.poll_transmit(now) {
            server.handle_datagram(now, &t.contents, t.ecn);
            seen.push(t.contents);
        }
        while let Some(t) = server.poll_transmit(now) {
            client.handle_datagram(now, &t.contents, t.ecn);
            seen.push(t.contents);
        }
        if client.is_established() {
            if let Ok(id) = client.open_stream() {
                client.write(id, &[5u8; 5000]).unwrap();
            }
        }
    }
    assert!(server.is_established());
    (client, server, seen, now)
}

/// A data packet to `conn` with `payload` as its frames, sealed.
fn sealed(conn: &Connection, number: u64, payload: &[u8]) -> Vec<u8> {
    let mut packet = Vec::new();
    Header {
        packet_type: PacketType::Data,
        key_phase: false,
        dcid: conn.local_cid(),
        number: TruncatedPacketNumber::whole(PacketNumber(number)),
    }
    .emit(&mut packet);
    let header_len = packet.len();
    packet.extend_from_slice(payload);
    PlainProtection.seal(number, header_len, &mut packet);
    packet
}

/// Feeds `packets` to `conn` and drives it a little: no panic, and if it
/// closes, with a reason.
fn survive(conn: &mut Connection, now: Instant, packets: &[Vec<u8>]) {
    for packet in packets {
        conn.handle_datagram(now, packet, EcnCodepoint::Ect0);
        while conn.poll_transmit(now).is_some() {}
    }
    let later = now + Duration::from_secs(1);
    conn.handle_timeout(later);
    while conn.poll_transmit(later).is_some() {}
    while let Some(event) = conn.poll_event() {
        if let Event::Closed(reason) = event {
            assert!(!format!("{reason:?}").is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_frames_never_panic(
        packets in prop::collection::vec((0u64..1 << 40, prop::collection::vec(any::<u8>(), 0..1500)), 1..8)
    ) {
        let (_client, mut server, _, now) = established();
        let packets: Vec<Vec<u8>> = packets
            .iter()
            .map(|(number, payload)| sealed(&server, *number, payload))
            .collect();
        survive(&mut server, now, &packets);
    }

    #[test]
    fn mutated_real_packets_never_panic(
        pick in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        number in 1000u64..2000,
    ) {
        let (mut client, _server, seen, now) = established();
        let original = pick.get(&seen);
        // Take the frames of a real packet, damage them, and seal them anew
        // to the client under a fresh packet number.
        let Ok((_, header_len)) = Header::parse(original) else { return Ok(()); };
        let mut payload = original[header_len..original.len() - 4].to_vec();
        for (at, value) in &flips {
            if !payload.is_empty() {
                let i = at.index(payload.len());
                payload[i] = *value;
            }
        }
        let packet = sealed(&client, number, &payload);
        survive(&mut client, now, &[packet]);
    }
}

#[test]
fn an_ack_of_a_packet_never_sent_closes_the_connection() {
    use ltx_coding::SymbolId;
    use ltx_proto::wire::{AckFrame, DecoderState, EcnCounts, Frame};
    let (mut client, _server, _, now) = established();
    let ack = AckFrame::new(
        [1_000_000..=1_000_000],
        0,
        EcnCounts::default(),
        DecoderState {
            decoded_through: SymbolId(0),
            end: SymbolId(0),
            missing: 0,
            rank: 0,
            settled: 0,
        },
    );
    let mut payload = Vec::new();
    Frame::Ack(ack).emit(&mut payload);
    let packet = sealed(&client, 500, &payload);
    client.handle_datagram(now, &packet, EcnCodepoint::Ect0);
    let mut reasons = Vec::new();
    let mut at = now;
    for _ in 0..20 {
        while client.poll_transmit(at).is_some() {}
        while let Some(event) = client.poll_event() {
            if let Event::Closed(reason) = event {
                reasons.push(reason);
            }
        }
        let Some(next) = client.poll_timeout() else {
            break;
        };
        at = next;
        client.handle_timeout(at);
    }
    assert!(
        matches!(reasons.as_slice(), [ltx_proto::CloseReason::ProtocolViolation(r)] if r.contains("never sent")),
        "{reasons:?}"
    );
}
