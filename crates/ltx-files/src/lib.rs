//! The file-transfer protocol of `ltx send` and `ltx recv`, as a library.
//!
//! One file travels over one ordered, reliable byte stream in each
//! direction; nothing here knows what carries them, so the same code runs
//! over an ltx stream, TCP, or an in-memory pipe. [`send_file`] runs the
//! sending side of one file, [`receive_file`] the receiving side;
//! [`plan_transfers`] lists the files a set of local paths stands for, each
//! under the [`TransferName`] it gets on the receiver.
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
//! before data flows: the name (see [`TransferName`]), an existing file,
//! free space. The sender resumes from the receiver's offset only if its
//! own prefix hashes the same; otherwise it starts over. The receiver
//! stores the file under its name only once all of it hashed right and is
//! on disk, so a file under its final name is always whole. The byte
//! layout of the frames is in `docs/files.md` of the repository.
//!
//! Neither side draws anything: both report their progress to a callback,
//! once per chunk of [`CHUNK_LEN`] bytes, for the caller to show as it
//! likes.
//!
//! # Example
//!
//! A file sent over an in-memory pipe into a receiver's directory. Over an
//! ltx connection the two halves of a stream take the pipe's place:
//! `let (mut send, mut recv) = connection.open_stream()?;` on the sender,
//! `connection.accept_stream().await?` on the receiver.
//!
//! ```
//! use ltx_files::{receive_file, send_file, Phase, ReceiveOptions, TransferName};
//! use tokio::io::{duplex, split};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let source = dir.path().join("notes.txt");
//! # let inbox = dir.path().join("inbox");
//! # std::fs::create_dir(&inbox)?;
//! std::fs::write(&source, b"seven hundred kilometres of sky")?;
//!
//! // The sender's and the receiver's ends of one bidirectional stream.
//! let (sender_end, receiver_end) = duplex(64 << 10);
//! let (mut sender_reads, mut sender_writes) = split(sender_end);
//! let (mut receiver_reads, mut receiver_writes) = split(receiver_end);
//!
//! let name = TransferName::parse("notes.txt")?;
//! let options = ReceiveOptions::new(false, None); // no overwriting, no size limit
//! let (sent, received) = tokio::join!(
//!     send_file(&mut sender_reads, &mut sender_writes, &source, &name, |_| {}),
//!     receive_file(&mut receiver_reads, &mut receiver_writes, &inbox, &options, |p| {
//!         if p.phase == Phase::Transferring {
//!             eprintln!("{} of {} bytes", p.done, p.total);
//!         }
//!     }),
//! );
//! let (sent, received) = (sent?, received?);
//! assert_eq!(received.hash, sent.hash);
//! assert_eq!(std::fs::read(inbox.join("notes.txt"))?, b"seven hundred kilometres of sky");
//! # Ok(())
//! # }
//! ```

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

pub use error::{Stage, TransferError};
pub use name::{NameError, TransferName, MAX_COMPONENT_LEN, MAX_NAME_LEN, PART_SUFFIX};
pub use plan::{plan_transfers, Plan, PlanError, PlannedFile, SkipReason};
pub use progress::{Phase, Progress};
pub use receiver::{receive_file, ReceiveOptions, Received};
pub use sender::{send_file, Sent};
pub use wire::{
    Hash, ProtocolError, RefuseReason, Text, MAGIC, MAX_BODY_LEN, MAX_TEXT_LEN, VERSION,
};

/// The size of the reads and writes of file data, and of the hashing reads.
///
/// Large enough that a disk and BLAKE3 run near full speed, small enough
/// that progress moves often on a slow link.
pub const CHUNK_LEN: usize = 0x4_0000;
