//! What a peer that breaks the file protocol did.

use super::{NameError, MAX_TEXT_LEN, VERSION};

/// The peer broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The stream does not start with [`MAGIC`](super::MAGIC).
    #[error("not an ltx file stream (magic {0:02x?})")]
    BadMagic([u8; 4]),
    /// The sender speaks another version.
    #[error(
        "the sender speaks file protocol {0}; this receiver speaks {VERSION}: update the older one"
    )]
    UnsupportedVersion(u8),
    /// A preamble whose lane is not below its count of lanes.
    #[error("lane {index} of {count} does not exist")]
    BadLane {
        /// The lane's index.
        index: u8,
        /// The count of lanes.
        count: u8,
    },
    /// A frame tag this version does not know.
    #[error("unknown frame 0x{0:02x}")]
    UnknownFrame(u8),
    /// A frame body longer than its kind allows.
    #[error("frame 0x{tag:02x} announces {len} bytes; the limit is {limit}")]
    FrameTooLong {
        /// The frame's tag.
        tag: u8,
        /// The announced body length.
        len: usize,
        /// The longest body of that frame.
        limit: usize,
    },
    /// A DATA frame without data.
    #[error("an empty DATA frame")]
    EmptyData,
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
    /// A link target that is empty, too long, not UTF-8 or holds a NUL.
    #[error("bad link target: {error}")]
    BadLinkTarget {
        /// The rule it breaks.
        error: NameError,
    },
    /// OFFER flags this version does not know.
    #[error("unknown offer flags 0x{0:02x}")]
    UnknownFlags(u8),
    /// A stream's offer with a size.
    #[error("an offer of unknown size gives the size {0}")]
    SizeOfAStream(u64),
    /// Mode bits beyond permissions, setuid, setgid and sticky.
    #[error("mode 0o{0:o} has bits beyond 0o7777")]
    BadMode(u32),
    /// A modification time with 10^9 nanoseconds or more.
    #[error("a modification time with {0} nanoseconds")]
    BadTime(u32),
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
    /// The receiver says it has more bytes than the file holds.
    #[error("the receiver has {len} bytes of a {size}-byte file")]
    HaveBeyondSize {
        /// What the receiver claims.
        len: u64,
        /// The file's size.
        size: u64,
    },
    /// A SEEK other than to the length the receiver has, or backwards.
    #[error("the sender skipped to byte {to} from byte {at}; the receiver has {have}")]
    BadSeek {
        /// Where the sender skipped to.
        to: u64,
        /// Where the data was.
        at: u64,
        /// What the receiver said it has.
        have: u64,
    },
    /// More data than the offer's size, or less before END.
    #[error("the sender sent {sent} bytes of a {size}-byte file")]
    WrongLength {
        /// The bytes the data came to.
        sent: u64,
        /// The size in the offer.
        size: u64,
    },
}
