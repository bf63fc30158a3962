//! A server's acceptor against genuine clients, replayed and bit-flipped
//! cookies, spoofed floods from many addresses, time and load changing:
//! every decision follows the acceptor's rules, no address gets more than
//! three times what it sent before it is proved, and the limits hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_proto::fuzzing::accept(data);
});
