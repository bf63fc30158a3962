//! The transport parameters each endpoint announces in its handshake.

use super::varint::{put_varint, varint_len, Reader};
use super::{WireError, MAX_SYMBOL_SIZE};

/// The smallest datagram an endpoint may announce, in bytes: what every
/// IPv6 path carries after UDP and IP headers (the figure of RFC 9000 §14).
/// Sizes are in decimal, as the RFC writes them.
pub const MIN_MAX_DATAGRAM: u16 = 1200;

/// The limits one endpoint announces to the other in its handshake frame.
///
/// Parsing refuses values the protocol cannot work with, so that a
/// `TransportParams` from the peer needs no further checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransportParams {
    /// The largest UDP payload the sender accepts, at least
    /// [`MIN_MAX_DATAGRAM`].
    pub max_datagram: u16,
    /// The size of the sender's source symbols, 1..=[`MAX_SYMBOL_SIZE`].
    pub symbol_size: u16,
    /// The most source symbols the sender's decoder holds at once, at least 1.
    pub max_window: u16,
    /// How many bytes the peer may send over all streams before further
    /// credit.
    pub max_data: u64,
    /// How many bytes the peer may send on each stream before further credit.
    pub max_stream_data: u64,
    /// How many streams the peer may open.
    pub max_streams: u64,
    /// How long the connection may stay silent before it is dropped, in
    /// milliseconds.
    pub idle_timeout_ms: u64,
}

impl TransportParams {
    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<TransportParams, WireError> {
        let max_datagram = r.varint_u16("max datagram")?;
        if max_datagram < MIN_MAX_DATAGRAM {
            return Err(WireError::OutOfRange("max datagram"));
        }
        let symbol_size = r.varint_u16("symbol size")?;
        if symbol_size == 0 || usize::from(symbol_size) > MAX_SYMBOL_SIZE {
            return Err(WireError::OutOfRange("symbol size"));
        }
        let max_window = r.varint_u16("max window")?;
        if max_window == 0 {
            return Err(WireError::OutOfRange("max window"));
        }
        Ok(TransportParams {
            max_datagram,
            symbol_size,
            max_window,
            max_data: r.varint("max data")?,
            max_stream_data: r.varint("max stream data")?,
            max_streams: r.varint("max streams")?,
            idle_timeout_ms: r.varint("idle timeout")?,
        })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        for x in self.fields() {
            put_varint(out, x);
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.fields().into_iter().map(varint_len).sum()
    }

    fn fields(&self) -> [u64; 7] {
        [
            u64::from(self.max_datagram),
            u64::from(self.symbol_size),
            u64::from(self.max_window),
            self.max_data,
            self.max_stream_data,
            self.max_streams,
            self.idle_timeout_ms,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TransportParams {
        TransportParams {
            max_datagram: 1452,
            symbol_size: 1400,
            max_window: 256,
            max_data: 1 << 20,
            max_stream_data: 1 << 18,
            max_streams: 100,
            idle_timeout_ms: 30_000,
        }
    }

    fn parse(p: TransportParams) -> Result<TransportParams, WireError> {
        let mut out = Vec::new();
        p.emit(&mut out);
        assert_eq!(out.len(), p.encoded_len());
        let mut r = Reader::new(&out);
        let parsed = TransportParams::parse(&mut r);
        assert!(parsed.is_err() || r.rest().is_empty());
        parsed
    }

    #[test]
    fn known_encoding() {
        let mut out = Vec::new();
        params().emit(&mut out);
        assert_eq!(
            out,
            [
                0x45, 0xac, // 1452
                0x45, 0x78, // 1400
                0x41, 0x00, // 256
                0x80, 0x10, 0x00, 0x00, // 2^20
                0x80, 0x04, 0x00, 0x00, // 2^18
                0x40, 0x64, // 100
                0x80, 0x00, 0x75, 0x30, // 30000
            ]
        );
        assert_eq!(parse(params()), Ok(params()));
    }

    #[test]
    fn max_datagram_of_1200_accepted_1199_refused() {
        let p = TransportParams {
            max_datagram: 1200,
            ..params()
        };
        assert_eq!(parse(p), Ok(p));
        let p = TransportParams {
            max_datagram: 1199,
            ..params()
        };
        assert_eq!(parse(p), Err(WireError::OutOfRange("max datagram")));
    }

    #[test]
    fn symbol_size_from_1_to_max_symbol_size() {
        for (size, ok) in [(0, false), (1, true), (9000, true), (9001, false)] {
            let p = TransportParams {
                symbol_size: size,
                ..params()
            };
            let expected = if ok {
                Ok(p)
            } else {
                Err(WireError::OutOfRange("symbol size"))
            };
            assert_eq!(parse(p), expected, "{size}");
        }
    }

    #[test]
    fn max_window_0_refused_1_accepted() {
        let p = TransportParams {
            max_window: 0,
            ..params()
        };
        assert_eq!(parse(p), Err(WireError::OutOfRange("max window")));
        let p = TransportParams {
            max_window: 1,
            ..params()
        };
        assert_eq!(parse(p), Ok(p));
    }

    #[test]
    fn a_u16_field_past_u16_is_refused() {
        let mut out = Vec::new();
        params().emit(&mut out);
        // Replace max window (256, two bytes at offset 4) by 65535 and 65536.
        for (value, ok) in [(0xffff_u64, true), (0x1_0000, false)] {
            let mut bytes = out[..4].to_vec();
            put_varint(&mut bytes, value);
            bytes.extend_from_slice(&out[6..]);
            let parsed = TransportParams::parse(&mut Reader::new(&bytes));
            if ok {
                assert_eq!(parsed.map(|p| p.max_window), Ok(0xffff));
            } else {
                assert_eq!(parsed, Err(WireError::OutOfRange("max window")));
            }
        }
    }
}
