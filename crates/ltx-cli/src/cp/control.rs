//! What the two ends of `ltx cp` say to each other: lines over the ssh
//! channel, and the UDP check that opens the data path.
//!
//! The remote end writes lines starting with `ltx-cp 1 ` on its stdout;
//! anything else before `ready` (a login banner, a shell's chatter) is
//! ignored. The local side writes the token, then `go`, on the remote
//! end's stdin, and closes it to stop the remote end.
//!
//! ```text
//! remote -> local   ltx-cp 1 ready PORT PUBLIC_KEY BOUND_IP
//!                   ltx-cp 1 hello FROM        (the first UDP check arrived)
//!                   ltx-cp 1 started           (its ltx recv listens / ltx send runs)
//!                   ltx-cp 1 out LINE          (a line of its ltx send's stdout)
//!                   ltx-cp 1 exit CODE         (its ltx ended with CODE)
//! local -> remote   TOKEN (32 hex digits), later "go"; EOF ends the remote end
//! ```
//!
//! The UDP check: the local side sends HELLO from the socket the data will
//! use to the remote end's port until an ACK comes back. Both carry the
//! token, which only travelled over ssh, so a stray or forged datagram
//! proves nothing and is not answered.

use std::fmt;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};

use anyhow::Context;
use ltx::PublicKey;

/// The version of this exchange; both ends must speak the same.
pub(super) const VERSION: u32 = 1;

/// What every line of the remote end starts with.
const PREFIX: &str = "ltx-cp";

/// A line from the remote end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Line {
    /// It is bound to `port` (on `bound`, or every address if unspecified)
    /// and its key pair's public half is `key`.
    Ready {
        /// The UDP port.
        port: u16,
        /// Its one-time public key.
        key: PublicKey,
        /// The address it bound.
        bound: IpAddr,
    },
    /// The first UDP check arrived, from this address.
    Hello(SocketAddr),
    /// Its ltx child runs.
    Started,
    /// A line of its child's stdout.
    Out(String),
    /// Its child ended with this exit code.
    Exit(u8),
    /// An `ltx-cp` line of another version.
    Version(String),
    /// Anything else.
    Other(String),
}

impl Line {
    /// Reads one line (without its newline).
    pub(super) fn parse(text: &str) -> Line {
        let other = || Line::Other(text.to_owned());
        let Some(rest) = text.strip_prefix(PREFIX).and_then(|r| r.strip_prefix(' ')) else {
            return other();
        };
        let (version, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        if version != VERSION.to_string() {
            return Line::Version(version.to_owned());
        }
        let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        match kind {
            "out" => Line::Out(rest.to_owned()),
            "started" => Line::Started,
            "exit" => rest.parse().map(Line::Exit).unwrap_or_else(|_| other()),
            "hello" => rest.parse().map(Line::Hello).unwrap_or_else(|_| other()),
            "ready" => {
                let words: Vec<&str> = rest.split(' ').collect();
                match words[..] {
                    [port, key, bound] => match (port.parse(), key.parse(), bound.parse()) {
                        (Ok(port), Ok(key), Ok(bound)) => Line::Ready { port, key, bound },
                        _ => other(),
                    },
                    _ => other(),
                }
            }
            _ => other(),
        }
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX} {VERSION} ")?;
        match self {
            Line::Ready { port, key, bound } => write!(f, "ready {port} {key} {bound}"),
            Line::Hello(from) => write!(f, "hello {from}"),
            Line::Started => f.write_str("started"),
            Line::Out(text) => write!(f, "out {text}"),
            Line::Exit(code) => write!(f, "exit {code}"),
            Line::Version(v) => write!(f, "version {v}"),
            Line::Other(text) => f.write_str(text),
        }
    }
}

/// The secret of one copy: it marks the UDP check's datagrams as ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Token([u8; 16]);

impl Token {
    /// A token from the system's random source.
    pub(super) fn random() -> anyhow::Result<Token> {
        let mut bytes = [0; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .context("reading /dev/urandom")?;
        Ok(Token(bytes))
    }

    /// Reads the 32 hex digits that [`Display`](fmt::Display) writes.
    pub(super) fn parse(text: &str) -> Option<Token> {
        let text = text.trim();
        if text.len() != 32 || !text.is_ascii() {
            return None;
        }
        let mut bytes = [0; 16];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Token(bytes))
    }

    /// The check's datagram of this kind.
    pub(super) fn datagram(&self, kind: Check) -> [u8; CHECK_LEN] {
        let mut out = [0; CHECK_LEN];
        out[..MAGIC.len()].copy_from_slice(MAGIC);
        out[MAGIC.len()] = kind as u8;
        out[MAGIC.len() + 1..].copy_from_slice(&self.0);
        out
    }

    /// Whether `bytes` is this token's check datagram of this kind.
    pub(super) fn is(&self, kind: Check, bytes: &[u8]) -> bool {
        bytes == self.datagram(kind)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The UDP check's two datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    /// Local to remote: is this port open?
    Hello = 0x01,
    /// Remote to local: it is, and answers reach you.
    Ack = 0x02,
}

/// What the check's datagrams start with.
const MAGIC: &[u8; 6] = b"LTXcp1";

/// A check datagram's length: the magic, the kind, the token.
const CHECK_LEN: usize = 6 + 1 + 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_reads_back_as_written() {
        let key: PublicKey = "ab".repeat(32).parse().unwrap();
        let lines = [
            Line::Ready {
                port: 7000,
                key,
                bound: "0.0.0.0".parse().unwrap(),
            },
            Line::Ready {
                port: 1,
                key,
                bound: "2001:db8::1".parse().unwrap(),
            },
            Line::Hello("[2001:db8::2]:4000".parse().unwrap()),
            Line::Started,
            Line::Out("{\"files\": [1, 2]} and more".into()),
            Line::Out(String::new()),
            Line::Exit(7),
        ];
        for line in lines {
            assert_eq!(Line::parse(&line.to_string()), line);
        }
    }

    #[test]
    fn banners_and_other_versions_are_told_apart() {
        assert_eq!(
            Line::parse("Welcome to box"),
            Line::Other("Welcome to box".into())
        );
        assert_eq!(
            Line::parse("ltx-cp 2 ready 1 2 3"),
            Line::Version("2".into())
        );
        assert!(matches!(
            Line::parse("ltx-cp 1 ready 70000 x y"),
            Line::Other(_)
        ));
    }

    #[test]
    fn a_token_marks_only_its_own_checks() {
        let token = Token::random().unwrap();
        let other = Token::random().unwrap();
        assert_eq!(Token::parse(&token.to_string()), Some(token));
        assert_eq!(Token::parse("xyz"), None);
        let hello = token.datagram(Check::Hello);
        assert!(token.is(Check::Hello, &hello));
        assert!(!token.is(Check::Ack, &hello));
        assert!(!other.is(Check::Hello, &hello));
        assert!(!token.is(Check::Hello, &hello[..hello.len() - 1]));
    }
}
