//! The tunnel's messages on the wire: the header at the start of every
//! tunnelled stream ([`OpenRequest`] one way, [`OpenResult`] the other),
//! and the SOCKS5 messages a client's SOCKS front end reads and answers
//! ([`socks5`]).
//!
//! Untrusted bytes become typed values here and nowhere else. Every
//! `parse` takes the bytes received so far and answers one of three ways:
//! a value and how many bytes it took ([`Parsed::Complete`]), how many
//! bytes it needs at least before it can say more
//! ([`Parsed::Incomplete`]), or an error that names what is wrong. It
//! never panics, never asks for more than the message's bounded maximum,
//! and never reads past the message, so that the bytes after a header
//! (the tunnelled data) stay in the stream. Every `emit` appends the
//! message to a buffer; what it emits parses back to the same value.
//!
//! ```
//! use ltx_tunnel::wire::{Destination, OpenRequest, Parsed};
//!
//! let request = OpenRequest { destination: "intranet.example:443".parse()? };
//! let mut bytes = Vec::new();
//! request.emit(&mut bytes);
//! // A header that arrives in pieces says how much more it needs.
//! assert!(matches!(OpenRequest::parse(&bytes[..3])?, Parsed::Incomplete { .. }));
//! let Parsed::Complete { value, len } = OpenRequest::parse(&bytes)? else {
//!     unreachable!("the whole header is there")
//! };
//! assert_eq!((value, len), (request, bytes.len()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod destination;
mod error;
mod listen;
mod open;
pub mod socks5;

pub use destination::{Destination, DomainName, Host, MAX_DOMAIN_LEN};
use error::AddressError;
pub use error::{DestinationError, WireError};
pub use listen::{
    ListenRequest, StreamRequest, LISTEN_KIND, MAX_LISTEN_LEN, MAX_STREAM_REQUEST_LEN,
};
pub use open::{
    OpenRequest, OpenResult, OpenStatus, MAX_REASON_LEN, MAX_REQUEST_LEN, MAX_RESULT_LEN, VERSION,
};

/// What a parser made of the bytes it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<T> {
    /// A whole message: the value, and the bytes it took from the front of
    /// the input.
    Complete {
        /// The message.
        value: T,
        /// Its length in bytes.
        len: usize,
    },
    /// The bytes so far are a valid beginning; the message is at least
    /// `needed` bytes long (always more than the input given, and never
    /// more than the message's maximum).
    Incomplete {
        /// The least total length that could hold the message.
        needed: usize,
    },
}

/// Reads the address that follows an address-type byte, the layout the
/// open request shares with SOCKS5: 4 bytes for IPv4, 16 for IPv6, a
/// length byte and that many bytes for a name. `at` is the offset of the
/// type byte; returns the host and the offset just past it.
fn parse_host(bytes: &[u8], at: usize) -> Result<Parsed<Host>, AddressError> {
    use std::net::{Ipv4Addr, Ipv6Addr};
    let Some(&kind) = bytes.get(at) else {
        return Ok(Parsed::Incomplete { needed: at + 1 });
    };
    let start = at + 1;
    let (end, host) = match kind {
        destination::ATYP_IPV4 => {
            let Some(octets) = bytes.get(start..start + 4) else {
                return Ok(Parsed::Incomplete { needed: start + 4 });
            };
            let octets: [u8; 4] = octets.try_into().expect("four bytes");
            (start + 4, Host::Ip(Ipv4Addr::from(octets).into()))
        }
        destination::ATYP_IPV6 => {
            let Some(octets) = bytes.get(start..start + 16) else {
                return Ok(Parsed::Incomplete { needed: start + 16 });
            };
            let octets: [u8; 16] = octets.try_into().expect("sixteen bytes");
            (start + 16, Host::Ip(Ipv6Addr::from(octets).into()))
        }
        destination::ATYP_DOMAIN => {
            let Some(&len) = bytes.get(start) else {
                return Ok(Parsed::Incomplete { needed: start + 1 });
            };
            // Refused at once, before its bytes arrive, so that nothing
            // waits for a name that cannot be one.
            if usize::from(len) > destination::MAX_DOMAIN_LEN {
                return Err(AddressError::Name(DestinationError::NameTooLong(
                    usize::from(len),
                )));
            }
            let end = start + 1 + usize::from(len);
            let Some(name) = bytes.get(start + 1..end) else {
                return Ok(Parsed::Incomplete { needed: end });
            };
            (
                end,
                Host::from_name_bytes(name).map_err(AddressError::Name)?,
            )
        }
        other => return Err(AddressError::Type(other)),
    };
    Ok(Parsed::Complete {
        value: host,
        len: end,
    })
}

/// Reads a host (see [`parse_host`]) and the big-endian port after it.
fn parse_destination(bytes: &[u8], at: usize) -> Result<Parsed<Destination>, AddressError> {
    let (host, end) = match parse_host(bytes, at)? {
        Parsed::Complete { value, len } => (value, len),
        Parsed::Incomplete { needed } => return Ok(Parsed::Incomplete { needed: needed + 2 }),
    };
    let Some(port) = bytes.get(end..end + 2) else {
        return Ok(Parsed::Incomplete { needed: end + 2 });
    };
    let port = u16::from_be_bytes([port[0], port[1]]);
    Ok(Parsed::Complete {
        value: Destination { host, port },
        len: end + 2,
    })
}
