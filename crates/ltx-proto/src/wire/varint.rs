//! QUIC variable-length integers (RFC 9000 §16), and the cursor that reads
//! every field of a packet.

use std::fmt;

use super::WireError;

/// An integer below 2^62, encoded in 1, 2, 4 or 8 bytes whose first two bits
/// give the length (RFC 9000 §16).
///
/// Small values, which most fields hold, cost one byte; the decoder accepts
/// a value written in more bytes than it needs, as RFC 9000 allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct VarInt(u64);

impl VarInt {
    /// The largest value a varint holds, 2^62 − 1.
    pub const MAX: VarInt = VarInt(0x3fff_ffff_ffff_ffff);

    /// The varint holding `x`; every `u32` fits.
    pub const fn from_u32(x: u32) -> VarInt {
        VarInt(x as u64)
    }

    /// The varint holding `x`, or `None` if `x` is 2^62 or more.
    pub const fn from_u64(x: u64) -> Option<VarInt> {
        if x <= VarInt::MAX.0 {
            Some(VarInt(x))
        } else {
            None
        }
    }

    /// The value.
    pub const fn into_inner(self) -> u64 {
        self.0
    }

    /// How many bytes the shortest encoding takes: 1, 2, 4 or 8.
    pub const fn encoded_len(self) -> usize {
        match self.0 {
            0..=0x3f => 1,
            0x40..=0x3fff => 2,
            0x4000..=0x3fff_ffff => 4,
            _ => 8,
        }
    }

    /// Reads a varint off the front of `buf` and advances it past the
    /// varint; `None`, with `buf` unchanged, if `buf` ends inside it.
    pub fn decode(buf: &mut &[u8]) -> Option<VarInt> {
        let first = *buf.first()?;
        // The top two bits are the log2 of the length in bytes.
        let len = 1usize << (first >> 6);
        let (bytes, rest) = buf.split_at_checked(len)?;
        let value = bytes
            .iter()
            .skip(1)
            .fold(u64::from(first & 0x3f), |v, &b| (v << 8) | u64::from(b));
        *buf = rest;
        Some(VarInt(value))
    }

    /// Appends the shortest encoding to `out`.
    pub fn encode(self, out: &mut Vec<u8>) {
        let x = self.0;
        // Lengths 1, 2, 4, 8 are announced by prefixes 0b00, 0b01, 0b10, 0b11.
        match self.encoded_len() {
            1 => out.push(x as u8),
            2 => out.extend_from_slice(&((x as u16) | 0x4000).to_be_bytes()),
            4 => out.extend_from_slice(&((x as u32) | 0x8000_0000).to_be_bytes()),
            _ => out.extend_from_slice(&(x | 0xc000_0000_0000_0000).to_be_bytes()),
        }
    }
}

impl From<u32> for VarInt {
    fn from(x: u32) -> VarInt {
        VarInt::from_u32(x)
    }
}

impl From<u16> for VarInt {
    fn from(x: u16) -> VarInt {
        VarInt::from_u32(u32::from(x))
    }
}

impl From<VarInt> for u64 {
    fn from(x: VarInt) -> u64 {
        x.0
    }
}

impl fmt::Display for VarInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An integer as a field carries it when the receiver knows roughly where
/// it lies: its low 6, 14, 30 or 62 bits, in a varint of 1, 2, 4 or 8 bytes
/// whose length prefix says which. The receiver takes the value with those
/// low bits nearest to the one it expects (RFC 9000, appendix A, which
/// does this for packet numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Truncated {
    /// The low bits, below `1 << bits`.
    low_bits: u64,
    /// How many bits are kept: 6, 14, 30 or 62.
    bits: u8,
}

/// Bits a truncated integer keeps, by encoded length 1, 2, 4 and 8 bytes.
const KEPT_BITS: [u8; 4] = [6, 14, 30, 62];

impl Truncated {
    /// The shortest form of `value` that expands back to it at a receiver
    /// expecting any value at most `spread` away from it: the kept bits
    /// span more than twice `spread`.
    pub(crate) fn keeping(value: u64, spread: u64) -> Truncated {
        let bits = KEPT_BITS
            .into_iter()
            .find(|&bits| spread < 1 << (bits - 1))
            .unwrap_or(62);
        Truncated::from_parts(value, bits)
    }

    /// `value` whole, in 8 bytes: expands to itself whatever the receiver
    /// expects. Values of 2^62 or more keep their low 62 bits.
    pub(crate) fn whole(value: u64) -> Truncated {
        Truncated::from_parts(value, 62)
    }

    pub(crate) fn from_parts(value: u64, bits: u8) -> Truncated {
        Truncated {
            low_bits: value & ((1 << bits) - 1),
            bits,
        }
    }

    /// The value with these low bits nearest to `expected`, never 2^62 or
    /// more.
    pub(crate) fn expand(self, expected: u64) -> u64 {
        let window = 1u64 << self.bits;
        let half = window / 2;
        let candidate = (expected & !(window - 1)) | self.low_bits;
        if candidate.saturating_add(half) <= expected
            && candidate < VarInt::MAX.into_inner() + 1 - window
        {
            candidate + window
        } else if candidate > expected.saturating_add(half) && candidate >= window {
            candidate - window
        } else {
            candidate & VarInt::MAX.into_inner()
        }
    }

    /// How many bytes it takes: 1, 2, 4 or 8.
    pub(crate) fn len(self) -> usize {
        match self.bits {
            6 => 1,
            14 => 2,
            30 => 4,
            _ => 8,
        }
    }

    pub(crate) fn parse(r: &mut Reader<'_>, what: &'static str) -> Result<Truncated, WireError> {
        let (low_bits, len) = r.varint_and_len(what)?;
        Ok(Truncated {
            low_bits,
            bits: KEPT_BITS[len.trailing_zeros() as usize],
        })
    }

    /// Appends it in exactly [`Truncated::len`] bytes, even when the low
    /// bits would fit fewer: the length says how many bits follow.
    pub(crate) fn emit(self, out: &mut Vec<u8>) {
        let len = self.len();
        let prefix = u64::from(len.trailing_zeros()) << (8 * len - 2);
        out.extend_from_slice(&(prefix | self.low_bits).to_be_bytes()[8 - len..]);
    }
}

/// How many bytes the varint encoding of `x` takes: 1, 2, 4 or 8 (8 also for
/// values too large to encode, which [`VarInt::from_u64`] refuses).
pub fn varint_len(x: u64) -> usize {
    match VarInt::from_u64(x) {
        Some(v) => v.encoded_len(),
        None => 8,
    }
}

/// Appends `x` as a varint to `out`.
///
/// # Panics
/// If `x` is 2^62 or more. Values that go on the wire are produced by this
/// endpoint (counters, offsets, lengths) and stay far below that; one that
/// does not is a bug here, not input from the peer.
pub(crate) fn put_varint(out: &mut Vec<u8>, x: u64) {
    match VarInt::from_u64(x) {
        Some(v) => v.encode(out),
        None => panic!("{x} does not fit a varint (at most 2^62 - 1)"),
    }
}

/// A cursor over untrusted bytes: every read names the field it reads, so
/// that running out of input says where, and nothing reads past the end.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    /// Skips the zero bytes at the front; returns how many.
    pub(crate) fn skip_zeros(&mut self) -> usize {
        let n = self.bytes.iter().take_while(|&&b| b == 0).count();
        self.bytes = self.bytes.get(n..).unwrap_or_default();
        n
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        let (&b, rest) = self.bytes.split_first().ok_or(WireError::Truncated(what))?;
        self.bytes = rest;
        Ok(b)
    }

    pub(crate) fn u32_be(&mut self, what: &'static str) -> Result<u32, WireError> {
        let (bytes, rest) = self
            .bytes
            .split_first_chunk::<4>()
            .ok_or(WireError::Truncated(what))?;
        self.bytes = rest;
        Ok(u32::from_be_bytes(*bytes))
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], WireError> {
        let (bytes, rest) = self
            .bytes
            .split_first_chunk::<N>()
            .ok_or(WireError::Truncated(what))?;
        self.bytes = rest;
        Ok(*bytes)
    }

    pub(crate) fn varint(&mut self, what: &'static str) -> Result<u64, WireError> {
        VarInt::decode(&mut self.bytes)
            .map(u64::from)
            .ok_or(WireError::Truncated(what))
    }

    /// A varint and how many bytes it took (1, 2, 4 or 8), for a field
    /// whose encoded length means something.
    pub(crate) fn varint_and_len(&mut self, what: &'static str) -> Result<(u64, usize), WireError> {
        let before = self.bytes.len();
        let value = self.varint(what)?;
        Ok((value, before - self.bytes.len()))
    }

    /// A varint that must fit a `u16`.
    pub(crate) fn varint_u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        u16::try_from(self.varint(what)?).map_err(|_| WireError::OutOfRange(what))
    }

    /// A varint length of at most `max`, then that many bytes.
    pub(crate) fn bytes_with_len(
        &mut self,
        max: usize,
        what: &'static str,
    ) -> Result<&'a [u8], WireError> {
        let len = self.varint(what)?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= max)
            .ok_or(WireError::OutOfRange(what))?;
        let (bytes, rest) = self
            .bytes
            .split_at_checked(len)
            .ok_or(WireError::Truncated(what))?;
        self.bytes = rest;
        Ok(bytes)
    }

    /// Every byte left, at most `max` of them: the data of a frame that runs
    /// to the end of its payload.
    pub(crate) fn bytes_to_end(
        &mut self,
        max: usize,
        what: &'static str,
    ) -> Result<&'a [u8], WireError> {
        if self.bytes.len() > max {
            return Err(WireError::OutOfRange(what));
        }
        Ok(std::mem::take(&mut self.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_hex(hex: &[u8]) -> Option<(u64, usize)> {
        let mut buf = hex;
        let v = VarInt::decode(&mut buf)?;
        Some((v.into_inner(), hex.len() - buf.len()))
    }

    fn encode(x: u64) -> Vec<u8> {
        let mut out = Vec::new();
        VarInt::from_u64(x).unwrap().encode(&mut out);
        out
    }

    /// The sample encodings of RFC 9000 §A.1, both ways.
    #[test]
    fn rfc9000_vectors() {
        let vectors: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in vectors {
            assert_eq!(decode_hex(bytes), Some((value, bytes.len())));
            assert_eq!(encode(value), bytes);
            assert_eq!(varint_len(value), bytes.len());
        }
    }

    /// RFC 9000 §A.1 also decodes 37 written in two bytes: a longer encoding
    /// than needed is accepted.
    #[test]
    fn non_minimal_encodings_decode() {
        assert_eq!(decode_hex(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(decode_hex(&[0x80, 0, 0, 0x25]), Some((37, 4)));
        assert_eq!(decode_hex(&[0xc0, 0, 0, 0, 0, 0, 0, 0x25]), Some((37, 8)));
    }

    #[test]
    fn length_boundaries() {
        for (x, len) in [
            (0x3f, 1),
            (0x40, 2),
            (0x3fff, 2),
            (0x4000, 4),
            (0x3fff_ffff, 4),
            (0x4000_0000, 8),
            (0x3fff_ffff_ffff_ffff, 8),
        ] {
            assert_eq!(varint_len(x), len, "{x:#x}");
            assert_eq!(encode(x).len(), len, "{x:#x}");
            assert_eq!(decode_hex(&encode(x)), Some((x, len)));
        }
    }

    #[test]
    fn largest_value_fits_and_the_next_does_not() {
        assert_eq!(VarInt::from_u64((1 << 62) - 1), Some(VarInt::MAX));
        assert_eq!(VarInt::from_u64(1 << 62), None);
    }

    #[test]
    fn a_truncated_varint_leaves_the_cursor_alone() {
        let bytes = [0x9d, 0x7f, 0x3e];
        let mut buf = &bytes[..];
        assert_eq!(VarInt::decode(&mut buf), None);
        assert_eq!(buf, &bytes[..]);
        let mut empty: &[u8] = &[];
        assert_eq!(VarInt::decode(&mut empty), None);
    }

    #[test]
    #[should_panic(expected = "does not fit a varint")]
    fn emitting_a_value_past_the_range_is_a_bug() {
        put_varint(&mut Vec::new(), 1 << 62);
    }

    #[test]
    fn reader_refuses_a_length_past_its_maximum_and_past_the_input() {
        let mut r = Reader::new(&[0x03, 1, 2, 3]);
        assert_eq!(r.bytes_with_len(3, "data"), Ok(&[1u8, 2, 3][..]));
        let mut r = Reader::new(&[0x03, 1, 2, 3]);
        assert_eq!(
            r.bytes_with_len(2, "data"),
            Err(WireError::OutOfRange("data"))
        );
        let mut r = Reader::new(&[0x03, 1, 2]);
        assert_eq!(
            r.bytes_with_len(3, "data"),
            Err(WireError::Truncated("data"))
        );
    }

    #[test]
    fn reader_takes_the_rest_up_to_its_maximum() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.bytes_to_end(3, "data"), Ok(&[1u8, 2, 3][..]));
        assert!(r.rest().is_empty());
        assert_eq!(r.bytes_to_end(3, "data"), Ok(&[][..]));
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(
            r.bytes_to_end(2, "data"),
            Err(WireError::OutOfRange("data"))
        );
        assert_eq!(r.rest(), &[1, 2, 3]);
    }
}
