//! The SOCKS5 messages (RFC 1928) a tunnel client's SOCKS front end reads
//! and answers: the greeting and the method chosen, then the request and
//! the reply. Only CONNECT without authentication is served; the parsers
//! read every command and method so that the answer can say what is not
//! supported.
//!
//! ```text
//! Greeting:   0x05 | NMETHODS (0..=255) | METHODS
//! Choice:     0x05 | METHOD (0x00 none, 0xff none acceptable)
//! Request:    0x05 | CMD (0x01 CONNECT) | RSV | ATYP | ADDR | PORT (big-endian)
//! Reply:      0x05 | REP | 0x00 | ATYP | BND.ADDR | BND.PORT
//! Username/password (RFC 1929), after the choice 0x02:
//!   Request:  0x01 | ULEN (1..=255) | UNAME | PLEN (1..=255) | PASSWD
//!   Status:   0x01 | STATUS (0x00 success, anything else failure)
//! ```
//!
//! The address (ATYP, ADDR) has the layout of the open request's.

use std::net::SocketAddr;

use super::destination::Destination;
use super::error::{AddressError, DestinationError};
use super::{parse_destination, Parsed};

/// The protocol version byte of every SOCKS5 message.
pub const SOCKS_VERSION: u8 = 0x05;

/// The longest greeting: the version, the count and 255 methods.
pub const MAX_GREETING_LEN: usize = 2 + 255;

/// The longest reply this end reads: version, code, reserved byte, an
/// IPv6 address with its type, and a port.
pub const MAX_REPLY_LEN: usize = 3 + 1 + 16 + 2;

/// The longest request: version, command, reserved byte, the longest name
/// with its type and length bytes, and a port.
pub const MAX_REQUEST_LEN: usize = 3 + 2 + super::MAX_DOMAIN_LEN + 2;

/// Why bytes are not the SOCKS5 message expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SocksError {
    /// Not SOCKS version 5 (a SOCKS4 client, or not SOCKS at all).
    #[error("not SOCKS5: version byte {0:#04x}")]
    Version(u8),
    /// A command byte RFC 1928 does not define.
    #[error("unknown command {0:#04x}")]
    Command(u8),
    /// An address type other than IPv4, a name or IPv6.
    #[error("unknown address type {0:#04x}")]
    AddressType(u8),
    /// A name that is not a domain name.
    #[error("bad name: {0}")]
    Destination(#[from] DestinationError),
    /// A reply code RFC 1928 does not define.
    #[error("unknown reply code {0:#04x}")]
    Reply(u8),
    /// A username/password request of another version than RFC 1929's.
    #[error("not a username/password request: version byte {0:#04x}")]
    AuthVersion(u8),
    /// An empty username or password (RFC 1929 requires 1 to 255 bytes).
    #[error("an empty username or password")]
    EmptyCredential,
}

impl SocksError {
    /// The reply a request with this error gets (a bad greeting gets
    /// none: the connection is closed).
    pub fn reply_code(&self) -> ReplyCode {
        match self {
            SocksError::Command(_) => ReplyCode::CommandNotSupported,
            SocksError::AddressType(_) => ReplyCode::AddressTypeNotSupported,
            SocksError::Version(_)
            | SocksError::Destination(_)
            | SocksError::Reply(_)
            | SocksError::AuthVersion(_)
            | SocksError::EmptyCredential => ReplyCode::GeneralFailure,
        }
    }
}

impl From<AddressError> for SocksError {
    fn from(error: AddressError) -> SocksError {
        match error {
            AddressError::Type(kind) => SocksError::AddressType(kind),
            AddressError::Name(e) => SocksError::Destination(e),
        }
    }
}

/// An authentication method, as a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Method(pub u8);

impl Method {
    /// No authentication.
    pub const NO_AUTHENTICATION: Method = Method(0x00);
    /// Username and password (RFC 1929).
    pub const USERNAME_PASSWORD: Method = Method(0x02);
    /// The server's answer when it accepts none of the methods offered.
    pub const NONE_ACCEPTABLE: Method = Method(0xff);
}

/// The client's first message: the authentication methods it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// The methods, in the client's order (at most 255).
    methods: Vec<Method>,
}

impl Greeting {
    /// A greeting offering `methods` (at most 255 are kept).
    pub fn new(methods: &[Method]) -> Greeting {
        Greeting {
            methods: methods.iter().copied().take(255).collect(),
        }
    }

    /// Whether the client offers `method`.
    pub fn offers(&self, method: Method) -> bool {
        self.methods.contains(&method)
    }

    /// Parses a greeting from the front of `bytes` (see the
    /// [module](super) for the contract).
    pub fn parse(bytes: &[u8]) -> Result<Parsed<Greeting>, SocksError> {
        check_version(bytes)?;
        let Some(&count) = bytes.get(1) else {
            return Ok(Parsed::Incomplete { needed: 2 });
        };
        let end = 2 + usize::from(count);
        let Some(methods) = bytes.get(2..end) else {
            return Ok(Parsed::Incomplete { needed: end });
        };
        Ok(Parsed::Complete {
            value: Greeting {
                methods: methods.iter().map(|&m| Method(m)).collect(),
            },
            len: end,
        })
    }

    /// Appends the greeting to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(SOCKS_VERSION);
        out.push(u8::try_from(self.methods.len()).expect("at most 255 methods"));
        out.extend(self.methods.iter().map(|m| m.0));
    }
}

/// The server's answer to a greeting: the method chosen.
pub fn method_choice(method: Method) -> [u8; 2] {
    [SOCKS_VERSION, method.0]
}

/// The version byte of RFC 1929's username/password messages.
pub const USER_PASS_VERSION: u8 = 0x01;

/// The longest username/password request: version, two lengths, and 255
/// bytes of each.
pub const MAX_USER_PASS_LEN: usize = 3 + 255 + 255;

/// A username/password request (RFC 1929). Its `Debug` form hides the
/// password.
#[derive(Clone, PartialEq, Eq)]
pub struct UserPass {
    /// The username, 1 to 255 bytes.
    pub username: Vec<u8>,
    /// The password, 1 to 255 bytes.
    pub password: Vec<u8>,
}

impl std::fmt::Debug for UserPass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserPass")
            .field("username", &String::from_utf8_lossy(&self.username))
            .field("password", &"…")
            .finish()
    }
}

impl UserPass {
    /// Parses a username/password request from the front of `bytes` (see
    /// the [module](super) for the contract).
    pub fn parse(bytes: &[u8]) -> Result<Parsed<UserPass>, SocksError> {
        match bytes.first() {
            Some(&USER_PASS_VERSION) => {}
            Some(&other) => return Err(SocksError::AuthVersion(other)),
            None => return Ok(Parsed::Incomplete { needed: 2 }),
        }
        let Some(&user_len) = bytes.get(1) else {
            return Ok(Parsed::Incomplete { needed: 2 });
        };
        if user_len == 0 {
            return Err(SocksError::EmptyCredential);
        }
        let user_end = 2 + usize::from(user_len);
        let Some(&pass_len) = bytes.get(user_end) else {
            return Ok(Parsed::Incomplete {
                needed: user_end + 1,
            });
        };
        if pass_len == 0 {
            return Err(SocksError::EmptyCredential);
        }
        let end = user_end + 1 + usize::from(pass_len);
        let Some(password) = bytes.get(user_end + 1..end) else {
            return Ok(Parsed::Incomplete { needed: end });
        };
        Ok(Parsed::Complete {
            value: UserPass {
                username: bytes[2..user_end].to_vec(),
                password: password.to_vec(),
            },
            len: end,
        })
    }

    /// Appends the request to `out`. Each part is cut to 255 bytes.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(USER_PASS_VERSION);
        for part in [&self.username, &self.password] {
            let part = &part[..part.len().min(255)];
            out.push(part.len() as u8);
            out.extend_from_slice(part);
        }
    }
}

/// The answer to a username/password request.
pub fn user_pass_status(accepted: bool) -> [u8; 2] {
    [USER_PASS_VERSION, if accepted { 0x00 } else { 0x01 }]
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// A TCP connection to the destination.
    Connect,
    /// A listening socket for one connection from the destination.
    Bind,
    /// UDP relaying.
    UdpAssociate,
}

impl Command {
    fn from_byte(byte: u8) -> Option<Command> {
        Some(match byte {
            0x01 => Command::Connect,
            0x02 => Command::Bind,
            0x03 => Command::UdpAssociate,
            _ => return None,
        })
    }

    fn to_byte(self) -> u8 {
        match self {
            Command::Connect => 0x01,
            Command::Bind => 0x02,
            Command::UdpAssociate => 0x03,
        }
    }
}

/// The client's request, after the method negotiation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What it asks for.
    pub command: Command,
    /// Where to.
    pub destination: Destination,
}

impl Request {
    /// Parses a request from the front of `bytes` (see the [module](super)
    /// for the contract). The reserved byte is not checked: RFC 1928 asks
    /// for zero, and a client that sends something else still means its
    /// request.
    pub fn parse(bytes: &[u8]) -> Result<Parsed<Request>, SocksError> {
        check_version(bytes)?;
        let Some(&command) = bytes.get(1) else {
            return Ok(Parsed::Incomplete { needed: 5 });
        };
        let command = Command::from_byte(command).ok_or(SocksError::Command(command))?;
        Ok(match parse_destination(bytes, 3)? {
            Parsed::Complete { value, len } => Parsed::Complete {
                value: Request {
                    command,
                    destination: value,
                },
                len,
            },
            Parsed::Incomplete { needed } => Parsed::Incomplete { needed },
        })
    }

    /// Appends the request to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[SOCKS_VERSION, self.command.to_byte(), 0x00]);
        self.destination.emit(out);
    }
}

/// The outcome a reply reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyCode {
    /// Connected.
    Succeeded,
    /// Any other failure.
    GeneralFailure,
    /// The rules (here: the tunnel server's `--permit`) forbid it.
    NotAllowed,
    /// No route to the destination's network.
    NetworkUnreachable,
    /// The destination does not answer, or its name does not resolve.
    HostUnreachable,
    /// The destination refused the connection.
    ConnectionRefused,
    /// The command is not CONNECT.
    CommandNotSupported,
    /// The address type is unknown.
    AddressTypeNotSupported,
}

impl ReplyCode {
    /// The reply byte.
    pub fn to_byte(self) -> u8 {
        match self {
            ReplyCode::Succeeded => 0x00,
            ReplyCode::GeneralFailure => 0x01,
            ReplyCode::NotAllowed => 0x02,
            ReplyCode::NetworkUnreachable => 0x03,
            ReplyCode::HostUnreachable => 0x04,
            ReplyCode::ConnectionRefused => 0x05,
            ReplyCode::CommandNotSupported => 0x07,
            ReplyCode::AddressTypeNotSupported => 0x08,
        }
    }

    /// The reply code of a byte, if this end knows it.
    pub fn from_byte(byte: u8) -> Option<ReplyCode> {
        Some(match byte {
            0x00 => ReplyCode::Succeeded,
            0x01 => ReplyCode::GeneralFailure,
            0x02 => ReplyCode::NotAllowed,
            0x03 => ReplyCode::NetworkUnreachable,
            0x04 => ReplyCode::HostUnreachable,
            0x05 => ReplyCode::ConnectionRefused,
            0x07 => ReplyCode::CommandNotSupported,
            0x08 => ReplyCode::AddressTypeNotSupported,
            _ => return None,
        })
    }
}

/// The server's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The outcome.
    pub code: ReplyCode,
    /// The address the server connected from, for a client that wants it;
    /// a tunnel's front end does not know the far end's and sends
    /// `0.0.0.0:0`, as many proxies do.
    pub bound: SocketAddr,
}

impl Reply {
    /// A reply with `code` and an unspecified bound address.
    pub fn new(code: ReplyCode) -> Reply {
        Reply {
            code,
            bound: SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }

    /// Appends the reply to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[SOCKS_VERSION, self.code.to_byte(), 0x00]);
        Destination::from_socket_addr(self.bound).emit(out);
    }

    /// Parses a reply (for clients and tests); a name as the bound address
    /// is refused, since `bound` holds an address.
    pub fn parse(bytes: &[u8]) -> Result<Parsed<Reply>, SocksError> {
        check_version(bytes)?;
        let Some(&code) = bytes.get(1) else {
            return Ok(Parsed::Incomplete { needed: 10 });
        };
        let code = ReplyCode::from_byte(code).ok_or(SocksError::Reply(code))?;
        if bytes.get(3) == Some(&super::destination::ATYP_DOMAIN) {
            return Err(SocksError::AddressType(super::destination::ATYP_DOMAIN));
        }
        Ok(match parse_destination(bytes, 3)? {
            Parsed::Complete { value, len } => match value.host {
                super::Host::Ip(ip) => Parsed::Complete {
                    value: Reply {
                        code,
                        bound: SocketAddr::new(ip, value.port),
                    },
                    len,
                },
                super::Host::Domain(_) => {
                    return Err(SocksError::AddressType(super::destination::ATYP_DOMAIN))
                }
            },
            Parsed::Incomplete { needed } => Parsed::Incomplete { needed },
        })
    }
}

fn check_version(bytes: &[u8]) -> Result<(), SocksError> {
    match bytes.first() {
        Some(&SOCKS_VERSION) | None => Ok(()),
        Some(&other) => Err(SocksError::Version(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole<T>(parsed: Parsed<T>) -> (T, usize) {
        match parsed {
            Parsed::Complete { value, len } => (value, len),
            Parsed::Incomplete { needed } => panic!("incomplete, needs {needed}"),
        }
    }

    #[test]
    fn a_greeting_says_which_methods_it_offers() {
        let (greeting, len) = whole(Greeting::parse(&[0x05, 0x02, 0x00, 0x02, 0xaa]).unwrap());
        assert_eq!(len, 4);
        assert!(greeting.offers(Method::NO_AUTHENTICATION));
        assert!(greeting.offers(Method::USERNAME_PASSWORD));
        let (none, _) = whole(Greeting::parse(&[0x05, 0x00]).unwrap());
        assert!(!none.offers(Method::NO_AUTHENTICATION));
        assert_eq!(
            Greeting::parse(&[0x05, 0x03, 0x00]).unwrap(),
            Parsed::Incomplete { needed: 5 }
        );
        assert_eq!(Greeting::parse(&[0x04, 0x01]), Err(SocksError::Version(4)));
    }

    #[test]
    fn a_curl_style_request_for_a_name_reads_as_a_connect_to_that_name() {
        // What `curl --socks5-hostname` sends for example.com:80.
        let mut bytes = vec![0x05, 0x01, 0x00, 0x03, 11];
        bytes.extend_from_slice(b"example.com");
        bytes.extend_from_slice(&[0x00, 0x50]);
        let (request, len) = whole(Request::parse(&bytes).unwrap());
        assert_eq!(len, bytes.len());
        assert_eq!(request.command, Command::Connect);
        assert_eq!(request.destination, "example.com:80".parse().unwrap());
        let mut emitted = Vec::new();
        request.emit(&mut emitted);
        assert_eq!(emitted, bytes);
    }

    #[test]
    fn every_prefix_of_a_request_asks_for_more_within_its_length() {
        for text in ["10.0.0.1:22", "[::1]:443", "a.example:80"] {
            let request = Request {
                command: Command::Connect,
                destination: text.parse().unwrap(),
            };
            let mut bytes = Vec::new();
            request.emit(&mut bytes);
            for cut in 0..bytes.len() {
                match Request::parse(&bytes[..cut]).unwrap() {
                    Parsed::Incomplete { needed } => {
                        assert!(
                            needed > cut && needed <= bytes.len(),
                            "{text} at {cut}: {needed}"
                        );
                    }
                    Parsed::Complete { .. } => panic!("complete at {cut}"),
                }
            }
        }
    }

    #[test]
    fn requests_that_cannot_be_served_get_the_reply_that_says_why() {
        let bind = [0x05, 0x02, 0x00, 0x01, 1, 2, 3, 4, 0, 80];
        let (request, _) = whole(Request::parse(&bind).unwrap());
        assert_eq!(request.command, Command::Bind);
        let unknown = Request::parse(&[0x05, 0x09]).unwrap_err();
        assert_eq!(unknown.reply_code(), ReplyCode::CommandNotSupported);
        let address = Request::parse(&[0x05, 0x01, 0x00, 0x02]).unwrap_err();
        assert_eq!(address.reply_code(), ReplyCode::AddressTypeNotSupported);
        let socks4 = Request::parse(&[0x04, 0x01]).unwrap_err();
        assert_eq!(socks4, SocksError::Version(4));
    }

    #[test]
    fn replies_round_trip() {
        for (code, bound) in [
            (ReplyCode::Succeeded, "0.0.0.0:0"),
            (ReplyCode::ConnectionRefused, "[::1]:8080"),
        ] {
            let reply = Reply {
                code,
                bound: bound.parse().unwrap(),
            };
            let mut bytes = Vec::new();
            reply.emit(&mut bytes);
            assert_eq!(bytes[..3], [0x05, code.to_byte(), 0x00]);
            assert_eq!(whole(Reply::parse(&bytes).unwrap()), (reply, bytes.len()));
        }
    }
}
