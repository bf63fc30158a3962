//! The handshake on arbitrary first flights and answers.

use super::pair::{End, Pair, Path};
use crate::protection::{
    AllowList, EarlyDataRecord, PresharedKey, SecurityConfig, StaticKeypair, UnixMillis, WallClock,
    EARLY_DATA_WINDOW, KEY_LEN,
};
use crate::{Connection, TransportConfig};
use ltx_coding::fuzzing::FuzzInput as Input;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The client's (1), the server's (2) and a stranger's (3) static key
/// pairs, made once: deriving a key costs a scalar multiplication, which
/// would take a good part of each run.
pub(super) fn keypair(n: u8) -> StaticKeypair {
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
    // others pick what it lacks. Bit 6 turns early data on at both ends,
    // with a message written before the first flight.
    let first = input.u8();
    let early_data = first & 0x40 != 0;
    let scenario = match first {
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

    // Both clocks read the epoch when the server's record was made, a
    // window and a second before the connections start.
    let origin = Instant::now();
    let now = origin + EARLY_DATA_WINDOW + Duration::from_secs(1);
    let mut config = TransportConfig::default();
    if early_data {
        let clock = WallClock::new(origin, UnixMillis(1_700_000_000_000));
        config.set_early_data(true);
        client_config.clock = Some(clock);
        server_config.early_data_record = Some(EarlyDataRecord::new(clock));
    }
    let (Ok(mut client), Ok(server)) = (
        Connection::secure_client(
            config.clone(),
            client_config,
            expected_server,
            now,
            1,
            [11; KEY_LEN],
        ),
        Connection::secure_server(config, server_config, now, 2, [12; KEY_LEN]),
    ) else {
        panic!("the default configuration is valid");
    };
    if early_data {
        let id = client.open_stream().expect("a stream before the handshake");
        client.write(id, b"early").expect("early data is taken");
    }
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

pub(super) fn check_handshake(
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
