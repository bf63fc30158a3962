//! The acknowledgement frame: which packets arrived, what the path marked,
//! and how far the receiver's decoder has got.

use std::ops::RangeInclusive;

use ltx_coding::SymbolId;

use super::varint::{put_varint, varint_len, Reader};
use super::{PacketNumber, WireError};

/// The most packet number ranges one ACK frame carries. Older ranges were
/// carried by earlier ACKs; a bound keeps a hostile frame from costing more
/// than a small allocation.
pub const MAX_ACK_RANGES: usize = 0x40;

/// The ECN marks the receiver has counted on the packets it received
/// (RFC 3168 codepoints), cumulative over the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EcnCounts {
    /// Packets received marked ECT(0).
    pub ect0: u64,
    /// Packets received marked ECT(1).
    pub ect1: u64,
    /// Packets received marked CE: congestion experienced.
    pub ce: u64,
}

/// A summary of the receiver's decoder, from which the sender decides what
/// it may forget and how much more repair the receiver needs.
///
/// Parsing guarantees `decoded_through <= end`,
/// `missing <= end - decoded_through`, `rank <= missing` and
/// `settled <= missing - rank`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DecoderState {
    /// Every source symbol below this one is known to the receiver.
    pub decoded_through: SymbolId,
    /// One past the newest symbol any received symbol referred to.
    pub end: SymbolId,
    /// How many symbols in `[decoded_through, end)` are unknown.
    pub missing: u64,
    /// How many independent equations the decoder holds over the unknown
    /// symbols; `missing - rank` more repair symbols would recover them all.
    pub rank: u64,
    /// How many of those `missing - rank` equations the unknown symbols
    /// before the newest repair window's first symbol lack: the newest
    /// repair received that starts furthest on. Repairs whose windows slide
    /// forward do not reach back past it, so only an answer over the older
    /// symbols makes these up; the rest, the receiver's newest gaps, the
    /// repairs still on their way may.
    pub settled: u64,
}

/// An acknowledgement: the packets received, the delay before it was sent,
/// the ECN counts and the decoder's state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AckFrame {
    /// Packet numbers received, newest range first; the ranges are
    /// non-empty, do not overlap or touch, and number 1 to
    /// [`MAX_ACK_RANGES`].
    pub ranges: Vec<RangeInclusive<u64>>,
    /// How long the receiver held the largest packet before acknowledging
    /// it, in microseconds, so that the sender can take it out of its RTT
    /// sample.
    pub ack_delay_us: u64,
    /// The ECN counts.
    pub ecn: EcnCounts,
    /// The receiver's decoder.
    pub decoder: DecoderState,
}

impl AckFrame {
    /// An ACK of the packet numbers in `ranges`, which may come in any
    /// order, overlap or touch: they are merged, and the newest
    /// [`MAX_ACK_RANGES`] kept. Empty ranges are ignored.
    pub fn new(
        ranges: impl IntoIterator<Item = RangeInclusive<u64>>,
        ack_delay_us: u64,
        ecn: EcnCounts,
        decoder: DecoderState,
    ) -> AckFrame {
        let mut sorted: Vec<_> = ranges.into_iter().filter(|r| !r.is_empty()).collect();
        sorted.sort_unstable_by_key(|r| *r.start());
        let mut merged: Vec<RangeInclusive<u64>> = Vec::with_capacity(sorted.len());
        for r in sorted {
            match merged.last_mut() {
                Some(last) if r.start().saturating_sub(1) <= *last.end() => {
                    if r.end() > last.end() {
                        *last = *last.start()..=*r.end();
                    }
                }
                _ => merged.push(r),
            }
        }
        let ranges = merged.into_iter().rev().take(MAX_ACK_RANGES).collect();
        AckFrame {
            ranges,
            ack_delay_us,
            ecn,
            decoder,
        }
    }

    /// The largest packet number acknowledged, or `None` for a frame with no
    /// ranges (which cannot be sent).
    pub fn largest(&self) -> Option<PacketNumber> {
        self.ranges.first().map(|r| PacketNumber(*r.end()))
    }

    /// Whether the frame acknowledges `pn`.
    pub fn contains(&self, pn: PacketNumber) -> bool {
        // Ranges are descending: stop at the first that does not lie above.
        self.ranges
            .iter()
            .find(|r| *r.start() <= pn.0)
            .is_some_and(|r| r.contains(&pn.0))
    }

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<AckFrame, WireError> {
        let largest = r.varint("largest acknowledged")?;
        let ack_delay_us = r.varint("ack delay")?;
        let extra = r.varint("ack range count")?;
        // `extra` counts the ranges after the first.
        let count = usize::try_from(extra)
            .ok()
            .and_then(|n| n.checked_add(1))
            .filter(|&n| n <= MAX_ACK_RANGES)
            .ok_or(WireError::OutOfRange("ack range count"))?;
        let mut ranges = Vec::with_capacity(count);
        let first_len = r.varint("first ack range")?;
        let mut smallest = largest
            .checked_sub(first_len)
            .ok_or(WireError::OutOfRange("first ack range"))?;
        ranges.push(smallest..=largest);
        for _ in 1..count {
            let gap = r.varint("ack gap")?;
            // A gap of 0 means one packet missing between the ranges.
            let end = smallest
                .checked_sub(gap)
                .and_then(|x| x.checked_sub(2))
                .ok_or(WireError::OutOfRange("ack gap"))?;
            let len = r.varint("ack range length")?;
            smallest = end
                .checked_sub(len)
                .ok_or(WireError::OutOfRange("ack range length"))?;
            ranges.push(smallest..=end);
        }
        let ecn = EcnCounts {
            ect0: r.varint("ect0 count")?,
            ect1: r.varint("ect1 count")?,
            ce: r.varint("ce count")?,
        };
        let decoded_through = r.varint("decoded through")?;
        let span = r.varint("decoder end")?;
        let end = decoded_through
            .checked_add(span)
            .ok_or(WireError::OutOfRange("decoder end"))?;
        let missing = r.varint("missing symbols")?;
        if missing > span {
            return Err(WireError::OutOfRange("missing symbols"));
        }
        let rank = r.varint("decoder rank")?;
        if rank > missing {
            return Err(WireError::OutOfRange("decoder rank"));
        }
        let settled = r.varint("settled deficit")?;
        if settled > missing - rank {
            return Err(WireError::OutOfRange("settled deficit"));
        }
        Ok(AckFrame {
            ranges,
            ack_delay_us,
            ecn,
            decoder: DecoderState {
                decoded_through: SymbolId(decoded_through),
                end: SymbolId(end),
                missing,
                rank,
                settled,
            },
        })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        self.for_each_field(|x| put_varint(out, x));
    }

    pub(crate) fn encoded_len(&self) -> usize {
        let mut len = 0;
        self.for_each_field(|x| len += varint_len(x));
        len
    }

    /// Calls `f` on each varint of the encoding, in order.
    ///
    /// # Panics
    /// If the ranges break the rules of [`AckFrame::ranges`] or the decoder
    /// ends before it starts: such a frame was built wrongly here.
    fn for_each_field(&self, mut f: impl FnMut(u64)) {
        let (first, rest) = self
            .ranges
            .split_first()
            .expect("an ACK frame acknowledges at least one packet");
        assert!(
            self.ranges.len() <= MAX_ACK_RANGES,
            "more than {MAX_ACK_RANGES} ack ranges"
        );
        let length = |r: &RangeInclusive<u64>| {
            r.end()
                .checked_sub(*r.start())
                .expect("ack ranges are not empty")
        };
        f(*first.end());
        f(self.ack_delay_us);
        f(rest.len() as u64);
        f(length(first));
        let mut smallest = *first.start();
        for r in rest {
            let gap = smallest
                .checked_sub(*r.end())
                .and_then(|x| x.checked_sub(2))
                .expect("ack ranges are descending and do not touch");
            f(gap);
            f(length(r));
            smallest = *r.start();
        }
        f(self.ecn.ect0);
        f(self.ecn.ect1);
        f(self.ecn.ce);
        let d = &self.decoder;
        f(d.decoded_through.0);
        f(d.end
            .0
            .checked_sub(d.decoded_through.0)
            .expect("the decoder's end is not before decoded_through"));
        f(d.missing);
        f(d.rank);
        f(d.settled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoder() -> DecoderState {
        DecoderState {
            decoded_through: SymbolId(10),
            end: SymbolId(20),
            missing: 3,
            rank: 1,
            settled: 1,
        }
    }

    fn ack(ranges: Vec<RangeInclusive<u64>>) -> AckFrame {
        AckFrame {
            ranges,
            ack_delay_us: 25,
            ecn: EcnCounts {
                ect0: 5,
                ect1: 0,
                ce: 1,
            },
            decoder: decoder(),
        }
    }

    fn emit(a: &AckFrame) -> Vec<u8> {
        let mut out = Vec::new();
        a.emit(&mut out);
        assert_eq!(out.len(), a.encoded_len());
        out
    }

    fn parse(bytes: &[u8]) -> Result<AckFrame, WireError> {
        let mut r = Reader::new(bytes);
        let a = AckFrame::parse(&mut r)?;
        assert!(r.rest().is_empty());
        Ok(a)
    }

    #[test]
    fn known_encoding() {
        // Packets 2..=3, 6 and 8..=10.
        let a = ack(vec![8..=10, 6..=6, 2..=3]);
        let bytes = emit(&a);
        assert_eq!(
            bytes,
            [
                0x0a, // largest
                0x19, // ack delay 25 us
                0x02, // two more ranges
                0x02, // first range 8..=10
                0x00, 0x00, // gap of one (7), range 6..=6
                0x01, 0x01, // gap of two (4, 5), range 2..=3
                0x05, 0x00, 0x01, // ECN
                0x0a, 0x0a, 0x03, 0x01, // decoder: 10, +10, 3 missing, rank 1
                0x01, // one equation lacking before the newest window
            ]
        );
        assert_eq!(parse(&bytes), Ok(a));
    }

    #[test]
    fn helpers() {
        let a = ack(vec![8..=10, 6..=6, 2..=3]);
        assert_eq!(a.largest(), Some(PacketNumber(10)));
        let acked: Vec<u64> = (0..12).filter(|&n| a.contains(PacketNumber(n))).collect();
        assert_eq!(acked, [2, 3, 6, 8, 9, 10]);
        assert_eq!(ack(vec![]).largest(), None);
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges)] // an empty range is ignored
    fn new_merges_sorts_and_keeps_the_newest() {
        let a = AckFrame::new(
            [6..=6, 2..=3, 9..=10, 4..=4, 8..=8, 20..=19],
            0,
            EcnCounts::default(),
            DecoderState::default(),
        );
        assert_eq!(a.ranges, [8..=10, 6..=6, 2..=4]);
        let many = AckFrame::new(
            (0..100u64).map(|i| 3 * i..=3 * i + 1),
            0,
            EcnCounts::default(),
            DecoderState::default(),
        );
        assert_eq!(many.ranges.len(), MAX_ACK_RANGES);
        assert_eq!(many.ranges[0], 297..=298);
        assert_eq!(parse(&emit(&many)), Ok(many));
        let top = AckFrame::new(
            [u64::MAX - 1..=u64::MAX, 0..=u64::MAX],
            0,
            EcnCounts::default(),
            DecoderState::default(),
        );
        assert_eq!(top.ranges, [0..=u64::MAX]);
    }

    fn ranges(n: u64) -> Vec<RangeInclusive<u64>> {
        (0..n).rev().map(|i| 2 * i..=2 * i).collect()
    }

    #[test]
    fn sixty_four_ranges_accepted_sixty_five_refused() {
        let a = ack(ranges(64));
        assert_eq!(parse(&emit(&a)), Ok(a));
        // Emitting 65 is refused too, so build the bytes by hand: the count
        // is the third varint, after the largest (126) and the delay.
        let at = varint_len(126) + 1;
        let mut bytes = emit(&ack(ranges(64)));
        assert_eq!(bytes[at], 63);
        // 64 takes two bytes.
        bytes.splice(at..at + 1, [0x40, 0x40]);
        assert_eq!(parse(&bytes), Err(WireError::OutOfRange("ack range count")));
        // A count so large it overflows is refused before any allocation.
        bytes.splice(at..at + 2, [0xff; 8]);
        assert_eq!(parse(&bytes), Err(WireError::OutOfRange("ack range count")));
    }

    #[test]
    fn the_first_range_may_reach_zero_but_not_below() {
        // largest 5, first range length 5 or 6.
        let tail = [0x00; 8];
        let bytes = [&[0x05, 0x00, 0x00, 0x05][..], &tail].concat();
        assert_eq!(parse(&bytes).map(|a| a.ranges), Ok(vec![0..=5]));
        let bytes = [&[0x05, 0x00, 0x00, 0x06][..], &tail].concat();
        assert_eq!(parse(&bytes), Err(WireError::OutOfRange("first ack range")));
    }

    #[test]
    fn gaps_and_lengths_may_reach_zero_but_not_below() {
        // First range 4..=5; a gap of 2 leaves packet 0 for the next range.
        let tail = [0x00; 8];
        let head = [0x05, 0x00, 0x01, 0x01];
        let bytes = [&head[..], &[0x02, 0x00], &tail].concat();
        assert_eq!(parse(&bytes).map(|a| a.ranges), Ok(vec![4..=5, 0..=0]));
        let bytes = [&head[..], &[0x03, 0x00], &tail].concat();
        assert_eq!(parse(&bytes), Err(WireError::OutOfRange("ack gap")));
        // A gap of 0 ends the next range at 2, which may be 3 packets long.
        let bytes = [&head[..], &[0x00, 0x02], &tail].concat();
        assert_eq!(parse(&bytes).map(|a| a.ranges), Ok(vec![4..=5, 0..=2]));
        let bytes = [&head[..], &[0x00, 0x03], &tail].concat();
        assert_eq!(
            parse(&bytes),
            Err(WireError::OutOfRange("ack range length"))
        );
    }

    fn with_decoder(decoded_through: u64, span: u64, missing: u64, rank: u64) -> Vec<u8> {
        with_settled(decoded_through, span, missing, rank, 0)
    }

    fn with_settled(
        decoded_through: u64,
        span: u64,
        missing: u64,
        rank: u64,
        settled: u64,
    ) -> Vec<u8> {
        let mut bytes = vec![0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00];
        for x in [decoded_through, span, missing, rank, settled] {
            put_varint(&mut bytes, x);
        }
        bytes
    }

    #[test]
    fn missing_may_fill_the_span_but_not_exceed_it() {
        assert!(parse(&with_decoder(10, 5, 5, 0)).is_ok());
        assert_eq!(
            parse(&with_decoder(10, 5, 6, 0)),
            Err(WireError::OutOfRange("missing symbols"))
        );
    }

    #[test]
    fn rank_may_reach_missing_but_not_exceed_it() {
        assert!(parse(&with_decoder(10, 5, 3, 3)).is_ok());
        assert_eq!(
            parse(&with_decoder(10, 5, 3, 4)),
            Err(WireError::OutOfRange("decoder rank"))
        );
    }

    #[test]
    fn the_settled_deficit_may_reach_the_deficit_but_not_exceed_it() {
        assert!(parse(&with_settled(10, 5, 4, 1, 3)).is_ok());
        assert_eq!(
            parse(&with_settled(10, 5, 4, 1, 4)),
            Err(WireError::OutOfRange("settled deficit"))
        );
    }

    #[test]
    fn the_decoder_end_is_decoded_through_plus_the_span() {
        let max = (1 << 62) - 1;
        let a = parse(&with_decoder(max, max, 0, 0)).unwrap();
        assert_eq!(a.decoder.end, SymbolId(2 * max));
        assert_eq!(a.decoder.decoded_through, SymbolId(max));
    }

    #[test]
    #[should_panic(expected = "descending")]
    fn emitting_touching_ranges_is_a_bug() {
        emit(&ack(vec![5..=6, 3..=4]));
    }
}
