//! Static keys: who an endpoint is, whom it accepts, and how keys are
//! written as text (lowercase hex, 64 digits for 32 bytes).

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};

use super::noise::SeededRandom;

/// Bytes of a Curve25519 key, public or private, and of a pre-shared key.
pub const KEY_LEN: usize = 32;

/// Why a key (or a list of keys) could not be read from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyParseError {
    /// Not 64 hex digits.
    #[error("a key is 64 hex digits (32 bytes); found {0} characters")]
    Length(usize),
    /// A character that is not a hex digit.
    #[error("a key is written in hex digits; found {0:?}")]
    NotHex(char),
    /// A line of an allow list that is not a key.
    #[error("line {line}: {error}")]
    Line {
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it.
        error: Box<KeyParseError>,
    },
}

fn parse_hex(text: &str) -> Result<[u8; KEY_LEN], KeyParseError> {
    let text = text.trim();
    if text.len() != KEY_LEN * 2 {
        return Err(KeyParseError::Length(text.chars().count()));
    }
    let mut key = [0u8; KEY_LEN];
    let digits = text.as_bytes();
    for (i, byte) in key.iter_mut().enumerate() {
        let digit = |c: u8| {
            (c as char)
                .to_digit(16)
                .map(|d| d as u8)
                .ok_or(KeyParseError::NotHex(c as char))
        };
        *byte = digit(digits[2 * i])? << 4 | digit(digits[2 * i + 1])?;
    }
    Ok(key)
}

fn write_hex(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

/// A Curve25519 public key: how an endpoint is known to its peers.
/// Written and parsed as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey([u8; KEY_LEN]);

impl PublicKey {
    /// The key with these bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> PublicKey {
        PublicKey(bytes)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl FromStr for PublicKey {
    type Err = KeyParseError;

    fn from_str(text: &str) -> Result<PublicKey, KeyParseError> {
        parse_hex(text).map(PublicKey)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(&self.0, f)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

/// An endpoint's static key pair. Its `Debug` shows only the public key.
#[derive(Clone)]
pub struct StaticKeypair {
    private: [u8; KEY_LEN],
    public: PublicKey,
}

impl StaticKeypair {
    /// The key pair whose private key is `private` (clamped by X25519 when
    /// used, so any 32 bytes will do).
    pub fn from_private(private: [u8; KEY_LEN]) -> StaticKeypair {
        let mut dh = DefaultResolver
            .resolve_dh(&DHChoice::Curve25519)
            .expect("the resolver is built with Curve25519");
        dh.set(&private);
        let mut public = [0u8; KEY_LEN];
        public.copy_from_slice(dh.pubkey());
        StaticKeypair {
            private,
            public: PublicKey(public),
        }
    }

    /// A key pair drawn from 32 bytes of entropy, which the caller takes
    /// from a secure source (the core draws no randomness of its own).
    pub fn from_entropy(entropy: [u8; KEY_LEN]) -> StaticKeypair {
        let mut private = [0u8; KEY_LEN];
        SeededRandom::new(entropy).fill(&mut private);
        StaticKeypair::from_private(private)
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        self.public
    }

    /// The private key's bytes, to be written where only the owner reads.
    pub fn private_bytes(&self) -> &[u8; KEY_LEN] {
        &self.private
    }

    /// The private key as 64 hex digits, for a key file.
    pub fn private_hex(&self) -> String {
        let mut out = String::with_capacity(KEY_LEN * 2);
        for b in self.private {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }
}

impl FromStr for StaticKeypair {
    type Err = KeyParseError;

    /// Reads a private key written by [`StaticKeypair::private_hex`].
    fn from_str(text: &str) -> Result<StaticKeypair, KeyParseError> {
        parse_hex(text).map(StaticKeypair::from_private)
    }
}

impl fmt::Debug for StaticKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticKeypair")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

/// A 32-byte secret both ends were given, mixed into the handshake
/// (Noise `IKpsk1`): a peer without it cannot complete a handshake even
/// with the right static keys. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct PresharedKey(pub(crate) [u8; KEY_LEN]);

impl PresharedKey {
    /// The key with these bytes.
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> PresharedKey {
        PresharedKey(bytes)
    }
}

impl FromStr for PresharedKey {
    type Err = KeyParseError;

    fn from_str(text: &str) -> Result<PresharedKey, KeyParseError> {
        parse_hex(text).map(PresharedKey)
    }
}

impl fmt::Debug for PresharedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PresharedKey(..)")
    }
}

/// The client public keys a server accepts.
///
/// As text: one key per line in hex; blank lines and lines starting with
/// `#` are ignored, and so is anything after the key on its line (a name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(HashSet<PublicKey>);

impl AllowList {
    /// Whether `key` is on the list.
    pub fn contains(&self, key: &PublicKey) -> bool {
        self.0.contains(key)
    }

    /// Adds a key.
    pub fn insert(&mut self, key: PublicKey) {
        self.0.insert(key);
    }

    /// How many keys the list holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the list holds no key (a server with it accepts nobody).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<PublicKey> for AllowList {
    fn from_iter<I: IntoIterator<Item = PublicKey>>(keys: I) -> AllowList {
        AllowList(keys.into_iter().collect())
    }
}

impl FromStr for AllowList {
    type Err = KeyParseError;

    fn from_str(text: &str) -> Result<AllowList, KeyParseError> {
        let mut list = AllowList::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let key = line.split_whitespace().next().unwrap_or_default();
            let key = key.parse().map_err(|e| KeyParseError::Line {
                line: i + 1,
                error: Box::new(e),
            })?;
            list.insert(key);
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_keys_read_back_as_written() {
        let pair = StaticKeypair::from_entropy([3; KEY_LEN]);
        let text = pair.public().to_string();
        assert_eq!(text.len(), 64);
        assert_eq!(text.parse::<PublicKey>(), Ok(pair.public()));
        let again: StaticKeypair = pair.private_hex().parse().unwrap();
        assert_eq!(again.public(), pair.public());
        assert!(!format!("{pair:?}").contains(&pair.private_hex()));
    }

    #[test]
    fn the_public_key_is_the_x25519_base_point_multiple() {
        // RFC 7748 §6.1: Alice's private and public keys.
        let private = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
        let public = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
        let pair: StaticKeypair = private.parse().unwrap();
        assert_eq!(pair.public().to_string(), public);
    }

    #[test]
    fn keys_of_63_or_65_digits_or_with_non_hex_are_refused() {
        let ok = "ab".repeat(32);
        assert!(ok.parse::<PublicKey>().is_ok());
        assert_eq!(ok[1..].parse::<PublicKey>(), Err(KeyParseError::Length(63)));
        assert_eq!(
            format!("{ok}0").parse::<PublicKey>(),
            Err(KeyParseError::Length(65))
        );
        let bad = format!("g{}", &ok[1..]);
        assert_eq!(bad.parse::<PublicKey>(), Err(KeyParseError::NotHex('g')));
        let multibyte = format!("é{}", &ok[2..]);
        assert!(multibyte.parse::<PublicKey>().is_err());
    }

    #[test]
    fn allow_lists_skip_comments_and_name_the_bad_line() {
        let a = StaticKeypair::from_entropy([1; KEY_LEN]).public();
        let b = StaticKeypair::from_entropy([2; KEY_LEN]).public();
        let text = format!("# laptops\n{a} alice\n\n  {b}\n");
        let list: AllowList = text.parse().unwrap();
        assert_eq!(list.len(), 2);
        assert!(list.contains(&a) && list.contains(&b));
        let err = format!("{a}\nnot-a-key\n")
            .parse::<AllowList>()
            .unwrap_err();
        assert!(matches!(err, KeyParseError::Line { line: 2, .. }), "{err}");
    }
}
