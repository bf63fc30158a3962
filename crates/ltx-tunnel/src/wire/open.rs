//! The header at the start of every tunnelled stream: the client asks for
//! a destination ([`OpenRequest`]); the server answers with the outcome
//! ([`OpenResult`]) before any of the destination's bytes.
//!
//! ```text
//! OpenRequest (client → server), 6 to 258 bytes:
//!   0     version           0x01
//!   1     address type      0x01 IPv4 | 0x03 domain name | 0x04 IPv6
//!   2..   address           4 bytes | 1 length byte (1..=253) + name (a trailing dot allowed) | 16 bytes
//!   ..+2  port              big-endian
//!
//! OpenResult (server → client), 3 to 258 bytes:
//!   0     version           0x01
//!   1     status            see OpenStatus
//!   2     reason length     0..=255
//!   3..   reason            UTF-8 text, for logs
//! ```

use std::fmt;

use super::destination::{Destination, MAX_DOMAIN_LEN};
use super::error::WireError;
use super::{parse_destination, Parsed};

/// The version of the stream header this end speaks.
pub const VERSION: u8 = 0x01;

/// The longest open request: a version byte, the longest name with its
/// type and length bytes, and a port.
pub const MAX_REQUEST_LEN: usize = 1 + 2 + MAX_DOMAIN_LEN + 2;

/// The longest reason an open result carries, in bytes.
pub const MAX_REASON_LEN: usize = 255;

/// The longest open result.
pub const MAX_RESULT_LEN: usize = 3 + MAX_REASON_LEN;

/// Byte offsets of the fixed fields.
mod field {
    /// Both messages: the version.
    pub(super) const VERSION: usize = 0;
    /// The request: the address type, first byte of the destination.
    pub(super) const DESTINATION: usize = 1;
    /// The result: the status.
    pub(super) const STATUS: usize = 1;
    /// The result: the reason's length.
    pub(super) const REASON_LEN: usize = 2;
    /// The result: the reason.
    pub(super) const REASON: usize = 3;
}

/// A client's request to connect a new stream to a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRequest {
    /// Where the server should connect.
    pub destination: Destination,
}

impl OpenRequest {
    /// Parses a request from the front of `bytes` (see the
    /// [module](super) for the contract).
    pub fn parse(bytes: &[u8]) -> Result<Parsed<OpenRequest>, WireError> {
        check_version(bytes)?;
        Ok(
            match parse_destination(bytes, field::DESTINATION).map_err(WireError::from)? {
                Parsed::Complete { value, len } => Parsed::Complete {
                    value: OpenRequest { destination: value },
                    len,
                },
                Parsed::Incomplete { needed } => Parsed::Incomplete { needed },
            },
        )
    }

    /// Appends the request to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(VERSION);
        self.destination.emit(out);
    }

    /// The bytes [`emit`](Self::emit) appends.
    pub fn buffer_len(&self) -> usize {
        1 + self.destination.buffer_len()
    }
}

/// How the server's attempt to connect a stream's destination went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenStatus {
    /// Connected: the destination's bytes follow.
    Connected,
    /// The destination refused the connection (nothing listens there).
    Refused,
    /// The server's policy does not permit this destination.
    NotPermitted,
    /// The destination could not be reached: no route, no answer in
    /// time, or a name that does not resolve.
    Unreachable,
    /// This client has as many streams open as the server allows it.
    LimitReached,
    /// Any other failure; the reason says what.
    Failed,
}

impl OpenStatus {
    /// The status byte.
    pub fn to_byte(self) -> u8 {
        match self {
            OpenStatus::Connected => 0x00,
            OpenStatus::Refused => 0x01,
            OpenStatus::NotPermitted => 0x02,
            OpenStatus::Unreachable => 0x03,
            OpenStatus::LimitReached => 0x04,
            OpenStatus::Failed => 0x05,
        }
    }

    /// The status of a byte, if it is one.
    pub fn from_byte(byte: u8) -> Option<OpenStatus> {
        Some(match byte {
            0x00 => OpenStatus::Connected,
            0x01 => OpenStatus::Refused,
            0x02 => OpenStatus::NotPermitted,
            0x03 => OpenStatus::Unreachable,
            0x04 => OpenStatus::LimitReached,
            0x05 => OpenStatus::Failed,
            _ => return None,
        })
    }
}

impl fmt::Display for OpenStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpenStatus::Connected => "connected",
            OpenStatus::Refused => "refused by the destination",
            OpenStatus::NotPermitted => "not permitted by the server",
            OpenStatus::Unreachable => "unreachable from the server",
            OpenStatus::LimitReached => "too many streams for this client",
            OpenStatus::Failed => "failed",
        })
    }
}

/// The server's answer to an [`OpenRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenResult {
    /// How it went.
    pub status: OpenStatus,
    reason: String,
}

impl OpenResult {
    /// A result with a reason for logs, cut to [`MAX_REASON_LEN`] bytes
    /// (at a character boundary).
    pub fn new(status: OpenStatus, reason: &str) -> OpenResult {
        let mut end = reason.len().min(MAX_REASON_LEN);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        OpenResult {
            status,
            reason: reason[..end].to_owned(),
        }
    }

    /// The answer that the destination is connected.
    pub fn connected() -> OpenResult {
        OpenResult::new(OpenStatus::Connected, "")
    }

    /// The reason, for logs: at most [`MAX_REASON_LEN`] bytes, possibly
    /// empty.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Parses a result from the front of `bytes` (see the [module](super)
    /// for the contract).
    pub fn parse(bytes: &[u8]) -> Result<Parsed<OpenResult>, WireError> {
        check_version(bytes)?;
        let Some(&status) = bytes.get(field::STATUS) else {
            return Ok(Parsed::Incomplete {
                needed: field::REASON,
            });
        };
        let status = OpenStatus::from_byte(status).ok_or(WireError::Status(status))?;
        let Some(&len) = bytes.get(field::REASON_LEN) else {
            return Ok(Parsed::Incomplete {
                needed: field::REASON,
            });
        };
        let end = field::REASON + usize::from(len);
        let Some(reason) = bytes.get(field::REASON..end) else {
            return Ok(Parsed::Incomplete { needed: end });
        };
        let reason = std::str::from_utf8(reason).map_err(|_| WireError::ReasonNotText)?;
        Ok(Parsed::Complete {
            value: OpenResult {
                status,
                reason: reason.to_owned(),
            },
            len: end,
        })
    }

    /// Appends the result to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(VERSION);
        out.push(self.status.to_byte());
        let len = u8::try_from(self.reason.len()).expect("reasons are cut to 255 bytes");
        out.push(len);
        out.extend_from_slice(self.reason.as_bytes());
    }

    /// The bytes [`emit`](Self::emit) appends.
    pub fn buffer_len(&self) -> usize {
        field::REASON + self.reason.len()
    }
}

impl fmt::Display for OpenResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reason.is_empty() {
            write!(f, "{}", self.status)
        } else {
            write!(f, "{}: {}", self.status, self.reason)
        }
    }
}

fn check_version(bytes: &[u8]) -> Result<(), WireError> {
    match bytes.get(field::VERSION) {
        Some(&VERSION) | None => Ok(()),
        Some(&other) => Err(WireError::Version(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::DestinationError;

    fn whole<T>(parsed: Parsed<T>) -> (T, usize) {
        match parsed {
            Parsed::Complete { value, len } => (value, len),
            Parsed::Incomplete { needed } => panic!("incomplete, needs {needed}"),
        }
    }

    fn request(text: &str) -> OpenRequest {
        OpenRequest {
            destination: text.parse().unwrap(),
        }
    }

    #[test]
    fn a_request_for_each_address_type_has_the_documented_bytes() {
        let mut out = Vec::new();
        request("10.0.0.1:22").emit(&mut out);
        assert_eq!(out, [0x01, 0x01, 10, 0, 0, 1, 0x00, 0x16]);
        out.clear();
        request("[::1]:443").emit(&mut out);
        let mut v6 = vec![0x01, 0x04];
        v6.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0x01, 0xbb]);
        assert_eq!(out, v6);
        out.clear();
        request("db:5432").emit(&mut out);
        assert_eq!(out, [0x01, 0x03, 2, b'd', b'b', 0x15, 0x38]);
    }

    #[test]
    fn every_prefix_of_a_request_asks_for_more_and_never_past_its_end() {
        for text in ["10.0.0.1:22", "[fd00::7]:443", "intranet.example:8080"] {
            let request = request(text);
            let mut bytes = Vec::new();
            request.emit(&mut bytes);
            assert_eq!(bytes.len(), request.buffer_len());
            for cut in 0..bytes.len() {
                match OpenRequest::parse(&bytes[..cut]).unwrap() {
                    Parsed::Incomplete { needed } => {
                        assert!(needed > cut && needed <= bytes.len(), "{text} at {cut}");
                    }
                    Parsed::Complete { .. } => panic!("{text} complete at {cut}"),
                }
            }
            // Tunnelled bytes after the header are not the header's.
            bytes.extend_from_slice(b"GET / HTTP/1.1\r\n");
            assert_eq!(
                whole(OpenRequest::parse(&bytes).unwrap()),
                (request.clone(), request.buffer_len())
            );
        }
    }

    #[test]
    fn a_request_that_is_not_one_says_why() {
        assert_eq!(OpenRequest::parse(&[0x02]), Err(WireError::Version(2)));
        assert_eq!(
            OpenRequest::parse(&[0x01, 0x02]),
            Err(WireError::AddressType(2))
        );
        assert_eq!(
            OpenRequest::parse(&[0x01, 0x03, 0, 0, 22]),
            Err(WireError::Destination(DestinationError::EmptyName))
        );
        assert_eq!(
            OpenRequest::parse(&[0x01, 0x03, 3, b'a', b' ', b'b', 0, 22]),
            Err(WireError::Destination(DestinationError::BadCharacter(b' ')))
        );
        // 254 bytes of name: one more than a name may have.
        // A name longer than 253 bytes is refused from its length byte.
        assert_eq!(
            OpenRequest::parse(&[0x01, 0x03, 254]),
            Err(WireError::Destination(DestinationError::NameTooLong(254)))
        );
        let mut longest = vec![0x01, 0x03, 253];
        longest.extend(std::iter::repeat_n(b'a', 253));
        longest.extend_from_slice(&[0, 22]);
        // One label of 253 bytes: too long a label, but not too long a name.
        assert_eq!(
            OpenRequest::parse(&longest),
            Err(WireError::Destination(DestinationError::BadLabel))
        );
    }

    #[test]
    fn an_address_sent_as_a_name_is_read_as_the_address() {
        let bytes = [
            0x01, 0x03, 9, b'1', b'2', b'7', b'.', b'0', b'.', b'0', b'.', b'1', 0, 80,
        ];
        let (parsed, _) = whole(OpenRequest::parse(&bytes).unwrap());
        assert_eq!(parsed, request("127.0.0.1:80"));
    }

    #[test]
    fn results_round_trip_with_and_without_a_reason() {
        for result in [
            OpenResult::connected(),
            OpenResult::new(OpenStatus::Refused, "connection refused"),
            OpenResult::new(OpenStatus::NotPermitted, "db:5432 is not permitted"),
        ] {
            let mut bytes = Vec::new();
            result.emit(&mut bytes);
            assert_eq!(bytes.len(), result.buffer_len());
            for cut in 0..bytes.len() {
                assert!(matches!(
                    OpenResult::parse(&bytes[..cut]).unwrap(),
                    Parsed::Incomplete { needed } if needed > cut && needed <= bytes.len()
                ));
            }
            assert_eq!(
                whole(OpenResult::parse(&bytes).unwrap()),
                (result.clone(), bytes.len())
            );
        }
    }

    #[test]
    fn a_reason_is_cut_to_255_bytes_at_a_character_boundary() {
        let at_limit = OpenResult::new(OpenStatus::Failed, &"e".repeat(255));
        assert_eq!(at_limit.reason().len(), 255);
        let over = OpenResult::new(OpenStatus::Failed, &"e".repeat(256));
        assert_eq!(over.reason().len(), 255);
        // 'é' is two bytes: 127 of them fill 254, the 128th would cross 255.
        let accents = OpenResult::new(OpenStatus::Failed, &"é".repeat(200));
        assert_eq!(accents.reason().len(), 254);
    }

    #[test]
    fn a_result_that_is_not_one_says_why() {
        assert_eq!(OpenResult::parse(&[0x01, 0x06]), Err(WireError::Status(6)));
        assert_eq!(
            OpenResult::parse(&[0x01, 0x05, 1, 0xff]),
            Err(WireError::ReasonNotText)
        );
        for byte in 0..=5 {
            let status = OpenStatus::from_byte(byte).unwrap();
            assert_eq!(status.to_byte(), byte);
        }
    }
}
