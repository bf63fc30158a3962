//! An established connection, plain or protected, through a network the
//! fuzzer controls while both ends send: no panic, every byte read is the
//! byte the peer wrote, and a protected end accepts nothing forged.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_proto::fuzzing::connection(data);
});
