//! A peer that breaks the protocol is closed with a protocol-violation
//! reason, never obeyed: symbols beyond the window this end announced
//! (which no honest sender could have sent), and stream data beyond the
//! flow-control limit. Each comes with its pair on the right side of the
//! limit, which must not close. (An acknowledgement of a packet never
//! sent is tested in `connection_hostile.rs`.)
//!
//! The packets are sealed correctly (the plain checksum), so they reach
//! the frame handling.

use std::time::{Duration, Instant};

use ltx_coding::rfc8681::Density;
use ltx_coding::{RepairKey, SymbolId, Window};
use ltx_proto::protection::{PacketProtection, PlainProtection};
use ltx_proto::wire::{
    Frame, Header, PacketNumber, PacketType, RepairFrame, SourceFrame, StreamFrame,
    TruncatedPacketNumber, TruncatedSymbolId,
};
use ltx_proto::{
    symbol_size, CloseReason, Connection, EcnCodepoint, Event, Side, StreamId, TransportConfig,
};

/// An established pair that has exchanged no stream data; the server
/// announced `config`'s windows.
fn established(config: TransportConfig) -> (Connection, Connection, Instant) {
    let now = Instant::now();
    let mut client = Connection::client(TransportConfig::default(), now, 1).expect("valid");
    let mut server = Connection::server(config, now, 2).expect("valid");
    for _ in 0..4 {
        while let Some(t) = client.poll_transmit(now) {
            server.handle_datagram(now, &t.contents, t.ecn);
        }
        while let Some(t) = server.poll_transmit(now) {
            client.handle_datagram(now, &t.contents, t.ecn);
        }
    }
    assert!(client.is_established() && server.is_established());
    (client, server, now)
}

/// A data packet to `conn` carrying `frame`, sealed.
fn sealed(conn: &Connection, number: u64, frame: Frame<'_>) -> Vec<u8> {
    let mut packet = Vec::new();
    Header {
        packet_type: PacketType::Data,
        key_phase: false,
        dcid: conn.local_cid(),
        number: TruncatedPacketNumber::whole(PacketNumber(number)),
    }
    .emit(&mut packet);
    let header_len = packet.len();
    frame.emit(&mut packet);
    PlainProtection.seal(number, header_len, &mut packet);
    packet
}

/// Feeds `packet` and runs the connection's timers for a few seconds;
/// returns why it closed, if it did.
fn close_reason(conn: &mut Connection, now: Instant, packet: &[u8]) -> Option<CloseReason> {
    conn.handle_datagram(now, packet, EcnCodepoint::Ect0);
    let end = now + Duration::from_secs(5);
    let mut at = now;
    loop {
        while conn.poll_transmit(at).is_some() {}
        while let Some(event) = conn.poll_event() {
            if let Event::Closed(reason) = event {
                return Some(reason);
            }
        }
        match conn.poll_timeout() {
            Some(next) if next <= end => {
                at = next.max(at);
                conn.handle_timeout(at);
            }
            _ => return None,
        }
    }
}

fn violation(reason: Option<CloseReason>, says: &str) {
    match reason {
        Some(CloseReason::ProtocolViolation(r)) if r.contains(says) => {}
        other => panic!("expected a protocol violation about {says:?}, got {other:?}"),
    }
}

fn repair(window: Window, data: &[u8]) -> Frame<'_> {
    Frame::Repair(RepairFrame {
        first: TruncatedSymbolId::whole(window.first),
        len: window.len,
        key: RepairKey(3),
        density: Density::FULL.get(),
        data,
    })
}

#[test]
fn a_repair_over_symbols_beyond_the_announced_window_closes_the_connection() {
    let config = {
        let mut config = TransportConfig::default();
        config.set_max_window(1000).expect("a valid max window");
        config
    };
    let data = vec![0x5a; symbol_size(config.max_datagram())];
    // Nothing decoded yet: the client may send symbols 0 to 999.
    let (_, mut server, now) = established(config.clone());
    let inside = sealed(&server, 100, repair(Window::new(SymbolId(990), 10), &data));
    let before = server.stats().packets_received;
    assert_eq!(close_reason(&mut server, now, &inside), None);
    assert_eq!(server.stats().packets_received, before + 1);

    let (_, mut server, now) = established(config);
    let beyond = sealed(&server, 100, repair(Window::new(SymbolId(991), 10), &data));
    violation(
        close_reason(&mut server, now, &beyond),
        "beyond the announced window",
    );
}

#[test]
fn a_source_symbol_beyond_the_announced_window_closes_the_connection() {
    let config = {
        let mut config = TransportConfig::default();
        config.set_max_window(1000).expect("a valid max window");
        config
    };
    let source = |id| {
        Frame::Source(SourceFrame {
            id: TruncatedSymbolId::whole(SymbolId(id)),
            data: &[0, 0, 0],
        })
    };
    let (_, mut server, now) = established(config.clone());
    let last = sealed(&server, 100, source(999));
    assert_eq!(close_reason(&mut server, now, &last), None);

    let (_, mut server, now) = established(config);
    let beyond = sealed(&server, 100, source(1000));
    violation(
        close_reason(&mut server, now, &beyond),
        "beyond the announced window",
    );
}

/// A source symbol 0 holding one stream frame on the client's first
/// stream, from `offset`, of `len` bytes.
fn stream_symbol(offset: u64, len: usize) -> Vec<u8> {
    let data = vec![7u8; len];
    let mut symbol = Vec::new();
    Frame::Stream(StreamFrame {
        id: StreamId::new(Side::Client, 0),
        offset,
        fin: false,
        to_end: false,
        data: &data,
    })
    .emit(&mut symbol);
    symbol
}

#[test]
fn stream_data_beyond_the_flow_control_limit_closes_the_connection() {
    let config = {
        let mut config = TransportConfig::default();
        config.set_stream_receive_window(10_000);
        config
    };
    let (_, mut server, now) = established(config.clone());
    let to_the_limit = stream_symbol(9_000, 1_000);
    let packet = sealed(
        &server,
        100,
        Frame::Source(SourceFrame {
            id: TruncatedSymbolId::whole(SymbolId(0)),
            data: &to_the_limit,
        }),
    );
    assert_eq!(close_reason(&mut server, now, &packet), None);
    assert!(server.accept_stream().is_some());

    let (_, mut server, now) = established(config);
    let past_the_limit = stream_symbol(9_000, 1_001);
    let packet = sealed(
        &server,
        100,
        Frame::Source(SourceFrame {
            id: TruncatedSymbolId::whole(SymbolId(0)),
            data: &past_the_limit,
        }),
    );
    violation(close_reason(&mut server, now, &packet), "beyond");
}
