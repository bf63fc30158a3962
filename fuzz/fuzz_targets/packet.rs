//! Arbitrary datagrams through the header and frame parsers: they must
//! never panic, and every frame they accept must re-encode to itself.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_proto::fuzzing::parse_packet(data);
});
