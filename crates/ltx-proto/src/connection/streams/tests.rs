use super::*;

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
