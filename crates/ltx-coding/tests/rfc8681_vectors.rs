//! The published test vectors of RFC 8682 (TinyMT32) and RFC 8681
//! (`rand16` / `rand256` draws), and the coefficient generator built on them.

use ltx_coding::rfc8681::{coding_coefficients, coding_coefficients_gf2, Density, TinyMt32};
use ltx_coding::RepairKey;

/// RFC 8682, Figure 2: the first 50 outputs of TinyMT32 seeded with 1, which
/// every conforming implementation must reproduce (they are the authors'
/// `check32.out.txt`).
const RFC_8682_SEED_1: [u32; 50] = [
    2545341989, 981918433, 3715302833, 2387538352, 3591001365, //
    3820442102, 2114400566, 2196103051, 2783359912, 764534509, //
    643179475, 1822416315, 881558334, 4207026366, 3690273640, //
    3240535687, 2921447122, 3984931427, 4092394160, 44209675, //
    2188315343, 2908663843, 1834519336, 3774670961, 3019990707, //
    4065554902, 1239765502, 4035716197, 3412127188, 552822483, //
    161364450, 353727785, 140085994, 149132008, 2547770827, //
    4064042525, 4078297538, 2057335507, 622384752, 2041665899, //
    2193913817, 1080849512, 33160901, 662956935, 642999063, //
    3384709977, 1723175122, 3866752252, 521822317, 2292524454, //
];

#[test]
fn tinymt32_seeded_with_1_gives_the_rfc_8682_sequence() {
    let mut rng = TinyMt32::new(1);
    let first: Vec<u32> = (0..50).map(|_| rng.next_u32()).collect();
    assert_eq!(first, RFC_8682_SEED_1);
}

#[test]
fn rand256_seeded_with_1_gives_the_rfc_8681_sequence() {
    let mut rng = TinyMt32::new(1);
    let draws: Vec<u8> = (0..10).map(|_| rng.rand256()).collect();
    assert_eq!(draws, [37, 225, 177, 176, 21, 246, 54, 139, 168, 237]);
}

#[test]
fn rand16_seeded_with_1_gives_the_rfc_8681_sequence() {
    let mut rng = TinyMt32::new(1);
    let draws: Vec<u8> = (0..10).map(|_| rng.rand16()).collect();
    assert_eq!(draws, [5, 1, 1, 0, 5, 6, 6, 11, 8, 13]);
}

#[test]
fn full_density_coefficients_follow_rand256_and_skip_zero() {
    // Seed 1's rand256 draws hold no zero, so the coefficients are the draws.
    let mut coefficients = [0u8; 10];
    coding_coefficients(RepairKey(1), Density::FULL, &mut coefficients);
    assert_eq!(
        coefficients,
        [37, 225, 177, 176, 21, 246, 54, 139, 168, 237]
    );

    for key in 0..2000u16 {
        let mut coefficients = [0u8; 64];
        coding_coefficients(RepairKey(key), Density::FULL, &mut coefficients);
        assert!(coefficients.iter().all(|&c| c != 0), "key {key}");
    }
}

#[test]
fn sparse_coefficients_interleave_rand16_and_rand256_draws() {
    // DT = 4 with key 1: rand16 gives 5 (> 4: zero), then 1 (≤ 4: draw a
    // rand256), and so on, all from one generator.
    let mut rng = TinyMt32::new(1);
    let mut expected = Vec::new();
    for _ in 0..20 {
        if rng.rand16() <= 4 {
            let c = loop {
                let c = rng.rand256();
                if c != 0 {
                    break c;
                }
            };
            expected.push(c);
        } else {
            expected.push(0);
        }
    }
    let mut coefficients = [0u8; 20];
    coding_coefficients(RepairKey(1), Density::new(4).unwrap(), &mut coefficients);
    assert_eq!(coefficients.to_vec(), expected);
    assert_eq!(coefficients[0], 0, "rand16 = 5 > DT = 4");
    assert_ne!(coefficients[1], 0, "rand16 = 1 ≤ DT = 4");
}

#[test]
fn density_sets_the_share_of_nonzero_coefficients() {
    // (DT + 1) / 16 of the coefficients are non-zero; over 64 000 draws the
    // standard deviation of the share is below 0.2 %, so ±1 % is ample.
    for dt in [0u8, 3, 7, 11, 14] {
        let mut nonzero = 0usize;
        let mut total = 0usize;
        for key in 0..1000u16 {
            let mut coefficients = [0u8; 64];
            coding_coefficients(RepairKey(key), Density::new(dt).unwrap(), &mut coefficients);
            nonzero += coefficients.iter().filter(|&&c| c != 0).count();
            total += coefficients.len();
        }
        let share = nonzero as f64 / total as f64;
        let expected = f64::from(dt + 1) / 16.0;
        assert!(
            (share - expected).abs() < 0.01,
            "DT {dt}: share {share}, expected {expected}"
        );
    }
}

#[test]
fn density_must_be_at_most_15() {
    assert_eq!(Density::new(15).map(Density::get), Ok(15));
    assert!(Density::new(16).is_err());
    assert_eq!(
        Density::new(16).unwrap_err().to_string(),
        "density 16 is out of range (RFC 8681 allows 0 to 15)"
    );
}

#[test]
fn gf2_coefficients_are_bits_and_all_ones_at_full_density() {
    let mut coefficients = [0u8; 40];
    coding_coefficients_gf2(RepairKey(9), Density::FULL, &mut coefficients);
    assert!(coefficients.iter().all(|&c| c == 1));

    // Key 1, DT = 4: rand16 draws 5, 1, 1, 0, 5, 6, 6, 11, 8, 13.
    let mut coefficients = [0u8; 10];
    coding_coefficients_gf2(RepairKey(1), Density::new(4).unwrap(), &mut coefficients);
    assert_eq!(coefficients, [0, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
}
