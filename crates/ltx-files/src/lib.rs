//! The file-transfer protocol of `ltx send` and `ltx recv`, as a library.
//!
//! A transfer runs over one or more *lanes*: ordered, reliable byte streams,
//! one in each direction; nothing here knows what carries them, so the same
//! code runs over ltx streams, TCP, or in-memory pipes. Each lane carries
//! files one after another. [`send_lane`] runs the sending side of a lane,
//! taking files from [`Sources`] shared by all lanes; [`receive_lane`] the
//! receiving side, into an [`Inbox`] shared by all lanes and connections of
//! a receiver. [`send_file`] and [`receive_file`] send one file over one
//! stream. [`plan_transfers`] lists the files a set of local paths stands
//! for, each under the [`TransferName`] it gets on the receiver.
//!
//! ```text
//! sender                                        receiver
//!   preamble, OFFER (name, size, mode, mtime),
//!   DATA, DATA, … at once                     ->
//!                                             <- ACCEPT (nothing here)
//!                                              | HAVE (length, BLAKE3 of what it has)
//!                                              | REFUSE (reason, what to do)
//!   [after HAVE: SEEK (skip what it has)
//!    | DIFFERS (what it has is not this file)]
//!   DATA, …, END (BLAKE3 of the whole file)   ->
//!                                             <- OUTCOME (stored | present | mismatch | failed)
//!   the next file's OFFER and data, at once …
//!   BYE                                       ->
//!                                             <- BYE
//! ```
//!
//! The sender does not wait for an answer before the data, nor for a file's
//! outcome before the next file: a file costs no round trip of its own, and
//! its BLAKE3 is computed as it is sent. The answer redirects or stops the
//! data: after a refusal the sender cancels the file and the receiver drops
//! what was on its way; after a HAVE the sender hashes as many bytes of its
//! file, beside the data, and skips ahead if they match, while the receiver
//! compares what arrives with what it has and writes nothing until the
//! bytes differ. The receiver checks everything it can before it writes a
//! byte: the name (see [`TransferName`]), an existing file, free space,
//! another transfer of the same name. It stores a file under its name only
//! once all of it hashed right and is on disk, so a file under its final
//! name is always whole. The byte layout is in `docs/files.md` of the
//! repository.
//!
//! A receiver knows a transfer is over once every lane has said goodbye,
//! whether or not the connection's close ever arrives: [`Completion`]
//! counts the lanes, and [`sender_finished`] says when the sender has
//! heard the last answers.
//!
//! Neither side draws anything: both report each file's progress to a
//! callback as [`Event`]s (the one-file functions: as [`Progress`]), for
//! the caller to show as it likes.
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
pub use name::{LinkTarget, NameError, TransferName, MAX_COMPONENT_LEN, MAX_NAME_LEN, PART_SUFFIX};
pub use plan::{
    plan_transfers, plan_transfers_with, Plan, PlanError, PlanOptions, PlannedFile, PlannedKind,
    SkipReason,
};
pub use progress::{Ending, Event, EventKind, FileOutcome, Phase, Progress};
pub use receiver::{
    receive_file, receive_lane, sender_finished, Completion, Inbox, Peer, ReceiveLane,
    ReceiveOptions, ReceiveReport, Received,
};
pub use sender::{
    send_file, send_lane, SendLane, SendOptions, SendReport, Sent, Source, Sources, Stop, Stopper,
};
pub use wire::{
    Hash, Lane, Metadata, ProtocolError, RefuseReason, Text, MAGIC, MAX_BODY_LEN, MAX_DATA_LEN,
    MAX_TEXT_LEN, VERSION,
};

/// The size of the reads and writes of file data, and of the hashing reads.
///
/// Large enough that a disk and BLAKE3 run near full speed, small enough
/// that progress moves often on a slow link.
pub const CHUNK_LEN: usize = 0x4_0000;
