//! Several lanes of one transfer, and lanes of several connections into
//! one inbox.

use std::sync::Arc;

use tokio::sync::Notify;

use super::*;

/// The names `f00`, `f01`, … of `count` files written into `dirs.src`,
/// file `i` being `size(i)` bytes of seed `i`.
fn make_files(dirs: &Dirs, count: usize, size: impl Fn(usize) -> usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let name = format!("f{i:02}");
            dirs.source(&name, &random_bytes(i as u64, size(i)));
            name
        })
        .collect()
}

/// The names a lane's reports name, in order.
fn sent_names(lane: &SendLane) -> Vec<&str> {
    lane.files.iter().map(|f| f.name.as_str()).collect()
}

/// Forty files of sizes from nothing to 300 kB over three lanes: each
/// arrives whole, each is reported on exactly one lane, on the same lane
/// on both sides, and every lane knows its place and ends with a goodbye.
#[tokio::test]
async fn files_spread_over_three_lanes_all_arrive() {
    let dirs = Dirs::new();
    let names = make_files(&dirs, 40, |i| (i * 7919) % 300_000);
    let sources = file_sources(&dirs.src, &names);
    let inbox = Inbox::directory(&dirs.dst, ReceiveOptions::default());
    let pipes = (0..3).map(|_| duplex(PIPE_LEN)).collect();
    let lanes = send_lanes(
        pipes,
        &sources,
        &SendOptions::default(),
        &inbox,
        &Peer::unknown(),
        &|_| {},
    )
    .await;

    let mut all = Vec::new();
    for (index, (sent, received)) in lanes.iter().enumerate() {
        sent.end.as_ref().unwrap();
        received.end.as_ref().unwrap();
        assert_eq!(received.lane, Lane::new(index as u8, 3));
        let receiver_names: Vec<&str> = received.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(sent_names(sent), receiver_names);
        for report in &sent.files {
            assert!(matches!(report.outcome, FileOutcome::Done(_)), "{report:?}");
        }
        all.extend(sent_names(sent));
    }
    all.sort_unstable();
    assert_eq!(all, names);
    for name in &names {
        assert_eq!(
            std::fs::read(dirs.dst.join(name)).unwrap(),
            std::fs::read(dirs.src.join(name)).unwrap()
        );
    }
    assert_eq!(dirs.listing(), names);
}

/// A lane takes the next file as soon as it has written the last one's
/// data: a large first file keeps one lane busy while the other carries
/// every small file, and the small files are all stored before it.
#[tokio::test(start_paused = true)]
async fn a_large_file_does_not_hold_back_small_ones() {
    let dirs = Dirs::new();
    let names = make_files(&dirs, 21, |i| if i == 0 { 8 * MIB } else { 1000 });
    let sources = file_sources(&dirs.src, &names);
    let inbox = Inbox::directory(&dirs.dst, ReceiveOptions::default());
    let stored = Mutex::new(Vec::new());
    let pipes = (0..2)
        .map(|_| delayed_pipe(Duration::from_millis(50), 256 << 10))
        .collect();
    let events = |event: Event<'_>| {
        if matches!(event.kind, EventKind::Finished(Ending::Stored)) {
            stored.lock().unwrap().push(event.name.to_string());
        }
    };
    let lanes = send_lanes(
        pipes,
        &sources,
        &SendOptions::default(),
        &inbox,
        &Peer::unknown(),
        &events,
    )
    .await;
    assert_eq!(sent_names(&lanes[0].0), ["f00"]);
    assert_eq!(sent_names(&lanes[1].0), names[1..]);
    // Both sides report each file finished; the large one is last.
    let stored = stored.into_inner().unwrap();
    assert_eq!(stored.len(), 2 * names.len());
    assert_eq!(stored[stored.len() - 2..], ["f00", "f00"]);
    assert_eq!(dirs.listing(), names);
}

/// Each file's end is told once on each side, as it happened, as soon as
/// it is known: stored, already there, refused, or failed on the sender
/// before it was offered.
#[tokio::test]
async fn each_file_ends_once_on_each_side_as_it_happened() {
    let dirs = Dirs::new();
    let names = make_files(&dirs, 3, |_| 5000);
    std::fs::copy(dirs.src.join("f01"), dirs.dst.join("f01")).unwrap();
    std::fs::write(dirs.dst.join("f02"), b"the receiver's own").unwrap();
    let mut sources: Vec<Source> = names
        .iter()
        .map(|name| Source::File {
            path: dirs.src.join(name),
            name: TransferName::parse(name).unwrap(),
        })
        .collect();
    sources.push(Source::File {
        path: dirs.src.join("missing"),
        name: TransferName::parse("missing").unwrap(),
    });
    let sources = Sources::new(sources);
    let inbox = Inbox::directory(&dirs.dst, ReceiveOptions::default());
    let ends = Mutex::new(Vec::new());
    let events = |event: Event<'_>| {
        let ending = match event.kind {
            EventKind::Finished(Ending::Stored) => "stored".to_owned(),
            EventKind::Finished(Ending::AlreadyPresent) => "present".to_owned(),
            EventKind::Finished(Ending::Stopped { kept }) => format!("stopped at {kept}"),
            EventKind::Finished(Ending::Failed(error)) => format!("failed: {error}"),
            _ => return,
        };
        ends.lock()
            .unwrap()
            .push(format!("{} {ending}", event.name));
    };
    let lanes = send_lanes(
        vec![duplex(PIPE_LEN)],
        &sources,
        &SendOptions::default(),
        &inbox,
        &Peer::unknown(),
        &events,
    )
    .await;
    lanes[0].0.end.as_ref().unwrap();
    let mut ends = ends.into_inner().unwrap();
    ends.sort();
    let refused = "failed: refused (exists): f02 exists on the receiver and differs; the \
                   receiver can overwrite it with `ltx recv --force`";
    assert_eq!(
        ends,
        [
            "f00 stored".to_owned(),
            "f00 stored".to_owned(),
            "f01 present".to_owned(),
            "f01 present".to_owned(),
            format!("f02 {refused}"),
            format!("f02 {refused}"),
            format!(
                "missing failed: cannot open {}",
                dirs.src.join("missing").display()
            ),
        ]
    );
}

/// What a sender whose process hung wrote: the lane's preamble, the offer
/// of `data`, and its first `sent` bytes. The stream stays open.
fn hung_sender_bytes(name: &str, data: &[u8], sent: usize) -> Vec<u8> {
    let mut frames = vec![offer(name, data.len() as u64)];
    frames.extend(
        data[..sent]
            .chunks(wire::MAX_DATA_LEN)
            .map(SenderFrame::Data),
    );
    let mut bytes = preamble();
    bytes.extend(sender_frames(&frames));
    bytes
}

/// What happened when a second connection offered a file a first one
/// holds.
struct Contest {
    /// The first connection's lane, on the receiver.
    first: ReceiveLane,
    /// The second connection's lane, on the sender.
    second: SendLane,
    /// How long the second waited for its answer, in tokio's time.
    waited: Duration,
}

/// A first connection from `first` sends 1 MiB of a 4 MiB file and goes
/// quiet, silent for `silence` by its connection's measure; then a second
/// connection from `second` offers the whole file into the same inbox.
async fn contest(
    dirs: &Dirs,
    data: &[u8],
    options: ReceiveOptions,
    first: &[u8],
    silence: Duration,
    second: &[u8],
) -> Contest {
    let src = dirs.source("f", data);
    let inbox = Inbox::directory(&dirs.dst, options);
    let quiet = Arc::new(Mutex::new(Duration::ZERO));
    let first = {
        let quiet = quiet.clone();
        Peer::new(first, move || *quiet.lock().unwrap())
    };
    let second = Peer::new(second, || Duration::ZERO);
    let holding = Notify::new();
    let (a, b) = duplex(PIPE_LEN);
    let first_receiver = async {
        let (mut reader, mut writer) = split(b);
        let events = |event: Event<'_>| {
            if matches!(event.kind, EventKind::Progress(p) if p.done >= MIB as u64) {
                holding.notify_one();
            }
        };
        receive_lane(&mut reader, &mut writer, &inbox, &first, &events).await
    };
    let second_sender = async {
        let (_hung_reader, mut hung_writer) = split(a);
        hung_writer
            .write_all(&hung_sender_bytes("f", data, MIB))
            .await
            .unwrap();
        holding.notified().await;
        *quiet.lock().unwrap() = silence;
        let started = tokio::time::Instant::now();
        let sources = Sources::new([Source::File {
            path: src.clone(),
            name: TransferName::parse("f").unwrap(),
        }]);
        let pipe = delayed_pipe(Duration::from_millis(50), 256 << 10);
        let mut lanes = send_lanes(
            vec![pipe],
            &sources,
            &SendOptions::default(),
            &inbox,
            &second,
            &|_| {},
        )
        .await;
        let (sent, _) = lanes.remove(0);
        // The hung sender's stream ends here, if nothing ended it before.
        (sent, started.elapsed())
    };
    let (first, (second, waited)) = tokio::join!(first_receiver, second_sender);
    Contest {
        first,
        second,
        waited,
    }
}

/// The sender runs again after its first run hung: the receiver sees the
/// same sender key offer the file its silent first connection holds, stops
/// that one (which keeps its partial file), and the rerun resumes from it.
#[tokio::test(start_paused = true)]
async fn a_rerun_takes_over_what_its_silent_first_run_holds() {
    let dirs = Dirs::new();
    let data = random_bytes(41, 4 * MIB);
    let options = ReceiveOptions::default();
    let silence = options.quiet_before_takeover;
    let contest = contest(&dirs, &data, options, b"key", silence, b"key").await;

    match &contest.first.files[0].outcome {
        FileOutcome::Failed(TransferError::PeerClosed { source, .. }) => {
            assert!(source.to_string().contains("took it over"), "{source}")
        }
        other => panic!("{other:?}"),
    }
    assert!(contest.first.end.is_err());
    match &contest.second.files[0].outcome {
        FileOutcome::Done(sent) => {
            assert_eq!(sent.resumed_from, MIB as u64);
            assert_eq!(sent.bytes_sent, (3 * MIB) as u64 + early_bytes(sent));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(dirs.dst.join("f")).unwrap(), data);
    assert_eq!(dirs.listing(), ["f"]);
}

/// The bytes a resumed file sent before its SEEK.
fn early_bytes(sent: &Sent) -> u64 {
    sent.bytes_sent - (sent.size - sent.resumed_from)
}

/// Just short of the quiet that allows a take-over, the first connection
/// counts as alive: the rerun waits for it to end (twice the quiet at
/// most), then is refused, told why, and the first keeps the file.
#[tokio::test(start_paused = true)]
async fn a_rerun_does_not_take_over_a_transfer_that_is_still_talking() {
    let dirs = Dirs::new();
    let data = random_bytes(42, 4 * MIB);
    let options = ReceiveOptions::default();
    let quiet = options.quiet_before_takeover;
    let silence = quiet - Duration::from_millis(100);
    let contest = contest(&dirs, &data, options, b"key", silence, b"key").await;

    match &contest.second.files[0].outcome {
        FileOutcome::Failed(TransferError::Refused {
            reason: RefuseReason::Busy,
            message,
        }) => assert!(message.as_str().contains("still active"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(contest.waited >= quiet * 2, "{:?}", contest.waited);
    assert!(
        contest.waited < quiet * 2 + Duration::from_secs(1),
        "{:?}",
        contest.waited
    );
    // The first transfer kept the file until its stream ended.
    assert!(matches!(
        &contest.first.files[0].outcome,
        FileOutcome::Failed(TransferError::PeerClosed {
            stage: Stage::Data,
            ..
        })
    ));
    assert_eq!(dirs.listing(), [part_file_name("f")]);
}

/// Another sender's transfer is not taken over however long it has been
/// silent: the refusal comes at once and says how long to wait.
#[tokio::test(start_paused = true)]
async fn another_sender_is_told_how_long_to_wait() {
    let dirs = Dirs::new();
    let data = random_bytes(43, 4 * MIB);
    let options = ReceiveOptions {
        gives_up_after: Some(Duration::from_secs(30)),
        ..ReceiveOptions::default()
    };
    let silence = Duration::from_secs(10);
    let contest = contest(&dirs, &data, options, b"key", silence, b"other key").await;

    match &contest.second.files[0].outcome {
        FileOutcome::Failed(TransferError::Refused {
            reason: RefuseReason::Busy,
            message,
        }) => assert!(
            message
                .as_str()
                .contains("silent for 10 s; the receiver gives it up after 30 s of silence: run again in 20 s"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    // No waiting: the refusal's round trip, then the goodbye's after the
    // data that was on its way was canceled.
    assert!(
        contest.waited <= Duration::from_millis(250),
        "{:?}",
        contest.waited
    );
    assert_eq!(dirs.listing(), [part_file_name("f")]);
}
