//! Where a tunnelled connection goes: a host and a port. The host is an
//! IP address, or a domain name that the server resolves.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use super::error::DestinationError;

/// The address type of an IPv4 address, as in SOCKS5 (RFC 1928).
pub(super) const ATYP_IPV4: u8 = 0x01;
/// The address type of a domain name, as in SOCKS5.
pub(super) const ATYP_DOMAIN: u8 = 0x03;
/// The address type of an IPv6 address, as in SOCKS5.
pub(super) const ATYP_IPV6: u8 = 0x04;

/// The longest domain name, in bytes (RFC 1035's 253 characters of text).
pub const MAX_DOMAIN_LEN: usize = 253;

/// The longest label of a domain name, in bytes.
const MAX_LABEL_LEN: usize = 63;

/// A domain name: labels of 1 to 63 ASCII letters, digits, `-` or `_`,
/// joined by dots, at most [`MAX_DOMAIN_LEN`] bytes, kept in lowercase (a
/// trailing dot is dropped). Nothing else can be built, so a name never
/// carries bytes a resolver or a log would misread.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DomainName(String);

impl DomainName {
    /// Checks `name` and keeps it in lowercase.
    pub fn new(name: &str) -> Result<DomainName, DestinationError> {
        Self::from_bytes(name.as_bytes())
    }

    fn from_bytes(name: &[u8]) -> Result<DomainName, DestinationError> {
        let name = name.strip_suffix(b".").unwrap_or(name);
        if name.is_empty() {
            return Err(DestinationError::EmptyName);
        }
        if name.len() > MAX_DOMAIN_LEN {
            return Err(DestinationError::NameTooLong(name.len()));
        }
        for label in name.split(|&b| b == b'.') {
            if label.is_empty() || label.len() > MAX_LABEL_LEN {
                return Err(DestinationError::BadLabel);
            }
            if let Some(&bad) = label
                .iter()
                .find(|&&b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
            {
                return Err(DestinationError::BadCharacter(bad));
            }
        }
        let text = std::str::from_utf8(name).expect("checked ASCII");
        Ok(DomainName(text.to_ascii_lowercase()))
    }

    /// The name, in lowercase.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DomainName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The host a tunnelled connection goes to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// An IPv4 or IPv6 address.
    Ip(IpAddr),
    /// A name the server resolves.
    Domain(DomainName),
}

impl Host {
    /// A host from its text: an IP address (IPv6 with or without
    /// brackets) or a domain name.
    pub fn parse(text: &str) -> Result<Host, DestinationError> {
        let bare = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(Host::Ip(ip));
        }
        DomainName::new(text).map(Host::Domain)
    }

    /// A host from a name's bytes on the wire: an address written as text
    /// (as SOCKS clients sometimes send one) becomes the address.
    pub(super) fn from_name_bytes(name: &[u8]) -> Result<Host, DestinationError> {
        if let Some(ip) = std::str::from_utf8(name)
            .ok()
            .and_then(|t| t.parse::<IpAddr>().ok())
        {
            return Ok(Host::Ip(ip));
        }
        Ok(Host::Domain(DomainName::from_bytes(name)?))
    }

    /// Appends the address type, then the address (see
    /// [`OpenRequest`](super::OpenRequest) for the layout).
    pub(super) fn emit(&self, out: &mut Vec<u8>) {
        match self {
            Host::Ip(IpAddr::V4(ip)) => {
                out.push(ATYP_IPV4);
                out.extend_from_slice(&ip.octets());
            }
            Host::Ip(IpAddr::V6(ip)) => {
                out.push(ATYP_IPV6);
                out.extend_from_slice(&ip.octets());
            }
            Host::Domain(name) => {
                out.push(ATYP_DOMAIN);
                let len = u8::try_from(name.0.len()).expect("names are at most 253 bytes");
                out.push(len);
                out.extend_from_slice(name.0.as_bytes());
            }
        }
    }

    /// The bytes [`emit`](Self::emit) appends.
    pub(super) fn buffer_len(&self) -> usize {
        match self {
            Host::Ip(IpAddr::V4(_)) => 1 + 4,
            Host::Ip(IpAddr::V6(_)) => 1 + 16,
            Host::Domain(name) => 2 + name.0.len(),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
            Host::Domain(name) => write!(f, "{name}"),
        }
    }
}

/// Where a tunnelled TCP connection goes: a host and a TCP port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    /// The host.
    pub host: Host,
    /// The TCP port.
    pub port: u16,
}

impl Destination {
    /// The destination of a socket address.
    pub fn from_socket_addr(addr: SocketAddr) -> Destination {
        Destination {
            host: Host::Ip(addr.ip()),
            port: addr.port(),
        }
    }

    /// Appends the host, then the port in big-endian order.
    pub(super) fn emit(&self, out: &mut Vec<u8>) {
        self.host.emit(out);
        out.extend_from_slice(&self.port.to_be_bytes());
    }

    /// The bytes [`emit`](Self::emit) appends.
    pub(super) fn buffer_len(&self) -> usize {
        self.host.buffer_len() + 2
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl FromStr for Destination {
    type Err = DestinationError;

    /// `HOST:PORT`, with an IPv6 address in brackets (`[::1]:22`).
    fn from_str(text: &str) -> Result<Destination, DestinationError> {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| DestinationError::NoPort(text.to_owned()))?;
        if host.contains(':') && !host.starts_with('[') {
            return Err(DestinationError::UnbracketedIpv6(text.to_owned()));
        }
        let port = port
            .parse::<u16>()
            .map_err(|_| DestinationError::BadPort(port.to_owned()))?;
        Ok(Destination {
            host: Host::parse(host)?,
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_in_lowercase_without_a_trailing_dot() {
        let name = DomainName::new("Intranet.Example.").unwrap();
        assert_eq!(name.as_str(), "intranet.example");
        assert_eq!(
            DomainName::new("_srv.a-b.c1").unwrap().as_str(),
            "_srv.a-b.c1"
        );
    }

    #[test]
    fn a_name_with_bytes_a_resolver_or_a_log_would_misread_is_refused() {
        for bad in [
            "",
            ".",
            "a..b",
            ".a",
            "a b",
            "a\nb",
            "a/b",
            "ä.example",
            "a:b",
        ] {
            assert!(DomainName::new(bad).is_err(), "{bad:?} was taken");
        }
    }

    #[test]
    fn the_longest_name_is_taken_and_one_byte_more_is_not() {
        let label = "a".repeat(63);
        let longest = [&label[..], &label, &label, &"a".repeat(61)].join(".");
        assert_eq!(longest.len(), MAX_DOMAIN_LEN);
        assert!(DomainName::new(&longest).is_ok());
        assert_eq!(
            DomainName::new(&format!("{longest}a")),
            Err(DestinationError::NameTooLong(254))
        );
        assert!(DomainName::new(&"a".repeat(63)).is_ok());
        assert_eq!(
            DomainName::new(&"a".repeat(64)),
            Err(DestinationError::BadLabel)
        );
    }

    #[test]
    fn destinations_read_as_written() {
        for text in ["10.1.2.3:22", "[::1]:443", "db.internal:5432"] {
            let destination: Destination = text.parse().unwrap();
            assert_eq!(destination.to_string(), text);
        }
        assert!(matches!(
            "::1:22".parse::<Destination>(),
            Err(DestinationError::UnbracketedIpv6(_))
        ));
        assert!(matches!(
            "host".parse::<Destination>(),
            Err(DestinationError::NoPort(_))
        ));
        assert!(matches!(
            "host:65536".parse::<Destination>(),
            Err(DestinationError::BadPort(_))
        ));
    }
}
