//! Receive-side decoding: the peer's source and repair symbols into the
//! decoder, the decoded symbols' frames to the streams, and the decoder's
//! state for the acknowledgements.

use std::collections::VecDeque;

use ltx_coding::codec::{Code, DecodeError, Decoder, Outcome};
use ltx_coding::SymbolId;

use super::streams::{Streams, Violation};
use super::{Connection, ConnectionStats};
use crate::config::DECODER_HISTORY;
use crate::event::{codes, Event, TraceEvent};
use crate::wire::{DecoderState, Frames, RepairFrame, SourceFrame};

/// Decoded symbols the receiver forgets at once (a page of the decoder's).
const FORGET_BATCH: u64 = 32;

/// The receiving side of the coding: the decoder (created at the
/// handshake) and what the peer's repairs say of its sending.
#[derive(Default)]
pub(super) struct Receiver {
    pub(super) decoder: Option<Decoder>,
    /// The first symbol of the repair window received that starts furthest
    /// on: the peer's proactive repairs slide forward from there, and the
    /// unknown symbols before it wait for an answer (`DecoderState::settled`).
    newest_window_start: SymbolId,
    /// A symbol's buffer, kept between packets.
    scratch: Vec<u8>,
}

impl Receiver {
    /// Takes a source symbol of at most `symbol_size` bytes (trailing zeros
    /// may be left out); returns its id if the decoder took it, so that
    /// what it decodes is delivered. A symbol past the window this end
    /// announced (`max_window` past its first unknown one), or one the
    /// decoder refuses, violates the protocol.
    fn on_source(
        &mut self,
        source: &SourceFrame<'_>,
        symbol_size: usize,
        max_window: u16,
    ) -> Result<Option<SymbolId>, Violation> {
        if source.data.len() > symbol_size {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("source symbol of {} bytes", source.data.len()),
            });
        }
        let Some(decoder) = self.decoder.as_mut() else {
            return Ok(None);
        };
        let id = source.id.expand(decoder_end(decoder));
        let announced = announced_end(decoder, max_window);
        if id >= announced {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!(
                    "source symbol {id} beyond the announced window, which ends before {announced}",
                ),
            });
        }
        // A full symbol goes to the decoder as it came; only a shortened
        // one is padded back first.
        let result = if source.data.len() == symbol_size {
            decoder.receive_source(id, source.data)
        } else {
            let mut padded = std::mem::take(&mut self.scratch);
            padded.clear();
            padded.extend_from_slice(source.data);
            padded.resize(symbol_size, 0);
            let result = decoder.receive_source(id, &padded);
            self.scratch = padded;
            result
        };
        match result {
            Ok(_) => Ok(Some(id)),
            Err(DecodeError::Duplicate(_)) | Err(DecodeError::BeforeWindow { .. }) => Ok(None),
            Err(e) => Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("source symbol refused: {e}"),
            }),
        }
    }

    /// Takes a repair symbol of `symbol_size` bytes; returns whether the
    /// decoder took it, so that what it decodes is delivered. A repair that
    /// reaches past the announced window, names an unknown code, or that the
    /// decoder refuses, violates the protocol; one with nothing left to
    /// solve, or too old, is counted.
    fn on_repair(
        &mut self,
        repair: &RepairFrame<'_>,
        symbol_size: usize,
        max_window: u16,
        stats: &mut ConnectionStats,
    ) -> Result<bool, Violation> {
        if repair.data.len() != symbol_size {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("repair symbol of {} bytes", repair.data.len()),
            });
        }
        let Some(decoder) = self.decoder.as_mut() else {
            return Ok(false);
        };
        let announced = announced_end(decoder, max_window);
        let window = repair.window(decoder_end(decoder));
        let Some(window_end) = window.end().filter(|end| *end <= announced) else {
            return Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!(
                    "repair symbol over {}+{}, beyond the announced window, which ends before {announced}",
                    window.first, window.len
                ),
            });
        };
        self.newest_window_start = self.newest_window_start.max(window.first);
        if window_end <= decoder.next_missing() {
            // Everything it covers is known: nothing to learn.
            stats.repairs_redundant += 1;
            return Ok(false);
        }
        if window.first < decoder.base() {
            stats.repairs_stale += 1;
            return Ok(false);
        }
        let code = Code::from_density_byte(repair.density).map_err(|e| Violation {
            code: codes::PROTOCOL_VIOLATION,
            reason: e.to_string(),
        })?;
        let mut coefficients = vec![0u8; usize::from(window.len)];
        if code
            .coefficients(window, repair.key, &mut coefficients)
            .is_err()
        {
            return Ok(false);
        }
        match decoder.receive_combination(window.first, &coefficients, repair.data) {
            Ok(Outcome::Innovative { .. }) => Ok(true),
            Ok(Outcome::Redundant) => {
                stats.repairs_redundant += 1;
                Ok(true)
            }
            Err(DecodeError::ZeroCoefficients(_)) | Err(DecodeError::BeforeWindow { .. }) => {
                Ok(false)
            }
            Err(e) => Err(Violation {
                code: codes::PROTOCOL_VIOLATION,
                reason: format!("repair symbol refused: {e}"),
            }),
        }
    }

    /// Hands every newly known symbol's frames to the streams (those other
    /// than `received` were repaired: counted, and traced if `trace`), then
    /// lets the decoder forget what lies well behind its first unknown
    /// symbol.
    fn deliver(
        &mut self,
        received: Option<SymbolId>,
        streams: &mut Streams,
        events: &mut VecDeque<Event>,
        stats: &mut ConnectionStats,
        trace: bool,
    ) -> Result<(), Violation> {
        let Some(decoder) = self.decoder.as_mut() else {
            return Ok(());
        };
        let mut result = Ok(());
        while let Some(id) = decoder.poll_decoded() {
            if Some(id) != received {
                stats.symbols_repaired += 1;
                if trace {
                    events.push_back(Event::Trace(TraceEvent::SymbolRecovered(id)));
                }
            }
            let Some(symbol) = decoder.symbol(id) else {
                continue;
            };
            for frame in Frames::new(symbol) {
                let applied = match frame {
                    Ok(frame) => streams.on_frame(&frame, events),
                    Err(e) => Err(Violation {
                        code: codes::PROTOCOL_VIOLATION,
                        reason: format!("malformed frame in symbol {id}: {e}"),
                    }),
                };
                if let Err(v) = applied {
                    result = Err(v);
                    break;
                }
            }
            if result.is_err() {
                break;
            }
        }
        // Forgotten a batch at a time: each call walks the decoder's pending
        // equations, so one per symbol delivered would cost that walk per
        // packet. At most `DECODER_HISTORY` symbols stay behind the first
        // unknown one, and at least that less a batch.
        let first_unknown = decoder.next_missing();
        let keep_from =
            SymbolId((first_unknown.0 + FORGET_BATCH).saturating_sub(u64::from(DECODER_HISTORY)));
        if keep_from.0 >= decoder.base().0 + FORGET_BATCH {
            decoder.consume(keep_from);
        }
        result
    }

    /// Drops the decoded symbols kept below the first unknown one, if
    /// nothing is missing: the connection has been quiet, and repairs that
    /// would reach back to them are no longer coming.
    pub(super) fn forget_history(&mut self) {
        if let Some(decoder) = self.decoder.as_mut() {
            if decoder.missing() == 0 {
                let first_unknown = decoder.next_missing();
                decoder.consume(first_unknown);
            }
        }
    }

    /// The decoder's state, as an acknowledgement reports it.
    pub(super) fn state(&mut self) -> DecoderState {
        match self.decoder.as_mut() {
            Some(decoder) => DecoderState {
                decoded_through: decoder.next_missing(),
                end: decoder_end(decoder),
                missing: decoder.missing(),
                rank: decoder.rank() as u64,
                settled: decoder.deficit_before(self.newest_window_start),
            },
            None => DecoderState {
                decoded_through: SymbolId(0),
                end: SymbolId(0),
                missing: 0,
                rank: 0,
                settled: 0,
            },
        }
    }
}

impl Connection {
    /// What this connection has measured of its path (bottleneck rate and
    /// minimum round trip), for the next connection to the same peer
    /// ([`TransportConfig::set_saved_path`](crate::TransportConfig::set_saved_path));
    /// `None` until the controller has measured a rate, or while a resume
    /// from a saved path is unconfirmed.
    pub fn path_to_save(&self) -> Option<crate::congestion::SavedPath> {
        self.recovery.controller.path_to_save(&self.recovery.rtt)
    }

    /// Gives the controller the path an earlier connection with the same
    /// peer measured, once the handshake has told who the peer is (a
    /// server learns its client's key from the first message): careful
    /// resume as [`TransportConfig::set_saved_path`](crate::TransportConfig::set_saved_path)
    /// gives it at the start. Call it before any data is sent; controllers
    /// that read no rate hint ignore it.
    pub fn resume_from(&mut self, now: std::time::Instant, saved: crate::congestion::SavedPath) {
        if !self.config.congestion.reads_rate_hint() {
            return;
        }
        self.recovery.controller.on_saved_path(now, saved);
        if self.recovery.rtt.has_sample() {
            self.recovery
                .controller
                .on_rtt_sample(now, &self.recovery.rtt);
        } else if self.handshake.answer_sample.is_some() {
            self.take_answer_sample(now);
        } else if self.side == crate::Side::Server {
            self.handshake.resume_waiting = true;
        }
    }

    /// Bytes of data buffers the connection holds now: the coding windows
    /// (symbols sent and not yet acknowledged, symbols received and kept
    /// for decoding) and the streams' unsent and unread bytes. They grow
    /// with what is in flight and go back as it is acknowledged and read;
    /// a quiet connection holds almost none.
    pub fn buffered_bytes(&self) -> usize {
        let encoder = self
            .sender
            .encoder
            .as_ref()
            .map_or(0, |e| e.allocated_bytes());
        let decoder = self
            .receiver
            .decoder
            .as_ref()
            .map_or(0, |d| d.allocated_bytes());
        encoder + decoder + self.streams.buffered_bytes()
    }

    /// A SOURCE frame arrived.
    pub(super) fn on_source(&mut self, source: &SourceFrame<'_>) -> Result<(), Violation> {
        let taken = self
            .receiver
            .on_source(source, self.symbol_size, self.config.max_window)?;
        match taken {
            Some(id) => self.deliver_symbols(Some(id)),
            None => Ok(()),
        }
    }

    /// A REPAIR frame arrived.
    pub(super) fn on_repair(&mut self, repair: &RepairFrame<'_>) -> Result<(), Violation> {
        let taken = self.receiver.on_repair(
            repair,
            self.symbol_size,
            self.config.max_window,
            &mut self.stats,
        )?;
        if taken {
            self.deliver_symbols(None)
        } else {
            Ok(())
        }
    }

    /// Delivers what the decoder now knows; `received` is the source symbol
    /// that just arrived as such, if any.
    fn deliver_symbols(&mut self, received: Option<SymbolId>) -> Result<(), Violation> {
        self.receiver.deliver(
            received,
            &mut self.streams,
            &mut self.events,
            &mut self.stats,
            self.config.trace,
        )
    }
}

/// One past the newest source symbol the peer may have sent: it sends
/// none beyond `max_window` past the first one this end reported it lacks,
/// and its reports only lag this end's decoder.
fn announced_end(decoder: &mut Decoder, max_window: u16) -> SymbolId {
    let next = decoder.next_missing();
    SymbolId(next.0.saturating_add(u64::from(max_window)))
}

/// The end this end's decoder reports (one past the newest symbol referred
/// to, at least its first unknown one), which the peer truncates symbol ids
/// against and this end expands them against.
pub(super) fn decoder_end(decoder: &mut Decoder) -> SymbolId {
    decoder.end().max(decoder.next_missing())
}

#[cfg(test)]
mod tests {
    use ltx_coding::codec::DecoderConfig;

    use super::*;
    use crate::connection::streams::StreamLimits;
    use crate::wire::Side;

    /// In-order symbols, each delivered as it comes: the decoder keeps at
    /// most `DECODER_HISTORY` decoded symbols behind its first unknown one
    /// and at least that less a batch, and forgets a batch at a time.
    #[test]
    fn decoded_history_is_forgotten_a_batch_at_a_time() {
        let symbol_size = 64;
        let mut receiver = Receiver {
            decoder: Some(
                Decoder::new(DecoderConfig {
                    symbol_size,
                    max_window: 1024 + DECODER_HISTORY,
                    code: Code::default(),
                })
                .expect("a valid decoder"),
            ),
            ..Receiver::default()
        };
        let limits = StreamLimits {
            receive_window: 1 << 20,
            stream_receive_window: 1 << 20,
            send_buffer: 1 << 20,
            max_streams: 4,
        };
        let mut streams = Streams::new(Side::Server, limits);
        let (mut events, mut stats) = (VecDeque::new(), ConnectionStats::default());
        let history = u64::from(DECODER_HISTORY);
        let mut bases = Vec::new();
        for i in 0..history + 10 * FORGET_BATCH + 7 {
            let decoder = receiver.decoder.as_mut().expect("a decoder");
            // All zeros: padding frames, which the streams ignore.
            decoder
                .receive_source(SymbolId(i), &vec![0; symbol_size])
                .expect("in order, in the window");
            receiver
                .deliver(
                    Some(SymbolId(i)),
                    &mut streams,
                    &mut events,
                    &mut stats,
                    false,
                )
                .expect("padding is no violation");
            let base = receiver.decoder.as_ref().expect("a decoder").base().0;
            let behind = i + 1 - base;
            assert!(behind <= history, "{behind} symbols kept behind at {i}");
            if i + 1 >= history {
                assert!(behind >= history - FORGET_BATCH, "{behind} kept at {i}");
            }
            if bases.last() != Some(&base) {
                bases.push(base);
            }
        }
        let expected: Vec<u64> = (0..=11).map(|k| k * FORGET_BATCH).collect();
        assert_eq!(bases, expected);
    }
}
