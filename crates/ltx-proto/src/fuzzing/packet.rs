//! The wire parsers on arbitrary bytes.

use crate::wire::{Frame, Frames, Header};

/// Parses `data` as a packet: the header, then every frame after it.
///
/// Refusals are expected; a panic is not. Each header and frame that
/// parses is emitted again, and must take exactly [`Frame::encoded_len`]
/// bytes and parse back to itself: the encoder and parser agreeing on every
/// value the parser accepts is what lets a frame be forwarded or re-sent as
/// parsed.
///
/// Returns how many frames parsed, so that tests can check they reach past
/// the header.
pub fn parse_packet(data: &[u8]) -> usize {
    let Ok((header, len)) = Header::parse(data) else {
        return 0;
    };
    let mut out = Vec::new();
    header.emit(&mut out);
    assert_eq!(out.len(), header.len(), "header length of {header:?}");
    assert_eq!(
        Header::parse(&out),
        Ok((header, out.len())),
        "header did not re-parse"
    );
    let payload = data.get(len..).unwrap_or_default();
    let mut parsed = 0;
    for frame in Frames::new(payload) {
        let Ok(frame) = frame else { break };
        reemit(&frame);
        parsed += 1;
    }
    parsed
}

pub(super) fn reemit(frame: &Frame<'_>) {
    let mut out = Vec::new();
    frame.emit(&mut out);
    assert_eq!(
        out.len(),
        frame.encoded_len(),
        "encoded length of {frame:?}"
    );
    assert_eq!(
        Frame::parse(&out),
        Ok((frame.clone(), out.len())),
        "frame did not re-parse"
    );
}
