//! The file-transfer protocol of `ltx send` and `ltx recv`.
//!
//! One file travels over one ordered, reliable byte stream in each
//! direction; nothing here knows what carries them, so the same code runs
//! over an ltx stream, TCP, or an in-memory pipe.
//!
//! ```text
//! sender                                     receiver
//!   preamble + OFFER (name, size, BLAKE3) ->
//!                                         <- ACCEPT (offset, BLAKE3 of the prefix it holds)
//!                                            | PRESENT (identical file already there)
//!                                            | REFUSE (reason, message)
//!   START (offset or 0), then the data    ->
//!                                         <- OUTCOME (stored | hash mismatch | failed)
//! ```
//!
//! The receiver answers an offer only after checking everything it can
//! before data flows: the name ([`name`]), an existing file, free space.
//! The sender resumes from the receiver's offset only if its own prefix
//! hashes the same; otherwise it starts over. The receiver stores the file
//! under its name only once all of it hashed right and is on disk, so a
//! file under its final name is always whole. The byte layout is in
//! [`wire`].

mod error;
mod hashing;
mod name;
mod plan;
mod progress;
mod receiver;
mod sender;
mod space;
mod wire;

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use error::Stage;
pub(crate) use error::TransferError;
pub(crate) use plan::{plan_transfers, PlannedFile};
pub(crate) use progress::Phase;
pub(crate) use receiver::{receive_file, ReceiveOptions, Received};
pub(crate) use sender::{send_file, Sent};
#[cfg(test)]
pub(crate) use wire::RefuseReason;

/// The size of the reads and writes of file data, and of the hashing reads.
///
/// Large enough that a disk and BLAKE3 run near full speed, small enough
/// that progress moves often on a slow link.
pub(crate) const CHUNK_LEN: usize = 0x4_0000;
