//! The first message of a client's stream, which either asks for a
//! destination ([`OpenRequest`]) or asks the server to listen for it (a
//! `-R` remote forward, [`ListenRequest`]). The first byte tells them
//! apart: the open request's version, or the listen request's kind.
//!
//! ```text
//! ListenRequest (client → server), 8 to 20 bytes:
//!   0     kind              0x81
//!   1     address type      0x01 IPv4 | 0x04 IPv6 (no names: the server binds it)
//!   2..   address           4 bytes | 16 bytes
//!   ..+2  port              big-endian (0: any free port)
//! ```
//!
//! The server answers with an [`OpenResult`](super::OpenResult):
//! `connected` once it listens (the reason says on which address), or why
//! not. The stream stays open while the forward lasts; its end (or the
//! connection's) stops the listening. For each TCP connection the server
//! accepts there it opens a stream to the client whose open request names
//! the address the client asked for, and the client answers with an open
//! result before the bytes, as the server does for `-L`.

use std::net::SocketAddr;

use super::destination::{Destination, Host};
use super::error::WireError;
use super::{parse_destination, OpenRequest, Parsed, MAX_REQUEST_LEN, VERSION};

/// The address type of a name, which a listen request may not hold.
const NAME_TYPE: u8 = 0x03;

/// The first byte of a listen request.
pub const LISTEN_KIND: u8 = 0x81;

/// The longest listen request: kind, address type, an IPv6 address, a
/// port.
pub const MAX_LISTEN_LEN: usize = 2 + 16 + 2;

/// The longest first message of a client's stream.
pub const MAX_STREAM_REQUEST_LEN: usize = if MAX_REQUEST_LEN > MAX_LISTEN_LEN {
    MAX_REQUEST_LEN
} else {
    MAX_LISTEN_LEN
};

/// A client's request that the server listen on `address` and carry the
/// connections it accepts back to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenRequest {
    /// Where the server should listen.
    pub address: SocketAddr,
}

impl ListenRequest {
    /// Parses a listen request from the front of `bytes` (see the
    /// [module](super) for the contract).
    pub fn parse(bytes: &[u8]) -> Result<Parsed<ListenRequest>, WireError> {
        match bytes.first() {
            Some(&LISTEN_KIND) => {}
            Some(&other) => return Err(WireError::Version(other)),
            None => return Ok(Parsed::Incomplete { needed: 8 }),
        }
        if bytes.get(1) == Some(&NAME_TYPE) {
            return Err(WireError::AddressType(NAME_TYPE));
        }
        Ok(match parse_destination(bytes, 1)? {
            Parsed::Complete { value, len } => match value.host {
                Host::Ip(ip) => Parsed::Complete {
                    value: ListenRequest {
                        address: SocketAddr::new(ip, value.port),
                    },
                    len,
                },
                Host::Domain(_) => return Err(WireError::AddressType(NAME_TYPE)),
            },
            Parsed::Incomplete { needed } => Parsed::Incomplete { needed },
        })
    }

    /// Appends the request to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(LISTEN_KIND);
        let destination = Destination {
            host: Host::Ip(self.address.ip()),
            port: self.address.port(),
        };
        destination.emit(out);
    }
}

/// The first message of a client's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamRequest {
    /// Connect a destination (`-L`, SOCKS).
    Open(OpenRequest),
    /// Listen for the client (`-R`).
    Listen(ListenRequest),
}

impl StreamRequest {
    /// Parses either request from the front of `bytes`, by its first byte.
    pub fn parse(bytes: &[u8]) -> Result<Parsed<StreamRequest>, WireError> {
        match bytes.first() {
            Some(&LISTEN_KIND) => Ok(match ListenRequest::parse(bytes)? {
                Parsed::Complete { value, len } => Parsed::Complete {
                    value: StreamRequest::Listen(value),
                    len,
                },
                Parsed::Incomplete { needed } => Parsed::Incomplete { needed },
            }),
            Some(&VERSION) | None => Ok(match OpenRequest::parse(bytes)? {
                Parsed::Complete { value, len } => Parsed::Complete {
                    value: StreamRequest::Open(value),
                    len,
                },
                Parsed::Incomplete { needed } => Parsed::Incomplete { needed },
            }),
            Some(&other) => Err(WireError::Version(other)),
        }
    }

    /// Appends the request to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            StreamRequest::Open(open) => open.emit(out),
            StreamRequest::Listen(listen) => listen.emit(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_requests_round_trip_and_refuse_names() {
        for address in ["127.0.0.1:8080", "[::1]:0", "0.0.0.0:65535"] {
            let request = ListenRequest {
                address: address.parse().unwrap(),
            };
            let mut bytes = Vec::new();
            request.emit(&mut bytes);
            assert!(bytes.len() <= MAX_LISTEN_LEN);
            assert_eq!(
                StreamRequest::parse(&bytes),
                Ok(Parsed::Complete {
                    value: StreamRequest::Listen(request),
                    len: bytes.len()
                })
            );
            for cut in 0..bytes.len() {
                assert!(matches!(
                    StreamRequest::parse(&bytes[..cut]),
                    Ok(Parsed::Incomplete { needed }) if needed > cut
                ));
            }
        }
        let mut named = vec![LISTEN_KIND, 0x03, 9];
        named.extend_from_slice(b"localhost");
        named.extend_from_slice(&80u16.to_be_bytes());
        assert_eq!(
            StreamRequest::parse(&named),
            Err(WireError::AddressType(0x03))
        );
    }
}
