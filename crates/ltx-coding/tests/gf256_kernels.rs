//! Every region kernel this CPU can run must give, byte for byte, what the
//! field's definition gives: the product of each byte by the coefficient
//! through `gf256::mul`, added with XOR.
//!
//! The regions start at every offset into their buffers (so at every
//! alignment a SIMD load can meet), have lengths on both sides of every
//! register and block size, and sit between guard bytes that must come out
//! untouched. Kernels the CPU cannot run are reported on stderr, past the
//! test harness's capture, so a CI log shows what was not covered.

use std::io::Write;
use std::sync::Once;

use ltx_coding::gf256::{self, Kernel, KernelKind, KernelUnavailable};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// Bytes of buffer on each side of a region, which no kernel may touch.
const GUARD: usize = 64;

/// Region starts tried within a buffer: every residue modulo the widest
/// register (64 bytes).
const MAX_OFFSET: usize = 64;

/// The kernels under test: all that this CPU can run.
fn kernels() -> Vec<Kernel> {
    static REPORT: Once = Once::new();
    REPORT.call_once(|| {
        let names = |available: bool| {
            KernelKind::ALL
                .into_iter()
                .filter(|kind| kind.is_available() == available)
                .map(KernelKind::name)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let skipped = names(false);
        let _ = writeln!(
            std::io::stderr(),
            "gf256 kernels tested: {}; skipped, not supported by this CPU: {}",
            names(true),
            if skipped.is_empty() { "none" } else { &skipped }
        );
    });
    Kernel::available()
}

/// Deterministic pseudo-random bytes (SplitMix64), so a failing case is
/// replayed from the seed proptest prints.
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// A region of `len` bytes at `offset` into a buffer of random bytes with
/// guard bytes after it.
#[derive(Clone)]
struct Region {
    buffer: Vec<u8>,
    offset: usize,
    len: usize,
}

impl Region {
    fn new(seed: u64, offset: usize, len: usize) -> Region {
        Region {
            buffer: random_bytes(seed, offset + len + GUARD),
            offset,
            len,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buffer[self.offset..self.offset + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buffer[self.offset..self.offset + self.len]
    }
}

/// Panics unless a kernel left the whole buffer, guards included, as the
/// reference did.
fn assert_same(kernel: Kernel, op: &str, got: &Region, want: &Region, context: &str) {
    if let Some(i) = got
        .buffer
        .iter()
        .zip(&want.buffer)
        .position(|(g, w)| g != w)
    {
        panic!(
            "{} {op} ({context}): byte {i} of the buffer is {:#04x}, expected {:#04x} \
             (region {}..{})",
            kernel.kind(),
            got.buffer[i],
            want.buffer[i],
            got.offset,
            got.offset + got.len,
        );
    }
}

fn reference_mul(dst: &mut [u8], src: &[u8], c: u8) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = gf256::mul(c, *s);
    }
}

fn reference_mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= gf256::mul(c, *s);
    }
}

/// `xor`, `mul` and `mul_add` of every kernel against the reference, on a
/// destination and a source of `len` bytes at the given offsets.
fn check_region_ops(len: usize, dst_offset: usize, src_offset: usize, c: u8, seed: u64) {
    let context = format!(
        "len {len}, dst offset {dst_offset}, src offset {src_offset}, c {c:#04x}, seed {seed:#x}"
    );
    let dst = Region::new(seed, dst_offset, len);
    let src = Region::new(seed ^ 0xA5A5_A5A5, src_offset, len);

    let mut want_xor = dst.clone();
    reference_mul_add(want_xor.bytes_mut(), src.bytes(), 1);
    let mut want_mul = dst.clone();
    reference_mul(want_mul.bytes_mut(), src.bytes(), c);
    let mut want_mul_add = dst.clone();
    reference_mul_add(want_mul_add.bytes_mut(), src.bytes(), c);

    for kernel in kernels() {
        let mut got = dst.clone();
        kernel.xor(got.bytes_mut(), src.bytes());
        assert_same(kernel, "xor", &got, &want_xor, &context);

        let mut got = dst.clone();
        kernel.mul(got.bytes_mut(), src.bytes(), c);
        assert_same(kernel, "mul", &got, &want_mul, &context);

        let mut got = dst.clone();
        kernel.mul_add(got.bytes_mut(), src.bytes(), c);
        assert_same(kernel, "mul_add", &got, &want_mul_add, &context);
    }
}

/// `dot_product` and `dot_product_add` of every kernel against the
/// reference, with one source per `(offset, coefficient)`.
fn check_dot_products(len: usize, dst_offset: usize, sources: &[(usize, u8)], seed: u64) {
    let context = format!(
        "len {len}, dst offset {dst_offset}, sources (offset, c) {sources:?}, seed {seed:#x}"
    );
    let dst = Region::new(seed, dst_offset, len);
    let source_regions: Vec<Region> = sources
        .iter()
        .enumerate()
        .map(|(k, &(offset, _))| Region::new(seed.wrapping_add(k as u64 + 1), offset, len))
        .collect();
    let slices: Vec<&[u8]> = source_regions.iter().map(Region::bytes).collect();
    let coefficients: Vec<u8> = sources.iter().map(|&(_, c)| c).collect();

    let mut want_add = dst.clone();
    for (source, &c) in slices.iter().zip(&coefficients) {
        reference_mul_add(want_add.bytes_mut(), source, c);
    }
    let mut want = dst.clone();
    want.bytes_mut().fill(0);
    for (source, &c) in slices.iter().zip(&coefficients) {
        reference_mul_add(want.bytes_mut(), source, c);
    }

    for kernel in kernels() {
        let mut got = dst.clone();
        kernel.dot_product(got.bytes_mut(), &slices, &coefficients);
        assert_same(kernel, "dot_product", &got, &want, &context);

        let mut got = dst.clone();
        kernel.dot_product_add(got.bytes_mut(), &slices, &coefficients);
        assert_same(kernel, "dot_product_add", &got, &want_add, &context);
    }
}

/// Coefficients with the special cases (0 and 1 take their own paths) drawn
/// often.
fn coefficient() -> impl Strategy<Value = u8> {
    prop_oneof![Just(0u8), Just(1u8), any::<u8>()]
}

/// Lengths: short ones (tails, single registers) as often as long ones.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..=130, 0usize..=70_000]
}

fn config() -> Config {
    Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn region_ops_match_the_reference(
        len in length(),
        dst_offset in 0..MAX_OFFSET,
        src_offset in 0..MAX_OFFSET,
        c in coefficient(),
        seed in any::<u64>(),
    ) {
        check_region_ops(len, dst_offset, src_offset, c, seed);
    }

    #[test]
    fn dot_products_match_the_reference(
        len in length(),
        dst_offset in 0..MAX_OFFSET,
        sources in prop::collection::vec((0..MAX_OFFSET, coefficient()), 0..=16),
        seed in any::<u64>(),
    ) {
        check_dot_products(len, dst_offset, &sources, seed);
    }
}

/// Offset pairs (destination, source): aligned, both misaligned alike, and
/// misaligned differently, up to the last residue.
const OFFSETS: [(usize, usize); 6] = [(0, 0), (1, 3), (15, 17), (31, 0), (33, 63), (63, 1)];

/// Zero and one (special-cased), the generator, the reduction polynomial's
/// low byte, the top bit, an arbitrary value and the largest.
const COEFFICIENTS: [u8; 8] = [0, 1, 2, 3, 0x1D, 0x80, 0x8E, 0xFF];

#[test]
fn every_short_length_at_every_kind_of_offset() {
    for len in 0..=130 {
        for (k, &(dst_offset, src_offset)) in OFFSETS.iter().enumerate() {
            for &c in &COEFFICIENTS {
                check_region_ops(len, dst_offset, src_offset, c, (len * 64 + k) as u64);
            }
        }
    }
}

#[test]
fn long_regions_around_64_kib() {
    for len in [4095, 4096, 65535, 65536, 65537, 70_000] {
        for &(dst_offset, src_offset) in &[(0, 0), (1, 2), (63, 5)] {
            for c in [0, 1, 0x53, 0xFF] {
                check_region_ops(len, dst_offset, src_offset, c, len as u64);
            }
        }
    }
}

#[test]
fn dot_products_of_every_source_count_and_short_length() {
    let lengths = [
        0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 130, 255, 256, 257, 1400,
    ];
    for count in 0..=16usize {
        for (i, &len) in lengths.iter().enumerate() {
            let seed = (count * 100 + i) as u64;
            let mixed: Vec<(usize, u8)> = (0..count)
                .map(|k| {
                    (
                        k * 7 % MAX_OFFSET,
                        COEFFICIENTS[(k + i) % COEFFICIENTS.len()],
                    )
                })
                .collect();
            check_dot_products(len, i % MAX_OFFSET, &mixed, seed);
            let zeros: Vec<(usize, u8)> = (0..count).map(|k| (k, 0)).collect();
            check_dot_products(len, 3, &zeros, seed);
            let ones: Vec<(usize, u8)> = (0..count).map(|k| (k, 1)).collect();
            check_dot_products(len, 5, &ones, seed);
        }
    }
}

#[test]
fn dot_products_of_sixteen_long_sources() {
    for len in [65536, 70_000] {
        let sources: Vec<(usize, u8)> = (0..16)
            .map(|k| {
                (
                    k * 5 % MAX_OFFSET,
                    [0, 1, 0x35, 0xC2][k % 4] ^ (k as u8 & 0xF0),
                )
            })
            .collect();
        check_dot_products(len, 7, &sources, len as u64);
    }
}

#[test]
fn kernel_names_round_trip_and_unknown_names_are_rejected() {
    for kind in KernelKind::ALL {
        assert_eq!(kind.name().parse::<KernelKind>(), Ok(kind));
        assert_eq!(kind.to_string(), kind.name());
    }
    for name in ["", "AVX2", "avx512", "neon", "sse"] {
        assert!(name.parse::<KernelKind>().is_err(), "{name:?} parsed");
    }
}

#[test]
fn a_kernel_exists_exactly_for_the_kinds_the_cpu_supports() {
    assert!(KernelKind::Scalar.is_available());
    assert_eq!(Kernel::scalar().kind(), KernelKind::Scalar);
    for kind in KernelKind::ALL {
        match Kernel::new(kind) {
            Ok(kernel) => {
                assert!(kind.is_available(), "{kind}");
                assert_eq!(kernel.kind(), kind);
            }
            Err(error) => {
                assert!(!kind.is_available(), "{kind}");
                assert_eq!(error, KernelUnavailable(kind));
            }
        }
    }
    let available: Vec<KernelKind> = Kernel::available().iter().map(|k| k.kind()).collect();
    let expected: Vec<KernelKind> = KernelKind::ALL
        .into_iter()
        .filter(|kind| kind.is_available())
        .collect();
    assert_eq!(available, expected);
    assert_eq!(Some(&Kernel::best().kind()), expected.last());
}

#[test]
fn the_process_kernel_is_the_best_unless_the_environment_names_another() {
    let expected = match std::env::var(gf256::KERNEL_ENV) {
        Ok(name) if !name.is_empty() => name.parse().expect("a valid kernel name"),
        _ => Kernel::best().kind(),
    };
    assert_eq!(gf256::kernel().kind(), expected);
}

#[test]
#[should_panic(expected = "region lengths differ")]
fn mul_add_rejects_regions_of_different_lengths() {
    Kernel::best().mul_add(&mut [0; 33], &[0; 32], 7);
}

#[test]
#[should_panic(expected = "region lengths differ")]
fn xor_rejects_regions_of_different_lengths() {
    Kernel::best().xor(&mut [0; 32], &[0; 33]);
}

#[test]
#[should_panic(expected = "region lengths differ")]
fn dot_product_rejects_a_source_of_another_length() {
    let long = [0u8; 65];
    Kernel::best().dot_product(&mut [0; 64], &[&[0; 64], &long], &[3, 4]);
}

#[test]
#[should_panic(expected = "one coefficient per source")]
fn dot_product_add_rejects_a_missing_coefficient() {
    Kernel::best().dot_product_add(&mut [0; 64], &[&[0; 64], &[0; 64]], &[3]);
}
