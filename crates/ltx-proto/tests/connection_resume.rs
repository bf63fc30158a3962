//! Careful resume on a connection: a saved path given at the start (a
//! client's own cache) or once the peer is known (a server's memory of
//! its clients) sizes the first flight at half the saved product when the
//! handshake's round trip matches, and changes nothing when it does not.

use std::time::{Duration, Instant};

use ltx_proto::congestion::SavedPath;
use ltx_proto::{Connection, EcnCodepoint, TransportConfig};

const ONE_WAY: Duration = Duration::from_millis(300);

/// Runs the handshake over a wire with a fixed one-way delay and no loss;
/// returns when both ends are established, and the time.
fn handshake(client: &mut Connection, server: &mut Connection, start: Instant) -> Instant {
    let mut now = start;
    for _ in 0..8 {
        let to_server: Vec<_> = std::iter::from_fn(|| client.poll_transmit(now)).collect();
        now += ONE_WAY;
        for t in &to_server {
            server.handle_datagram(now, &t.contents, EcnCodepoint::NotEct);
        }
        let to_client: Vec<_> = std::iter::from_fn(|| server.poll_transmit(now)).collect();
        now += ONE_WAY;
        for t in &to_client {
            client.handle_datagram(now, &t.contents, EcnCodepoint::NotEct);
        }
        if client.is_established() && server.is_established() {
            return now;
        }
    }
    panic!("the handshake did not complete");
}

/// A path of 50 Mbit/s whose round trip was `rtt`: 3.75 MB at 600 ms.
fn saved(rtt: Duration) -> SavedPath {
    SavedPath {
        rate: 6_250_000,
        min_rtt: rtt,
    }
}

fn pair(client_config: TransportConfig, start: Instant) -> (Connection, Connection) {
    let client = Connection::client(client_config, start, 1).unwrap();
    let server = Connection::server(TransportConfig::default(), start, 2).unwrap();
    (client, server)
}

#[test]
fn a_client_given_its_saved_path_starts_at_half_its_product() {
    let start = Instant::now();
    let (mut plain_client, mut plain_server) = pair(TransportConfig::default(), start);
    handshake(&mut plain_client, &mut plain_server, start);
    let first_contact = plain_client.stats().cwnd;

    let mut config = TransportConfig::default();
    config.set_saved_path(Some(saved(Duration::from_millis(600))));
    let (mut client, mut server) = pair(config, start);
    handshake(&mut client, &mut server, start);
    let resumed = client.stats().cwnd;
    assert!(
        (1_800_000..=2_000_000).contains(&resumed),
        "resumed window {resumed} (first contact {first_contact})"
    );
    assert!(
        first_contact < 200_000,
        "first contact window {first_contact}"
    );

    // Saved over a round trip a quarter as long: another path, measured
    // afresh.
    let mut config = TransportConfig::default();
    config.set_saved_path(Some(saved(Duration::from_millis(150))));
    let (mut client, mut server) = pair(config, start);
    handshake(&mut client, &mut server, start);
    assert_eq!(client.stats().cwnd, first_contact);
}

#[test]
fn a_server_given_its_clients_saved_path_after_the_handshake_resumes_too() {
    let start = Instant::now();
    let (mut client, mut server) = pair(TransportConfig::default(), start);
    let now = handshake(&mut client, &mut server, start);
    let before = server.stats().cwnd;
    // Given at once; taken when the server's first round-trip sample
    // comes, with the client's first request.
    server.resume_from(now, saved(Duration::from_millis(600)));
    let id = client.open_stream().unwrap();
    client.write(id, b"GET /").unwrap();
    let request: Vec<_> = std::iter::from_fn(|| client.poll_transmit(now)).collect();
    for t in &request {
        server.handle_datagram(now + ONE_WAY, &t.contents, EcnCodepoint::NotEct);
    }
    assert!(server.stats().rtt_measured);
    let after = server.stats().cwnd;
    assert!(
        (1_800_000..=2_000_000).contains(&after),
        "window {before} before, {after} after"
    );
}
