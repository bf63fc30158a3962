//! What a Noise handshake message's payload says about early data, after
//! its HANDSHAKE body.
//!
//! ```text
//! 0x01  varint stamp     the client offers early data; its wall clock,
//!                        milliseconds since the UNIX epoch
//! 0x02  u8 accepted      the server's answer: 1 if it delivers the
//!                        early data, 0 if the client must send it again
//! ```
//!
//! A payload without one says nothing about early data: a client that
//! sends none offers none, and a server that answers an offer with none
//! is taken to refuse it.

use super::varint::{put_varint, Reader};
use super::{ConnectionId, HandshakeFrame, TransportParams, WireError};

const OFFER: u8 = 0x01;
const ANSWER: u8 = 0x02;

/// The payload of a Noise handshake message: the HANDSHAKE body, and
/// what follows it about early data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HandshakePayload {
    /// The sender's connection id and transport parameters.
    pub body: HandshakeFrame,
    /// The client's offer, or the server's answer, if any.
    pub early: Option<EarlyDataField>,
}

impl HandshakePayload {
    /// Parses a payload; every byte must be used.
    pub fn parse(bytes: &[u8]) -> Result<HandshakePayload, WireError> {
        let mut r = Reader::new(bytes);
        let body = HandshakeFrame {
            source_cid: ConnectionId(r.u32_be("source connection id")?),
            params: TransportParams::parse(&mut r)?,
        };
        Ok(HandshakePayload {
            body,
            early: EarlyDataField::parse(r.rest())?,
        })
    }

    /// Appends the payload as [`HandshakePayload::parse`] reads it.
    pub fn emit(&self, out: &mut Vec<u8>) {
        self.body.emit_body(out);
        if let Some(early) = &self.early {
            early.emit(out);
        }
    }
}

/// The early-data part of a handshake message's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EarlyDataField {
    /// The client sends early data in its first flight, and stamped its
    /// first message with its wall clock (milliseconds since the epoch).
    Offer {
        /// The client's wall clock when it wrote its first message.
        stamp: u64,
    },
    /// Whether the server delivers the client's early data.
    Answer {
        /// `true`: delivered; `false`: the client sends it again.
        accepted: bool,
    },
}

impl EarlyDataField {
    /// Parses what follows the HANDSHAKE body: nothing, or one field that
    /// uses every byte.
    pub fn parse(bytes: &[u8]) -> Result<Option<EarlyDataField>, WireError> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let mut r = Reader::new(bytes);
        let field = match r.u8("early data field")? {
            OFFER => EarlyDataField::Offer {
                stamp: r.varint("early data stamp")?,
            },
            ANSWER => match r.u8("early data answer")? {
                0 => EarlyDataField::Answer { accepted: false },
                1 => EarlyDataField::Answer { accepted: true },
                _ => return Err(WireError::OutOfRange("early data answer")),
            },
            _ => return Err(WireError::OutOfRange("early data field")),
        };
        if !r.rest().is_empty() {
            return Err(WireError::OutOfRange("early data field length"));
        }
        Ok(Some(field))
    }

    /// Appends the field as [`EarlyDataField::parse`] reads it.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match *self {
            EarlyDataField::Offer { stamp } => {
                out.push(OFFER);
                put_varint(out, stamp);
            }
            EarlyDataField::Answer { accepted } => {
                out.push(ANSWER);
                out.push(u8::from(accepted));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_trailing_bytes_are_refused() {
        for field in [
            EarlyDataField::Offer {
                stamp: 1_700_000_000_123,
            },
            EarlyDataField::Answer { accepted: true },
            EarlyDataField::Answer { accepted: false },
        ] {
            let mut out = Vec::new();
            field.emit(&mut out);
            assert_eq!(EarlyDataField::parse(&out), Ok(Some(field)));
            out.push(0);
            assert!(EarlyDataField::parse(&out).is_err());
        }
        assert_eq!(EarlyDataField::parse(&[]), Ok(None));
        assert!(EarlyDataField::parse(&[ANSWER, 2]).is_err());
        assert!(EarlyDataField::parse(&[0x03]).is_err());
        assert!(EarlyDataField::parse(&[OFFER]).is_err());
    }

    #[test]
    fn a_payload_without_a_field_is_a_handshake_body() {
        let body = HandshakeFrame {
            source_cid: ConnectionId(7),
            params: TransportParams {
                max_datagram: 1400,
                symbol_size: 1350,
                max_window: 64,
                max_data: 1 << 20,
                max_stream_data: 1 << 18,
                max_streams: 8,
                idle_timeout_ms: 30_000,
            },
        };
        let mut bare = Vec::new();
        body.emit_body(&mut bare);
        let parsed = HandshakePayload::parse(&bare).unwrap();
        assert_eq!(parsed, HandshakePayload { body, early: None });
        let offer = HandshakePayload {
            body,
            early: Some(EarlyDataField::Offer { stamp: 5 }),
        };
        let mut out = Vec::new();
        offer.emit(&mut out);
        assert_eq!(HandshakePayload::parse(&out), Ok(offer));
        assert!(HandshakePayload::parse(&out[..bare.len() - 1]).is_err());
    }
}
