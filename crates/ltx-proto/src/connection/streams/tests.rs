use super::*;
use crate::connection::spare_buffer::SPARE_IDLE;

fn streams() -> Streams {
    let mut streams = Streams::new(
        Side::Server,
        StreamLimits {
            receive_window: 1 << 20,
            stream_receive_window: 1 << 16,
            send_buffer: 1 << 16,
            max_streams: 4,
        },
    );
    streams.set_peer_limits(1 << 20, 1 << 16, 4);
    streams
}

fn stream_frame(offset: u64, fin: bool, data: &[u8]) -> StreamFrame<'_> {
    StreamFrame {
        id: StreamId::new(Side::Client, 0),
        offset,
        fin,
        to_end: false,
        data,
    }
}

fn readable_events(events: &VecDeque<Event>) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::StreamReadable(_)))
        .count()
}

#[test]
fn a_fin_alone_after_the_data_was_read_wakes_the_reader() {
    let mut streams = streams();
    let mut events = VecDeque::new();
    let id = StreamId::new(Side::Client, 0);
    streams
        .on_stream_frame(&stream_frame(0, false, b"request"), &mut events)
        .unwrap();
    assert_eq!(readable_events(&events), 1);
    let mut buf = [0u8; 16];
    assert_eq!(streams.read(id, &mut buf), Ok(ReadOutcome::Data(7)));
    assert_eq!(streams.read(id, &mut buf), Ok(ReadOutcome::Blocked));
    // The half-close comes in a frame of its own.
    events.clear();
    streams
        .on_stream_frame(&stream_frame(7, true, b""), &mut events)
        .unwrap();
    assert_eq!(readable_events(&events), 1, "the reader waits for its end");
    assert_eq!(streams.read(id, &mut buf), Ok(ReadOutcome::Finished));
}

#[test]
fn a_stream_read_to_its_end_keeps_no_buffer() {
    let mut streams = streams();
    let mut events = VecDeque::new();
    let id = StreamId::new(Side::Client, 0);
    streams
        .on_stream_frame(&stream_frame(0, true, &[7; 3000]), &mut events)
        .unwrap();
    assert!(streams.buffered_bytes() >= 3000);
    let mut buf = [0u8; 4096];
    assert_eq!(streams.read(id, &mut buf), Ok(ReadOutcome::Data(3000)));
    assert_eq!(streams.read(id, &mut buf), Ok(ReadOutcome::Finished));
    // Many idle connections' finished streams must cost nothing.
    assert_eq!(streams.buffered_bytes(), 0);
}

#[test]
fn a_fin_behind_unread_data_wakes_no_one_twice() {
    let mut streams = streams();
    let mut events = VecDeque::new();
    streams
        .on_stream_frame(&stream_frame(0, false, b"request"), &mut events)
        .unwrap();
    streams
        .on_stream_frame(&stream_frame(7, true, b""), &mut events)
        .unwrap();
    // Readable since the first frame: one event is enough.
    assert_eq!(readable_events(&events), 1);
}

#[test]
fn a_drained_send_buffer_serves_the_next_stream_and_goes_once_unused() {
    let mut streams = streams();
    let mut events = VecDeque::new();
    let first = streams.open().unwrap();
    let burst = vec![5u8; 1 << 15];
    assert_eq!(streams.write(first, &burst), Ok(burst.len()));
    while !streams.all_sent() {
        let mut out = Vec::new();
        streams.fill(&mut out, 1200, &mut events, false);
    }
    let kept = streams.buffered_bytes();
    assert!(kept >= burst.len(), "the drained buffer is kept: {kept}");
    let second = streams.open().unwrap();
    assert_eq!(streams.write(second, b"next"), Ok(4));
    assert_eq!(
        streams.buffered_bytes(),
        kept,
        "the second stream writes into the kept buffer, no new one"
    );
    while !streams.all_sent() {
        let mut out = Vec::new();
        streams.fill(&mut out, 1200, &mut events, false);
    }
    let start = Instant::now();
    streams.age_spares(start);
    streams.age_spares(start + SPARE_IDLE);
    assert_eq!(streams.buffered_bytes(), 0, "unused for SPARE_IDLE: freed");
}
