//! Streams: ordered, reliable byte streams in both directions, with
//! per-stream and per-connection flow control.
//!
//! Stream data travels in STREAM frames inside source symbols, so it is sent
//! once and never retransmitted: a lost symbol is decoded from repair
//! symbols. The send side therefore only buffers bytes not yet put in a
//! symbol; the receive side reassembles by offset, since symbols are
//! decoded out of order.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Instant;

use bytes::Bytes;

use super::reassembly::Reassembly;
use super::send_buffer::SendBuffer;
use super::spare_buffer::SpareBuffer;
use crate::event::{codes, Event, TraceEvent};
use crate::wire::{Frame, Side, StreamFrame, StreamId};

/// A stream operation the application asked for that cannot be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// No such stream (never opened, or finished and gone).
    #[error("unknown stream {0}")]
    UnknownStream(StreamId),
    /// The peer allows no more streams for now.
    #[error("the peer allows no more streams")]
    StreamLimit,
    /// The stream was finished or reset by this end: nothing more can be
    /// written.
    #[error("stream {0} is closed for writing")]
    ClosedForWriting(StreamId),
    /// The peer reset the stream.
    #[error("stream {id} was reset by the peer with code {code}")]
    Reset {
        /// The stream.
        id: StreamId,
        /// The peer's code.
        code: u64,
    },
    /// The peer asked this end to stop sending.
    #[error("the peer stopped stream {id} with code {code}")]
    Stopped {
        /// The stream.
        id: StreamId,
        /// The peer's code.
        code: u64,
    },
    /// The connection is not established (yet, or any more).
    #[error("the connection is not established")]
    NotConnected,
}

/// What a read gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// This many bytes were copied.
    Data(usize),
    /// Nothing to read now; a `StreamReadable` event says when there is.
    Blocked,
    /// The peer finished the stream and every byte has been read.
    Finished,
}

/// A violation of stream rules by the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) code: u64,
    pub(crate) reason: String,
}

fn violation(code: u64, reason: impl Into<String>) -> Violation {
    Violation {
        code,
        reason: reason.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendState {
    Open,
    /// `finish` was called; FIN goes with the last byte.
    Finishing,
    FinSent,
    ResetPending(u64),
    ResetSent,
}

/// Capacity a drained send buffer keeps for the next writes; a larger one
/// goes to the connection's spare.
const KEEP_SEND_CAPACITY: usize = 4096;

#[derive(Debug)]
struct SendStream {
    /// Bytes written by the application and not yet put in a symbol.
    pending: SendBuffer,
    /// Offset of the first pending byte.
    offset: u64,
    /// The peer's limit on this stream's offsets.
    max_data: u64,
    state: SendState,
    stopped: Option<u64>,
    /// `write` refused bytes: tell the application when there is room.
    want_writable: bool,
    /// The offset of the first byte written since the buffer was last
    /// empty: where the current burst of writes began.
    burst_start: u64,
}

#[derive(Debug, Default)]
struct RecvStream {
    data: Reassembly,
    read: u64,
    highest: u64,
    final_size: Option<u64>,
    /// The limit advertised to the peer.
    max_data: u64,
    reset: Option<u64>,
    finished_read: bool,
    stop_sending: Option<u64>,
}

impl RecvStream {
    fn insert(&mut self, offset: u64, data: &[u8], spare: &mut SpareBuffer) {
        self.data.insert(self.read, offset, data, spare);
    }

    fn readable(&self) -> bool {
        self.reset.is_some()
            || self.data.has_next()
            || (self.final_size == Some(self.read) && !self.finished_read)
    }
}

/// All streams of a connection.
#[derive(Debug)]
pub(crate) struct Streams {
    side: Side,
    send: BTreeMap<StreamId, SendStream>,
    recv: BTreeMap<StreamId, RecvStream>,
    next_local_index: u64,
    /// Streams this end may open (the peer's MAX_STREAMS).
    peer_max_streams: u64,
    /// Streams the peer may open (advertised).
    local_max_streams: u64,
    /// Peer-initiated streams seen: the index one past the highest.
    peer_opened: u64,
    accept_queue: VecDeque<StreamId>,
    /// Streams with bytes, a FIN or a reset to send, in turn.
    ready: VecDeque<StreamId>,

    peer_max_data: u64,
    sent_data: u64,
    local_max_data: u64,
    received_data: u64,
    read_data: u64,
    receive_window: u64,
    stream_receive_window: u64,
    send_buffer: u64,
    peer_stream_window: u64,

    max_data_pending: bool,
    max_stream_data_pending: BTreeSet<StreamId>,
    max_streams_pending: bool,
    stop_sending_pending: BTreeSet<StreamId>,
    /// A message went whole into a symbol since this was last taken.
    message_sent: bool,
    /// A drained send buffer for the next stream written to.
    spare_send: SpareBuffer,
    /// A drained reassembly ring for the next stream received in order.
    spare_recv: SpareBuffer,
}

/// The limits a `Streams` starts with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamLimits {
    pub(crate) receive_window: u64,
    pub(crate) stream_receive_window: u64,
    pub(crate) send_buffer: u64,
    pub(crate) max_streams: u64,
}

impl Streams {
    /// Bytes the streams' buffers hold: unsent bytes and unread chunks,
    /// and the drained buffers kept for the next ones, by capacity.
    pub(crate) fn buffered_bytes(&self) -> usize {
        let send: usize = self.send.values().map(|s| s.pending.footprint()).sum();
        let recv: usize = self.recv.values().map(|r| r.data.capacity()).sum();
        send + recv + self.spare_send.capacity() + self.spare_recv.capacity()
    }

    /// Frees the drained buffers kept for the next bytes: the connection
    /// has gone quiet.
    pub(crate) fn release_spares(&mut self) {
        self.spare_send.release();
        self.spare_recv.release();
    }

    /// Frees a drained buffer kept for the next bytes that has not been
    /// used for a while.
    pub(crate) fn age_spares(&mut self, now: Instant) {
        self.spare_send.age(now);
        self.spare_recv.age(now);
    }

    /// Streams with a half still in use: data or an end to send, or data
    /// or an end the application has not read (a reset half is over).
    pub(crate) fn open_count(&self) -> u64 {
        let sending = |id: &StreamId| {
            self.send.get(id).is_some_and(|s| {
                matches!(
                    s.state,
                    SendState::Open | SendState::Finishing | SendState::ResetPending(_)
                )
            })
        };
        let receiving = |id: &StreamId| {
            self.recv
                .get(id)
                .is_some_and(|r| !r.finished_read && r.reset.is_none())
        };
        let ids = self
            .send
            .keys()
            .chain(self.recv.keys().filter(|id| !self.send.contains_key(id)));
        ids.filter(|id| sending(id) || receiving(id)).count() as u64
    }

    pub(crate) fn new(side: Side, limits: StreamLimits) -> Streams {
        Streams {
            side,
            send: BTreeMap::new(),
            recv: BTreeMap::new(),
            next_local_index: 0,
            peer_max_streams: 0,
            local_max_streams: limits.max_streams,
            peer_opened: 0,
            accept_queue: VecDeque::new(),
            ready: VecDeque::new(),
            peer_max_data: 0,
            sent_data: 0,
            local_max_data: limits.receive_window,
            received_data: 0,
            read_data: 0,
            receive_window: limits.receive_window,
            stream_receive_window: limits.stream_receive_window,
            send_buffer: limits.send_buffer,
            peer_stream_window: 0,
            max_data_pending: false,
            max_stream_data_pending: BTreeSet::new(),
            max_streams_pending: false,
            stop_sending_pending: BTreeSet::new(),
            message_sent: false,
            spare_send: SpareBuffer::default(),
            spare_recv: SpareBuffer::default(),
        }
    }

    /// The peer's transport parameters arrived.
    pub(crate) fn set_peer_limits(
        &mut self,
        max_data: u64,
        max_stream_data: u64,
        max_streams: u64,
    ) {
        self.peer_max_data = self.peer_max_data.max(max_data);
        // Streams opened before (early data) had a provisional limit.
        for stream in self.send.values_mut() {
            stream.max_data = stream.max_data.max(max_stream_data);
        }
        self.peer_stream_window = max_stream_data;
        self.peer_max_streams = self.peer_max_streams.max(max_streams);
    }

    fn new_send(&self) -> SendStream {
        SendStream {
            pending: SendBuffer::default(),
            offset: 0,
            max_data: self.peer_stream_window,
            state: SendState::Open,
            stopped: None,
            want_writable: false,
            burst_start: 0,
        }
    }

    fn new_recv(&self) -> RecvStream {
        RecvStream {
            max_data: self.stream_receive_window,
            ..RecvStream::default()
        }
    }

    pub(crate) fn open(&mut self) -> Result<StreamId, StreamError> {
        if self.next_local_index >= self.peer_max_streams {
            return Err(StreamError::StreamLimit);
        }
        let id = StreamId::new(self.side, self.next_local_index);
        self.next_local_index += 1;
        let send = self.new_send();
        self.send.insert(id, send);
        let recv = self.new_recv();
        self.recv.insert(id, recv);
        Ok(id)
    }

    pub(crate) fn accept(&mut self) -> Option<StreamId> {
        self.accept_queue.pop_front()
    }

    pub(crate) fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        let n = self.writable(id, data.len())?;
        if n > 0 {
            let stream = self.send.get_mut(&id).expect("checked by writable");
            stream
                .pending
                .extend_from_slice(&data[..n], &mut self.spare_send);
        }
        Ok(n)
    }

    /// Like [`write`](Self::write), without copying: takes what fits from
    /// the front of `chunk`.
    pub(crate) fn write_chunk(
        &mut self,
        id: StreamId,
        chunk: &mut Bytes,
    ) -> Result<usize, StreamError> {
        let n = self.writable(id, chunk.len())?;
        if n > 0 {
            let stream = self.send.get_mut(&id).expect("checked by writable");
            stream.pending.push_chunk(chunk.split_to(n));
        }
        Ok(n)
    }

    /// How many of `offered` bytes stream `id` takes now, with the stream
    /// made ready to send (and its burst begun) if it takes any.
    fn writable(&mut self, id: StreamId, offered: usize) -> Result<usize, StreamError> {
        let stream = self
            .send
            .get_mut(&id)
            .ok_or(StreamError::UnknownStream(id))?;
        if let Some(code) = stream.stopped {
            return Err(StreamError::Stopped { id, code });
        }
        if stream.state != SendState::Open {
            return Err(StreamError::ClosedForWriting(id));
        }
        let room = self.send_buffer.saturating_sub(stream.pending.len() as u64);
        let n = (room.min(offered as u64)) as usize;
        if n < offered {
            stream.want_writable = true;
        }
        if n > 0 && stream.pending.is_empty() {
            stream.burst_start = stream.offset;
            if !self.ready.contains(&id) {
                self.ready.push_back(id);
            }
        }
        Ok(n)
    }

    pub(crate) fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        let stream = self
            .send
            .get_mut(&id)
            .ok_or(StreamError::UnknownStream(id))?;
        if stream.state != SendState::Open {
            return Err(StreamError::ClosedForWriting(id));
        }
        stream.state = SendState::Finishing;
        if !self.ready.contains(&id) {
            self.ready.push_back(id);
        }
        Ok(())
    }

    pub(crate) fn reset(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let stream = self
            .send
            .get_mut(&id)
            .ok_or(StreamError::UnknownStream(id))?;
        if matches!(
            stream.state,
            SendState::ResetPending(_) | SendState::ResetSent
        ) {
            return Ok(());
        }
        stream.pending.clear();
        stream.state = SendState::ResetPending(code);
        if !self.ready.contains(&id) {
            self.ready.push_back(id);
        }
        Ok(())
    }

    pub(crate) fn stop_sending(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let stream = self
            .recv
            .get_mut(&id)
            .ok_or(StreamError::UnknownStream(id))?;
        if stream.stop_sending.is_none() && stream.final_size.is_none() {
            stream.stop_sending = Some(code);
            self.stop_sending_pending.insert(id);
        }
        Ok(())
    }

    pub(crate) fn read(
        &mut self,
        id: StreamId,
        buf: &mut [u8],
    ) -> Result<ReadOutcome, StreamError> {
        let stream = self
            .recv
            .get_mut(&id)
            .ok_or(StreamError::UnknownStream(id))?;
        if let Some(code) = stream.reset {
            return Err(StreamError::Reset { id, code });
        }
        let n = stream.data.read(buf, &mut self.spare_recv);
        stream.read += n as u64;
        if n == 0 {
            if stream.final_size == Some(stream.read) {
                stream.finished_read = true;
                // Read to its end: the buffer it kept goes back.
                stream.data.clear();
                return Ok(ReadOutcome::Finished);
            }
            return Ok(ReadOutcome::Blocked);
        }
        // Open the windows as the application reads: half a window of
        // headroom left triggers an update.
        if stream.final_size.is_none()
            && stream.max_data - stream.read < self.stream_receive_window / 2
        {
            stream.max_data = stream.read + self.stream_receive_window;
            self.max_stream_data_pending.insert(id);
        }
        self.read_data += n as u64;
        if self.local_max_data - self.read_data < self.receive_window / 2 {
            self.local_max_data = self.read_data + self.receive_window;
            self.max_data_pending = true;
        }
        Ok(ReadOutcome::Data(n))
    }

    /// Whether any frame is waiting to go in a symbol.
    pub(crate) fn has_pending(&self) -> bool {
        self.max_data_pending
            || self.max_streams_pending
            || !self.max_stream_data_pending.is_empty()
            || !self.stop_sending_pending.is_empty()
            || self.ready.iter().any(|id| self.sendable(*id))
    }

    fn sendable(&self, id: StreamId) -> bool {
        let Some(stream) = self.send.get(&id) else {
            return false;
        };
        match stream.state {
            SendState::ResetPending(_) => true,
            SendState::Finishing if stream.pending.is_empty() => true,
            SendState::Open | SendState::Finishing => {
                !stream.pending.is_empty()
                    && stream.offset < stream.max_data
                    && self.sent_data < self.peer_max_data
            }
            SendState::FinSent | SendState::ResetSent => false,
        }
    }

    /// Whether a message went whole into a symbol since the last call: a
    /// burst of writes no longer than half a symbol, begun on an empty
    /// buffer and sent to its end (a keystroke, a request, a reply), whose
    /// delay matters more than its bytes.
    pub(crate) fn take_message_sent(&mut self) -> bool {
        std::mem::take(&mut self.message_sent)
    }

    /// Writes frames into `out` (a symbol being built) while they fit in
    /// `room` bytes; control frames first, then stream data in turn.
    pub(crate) fn fill(
        &mut self,
        out: &mut Vec<u8>,
        room: usize,
        events: &mut VecDeque<Event>,
        trace: bool,
    ) {
        let limit = out.len() + room;
        let fits = |out: &Vec<u8>, frame: &Frame<'_>| out.len() + frame.encoded_len() <= limit;
        if self.max_data_pending {
            let frame = Frame::MaxData(self.local_max_data);
            if fits(out, &frame) {
                frame.emit(out);
                self.max_data_pending = false;
            }
        }
        if self.max_streams_pending {
            let frame = Frame::MaxStreams(self.local_max_streams);
            if fits(out, &frame) {
                frame.emit(out);
                self.max_streams_pending = false;
            }
        }
        while let Some(&id) = self.max_stream_data_pending.first() {
            let Some(stream) = self.recv.get(&id) else {
                self.max_stream_data_pending.remove(&id);
                continue;
            };
            let frame = Frame::MaxStreamData {
                id,
                max: stream.max_data,
            };
            if !fits(out, &frame) {
                break;
            }
            frame.emit(out);
            self.max_stream_data_pending.remove(&id);
        }
        while let Some(&id) = self.stop_sending_pending.first() {
            let code = self.recv.get(&id).and_then(|s| s.stop_sending).unwrap_or(0);
            let frame = Frame::StopSending {
                id,
                error_code: code,
            };
            if !fits(out, &frame) {
                break;
            }
            frame.emit(out);
            self.stop_sending_pending.remove(&id);
        }
        let mut turns = self.ready.len();
        while turns > 0 && out.len() < limit {
            turns -= 1;
            let Some(id) = self.ready.pop_front() else {
                break;
            };
            let done = self.fill_stream(id, out, limit, room / 2, events, trace);
            if !done {
                self.ready.push_back(id);
            }
            if out.len() + 16 > limit {
                break;
            }
        }
    }

    /// Puts what fits of stream `id` in `out`; whether the stream has
    /// nothing more to send for now. A burst of writes up to
    /// `message_bytes` long that this sends to its end is a message.
    fn fill_stream(
        &mut self,
        id: StreamId,
        out: &mut Vec<u8>,
        limit: usize,
        message_bytes: usize,
        events: &mut VecDeque<Event>,
        trace: bool,
    ) -> bool {
        let conn_credit = self.peer_max_data.saturating_sub(self.sent_data);
        let Some(stream) = self.send.get_mut(&id) else {
            return true;
        };
        if let SendState::ResetPending(code) = stream.state {
            let frame = Frame::ResetStream {
                id,
                error_code: code,
                final_size: stream.offset,
            };
            if out.len() + frame.encoded_len() > limit {
                return false;
            }
            frame.emit(out);
            stream.state = SendState::ResetSent;
            return true;
        }
        if matches!(stream.state, SendState::FinSent | SendState::ResetSent) {
            return true;
        }
        let room = limit.saturating_sub(out.len());
        let header = StreamFrame::header_len(id, stream.offset, Some(room));
        if room <= header && !stream.pending.is_empty() {
            return false;
        }
        let credit = stream
            .max_data
            .saturating_sub(stream.offset)
            .min(conn_credit);
        let sendable = (stream.pending.len() as u64).min(credit);
        // Data that fills the symbol to its end needs no length: the frame
        // ends where the symbol does.
        let to_end_header = StreamFrame::header_len(id, stream.offset, None);
        let fills = room > to_end_header && sendable >= (room - to_end_header) as u64;
        let (len, len_field) = if fills {
            (room - to_end_header, None)
        } else {
            let len = sendable.min(room.saturating_sub(header) as u64) as usize;
            (len, Some(len))
        };
        let fin = stream.state == SendState::Finishing && len == stream.pending.len();
        if len == 0 && !fin {
            // Blocked by flow control: the stream waits for MAX_*_DATA.
            return stream.pending.is_empty();
        }
        if room < header && len_field.is_some() {
            return false;
        }
        // The bytes are copied once, from the buffer straight into the
        // symbol.
        StreamFrame::emit_header(id, stream.offset, fin, len_field, out);
        stream
            .pending
            .move_front(len, out, &mut self.spare_send, KEEP_SEND_CAPACITY);
        if trace && len > 0 {
            events.push_back(Event::Trace(TraceEvent::StreamDataSent {
                id,
                offset: stream.offset,
                len: len as u64,
            }));
        }
        stream.offset += len as u64;
        self.sent_data += len as u64;
        if len > 0 && stream.pending.is_empty() {
            self.message_sent |= stream.offset - stream.burst_start <= message_bytes as u64;
        }
        if fin {
            stream.state = SendState::FinSent;
        }
        if stream.want_writable && (stream.pending.len() as u64) < self.send_buffer / 2 {
            stream.want_writable = false;
            events.push_back(Event::StreamWritable(id));
        }
        stream.pending.is_empty() && stream.state != SendState::Finishing
    }

    /// Whether every stream's bytes and FINs have been put in symbols.
    pub(crate) fn all_sent(&self) -> bool {
        self.send.values().all(|s| {
            s.pending.is_empty()
                && matches!(
                    s.state,
                    SendState::Open | SendState::FinSent | SendState::ResetSent
                )
        }) && !self.has_pending()
    }

    fn recv_stream(
        &mut self,
        id: StreamId,
        events: &mut VecDeque<Event>,
    ) -> Result<Option<&mut RecvStream>, Violation> {
        if id.initiator() == self.side {
            if id.index() >= self.next_local_index {
                return Err(violation(
                    codes::PROTOCOL_VIOLATION,
                    format!("frame for stream {id}, which this end never opened"),
                ));
            }
        } else if id.index() >= self.peer_opened {
            if id.index() >= self.local_max_streams {
                return Err(violation(
                    codes::STREAM_LIMIT,
                    format!(
                        "stream {id} is beyond the limit of {} streams",
                        self.local_max_streams
                    ),
                ));
            }
            for index in self.peer_opened..=id.index() {
                let new = StreamId::new(id.initiator(), index);
                let recv = self.new_recv();
                self.recv.insert(new, recv);
                let send = self.new_send();
                self.send.insert(new, send);
                self.accept_queue.push_back(new);
                events.push_back(Event::StreamOpened(new));
            }
            self.peer_opened = id.index() + 1;
        }
        // A stream of ours that is gone (never the case today: streams are kept).
        Ok(self.recv.get_mut(&id))
    }

    /// Applies a frame decoded from a source symbol.
    pub(crate) fn on_frame(
        &mut self,
        frame: &Frame<'_>,
        events: &mut VecDeque<Event>,
    ) -> Result<(), Violation> {
        match frame {
            Frame::Stream(f) => self.on_stream_frame(f, events)?,
            Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => self.on_reset_stream(*id, *error_code, *final_size, events)?,
            Frame::StopSending { id, error_code } => {
                self.recv_stream(*id, events)?;
                if let Some(stream) = self.send.get_mut(id) {
                    if stream.stopped.is_none() {
                        stream.stopped = Some(*error_code);
                        events.push_back(Event::StopSending {
                            id: *id,
                            code: *error_code,
                        });
                    }
                }
            }
            Frame::MaxData(max) => {
                if *max > self.peer_max_data {
                    self.peer_max_data = *max;
                }
            }
            Frame::MaxStreamData { id, max } => {
                self.recv_stream(*id, events)?;
                if let Some(stream) = self.send.get_mut(id) {
                    if *max > stream.max_data {
                        stream.max_data = *max;
                        if !stream.pending.is_empty() && !self.ready.contains(id) {
                            self.ready.push_back(*id);
                        }
                    }
                }
            }
            Frame::MaxStreams(max) => {
                self.peer_max_streams = self.peer_max_streams.max(*max);
            }
            Frame::Padding(_) => {}
            other => {
                return Err(violation(
                    codes::PROTOCOL_VIOLATION,
                    format!("frame {} cannot travel in a symbol", frame_name(other)),
                ));
            }
        }
        Ok(())
    }

    /// A STREAM frame: its data into the stream's reassembly, within the
    /// stream's and the connection's flow limits and its final size.
    fn on_stream_frame(
        &mut self,
        f: &StreamFrame<'_>,
        events: &mut VecDeque<Event>,
    ) -> Result<(), Violation> {
        // Taken out for the frame: the stream it finds borrows all of
        // `self`.
        let mut spare = std::mem::take(&mut self.spare_recv);
        let applied = self.apply_stream_frame(f, events, &mut spare);
        self.spare_recv = spare;
        applied
    }

    fn apply_stream_frame(
        &mut self,
        f: &StreamFrame<'_>,
        events: &mut VecDeque<Event>,
        spare: &mut SpareBuffer,
    ) -> Result<(), Violation> {
        let end = f.offset + f.data.len() as u64;
        let local_max_data = self.local_max_data;
        let received_data = self.received_data;
        let Some(stream) = self.recv_stream(f.id, events)? else {
            return Ok(());
        };
        if end > stream.max_data {
            return Err(violation(
                codes::FLOW_CONTROL,
                format!(
                    "stream {} data to {end} beyond its limit {}",
                    f.id, stream.max_data
                ),
            ));
        }
        if let Some(size) = stream.final_size {
            if end > size || (f.fin && end != size) {
                return Err(violation(
                    codes::PROTOCOL_VIOLATION,
                    format!("stream {} data beyond its final size {size}", f.id),
                ));
            }
        }
        // Before the end is recorded: an end that comes alone, after every
        // byte was read, is news to the reader too.
        let was_readable = stream.readable();
        if f.fin {
            if end < stream.highest {
                return Err(violation(
                    codes::PROTOCOL_VIOLATION,
                    format!("stream {} final size {end} below data received", f.id),
                ));
            }
            stream.final_size = Some(end);
        }
        let grown = end.saturating_sub(stream.highest);
        if received_data + grown > local_max_data {
            return Err(violation(
                codes::FLOW_CONTROL,
                "connection data beyond its limit",
            ));
        }
        stream.highest = stream.highest.max(end);
        if stream.reset.is_none() && stream.stop_sending.is_none() {
            stream.insert(f.offset, f.data, spare);
        }
        let now_readable = stream.readable();
        self.received_data += grown;
        if now_readable && !was_readable {
            events.push_back(Event::StreamReadable(f.id));
        }
        Ok(())
    }

    /// A RESET_STREAM frame: the peer abandoned sending on stream `id` at
    /// `final_size`.
    fn on_reset_stream(
        &mut self,
        id: StreamId,
        error_code: u64,
        final_size: u64,
        events: &mut VecDeque<Event>,
    ) -> Result<(), Violation> {
        let local_max_data = self.local_max_data;
        let received_data = self.received_data;
        let Some(stream) = self.recv_stream(id, events)? else {
            return Ok(());
        };
        if final_size < stream.highest || stream.final_size.is_some_and(|s| s != final_size) {
            return Err(violation(
                codes::PROTOCOL_VIOLATION,
                format!("stream {id} reset with an inconsistent final size"),
            ));
        }
        let grown = final_size - stream.highest;
        if received_data + grown > local_max_data || final_size > stream.max_data {
            return Err(violation(
                codes::FLOW_CONTROL,
                "reset beyond the flow limit",
            ));
        }
        stream.highest = final_size;
        stream.final_size = Some(final_size);
        if stream.reset.is_none() {
            stream.reset = Some(error_code);
            stream.data.clear();
            events.push_back(Event::StreamReset {
                id,
                code: error_code,
            });
        }
        self.received_data += grown;
        Ok(())
    }
}

/// A frame's name, for error messages.
pub(crate) fn frame_name(frame: &Frame<'_>) -> &'static str {
    match frame {
        Frame::Padding(_) => "PADDING",
        Frame::Ping => "PING",
        Frame::Ack(_) => "ACK",
        Frame::Source(_) => "SOURCE",
        Frame::Repair(_) => "REPAIR",
        Frame::Stream(_) => "STREAM",
        Frame::ResetStream { .. } => "RESET_STREAM",
        Frame::StopSending { .. } => "STOP_SENDING",
        Frame::MaxData(_) => "MAX_DATA",
        Frame::MaxStreamData { .. } => "MAX_STREAM_DATA",
        Frame::MaxStreams(_) => "MAX_STREAMS",
        Frame::Handshake(_) => "HANDSHAKE",
        Frame::HandshakeDone => "HANDSHAKE_DONE",
        Frame::Close(_) => "CLOSE",
        Frame::Noise(_) => "NOISE",
        Frame::PathChallenge(_) => "PATH_CHALLENGE",
        Frame::PathResponse(_) => "PATH_RESPONSE",
    }
}

#[cfg(test)]
mod tests;
