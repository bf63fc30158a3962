//! Multiplication by a constant as an 8×8 bit matrix, laid out for the GFNI
//! instruction `gf2p8affineqb`.
//!
//! `gf2p8mulb` multiplies in the field of AES (0x11B), not ours, so the GFNI
//! kernels use the affine instruction instead: multiplication by `c` is
//! linear over GF(2), hence a bit matrix `A` with `c·x = A·x`.
//!
//! The instruction pairs every byte `x` of a qword with the matrix qword `A`
//! in the same position and computes, for each result bit `i`,
//! `parity(A.byte[7 - i] & x) ^ imm8.bit[i]` (Intel SDM, `GF2P8AFFINEQB`).
//! Row `i` of the matrix therefore sits in byte `7 - i`, and its bit `j` is
//! bit `i` of `c·2^j` (the image of the basis vector `x = 1 << j`).

use super::tables::mul_by_definition;

/// The `gf2p8affineqb` matrix of every coefficient, indexed by the
/// coefficient (2 KiB, built at compile time).
pub(super) static MATRICES: [u64; 256] = build();

/// The `gf2p8affineqb` matrix of multiplication by `c`.
const fn matrix(c: u8) -> u64 {
    let mut matrix = 0u64;
    let mut i = 0;
    while i < 8 {
        let mut row = 0u8;
        let mut j = 0;
        while j < 8 {
            let image = mul_by_definition(c, 1 << j);
            row |= ((image >> i) & 1) << j;
            j += 1;
        }
        matrix |= (row as u64) << (8 * (7 - i));
        i += 1;
    }
    matrix
}

const fn build() -> [u64; 256] {
    let mut matrices = [0u64; 256];
    let mut c = 0;
    while c < 256 {
        matrices[c] = matrix(c as u8);
        c += 1;
    }
    matrices
}

#[cfg(test)]
mod tests {
    use super::super::tables::mul;
    use super::*;

    /// `affine_byte` of the Intel SDM's `GF2P8AFFINEQB` pseudocode, bit for bit:
    /// result bit `i` is `parity(matrix.byte[7 - i] AND x) XOR imm8.bit[i]`.
    fn affine_byte(matrix: u64, x: u8, imm8: u8) -> u8 {
        let mut result = 0u8;
        for i in 0..8 {
            let row = matrix.to_le_bytes()[7 - i];
            let parity = ((row & x).count_ones() & 1) as u8;
            result |= (parity ^ ((imm8 >> i) & 1)) << i;
        }
        result
    }

    /// One qword lane of `gf2p8affineqb dst, src1, src2, imm8`: each byte of
    /// `src1` transformed by the matrix qword `src2` of the same lane.
    fn gf2p8affineqb(src1: u64, src2: u64, imm8: u8) -> u64 {
        u64::from_le_bytes(src1.to_le_bytes().map(|x| affine_byte(src2, x, imm8)))
    }

    /// The emulation agrees with constants published for the instruction, so
    /// that what is tested against it is the instruction and not a mirror image.
    #[test]
    fn emulation_reproduces_the_published_identity_and_bit_reversal_matrices() {
        const IDENTITY: u64 = 0x0102_0408_1020_4080;
        const REVERSE_BITS: u64 = 0x8040_2010_0804_0201;
        for x in 0..=255u8 {
            assert_eq!(affine_byte(IDENTITY, x, 0), x);
            assert_eq!(affine_byte(REVERSE_BITS, x, 0), x.reverse_bits());
            assert_eq!(affine_byte(0, x, 0x63), 0x63, "imm8 is added last");
        }
    }

    #[test]
    fn multiplying_by_one_is_the_identity_matrix() {
        assert_eq!(MATRICES[1], 0x0102_0408_1020_4080);
        assert_eq!(MATRICES[0], 0);
    }

    #[test]
    fn matrix_of_c_applied_to_x_is_c_times_x_for_every_pair() {
        for c in 0..=255u8 {
            for x in 0..=255u8 {
                assert_eq!(
                    affine_byte(MATRICES[c as usize], x, 0),
                    mul(c, x),
                    "{c}·{x}"
                );
            }
        }
    }

    /// The whole instruction, eight bytes per lane as the kernels use it: the
    /// byte order within the qword must not matter for a broadcast matrix.
    #[test]
    fn a_broadcast_matrix_multiplies_every_byte_of_a_lane() {
        for c in 0..=255u8 {
            for base in (0..=255u8).step_by(8) {
                let bytes: [u8; 8] = std::array::from_fn(|k| base + k as u8);
                let lane = gf2p8affineqb(u64::from_le_bytes(bytes), MATRICES[c as usize], 0);
                assert_eq!(lane.to_le_bytes(), bytes.map(|x| mul(c, x)), "c = {c}");
            }
        }
    }
}
