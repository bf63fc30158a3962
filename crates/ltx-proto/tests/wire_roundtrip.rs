//! Every header and frame the encoder can write parses back to itself, in
//! exactly the bytes `len` and `encoded_len` announce; a packet of frames
//! parses back frame by frame, its zero padding as one padding frame.

mod wire_support;

use ltx_proto::wire::{Frame, Frames, Header, StreamFrame};
use proptest::prelude::*;
use wire_support::{delimited_frames, emit, frame, header, packet};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn headers_roundtrip(h in header()) {
        let mut out = Vec::new();
        h.emit(&mut out);
        prop_assert_eq!(out.len(), h.len());
        prop_assert_eq!(Header::parse(&out), Ok((h, out.len())));
    }

    #[test]
    fn frames_roundtrip(f in frame()) {
        let mut out = Vec::new();
        f.emit(&mut out);
        prop_assert_eq!(out.len(), f.encoded_len());
        prop_assert_eq!(Frame::parse(&out), Ok((f, out.len())));
    }

    #[test]
    fn padding_roundtrips(n in 1..2000usize) {
        let mut out = Vec::new();
        Frame::Padding(n).emit(&mut out);
        prop_assert_eq!(out.len(), n);
        prop_assert_eq!(Frame::parse(&out), Ok((Frame::Padding(n), n)));
    }

    #[test]
    fn stream_header_len_is_what_precedes_the_data(f in frame()) {
        if let Frame::Stream(s) = f {
            let mut out = Vec::new();
            f.emit(&mut out);
            let len_field = (!s.to_end).then_some(s.data.len());
            prop_assert_eq!(
                StreamFrame::header_len(s.id, s.offset, len_field),
                out.len() - s.data.len()
            );
        }
    }

    /// A source symbol is zero-padded to the symbol size: whatever frames
    /// that carry their length come first, the zeros after them read as
    /// one padding frame.
    #[test]
    fn packets_parse_to_their_frames_then_one_padding(
        h in header(),
        frames in delimited_frames(),
        zeros in 1..1500usize,
    ) {
        let mut bytes = emit(&h, &frames);
        bytes.resize(bytes.len() + zeros, 0);
        let (parsed, len) = Header::parse(&bytes).unwrap();
        prop_assert_eq!(parsed, h);
        let got: Result<Vec<_>, _> = Frames::new(&bytes[len..]).collect();
        let mut expected = frames.clone();
        expected.push(Frame::Padding(zeros));
        prop_assert_eq!(got, Ok(expected));
    }

    /// A packet parses back to its frames, the last of which may run to
    /// the end of the payload.
    #[test]
    fn packets_parse_to_their_frames((h, frames) in packet()) {
        let bytes = emit(&h, &frames);
        let (parsed, len) = Header::parse(&bytes).unwrap();
        prop_assert_eq!(parsed, h);
        let got: Result<Vec<_>, _> = Frames::new(&bytes[len..]).collect();
        prop_assert_eq!(got, Ok(frames));
    }
}
