//! Interoperability with `cu-fec`, an independent RFC 8681 implementation:
//! repair symbols made by ltx decode with its decoder, and its repair symbols
//! decode with ltx's, over random windows, densities and losses.
//!
//! Both directions are covered for GF(2^8) (FEC Encoding ID 10) at every
//! density, and for GF(2) at full density, which is ltx's XOR parity. cu-fec
//! always encodes over its whole current window, so the windows it sends are
//! varied by discarding its oldest symbols first. cu-fec's symbol ids are
//! 32-bit and wrap; the cases here stay below 2^32 so that they map one to
//! one onto ltx's 64-bit ids.

use cu_fec::{DensityThreshold, EncodingSymbolId, Field, RepairParameters, RlcConfig};
use ltx_coding::codec::{Code, Decoder, DecoderConfig, Encoder, EncoderConfig};
use ltx_coding::rfc8681::Density;
use ltx_coding::{RepairKey, SymbolId, Window};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SIZE: usize = 48;
const WINDOW: usize = 32;

type PeerEncoder = cu_fec::RlcEncoder<SIZE, WINDOW>;
type PeerDecoder = cu_fec::RlcDecoder<SIZE, WINDOW, WINDOW>;

fn peer_config(field: Field) -> RlcConfig {
    RlcConfig::new(SIZE, WINDOW, field).unwrap()
}

fn ltx_code(field: Field, dt: u8) -> Code {
    match field {
        Field::Gf2 => Code::XorParity,
        Field::Gf256 => Code::SlidingWindow {
            density: Density::new(dt).unwrap(),
        },
    }
}

fn random_symbols(rng: &mut SmallRng, n: usize) -> Vec<[u8; SIZE]> {
    (0..n)
        .map(|_| {
            let mut s = [0u8; SIZE];
            rng.fill(&mut s[..]);
            s
        })
        .collect()
}

/// ltx encodes; cu-fec and ltx decode the same received symbols and must
/// end up knowing exactly the same, correct, source symbols.
fn ltx_to_peer(seed: u64, field: Field) -> Result<(), TestCaseError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dt = if field == Field::Gf2 {
        15
    } else {
        rng.random_range(0..=15)
    };
    let code = ltx_code(field, dt);
    let first = u64::from(rng.random::<u32>() >> 2);
    let n = rng.random_range(1..=WINDOW);
    let data = random_symbols(&mut rng, n);
    let loss = rng.random_range(0.0..0.6);

    let config = EncoderConfig {
        symbol_size: SIZE,
        max_window: WINDOW as u16,
        code,
    };
    let mut encoder = Encoder::starting_at(config, SymbolId(first)).unwrap();
    for s in &data {
        encoder.push(s).unwrap();
    }
    let decoder_config = DecoderConfig {
        symbol_size: SIZE,
        max_window: WINDOW as u16,
        code,
    };
    let mut ours = Decoder::starting_at(decoder_config, SymbolId(first)).unwrap();
    let mut peer = PeerDecoder::new(peer_config(field), WINDOW).unwrap();
    peer.discard_before(EncodingSymbolId::new(first as u32))
        .unwrap();

    let mut lost = 0;
    for (i, s) in data.iter().enumerate() {
        if rng.random_bool(loss) {
            lost += 1;
            continue;
        }
        let id = first + i as u64;
        ours.receive_source(SymbolId(id), s).unwrap();
        let _ = peer
            .receive_source(EncodingSymbolId::new(id as u32), s)
            .unwrap();
    }
    let mut payload = [0u8; SIZE];
    for _ in 0..lost + 1 {
        let start = rng.random_range(0..n);
        let len = rng.random_range(1..=n - start);
        let window = Window::new(SymbolId(first + start as u64), len as u16);
        let key = if field == Field::Gf2 {
            0
        } else {
            rng.random::<u16>()
        };
        encoder
            .repair(window, RepairKey(key), &mut payload)
            .unwrap();
        let id = cu_fec::RepairPayloadId::new(
            key,
            DensityThreshold::new(dt).unwrap(),
            len as u16,
            EncodingSymbolId::new(window.first.0 as u32),
        )
        .unwrap();
        let _ = peer.receive_repair(id, &payload).unwrap();
        // A sparse draw may have no non-zero coefficient: ltx refuses it.
        let _ = ours.receive_repair(window, RepairKey(key), &payload);
    }
    for (i, s) in data.iter().enumerate() {
        let id = first + i as u64;
        let theirs = peer.symbol(EncodingSymbolId::new(id as u32));
        if let Some(theirs) = theirs {
            prop_assert_eq!(theirs, &s[..], "cu-fec decoded symbol {} wrongly", id);
        }
        prop_assert_eq!(
            theirs.is_some(),
            ours.is_known(SymbolId(id)),
            "symbol {}: cu-fec and ltx disagree on whether it is known",
            id
        );
    }
    Ok(())
}

/// cu-fec encodes over windows of its choosing; ltx decodes them.
fn peer_to_ltx(seed: u64, field: Field) -> Result<(), TestCaseError> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dt = if field == Field::Gf2 {
        15
    } else {
        rng.random_range(0..=15)
    };
    let first = u64::from(rng.random::<u32>() >> 2);
    let n = rng.random_range(1..=WINDOW);
    let data = random_symbols(&mut rng, n);
    let loss = rng.random_range(0.0..0.6);
    let mut encoder =
        PeerEncoder::new(peer_config(field), EncodingSymbolId::new(first as u32)).unwrap();
    for s in &data {
        encoder.push_source(s).unwrap();
    }
    let code = ltx_code(field, dt);
    let config = DecoderConfig {
        symbol_size: SIZE,
        max_window: WINDOW as u16,
        code,
    };
    let mut ours = Decoder::starting_at(config, SymbolId(first)).unwrap();
    let mut lost = Vec::new();
    for (i, s) in data.iter().enumerate() {
        if rng.random_bool(loss) {
            lost.push(i);
        } else {
            ours.receive_source(SymbolId(first + i as u64), s).unwrap();
        }
    }
    // Repairs over [first, end), then over ever shorter suffixes of it.
    let mut payload = [0u8; SIZE];
    let mut received_repairs = 0;
    for _ in 0..2 * lost.len() + 1 {
        if encoder.window_len() > 1 && rng.random_bool(0.3) {
            encoder.discard_oldest(1);
        }
        let key = if field == Field::Gf2 {
            0
        } else {
            rng.random::<u16>()
        };
        let parameters = RepairParameters::new(key, DensityThreshold::new(dt).unwrap());
        let id = encoder.encode_repair(parameters, &mut payload).unwrap();
        let window = Window::new(
            SymbolId(u64::from(id.first_source_esi().get())),
            id.source_symbols(),
        );
        prop_assert_eq!(RepairKey(id.repair_key()), RepairKey(key));
        let _ = ours.receive_repair(window, RepairKey(key), &payload);
        received_repairs += 1;
    }
    prop_assert!(received_repairs > 0);
    for (i, s) in data.iter().enumerate() {
        if let Some(decoded) = ours.symbol(SymbolId(first + i as u64)) {
            prop_assert_eq!(decoded, &s[..], "ltx decoded cu-fec's symbol {} wrongly", i);
        }
    }
    // With dense coefficients and a repair over the whole window per loss,
    // everything decodes whenever the first repairs covered the losses.
    if field == Field::Gf256 && dt == 15 && lost.is_empty() {
        prop_assert_eq!(ours.missing(), 0);
    }
    Ok(())
}

/// A fixed case that must fully decode in both directions, so that the
/// random properties above are not satisfied by decoding nothing.
#[test]
fn a_lost_symbol_is_rebuilt_from_the_other_implementations_repair() {
    let mut rng = SmallRng::seed_from_u64(7);
    let data = random_symbols(&mut rng, 10);

    let mut peer_encoder =
        PeerEncoder::new(peer_config(Field::Gf256), EncodingSymbolId::new(100)).unwrap();
    let mut encoder = Encoder::starting_at(
        EncoderConfig {
            symbol_size: SIZE,
            max_window: WINDOW as u16,
            code: Code::default(),
        },
        SymbolId(100),
    )
    .unwrap();
    for s in &data {
        peer_encoder.push_source(s).unwrap();
        encoder.push(s).unwrap();
    }
    let window = Window::new(SymbolId(100), 10);
    let mut theirs = [0u8; SIZE];
    let mut ours = [0u8; SIZE];
    let parameters = RepairParameters::new(4242, DensityThreshold::FULL);
    peer_encoder.encode_repair(parameters, &mut theirs).unwrap();
    encoder.repair(window, RepairKey(4242), &mut ours).unwrap();
    assert_eq!(
        theirs, ours,
        "the same key and window give the same repair bytes"
    );

    // Symbol 103 is lost: ltx rebuilds it from cu-fec's repair...
    let mut decoder = Decoder::starting_at(
        DecoderConfig {
            symbol_size: SIZE,
            max_window: WINDOW as u16,
            code: Code::default(),
        },
        SymbolId(100),
    )
    .unwrap();
    let mut peer_decoder = PeerDecoder::new(peer_config(Field::Gf256), WINDOW).unwrap();
    peer_decoder
        .discard_before(EncodingSymbolId::new(100))
        .unwrap();
    for (i, s) in data.iter().enumerate().filter(|&(i, _)| i != 3) {
        decoder.receive_source(SymbolId(100 + i as u64), s).unwrap();
        let _ = peer_decoder
            .receive_source(EncodingSymbolId::new(100 + i as u32), s)
            .unwrap();
    }
    decoder
        .receive_repair(window, RepairKey(4242), &theirs)
        .unwrap();
    assert_eq!(decoder.symbol(SymbolId(103)), Some(&data[3][..]));

    // ... and cu-fec rebuilds it from ltx's.
    let id =
        cu_fec::RepairPayloadId::new(4242, DensityThreshold::FULL, 10, EncodingSymbolId::new(100))
            .unwrap();
    let report = peer_decoder.receive_repair(id, &ours).unwrap();
    assert_eq!(report.recovered(), 1);
    assert_eq!(
        peer_decoder.symbol(EncodingSymbolId::new(103)),
        Some(&data[3][..])
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn ltx_repairs_decode_with_cu_fec_gf256(seed: u64) {
        ltx_to_peer(seed, Field::Gf256)?;
    }

    #[test]
    fn ltx_xor_parity_decodes_with_cu_fec_gf2(seed: u64) {
        ltx_to_peer(seed, Field::Gf2)?;
    }

    #[test]
    fn cu_fec_repairs_decode_with_ltx_gf256(seed: u64) {
        peer_to_ltx(seed, Field::Gf256)?;
    }

    #[test]
    fn cu_fec_gf2_parity_decodes_with_ltx_xor_parity(seed: u64) {
        peer_to_ltx(seed, Field::Gf2)?;
    }
}
