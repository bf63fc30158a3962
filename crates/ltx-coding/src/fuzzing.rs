//! Drivers that turn arbitrary bytes into calls on the coding API, shared by
//! the `cargo fuzz` targets and the property tests that run the same inputs
//! on every CI build. Not part of the stable API.

use crate::codec::{Code, Decoder, DecoderConfig, Encoder, EncoderConfig};
use crate::rfc8681::Density;
use crate::{RepairKey, SymbolId, Window};

/// Reads fields off the front of a fuzz input; zeros once it runs out, so
/// every input, however short, drives a whole run.
pub struct FuzzInput<'a> {
    bytes: &'a [u8],
}

impl<'a> FuzzInput<'a> {
    /// A reader over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The next byte, or 0.
    pub fn u8(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next eight bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        b.iter_mut().for_each(|x| *x = self.u8());
        u64::from_le_bytes(b)
    }

    /// An id near `base`, or anywhere in the 64-bit space.
    pub fn id(&mut self, base: u64) -> u64 {
        match self.u8() % 4 {
            0 => self.u64(),
            1 => base.wrapping_sub(u64::from(self.u8())),
            _ => base.wrapping_add(u64::from(self.u8())),
        }
    }

    /// The next `len` bytes, or as many as are left.
    pub fn bytes(&mut self, len: usize) -> &'a [u8] {
        let len = len.min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        taken
    }
}

fn code(selector: u8) -> Code {
    match selector % 4 {
        0 => Code::XorParity,
        1 => Code::Block {
            source: u16::from(selector >> 4) + 1,
            density: Density::FULL,
        },
        _ => Code::SlidingWindow {
            density: Density::new(selector >> 4).unwrap_or(Density::FULL),
        },
    }
}

/// Feeds a decoder a hostile stream: sources, repairs and raw combinations
/// with arbitrary ids, windows, keys, coefficients and sizes, repairs as a
/// connection reads them off the wire (any density byte, the coefficients
/// derived from it), and consumes. Panics only if the decoder breaks one of
/// its own invariants.
pub fn hostile_decoder_stream(data: &[u8]) {
    let mut input = FuzzInput::new(data);
    let symbol_size = usize::from(input.u8() % 32) + 1;
    let max_window = u16::from(input.u8() % 64) + 1;
    let code = code(input.u8());
    let base = input.u64();
    let config = DecoderConfig {
        symbol_size,
        max_window,
        code,
    };
    let Ok(mut decoder) = Decoder::starting_at(config, SymbolId(base)) else {
        return;
    };
    let mut scratch = vec![0u8; 80];
    while !input.is_empty() {
        let op = input.u8();
        let near = decoder.base().0;
        // Payloads mostly of the right size, sometimes not.
        let len = if op & 0x80 != 0 {
            usize::from(input.u8() % 40)
        } else {
            symbol_size
        };
        match op % 5 {
            0 => {
                let id = SymbolId(input.id(near));
                let payload = pad(input.bytes(len), len, &mut scratch);
                let _ = decoder.receive_source(id, payload);
            }
            4 => {
                // The REPAIR frame's path: its own density, whatever the
                // decoder's code, and the window it names.
                let window = Window::new(SymbolId(input.id(near)), input.u16() % 200);
                let key = RepairKey(input.u16());
                let Ok(density) = Density::new(input.u8() % 20) else {
                    continue;
                };
                let mut coefficients = vec![0u8; usize::from(window.len)];
                let wire_code = Code::SlidingWindow { density };
                if wire_code
                    .coefficients(window, key, &mut coefficients)
                    .is_ok()
                {
                    let payload = pad(input.bytes(len), len, &mut scratch);
                    let _ = decoder.receive_combination(window.first, &coefficients, payload);
                }
            }
            1 => {
                let window = Window::new(SymbolId(input.id(near)), input.u16() % 200);
                let key = RepairKey(input.u16());
                let payload = pad(input.bytes(len), len, &mut scratch);
                let _ = decoder.receive_repair(window, key, payload);
            }
            2 => {
                let first = SymbolId(input.id(near));
                let n = usize::from(input.u8() % 80);
                let coefficients = input.bytes(n).to_vec();
                let payload = pad(input.bytes(len), len, &mut scratch);
                let _ = decoder.receive_combination(first, &coefficients, payload);
            }
            _ => decoder.consume(SymbolId(input.id(near))),
        }
        check_invariants(&mut decoder);
        while decoder.poll_decoded().is_some() {}
    }
}

fn pad<'a>(bytes: &[u8], len: usize, scratch: &'a mut [u8]) -> &'a [u8] {
    let out = &mut scratch[..len];
    out.fill(0);
    out[..bytes.len()].copy_from_slice(bytes);
    out
}

fn check_invariants(decoder: &mut Decoder) {
    let span = decoder.end().0 - decoder.base().0;
    assert!(
        decoder.missing() <= span,
        "more missing than the window holds"
    );
    assert!(
        decoder.rank() as u64 <= decoder.missing(),
        "more equations than unknowns"
    );
    assert!(
        span <= u64::from(decoder.config().max_window),
        "window beyond its maximum"
    );
    let next = decoder.next_missing();
    assert!(next >= decoder.base() && next <= decoder.end());
}

/// Sends a real encoder's symbols through a channel the input controls
/// (which sources are lost, which repairs are sent over which windows, in
/// what order, when the receiver consumes) and checks that every symbol the
/// decoder delivers is exactly the source. Returns how many lost symbols
/// were rebuilt from repairs.
pub fn lossy_channel_stream(data: &[u8]) -> usize {
    let mut input = FuzzInput::new(data);
    let symbol_size = usize::from(input.u8() % 16) + 1;
    let max_window = u16::from(input.u8() % 48) + 1;
    let code = code(input.u8());
    let first = SymbolId(input.u64() >> (input.u8() % 64));
    let encoder_config = EncoderConfig {
        symbol_size,
        max_window,
        code,
    };
    let decoder_config = DecoderConfig {
        symbol_size,
        max_window,
        code,
    };
    let (Ok(mut encoder), Ok(mut decoder)) = (
        Encoder::starting_at(encoder_config, first),
        Decoder::starting_at(decoder_config, first),
    ) else {
        return 0;
    };
    let mut rebuilt = 0;
    let mut lost = std::collections::HashSet::new();
    let mut counter = 0u8;
    let mut payload = vec![0u8; symbol_size];
    let mut in_flight: Vec<(Window, RepairKey, Vec<u8>)> = Vec::new();
    while !input.is_empty() {
        let op = input.u8();
        match op % 4 {
            // A new source symbol; delivered unless the input says lost.
            0 | 1 => {
                let data: Vec<u8> = (0..symbol_size)
                    .map(|i| counter.wrapping_mul(31).wrapping_add(i as u8))
                    .collect();
                counter = counter.wrapping_add(1);
                let Ok(id) = encoder.push(&data) else {
                    encoder.acknowledge(decoder.base());
                    continue;
                };
                if op & 0x10 == 0 {
                    let _ = decoder.receive_source(id, &data);
                } else {
                    lost.insert(id);
                }
            }
            // A repair over a window of the held symbols, queued.
            2 => {
                let held = encoder.held();
                if held == 0 {
                    continue;
                }
                let start = u64::from(input.u8()) % held;
                let len = 1 + u64::from(input.u8()) % (held - start);
                let window = match code.block_of(SymbolId(encoder.oldest().0 + start)) {
                    Some(block) => block,
                    None => Window::new(SymbolId(encoder.oldest().0 + start), len as u16),
                };
                let key = RepairKey(input.u16());
                if encoder.repair(window, key, &mut payload).is_ok() {
                    in_flight.push((window, key, payload.clone()));
                }
            }
            // Deliver a queued repair (out of order), or consume.
            _ => {
                if op & 0x40 != 0 {
                    let up_to = decoder.next_missing();
                    decoder.consume(up_to);
                    encoder.acknowledge(up_to);
                } else if !in_flight.is_empty() {
                    let i = usize::from(input.u8()) % in_flight.len();
                    let (window, key, repair) = in_flight.swap_remove(i);
                    let _ = decoder.receive_repair(window, key, &repair);
                }
            }
        }
        check_invariants(&mut decoder);
        while let Some(id) = decoder.poll_decoded() {
            let got = decoder.symbol(id).expect("a delivered symbol is readable");
            let sent = encoder
                .source(id)
                .expect("the sender holds what the receiver has not consumed");
            assert_eq!(got, sent, "symbol {id} decoded wrongly");
            rebuilt += usize::from(lost.remove(&id));
        }
    }
    rebuilt
}
