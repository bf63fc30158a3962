//! The fuzzing drivers on random and mutated inputs in every `cargo
//! test`: the stream header's and SOCKS5's parsers never panic and keep
//! the wire contract on anything. `LTX_FUZZ_SEED` replays a seed.

use ltx_tunnel::fuzzing;

/// A small deterministic generator, so that a failure replays.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

fn seed() -> u64 {
    std::env::var("LTX_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_7a11)
}

/// Inputs that start like the real messages (so that the parsers get past
/// their first byte), then random bytes, of every length up to 300.
fn inputs(seed: u64, count: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut rng = XorShift(seed | 1);
    (0..count).map(move |_| {
        let len = (rng.next() % 300) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        if let Some(first) = bytes.first_mut() {
            *first = [0x01, 0x05, rng.byte()][(rng.next() % 3) as usize];
        }
        if let Some(kind) = bytes.get_mut(1) {
            if rng.next().is_multiple_of(2) {
                *kind = [0x01, 0x03, 0x04][(rng.next() % 3) as usize];
            }
        }
        if bytes.len() > 4 && rng.next().is_multiple_of(2) {
            bytes[3] = [0x01, 0x03, 0x04][(rng.next() % 3) as usize];
            bytes[4] = (rng.next() % 40) as u8;
            for b in bytes.iter_mut().skip(5).take(40) {
                *b = b"abcdefghijklmnopqrstuvwxyz0123456789-._"[(rng.next() % 39) as usize];
            }
        }
        bytes
    })
}

#[test]
fn the_stream_header_parsers_keep_the_contract_on_random_bytes() {
    let seed = seed();
    println!("seed {seed}");
    for input in inputs(seed, 20_000) {
        fuzzing::stream_header(&input);
        // Shifted so that a name's length byte lines up with the request's.
        fuzzing::stream_header(input.get(2..).unwrap_or_default());
    }
}

#[test]
fn the_socks5_parsers_keep_the_contract_on_random_bytes() {
    let seed = seed();
    println!("seed {seed}");
    for input in inputs(seed, 20_000) {
        fuzzing::socks5(&input);
    }
}

#[test]
fn every_prefix_of_valid_messages_keeps_the_contract() {
    let mut request = vec![0x01, 0x03, 11];
    request.extend_from_slice(b"example.com");
    request.extend_from_slice(&[0x01, 0xbb]);
    let mut socks = vec![0x05, 0x01, 0x00, 0x03, 11];
    socks.extend_from_slice(b"example.com");
    socks.extend_from_slice(&[0x00, 0x50]);
    for cut in 0..=request.len() {
        fuzzing::stream_header(&request[..cut]);
    }
    for cut in 0..=socks.len() {
        fuzzing::socks5(&socks[..cut]);
    }
}
