//! The Noise handshake through a network the fuzzer controls (its real
//! messages dropped, reordered, corrupted, forged; arbitrary datagrams
//! injected; time moving): no panic, and no end established without the
//! right keys.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_proto::fuzzing::handshake(data);
});
