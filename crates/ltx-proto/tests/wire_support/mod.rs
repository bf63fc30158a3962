//! Proptest strategies for every header and frame, shared by the wire tests.
// Each test crate that includes this uses a different part of it.
#![allow(dead_code)]

use ltx_coding::{RepairKey, SymbolId};
use ltx_proto::wire::{
    AckFrame, CloseFrame, ConnectionId, DecoderState, EcnCounts, Frame, HandshakeFrame, Header,
    PacketNumber, PacketType, RepairFrame, SourceFrame, StreamFrame, StreamId, TransportParams,
    TruncatedPacketNumber, TruncatedSymbolId, VarInt, MAX_ACK_RANGES, MAX_REASON_LEN,
    MAX_SYMBOL_SIZE, MIN_MAX_DATAGRAM,
};
use proptest::collection::vec;
use proptest::prelude::*;

const MAX: u64 = VarInt::MAX.into_inner();

/// A varint value, spread over the four encoded lengths.
pub(crate) fn varint() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..=0x3f_u64,
        0..=0x3fff_u64,
        0..=0x3fff_ffff_u64,
        0..=MAX,
        Just(MAX)
    ]
}

/// Payload bytes, mostly short, sometimes symbol-sized.
///
/// Frames borrow their payload from the packet; leaking the few kilobytes
/// each case allocates lets a strategy hand out `Frame<'static>`.
pub(crate) fn bytes(max: usize) -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..=max.min(64)),
        1 => vec(any::<u8>(), 0..=max),
    ]
    .prop_map(|v| &*Box::leak(v.into_boxed_slice()))
}

pub(crate) fn header() -> impl Strategy<Value = Header> {
    (
        prop_oneof![
            Just(PacketType::Initial),
            Just(PacketType::Handshake),
            Just(PacketType::Data)
        ],
        any::<bool>(),
        any::<u32>(),
        varint(),
        prop::option::of(varint()),
    )
        .prop_map(|(packet_type, key_phase, dcid, number, acked)| Header {
            packet_type,
            key_phase,
            dcid: ConnectionId(dcid),
            // Every length: a whole number, or one truncated against
            // an acknowledgement anywhere below it.
            number: TruncatedPacketNumber::truncate(
                PacketNumber(number),
                acked.map(|a| PacketNumber(a.min(number))),
            ),
        })
}

/// Ranges as the parser returns them: descending, apart, at most
/// `MAX_ACK_RANGES`, built from the largest down (the first gap unused) and
/// stopped at zero.
fn ack_ranges() -> impl Strategy<Value = Vec<std::ops::RangeInclusive<u64>>> {
    (
        varint(),
        vec((0..=0x4000u64, 0..=0x4000u64), 1..=MAX_ACK_RANGES),
    )
        .prop_map(|(largest, steps)| {
            let mut ranges = Vec::new();
            // The highest packet number the next range may end at: two below
            // the previous range's start, so that a packet lies between.
            let mut below = Some(largest);
            for (i, (gap, len)) in steps.into_iter().enumerate() {
                let Some(top) = below else { break };
                let end = if i == 0 { top } else { top.saturating_sub(gap) };
                let start = end.saturating_sub(len);
                ranges.push(start..=end);
                below = start.checked_sub(2);
            }
            ranges
        })
}

fn decoder_state() -> impl Strategy<Value = DecoderState> {
    (varint(), varint())
        .prop_flat_map(|(through, span)| (Just(through), Just(span), 0..=span))
        .prop_flat_map(|(through, span, missing)| {
            (Just(through), Just(span), Just(missing), 0..=missing)
        })
        .prop_flat_map(|(through, span, missing, rank)| {
            (
                Just(through),
                Just(span),
                Just(missing),
                Just(rank),
                0..=missing - rank,
            )
        })
        .prop_map(|(through, span, missing, rank, settled)| DecoderState {
            decoded_through: SymbolId(through),
            end: SymbolId(through + span),
            missing,
            rank,
            settled,
        })
}

pub(crate) fn ack() -> impl Strategy<Value = AckFrame> {
    (
        ack_ranges(),
        varint(),
        (varint(), varint(), varint()),
        decoder_state(),
    )
        .prop_map(
            |(ranges, ack_delay_us, (ect0, ect1, ce), decoder)| AckFrame {
                ranges,
                ack_delay_us,
                ecn: EcnCounts { ect0, ect1, ce },
                decoder,
            },
        )
}

fn params() -> impl Strategy<Value = TransportParams> {
    (
        MIN_MAX_DATAGRAM..=u16::MAX,
        1..=MAX_SYMBOL_SIZE as u16,
        1..=u16::MAX,
        (varint(), varint(), varint(), varint()),
    )
        .prop_map(
            |(max_datagram, symbol_size, max_window, (md, msd, ms, idle))| TransportParams {
                max_datagram,
                symbol_size,
                max_window,
                max_data: md,
                max_stream_data: msd,
                max_streams: ms,
                idle_timeout_ms: idle,
            },
        )
}

fn stream() -> impl Strategy<Value = StreamFrame<'static>> {
    (varint(), any::<bool>(), any::<bool>(), bytes(2000))
        .prop_flat_map(|(id, fin, to_end, data)| {
            let room = MAX - data.len() as u64;
            let offset = prop_oneof![0..=room.min(1 << 20), 0..=room, Just(room)];
            (Just(id), offset, Just(fin), Just(to_end), Just(data))
        })
        .prop_map(|(id, offset, fin, to_end, data)| StreamFrame {
            id: StreamId(id),
            offset,
            fin,
            to_end,
            data,
        })
}

/// A symbol id of any length: truncated for a receiver whose decoder end
/// lies anywhere in a range around it, or whole.
fn symbol_id() -> impl Strategy<Value = TruncatedSymbolId> {
    (varint(), varint(), varint()).prop_map(|(id, a, b)| {
        TruncatedSymbolId::truncate(SymbolId(id), SymbolId(a.min(b)), SymbolId(a.max(b)))
    })
}

/// Any frame but padding, which merges with a neighbour of its kind.
pub(crate) fn frame() -> impl Strategy<Value = Frame<'static>> {
    prop_oneof![
        Just(Frame::Ping),
        ack().prop_map(Frame::Ack),
        (symbol_id(), bytes(MAX_SYMBOL_SIZE))
            .prop_map(|(id, data)| Frame::Source(SourceFrame { id, data })),
        (
            symbol_id(),
            1..=u16::MAX,
            any::<u16>(),
            0..=15u8,
            bytes(MAX_SYMBOL_SIZE)
        )
            .prop_map(
                |(first, len, key, density, data)| Frame::Repair(RepairFrame {
                    first,
                    len,
                    key: RepairKey(key),
                    density,
                    data,
                })
            ),
        stream().prop_map(Frame::Stream),
        (varint(), varint(), varint()).prop_map(|(id, error_code, final_size)| {
            Frame::ResetStream {
                id: StreamId(id),
                error_code,
                final_size,
            }
        }),
        (varint(), varint()).prop_map(|(id, error_code)| Frame::StopSending {
            id: StreamId(id),
            error_code
        }),
        varint().prop_map(Frame::MaxData),
        (varint(), varint()).prop_map(|(id, max)| Frame::MaxStreamData {
            id: StreamId(id),
            max
        }),
        varint().prop_map(Frame::MaxStreams),
        (any::<u32>(), params()).prop_map(|(cid, params)| Frame::Handshake(HandshakeFrame {
            source_cid: ConnectionId(cid),
            params
        })),
        Just(Frame::HandshakeDone),
        (varint(), bytes(MAX_REASON_LEN))
            .prop_map(|(code, reason)| Frame::Close(CloseFrame { code, reason })),
        any::<[u8; 8]>().prop_map(Frame::PathChallenge),
        any::<[u8; 8]>().prop_map(Frame::PathResponse),
    ]
}

/// Whether a frame's bytes run to the end of its payload, which makes it
/// the payload's last frame.
pub(crate) fn runs_to_end(frame: &Frame<'_>) -> bool {
    match frame {
        Frame::Source(_) | Frame::Repair(_) => true,
        Frame::Stream(s) => s.to_end,
        _ => false,
    }
}

/// Frames that carry their own length, any number of them in a row.
pub(crate) fn delimited_frames() -> impl Strategy<Value = Vec<Frame<'static>>> {
    vec(
        frame().prop_filter("runs to the end", |f| !runs_to_end(f)),
        0..8,
    )
}

/// A header and the frames after it; only the last may run to the end.
pub(crate) fn packet() -> impl Strategy<Value = (Header, Vec<Frame<'static>>)> {
    (header(), delimited_frames(), proptest::option::of(frame())).prop_map(
        |(header, mut frames, last)| {
            frames.extend(last);
            (header, frames)
        },
    )
}

/// The bytes of a packet.
pub(crate) fn emit(header: &Header, frames: &[Frame<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    header.emit(&mut out);
    for frame in frames {
        frame.emit(&mut out);
    }
    out
}
