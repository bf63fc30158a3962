//! The file protocol's messages on the wire: the one place where the peer's
//! bytes become typed values.
//!
//! All integers are big-endian. The sender opens the stream with a preamble,
//! then both sides exchange frames:
//!
//! ```text
//! preamble  magic "LTXF" (0x4C 0x54 0x58 0x46), version u8 (0x01)
//! frame     tag u8, body length u16 (at most 0x0800), body
//! ```
//!
//! | tag  | frame   | direction | body |
//! |------|---------|-----------|------|
//! | 0x01 | OFFER   | → receiver | name length u16 (1..=0x0400), name (UTF-8), size u64, BLAKE3 (32 bytes) |
//! | 0x02 | ACCEPT  | → sender   | resume offset u64, BLAKE3 of the receiver's first `offset` bytes (32 bytes) |
//! | 0x03 | PRESENT | → sender   | empty: the receiver already holds this exact file |
//! | 0x04 | REFUSE  | → sender   | reason u8, text |
//! | 0x05 | START   | → receiver | offset u64 the data starts at: the offered one or 0 |
//! | 0x06 | OUTCOME | → sender   | status u8: 0x00 stored; 0x01 hash mismatch + BLAKE3 of what arrived (32 bytes); 0x02 failed + text |
//!
//! A text is a length u16 (at most 0x0400) and that many bytes of UTF-8.
//! After START come exactly `size - offset` bytes of file data, unframed: the
//! size is known, so framing would only cost bytes. Every frame's body must
//! be consumed exactly; a short or long body is an error.

use std::fmt;
use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::name::{NameError, TransferName, MAX_NAME_LEN};

/// The first bytes of every file stream.
pub const MAGIC: [u8; 4] = *b"LTXF";

/// The protocol version this code speaks.
pub const VERSION: u8 = 0x01;

/// The longest frame body; longer ones are refused before any allocation.
pub const MAX_BODY_LEN: usize = 0x0800;

/// The longest human-readable text in a frame, in bytes.
pub const MAX_TEXT_LEN: usize = 0x0400;

/// The frame tags.
mod tag {
    pub(super) const OFFER: u8 = 0x01;
    pub(super) const ACCEPT: u8 = 0x02;
    pub(super) const PRESENT: u8 = 0x03;
    pub(super) const REFUSE: u8 = 0x04;
    pub(super) const START: u8 = 0x05;
    pub(super) const OUTCOME: u8 = 0x06;
}

/// The status codes of an OUTCOME frame.
mod status {
    pub(super) const STORED: u8 = 0x00;
    pub(super) const HASH_MISMATCH: u8 = 0x01;
    pub(super) const FAILED: u8 = 0x02;
}

/// A BLAKE3 digest on the wire.
pub type Hash = blake3::Hash;

/// A human-readable text of at most [`MAX_TEXT_LEN`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    /// A text, cut at a character boundary if it is too long to send.
    pub(crate) fn new(text: impl Into<String>) -> Self {
        let mut text = text.into();
        if text.len() > MAX_TEXT_LEN {
            let mut end = MAX_TEXT_LEN;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        Self(text)
    }

    /// The text.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The sender's description of the file it wants to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Offer {
    /// Where the file goes, relative to the receiver's directory.
    pub(crate) name: TransferName,
    /// The file's length in bytes.
    pub(crate) size: u64,
    /// The BLAKE3 of the whole file.
    pub(crate) hash: Hash,
}

/// Why a receiver refused an offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseReason {
    /// A file of that name exists and overwriting was not asked for.
    Exists,
    /// The name is not acceptable.
    BadName,
    /// Not enough free space for the bytes still needed.
    NoSpace,
    /// Another local I/O error.
    Io,
    /// The sender's protocol version is not spoken here.
    Version,
    /// The sender's offer was malformed.
    Malformed,
}

impl RefuseReason {
    fn code(self) -> u8 {
        match self {
            Self::Exists => 0x01,
            Self::BadName => 0x02,
            Self::NoSpace => 0x03,
            Self::Io => 0x04,
            Self::Version => 0x05,
            Self::Malformed => 0x06,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x01 => Self::Exists,
            0x02 => Self::BadName,
            0x03 => Self::NoSpace,
            0x04 => Self::Io,
            0x05 => Self::Version,
            0x06 => Self::Malformed,
            _ => return None,
        })
    }
}

impl fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Exists => "exists",
            Self::BadName => "bad name",
            Self::NoSpace => "no space",
            Self::Io => "i/o error",
            Self::Version => "unsupported version",
            Self::Malformed => "malformed offer",
        })
    }
}

/// What became of the data, as the receiver reports it at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Verified, synced and renamed to its final name.
    Stored,
    /// The data arrived but hashes to something else; it was deleted.
    HashMismatch {
        /// The BLAKE3 of what arrived.
        actual: Hash,
    },
    /// The receiver could not store the data.
    Failed {
        /// What went wrong.
        message: Text,
    },
}

/// One frame, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// Sender: the file it wants to send.
    Offer(Offer),
    /// Receiver: send from `offset`, if my first `offset` bytes hash to
    /// `prefix_hash` on your side too.
    Accept {
        /// Bytes the receiver already holds.
        offset: u64,
        /// Their BLAKE3.
        prefix_hash: Hash,
    },
    /// Receiver: this exact file is already stored; nothing to send.
    Present,
    /// Receiver: no.
    Refuse {
        /// The reason as a code.
        reason: RefuseReason,
        /// The reason in words.
        message: Text,
    },
    /// Sender: the data that follows starts at `offset`.
    Start {
        /// The offered resume offset, or 0 to start over.
        offset: u64,
    },
    /// Receiver: the end of the transfer.
    Outcome(Outcome),
}

impl Message {
    /// The frame's name, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Offer(_) => "OFFER",
            Self::Accept { .. } => "ACCEPT",
            Self::Present => "PRESENT",
            Self::Refuse { .. } => "REFUSE",
            Self::Start { .. } => "START",
            Self::Outcome(_) => "OUTCOME",
        }
    }

    /// Appends the frame to `out`.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        // The length is patched in once the body is written.
        out.extend_from_slice(&[self.tag(), 0, 0]);
        match self {
            Self::Offer(offer) => {
                let name = offer.name.as_str().as_bytes();
                put_len(out, name.len());
                out.extend_from_slice(name);
                out.extend_from_slice(&offer.size.to_be_bytes());
                out.extend_from_slice(offer.hash.as_bytes());
            }
            Self::Accept {
                offset,
                prefix_hash,
            } => {
                out.extend_from_slice(&offset.to_be_bytes());
                out.extend_from_slice(prefix_hash.as_bytes());
            }
            Self::Present => {}
            Self::Refuse { reason, message } => {
                out.push(reason.code());
                put_text(out, message);
            }
            Self::Start { offset } => out.extend_from_slice(&offset.to_be_bytes()),
            Self::Outcome(Outcome::Stored) => out.push(status::STORED),
            Self::Outcome(Outcome::HashMismatch { actual }) => {
                out.push(status::HASH_MISMATCH);
                out.extend_from_slice(actual.as_bytes());
            }
            Self::Outcome(Outcome::Failed { message }) => {
                out.push(status::FAILED);
                put_text(out, message);
            }
        }
        let body_len = out.len() - start - 3;
        // Names and texts are bounded by their types, so every body fits.
        debug_assert!(body_len <= MAX_BODY_LEN);
        out[start + 1..start + 3].copy_from_slice(&(body_len as u16).to_be_bytes());
    }

    /// Decodes one frame's body.
    pub(crate) fn parse(tag: u8, body: &[u8]) -> Result<Self, ProtocolError> {
        let mut body = Body::new(body, tag);
        let message = match tag {
            tag::OFFER => {
                let len = usize::from(body.u16()?);
                let name = body.bytes(len)?;
                let size = body.u64()?;
                let hash = body.hash()?;
                let name =
                    TransferName::from_bytes(name).map_err(|error| ProtocolError::BadName {
                        shown: String::from_utf8_lossy(&name[..name.len().min(MAX_NAME_LEN)])
                            .into_owned(),
                        error,
                    })?;
                Self::Offer(Offer { name, size, hash })
            }
            tag::ACCEPT => Self::Accept {
                offset: body.u64()?,
                prefix_hash: body.hash()?,
            },
            tag::PRESENT => Self::Present,
            tag::REFUSE => {
                let code = body.u8()?;
                let reason =
                    RefuseReason::from_code(code).ok_or(ProtocolError::UnknownReason(code))?;
                Self::Refuse {
                    reason,
                    message: body.text()?,
                }
            }
            tag::START => Self::Start {
                offset: body.u64()?,
            },
            tag::OUTCOME => Self::Outcome(match body.u8()? {
                status::STORED => Outcome::Stored,
                status::HASH_MISMATCH => Outcome::HashMismatch {
                    actual: body.hash()?,
                },
                status::FAILED => Outcome::Failed {
                    message: body.text()?,
                },
                other => return Err(ProtocolError::UnknownStatus(other)),
            }),
            other => return Err(ProtocolError::UnknownFrame(other)),
        };
        body.finish()?;
        Ok(message)
    }

    fn tag(&self) -> u8 {
        match self {
            Self::Offer(_) => tag::OFFER,
            Self::Accept { .. } => tag::ACCEPT,
            Self::Present => tag::PRESENT,
            Self::Refuse { .. } => tag::REFUSE,
            Self::Start { .. } => tag::START,
            Self::Outcome(_) => tag::OUTCOME,
        }
    }
}

/// The peer broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The stream does not start with [`MAGIC`].
    #[error("not an ltx file stream (magic {0:02x?})")]
    BadMagic([u8; 4]),
    /// The sender speaks another version.
    #[error("protocol version {0} is not supported (this side speaks {VERSION})")]
    UnsupportedVersion(u8),
    /// A frame tag this version does not know.
    #[error("unknown frame 0x{0:02x}")]
    UnknownFrame(u8),
    /// A frame body longer than [`MAX_BODY_LEN`].
    #[error("frame 0x{tag:02x} announces {len} bytes; the limit is {MAX_BODY_LEN}")]
    FrameTooLong {
        /// The frame's tag.
        tag: u8,
        /// The announced body length.
        len: usize,
    },
    /// A body ends before its fields do.
    #[error("frame 0x{0:02x} is truncated")]
    Truncated(u8),
    /// A body goes on after its fields.
    #[error("frame 0x{tag:02x} has {extra} bytes after its fields")]
    TrailingBytes {
        /// The frame's tag.
        tag: u8,
        /// How many bytes were left.
        extra: usize,
    },
    /// A text longer than [`MAX_TEXT_LEN`].
    #[error("a text of {0} bytes; the limit is {MAX_TEXT_LEN}")]
    TextTooLong(usize),
    /// A text that is not UTF-8.
    #[error("a text that is not UTF-8")]
    TextNotUtf8,
    /// An offered name that breaks the naming rules.
    #[error("bad name {shown:?}: {error}")]
    BadName {
        /// The name as far as it can be shown.
        shown: String,
        /// The rule it breaks.
        error: NameError,
    },
    /// A refusal reason this version does not know.
    #[error("unknown refusal reason 0x{0:02x}")]
    UnknownReason(u8),
    /// An outcome status this version does not know.
    #[error("unknown outcome status 0x{0:02x}")]
    UnknownStatus(u8),
    /// A well-formed frame at the wrong moment.
    #[error("expected {expected}, got {got}")]
    Unexpected {
        /// What the protocol allows here.
        expected: &'static str,
        /// What arrived.
        got: &'static str,
    },
    /// The receiver offered to resume past the end of the file.
    #[error("the receiver offered to resume at byte {offset} of a {size}-byte file")]
    OffsetBeyondSize {
        /// The offered offset.
        offset: u64,
        /// The file's size.
        size: u64,
    },
    /// The sender started at an offset that was not offered.
    #[error("the sender started at byte {got}; the offer was {offered} or 0")]
    BadStart {
        /// What the receiver offered.
        offered: u64,
        /// What the sender asked for.
        got: u64,
    },
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The stream ended or failed.
    #[error(transparent)]
    Closed(io::Error),
    /// The bytes do not make a valid frame.
    #[error(transparent)]
    Malformed(#[from] ProtocolError),
}

/// The bytes a sender opens its stream with.
pub(crate) fn preamble() -> [u8; 5] {
    let [a, b, c, d] = MAGIC;
    [a, b, c, d, VERSION]
}

/// Reads and checks the sender's preamble.
pub(crate) async fn read_preamble<R: AsyncRead + Unpin>(reader: &mut R) -> Result<(), ReadError> {
    let mut bytes = [0; 5];
    reader
        .read_exact(&mut bytes)
        .await
        .map_err(ReadError::Closed)?;
    let [a, b, c, d, version] = bytes;
    if [a, b, c, d] != MAGIC {
        return Err(ProtocolError::BadMagic([a, b, c, d]).into());
    }
    if version != VERSION {
        return Err(ProtocolError::UnsupportedVersion(version).into());
    }
    Ok(())
}

/// Reads one frame.
pub(crate) async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Message, ReadError> {
    let mut header = [0; 3];
    reader
        .read_exact(&mut header)
        .await
        .map_err(ReadError::Closed)?;
    let [tag, hi, lo] = header;
    let len = usize::from(u16::from_be_bytes([hi, lo]));
    if len > MAX_BODY_LEN {
        return Err(ProtocolError::FrameTooLong { tag, len }.into());
    }
    let mut body = [0; MAX_BODY_LEN];
    let body = &mut body[..len];
    reader.read_exact(body).await.map_err(ReadError::Closed)?;
    Ok(Message::parse(tag, body)?)
}

/// Writes frames (after `prefix`, if any) and flushes them.
pub(crate) async fn write_messages<W: AsyncWrite + Unpin>(
    writer: &mut W,
    prefix: &[u8],
    messages: &[Message],
) -> io::Result<()> {
    let mut out = prefix.to_vec();
    for message in messages {
        message.emit(&mut out);
    }
    writer.write_all(&out).await?;
    writer.flush().await
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    // Callers pass lengths bounded by MAX_NAME_LEN or MAX_TEXT_LEN.
    out.extend_from_slice(&(len as u16).to_be_bytes());
}

fn put_text(out: &mut Vec<u8>, text: &Text) {
    put_len(out, text.0.len());
    out.extend_from_slice(text.0.as_bytes());
}

/// A cursor over a frame body whose reads fail instead of panicking.
struct Body<'a> {
    rest: &'a [u8],
    tag: u8,
}

impl<'a> Body<'a> {
    fn new(rest: &'a [u8], tag: u8) -> Self {
        Self { rest, tag }
    }

    fn bytes(&mut self, len: usize) -> Result<&'a [u8], ProtocolError> {
        if self.rest.len() < len {
            return Err(ProtocolError::Truncated(self.tag));
        }
        let (taken, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ProtocolError> {
        let mut array = [0; N];
        array.copy_from_slice(self.bytes(N)?);
        Ok(array)
    }

    fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, ProtocolError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, ProtocolError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn hash(&mut self) -> Result<Hash, ProtocolError> {
        Ok(Hash::from_bytes(self.array()?))
    }

    fn text(&mut self) -> Result<Text, ProtocolError> {
        let len = usize::from(self.u16()?);
        if len > MAX_TEXT_LEN {
            return Err(ProtocolError::TextTooLong(len));
        }
        let bytes = self.bytes(len)?;
        let text = std::str::from_utf8(bytes).map_err(|_| ProtocolError::TextNotUtf8)?;
        Ok(Text(text.to_owned()))
    }

    fn finish(self) -> Result<(), ProtocolError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(ProtocolError::TrailingBytes {
                tag: self.tag,
                extra: self.rest.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn hash(byte: u8) -> Hash {
        Hash::from_bytes([byte; 32])
    }

    fn every_message() -> Vec<Message> {
        vec![
            Message::Offer(Offer {
                name: TransferName::parse("dir/photo.jpg").unwrap(),
                size: 0x0102_0304_0506_0708,
                hash: hash(0xab),
            }),
            Message::Accept {
                offset: 7,
                prefix_hash: hash(1),
            },
            Message::Present,
            Message::Refuse {
                reason: RefuseReason::NoSpace,
                message: Text::new("not enough space: need 10 bytes, have 3 bytes"),
            },
            Message::Start { offset: u64::MAX },
            Message::Outcome(Outcome::Stored),
            Message::Outcome(Outcome::HashMismatch { actual: hash(2) }),
            Message::Outcome(Outcome::Failed {
                message: Text::new("écriture: plus de place"),
            }),
        ]
    }

    fn encode(message: &Message) -> Vec<u8> {
        let mut out = Vec::new();
        message.emit(&mut out);
        out
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn every_message_survives_a_round_trip() {
        let rt = runtime();
        for message in every_message() {
            let bytes = encode(&message);
            let decoded = rt.block_on(read_message(&mut &bytes[..])).unwrap();
            assert_eq!(decoded, message);
        }
    }

    /// The offer's layout, byte for byte, so that a change to it is a
    /// deliberate change of the protocol.
    #[test]
    fn offer_layout() {
        let bytes = encode(&Message::Offer(Offer {
            name: TransferName::parse("ab").unwrap(),
            size: 0x0102,
            hash: hash(0xee),
        }));
        let mut expected = vec![0x01, 0x00, 2 + 2 + 8 + 32, 0x00, 0x02, b'a', b'b'];
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x01, 0x02]);
        expected.extend_from_slice(&[0xee; 32]);
        assert_eq!(bytes, expected);
        assert_eq!(preamble(), [0x4c, 0x54, 0x58, 0x46, 0x01]);
    }

    /// Every proper prefix of every frame is an error, never a panic and
    /// never a different message.
    #[test]
    fn truncated_frames_are_errors() {
        let rt = runtime();
        for message in every_message() {
            let bytes = encode(&message);
            for cut in 0..bytes.len() {
                let result = rt.block_on(read_message(&mut &bytes[..cut]));
                assert!(
                    matches!(result, Err(ReadError::Closed(_))),
                    "{} cut at {cut}: {result:?}",
                    message.kind()
                );
                // The same bytes presented as a complete (shorter) body.
                if cut >= 3 {
                    assert!(Message::parse(bytes[0], &bytes[3..cut]).is_err());
                }
            }
        }
    }

    #[test]
    fn malformed_frames_say_what_is_wrong() {
        let rt = runtime();
        let read = |bytes: &[u8]| match rt.block_on(read_message(&mut &bytes[..])) {
            Err(ReadError::Malformed(e)) => e,
            other => panic!("{bytes:02x?}: {other:?}"),
        };
        assert_eq!(read(&[0x7f, 0, 0]), ProtocolError::UnknownFrame(0x7f));
        assert_eq!(
            read(&[0x01, 0x08, 0x01]),
            ProtocolError::FrameTooLong {
                tag: 0x01,
                len: 0x0801
            }
        );
        assert_eq!(
            read(&[0x03, 0, 1, 0]),
            ProtocolError::TrailingBytes {
                tag: 0x03,
                extra: 1
            }
        );
        assert_eq!(read(&[0x06, 0, 1, 0x09]), ProtocolError::UnknownStatus(9));
        assert_eq!(
            read(&[0x04, 0, 3, 0x99, 0, 0]),
            ProtocolError::UnknownReason(0x99)
        );
        assert_eq!(
            read(&[0x04, 0, 5, 0x01, 0, 2, 0xff, 0xfe]),
            ProtocolError::TextNotUtf8
        );
        assert_eq!(
            read(&[0x04, 0, 3, 0x01, 0x04, 0x01]),
            ProtocolError::TextTooLong(0x0401)
        );
        // An offer whose name length runs past the body.
        assert_eq!(
            read(&[0x01, 0, 4, 0x00, 0x09, b'a', b'b']),
            ProtocolError::Truncated(0x01)
        );
        let mut bad_name = vec![0x01, 0, 2 + 2 + 8 + 32, 0, 2, b'.', b'.'];
        bad_name.extend_from_slice(&[0; 40]);
        assert!(matches!(
            read(&bad_name),
            ProtocolError::BadName {
                error: NameError::DotComponent,
                ..
            }
        ));
    }

    #[test]
    fn preamble_is_checked() {
        let rt = runtime();
        let read = |bytes: &[u8]| rt.block_on(read_preamble(&mut &bytes[..]));
        assert!(read(&preamble()).is_ok());
        assert!(matches!(
            read(b"GET /"),
            Err(ReadError::Malformed(ProtocolError::BadMagic(_)))
        ));
        assert!(matches!(
            read(b"LTXF\x02"),
            Err(ReadError::Malformed(ProtocolError::UnsupportedVersion(2)))
        ));
        assert!(matches!(read(b"LTX"), Err(ReadError::Closed(_))));
    }

    #[test]
    fn long_texts_are_cut_at_a_character_boundary() {
        let text = Text::new("é".repeat(MAX_TEXT_LEN));
        assert_eq!(text.as_str().len(), MAX_TEXT_LEN);
        let text = Text::new(format!("a{}", "é".repeat(MAX_TEXT_LEN)));
        assert_eq!(text.as_str().len(), MAX_TEXT_LEN - 1);
        let message = Message::Refuse {
            reason: RefuseReason::Io,
            message: text,
        };
        let bytes = encode(&message);
        assert_eq!(Message::parse(bytes[0], &bytes[3..]), Ok(message));
    }

    proptest! {
        /// Any bytes at all decode to a message or an error.
        #[test]
        fn any_body_parses_or_fails(tag in 0u8..8, body in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Message::parse(tag, &body);
        }

        /// Any stream decodes to a message or an error, and a message that
        /// decodes re-encodes to the bytes it came from.
        #[test]
        fn any_stream_reads_or_fails(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let rt = runtime();
            let mut rest = &bytes[..];
            if let Ok(message) = rt.block_on(read_message(&mut rest)) {
                let used = bytes.len() - rest.len();
                prop_assert_eq!(encode(&message), bytes[..used].to_vec());
            }
        }

        /// Mutating one byte of a valid frame never panics.
        #[test]
        fn mutated_frames_never_panic(which in 0usize..8, at in any::<usize>(), byte in any::<u8>()) {
            let mut bytes = encode(&every_message()[which]);
            let at = at % bytes.len();
            bytes[at] = byte;
            let rt = runtime();
            let _ = rt.block_on(read_message(&mut &bytes[..]));
        }
    }
}
