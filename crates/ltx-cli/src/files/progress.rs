//! Progress reports, for whatever draws them.

/// What a side is busy with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Reading a local file to hash it: the sender's whole file before the
    /// offer, the prefix both sides compare before resuming, or an existing
    /// file the receiver compares with the offer.
    Hashing,
    /// Moving the file's data over the stream.
    Transferring,
}

/// One progress report: `done` of `total` bytes in `phase`.
///
/// Reports come once per chunk (see [`super::CHUNK_LEN`]), so a callback can
/// afford to update a progress bar each time. In [`Phase::Transferring`]
/// `done` starts at the resume offset, so a bar shows the file, not the
/// session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// What is being done.
    pub(crate) phase: Phase,
    /// Bytes done so far.
    pub(crate) done: u64,
    /// Bytes to do in this phase.
    pub(crate) total: u64,
}
