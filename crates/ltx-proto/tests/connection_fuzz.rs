//! The handshake and connection fuzz targets' drivers on random inputs, so
//! that every CI run exercises them: a Noise handshake through a network
//! that drops, reorders, corrupts, forges and injects never panics and
//! never completes without the right keys; an established connection,
//! plain or protected, under the same treatment never panics, reads only
//! what the peer wrote, and a protected one accepts nothing its peer did
//! not send.

use ltx_proto::fuzzing::{connection, handshake};
use proptest::collection::vec;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn hostile_networks_never_break_the_handshake(data in vec(any::<u8>(), 0..2048)) {
        handshake(&data);
    }

    #[test]
    fn hostile_networks_never_break_a_connection(data in vec(any::<u8>(), 0..4096)) {
        connection(&data);
    }
}

/// Random inputs of `len` bytes from `seed`.
fn inputs(seed: u64, len: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    std::iter::repeat_with(move || {
        let mut data = vec![0u8; len];
        rng.fill(&mut data[..]);
        data
    })
}

/// The handshake driver is not vacuous: on random inputs, clients with the
/// right keys do complete the handshake at both ends, and the others are
/// tried too.
#[test]
fn random_handshakes_complete_when_the_keys_are_right() {
    let outcomes: Vec<_> = inputs(1, 512).take(400).map(|d| handshake(&d)).collect();
    let both = outcomes
        .iter()
        .filter(|o| o.client_established && o.server_established)
        .count();
    let refused = outcomes.iter().filter(|o| !o.rightful).count();
    assert!(both >= 10, "only {both} of 400 handshakes completed");
    assert!(refused >= 100, "only {refused} of 400 clients lacked a key");
}

/// The connection driver is not vacuous: on random inputs, plain and
/// protected connections both carry stream bytes both ways under checks.
#[test]
fn random_connections_carry_data_both_ways() {
    let mut read = [[0usize; 2]; 2];
    for data in inputs(2, 4096).take(300) {
        let outcome = connection(&data);
        if outcome.forged {
            continue;
        }
        let kind = usize::from(outcome.protected);
        read[kind][0] += outcome.read_by_server;
        read[kind][1] += outcome.read_by_client;
    }
    println!("bytes read (plain, protected; by server, by client): {read:?}");
    for (kind, name) in ["plain", "protected"].iter().enumerate() {
        for (dir, what) in ["by the server", "by the client"].iter().enumerate() {
            assert!(
                read[kind][dir] > 1_000,
                "{name}: only {} bytes read {what}",
                read[kind][dir]
            );
        }
    }
}

/// Found by the connection target: a datagram "corrupted" by changes that
/// cancel out is the genuine datagram, and an end may accept it.
#[test]
fn corruption_that_cancels_out_leaves_a_genuine_datagram() {
    connection(&[61, 191, 112, 247, 147]);
}
