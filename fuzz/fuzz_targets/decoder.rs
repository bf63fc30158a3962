//! A decoder fed arbitrary symbol streams: it must never panic, allocate
//! without bound or break its invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_coding::fuzzing::hostile_decoder_stream(data);
});
