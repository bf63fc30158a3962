//! The SOCKS5 greeting, request and reply parsers of the tunnel client's
//! front end on arbitrary bytes: no panic, bounded requests for more, and
//! what parses re-emits to the same message.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_tunnel::fuzzing::socks5(data);
});
