//! The decoder against its specification: whatever arrives, in whatever
//! order, it recovers exactly the source once the equations it received
//! span the window — and not before.

use ltx_coding::codec::{Code, DecodeError, Decoder, DecoderConfig, Encoder, EncoderConfig};
use ltx_coding::gf256;
use ltx_coding::rfc8681::Density;
use ltx_coding::{RepairKey, SymbolId, Window};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};

/// A received symbol, as the decoder gets it.
#[derive(Debug, Clone)]
enum Received {
    Source(SymbolId),
    Repair(Window, RepairKey),
}

fn sources(rng: &mut impl RngCore, count: usize, size: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|_| {
            let mut s = vec![0u8; size];
            rng.fill_bytes(&mut s);
            s
        })
        .collect()
}

/// The rank over GF(2^8) of the equations the received symbols stand for,
/// by plain Gaussian elimination: the oracle the decoder is checked against.
fn rank_of(code: Code, first: SymbolId, n: usize, received: &[Received]) -> usize {
    let mut rows: Vec<Vec<u8>> = received
        .iter()
        .map(|r| {
            let mut row = vec![0u8; n];
            match *r {
                Received::Source(id) => row[(id.0 - first.0) as usize] = 1,
                Received::Repair(window, key) => {
                    let offset = (window.first.0 - first.0) as usize;
                    let mut c = vec![0u8; usize::from(window.len)];
                    code.coefficients(window, key, &mut c).unwrap();
                    row[offset..offset + c.len()].copy_from_slice(&c);
                }
            }
            row
        })
        .collect();
    let mut rank = 0;
    for col in 0..n {
        let Some(p) = (rank..rows.len()).find(|&r| rows[r][col] != 0) else {
            continue;
        };
        rows.swap(rank, p);
        let f = gf256::inv(rows[rank][col]).unwrap();
        let pivot: Vec<u8> = rows[rank].iter().map(|&x| gf256::mul(x, f)).collect();
        for (r, row) in rows.iter_mut().enumerate() {
            if r != rank && row[col] != 0 {
                let c = row[col];
                for (x, &p) in row.iter_mut().zip(&pivot) {
                    *x ^= gf256::mul(c, p);
                }
            }
        }
        rows[rank] = pivot;
        rank += 1;
    }
    rank
}

struct Case {
    code: Code,
    first: SymbolId,
    data: Vec<Vec<u8>>,
    received: Vec<Received>,
}

/// Feeds every received symbol and checks the decoder against the oracle.
fn check(case: &Case) -> Result<(), TestCaseError> {
    let n = case.data.len();
    let size = case.data[0].len();
    let config = EncoderConfig {
        symbol_size: size,
        max_window: n as u16,
        code: case.code,
    };
    let mut encoder = Encoder::starting_at(config, case.first).unwrap();
    for s in &case.data {
        encoder.push(s).unwrap();
    }
    let mut decoder = Decoder::starting_at(
        DecoderConfig {
            symbol_size: size,
            max_window: n as u16,
            code: case.code,
        },
        case.first,
    )
    .unwrap();
    let mut payload = vec![0u8; size];
    let mut delivered = 0;
    for r in &case.received {
        let outcome = match *r {
            Received::Source(id) => {
                let i = (id.0 - case.first.0) as usize;
                decoder.receive_source(id, &case.data[i])
            }
            Received::Repair(window, key) => {
                encoder.repair(window, key, &mut payload).unwrap();
                decoder.receive_repair(window, key, &payload)
            }
        };
        match outcome {
            // A sparse repair symbol may draw no non-zero coefficient at all.
            Ok(_) | Err(DecodeError::Duplicate(_) | DecodeError::ZeroCoefficients(_)) => {}
            Err(e) => return Err(TestCaseError::fail(format!("refused {r:?}: {e}"))),
        }
        // Every delivered symbol is exactly the source, the moment it is known.
        while let Some(id) = decoder.poll_decoded() {
            let i = (id.0 - case.first.0) as usize;
            prop_assert_eq!(decoder.symbol(id), Some(&case.data[i][..]), "symbol {}", id);
            delivered += 1;
        }
    }
    let rank = rank_of(case.code, case.first, n, &case.received);
    let end = decoder.end().0 - case.first.0;
    let known = (0..n as u64)
        .filter(|&i| decoder.is_known(SymbolId(case.first.0 + i)))
        .count();
    prop_assert_eq!(known, delivered);
    prop_assert_eq!(known as u64 + decoder.missing(), end);
    if rank == n {
        prop_assert_eq!(
            decoder.missing(),
            0,
            "rank covers the window, yet symbols are missing"
        );
    } else {
        prop_assert!(known < n, "decoded all {} symbols from rank {}", n, rank);
    }
    // Known symbols and held equations are exactly the information received.
    prop_assert_eq!(known + decoder.rank(), rank);
    Ok(())
}

/// A window of `n` sources, each lost with probability `loss`, plus repair
/// symbols over random sub-windows, all delivered in random order.
fn random_case(
    rng: &mut SmallRng,
    code: Code,
    n: usize,
    size: usize,
    loss: f64,
    extra: usize,
) -> Case {
    // Ids anywhere in the 64-bit space, up to the very end of it.
    let mut first = (rng.next_u64() >> rng.random_range(1..64)).min(u64::MAX - n as u64);
    if let Code::Block { source, .. } = code {
        first -= first % u64::from(source); // blocks are aligned
    }
    let first = SymbolId(first);
    let data = sources(rng, n, size);
    let mut received = Vec::new();
    let mut lost = 0;
    for i in 0..n {
        if rng.random_bool(loss) {
            lost += 1;
        } else {
            received.push(Received::Source(SymbolId(first.0 + i as u64)));
        }
    }
    for _ in 0..lost + extra {
        let window = match code {
            Code::Block { source, .. } => {
                let blocks = n / usize::from(source);
                let j = rng.random_range(0..blocks as u64);
                Window::new(SymbolId(first.0 + j * u64::from(source)), source)
            }
            _ => {
                let start = rng.random_range(0..n);
                let len = rng.random_range(1..=n - start);
                if rng.random_bool(0.5) {
                    Window::new(first, n as u16)
                } else {
                    Window::new(SymbolId(first.0 + start as u64), len as u16)
                }
            }
        };
        received.push(Received::Repair(window, RepairKey(rng.random::<u16>())));
    }
    received.shuffle(rng);
    Case {
        code,
        first,
        data,
        received,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Sliding windows of 1 to 256 symbols, 0 to 60 % loss, repair symbols
    /// over random sub-windows, all in random order.
    #[test]
    fn sliding_window_decodes_exactly_when_rank_covers_the_window(
        seed: u64, n in 1usize..=256, loss in 0.0f64..0.6, extra in 0usize..4,
    ) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let size = rng.random_range(1..=48);
        check(&random_case(&mut rng, Code::default(), n, size, loss, extra))?;
    }

    /// Sparse coefficients (DT < 15) make dependent repair symbols likely:
    /// the decoder must tell them apart.
    #[test]
    fn sparse_codes_decode_exactly_when_rank_covers_the_window(
        seed: u64, n in 1usize..=64, dt in 0u8..15, loss in 0.0f64..0.5,
    ) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let code = Code::SlidingWindow { density: Density::new(dt).unwrap() };
        check(&random_case(&mut rng, code, n, 16, loss, 2))?;
    }

    /// XOR parity: every repair over one window is the same equation.
    #[test]
    fn xor_parity_decodes_exactly_when_rank_covers_the_window(
        seed: u64, n in 1usize..=32, loss in 0.0f64..0.3,
    ) {
        let mut rng = SmallRng::seed_from_u64(seed);
        check(&random_case(&mut rng, Code::XorParity, n, 20, loss, 1))?;
    }

    /// Blocks of 8 symbols, repairs per block.
    #[test]
    fn block_mode_decodes_exactly_when_rank_covers_the_window(
        seed: u64, blocks in 1usize..=6, loss in 0.0f64..0.4,
    ) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let code = Code::Block { source: 8, density: Density::FULL };
        check(&random_case(&mut rng, code, 8 * blocks, 24, loss, 3))?;
    }
}
