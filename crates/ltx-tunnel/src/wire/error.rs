//! Why bytes or text are not a tunnel message or a destination.

/// Why text or bytes are not a host or a destination.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    /// A domain name with nothing in it.
    #[error("the name is empty")]
    EmptyName,
    /// A domain name longer than 253 bytes.
    #[error("the name is {0} bytes long, more than 253")]
    NameTooLong(usize),
    /// A label of a name is empty or longer than 63 bytes.
    #[error("a label of the name is empty or longer than 63 bytes")]
    BadLabel,
    /// A byte a name may not hold.
    #[error("the name holds the byte {0:#04x}; names hold letters, digits, '-', '_' and dots")]
    BadCharacter(u8),
    /// `HOST:PORT` without the port.
    #[error("{0:?} has no port: give HOST:PORT")]
    NoPort(String),
    /// A port that is not a number from 0 to 65535.
    #[error("{0:?} is not a port (0 to 65535)")]
    BadPort(String),
    /// An IPv6 address and a port without the brackets that tell them
    /// apart.
    #[error("{0:?}: write an IPv6 address in brackets, as [::1]:22")]
    UnbracketedIpv6(String),
}

/// Why bytes are not a tunnel message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A version this end does not speak.
    #[error("unknown version {0:#04x}")]
    Version(u8),
    /// An address type that is not IPv4 (0x01), a name (0x03) or IPv6
    /// (0x04).
    #[error("unknown address type {0:#04x}")]
    AddressType(u8),
    /// A name that is not a domain name.
    #[error("bad name: {0}")]
    Destination(#[from] DestinationError),
    /// A result status this end does not know.
    #[error("unknown status {0:#04x}")]
    Status(u8),
    /// A reason that is not UTF-8 text.
    #[error("the reason is not UTF-8 text")]
    ReasonNotText,
}

/// Why the address part of a message (shared by the open request and
/// SOCKS5) is not an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AddressError {
    /// An address type other than 0x01, 0x03 and 0x04.
    Type(u8),
    /// A name that is not a domain name.
    Name(DestinationError),
}

impl From<AddressError> for WireError {
    fn from(error: AddressError) -> WireError {
        match error {
            AddressError::Type(kind) => WireError::AddressType(kind),
            AddressError::Name(e) => WireError::Destination(e),
        }
    }
}
