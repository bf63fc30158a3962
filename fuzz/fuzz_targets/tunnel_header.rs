//! The tunnel's stream header (open request and open result) on arbitrary
//! bytes: no panic, bounded requests for more, and what parses re-emits
//! to the same message.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_tunnel::fuzzing::stream_header(data);
});
