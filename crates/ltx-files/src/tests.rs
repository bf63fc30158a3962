//! Sender and receiver together over in-memory streams: what a user sees.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use tokio::io::{
    duplex, split, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadHalf,
    WriteHalf,
};

use super::name::TransferName;
use super::wire::{self, Hash, Offer, Outcome, ReceiverFrame, SenderFrame};
use super::*;

mod lanes;
mod misbehaving;
mod round_trips;

/// Small enough that the sender often waits for the receiver, as over a
/// real link.
pub(super) const PIPE_LEN: usize = 0x1_0000;

pub(super) const MIB: usize = 1 << 20;

pub(super) fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0; len];
    SmallRng::seed_from_u64(seed).fill_bytes(&mut data);
    data
}

/// A source directory and an empty destination directory.
pub(super) struct Dirs {
    _root: tempfile::TempDir,
    pub(super) src: PathBuf,
    pub(super) dst: PathBuf,
}

impl Dirs {
    pub(super) fn new() -> Self {
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

    pub(super) fn source(&self, file_name: &str, data: &[u8]) -> PathBuf {
        let path = self.src.join(file_name);
        std::fs::write(&path, data).unwrap();
        path
    }

    /// Everything in the destination, as sorted relative paths.
    pub(super) fn listing(&self) -> Vec<String> {
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

    pub(super) fn part(&self, file_name: &str) -> PathBuf {
        self.dst.join(part_file_name(file_name))
    }
}

/// The partial file a transfer of `file_name` uses.
pub(super) fn part_file_name(file_name: &str) -> String {
    format!(".{file_name}.ltx-part")
}

/// Bytes a sender writes for one file of `size` bytes sent whole, with its
/// metadata, on a lane of its own: preamble, OFFER, DATA frames, END, BYE.
pub(super) fn wire_len(name: &str, size: u64) -> u64 {
    let frames = size.div_ceil(wire::MAX_DATA_LEN as u64);
    7 + (3 + 2 + name.len() as u64 + 1 + 8 + 16) + size + 3 * frames + (3 + 32) + 3
}

/// A writer that counts what passes and, past `cut_at` bytes, closes the
/// stream under it and fails, as a sender whose process dies would.
pub(super) struct Meter<W> {
    pub(super) inner: W,
    pub(super) written: u64,
    pub(super) cut_at: Option<u64>,
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
pub(super) struct Run {
    pub(super) sent: Result<Sent, TransferError>,
    pub(super) received: Result<Received, TransferError>,
    /// Bytes the sender wrote on its stream.
    pub(super) wire_bytes: u64,
    pub(super) receiver_progress: Vec<Progress>,
    pub(super) sender_progress: Vec<Progress>,
}

/// Sends `src` as `name` into `dst` over `streams` (sender's end, receiver's
/// end); with `cut_at`, the sender's stream dies after that many bytes.
pub(super) async fn run_over<S>(
    streams: (S, S),
    src: &Path,
    name: &str,
    dst: &Path,
    options: &ReceiveOptions,
    cut_at: Option<u64>,
) -> Run
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (a, b) = streams;
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

pub(super) async fn run(
    src: &Path,
    name: &str,
    dst: &Path,
    options: &ReceiveOptions,
    cut_at: Option<u64>,
) -> Run {
    run_over(duplex(PIPE_LEN), src, name, dst, options, cut_at).await
}

pub(super) async fn send(src: &Path, name: &str, dst: &Path, options: &ReceiveOptions) -> Run {
    run(src, name, dst, options, None).await
}

/// Sends `sources` over `lanes` pipes made by `pipe` into `inbox`, all lanes
/// at once, as one sender (`peer`) would; returns each lane's reports,
/// sender's and receiver's, in lane order.
pub(super) async fn send_lanes<S>(
    pipes: Vec<(S, S)>,
    sources: &Sources,
    options: &SendOptions,
    inbox: &Inbox,
    peer: &Peer,
    events: &(impl Fn(Event<'_>) + Sync),
) -> Vec<(SendLane, ReceiveLane)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let count = u8::try_from(pipes.len()).unwrap();
    let stop = Stop::never();
    let runs = pipes.into_iter().enumerate().map(|(index, (a, b))| {
        let lane = Lane::new(u8::try_from(index).unwrap(), count).unwrap();
        let stop = &stop;
        async move {
            let sender = async move {
                let (mut reader, mut writer) = split(a);
                send_lane(
                    &mut reader,
                    &mut writer,
                    lane,
                    sources,
                    options,
                    stop,
                    events,
                )
                .await
            };
            let receiver = async move {
                let (mut reader, mut writer) = split(b);
                receive_lane(&mut reader, &mut writer, inbox, peer, events).await
            };
            tokio::join!(sender, receiver)
        }
    });
    futures_join_all(runs).await
}

/// Runs futures together on this task, and returns their outputs in order.
pub(super) async fn futures_join_all<F: std::future::Future>(
    futures: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    let mut outputs: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in set.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}

/// The sources for the files `names` in `dir`, in order.
pub(super) fn file_sources(dir: &Path, names: &[String]) -> Sources {
    Sources::new(names.iter().map(|name| Source::File {
        path: dir.join(name),
        name: TransferName::parse(name).unwrap(),
    }))
}

/// Carries bytes from `from` to `to` `delay` later, with at most `window`
/// bytes on their way, in tokio's time.
async fn delay_line(
    mut from: ReadHalf<DuplexStream>,
    mut to: WriteHalf<DuplexStream>,
    delay: Duration,
    window: usize,
) {
    let mut queue = std::collections::VecDeque::new();
    let mut in_flight = 0;
    let mut open = true;
    let mut buf = vec![0; 0x4000];
    loop {
        let due = queue
            .front()
            .map(|(at, _): &(tokio::time::Instant, Vec<u8>)| *at);
        tokio::select! {
            read = from.read(&mut buf), if open && in_flight < window => match read {
                Ok(0) | Err(_) => open = false,
                Ok(n) => {
                    in_flight += n;
                    queue.push_back((tokio::time::Instant::now() + delay, buf[..n].to_vec()));
                }
            },
            () = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => {
                if let Some((_, bytes)) = queue.pop_front() {
                    in_flight -= bytes.len();
                    if to.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
            },
            else => break,
        }
    }
    let _ = to.shutdown().await;
}

/// A bidirectional pipe with `one_way` delay each way and at most
/// `window` bytes in flight each way (a flow-control window): the
/// sender's end and the receiver's end. Run it on a paused clock.
pub(super) fn delayed_pipe(one_way: Duration, window: usize) -> (DuplexStream, DuplexStream) {
    let (near_a, far_a) = duplex(PIPE_LEN);
    let (near_b, far_b) = duplex(PIPE_LEN);
    let (a_read, a_write) = split(far_a);
    let (b_read, b_write) = split(far_b);
    tokio::spawn(delay_line(a_read, b_write, one_way, window));
    tokio::spawn(delay_line(b_read, a_write, one_way, window));
    (near_a, near_b)
}

/// Runs an interrupted transfer: about `kept` bytes of data reach the
/// receiver, then the sender's stream dies. Returns what the partial file
/// holds: the data of every whole DATA frame that arrived.
async fn interrupted(dirs: &Dirs, name: &str, data: &[u8], kept: u64) -> u64 {
    let src = dirs.source(name, data);
    let cut = wire_len(name, 0) - 38 + kept + 3 * kept.div_ceil(wire::MAX_DATA_LEN as u64);
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
    assert!(!dirs.dst.join(name).exists());
    let held = std::fs::metadata(dirs.part(name)).unwrap().len();
    assert!(
        held <= kept && held + wire::MAX_DATA_LEN as u64 >= kept,
        "{held}"
    );
    assert_eq!(held % wire::MAX_DATA_LEN as u64, 0);
    assert_eq!(
        std::fs::read(dirs.part(name)).unwrap(),
        data[..held as usize]
    );
    held
}

/// Every size from nothing to several chunks arrives whole, under its name,
/// with nothing left beside it, and the stream carries each byte once.
#[tokio::test]
async fn files_of_every_size_arrive_whole() {
    let sizes = [
        0,
        1,
        1000,
        wire::MAX_DATA_LEN,
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
        assert_eq!(run.wire_bytes, wire_len("file.bin", size as u64));
        assert_eq!(dirs.listing(), ["file.bin"], "size {size}");
    }
}

/// Progress runs from the start to the size without going back, and ends
/// on the size.
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
    // A new file needs no hashing on either side before its data.
    assert!(run
        .sender_progress
        .iter()
        .chain(&run.receiver_progress)
        .all(|p| p.phase == Phase::Transferring));
}

/// The file's mode and modification time arrive with it; without them the
/// receiver's defaults stay.
#[cfg(unix)]
#[tokio::test]
async fn mode_and_modification_time_are_kept() {
    use std::os::unix::fs::PermissionsExt;

    let dirs = Dirs::new();
    let src = dirs.source("script.sh", b"#!/bin/sh\necho hi\n");
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o4751)).unwrap();
    let when = std::time::UNIX_EPOCH + Duration::new(1_234_567_890, 123_456_789);
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(when)
        .unwrap();
    send(&src, "script.sh", &dirs.dst, &ReceiveOptions::default())
        .await
        .sent
        .unwrap();
    let meta = std::fs::metadata(dirs.dst.join("script.sh")).unwrap();
    // Permissions only: a sender does not set setuid here.
    assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
    assert_eq!(meta.modified().unwrap(), when);

    // A receiver that does not keep them.
    let dirs = Dirs::new();
    let src = dirs.source("script.sh", b"#!/bin/sh\n");
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o700)).unwrap();
    let options = ReceiveOptions {
        keep_metadata: false,
        ..ReceiveOptions::default()
    };
    send(&src, "script.sh", &dirs.dst, &options)
        .await
        .sent
        .unwrap();
    let meta = std::fs::metadata(dirs.dst.join("script.sh")).unwrap();
    assert_ne!(meta.permissions().mode() & 0o777, 0o700);
    assert!(meta.modified().unwrap() > when);
}

/// A transfer cut after 1 MiB keeps the whole frames that arrived; the
/// rerun compares, skips what the receiver has, sends the rest, and the
/// file is right. On a path with a round trip and a window, the bytes sent
/// before the receiver's HAVE came back are all that is sent twice.
#[tokio::test(start_paused = true)]
async fn a_rerun_resumes_where_the_stream_broke() {
    let dirs = Dirs::new();
    let data = random_bytes(11, 3 * MIB + 17);
    let held = interrupted(&dirs, "big", &data, (MIB + 5) as u64).await;

    let window = 256 << 10;
    let path = delayed_pipe(Duration::from_millis(50), window);
    let src = dirs.src.join("big");
    let run = run_over(
        path,
        &src,
        "big",
        &dirs.dst,
        &ReceiveOptions::default(),
        None,
    )
    .await;
    let sent = run.sent.unwrap();
    let received = run.received.unwrap();
    let rest = data.len() as u64 - held;
    assert_eq!(sent.resumed_from, held);
    assert_eq!(received.resumed_from, held);
    // Sent before the answer, then the rest: the bytes sent twice are
    // what went before the sender heard the HAVE, short of the 1 MiB held.
    // (How far short depends on how long the receiver's hash of what it
    // holds takes on a blocking thread, which the paused clock does not
    // see: anywhere from a window to most of the part.)
    let early = sent.bytes_sent - rest;
    assert!(early < held, "{early} of {held} sent again");
    assert_eq!(received.bytes_received, sent.bytes_sent);
    assert_eq!(std::fs::read(dirs.dst.join("big")).unwrap(), data);
    assert_eq!(dirs.listing(), ["big"]);
    // The receiver hashed what it held, and the rerun says where it
    // resumed.
    assert!(run
        .receiver_progress
        .iter()
        .any(|p| p.phase == Phase::Hashing && p.done == held));
    assert!(run
        .sender_progress
        .iter()
        .any(|p| p.phase == Phase::Transferring && p.done == held));
}

/// One flipped byte in the partial file: the prefixes differ, the receiver
/// keeps what matched and takes the rest as it comes, and the file is right.
#[tokio::test]
async fn a_damaged_partial_file_is_started_over_where_it_differs() {
    let dirs = Dirs::new();
    let data = random_bytes(12, 2 * MIB);
    let held = interrupted(&dirs, "f", &data, MIB as u64).await;
    let part = dirs.part("f");
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[1234] ^= 0x01;
    std::fs::write(&part, bytes).unwrap();
    assert!(held > 1234);

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
/// is compared, found to differ, and replaced; nothing of it survives.
#[tokio::test]
async fn a_partial_file_of_other_content_is_replaced() {
    let dirs = Dirs::new();
    let old = random_bytes(13, MIB);
    interrupted(&dirs, "f", &old, 100_000).await;
    let new = random_bytes(14, MIB);
    let src = dirs.source("f", &new);
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    assert_eq!(run.sent.unwrap().resumed_from, 0);
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), new);
    assert_eq!(dirs.listing(), ["f"]);
}

/// A partial file that holds the whole file (the receiver stopped between
/// the last byte and the rename) needs only the checks; one that is longer
/// than the file cannot be a prefix of it and is started over.
#[tokio::test]
async fn partial_files_at_and_past_the_size() {
    let dirs = Dirs::new();
    let data = random_bytes(15, 5000);
    let src = dirs.source("f", &data);
    let part = dirs.part("f");

    std::fs::write(&part, &data).unwrap();
    let run = send(&src, "f", &dirs.dst, &ReceiveOptions::default()).await;
    let received = run.received.unwrap();
    assert!(!received.already_present);
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

/// An existing file of another size is refused at once, and kept; one of
/// the same size and other content is refused once a byte differs, having
/// written nothing; with force either is replaced.
#[tokio::test]
async fn an_existing_file_needs_force() {
    let dirs = Dirs::new();
    let data = random_bytes(16, 10_000);
    let src = dirs.source("f", &data);
    let mut same_size = data.clone();
    same_size[9_000] ^= 1;
    for existing in [b"precious".to_vec(), same_size] {
        std::fs::write(dirs.dst.join("f"), &existing).unwrap();
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
        assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), existing);
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
}

/// The same file already there is reported present, force or not, and
/// left as it was; on a path with a round trip, the sender stops once it
/// has compared, so a large file does not go over again.
#[tokio::test(start_paused = true)]
async fn an_identical_file_is_already_there() {
    let dirs = Dirs::new();
    let data = random_bytes(17, 3 * MIB);
    let src = dirs.source("f", &data);
    std::fs::write(dirs.dst.join("f"), &data).unwrap();
    let before = std::fs::metadata(dirs.dst.join("f"))
        .unwrap()
        .modified()
        .unwrap();
    for force in [false, true] {
        let options = ReceiveOptions {
            force,
            ..ReceiveOptions::default()
        };
        let path = delayed_pipe(Duration::from_millis(50), 256 << 10);
        let run = run_over(path, &src, "f", &dirs.dst, &options, None).await;
        let sent = run.sent.unwrap();
        let received = run.received.unwrap();
        assert!(sent.already_present && received.already_present);
        assert!(
            sent.bytes_sent < data.len() as u64 / 2,
            "{}",
            sent.bytes_sent
        );
        assert_eq!(received.path, dirs.dst.join("f"));
        let after = std::fs::metadata(dirs.dst.join("f"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(after, before);
        assert_eq!(dirs.listing(), ["f"]);
    }
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
    let src = dirs.source("f", b"data");
    let target = dirs.src.parent().unwrap().join("target");
    std::fs::write(&target, b"untouched").unwrap();
    std::os::unix::fs::symlink(&target, dirs.part("f")).unwrap();
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
/// figures and what to do, before any data, leaving nothing behind.
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
            "not enough space: need 1001 bytes, have 1000 bytes; the receiver takes no \
             larger file (--max-file-size)"
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
    std::fs::write(dirs.part("f"), &data[..600]).unwrap();
    for (limit, fits) in [(1000, false), (1001, true)] {
        let options = ReceiveOptions {
            max_file_bytes: Some(limit),
            ..ReceiveOptions::default()
        };
        let run = send(&src, "f", &dirs.dst, &options).await;
        match run.sent {
            Ok(_) => assert!(fits),
            Err(TransferError::Refused { message, .. }) => {
                assert!(!fits);
                assert!(
                    message
                        .as_str()
                        .starts_with("not enough space: need 401 bytes, have 400 bytes"),
                    "{message}"
                );
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), data);
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
    let expected = receiver_disk_full().to_string();
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
    assert_eq!(std::fs::metadata(dirs.part("f")).unwrap().len(), MIB as u64);
    // The sender stopped well before the end.
    assert!(run.wire_bytes < 3 * MIB as u64);
}

fn receiver_disk_full() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::ENOSPC);
    #[cfg(not(unix))]
    return io::Error::from(io::ErrorKind::StorageFull);
}

/// Frames as the sender writes them.
pub(super) fn sender_frames(frames: &[SenderFrame<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        frame.emit(&mut out);
    }
    out
}

/// Frames as the receiver writes them.
pub(super) fn receiver_frames(frames: &[ReceiverFrame]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        frame.emit(&mut out);
    }
    out
}

/// An OFFER of `data` under `name`, without metadata.
pub(super) fn offer(name: &str, size: u64) -> SenderFrame<'static> {
    SenderFrame::Offer(Offer {
        name: TransferName::parse(name).unwrap(),
        size: Some(size),
        metadata: None,
    })
}

/// A whole file as a sender writes it, DATA in pieces, with the END
/// carrying `hash`.
pub(super) fn file_frames(name: &str, data: &[u8], hash: Hash) -> Vec<u8> {
    let mut frames = vec![offer(name, data.len() as u64)];
    frames.extend(data.chunks(wire::MAX_DATA_LEN).map(SenderFrame::Data));
    frames.push(SenderFrame::End(hash));
    sender_frames(&frames)
}

/// The one-lane preamble.
pub(super) fn preamble() -> Vec<u8> {
    wire::preamble(Lane::single()).to_vec()
}

/// Runs the real receiver on one end of a pipe.
pub(super) async fn receive_alone(
    stream: DuplexStream,
    dst: &Path,
    options: ReceiveOptions,
) -> Result<Received, TransferError> {
    let (mut reader, mut writer) = split(stream);
    receive_file(&mut reader, &mut writer, dst, &options, |_| {}).await
}

/// Reads every frame a receiver writes until its stream ends.
pub(super) async fn read_all_answers(reader: &mut ReadHalf<DuplexStream>) -> Vec<ReceiverFrame> {
    let mut buf = wire::frame_buf();
    let mut frames = Vec::new();
    while let Ok(frame) = wire::read_receiver_frame(reader, &mut buf).await {
        frames.push(frame);
    }
    frames
}

/// A sender whose process dies after 5000 bytes of data: the receiver
/// reports the broken stream, nothing appears under the name, and the
/// partial file holds those 5000 bytes.
#[tokio::test]
async fn a_sender_that_exits_mid_transfer_leaves_a_partial_file() {
    let dirs = Dirs::new();
    let data = random_bytes(22, 20_000);
    let mut bytes = preamble();
    bytes.extend(sender_frames(&[
        offer("f", 20_000),
        SenderFrame::Data(&data[..5000]),
    ]));
    let (a, b) = duplex(PIPE_LEN);
    let sender = async move {
        let (mut reader, mut writer) = split(a);
        writer.write_all(&bytes).await.unwrap();
        let mut buf = wire::frame_buf();
        let answer = wire::read_receiver_frame(&mut reader, &mut buf)
            .await
            .unwrap();
        drop((reader, writer));
        answer
    };
    let (answer, received) = tokio::join!(
        sender,
        receive_alone(b, &dirs.dst, ReceiveOptions::default()),
    );
    assert_eq!(answer, ReceiverFrame::Accept);
    match received {
        Err(error @ TransferError::PeerClosed { .. }) => {
            assert_eq!(
                error.to_string(),
                "the peer closed the connection during the data"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(dirs.listing(), [part_file_name("f")]);
    assert_eq!(std::fs::read(dirs.part("f")).unwrap(), data[..5000]);
}

/// Data that does not hash to the END's hash: the receiver says so,
/// deletes it, and stores nothing.
#[tokio::test]
async fn data_that_does_not_match_its_end_is_deleted() {
    let dirs = Dirs::new();
    let data = random_bytes(23, 20_000);
    let wrong = blake3::hash(b"something else");
    let mut bytes = preamble();
    bytes.extend(file_frames("f", &data, wrong));
    bytes.extend(sender_frames(&[SenderFrame::Bye]));
    let (a, b) = duplex(PIPE_LEN);
    let sender = async move {
        let (mut reader, mut writer) = split(a);
        writer.write_all(&bytes).await.unwrap();
        writer.shutdown().await.unwrap();
        read_all_answers(&mut reader).await
    };
    let (answers, received) = tokio::join!(
        sender,
        receive_alone(b, &dirs.dst, ReceiveOptions::default())
    );
    let actual = blake3::hash(&data);
    assert_eq!(
        answers,
        [
            ReceiverFrame::Accept,
            ReceiverFrame::Outcome(Outcome::HashMismatch { actual }),
            ReceiverFrame::Bye
        ]
    );
    assert!(matches!(
        received,
        Err(TransferError::HashMismatch { expected, actual: a }) if expected == wrong && a == actual
    ));
    assert!(dirs.listing().is_empty(), "{:?}", dirs.listing());
}

/// A sender that stops a file (Ctrl-C) has it canceled: the receiver keeps
/// what arrived and lets the name go at once, and a rerun resumes from it.
#[tokio::test]
async fn a_stopped_file_is_kept_and_resumes() {
    let dirs = Dirs::new();
    let data = random_bytes(24, 4 * MIB);
    let src = dirs.source("f", &data);
    let inbox = Inbox::directory(&dirs.dst, ReceiveOptions::default());
    let (stopper, stop) = Stop::new();
    let (a, b) = duplex(PIPE_LEN);
    let sources = Sources::new([Source::File {
        path: src.clone(),
        name: TransferName::parse("f").unwrap(),
    }]);
    let stopped_at = Mutex::new(None);
    let sender = async {
        let (mut reader, mut writer) = split(a);
        send_lane(
            &mut reader,
            &mut writer,
            Lane::single(),
            &sources,
            &SendOptions::default(),
            &stop,
            &|event: Event<'_>| {
                if let EventKind::Progress(p) = event.kind {
                    if p.done >= MIB as u64 && stopped_at.lock().unwrap().is_none() {
                        *stopped_at.lock().unwrap() = Some(p.done);
                        stopper.stop();
                    }
                }
            },
        )
        .await
    };
    let receiver = async {
        let (mut reader, mut writer) = split(b);
        receive_lane(&mut reader, &mut writer, &inbox, &Peer::unknown(), &|_| {}).await
    };
    let (sent, received) = tokio::join!(sender, receiver);
    sent.end.unwrap();
    received.end.unwrap();
    let kept = match &sent.files[0].outcome {
        FileOutcome::Stopped { kept, why } => {
            assert_eq!(why, "interrupted");
            *kept
        }
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        &received.files[0].outcome,
        FileOutcome::Stopped { kept: k, why } if *k == kept && why == "interrupted"
    ));
    assert!(kept >= MIB as u64, "{kept}");
    assert_eq!(
        std::fs::read(dirs.part("f")).unwrap(),
        data[..kept as usize]
    );
    assert!(!dirs.dst.join("f").exists());

    // The name is free at once: the rerun (through the same inbox) resumes.
    let (a, b) = duplex(PIPE_LEN);
    let sources = Sources::new([Source::File {
        path: src,
        name: TransferName::parse("f").unwrap(),
    }]);
    let sender = async {
        let (mut reader, mut writer) = split(a);
        let options = SendOptions::default();
        send_lane(
            &mut reader,
            &mut writer,
            Lane::single(),
            &sources,
            &options,
            &Stop::never(),
            &|_| {},
        )
        .await
    };
    let receiver = async {
        let (mut reader, mut writer) = split(b);
        receive_lane(&mut reader, &mut writer, &inbox, &Peer::unknown(), &|_| {}).await
    };
    let (sent, _) = tokio::join!(sender, receiver);
    assert!(matches!(sent.files[0].outcome, FileOutcome::Done(_)));
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
        let mut bytes = preamble();
        if after_offer {
            bytes.extend(sender_frames(&[offer("f", 4)]));
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
            // Only four bytes and their own hash could store a file.
            Ok(received) => {
                prop_assert_eq!(received.size, 4);
                let stored = std::fs::read(dirs.dst.join("f")).unwrap();
                prop_assert_eq!(received.hash, blake3::hash(&stored));
            }
            Err(_) => prop_assert!(!dirs.dst.join("f").exists()),
        }
    }
}

fn assert_send<T: Send>(_: &T) {}

/// The lane futures can be spawned on a multi-threaded runtime: nothing
/// that is not `Sync` is held across an await, whatever the sources.
#[test]
fn lane_futures_are_send() {
    let (a, b) = duplex(1);
    let (mut reader, mut writer) = split(a);
    let sources = Sources::new([Source::Stream {
        reader: Box::new(tokio::io::empty()),
        name: TransferName::parse("s").unwrap(),
    }]);
    let events = |_: Event<'_>| {};
    let stop = Stop::never();
    let options = SendOptions::default();
    let sending = send_lane(
        &mut reader,
        &mut writer,
        Lane::single(),
        &sources,
        &options,
        &stop,
        &events,
    );
    assert_send(&sending);
    let (mut reader, mut writer) = split(b);
    let inbox = Inbox::writer(tokio::io::sink(), ReceiveOptions::default());
    let peer = Peer::unknown();
    let receiving = receive_lane(&mut reader, &mut writer, &inbox, &peer, &events);
    assert_send(&receiving);
    let name = TransferName::parse("s").unwrap();
    let path = PathBuf::from("s");
    let mut count = 0;
    let (mut reader, mut writer) = split(duplex(1).0);
    let one = send_file(&mut reader, &mut writer, &path, &name, |_| count += 1);
    assert_send(&one);
    drop(one);
    let (mut reader, mut writer) = split(duplex(1).0);
    let options = ReceiveOptions::default();
    let one = receive_file(&mut reader, &mut writer, &path, &options, |_| count += 1);
    assert_send(&one);
}
