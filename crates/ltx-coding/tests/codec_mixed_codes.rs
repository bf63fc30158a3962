//! One encoder and one decoder, repairs in two codes: XOR parity over a
//! group next to random linear repairs, each named by its density byte, as
//! a sender that mixes them puts them on the wire.

use ltx_coding::codec::{Code, Decoder, DecoderConfig, Encoder, EncoderConfig};
use ltx_coding::{RepairKey, SymbolId, Window};

const SIZE: usize = 64;

fn symbol(i: u64) -> Vec<u8> {
    (0..SIZE)
        .map(|j| (i as u8).wrapping_mul(31) ^ j as u8)
        .collect()
}

fn pair(max_window: u16) -> (Encoder, Decoder) {
    let code = Code::default();
    let encoder = Encoder::new(EncoderConfig {
        symbol_size: SIZE,
        max_window,
        code,
    })
    .unwrap();
    let decoder = Decoder::new(DecoderConfig {
        symbol_size: SIZE,
        max_window,
        code,
    })
    .unwrap();
    (encoder, decoder)
}

/// Receives the repair as a receiver does: the code from the density byte,
/// the coefficients from the code, then the decoder's one entry point.
fn receive(decoder: &mut Decoder, byte: u8, window: Window, key: RepairKey, data: &[u8]) {
    let code = Code::from_density_byte(byte).unwrap();
    let mut coefficients = vec![0u8; usize::from(window.len)];
    code.coefficients(window, key, &mut coefficients).unwrap();
    decoder
        .receive_combination(window.first, &coefficients, data)
        .unwrap();
}

#[test]
fn an_xor_parity_is_the_sum_of_its_group_and_replaces_one_loss() {
    let (mut encoder, mut decoder) = pair(32);
    for i in 0..8 {
        encoder.push(&symbol(i)).unwrap();
    }
    let group = Window::new(SymbolId(2), 4);
    let mut parity = vec![0u8; SIZE];
    encoder
        .repair_with(Code::XorParity, group, RepairKey(7), &mut parity)
        .unwrap();
    let mut want = vec![0u8; SIZE];
    for i in 2..6 {
        for (w, s) in want.iter_mut().zip(symbol(i)) {
            *w ^= s;
        }
    }
    assert_eq!(parity, want, "every coefficient is 1");

    for i in (0..8).filter(|&i| i != 4) {
        decoder.receive_source(SymbolId(i), &symbol(i)).unwrap();
    }
    assert_eq!(decoder.missing(), 1);
    receive(
        &mut decoder,
        Code::XorParity.density_byte(),
        group,
        RepairKey(7),
        &parity,
    );
    assert_eq!(decoder.missing(), 0);
    assert_eq!(decoder.symbol(SymbolId(4)), Some(&symbol(4)[..]));
}

#[test]
fn two_losses_in_one_group_need_a_random_repair_beside_the_parity() {
    let (mut encoder, mut decoder) = pair(32);
    for i in 0..8 {
        encoder.push(&symbol(i)).unwrap();
    }
    for i in [0, 1, 2, 4, 6, 7] {
        decoder.receive_source(SymbolId(i), &symbol(i)).unwrap();
    }
    let group = Window::new(SymbolId(0), 8);
    let mut data = vec![0u8; SIZE];
    encoder
        .repair_with(Code::XorParity, group, RepairKey(0), &mut data)
        .unwrap();
    receive(&mut decoder, 0x1f, group, RepairKey(0), &data);
    // A second parity over the same group is the same equation.
    receive(&mut decoder, 0x1f, group, RepairKey(1), &data);
    assert_eq!(
        decoder.missing(),
        2,
        "one parity per group repairs one loss"
    );

    encoder
        .repair_with(Code::default(), group, RepairKey(9), &mut data)
        .unwrap();
    receive(
        &mut decoder,
        Code::default().density_byte(),
        group,
        RepairKey(9),
        &data,
    );
    assert_eq!(decoder.missing(), 0);
    assert_eq!(decoder.symbol(SymbolId(3)), Some(&symbol(3)[..]));
    assert_eq!(decoder.symbol(SymbolId(5)), Some(&symbol(5)[..]));
}
