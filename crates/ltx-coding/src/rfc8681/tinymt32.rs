//! TinyMT32, the pseudo-random generator of RFC 8682, with the parameter set
//! that RFC fixes, so that every FEC scheme built on it draws the same
//! numbers from the same seed.

/// The RFC 8682 parameter `mat1`.
const MAT1: u32 = 0x8f70_11ee;
/// The RFC 8682 parameter `mat2`.
const MAT2: u32 = 0xfc78_ff1f;
/// The RFC 8682 tempering parameter `tmat`.
const TMAT: u32 = 0x3793_fdff;

const SH0: u32 = 1;
const SH1: u32 = 10;
const SH8: u32 = 8;
const MASK: u32 = 0x7fff_ffff;
/// Mixing rounds of the seed into the state.
const MIN_LOOP: u32 = 8;
/// State transitions discarded after seeding.
const PRE_LOOP: u32 = 8;

/// A TinyMT32 generator with the RFC 8682 parameters.
///
/// ```
/// use ltx_coding::rfc8681::TinyMt32;
///
/// let mut rng = TinyMt32::new(1);
/// assert_eq!(rng.next_u32(), 2_545_341_989);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinyMt32 {
    status: [u32; 4],
}

impl TinyMt32 {
    /// A generator seeded with `seed` (`tinymt32_init`).
    pub fn new(seed: u32) -> TinyMt32 {
        let mut status = [seed, MAT1, MAT2, TMAT];
        for i in 1..MIN_LOOP {
            let previous = status[((i - 1) & 3) as usize];
            status[(i & 3) as usize] ^=
                i.wrapping_add(1_812_433_253u32.wrapping_mul(previous ^ (previous >> 30)));
        }
        // Period certification: the all-zero state is a fixed point.
        if status[0] & MASK == 0 && status[1] == 0 && status[2] == 0 && status[3] == 0 {
            status = [
                u32::from(b'T'),
                u32::from(b'I'),
                u32::from(b'N'),
                u32::from(b'Y'),
            ];
        }
        let mut generator = TinyMt32 { status };
        for _ in 0..PRE_LOOP {
            generator.next_state();
        }
        generator
    }

    fn next_state(&mut self) {
        let s = &mut self.status;
        let mut y = s[3];
        let mut x = (s[0] & MASK) ^ s[1] ^ s[2];
        x ^= x << SH0;
        y ^= (y >> SH0) ^ x;
        s[0] = s[1];
        s[1] = s[2];
        s[2] = x ^ (y << SH1);
        s[3] = y;
        // All ones when the low bit of y is set, else zero.
        let low_bit_mask = (y & 1).wrapping_neg();
        s[1] ^= low_bit_mask & MAT1;
        s[2] ^= low_bit_mask & MAT2;
    }

    fn temper(&self) -> u32 {
        let s = &self.status;
        let t1 = s[0].wrapping_add(s[2] >> SH8);
        let t0 = s[3] ^ t1;
        t0 ^ ((t1 & 1).wrapping_neg() & TMAT)
    }

    /// The next 32-bit output (`tinymt32_generate_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        self.next_state();
        self.temper()
    }

    /// A draw in 0..16: the low four bits of the next output
    /// (RFC 8682 `tinymt32_rand16`).
    pub fn rand16(&mut self) -> u8 {
        (self.next_u32() & 0xF) as u8
    }

    /// A draw in 0..256: the low eight bits of the next output
    /// (RFC 8682 `tinymt32_rand256`).
    pub fn rand256(&mut self) -> u8 {
        (self.next_u32() & 0xFF) as u8
    }
}
