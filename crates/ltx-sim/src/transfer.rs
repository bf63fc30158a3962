//! An ltx endpoint in the simulator: a [`Connection`] and the application
//! that uses it — a sender that writes a generated payload on one stream,
//! or a receiver that reads it and checks every byte.

use std::time::Instant;

use ltx_link::{Datagram, Ecn};
use ltx_proto::{Connection, EcnCodepoint, Event, ReadOutcome, StreamId, TraceEvent};

use crate::Node;

/// The payload byte at `offset` of a transfer made with `seed`: a keyed
/// pseudo-random stream, so the receiver can check each byte without a copy
/// of the whole payload.
pub fn payload_word(seed: u64, index: u64) -> [u8; 8] {
    // splitmix64 of (seed, index): cheap, and any change of a byte shows.
    let mut z = seed
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(index.wrapping_mul(0xbf58_476d_1ce4_e5b9));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)).to_le_bytes()
}

/// Fills `out` with the payload bytes from `offset` on.
pub fn fill_payload(seed: u64, offset: u64, out: &mut [u8]) {
    let mut i = 0;
    while i < out.len() {
        let at = offset + i as u64;
        let word = payload_word(seed, at / 8);
        let from = (at % 8) as usize;
        let n = (8 - from).min(out.len() - i);
        out[i..i + n].copy_from_slice(&word[from..from + n]);
        i += n;
    }
}

/// What the application on a node does.
#[derive(Debug)]
enum App {
    Sender {
        size: u64,
        written: u64,
        stream: Option<StreamId>,
        finished: bool,
        /// Payload from `written` on, generated and not yet taken.
        chunk: Vec<u8>,
        /// (end offset, time) of each piece of stream data first sent.
        sent_log: Vec<(u64, Instant)>,
        /// Whether it writes before the handshake completes (early data).
        early: bool,
    },
    Receiver {
        size: u64,
        read: u64,
        stream: Option<StreamId>,
        corrupt: bool,
        finished_at: Option<Instant>,
        /// (end offset, time) of each read.
        read_log: Vec<(u64, Instant)>,
    },
}

/// A simulated host: an ltx connection with a bulk sender or receiver on
/// top.
#[derive(Debug)]
pub struct TransferNode {
    connection: Connection,
    app: App,
    seed: u64,
    buf: Vec<u8>,
    closed: Option<ltx_proto::CloseReason>,
    closed_at: Option<Instant>,
    trace: Option<Vec<(Instant, TraceEvent)>>,
}

/// What the receiving end of a transfer saw.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Bytes read.
    pub read: u64,
    /// When the last byte (and the end of the stream) was read.
    pub finished_at: Option<Instant>,
    /// Whether every byte read equals the byte sent.
    pub intact: bool,
}

impl TransferNode {
    /// The sending end: writes `size` bytes of the payload keyed by `seed`
    /// on one stream once connected, then finishes the stream.
    pub fn sender(connection: Connection, size: u64, seed: u64) -> TransferNode {
        TransferNode {
            connection,
            app: App::Sender {
                size,
                written: 0,
                stream: None,
                finished: false,
                chunk: Vec::new(),
                sent_log: Vec::new(),
                early: false,
            },
            seed,
            buf: vec![0; 64 * 1024],
            closed: None,
            closed_at: None,
            trace: None,
        }
    }

    /// The receiving end: reads the stream and checks every byte against
    /// the payload keyed by `seed`.
    pub fn receiver(connection: Connection, size: u64, seed: u64) -> TransferNode {
        TransferNode {
            connection,
            app: App::Receiver {
                size,
                read: 0,
                stream: None,
                corrupt: false,
                finished_at: None,
                read_log: Vec::new(),
            },
            seed,
            buf: vec![0; 64 * 1024],
            closed: None,
            closed_at: None,
            trace: None,
        }
    }

    /// Has a sender open its stream and write before the handshake
    /// completes, as early data (the connection must have it on).
    pub fn write_early(&mut self) {
        if let App::Sender { early, .. } = &mut self.app {
            *early = true;
        }
    }

    /// Keeps every trace event with its time (the connection must have been
    /// built with `trace` on).
    pub fn record_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// The trace events recorded, with their times.
    pub fn trace(&self) -> &[(Instant, TraceEvent)] {
        self.trace.as_deref().unwrap_or(&[])
    }

    /// The connection.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// Why the connection closed, if it did.
    pub fn closed(&self) -> Option<&ltx_proto::CloseReason> {
        self.closed.as_ref()
    }

    /// When the connection closed, if it did.
    pub fn closed_at(&self) -> Option<Instant> {
        self.closed_at
    }

    /// The receiver's view, or `None` on a sender.
    pub fn delivery(&self) -> Option<Delivery> {
        match &self.app {
            App::Receiver {
                read,
                corrupt,
                finished_at,
                size,
                ..
            } => Some(Delivery {
                read: *read,
                finished_at: *finished_at,
                intact: !corrupt && (finished_at.is_none() || read == size),
            }),
            App::Sender { .. } => None,
        }
    }

    /// Whether the receiver has read everything, or the connection ended.
    pub fn is_done(&self) -> bool {
        match &self.app {
            App::Receiver { finished_at, .. } => finished_at.is_some() || self.closed.is_some(),
            App::Sender { .. } => self.closed.is_some(),
        }
    }

    /// (end offset, time) of the stream data the sender put in symbols.
    pub fn sent_log(&self) -> &[(u64, Instant)] {
        match &self.app {
            App::Sender { sent_log, .. } => sent_log,
            App::Receiver { .. } => &[],
        }
    }

    /// (end offset, time) of each read by the receiver.
    pub fn read_log(&self) -> &[(u64, Instant)] {
        match &self.app {
            App::Receiver { read_log, .. } => read_log,
            App::Sender { .. } => &[],
        }
    }

    fn drive(&mut self, now: Instant) {
        while let Some(event) = self.connection.poll_event() {
            match event {
                Event::Closed(reason) => {
                    self.closed = Some(reason);
                    self.closed_at = Some(now);
                }
                Event::Trace(trace) => {
                    if let (
                        App::Sender { sent_log, .. },
                        TraceEvent::StreamDataSent { offset, len, .. },
                    ) = (&mut self.app, &trace)
                    {
                        sent_log.push((offset + len, now));
                    }
                    if let Some(log) = self.trace.as_mut() {
                        log.push((now, trace));
                    }
                }
                _ => {}
            }
        }
        match &mut self.app {
            App::Sender {
                size,
                written,
                stream,
                finished,
                chunk,
                early,
                ..
            } => {
                if !(self.connection.is_established() || *early) || *finished {
                    return;
                }
                let id = match stream {
                    Some(id) => *id,
                    None => match self.connection.open_stream() {
                        Ok(id) => *stream.insert(id),
                        Err(_) => return,
                    },
                };
                while *written < *size {
                    if chunk.is_empty() {
                        let n = (*size - *written).min(self.buf.len() as u64) as usize;
                        chunk.resize(n, 0);
                        fill_payload(self.seed, *written, chunk);
                    }
                    match self.connection.write(id, chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(taken) => {
                            *written += taken as u64;
                            chunk.drain(..taken);
                        }
                    }
                }
                if *written == *size && self.connection.finish(id).is_ok() {
                    *finished = true;
                    self.connection.close(now);
                }
            }
            App::Receiver {
                size,
                read,
                stream,
                corrupt,
                finished_at,
                read_log,
            } => {
                if stream.is_none() {
                    *stream = self.connection.accept_stream();
                }
                let Some(id) = *stream else {
                    return;
                };
                let mut expected = Vec::new();
                loop {
                    match self.connection.read(id, &mut self.buf) {
                        Ok(ReadOutcome::Data(n)) => {
                            expected.resize(n, 0);
                            fill_payload(self.seed, *read, &mut expected);
                            if self.buf[..n] != expected[..n] {
                                *corrupt = true;
                            }
                            *read += n as u64;
                            read_log.push((*read, now));
                        }
                        Ok(ReadOutcome::Finished) => {
                            if finished_at.is_none() {
                                if *read != *size {
                                    *corrupt = true;
                                }
                                *finished_at = Some(now);
                            }
                            break;
                        }
                        Ok(ReadOutcome::Blocked) | Err(_) => break,
                    }
                }
            }
        }
    }
}

fn to_link(ecn: EcnCodepoint) -> Ecn {
    match ecn {
        EcnCodepoint::NotEct => Ecn::NotEct,
        EcnCodepoint::Ect0 => Ecn::Ect0,
        EcnCodepoint::Ect1 => Ecn::Ect1,
        EcnCodepoint::Ce => Ecn::Ce,
    }
}

fn from_link(ecn: Ecn) -> EcnCodepoint {
    match ecn {
        Ecn::NotEct => EcnCodepoint::NotEct,
        Ecn::Ect0 => EcnCodepoint::Ect0,
        Ecn::Ect1 => EcnCodepoint::Ect1,
        Ecn::Ce => EcnCodepoint::Ce,
    }
}

impl Node for TransferNode {
    fn handle_datagram(&mut self, now: Instant, datagram: Datagram) {
        self.connection
            .handle_datagram(now, &datagram.payload, from_link(datagram.ecn));
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        let transmit = self.connection.poll_transmit(now);
        if transmit.is_none() {
            // Sending may have freed send buffer: let the application write.
            self.drive(now);
            return self.connection.poll_transmit(now).map(|t| Datagram {
                payload: t.contents,
                ecn: to_link(t.ecn),
            });
        }
        transmit.map(|t| Datagram {
            payload: t.contents,
            ecn: to_link(t.ecn),
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.connection.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.connection.handle_timeout(now);
        self.drive(now);
    }
}
