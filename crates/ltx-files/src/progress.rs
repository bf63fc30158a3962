//! Progress reports, for whatever draws them.

/// What a side is busy with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading a local file to hash it: the sender's whole file before the
    /// offer, the prefix both sides compare before resuming, or an existing
    /// file the receiver compares with the offer.
    Hashing,
    /// Moving the file's data over the stream.
    Transferring,
}

/// One progress report: `done` of `total` bytes in `phase`.
///
/// Reports come once per chunk (see [`CHUNK_LEN`](crate::CHUNK_LEN)), so a callback can
/// afford to update a progress bar each time. In [`Phase::Transferring`]
/// `done` starts at the resume offset, so a bar shows the file, not the
/// session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// What is being done.
    pub phase: Phase,
    /// Bytes done so far.
    pub done: u64,
    /// Bytes to do in this phase.
    pub total: u64,
}
