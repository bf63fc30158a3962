//! A real encoder's symbols through a channel the fuzzer controls: every
//! symbol the decoder delivers must be exactly the source.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ltx_coding::fuzzing::lossy_channel_stream(data);
});
