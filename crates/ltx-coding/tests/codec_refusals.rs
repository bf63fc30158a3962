//! What the encoder and decoder refuse, each boundary tested from both sides,
//! and how the decoder's window slides.

use ltx_coding::codec::{
    Code, CodeError, ConfigError, DecodeError, Decoder, DecoderConfig, EncodeError, Encoder,
    EncoderConfig, Outcome, MAX_SYMBOL_SIZE,
};
use ltx_coding::{RepairKey, SymbolId, Window};

const SIZE: usize = 8;

fn decoder_at(base: u64, max_window: u16) -> Decoder {
    let config = DecoderConfig {
        symbol_size: SIZE,
        max_window,
        code: Code::default(),
    };
    Decoder::starting_at(config, SymbolId(base)).unwrap()
}

fn symbol(i: u64) -> [u8; SIZE] {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes()
}

#[test]
fn a_source_symbol_must_lie_inside_the_window() {
    let mut decoder = decoder_at(100, 16);
    assert!(decoder.receive_source(SymbolId(100), &symbol(100)).is_ok());
    assert!(decoder.receive_source(SymbolId(115), &symbol(115)).is_ok());
    assert_eq!(
        decoder.receive_source(SymbolId(116), &symbol(116)),
        Err(DecodeError::BeyondWindow {
            id: SymbolId(116),
            limit: SymbolId(116)
        })
    );
    assert_eq!(
        decoder.receive_source(SymbolId(99), &symbol(99)),
        Err(DecodeError::BeforeWindow {
            id: SymbolId(99),
            base: SymbolId(100)
        })
    );
}

#[test]
fn a_repair_window_must_end_inside_the_window() {
    let mut decoder = decoder_at(0, 16);
    let payload = [7u8; SIZE];
    assert!(decoder
        .receive_repair(Window::new(SymbolId(0), 16), RepairKey(1), &payload)
        .is_ok());
    assert!(matches!(
        decoder.receive_repair(Window::new(SymbolId(1), 16), RepairKey(1), &payload),
        Err(DecodeError::BeyondWindow { .. })
    ));
}

#[test]
fn a_symbol_of_the_wrong_size_is_refused() {
    let mut decoder = decoder_at(0, 4);
    assert_eq!(
        decoder.receive_source(SymbolId(0), &[0u8; SIZE + 1]),
        Err(DecodeError::WrongSize {
            len: SIZE + 1,
            symbol_size: SIZE
        })
    );
    assert_eq!(
        decoder.receive_source(SymbolId(0), &[0u8; SIZE - 1]),
        Err(DecodeError::WrongSize {
            len: SIZE - 1,
            symbol_size: SIZE
        })
    );
    assert!(decoder.receive_source(SymbolId(0), &[0u8; SIZE]).is_ok());
}

#[test]
fn a_duplicate_source_is_refused_and_changes_nothing() {
    let mut decoder = decoder_at(0, 4);
    decoder.receive_source(SymbolId(2), &symbol(2)).unwrap();
    assert_eq!(
        decoder.receive_source(SymbolId(2), &[0u8; SIZE]),
        Err(DecodeError::Duplicate(SymbolId(2)))
    );
    assert_eq!(decoder.symbol(SymbolId(2)), Some(&symbol(2)[..]));
}

#[test]
fn all_zero_coefficients_are_refused_and_one_non_zero_is_enough() {
    let mut decoder = decoder_at(0, 4);
    let payload = [3u8; SIZE];
    assert!(matches!(
        decoder.receive_combination(SymbolId(0), &[0, 0, 0], &payload),
        Err(DecodeError::ZeroCoefficients(_))
    ));
    assert!(matches!(
        decoder.receive_combination(SymbolId(0), &[], &payload),
        Err(DecodeError::ZeroCoefficients(_))
    ));
    // 5·x1 = payload decodes x1 at once.
    assert_eq!(
        decoder.receive_combination(SymbolId(0), &[0, 5, 0], &payload),
        Ok(Outcome::Innovative { newly_known: 1 })
    );
    assert!(decoder.is_known(SymbolId(1)));
}

#[test]
fn ids_at_the_end_of_the_64_bit_space_never_overflow() {
    let base = u64::MAX - 4;
    let mut decoder = decoder_at(base, 16);
    for i in base..u64::MAX {
        decoder.receive_source(SymbolId(i), &symbol(i)).unwrap();
    }
    // A window that would end past u64::MAX.
    assert!(matches!(
        decoder.receive_repair(
            Window::new(SymbolId(u64::MAX - 1), 8),
            RepairKey(1),
            &[1; SIZE]
        ),
        Err(DecodeError::BeyondWindow { .. })
    ));
    assert!(matches!(
        decoder.receive_combination(SymbolId(u64::MAX), &[1, 1], &[1; SIZE]),
        Err(DecodeError::BeyondWindow { .. })
    ));
    assert!(matches!(
        decoder.receive_source(SymbolId(u64::MAX), &[1; SIZE]),
        Err(DecodeError::BeyondWindow { .. })
    ));
    assert_eq!(decoder.missing(), 0);
}

#[test]
fn consuming_slides_the_window_and_drops_equations_on_consumed_symbols() {
    let code = Code::default();
    let mut encoder = Encoder::new(EncoderConfig {
        symbol_size: SIZE,
        max_window: 8,
        code,
    })
    .unwrap();
    let mut decoder = decoder_at(0, 8);
    for i in 0..8 {
        encoder.push(&symbol(i)).unwrap();
    }
    let mut repair = [0u8; SIZE];
    // Symbols 0 and 1 lost; one repair over [0, 4) gives one equation.
    for i in 2..8 {
        decoder.receive_source(SymbolId(i), &symbol(i)).unwrap();
    }
    encoder
        .repair(Window::new(SymbolId(0), 4), RepairKey(3), &mut repair)
        .unwrap();
    decoder
        .receive_repair(Window::new(SymbolId(0), 4), RepairKey(3), &repair)
        .unwrap();
    assert_eq!((decoder.missing(), decoder.rank()), (2, 1));
    assert_eq!(decoder.next_missing(), SymbolId(0));

    // The application gives up on 0 and 1: the equation goes with them.
    decoder.consume(SymbolId(2));
    assert_eq!((decoder.missing(), decoder.rank()), (0, 0));
    assert_eq!(decoder.next_missing(), SymbolId(8));
    assert_eq!(decoder.symbol(SymbolId(0)), None);
    assert!(matches!(
        decoder.receive_repair(Window::new(SymbolId(0), 4), RepairKey(3), &repair),
        Err(DecodeError::BeforeWindow { .. })
    ));

    // The window now reaches to 10; symbol 9 is lost and repaired.
    encoder.acknowledge(SymbolId(2));
    encoder.push(&symbol(8)).unwrap();
    encoder.push(&symbol(9)).unwrap();
    decoder.receive_source(SymbolId(8), &symbol(8)).unwrap();
    assert!(decoder.receive_source(SymbolId(10), &symbol(10)).is_err());
    encoder
        .repair(Window::new(SymbolId(4), 6), RepairKey(9), &mut repair)
        .unwrap();
    decoder
        .receive_repair(Window::new(SymbolId(4), 6), RepairKey(9), &repair)
        .unwrap();
    assert_eq!(decoder.symbol(SymbolId(9)), Some(&symbol(9)[..]));
    assert_eq!(decoder.missing(), 0);
}

#[test]
fn a_redundant_repair_is_reported_as_such() {
    let mut encoder = Encoder::new(EncoderConfig {
        symbol_size: SIZE,
        max_window: 4,
        code: Code::XorParity,
    })
    .unwrap();
    let mut decoder = Decoder::new(DecoderConfig {
        symbol_size: SIZE,
        max_window: 4,
        code: Code::XorParity,
    })
    .unwrap();
    for i in 0..4 {
        encoder.push(&symbol(i)).unwrap();
    }
    let window = Window::new(SymbolId(0), 4);
    let mut parity = [0u8; SIZE];
    encoder.repair(window, RepairKey(0), &mut parity).unwrap();
    decoder.receive_source(SymbolId(0), &symbol(0)).unwrap();
    assert_eq!(
        decoder.receive_repair(window, RepairKey(0), &parity),
        Ok(Outcome::Innovative { newly_known: 0 })
    );
    // XOR parity has one equation per group, whatever the key.
    assert_eq!(
        decoder.receive_repair(window, RepairKey(1), &parity),
        Ok(Outcome::Redundant)
    );
}

#[test]
fn the_encoder_refuses_what_it_cannot_do() {
    let config = EncoderConfig {
        symbol_size: SIZE,
        max_window: 2,
        code: Code::default(),
    };
    let mut encoder = Encoder::new(config).unwrap();
    assert_eq!(
        encoder.push(&[0; SIZE + 1]),
        Err(EncodeError::TooLong {
            len: SIZE + 1,
            symbol_size: SIZE
        })
    );
    encoder.push(&[1; SIZE]).unwrap();
    encoder.push(&[2; 3]).unwrap();
    assert_eq!(
        encoder.source(SymbolId(1)),
        Some(&[2, 2, 2, 0, 0, 0, 0, 0][..])
    );
    assert_eq!(encoder.push(&[3; SIZE]), Err(EncodeError::Full(2)));
    let mut out = [0u8; SIZE];
    assert!(encoder
        .repair(Window::new(SymbolId(0), 2), RepairKey(0), &mut out)
        .is_ok());
    assert!(matches!(
        encoder.repair(Window::new(SymbolId(0), 3), RepairKey(0), &mut out),
        Err(EncodeError::NotHeld { .. })
    ));
    assert!(matches!(
        encoder.repair(Window::new(SymbolId(0), 2), RepairKey(0), &mut [0u8; 3]),
        Err(EncodeError::WrongSize { .. })
    ));
    assert_eq!(
        encoder.repair(Window::new(SymbolId(0), 0), RepairKey(0), &mut out),
        Err(EncodeError::Code(CodeError::EmptyWindow(Window::new(
            SymbolId(0),
            0
        ))))
    );
    encoder.acknowledge(SymbolId(1));
    assert!(matches!(
        encoder.repair(Window::new(SymbolId(0), 2), RepairKey(0), &mut out),
        Err(EncodeError::NotHeld { .. })
    ));
    assert!(encoder.push(&[3; SIZE]).is_ok());
}

#[test]
fn configurations_are_checked() {
    let ok = EncoderConfig {
        symbol_size: MAX_SYMBOL_SIZE,
        max_window: 1,
        code: Code::default(),
    };
    assert!(Encoder::new(ok).is_ok());
    let too_big = EncoderConfig {
        symbol_size: MAX_SYMBOL_SIZE + 1,
        ..ok
    };
    assert_eq!(
        Encoder::new(too_big).unwrap_err(),
        ConfigError::SymbolSize(MAX_SYMBOL_SIZE + 1)
    );
    assert_eq!(
        Encoder::new(EncoderConfig {
            symbol_size: 0,
            ..ok
        })
        .unwrap_err(),
        ConfigError::SymbolSize(0)
    );
    assert_eq!(
        Encoder::new(EncoderConfig {
            max_window: 0,
            ..ok
        })
        .unwrap_err(),
        ConfigError::EmptyWindow
    );
    let block = |source| DecoderConfig {
        symbol_size: 4,
        max_window: 32,
        code: Code::Block {
            source,
            density: Default::default(),
        },
    };
    assert!(Decoder::new(block(32)).is_ok());
    assert!(Decoder::new(block(33)).is_err());
    assert!(Decoder::new(block(0)).is_err());
}

#[test]
fn the_encoder_stops_at_the_end_of_the_id_space() {
    let config = EncoderConfig {
        symbol_size: SIZE,
        max_window: 4,
        code: Code::default(),
    };
    let mut encoder = Encoder::starting_at(config, SymbolId(u64::MAX - 1)).unwrap();
    assert_eq!(encoder.push(&[1; SIZE]), Ok(SymbolId(u64::MAX - 1)));
    assert_eq!(encoder.push(&[2; SIZE]), Err(EncodeError::IdsExhausted));
}
