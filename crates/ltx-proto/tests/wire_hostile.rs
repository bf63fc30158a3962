//! The packet fuzz target's driver on random inputs, so that every CI run
//! exercises it: random bytes, valid headers followed by random bytes, and
//! valid packets with bytes flipped, inserted, removed or cut off never
//! panic the parser, and every frame it accepts re-encodes to itself.

mod wire_support;

use ltx_proto::fuzzing::parse_packet;
use ltx_proto::wire::Header;
use proptest::collection::vec;
use proptest::prelude::*;
use wire_support::{emit, header, packet};

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bits: u8 },
    Insert { at: usize, byte: u8 },
    Remove { at: usize },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=u8::MAX).prop_map(|(at, bits)| Mutation::Flip { at, bits }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Remove { at }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let n = bytes.len();
    match *m {
        Mutation::Flip { at, bits } => bytes[at % n] ^= bits,
        Mutation::Insert { at, byte } => bytes.insert(at % (n + 1), byte),
        Mutation::Remove { at } => {
            bytes.remove(at % n);
        }
        Mutation::Truncate { at } => bytes.truncate(at % n),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_bytes(data in vec(any::<u8>(), 0..1500)) {
        parse_packet(&data);
    }

    #[test]
    fn a_valid_header_then_random_bytes(h in header(), rest in vec(any::<u8>(), 0..1500)) {
        let mut data = emit(&h, &[]);
        data.extend_from_slice(&rest);
        parse_packet(&data);
    }

    #[test]
    fn mutated_valid_packets(
        (h, frames) in packet(),
        mutations in vec(mutation(), 1..6),
    ) {
        let mut data = emit(&h, &frames);
        for m in &mutations {
            mutate(&mut data, m);
        }
        parse_packet(&data);
    }
}

/// The driver is not vacuous: valid packets reach the frame parser, and
/// every frame of them is counted.
#[test]
fn valid_packets_reach_every_frame() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    for _ in 0..200 {
        let (h, frames) = packet().new_tree(&mut runner).unwrap().current();
        let data = emit(&h, &frames);
        assert!(Header::parse(&data).is_ok());
        assert_eq!(parse_packet(&data), frames.len());
    }
}
