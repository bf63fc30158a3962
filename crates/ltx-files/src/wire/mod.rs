//! The file protocol's frames on the wire: the one place where the peer's
//! bytes become typed values.
//!
//! All integers are big-endian. The sender opens each stream (a *lane*)
//! with a preamble, then both sides write frames:
//!
//! ```text
//! preamble  magic "LTXF" (0x4C 0x54 0x58 0x46), version u8 (0x02), lane u8, lanes u8
//! frame     tag u8, body length u16, body
//! ```
//!
//! A DATA body is 1 to 0x8000 bytes, any other body at most 0x1000. The
//! tags of the sender's frames are 0x1_, the receiver's 0x2_, and REFUSE
//! keeps its version-1 tag and layout, so that either version can read the
//! other's refusal of its version.
//!
//! | tag  | frame   | from     | body |
//! |------|---------|----------|------|
//! | 0x10 | OFFER   | sender   | name (u16 length, UTF-8), flags u8, size u64, then with flag 0x01: mode u32, mtime seconds i64, mtime nanoseconds u32 |
//! | 0x11 | LINK    | sender   | name, target (u16 length, UTF-8) |
//! | 0x12 | DATA    | sender   | the next bytes of the file |
//! | 0x13 | SEEK    | sender   | offset u64: the data that follows starts there (the length the receiver said it has) |
//! | 0x14 | DIFFERS | sender   | empty: the bytes the receiver has are not this file's |
//! | 0x15 | END     | sender   | BLAKE3 of the whole file (32 bytes) |
//! | 0x16 | CANCEL  | sender   | text: why the sender stops this file |
//! | 0x17 | BYE     | sender   | empty: no more files on this lane |
//! | 0x20 | ACCEPT  | receiver | empty: nothing held, every byte is wanted |
//! | 0x21 | HAVE    | receiver | length u64 and BLAKE3 of the bytes the receiver has that may be the file's first |
//! | 0x04 | REFUSE  | receiver | reason u8, text |
//! | 0x22 | OUTCOME | receiver | status u8: 0x00 stored; 0x01 present; 0x02 hash mismatch + BLAKE3 of what arrived; 0x03 failed + text; 0x04 canceled + bytes kept u64 |
//! | 0x23 | BYE     | receiver | empty: every file of the lane has its last answer |
//!
//! OFFER flags: 0x01 metadata follows; 0x02 the size is unknown (a stream,
//! which cannot resume; the size field is 0). A text is a length u16 (at
//! most 0x0400) and that many bytes of UTF-8. Every frame's body must be
//! consumed exactly; a short or long body is an error.

use std::fmt;
use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::name::{LinkTarget, NameError, TransferName, MAX_NAME_LEN};

mod protocol_error;
pub use protocol_error::ProtocolError;

/// The first bytes of every file stream.
pub const MAGIC: [u8; 4] = *b"LTXF";

/// The protocol version this code speaks.
pub const VERSION: u8 = 0x02;

/// The longest body of a frame other than DATA; longer ones are refused
/// before any allocation.
pub const MAX_BODY_LEN: usize = 0x1000;

/// The longest DATA body: the sender cuts the file into pieces this long.
pub const MAX_DATA_LEN: usize = 0x8000;

/// The longest human-readable text in a frame, in bytes.
pub const MAX_TEXT_LEN: usize = 0x0400;

/// The bytes of a preamble.
pub(crate) const PREAMBLE_LEN: usize = 7;

/// The frame tags.
mod tag {
    pub(super) const OFFER: u8 = 0x10;
    pub(super) const LINK: u8 = 0x11;
    pub(super) const DATA: u8 = 0x12;
    pub(super) const SEEK: u8 = 0x13;
    pub(super) const DIFFERS: u8 = 0x14;
    pub(super) const END: u8 = 0x15;
    pub(super) const CANCEL: u8 = 0x16;
    pub(super) const SENDER_BYE: u8 = 0x17;
    pub(super) const ACCEPT: u8 = 0x20;
    pub(super) const HAVE: u8 = 0x21;
    /// Version 1's tag and layout, kept.
    pub(super) const REFUSE: u8 = 0x04;
    pub(super) const OUTCOME: u8 = 0x22;
    pub(super) const RECEIVER_BYE: u8 = 0x23;
}

/// The flags of an OFFER.
mod flag {
    pub(super) const METADATA: u8 = 0x01;
    pub(super) const UNKNOWN_SIZE: u8 = 0x02;
    pub(super) const ALL: u8 = METADATA | UNKNOWN_SIZE;
}

/// The status codes of an OUTCOME frame.
mod status {
    pub(super) const STORED: u8 = 0x00;
    pub(super) const PRESENT: u8 = 0x01;
    pub(super) const HASH_MISMATCH: u8 = 0x02;
    pub(super) const FAILED: u8 = 0x03;
    pub(super) const CANCELED: u8 = 0x04;
}

/// A BLAKE3 digest on the wire.
pub type Hash = blake3::Hash;

/// A human-readable text of at most [`MAX_TEXT_LEN`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(String);

impl Text {
    /// A text, cut at a character boundary if it is too long to send.
    pub fn new(text: impl Into<String>) -> Self {
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
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which lane of how many a stream is: the receiver knows the transfer is
/// complete once every lane has said goodbye.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    index: u8,
    count: u8,
}

impl Lane {
    /// Lane `index` of `count`; `None` unless `index < count`.
    pub fn new(index: u8, count: u8) -> Option<Self> {
        (index < count).then_some(Self { index, count })
    }

    /// The only lane of a transfer.
    pub fn single() -> Self {
        Self { index: 0, count: 1 }
    }

    /// Its index, from 0.
    pub fn index(self) -> u8 {
        self.index
    }

    /// How many lanes the transfer has.
    pub fn count(self) -> u8 {
        self.count
    }
}

/// A file's permission bits and modification time, as the sender sends
/// them to be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    mode: u32,
    seconds: i64,
    nanos: u32,
}

impl Metadata {
    /// The mode bits that travel: permissions, setuid, setgid and sticky.
    pub const MODE_BITS: u32 = 0o7777;

    /// Metadata from a mode (bits beyond [`MODE_BITS`](Self::MODE_BITS)
    /// are dropped) and a modification time in seconds and nanoseconds
    /// from the Unix epoch (`None` unless `nanos` is below 10^9).
    pub fn new(mode: u32, seconds: i64, nanos: u32) -> Option<Self> {
        (nanos < 1_000_000_000).then_some(Self {
            mode: mode & Self::MODE_BITS,
            seconds,
            nanos,
        })
    }

    /// The mode bits.
    pub fn mode(&self) -> u32 {
        self.mode
    }

    /// The modification time as a point in time, if the platform can
    /// represent it.
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        let epoch = std::time::SystemTime::UNIX_EPOCH;
        let nanos = std::time::Duration::from_nanos(u64::from(self.nanos));
        if self.seconds >= 0 {
            epoch
                .checked_add(std::time::Duration::from_secs(self.seconds.unsigned_abs()))?
                .checked_add(nanos)
        } else {
            epoch
                .checked_sub(std::time::Duration::from_secs(self.seconds.unsigned_abs()))?
                .checked_add(nanos)
        }
    }
}

/// The sender's description of a file it is about to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Offer {
    /// Where the file goes, relative to the receiver's directory.
    pub(crate) name: TransferName,
    /// The file's length in bytes; `None` for a stream, whose length shows
    /// at its end.
    pub(crate) size: Option<u64>,
    /// Mode and modification time to keep, if the sender sends them.
    pub(crate) metadata: Option<Metadata>,
}

/// Why a receiver refused a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefuseReason {
    /// A file of that name exists and overwriting was not asked for.
    Exists,
    /// The name (or a link's target) is not acceptable.
    BadName,
    /// Not enough free space for the bytes still needed, or more than the
    /// receiver takes in one file.
    NoSpace,
    /// Another local I/O error.
    Io,
    /// The sender's protocol version is not spoken here.
    Version,
    /// The sender's frames were malformed.
    Malformed,
    /// Another transfer of the same name holds it.
    Busy,
    /// The receiver takes one file only (it writes to its standard output).
    OneFileOnly,
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
            Self::Busy => 0x07,
            Self::OneFileOnly => 0x08,
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
            0x07 => Self::Busy,
            0x08 => Self::OneFileOnly,
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
            Self::Malformed => "malformed",
            Self::Busy => "busy",
            Self::OneFileOnly => "one file only",
        })
    }
}

/// What became of a file, as the receiver reports it last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Verified, synced and stored under its name.
    Stored,
    /// The receiver already held this exact file and left it as it was.
    Present,
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
    /// The sender canceled the file; the receiver keeps a partial file of
    /// `kept` bytes for a rerun to resume from.
    Canceled {
        /// The bytes the partial file holds.
        kept: u64,
    },
}

/// A frame from the sender. DATA borrows its bytes from the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SenderFrame<'a> {
    /// A file to send; its data follows without waiting.
    Offer(Offer),
    /// A symbolic link to create: `name` pointing at `target`.
    Link {
        /// Where the link goes.
        name: TransferName,
        /// What it points at.
        target: LinkTarget,
    },
    /// The next bytes of the file.
    Data(&'a [u8]),
    /// The data that follows starts at this offset: the sender's first
    /// bytes are the ones the receiver has.
    Seek(u64),
    /// The bytes the receiver has are not this file's.
    Differs,
    /// The end of the file, and the BLAKE3 of all of it.
    End(Hash),
    /// The sender stops this file.
    Cancel(Text),
    /// No more files on this lane.
    Bye,
}

/// A frame from the receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReceiverFrame {
    /// Nothing held: every byte is wanted, from the first.
    Accept,
    /// The receiver has `len` bytes (a partial file, or a file of that
    /// name and size) hashing to `hash`: if they are the file's first, the
    /// sender may skip them.
    Have {
        /// How many bytes.
        len: u64,
        /// Their BLAKE3.
        hash: Hash,
    },
    /// No: the file is not taken.
    Refuse {
        /// The reason as a code.
        reason: RefuseReason,
        /// The reason in words, with what to do.
        message: Text,
    },
    /// What became of the file.
    Outcome(Outcome),
    /// Every file of the lane has its last answer.
    Bye,
}

impl SenderFrame<'_> {
    /// The frame's name, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Offer(_) => "OFFER",
            Self::Link { .. } => "LINK",
            Self::Data(_) => "DATA",
            Self::Seek(_) => "SEEK",
            Self::Differs => "DIFFERS",
            Self::End(_) => "END",
            Self::Cancel(_) => "CANCEL",
            Self::Bye => "BYE",
        }
    }

    fn tag(&self) -> u8 {
        match self {
            Self::Offer(_) => tag::OFFER,
            Self::Link { .. } => tag::LINK,
            Self::Data(_) => tag::DATA,
            Self::Seek(_) => tag::SEEK,
            Self::Differs => tag::DIFFERS,
            Self::End(_) => tag::END,
            Self::Cancel(_) => tag::CANCEL,
            Self::Bye => tag::SENDER_BYE,
        }
    }

    /// Appends the frame to `out`.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = begin(out, self.tag());
        match self {
            Self::Offer(offer) => {
                put_str(out, offer.name.as_str());
                let mut flags = 0;
                if offer.metadata.is_some() {
                    flags |= flag::METADATA;
                }
                if offer.size.is_none() {
                    flags |= flag::UNKNOWN_SIZE;
                }
                out.push(flags);
                out.extend_from_slice(&offer.size.unwrap_or(0).to_be_bytes());
                if let Some(metadata) = &offer.metadata {
                    out.extend_from_slice(&metadata.mode.to_be_bytes());
                    out.extend_from_slice(&metadata.seconds.to_be_bytes());
                    out.extend_from_slice(&metadata.nanos.to_be_bytes());
                }
            }
            Self::Link { name, target } => {
                put_str(out, name.as_str());
                put_str(out, target.as_str());
            }
            Self::Data(bytes) => out.extend_from_slice(bytes),
            Self::Seek(offset) => out.extend_from_slice(&offset.to_be_bytes()),
            Self::Differs | Self::Bye => {}
            Self::End(hash) => out.extend_from_slice(hash.as_bytes()),
            Self::Cancel(text) => put_str(out, &text.0),
        }
        finish(out, start);
    }

    /// Decodes one frame's body.
    fn parse(tag: u8, body: &[u8]) -> Result<SenderFrame<'_>, ProtocolError> {
        if tag == tag::DATA {
            // The length was checked against 1..=MAX_DATA_LEN with the header.
            return Ok(SenderFrame::Data(body));
        }
        let mut body = Body::new(body, tag);
        let frame = match tag {
            tag::OFFER => {
                let name = body.name()?;
                let flags = body.u8()?;
                if flags & !flag::ALL != 0 {
                    return Err(ProtocolError::UnknownFlags(flags));
                }
                let size = body.u64()?;
                let size = if flags & flag::UNKNOWN_SIZE != 0 {
                    if size != 0 {
                        return Err(ProtocolError::SizeOfAStream(size));
                    }
                    None
                } else {
                    Some(size)
                };
                let metadata = if flags & flag::METADATA != 0 {
                    let mode = body.u32()?;
                    let seconds = body.i64()?;
                    let nanos = body.u32()?;
                    if mode & !Metadata::MODE_BITS != 0 {
                        return Err(ProtocolError::BadMode(mode));
                    }
                    Some(Metadata::new(mode, seconds, nanos).ok_or(ProtocolError::BadTime(nanos))?)
                } else {
                    None
                };
                SenderFrame::Offer(Offer {
                    name,
                    size,
                    metadata,
                })
            }
            tag::LINK => {
                let name = body.name()?;
                let len = usize::from(body.u16()?);
                let target = LinkTarget::from_bytes(body.bytes(len)?)
                    .map_err(|error| ProtocolError::BadLinkTarget { error })?;
                SenderFrame::Link { name, target }
            }
            tag::SEEK => SenderFrame::Seek(body.u64()?),
            tag::DIFFERS => SenderFrame::Differs,
            tag::END => SenderFrame::End(body.hash()?),
            tag::CANCEL => SenderFrame::Cancel(body.text()?),
            tag::SENDER_BYE => SenderFrame::Bye,
            other => return Err(ProtocolError::UnknownFrame(other)),
        };
        body.finish()?;
        Ok(frame)
    }
}

impl ReceiverFrame {
    /// The frame's name, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Accept => "ACCEPT",
            Self::Have { .. } => "HAVE",
            Self::Refuse { .. } => "REFUSE",
            Self::Outcome(_) => "OUTCOME",
            Self::Bye => "BYE",
        }
    }

    fn tag(&self) -> u8 {
        match self {
            Self::Accept => tag::ACCEPT,
            Self::Have { .. } => tag::HAVE,
            Self::Refuse { .. } => tag::REFUSE,
            Self::Outcome(_) => tag::OUTCOME,
            Self::Bye => tag::RECEIVER_BYE,
        }
    }

    /// Appends the frame to `out`.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let start = begin(out, self.tag());
        match self {
            Self::Accept | Self::Bye => {}
            Self::Have { len, hash } => {
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(hash.as_bytes());
            }
            Self::Refuse { reason, message } => {
                out.push(reason.code());
                put_str(out, &message.0);
            }
            Self::Outcome(Outcome::Stored) => out.push(status::STORED),
            Self::Outcome(Outcome::Present) => out.push(status::PRESENT),
            Self::Outcome(Outcome::HashMismatch { actual }) => {
                out.push(status::HASH_MISMATCH);
                out.extend_from_slice(actual.as_bytes());
            }
            Self::Outcome(Outcome::Failed { message }) => {
                out.push(status::FAILED);
                put_str(out, &message.0);
            }
            Self::Outcome(Outcome::Canceled { kept }) => {
                out.push(status::CANCELED);
                out.extend_from_slice(&kept.to_be_bytes());
            }
        }
        finish(out, start);
    }

    /// Decodes one frame's body.
    fn parse(tag: u8, body: &[u8]) -> Result<Self, ProtocolError> {
        let mut body = Body::new(body, tag);
        let frame = match tag {
            tag::ACCEPT => Self::Accept,
            tag::HAVE => Self::Have {
                len: body.u64()?,
                hash: body.hash()?,
            },
            tag::REFUSE => {
                let code = body.u8()?;
                let reason =
                    RefuseReason::from_code(code).ok_or(ProtocolError::UnknownReason(code))?;
                Self::Refuse {
                    reason,
                    message: body.text()?,
                }
            }
            tag::OUTCOME => Self::Outcome(match body.u8()? {
                status::STORED => Outcome::Stored,
                status::PRESENT => Outcome::Present,
                status::HASH_MISMATCH => Outcome::HashMismatch {
                    actual: body.hash()?,
                },
                status::FAILED => Outcome::Failed {
                    message: body.text()?,
                },
                status::CANCELED => Outcome::Canceled { kept: body.u64()? },
                other => return Err(ProtocolError::UnknownStatus(other)),
            }),
            tag::RECEIVER_BYE => Self::Bye,
            other => return Err(ProtocolError::UnknownFrame(other)),
        };
        body.finish()?;
        Ok(frame)
    }
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

/// The bytes a sender opens a lane with.
pub(crate) fn preamble(lane: Lane) -> [u8; PREAMBLE_LEN] {
    let [a, b, c, d] = MAGIC;
    [a, b, c, d, VERSION, lane.index, lane.count]
}

/// Reads and checks the sender's preamble. A wrong version is reported
/// before the lane bytes are read, so that a sender of another version,
/// whose preamble may be shorter, hears why.
pub(crate) async fn read_preamble<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Lane, ReadError> {
    let mut head = [0; 5];
    reader
        .read_exact(&mut head)
        .await
        .map_err(ReadError::Closed)?;
    let [a, b, c, d, version] = head;
    if [a, b, c, d] != MAGIC {
        return Err(ProtocolError::BadMagic([a, b, c, d]).into());
    }
    if version != VERSION {
        return Err(ProtocolError::UnsupportedVersion(version).into());
    }
    let mut lane = [0; 2];
    reader
        .read_exact(&mut lane)
        .await
        .map_err(ReadError::Closed)?;
    let [index, count] = lane;
    Lane::new(index, count).ok_or_else(|| ProtocolError::BadLane { index, count }.into())
}

/// A buffer that holds the largest frame body.
pub(crate) type FrameBuf = [u8; MAX_DATA_LEN];

/// A new frame buffer, on the heap.
pub(crate) fn frame_buf() -> Box<FrameBuf> {
    Box::new([0; MAX_DATA_LEN])
}

/// Reads one frame's header and body into `buf`; returns the tag and body.
async fn read_raw<'b, R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &'b mut FrameBuf,
) -> Result<(u8, &'b [u8]), ReadError> {
    let mut header = [0; 3];
    reader
        .read_exact(&mut header)
        .await
        .map_err(ReadError::Closed)?;
    let [tag, hi, lo] = header;
    let len = usize::from(u16::from_be_bytes([hi, lo]));
    let limit = if tag == tag::DATA {
        if len == 0 {
            return Err(ProtocolError::EmptyData.into());
        }
        MAX_DATA_LEN
    } else {
        MAX_BODY_LEN
    };
    if len > limit {
        return Err(ProtocolError::FrameTooLong { tag, len, limit }.into());
    }
    let body = &mut buf[..len];
    reader.read_exact(body).await.map_err(ReadError::Closed)?;
    Ok((tag, body))
}

/// Reads one frame from the sender.
pub(crate) async fn read_sender_frame<'b, R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &'b mut FrameBuf,
) -> Result<SenderFrame<'b>, ReadError> {
    let (tag, body) = read_raw(reader, buf).await?;
    Ok(SenderFrame::parse(tag, body)?)
}

/// Reads one frame from the receiver.
pub(crate) async fn read_receiver_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut FrameBuf,
) -> Result<ReceiverFrame, ReadError> {
    let (tag, body) = read_raw(reader, buf).await?;
    Ok(ReceiverFrame::parse(tag, body)?)
}

/// Writes `bytes` and flushes them.
pub(crate) async fn write_all<W: AsyncWrite + Unpin>(
    writer: &mut W,
    bytes: &[u8],
) -> io::Result<()> {
    writer.write_all(bytes).await?;
    writer.flush().await
}

/// Writes one receiver frame and flushes it.
pub(crate) async fn write_receiver_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    frame: &ReceiverFrame,
) -> io::Result<()> {
    let mut out = Vec::new();
    frame.emit(&mut out);
    write_all(writer, &out).await
}

/// Starts a frame: the tag and room for the length, patched by [`finish`].
fn begin(out: &mut Vec<u8>, tag: u8) -> usize {
    let start = out.len();
    out.extend_from_slice(&[tag, 0, 0]);
    start
}

/// Patches the length of the frame begun at `start`.
fn finish(out: &mut [u8], start: usize) {
    let body_len = out.len() - start - 3;
    // Names, targets and texts are bounded by their types and DATA by its
    // callers, so every body fits its length field.
    debug_assert!(body_len <= MAX_DATA_LEN);
    out[start + 1..start + 3].copy_from_slice(&(body_len as u16).to_be_bytes());
}

fn put_str(out: &mut Vec<u8>, text: &str) {
    // Callers pass strings bounded by MAX_NAME_LEN or MAX_TEXT_LEN.
    out.extend_from_slice(&(text.len() as u16).to_be_bytes());
    out.extend_from_slice(text.as_bytes());
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

    fn u32(&mut self) -> Result<u32, ProtocolError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, ProtocolError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, ProtocolError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    fn hash(&mut self) -> Result<Hash, ProtocolError> {
        Ok(Hash::from_bytes(self.array()?))
    }

    fn name(&mut self) -> Result<TransferName, ProtocolError> {
        let len = usize::from(self.u16()?);
        let name = self.bytes(len)?;
        TransferName::from_bytes(name).map_err(|error| ProtocolError::BadName {
            shown: String::from_utf8_lossy(&name[..name.len().min(MAX_NAME_LEN)]).into_owned(),
            error,
        })
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

    const DATA: &[u8] = b"some bytes of a file";

    fn every_sender_frame() -> Vec<SenderFrame<'static>> {
        vec![
            SenderFrame::Offer(Offer {
                name: TransferName::parse("dir/photo.jpg").unwrap(),
                size: Some(0x0102_0304_0506_0708),
                metadata: Metadata::new(0o4755, -3, 999_999_999),
            }),
            SenderFrame::Offer(Offer {
                name: TransferName::parse("dir.tar").unwrap(),
                size: None,
                metadata: None,
            }),
            SenderFrame::Link {
                name: TransferName::parse("a/link").unwrap(),
                target: LinkTarget::parse("../b/c").unwrap(),
            },
            SenderFrame::Data(DATA),
            SenderFrame::Seek(u64::MAX),
            SenderFrame::Differs,
            SenderFrame::End(hash(0xab)),
            SenderFrame::Cancel(Text::new("interrupted")),
            SenderFrame::Bye,
        ]
    }

    fn every_receiver_frame() -> Vec<ReceiverFrame> {
        vec![
            ReceiverFrame::Accept,
            ReceiverFrame::Have {
                len: 7,
                hash: hash(1),
            },
            ReceiverFrame::Refuse {
                reason: RefuseReason::NoSpace,
                message: Text::new("not enough space: need 10 bytes, have 3 bytes"),
            },
            ReceiverFrame::Outcome(Outcome::Stored),
            ReceiverFrame::Outcome(Outcome::Present),
            ReceiverFrame::Outcome(Outcome::HashMismatch { actual: hash(2) }),
            ReceiverFrame::Outcome(Outcome::Failed {
                message: Text::new("écriture: plus de place"),
            }),
            ReceiverFrame::Outcome(Outcome::Canceled { kept: 1 << 40 }),
            ReceiverFrame::Bye,
        ]
    }

    fn encode_sender(frame: &SenderFrame<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        frame.emit(&mut out);
        out
    }

    fn encode_receiver(frame: &ReceiverFrame) -> Vec<u8> {
        let mut out = Vec::new();
        frame.emit(&mut out);
        out
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn every_frame_survives_a_round_trip() {
        let rt = runtime();
        let mut buf = frame_buf();
        for frame in every_sender_frame() {
            let bytes = encode_sender(&frame);
            let decoded = rt
                .block_on(read_sender_frame(&mut &bytes[..], &mut buf))
                .unwrap();
            assert_eq!(decoded, frame);
        }
        for frame in every_receiver_frame() {
            let bytes = encode_receiver(&frame);
            let decoded = rt
                .block_on(read_receiver_frame(&mut &bytes[..], &mut buf))
                .unwrap();
            assert_eq!(decoded, frame);
        }
    }

    /// The preamble's and the offer's layouts, byte for byte, so that a
    /// change to either is a deliberate change of the protocol.
    #[test]
    fn preamble_and_offer_layout() {
        assert_eq!(
            preamble(Lane::new(1, 4).unwrap()),
            [0x4c, 0x54, 0x58, 0x46, 0x02, 0x01, 0x04]
        );
        let bytes = encode_sender(&SenderFrame::Offer(Offer {
            name: TransferName::parse("ab").unwrap(),
            size: Some(0x0102),
            metadata: Metadata::new(0o644, 0x0a0b, 7),
        }));
        let mut expected = vec![
            0x10,
            0x00,
            2 + 2 + 1 + 8 + 4 + 8 + 4,
            0x00,
            0x02,
            b'a',
            b'b',
        ];
        expected.push(0x01);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x01, 0x02]);
        expected.extend_from_slice(&[0, 0, 0x01, 0xa4]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x0a, 0x0b]);
        expected.extend_from_slice(&[0, 0, 0, 7]);
        assert_eq!(bytes, expected);
    }

    /// A version-1 receiver's refusal of this version reads as a refusal,
    /// with its reason: the tag and layout of REFUSE did not change.
    #[test]
    fn a_version_1_refusal_reads() {
        let text = b"protocol version 2 is not supported (this side speaks 1)";
        let mut bytes = vec![0x04, 0, (3 + text.len()) as u8, 0x05, 0, text.len() as u8];
        bytes.extend_from_slice(text);
        let frame = runtime()
            .block_on(read_receiver_frame(&mut &bytes[..], &mut frame_buf()))
            .unwrap();
        assert_eq!(
            frame,
            ReceiverFrame::Refuse {
                reason: RefuseReason::Version,
                message: Text::new(String::from_utf8_lossy(text))
            }
        );
    }

    /// Every proper prefix of every frame is an error, never a panic and
    /// never a different frame.
    #[test]
    fn truncated_frames_are_errors() {
        let rt = runtime();
        let mut buf = frame_buf();
        let mut all: Vec<(Vec<u8>, bool)> = every_sender_frame()
            .iter()
            .map(|f| (encode_sender(f), true))
            .collect();
        all.extend(
            every_receiver_frame()
                .iter()
                .map(|f| (encode_receiver(f), false)),
        );
        for (bytes, from_sender) in all {
            for cut in 0..bytes.len() {
                let closed = if from_sender {
                    matches!(
                        rt.block_on(read_sender_frame(&mut &bytes[..cut], &mut buf)),
                        Err(ReadError::Closed(_))
                    )
                } else {
                    matches!(
                        rt.block_on(read_receiver_frame(&mut &bytes[..cut], &mut buf)),
                        Err(ReadError::Closed(_))
                    )
                };
                assert!(closed, "{bytes:02x?} cut at {cut}");
                // The same bytes presented as a complete (shorter) body.
                if cut >= 3 && bytes[0] != tag::DATA {
                    if from_sender {
                        assert!(SenderFrame::parse(bytes[0], &bytes[3..cut]).is_err());
                    } else {
                        assert!(ReceiverFrame::parse(bytes[0], &bytes[3..cut]).is_err());
                    }
                }
            }
        }
    }

    #[test]
    fn malformed_frames_say_what_is_wrong() {
        let rt = runtime();
        let mut buf = frame_buf();
        let mut read =
            |bytes: &[u8]| match rt.block_on(read_sender_frame(&mut &bytes[..], &mut buf)) {
                Err(ReadError::Malformed(e)) => e,
                other => panic!("{bytes:02x?}: {other:?}"),
            };
        assert_eq!(read(&[0x7f, 0, 0]), ProtocolError::UnknownFrame(0x7f));
        // A receiver's frame is not a sender's.
        assert_eq!(read(&[0x20, 0, 0]), ProtocolError::UnknownFrame(0x20));
        assert_eq!(
            read(&[0x10, 0x10, 0x01]),
            ProtocolError::FrameTooLong {
                tag: 0x10,
                len: 0x1001,
                limit: MAX_BODY_LEN
            }
        );
        assert_eq!(
            read(&[0x12, 0x80, 0x01]),
            ProtocolError::FrameTooLong {
                tag: 0x12,
                len: 0x8001,
                limit: MAX_DATA_LEN
            }
        );
        assert_eq!(read(&[0x12, 0, 0]), ProtocolError::EmptyData);
        assert_eq!(
            read(&[0x14, 0, 1, 0]),
            ProtocolError::TrailingBytes {
                tag: 0x14,
                extra: 1
            }
        );
        // An offer whose name length runs past the body.
        assert_eq!(
            read(&[0x10, 0, 4, 0x00, 0x09, b'a', b'b']),
            ProtocolError::Truncated(0x10)
        );
        let offer = |flags: u8, size: u64, tail: &[u8]| {
            let mut body = vec![0, 1, b'f', flags];
            body.extend_from_slice(&size.to_be_bytes());
            body.extend_from_slice(tail);
            let mut frame = vec![0x10, 0, body.len() as u8];
            frame.extend_from_slice(&body);
            frame
        };
        assert_eq!(
            read(&offer(0x04, 0, &[])),
            ProtocolError::UnknownFlags(0x04)
        );
        assert_eq!(read(&offer(0x02, 9, &[])), ProtocolError::SizeOfAStream(9));
        let mut tail = 0o10_000u32.to_be_bytes().to_vec();
        tail.extend_from_slice(&[0; 12]);
        assert_eq!(
            read(&offer(0x01, 9, &tail)),
            ProtocolError::BadMode(0o10_000)
        );
        let mut tail = vec![0; 12];
        tail.extend_from_slice(&1_000_000_000u32.to_be_bytes());
        assert_eq!(
            read(&offer(0x01, 9, &tail)),
            ProtocolError::BadTime(1_000_000_000)
        );
        let mut bad_name = vec![0x10, 0, 2 + 2 + 1 + 8, 0, 2, b'.', b'.'];
        bad_name.extend_from_slice(&[0; 9]);
        assert!(matches!(
            read(&bad_name),
            ProtocolError::BadName {
                error: NameError::DotComponent,
                ..
            }
        ));
        assert!(matches!(
            read(&[0x11, 0, 6, 0, 1, b'l', 0, 1, 0]),
            ProtocolError::BadLinkTarget {
                error: NameError::Control
            }
        ));
        let mut read =
            |bytes: &[u8]| match rt.block_on(read_receiver_frame(&mut &bytes[..], &mut buf)) {
                Err(ReadError::Malformed(e)) => e,
                other => panic!("{bytes:02x?}: {other:?}"),
            };
        assert_eq!(read(&[0x22, 0, 1, 0x09]), ProtocolError::UnknownStatus(9));
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
    }

    #[test]
    fn preamble_is_checked() {
        let rt = runtime();
        let read = |bytes: &[u8]| rt.block_on(read_preamble(&mut &bytes[..]));
        let lane = Lane::new(2, 3).unwrap();
        assert_eq!(read(&preamble(lane)).unwrap(), lane);
        assert!(matches!(
            read(b"GET /"),
            Err(ReadError::Malformed(ProtocolError::BadMagic(_)))
        ));
        // A version-1 sender's preamble is five bytes: its version is
        // refused without waiting for more.
        assert!(matches!(
            read(b"LTXF\x01"),
            Err(ReadError::Malformed(ProtocolError::UnsupportedVersion(1)))
        ));
        assert!(matches!(
            read(b"LTXF\x02\x03\x03"),
            Err(ReadError::Malformed(ProtocolError::BadLane {
                index: 3,
                count: 3
            }))
        ));
        assert!(matches!(read(b"LTXF\x02\x00"), Err(ReadError::Closed(_))));
    }

    #[test]
    fn long_texts_are_cut_at_a_character_boundary() {
        let text = Text::new("é".repeat(MAX_TEXT_LEN));
        assert_eq!(text.as_str().len(), MAX_TEXT_LEN);
        let text = Text::new(format!("a{}", "é".repeat(MAX_TEXT_LEN)));
        assert_eq!(text.as_str().len(), MAX_TEXT_LEN - 1);
        let frame = ReceiverFrame::Refuse {
            reason: RefuseReason::Io,
            message: text,
        };
        let bytes = encode_receiver(&frame);
        assert_eq!(ReceiverFrame::parse(bytes[0], &bytes[3..]), Ok(frame));
    }

    #[test]
    fn metadata_times_before_and_after_the_epoch() {
        let epoch = std::time::SystemTime::UNIX_EPOCH;
        let before = Metadata::new(0o644, -2, 500_000_000).unwrap();
        assert_eq!(
            before.modified(),
            Some(epoch - std::time::Duration::from_millis(1500))
        );
        let after = Metadata::new(0o100_644, 3, 0).unwrap();
        assert_eq!(after.mode(), 0o644);
        assert_eq!(
            after.modified(),
            Some(epoch + std::time::Duration::from_secs(3))
        );
        assert!(Metadata::new(0, 0, 1_000_000_000).is_none());
    }

    proptest! {
        /// Any body at all decodes to a frame or an error.
        #[test]
        fn any_body_parses_or_fails(tag in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = SenderFrame::parse(tag, &body);
            let _ = ReceiverFrame::parse(tag, &body);
        }

        /// Any stream decodes to a frame or an error, and a frame that
        /// decodes re-encodes to the bytes it came from.
        #[test]
        fn any_stream_reads_or_fails(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let rt = runtime();
            let mut buf = frame_buf();
            let mut rest = &bytes[..];
            if let Ok(frame) = rt.block_on(read_sender_frame(&mut rest, &mut buf)) {
                let used = bytes.len() - rest.len();
                prop_assert_eq!(encode_sender(&frame), bytes[..used].to_vec());
            }
            let mut rest = &bytes[..];
            if let Ok(frame) = rt.block_on(read_receiver_frame(&mut rest, &mut buf)) {
                let used = bytes.len() - rest.len();
                prop_assert_eq!(encode_receiver(&frame), bytes[..used].to_vec());
            }
        }

        /// Mutating one byte of a valid frame never panics.
        #[test]
        fn mutated_frames_never_panic(which in 0usize..9, at in any::<usize>(), byte in any::<u8>()) {
            let rt = runtime();
            let mut buf = frame_buf();
            let mut bytes = encode_sender(&every_sender_frame()[which]);
            let at = at % bytes.len();
            bytes[at] = byte;
            let _ = rt.block_on(read_sender_frame(&mut &bytes[..], &mut buf));
            let mut bytes = encode_receiver(&every_receiver_frame()[which]);
            let at = at % bytes.len();
            bytes[at] = byte;
            let _ = rt.block_on(read_receiver_frame(&mut &bytes[..], &mut buf));
        }
    }
}
