//! What the file protocol costs in round trips, timed in tokio's paused
//! time over a pipe with a delay each way: a sender writes a file's offer,
//! data and end without waiting for an answer, and the next file's at
//! once, so that a small file, or many, cost one round trip in all (the
//! last answers coming back), not one or more each.

use super::*;

/// Half the round trip of the path these tests run over (a 600 ms path, as
/// a geostationary hop has).
const ONE_WAY: Duration = Duration::from_millis(300);

/// The round trip.
const RTT: Duration = Duration::from_millis(600);

/// A window large enough that no test here waits for it.
const WINDOW: usize = 4 << 20;

/// Sends the files `names` of `dirs.src` over `lanes` delayed lanes into a
/// fresh inbox on `dirs.dst`; returns the lanes' reports and the time the
/// sender took, from its first byte to the receiver's last goodbye.
async fn timed(
    dirs: &Dirs,
    names: &[String],
    lanes: usize,
    options: ReceiveOptions,
) -> (Vec<(SendLane, ReceiveLane)>, Duration) {
    let sources = file_sources(&dirs.src, names);
    let inbox = Inbox::directory(&dirs.dst, options);
    let pipes = (0..lanes).map(|_| delayed_pipe(ONE_WAY, WINDOW)).collect();
    let started = tokio::time::Instant::now();
    let lanes = send_lanes(
        pipes,
        &sources,
        &SendOptions::default(),
        &inbox,
        &Peer::unknown(),
        &|_| {},
    )
    .await;
    (lanes, started.elapsed())
}

/// The outcome of every file the sender reported, in lane order.
fn outcomes(lanes: &[(SendLane, ReceiveLane)]) -> Vec<&FileOutcome<Sent>> {
    lanes
        .iter()
        .flat_map(|(sent, _)| sent.files.iter().map(|f| &f.outcome))
        .collect()
}

fn small_files(dirs: &Dirs, count: usize, size: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let name = format!("small-{i:03}");
            dirs.source(&name, &random_bytes(i as u64, size));
            name
        })
        .collect()
}

/// A 3-byte file takes one round trip: the offer, data, end and goodbye go
/// out together, and the answers to all of them come back together.
#[tokio::test(start_paused = true)]
async fn a_small_file_costs_one_round_trip() {
    let dirs = Dirs::new();
    let names = small_files(&dirs, 1, 3);
    let (lanes, took) = timed(&dirs, &names, 1, ReceiveOptions::default()).await;
    assert!(matches!(outcomes(&lanes)[..], [FileOutcome::Done(_)]));
    assert!(took >= RTT, "{took:?}");
    assert!(took < RTT + ONE_WAY, "{took:?}");
}

/// A hundred files of 1 kB on one lane, and on four, also take one round
/// trip in all: the sender does not wait for a file's answer before the
/// next file.
#[tokio::test(start_paused = true)]
async fn a_hundred_small_files_cost_one_round_trip_in_all() {
    for lanes in [1, 4] {
        let dirs = Dirs::new();
        let names = small_files(&dirs, 100, 1000);
        let (reports, took) = timed(&dirs, &names, lanes, ReceiveOptions::default()).await;
        let done = outcomes(&reports);
        assert_eq!(done.len(), 100);
        assert!(done.iter().all(|o| matches!(o, FileOutcome::Done(_))));
        assert!(took >= RTT, "{lanes} lanes: {took:?}");
        assert!(took < RTT + ONE_WAY, "{lanes} lanes: {took:?}");
        assert_eq!(dirs.listing(), names);
    }
}

/// A refusal and a file already present do not cost a round trip more:
/// the answers come back with the others.
#[tokio::test(start_paused = true)]
async fn refused_and_present_files_cost_no_round_trip_more() {
    let dirs = Dirs::new();
    let names = small_files(&dirs, 10, 1000);
    // One exists with other content (refused), one is there already.
    std::fs::write(dirs.dst.join(&names[3]), b"other").unwrap();
    std::fs::copy(dirs.src.join(&names[6]), dirs.dst.join(&names[6])).unwrap();
    let (reports, took) = timed(&dirs, &names, 1, ReceiveOptions::default()).await;
    let done = outcomes(&reports);
    for (i, outcome) in done.iter().enumerate() {
        match (i, outcome) {
            (3, FileOutcome::Failed(TransferError::Refused { reason, .. })) => {
                assert_eq!(*reason, RefuseReason::Exists)
            }
            (6, FileOutcome::Done(sent)) => assert!(sent.already_present),
            (_, FileOutcome::Done(sent)) => assert!(!sent.already_present),
            other => panic!("{other:?}"),
        }
    }
    assert!(took < RTT + ONE_WAY, "{took:?}");
}

/// A file that needs more than one flight of the window takes longer, by
/// the flights it needs, and no round trip more: 4 MiB and its framing
/// through a 1 MiB window is five windows, a one-way delay each, plus the
/// last answer's way back.
#[tokio::test(start_paused = true)]
async fn a_large_file_costs_its_windows_and_no_more() {
    let dirs = Dirs::new();
    let data = random_bytes(60, 4 * MIB);
    let src = dirs.source("big", &data);
    let window = MIB;
    let path = delayed_pipe(ONE_WAY, window);
    let started = tokio::time::Instant::now();
    let run = run_over(
        path,
        &src,
        "big",
        &dirs.dst,
        &ReceiveOptions::default(),
        None,
    )
    .await;
    let took = started.elapsed();
    run.sent.unwrap();
    // Each window's worth leaves only once the one before has arrived:
    // one one-way delay per window of the bytes on the wire (the data
    // and its framing), and the answers' way back.
    let windows = wire_len("big", data.len() as u64).div_ceil(window as u64) as u32;
    let least = ONE_WAY * windows + ONE_WAY;
    assert!(took >= least, "{took:?}");
    assert!(took < least + ONE_WAY, "{took:?}");
}
