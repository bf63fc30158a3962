//! Connections and streams over a perfect, instantaneous network: the
//! handshake, data in both directions, flow control, FIN, reset, stop
//! sending, graceful close, abort and the idle timeout.

use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};

use ltx_proto::{
    CloseReason, Connection, EcnCodepoint, Event, ReadOutcome, StreamError, TransportConfig,
};

/// Two connections joined by a lossless wire with a fixed one-way delay.
struct Pair {
    now: Instant,
    client: Connection,
    server: Connection,
    client_events: Vec<Event>,
    server_events: Vec<Event>,
    /// Whether each transmit's buffer goes back to its sender once read.
    recycle: bool,
}

impl Pair {
    fn new(client: TransportConfig, server: TransportConfig) -> Pair {
        let now = Instant::now();
        Pair {
            now,
            client: Connection::client(client, now, 1).expect("valid config"),
            server: Connection::server(server, now, 2).expect("valid config"),
            client_events: Vec::new(),
            server_events: Vec::new(),
            recycle: false,
        }
    }

    fn default() -> Pair {
        Pair::new(TransportConfig::default(), TransportConfig::default())
    }

    /// Exchanges datagrams until both sides are quiet at `now`; whether any
    /// moved.
    fn flush(&mut self) -> bool {
        let mut any = false;
        for _ in 0..100_000 {
            let mut moved = false;
            while let Some(t) = self.client.poll_transmit(self.now) {
                self.server.handle_datagram(self.now, &t.contents, t.ecn);
                if self.recycle {
                    self.client.recycle(t.contents);
                }
                moved = true;
            }
            while let Some(t) = self.server.poll_transmit(self.now) {
                self.client.handle_datagram(self.now, &t.contents, t.ecn);
                if self.recycle {
                    self.server.recycle(t.contents);
                }
                moved = true;
            }
            while let Some(e) = self.client.poll_event() {
                self.client_events.push(e);
            }
            while let Some(e) = self.server.poll_event() {
                self.server_events.push(e);
            }
            if !moved {
                return any;
            }
            any = true;
        }
        panic!("the connections never went quiet");
    }

    /// Sends what application calls made ready, then advances time to the
    /// next timer of either side and fires it.
    fn advance(&mut self) {
        self.flush();
        let next = [self.client.poll_timeout(), self.server.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .expect("a timer is armed");
        self.now = self.now.max(next);
        self.client.handle_timeout(self.now);
        self.server.handle_timeout(self.now);
        self.flush();
    }

    /// Runs (flushing, then firing the next timer) until `done` holds, for at
    /// most `limit` of virtual time.
    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Pair) -> bool) {
        let end = self.now + limit;
        self.flush();
        // The application acts (reads) as soon as anything arrives, as a
        // driver polling events would, before time moves on.
        while !done(self) {
            assert!(self.now < end, "not done within {limit:?}");
            if !self.flush() {
                self.advance();
            }
        }
    }

    fn connect(&mut self) {
        self.flush();
        assert!(self.client.is_established() && self.server.is_established());
        assert!(self.client_events.contains(&Event::Connected));
        assert!(self.server_events.contains(&Event::Connected));
    }
}

fn read_all(conn: &mut Connection, id: ltx_proto::StreamId) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(id, &mut buf).expect("readable stream") {
            ReadOutcome::Data(n) => out.extend_from_slice(&buf[..n]),
            ReadOutcome::Blocked => return (out, false),
            ReadOutcome::Finished => return (out, true),
        }
    }
}

/// Opens a client stream per payload, writes and finishes each, and runs
/// until the server has read every one to its FIN; returns the streams and
/// what the server read from each.
fn send_and_read_all(
    pair: &mut Pair,
    payloads: &[&[u8]],
) -> (Vec<ltx_proto::StreamId>, Vec<Vec<u8>>) {
    let ids: Vec<_> = payloads
        .iter()
        .map(|payload| {
            let id = pair.client.open_stream().expect("stream");
            assert_eq!(pair.client.write(id, payload), Ok(payload.len()));
            pair.client.finish(id).unwrap();
            id
        })
        .collect();
    let mut got = vec![Vec::new(); ids.len()];
    let mut fin = vec![false; ids.len()];
    pair.run_until(Duration::from_secs(10), |pair| {
        for (i, &id) in ids.iter().enumerate() {
            let (data, finished) = read_all(&mut pair.server, id);
            got[i].extend(data);
            fin[i] |= finished;
        }
        fin.iter().all(|&f| f)
    });
    (ids, got)
}

#[test]
fn handshake_completes_in_one_round_trip() {
    let mut pair = Pair::default();
    let initial = pair.client.poll_transmit(pair.now).expect("an Initial");
    // The first flight is padded so a path that cannot carry full packets
    // fails at once.
    assert!(initial.contents.len() >= 1200);
    pair.server
        .handle_datagram(pair.now, &initial.contents, EcnCodepoint::Ect0);
    let answer = pair.server.poll_transmit(pair.now).expect("an answer");
    pair.client
        .handle_datagram(pair.now, &answer.contents, EcnCodepoint::Ect0);
    assert!(pair.client.is_established());
    assert!(pair.server.is_established());
}

#[test]
fn data_flows_both_ways_on_several_streams() {
    let mut pair = Pair::default();
    pair.connect();
    let payload_a: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let payload_b = b"second stream".to_vec();
    let (ids, got) = send_and_read_all(&mut pair, &[&payload_a, &payload_b]);
    let (a, b) = (ids[0], ids[1]);
    let first = pair.server.accept_stream().expect("first stream");
    let second = pair.server.accept_stream().expect("second stream");
    assert_eq!((first, second), (a, b));
    assert_eq!(got[0], payload_a);
    assert_eq!(got[1], payload_b);

    // The server answers on the same stream.
    pair.server.write(a, b"pong").unwrap();
    pair.server.finish(a).unwrap();
    let mut pong = Vec::new();
    pair.run_until(Duration::from_secs(10), |pair| {
        let (data, fin) = read_all(&mut pair.client, a);
        pong.extend(data);
        fin
    });
    assert_eq!(pong, b"pong");
}

/// A symbol's trailing zeros do not travel and a stream frame that fills
/// its symbol carries no length: the receiver pads the symbol back and the
/// frame runs to its end. Zeros at the end of every symbol, of the stream,
/// and whole symbols of zeros all arrive as sent.
#[test]
fn zero_bytes_at_symbol_ends_arrive_as_sent() {
    let mut pair = Pair::default();
    pair.connect();
    let payload_zeros = vec![0u8; 50_000];
    let payload_sparse: Vec<u8> = (0..120_001u32).map(|i| u8::from(i % 1000 == 0)).collect();
    let (_, got) = send_and_read_all(&mut pair, &[&payload_zeros, &payload_sparse]);
    assert!(got[0] == payload_zeros, "{} bytes", got[0].len());
    assert!(got[1] == payload_sparse, "{} bytes", got[1].len());
}

/// Packets built in buffers given back (`Connection::recycle`) carry only
/// their own bytes: a long packet's leftovers never reach a shorter one.
#[test]
fn recycled_packet_buffers_carry_every_byte_as_sent() {
    let mut pair = Pair::default();
    pair.recycle = true;
    pair.connect();
    let payload_long: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8 | 1).collect();
    let payload_zeros = vec![0u8; 30_000];
    let payload_short = b"short".to_vec();
    let (_, got) = send_and_read_all(&mut pair, &[&payload_long, &payload_zeros, &payload_short]);
    assert!(got[0] == payload_long, "{} bytes", got[0].len());
    assert!(got[1] == payload_zeros, "{} bytes", got[1].len());
    assert_eq!(got[2], payload_short);
}

/// A connected pair whose client holds at most `bytes` unsent per stream.
fn connected_with_send_buffer(bytes: u64) -> Pair {
    let mut config = TransportConfig::default();
    config.set_send_buffer(bytes);
    let mut pair = Pair::new(config, TransportConfig::default());
    pair.connect();
    pair
}

#[test]
fn a_full_send_buffer_takes_part_and_signals_room() {
    let mut pair = connected_with_send_buffer(10_000);
    let id = pair.client.open_stream().unwrap();
    assert_eq!(pair.client.write(id, &[7u8; 25_000]), Ok(10_000));
    assert_eq!(pair.client.write(id, &[7u8; 1]), Ok(0));
    pair.flush();
    assert!(pair.client_events.contains(&Event::StreamWritable(id)));
    assert!(pair.client.write(id, &[7u8; 5_000]).unwrap() > 0);
}

/// Chunks handed over whole and bytes written from slices, mixed on one
/// stream and taken in parts by a small send buffer, arrive in the order
/// written.
#[test]
fn chunks_and_copied_writes_arrive_in_the_order_written() {
    let mut pair = connected_with_send_buffer(10_000);
    let id = pair.client.open_stream().unwrap();
    let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 249) as u8).collect();
    // Alternately a chunk and a copied slice, of lengths that straddle
    // packets and the send buffer.
    let mut pieces = Vec::new();
    let mut at = 0;
    for (i, len) in [1, 7_000, 1_399, 25_000, 3, 1_400, 40_000, 12_345]
        .iter()
        .cycle()
        .enumerate()
    {
        if at == payload.len() {
            break;
        }
        let end = (at + len).min(payload.len());
        pieces.push((i % 2 == 0, at..end));
        at = end;
    }
    let mut got = Vec::new();
    let mut finished = false;
    let mut next = pieces.into_iter();
    let mut current: Option<(bool, Bytes)> = None;
    pair.run_until(Duration::from_secs(10), |pair| {
        loop {
            if current.is_none() {
                current = next
                    .next()
                    .map(|(chunk, range)| (chunk, Bytes::copy_from_slice(&payload[range])));
            }
            let Some((chunk, bytes)) = current.as_mut() else {
                if !finished {
                    pair.client.finish(id).unwrap();
                    finished = true;
                }
                break;
            };
            if *chunk {
                pair.client.write_chunk(id, bytes).unwrap();
            } else {
                let n = pair.client.write(id, bytes).unwrap();
                bytes.advance(n);
            }
            if !bytes.is_empty() {
                // The send buffer is full: the rest goes when it has room.
                break;
            }
            current = None;
        }
        if !pair.server_events.contains(&Event::StreamOpened(id)) {
            return false;
        }
        let (data, fin) = read_all(&mut pair.server, id);
        got.extend(data);
        fin
    });
    assert!(
        got == payload,
        "{} of {} bytes, or out of order",
        got.len(),
        payload.len()
    );
}

#[test]
fn stream_flow_control_holds_the_sender_until_the_reader_reads() {
    let window = 64 * 1024;
    let server = {
        let mut config = TransportConfig::default();
        config.set_stream_receive_window(window);
        config
    };
    let mut pair = Pair::new(TransportConfig::default(), server);
    pair.connect();
    let id = pair.client.open_stream().unwrap();
    let payload = vec![3u8; 3 * window as usize];
    assert_eq!(pair.client.write(id, &payload), Ok(payload.len()));
    pair.client.finish(id).unwrap();
    // Nothing is read yet: the peer cannot send beyond the window, however
    // long it has (two seconds here; the idle timeout is 30).
    let deadline = pair.now + Duration::from_secs(2);
    pair.flush();
    while pair.client.poll_timeout().is_some_and(|t| t < deadline) {
        pair.advance();
    }
    let got = pair.server.accept_stream().unwrap();
    let (first, finished) = read_all(&mut pair.server, got);
    assert!(!finished);
    assert!(
        first.len() as u64 <= window,
        "{} bytes past a window of {window}",
        first.len()
    );
    assert!(
        first.len() as u64 >= window / 2,
        "only {} bytes arrived",
        first.len()
    );
    // Reading opens the window; the rest follows.
    let mut total = first.len();
    pair.run_until(Duration::from_secs(30), |pair| {
        let (more, finished) = read_all(&mut pair.server, got);
        total += more.len();
        finished
    });
    assert_eq!(total, payload.len());
}

#[test]
fn reset_reaches_the_reader_as_an_error() {
    let mut pair = Pair::default();
    pair.connect();
    let id = pair.client.open_stream().unwrap();
    pair.client.write(id, b"partial").unwrap();
    pair.flush();
    pair.client.reset_stream(id, 42).unwrap();
    pair.flush();
    let got = pair.server.accept_stream().unwrap();
    assert!(pair
        .server_events
        .contains(&Event::StreamReset { id: got, code: 42 }));
    let mut buf = [0u8; 16];
    assert_eq!(
        pair.server.read(got, &mut buf),
        Err(StreamError::Reset { id: got, code: 42 })
    );
}

#[test]
fn stop_sending_stops_the_writer() {
    let mut pair = Pair::default();
    pair.connect();
    let id = pair.client.open_stream().unwrap();
    pair.client.write(id, b"hello").unwrap();
    pair.flush();
    let got = pair.server.accept_stream().unwrap();
    pair.server.stop_sending(got, 7).unwrap();
    pair.flush();
    assert!(pair
        .client_events
        .contains(&Event::StopSending { id, code: 7 }));
    assert_eq!(
        pair.client.write(id, b"more"),
        Err(StreamError::Stopped { id, code: 7 })
    );
}

/// A stream's end that comes alone, after the reader has read every byte,
/// makes the stream readable again: the reader waiting on the event learns
/// of the end, as it would of more data.
#[test]
fn an_end_that_comes_after_the_data_is_announced() {
    let mut pair = Pair::default();
    pair.connect();
    let id = pair.client.open_stream().unwrap();
    pair.client.write(id, b"last words").unwrap();
    pair.run_until(Duration::from_secs(5), |p| {
        p.server_events.contains(&Event::StreamReadable(id))
    });
    let (data, finished) = read_all(&mut pair.server, id);
    assert_eq!((data.as_slice(), finished), (&b"last words"[..], false));
    pair.server_events.clear();
    pair.client.finish(id).unwrap();
    pair.run_until(Duration::from_secs(5), |p| {
        p.server_events.contains(&Event::StreamReadable(id))
    });
    assert_eq!(read_all(&mut pair.server, id), (Vec::new(), true));
}

#[test]
fn writing_after_finish_is_refused() {
    let mut pair = Pair::default();
    pair.connect();
    let id = pair.client.open_stream().unwrap();
    pair.client.finish(id).unwrap();
    assert_eq!(
        pair.client.write(id, b"late"),
        Err(StreamError::ClosedForWriting(id))
    );
}

#[test]
fn the_stream_limit_is_the_peers() {
    let server = {
        let mut config = TransportConfig::default();
        config.set_max_streams(2);
        config
    };
    let mut pair = Pair::new(TransportConfig::default(), server);
    pair.connect();
    pair.client.open_stream().unwrap();
    pair.client.open_stream().unwrap();
    assert_eq!(pair.client.open_stream(), Err(StreamError::StreamLimit));
}

#[test]
fn graceful_close_waits_for_delivery_then_closes_both_ends() {
    let mut pair = Pair::default();
    pair.connect();
    let id = pair.client.open_stream().unwrap();
    pair.client.write(id, &[1u8; 50_000]).unwrap();
    pair.client.finish(id).unwrap();
    pair.client.close(pair.now);
    let mut read = 0;
    pair.run_until(Duration::from_secs(30), |pair| {
        if let Some(got) = pair.server.accept_stream() {
            assert_eq!(got, id);
        }
        read += read_all(&mut pair.server, id).0.len();
        pair.client.is_closed() && pair.server.is_closed()
    });
    assert_eq!(read, 50_000);
    assert!(pair
        .client_events
        .contains(&Event::Closed(CloseReason::LocallyClosed)));
    assert!(pair
        .server_events
        .iter()
        .any(|e| matches!(e, Event::Closed(CloseReason::ByPeer { code: 0, .. }))));
}

#[test]
fn abort_tells_the_peer_why() {
    let mut pair = Pair::default();
    pair.connect();
    pair.client.abort(pair.now, 0x10, "giving up");
    pair.flush();
    assert!(
        pair.server_events.iter().any(|e| matches!(
            e,
            Event::Closed(CloseReason::ByPeer { code: 0x10, reason }) if reason == "giving up"
        )) || {
            // The server reports the close once it has drained.
            for _ in 0..10 {
                if pair.server.is_closed() {
                    break;
                }
                pair.advance();
            }
            pair.server_events.iter().any(|e| matches!(
            e,
            Event::Closed(CloseReason::ByPeer { code: 0x10, reason }) if reason == "giving up"
        ))
        }
    );
}

#[test]
fn a_silent_peer_times_out() {
    let config = {
        let mut config = TransportConfig::default();
        config
            .set_idle_timeout(Duration::from_secs(5))
            .expect("a valid idle timeout");
        config
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.connect();
    let start = pair.now;
    // The server vanishes: the client hears nothing more.
    let mut client = pair.client;
    let mut now = start;
    let mut closed = None;
    for _ in 0..1000 {
        let Some(at) = client.poll_timeout() else {
            break;
        };
        now = at;
        client.handle_timeout(now);
        while client.poll_transmit(now).is_some() {}
        while let Some(e) = client.poll_event() {
            if let Event::Closed(reason) = e {
                closed = Some(reason);
            }
        }
        if closed.is_some() {
            break;
        }
    }
    assert_eq!(closed, Some(CloseReason::IdleTimeout));
    let waited = now - start;
    assert!(
        waited >= Duration::from_secs(5) && waited < Duration::from_secs(6),
        "{waited:?}"
    );
}

#[test]
fn a_client_that_hears_nothing_reports_a_handshake_timeout() {
    let config = {
        let mut config = TransportConfig::default();
        config
            .set_idle_timeout(Duration::from_secs(3))
            .expect("a valid idle timeout");
        config
    };
    let mut client = Connection::client(config, Instant::now(), 9).unwrap();
    let mut now = Instant::now();
    let mut initials = 0;
    let mut closed = None;
    for _ in 0..1000 {
        while client.poll_transmit(now).is_some() {
            initials += 1;
        }
        while let Some(e) = client.poll_event() {
            if let Event::Closed(reason) = e {
                closed = Some(reason);
            }
        }
        if closed.is_some() {
            break;
        }
        now = client.poll_timeout().expect("a timer");
        client.handle_timeout(now);
    }
    assert_eq!(closed, Some(CloseReason::HandshakeTimeout));
    assert!(initials > 3, "the Initial is sent again: {initials}");
}

#[test]
fn streams_cannot_be_used_before_the_handshake() {
    let mut client = Connection::client(TransportConfig::default(), Instant::now(), 3).unwrap();
    assert_eq!(client.open_stream(), Err(StreamError::NotConnected));
}

#[test]
fn keep_alive_holds_a_quiet_connection_open() {
    // Nothing to send for a minute, an idle timeout of 10 s: pings every
    // 3 s keep both ends alive; without them both would have closed.
    let config = {
        let mut config = TransportConfig::default();
        config
            .set_idle_timeout(Duration::from_secs(10))
            .expect("a valid idle timeout")
            .set_keep_alive(Some(Duration::from_secs(3)));
        config
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.connect();
    let end = pair.now + Duration::from_secs(60);
    while pair.now < end {
        pair.advance();
    }
    assert!(pair.client.is_established() && pair.server.is_established());
    assert!(!pair
        .client_events
        .iter()
        .chain(&pair.server_events)
        .any(|e| matches!(e, Event::Closed(_))));
}

/// The connection's buffers follow what is in flight: after 10 streams of
/// 256 KiB each way have been read, and a few quiet probe time-outs,
/// neither end holds more than a few pages of them.
#[test]
fn buffers_go_back_once_everything_is_read_and_the_connection_is_quiet() {
    let mut pair = Pair::default();
    pair.connect();
    let payload: Vec<u8> = (0..256 * 1024u32).map(|i| (i % 251) as u8).collect();
    let payloads: Vec<&[u8]> = (0..10).map(|_| payload.as_slice()).collect();
    let (ids, got) = send_and_read_all(&mut pair, &payloads);
    assert!(got.iter().all(|g| *g == payload));
    for &id in &ids {
        pair.server.write(id, &payload).unwrap();
        pair.server.finish(id).unwrap();
    }
    let mut back = vec![0usize; ids.len()];
    let mut fin = vec![false; ids.len()];
    pair.run_until(Duration::from_secs(10), |pair| {
        for (i, &id) in ids.iter().enumerate() {
            let (data, finished) = read_all(&mut pair.client, id);
            back[i] += data.len();
            fin[i] |= finished;
        }
        fin.iter().all(|&f| f)
    });
    assert!(back.iter().all(|&n| n == payload.len()));
    let busy = (pair.client.buffered_bytes(), pair.server.buffered_bytes());
    // Quiet: let every timer but the idle one fire.
    let quiet_until = pair.now + Duration::from_secs(5);
    while pair.now < quiet_until {
        pair.advance();
    }
    let quiet = (pair.client.buffered_bytes(), pair.server.buffered_bytes());
    assert!(
        quiet.0 <= 64 * 1024 && quiet.1 <= 64 * 1024,
        "buffered after the transfer {busy:?}, once quiet {quiet:?}"
    );
}
