//! The anti-amplification limit: until its client's address is proved, a
//! server sends at most three times the bytes it received from it, so a
//! sender that spoofs a victim's address cannot turn the server into an
//! amplifier. Once a packet proves the client receives there (or a retry
//! cookie came back), the limit is gone.
//!
//! The plain (unauthenticated) server is the hard case: it counts itself
//! connected on the client's first packet, so its application may start
//! sending at once.

use std::time::{Duration, Instant};

use ltx_proto::{Connection, EcnCodepoint, ReadOutcome, TransportConfig, AMPLIFICATION_FACTOR};

/// A server that took `initials` copies of a client's first flight and
/// whose application wrote `len` bytes to a stream at once. Returns it,
/// the client, the datagrams it sent in `duration` of virtual time with
/// nothing coming back, and the time reached.
fn server_talking_to_a_silent_client(
    validated: bool,
    initials: usize,
    len: usize,
) -> (Connection, Connection, Vec<Vec<u8>>, u64, Instant) {
    let mut now = Instant::now();
    let mut client = Connection::client(TransportConfig::default(), now, 1).expect("valid");
    let mut server = Connection::server(TransportConfig::default(), now, 2).expect("valid");
    if validated {
        server.validate_address();
    }
    let mut received = 0;
    for _ in 0..initials {
        let initial = client
            .poll_transmit(now)
            .expect("a copy of the first flight");
        received += initial.contents.len() as u64;
        server.handle_datagram(now, &initial.contents, initial.ecn);
    }
    assert!(server.is_established());
    let id = server.open_stream().expect("established");
    let data = vec![0x42; len];
    let mut written = server.write(id, &data).expect("an open stream");
    let end = now + Duration::from_secs(10);
    let mut sent = Vec::new();
    // A timer that stayed due while the limit held the server back would
    // spin the driver: the number of wake-ups is bounded.
    for wakeup in 0.. {
        assert!(wakeup < 10_000, "the server's timers spin at {now:?}");
        while let Some(t) = server.poll_transmit(now) {
            sent.push(t.contents);
        }
        if written < len {
            written += server.write(id, &data[written..]).unwrap_or(0);
        }
        match server.poll_timeout() {
            Some(next) if next <= end => {
                now = next.max(now);
                server.handle_timeout(now);
            }
            _ => break,
        }
    }
    (server, client, sent, received, now)
}

fn total(datagrams: &[Vec<u8>]) -> u64 {
    datagrams.iter().map(|d| d.len() as u64).sum()
}

#[test]
fn an_unproved_address_gets_at_most_three_times_what_it_sent() {
    for initials in [1, 2, 3] {
        let (server, _, sent, received, _) =
            server_talking_to_a_silent_client(false, initials, 200_000);
        eprintln!(
            "{initials} initials: {} bytes sent for {received} received",
            total(&sent)
        );
        assert!(
            total(&sent) <= AMPLIFICATION_FACTOR * received,
            "{initials} initials: {} bytes sent for {received} received",
            total(&sent)
        );
        // It did have more to say, and held it back.
        assert!(server.stats().amplification_limited > 0);
        assert!(!server.is_address_validated());
    }
}

#[test]
fn a_proved_address_is_not_limited() {
    // The other side of the limit: the same server and client, the
    // address proved by a retry cookie, sends well past three times.
    let (server, _, sent, received, _) = server_talking_to_a_silent_client(true, 1, 200_000);
    eprintln!(
        "proved: {} bytes sent for {received} received",
        total(&sent)
    );
    assert!(
        total(&sent) > 2 * AMPLIFICATION_FACTOR * received,
        "{} bytes sent for {received} received",
        total(&sent)
    );
    assert_eq!(server.stats().amplification_limited, 0);
}

#[test]
fn the_clients_first_packet_lifts_the_limit_and_the_transfer_completes() {
    let len = 200_000;
    let (mut server, mut client, sent, _, mut now) =
        server_talking_to_a_silent_client(false, 1, len);
    // What the server sent reaches the client at last; the client answers.
    for datagram in &sent {
        client.handle_datagram(now, datagram, EcnCodepoint::Ect0);
    }
    assert!(client.is_established());
    let mut received = Vec::new();
    let mut stream = None;
    let mut buf = [0u8; 4096];
    for _ in 0..100_000 {
        let mut moved = false;
        while let Some(t) = client.poll_transmit(now) {
            server.handle_datagram(now, &t.contents, t.ecn);
            moved = true;
        }
        while let Some(t) = server.poll_transmit(now) {
            client.handle_datagram(now, &t.contents, t.ecn);
            moved = true;
        }
        if stream.is_none() {
            stream = client.accept_stream();
        }
        while let Some(Ok(ReadOutcome::Data(n))) = stream.map(|id| client.read(id, &mut buf)) {
            received.extend_from_slice(&buf[..n]);
        }
        if received.len() == len {
            break;
        }
        if !moved {
            let next = [client.poll_timeout(), server.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .expect("a timer runs");
            now = next.max(now);
            client.handle_timeout(now);
            server.handle_timeout(now);
        }
    }
    assert_eq!(received.len(), len);
    assert!(server.is_address_validated());
}
