//! Sender and receiver together over in-memory streams: what a user sees.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use tokio::io::{duplex, split, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};

use super::name::TransferName;
use super::progress::Progress;
use super::wire::{self, Hash, Message, Offer, Outcome, ProtocolError, ReadError};
use super::*;

/// Small enough that the sender often waits for the receiver, as over a
/// real link.
const PIPE_LEN: usize = 0x1_0000;

const MIB: usize = 1 << 20;

fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0; len];
    SmallRng::seed_from_u64(seed).fill_bytes(&mut data);
    data
}

/// A source directory and an empty destination directory.
struct Dirs {
    _root: tempfile::TempDir,
    src: PathBuf,
    dst: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let src = root.path().join("src");
        let dst = root.path().join("dst");
        std::fs::create_dir(&src).unwrap();
        std::fs::create_dir(&dst).unwrap();
        Self {
            _root: root,
            src,
            dst,
        }
    }

    fn source(&self, file_name: &str, data: &[u8]) -> PathBuf {
        let path = self.src.join(file_name);
        std::fs::write(&path, data).unwrap();
        path
    }

    /// Everything in the destination, as sorted relative paths.
    fn listing(&self) -> Vec<String> {
        fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
                if entry.file_type().unwrap().is_dir() {
                    walk(&entry.path(), &format!("{name}/"), out);
                }
                out.push(name);
            }
        }
        let mut out = Vec::new();
        walk(&self.dst, "", &mut out);
        out.sort();
        out
    }

    fn part_files(&self) -> Vec<String> {
        self.listing()
            .into_iter()
            .filter(|name| name.ends_with(".ltx-part"))
            .collect()
    }
}

/// The partial file a transfer of `data` under `file_name` uses.
fn part_file_name(file_name: &str, data: &[u8]) -> String {
    format!(
        ".{file_name}.{}.ltx-part",
        &blake3::hash(data).to_hex()[..16]
    )
}

/// Bytes the sender writes before the data: preamble, OFFER and START.
fn header_len(name: &str) -> u64 {
    (5 + (3 + 2 + name.len() + 8 + 32) + (3 + 8)) as u64
}

/// A writer that counts what passes and, past `cut_at` bytes, closes the
/// stream under it and fails, as a sender whose process dies would.
struct Meter<W> {
    inner: W,
    written: u64,
    cut_at: Option<u64>,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Meter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let room = match this.cut_at {
            Some(cut_at) if this.written >= cut_at => {
                ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            Some(cut_at) => usize::try_from(cut_at - this.written).unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &buf[..buf.len().min(room)]))?;
        this.written += n as u64;
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// What one run of a sender against a receiver gave.
struct Run {
    sent: Result<Sent, TransferError>,
    received: Result<Received, TransferError>,
    /// Bytes the sender wrote on its stream.
    wire_bytes: u64,
    receiver_progress: Vec<Progress>,
    sender_progress: Vec<Progress>,
}

/// Sends `src` as `name` into `dst`; with `cut_at`, the sender's stream
/// dies after that many bytes.
async fn run(
    src: &Path,
    name: &str,
    dst: &Path,
    options: &ReceiveOptions,
    cut_at: Option<u64>,
) -> Run {
    let (a, b) = duplex(PIPE_LEN);
    let name = TransferName::parse(name).unwrap();
    // Each side owns its stream and drops it on return, as a process would.
    let send = async move {
        let (mut reader, writer) = split(a);
        let mut writer = Meter {
            inner: writer,
            written: 0,
            cut_at,
        };
        let mut progress = Vec::new();
        let sent = send_file(&mut reader, &mut writer, src, &name, |p| progress.push(p)).await;
        (sent, writer.written, progress)
    };
    let receive = async move {
        let (mut reader, mut writer) = split(b);
        let mut progress = Vec::new();
        let received =
            receive_file(&mut reader, &mut writer, dst, options, |p| progress.push(p)).await;
        (received, progress)
    };
    let ((sent, wire_bytes, sender_progress), (received, receiver_progress)) =
        tokio::join!(send, receive);
    Run {
        sent,
        received,
        wire_bytes,
        receiver_progress,
        sender_progress,
    }
}

async fn send(src: &Path, name: &str, dst: &Path, options: &ReceiveOptions) -> Run {
    run(src, name, dst, options, None).await
}

/// Runs an interrupted transfer: `kept` bytes of data reach the receiver,
/// then the sender's stream dies.
async fn interrupted(dirs: &Dirs, name: &str, data: &[u8], kept: u64) {
    let src = dirs.source(name, data);
    let cut = header_len(name) + kept;
    let run = run(&src, name, &dirs.dst, &ReceiveOptions::default(), Some(cut)).await;
    assert!(
        matches!(run.sent, Err(TransferError::PeerClosed { .. })),
        "{:?}",
        run.sent
    );
    assert!(
        matches!(
            run.received,
            Err(TransferError::PeerClosed {
                stage: Stage::Data,
                ..
            })
        ),
        "{:?}",
        run.received
    );
    let part = dirs.dst.join(part_file_name(name, data));
    assert_eq!(std::fs::metadata(&part).unwrap().len(), kept);
    assert!(!dirs.dst.join(name).exists());
}

/// Every size from nothing to several chunks arrives whole, under its name,
/// with nothing left beside it, and the stream carries each byte once.
#[tokio::test]
async fn files_of_every_size_arrive_whole() {
    let sizes = [
        0,
        1,
        1000,
        CHUNK_LEN - 1,
        CHUNK_LEN,
        CHUNK_LEN + 1,
        5 * MIB + 3,
    ];
    for (seed, size) in sizes.into_iter().enumerate() {
        let dirs = Dirs::new();
        let data = random_bytes(seed as u64, size);
        let src = dirs.source("file.bin", &data);
        let run = send(&src, "file.bin", &dirs.dst, &ReceiveOptions::default()).await;
        let sent = run.sent.unwrap();
        let received = run.received.unwrap();
        assert_eq!(std::fs::read(dirs.dst.join("file.bin")).unwrap(), data);
        assert_eq!(sent.hash, blake3::hash(&data));
        assert_eq!(received.hash, sent.hash);
        assert_eq!(
            (sent.size, sent.bytes_sent, sent.resumed_from),
            (size as u64, size as u64, 0)
        );
        assert_eq!(received.path, dirs.dst.join("file.bin"));
        assert_eq!(received.bytes_received, size as u64);
        assert!(!sent.already_present && !received.already_present);
        assert_eq!(run.wire_bytes, header_len("file.bin") + size as u64);
        assert_eq!(dirs.listing(), ["file.bin"], "size {size}");
    }
}

/// Progress runs from the start to the size without going back, and ends
/// on the size in each phase.
#[tokio::test]
async fn progress_reaches_the_size() {
    let dirs = Dirs::new();
    let size = 3 * CHUNK_LEN as u64 + 7;
    let src = dirs.source("f", &random_bytes(7, size as usize));
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    run.received.unwrap();
    for reports in [&run.sender_progress, &run.receiver_progress] {
        let transfer: Vec<_> = reports
            .iter()
            .filter(|p| p.phase == Phase::Transferring)
            .collect();
        assert_eq!(transfer.first().unwrap().done, 0);
        assert_eq!(transfer.last().unwrap().done, size);
        assert!(transfer.windows(2).all(|w| w[0].done <= w[1].done));
        assert!(transfer.iter().all(|p| p.total == size));
    }
    let hashing: Vec<_> = run
        .sender_progress
        .iter()
        .filter(|p| p.phase == Phase::Hashing)
        .collect();
    assert_eq!(hashing.last().unwrap().done, size);
    // A new file needs no hashing on the receiver.
    assert!(run
        .receiver_progress
        .iter()
        .all(|p| p.phase == Phase::Transferring));
}

/// A transfer cut after 1 MiB and 5 bytes keeps them; the rerun sends only
/// the rest, and the file is right.
#[tokio::test]
async fn a_rerun_resumes_where_the_stream_broke() {
    let dirs = Dirs::new();
    let data = random_bytes(11, 3 * MIB + 17);
    let kept = (MIB + 5) as u64;
    interrupted(&dirs, "big", &data, kept).await;

    let src = dirs.src.join("big");
    let run = send(&src, "big", &dirs.dst, &ReceiveOptions::default()).await;
    let sent = run.sent.unwrap();
    let received = run.received.unwrap();
    let rest = data.len() as u64 - kept;
    assert_eq!((sent.resumed_from, sent.bytes_sent), (kept, rest));
    assert_eq!(
        (received.resumed_from, received.bytes_received),
        (kept, rest)
    );
    assert_eq!(run.wire_bytes, header_len("big") + rest);
    assert_eq!(std::fs::read(dirs.dst.join("big")).unwrap(), data);
    assert_eq!(dirs.listing(), ["big"]);
    // The receiver hashed what it held, then counted on from there.
    let first_transfer = run
        .receiver_progress
        .iter()
        .find(|p| p.phase == Phase::Transferring)
        .unwrap();
    assert_eq!(first_transfer.done, kept);
    assert!(run
        .receiver_progress
        .iter()
        .any(|p| p.phase == Phase::Hashing && p.done == kept));
}

/// One flipped byte in the partial file: the prefix hashes differ, the
/// sender starts over, and the file is still right.
#[tokio::test]
async fn a_damaged_partial_file_is_started_over() {
    let dirs = Dirs::new();
    let data = random_bytes(12, 2 * MIB);
    let kept = MIB as u64;
    interrupted(&dirs, "f", &data, kept).await;
    let part = dirs.dst.join(part_file_name("f", &data));
    let mut held = std::fs::read(&part).unwrap();
    held[1234] ^= 0x01;
    std::fs::write(&part, held).unwrap();

    let run = send(
        &dirs.src.join("f"),
        "f",
        &dirs.dst,
        &ReceiveOptions::default(),
    )
    .await;
    let sent = run.sent.unwrap();
    assert_eq!((sent.resumed_from, sent.bytes_sent), (0, data.len() as u64));
    assert_eq!(run.received.unwrap().resumed_from, 0);
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), data);
    assert_eq!(dirs.listing(), ["f"]);
}

/// The file changed at the sender between two runs: the old partial file
/// bears the old hash, so the new transfer neither uses nor touches it.
#[tokio::test]
async fn a_partial_file_of_other_content_is_not_used() {
    let dirs = Dirs::new();
    let old = random_bytes(13, MIB);
    interrupted(&dirs, "f", &old, 1000).await;
    let new = random_bytes(14, MIB);
    let src = dirs.source("f", &new);
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    assert_eq!(run.sent.unwrap().resumed_from, 0);
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), new);
    assert_eq!(dirs.part_files(), [part_file_name("f", &old)]);
}

/// A partial file that holds the whole file (the receiver stopped between
/// the last byte and the rename) needs no data, only the checks; one that
/// is longer than the file cannot be a prefix of it and is started over.
#[tokio::test]
async fn partial_files_at_and_past_the_size() {
    let dirs = Dirs::new();
    let data = random_bytes(15, 5000);
    let src = dirs.source("f", &data);
    let part = dirs.dst.join(part_file_name("f", &data));

    std::fs::write(&part, &data).unwrap();
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    let sent = run.sent.unwrap();
    assert_eq!((sent.resumed_from, sent.bytes_sent), (5000, 0));
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), data);
    assert_eq!(dirs.listing(), ["f"]);

    std::fs::remove_file(dirs.dst.join("f")).unwrap();
    let mut longer = data.clone();
    longer.push(0);
    std::fs::write(&part, &longer).unwrap();
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    let sent = run.sent.unwrap();
    assert_eq!((sent.resumed_from, sent.bytes_sent), (0, 5000));
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), data);
    assert_eq!(dirs.listing(), ["f"]);
}

/// An existing file of other content is refused before any data, and kept;
/// with force it is replaced.
#[tokio::test]
async fn an_existing_file_needs_force() {
    let dirs = Dirs::new();
    let data = random_bytes(16, 10_000);
    let src = dirs.source("f", &data);
    std::fs::write(dirs.dst.join("f"), b"precious").unwrap();

    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    match run.sent {
        Err(TransferError::Refused {
            reason: RefuseReason::Exists,
            message,
        }) => assert!(message.as_str().contains("--force"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        run.received,
        Err(TransferError::Refused {
            reason: RefuseReason::Exists,
            ..
        })
    ));
    // The offer went out; START and the data did not.
    assert_eq!(run.wire_bytes, header_len("f") - 11);
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), b"precious");
    assert_eq!(dirs.listing(), ["f"]);

    let force = ReceiveOptions {
        force: true,
        ..ReceiveOptions::default()
    };
    let run = send(&src, "f", &dirs.dst, &force).await;
    run.sent.unwrap();
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), data);
    assert_eq!(dirs.listing(), ["f"]);
}

/// The same file already there is reported complete, force or not, and no
/// data is sent. The same size with other content is not the same file.
#[tokio::test]
async fn an_identical_file_is_already_complete() {
    let dirs = Dirs::new();
    let data = random_bytes(17, 300_000);
    let src = dirs.source("f", &data);
    std::fs::write(dirs.dst.join("f"), &data).unwrap();
    for force in [false, true] {
        let options = ReceiveOptions {
            force,
            ..ReceiveOptions::default()
        };
        let run = send(&src, "f", &dirs.dst, &options).await;
        let sent = run.sent.unwrap();
        let received = run.received.unwrap();
        assert!(sent.already_present && received.already_present);
        assert_eq!(sent.bytes_sent, 0);
        assert_eq!(received.path, dirs.dst.join("f"));
        assert_eq!(run.wire_bytes, header_len("f") - 11);
    }

    let mut other = data.clone();
    other[0] ^= 0xff;
    std::fs::write(dirs.dst.join("f"), &other).unwrap();
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    assert!(matches!(
        run.sent,
        Err(TransferError::Refused {
            reason: RefuseReason::Exists,
            ..
        })
    ));
}

/// A name with directories creates them under the receiver's directory.
#[tokio::test]
async fn subdirectories_are_created() {
    let dirs = Dirs::new();
    let data = random_bytes(18, 1234);
    let src = dirs.source("f", &data);
    let run = send(&src, "d/e/f.txt", &dirs.dst, &ReceiveOptions::default()).await;
    assert_eq!(run.received.unwrap().path, dirs.dst.join("d/e/f.txt"));
    assert_eq!(std::fs::read(dirs.dst.join("d/e/f.txt")).unwrap(), data);
    assert_eq!(dirs.listing(), ["d", "d/e", "d/e/f.txt"]);

    // A second file into the directories that now exist.
    let run = send(&src, "d/g", &dirs.dst, &ReceiveOptions::default()).await;
    run.received.unwrap();
    assert_eq!(dirs.listing(), ["d", "d/e", "d/e/f.txt", "d/g"]);
}

/// A file where the name needs a directory is refused, not replaced.
#[tokio::test]
async fn a_file_in_the_way_of_a_directory_is_refused() {
    let dirs = Dirs::new();
    let src = dirs.source("f", b"data");
    std::fs::write(dirs.dst.join("d"), b"a file").unwrap();
    let force = ReceiveOptions {
        force: true,
        ..ReceiveOptions::default()
    };
    let run = send(&src, "d/f", &dirs.dst, &force).await;
    match run.sent {
        Err(TransferError::Refused { message, .. }) => {
            assert!(message.as_str().contains("not a directory"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(dirs.listing(), ["d"]);
}

/// A sender that skips the sender's own checks and offers hostile names:
/// each is refused as a bad name and nothing is created anywhere.
#[tokio::test]
async fn hostile_names_are_refused_on_the_wire() {
    let names: &[&[u8]] = &[
        b"",
        b".",
        b"..",
        b"../escape",
        b"a/../../escape",
        b"/tmp/escape",
        b"a\\..\\escape",
        b"a\0b",
        b"a//b",
        b"a/",
        b"x.ltx-part",
        b"\xff\xfe",
    ];
    for name in names {
        let dirs = Dirs::new();
        let (a, b) = duplex(PIPE_LEN);
        let sender = async move {
            let (mut reader, mut writer) = split(a);
            let mut bytes = wire::preamble().to_vec();
            bytes.extend_from_slice(&offer_frame(name, 4, blake3::hash(b"data")));
            writer.write_all(&bytes).await.unwrap();
            wire::read_message(&mut reader).await
        };
        let receive = receive_alone(b, &dirs.dst, ReceiveOptions::default());
        let (reply, received) = tokio::join!(sender, receive);
        assert!(
            matches!(
                reply,
                Ok(Message::Refuse {
                    reason: RefuseReason::BadName,
                    ..
                })
            ),
            "{name:?}: {reply:?}"
        );
        assert!(matches!(
            received,
            Err(TransferError::Refused {
                reason: RefuseReason::BadName,
                ..
            })
        ));
        assert!(dirs.listing().is_empty(), "{name:?}");
        let root: Vec<_> = std::fs::read_dir(dirs.dst.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(root.len(), 2, "{name:?} created {root:?}");
    }
}

/// A link inside the receiver's directory does not lead the name out of it.
#[cfg(unix)]
#[tokio::test]
async fn a_symbolic_link_on_the_way_is_refused() {
    let dirs = Dirs::new();
    let outside = dirs.src.parent().unwrap().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, dirs.dst.join("link")).unwrap();
    let src = dirs.source("f", b"data");
    let force = ReceiveOptions {
        force: true,
        ..ReceiveOptions::default()
    };
    let run = send(&src, "link/f", &dirs.dst, &force).await;
    assert!(matches!(
        run.sent,
        Err(TransferError::Refused {
            reason: RefuseReason::BadName,
            ..
        })
    ));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// A link planted at the partial file's name is not written through.
#[cfg(unix)]
#[tokio::test]
async fn a_link_at_the_partial_name_is_not_followed() {
    let dirs = Dirs::new();
    let data = b"data".to_vec();
    let src = dirs.source("f", &data);
    let target = dirs.src.parent().unwrap().join("target");
    std::fs::write(&target, b"untouched").unwrap();
    std::os::unix::fs::symlink(&target, dirs.dst.join(part_file_name("f", &data))).unwrap();
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    assert!(matches!(
        run.sent,
        Err(TransferError::Refused {
            reason: RefuseReason::Io,
            ..
        })
    ));
    assert_eq!(std::fs::read(&target).unwrap(), b"untouched");
    assert!(!dirs.dst.join("f").exists());
}

/// With room for 1000 bytes, 1000 bytes are taken and 1001 refused with the
/// figures, before any data, leaving nothing behind.
#[tokio::test]
async fn the_byte_limit_refuses_what_does_not_fit() {
    let limit = ReceiveOptions {
        max_file_bytes: Some(1000),
        ..ReceiveOptions::default()
    };
    let dirs = Dirs::new();
    let src = dirs.source("f", &random_bytes(19, 1001));
    let run = send(&src, "d/f", &dirs.dst, &limit).await;
    match run.sent {
        Err(TransferError::Refused {
            reason: RefuseReason::NoSpace,
            message,
        }) => assert_eq!(
            message.as_str(),
            "not enough space: need 1001 bytes, have 1000 bytes"
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        run.received,
        Err(TransferError::Refused {
            reason: RefuseReason::NoSpace,
            ..
        })
    ));
    assert!(dirs.listing().is_empty(), "{:?}", dirs.listing());

    let src = dirs.source("f", &random_bytes(19, 1000));
    let run = send(&src, "d/f", &dirs.dst, &limit).await;
    run.sent.unwrap();
    assert_eq!(dirs.listing(), ["d", "d/f"]);
}

/// The bytes a partial file already holds count as stored: 600 held of
/// 1001 leaves 401 to store, one more than a limit of 1000 has room for.
#[tokio::test]
async fn the_byte_limit_counts_what_is_held() {
    let dirs = Dirs::new();
    let data = random_bytes(20, 1001);
    let src = dirs.source("f", &data);
    let part = dirs.dst.join(part_file_name("f", &data));
    std::fs::write(&part, &data[..600]).unwrap();
    for (limit, fits) in [(1000, false), (1001, true)] {
        let options = ReceiveOptions {
            max_file_bytes: Some(limit),
            ..ReceiveOptions::default()
        };
        let run = send(&src, "f", &dirs.dst, &options).await;
        match run.sent {
            Ok(sent) => {
                assert!(fits);
                assert_eq!(sent.resumed_from, 600);
            }
            Err(TransferError::Refused { message, .. }) => {
                assert!(!fits);
                assert_eq!(
                    message.as_str(),
                    "not enough space: need 401 bytes, have 400 bytes"
                );
            }
            Err(other) => panic!("{other}"),
        }
    }
}

/// The disk fills after 1 MiB: the sender hears why at once, nothing
/// appears under the name, and the partial file keeps what was written.
#[tokio::test]
async fn a_disk_that_fills_mid_transfer_is_reported() {
    let dirs = Dirs::new();
    let data = random_bytes(21, 3 * MIB);
    let src = dirs.source("f", &data);
    let options = ReceiveOptions {
        disk_full_after: Some(MIB as u64),
        ..ReceiveOptions::default()
    };
    let run = send(&src, "f", &dirs.dst, &options).await;
    let expected = receiver::disk_full().to_string();
    match run.sent {
        Err(TransferError::RemoteIo { message }) => {
            assert!(message.as_str().contains(&expected), "{message}")
        }
        other => panic!("{other:?}"),
    }
    match run.received {
        Err(TransferError::LocalIo { action, source, .. }) => {
            assert_eq!(action, "write");
            assert_eq!(source.to_string(), expected);
        }
        other => panic!("{other:?}"),
    }
    assert!(!dirs.dst.join("f").exists());
    let part = dirs.dst.join(part_file_name("f", &data));
    assert_eq!(std::fs::metadata(part).unwrap().len(), MIB as u64);
    // The sender stopped well before the end.
    assert!(run.wire_bytes < 3 * MIB as u64);
}

/// Runs the real receiver on one end of a pipe.
async fn receive_alone(
    stream: DuplexStream,
    dst: &Path,
    options: ReceiveOptions,
) -> Result<Received, TransferError> {
    let (mut reader, mut writer) = split(stream);
    receive_file(&mut reader, &mut writer, dst, &options, |_| {}).await
}

/// Runs the real sender on one end of a pipe.
async fn send_alone(stream: DuplexStream, src: &Path, name: &str) -> Result<Sent, TransferError> {
    let (mut reader, mut writer) = split(stream);
    let name = TransferName::parse(name).unwrap();
    send_file(&mut reader, &mut writer, src, &name, |_| {}).await
}

fn offer_frame(name: &[u8], size: u64, hash: Hash) -> Vec<u8> {
    let mut body = (name.len() as u16).to_be_bytes().to_vec();
    body.extend_from_slice(name);
    body.extend_from_slice(&size.to_be_bytes());
    body.extend_from_slice(hash.as_bytes());
    let mut frame = vec![0x01];
    frame.extend_from_slice(&(body.len() as u16).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

fn encode(messages: &[Message]) -> Vec<u8> {
    let mut out = Vec::new();
    for message in messages {
        message.emit(&mut out);
    }
    out
}

fn offer(name: &str, data: &[u8]) -> Message {
    Message::Offer(Offer {
        name: TransferName::parse(name).unwrap(),
        size: data.len() as u64,
        hash: blake3::hash(data),
    })
}

/// A sender that writes `bytes` after its preamble, reads one reply, writes
/// `then`, and exits.
async fn scripted_sender(
    stream: DuplexStream,
    bytes: Vec<u8>,
    then: Vec<u8>,
) -> Result<Message, ReadError> {
    let (mut reader, mut writer) = split(stream);
    let mut out = wire::preamble().to_vec();
    out.extend_from_slice(&bytes);
    writer.write_all(&out).await.unwrap();
    let reply = wire::read_message(&mut reader).await;
    let _ = writer.write_all(&then).await;
    reply
}

/// The sender's process dies after 5000 bytes of data: the receiver
/// reports the broken stream, nothing appears under the name, and the
/// partial file holds those 5000 bytes.
#[tokio::test]
async fn a_sender_that_exits_mid_transfer_leaves_a_partial_file() {
    let dirs = Dirs::new();
    let data = random_bytes(22, 20_000);
    let mut then = encode(&[Message::Start { offset: 0 }]);
    then.extend_from_slice(&data[..5000]);
    let (a, b) = duplex(PIPE_LEN);
    let (reply, received) = tokio::join!(
        scripted_sender(a, encode(&[offer("f", &data)]), then),
        receive_alone(b, &dirs.dst, ReceiveOptions::default()),
    );
    assert!(matches!(reply, Ok(Message::Accept { offset: 0, .. })));
    match received {
        Err(error @ TransferError::PeerClosed { .. }) => {
            assert_eq!(
                error.to_string(),
                "the peer closed the connection during the data"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(dirs.listing(), [part_file_name("f", &data)]);
    let part = std::fs::read(dirs.dst.join(part_file_name("f", &data))).unwrap();
    assert_eq!(part, data[..5000]);
}

/// Data that does not hash to the offer: the receiver says so, deletes it,
/// and stores nothing.
#[tokio::test]
async fn data_that_does_not_match_the_offer_is_deleted() {
    let dirs = Dirs::new();
    let data = random_bytes(23, 20_000);
    let mut forged = data.clone();
    forged[19_999] ^= 1;
    let mut then = encode(&[Message::Start { offset: 0 }]);
    then.extend_from_slice(&forged);
    let (a, b) = duplex(PIPE_LEN);
    let sender = async move {
        let (mut reader, mut writer) = split(a);
        let mut out = wire::preamble().to_vec();
        out.extend_from_slice(&encode(&[offer("f", &data)]));
        writer.write_all(&out).await.unwrap();
        let accept = wire::read_message(&mut reader).await.unwrap();
        assert!(matches!(accept, Message::Accept { offset: 0, .. }));
        writer.write_all(&then).await.unwrap();
        wire::read_message(&mut reader).await
    };
    let (outcome, received) = tokio::join!(
        sender,
        receive_alone(b, &dirs.dst, ReceiveOptions::default())
    );
    let forged_hash = blake3::hash(&forged);
    assert_eq!(
        outcome.unwrap(),
        Message::Outcome(Outcome::HashMismatch {
            actual: forged_hash
        })
    );
    assert!(matches!(
        received,
        Err(TransferError::HashMismatch { actual, .. }) if actual == forged_hash
    ));
    assert!(dirs.listing().is_empty(), "{:?}", dirs.listing());
}

/// A receiver that answers the offer with `reply`, reads `take` bytes,
/// writes `last`, and exits.
async fn scripted_receiver(stream: DuplexStream, reply: Vec<u8>, take: usize, last: Vec<u8>) {
    let (mut reader, mut writer) = split(stream);
    let mut head = [0; 5];
    reader.read_exact(&mut head).await.unwrap();
    wire::read_message(&mut reader).await.unwrap();
    writer.write_all(&reply).await.unwrap();
    let mut rest = vec![0; take];
    if reader.read_exact(&mut rest).await.is_ok() {
        let _ = writer.write_all(&last).await;
    }
}

/// One misbehaving receiver: it answers the offer with `reply`, reads
/// `take` bytes, writes `last` and exits; `check` judges the sender's error.
struct BadReceiver {
    what: &'static str,
    reply: Vec<u8>,
    take: usize,
    last: Vec<u8>,
    check: fn(&TransferError) -> bool,
}

fn closed_at(error: &TransferError, at: Stage) -> bool {
    matches!(error, TransferError::PeerClosed { stage, .. } if *stage == at)
}

/// What the sender makes of receivers that break the protocol or vanish.
#[tokio::test]
async fn the_sender_survives_any_receiver() {
    let dirs = Dirs::new();
    let data = random_bytes(24, 100_000);
    let src = dirs.source("f", &data);
    let accept = encode(&[Message::Accept {
        offset: 0,
        prefix_hash: blake3::hash(b""),
    }]);
    let past_the_end = encode(&[Message::Accept {
        offset: 100_001,
        prefix_hash: blake3::hash(&data),
    }]);
    let stored = encode(&[Message::Outcome(Outcome::Stored)]);
    let mismatch = encode(&[Message::Outcome(Outcome::HashMismatch {
        actual: blake3::hash(b"other"),
    })]);
    let failed = encode(&[Message::Outcome(Outcome::Failed {
        message: wire::Text::new("disk on fire"),
    })]);
    // START and all the data.
    let everything = 11 + data.len();

    let cases = [
        BadReceiver {
            what: "nothing",
            reply: vec![],
            take: 0,
            last: vec![],
            check: |e| closed_at(e, Stage::Reply),
        },
        BadReceiver {
            what: "half a frame",
            reply: vec![0x02, 0x00],
            take: 0,
            last: vec![],
            check: |e| closed_at(e, Stage::Reply),
        },
        BadReceiver {
            what: "an unknown frame",
            reply: vec![0x42, 0, 0],
            take: 0,
            last: vec![],
            check: |e| {
                matches!(
                    e,
                    TransferError::Protocol(ProtocolError::UnknownFrame(0x42))
                )
            },
        },
        BadReceiver {
            what: "an outcome for an answer",
            reply: stored.clone(),
            take: 0,
            last: vec![],
            check: |e| matches!(e, TransferError::Protocol(ProtocolError::Unexpected { .. })),
        },
        BadReceiver {
            what: "an offset past the end",
            reply: past_the_end,
            take: 0,
            last: vec![],
            check: |e| {
                matches!(
                    e,
                    TransferError::Protocol(ProtocolError::OffsetBeyondSize {
                        offset: 100_001,
                        ..
                    })
                )
            },
        },
        BadReceiver {
            what: "a success before the data",
            reply: [&accept[..], &stored].concat(),
            take: 0,
            last: vec![],
            check: |e| {
                matches!(
                    e,
                    TransferError::Protocol(ProtocolError::Unexpected { got: "OUTCOME", .. })
                )
            },
        },
        BadReceiver {
            what: "an exit mid-data",
            reply: accept.clone(),
            take: 40_000,
            last: vec![],
            check: |e| closed_at(e, Stage::Data),
        },
        BadReceiver {
            what: "an exit after the data",
            reply: accept.clone(),
            take: everything,
            last: vec![],
            check: |e| closed_at(e, Stage::Outcome),
        },
        BadReceiver {
            what: "a hash mismatch",
            reply: accept.clone(),
            take: everything,
            last: mismatch,
            check: |e| {
                matches!(e, TransferError::HashMismatch { actual, .. }
                    if *actual == blake3::hash(b"other"))
            },
        },
        BadReceiver {
            what: "a full disk",
            reply: accept.clone(),
            take: 50_000,
            last: failed,
            check: |e| {
                matches!(e, TransferError::RemoteIo { message }
                    if message.as_str() == "disk on fire")
            },
        },
    ];
    for case in cases {
        let (a, b) = duplex(PIPE_LEN);
        let (sent, ()) = tokio::join!(
            send_alone(a, &src, "f"),
            scripted_receiver(b, case.reply, case.take, case.last)
        );
        match sent {
            Err(error) => assert!((case.check)(&error), "{}: {error:?}", case.what),
            Ok(sent) => panic!("{}: {sent:?}", case.what),
        }
    }
}

/// What the receiver makes of senders that break the protocol.
#[tokio::test]
async fn the_receiver_survives_any_sender() {
    let data = random_bytes(25, 1000);
    let offered = encode(&[offer("f", &data)]);
    let too_long = {
        let mut bytes = vec![0x01, 0xff, 0xff];
        bytes.extend_from_slice(&[0; 64]);
        bytes
    };
    type Check = fn(&TransferError, &Option<Message>) -> bool;
    let cases: Vec<(&str, Vec<u8>, Vec<u8>, Check)> = vec![
        (
            "not our protocol",
            b"GET / HTTP/1.1\r\n".to_vec(),
            vec![],
            |e, reply| {
                matches!(e, TransferError::Protocol(ProtocolError::BadMagic(_))) && reply.is_none()
            },
        ),
        (
            "a newer version",
            b"LTXF\x02".to_vec(),
            vec![],
            |e, reply| {
                matches!(
                    e,
                    TransferError::Refused {
                        reason: RefuseReason::Version,
                        ..
                    }
                ) && matches!(
                    reply,
                    Some(Message::Refuse {
                        reason: RefuseReason::Version,
                        ..
                    })
                )
            },
        ),
        (
            "a huge frame",
            [&wire::preamble()[..], &too_long].concat(),
            vec![],
            |e, reply| {
                matches!(
                    e,
                    TransferError::Protocol(ProtocolError::FrameTooLong { .. })
                ) && matches!(
                    reply,
                    Some(Message::Refuse {
                        reason: RefuseReason::Malformed,
                        ..
                    })
                )
            },
        ),
        (
            "a start first",
            [
                &wire::preamble()[..],
                &encode(&[Message::Start { offset: 0 }]),
            ]
            .concat(),
            vec![],
            |e, _| {
                matches!(
                    e,
                    TransferError::Protocol(ProtocolError::Unexpected {
                        expected: "OFFER",
                        ..
                    })
                )
            },
        ),
        (
            "half an offer",
            [&wire::preamble()[..], &offered[..20]].concat(),
            vec![],
            |e, _| {
                matches!(
                    e,
                    TransferError::PeerClosed {
                        stage: Stage::Offer,
                        ..
                    }
                )
            },
        ),
        (
            "no start",
            [&wire::preamble()[..], &offered].concat(),
            vec![],
            |e, _| {
                matches!(
                    e,
                    TransferError::PeerClosed {
                        stage: Stage::Start,
                        ..
                    }
                )
            },
        ),
        (
            "a start not offered",
            [&wire::preamble()[..], &offered].concat(),
            encode(&[Message::Start { offset: 5 }]),
            |e, _| {
                matches!(
                    e,
                    TransferError::Protocol(ProtocolError::BadStart { offered: 0, got: 5 })
                )
            },
        ),
    ];
    for (what, bytes, then, check) in cases {
        let dirs = Dirs::new();
        let (a, b) = duplex(PIPE_LEN);
        let sender = async move {
            let (mut reader, mut writer) = split(a);
            writer.write_all(&bytes).await.unwrap();
            if then.is_empty() {
                writer.shutdown().await.unwrap();
            }
            let reply = wire::read_message(&mut reader).await.ok();
            let _ = writer.write_all(&then).await;
            reply
        };
        let (reply, received) = tokio::join!(
            sender,
            receive_alone(b, &dirs.dst, ReceiveOptions::default())
        );
        match received {
            Err(error) => assert!(check(&error, &reply), "{what}: {error:?}, {reply:?}"),
            Ok(received) => panic!("{what}: {received:?}"),
        }
        assert!(!dirs.dst.join("f").exists(), "{what}");
    }
}

/// A rerun that starts while the first transfer still holds the partial
/// file (its connection not yet timed out) is refused rather than let
/// both write into it.
#[tokio::test]
async fn a_second_transfer_of_the_same_file_waits_its_turn() {
    let dirs = Dirs::new();
    let data = random_bytes(26, 10_000);
    let src = dirs.source("f", &data);
    let (a, b) = duplex(PIPE_LEN);
    let first_sender = async {
        let (mut reader, mut writer) = split(a);
        let mut out = wire::preamble().to_vec();
        out.extend_from_slice(&encode(&[offer("f", &data)]));
        writer.write_all(&out).await.unwrap();
        // Accepted: the first receiver now holds the partial file.
        wire::read_message(&mut reader).await.unwrap();
        let second = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
        drop((reader, writer));
        second
    };
    let (second, first) = tokio::join!(
        first_sender,
        receive_alone(b, &dirs.dst, ReceiveOptions::default())
    );
    match second.sent {
        Err(TransferError::Refused {
            reason: RefuseReason::Io,
            message,
        }) => assert!(message.as_str().contains("in progress"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(first, Err(TransferError::PeerClosed { .. })));
    // Once the first has gone, the rerun goes through.
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    run.sent.unwrap();
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), data);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes after a valid preamble, or after a valid offer, end in an
    /// error, never a panic, and never in a file under the name.
    #[test]
    fn random_bytes_from_a_sender_never_store_a_file(
        after_offer in any::<bool>(),
        garbage in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let dirs = Dirs::new();
        let data = b"data";
        let mut bytes = wire::preamble().to_vec();
        if after_offer {
            bytes.extend_from_slice(&encode(&[offer("f", data)]));
        }
        bytes.extend_from_slice(&garbage);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let received = rt.block_on(async {
            let (a, b) = duplex(PIPE_LEN);
            let sender = async move {
                let (mut reader, mut writer) = split(a);
                let _ = writer.write_all(&bytes).await;
                let _ = writer.shutdown().await;
                let mut sink = Vec::new();
                let _ = reader.read_to_end(&mut sink).await;
            };
            let ((), received) = tokio::join!(
                sender,
                receive_alone(b, &dirs.dst, ReceiveOptions::default())
            );
            received
        });
        match received {
            // Only START and the very bytes offered could store a file.
            Ok(received) => prop_assert_eq!(received.hash, blake3::hash(data)),
            Err(_) => prop_assert!(!dirs.dst.join("f").exists()),
        }
    }
}
