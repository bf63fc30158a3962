//! The display drawn on an in-memory terminal: what a person sees.

use std::time::{Duration, Instant};

use indicatif::InMemoryTerm;

use super::{Display, FileLine};

const MB: u64 = 1_000_000;

fn terminal() -> (InMemoryTerm, Display) {
    let term = InMemoryTerm::new(12, 120);
    let display = Display::on_terminal(term.clone());
    (term, display)
}

/// The screen's lines that are not blank.
fn lines(term: &InMemoryTerm) -> Vec<String> {
    term.contents()
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Moves `line` from nothing to `size` bytes over `seconds`, a step a
/// second, and returns the time it got there.
fn run(line: &mut FileLine, start: Instant, size: u64, seconds: u64) -> Instant {
    for s in 0..=seconds {
        line.progress(start + Duration::from_secs(s), size * s / seconds, size);
    }
    start + Duration::from_secs(seconds)
}

#[test]
fn each_file_has_one_line_and_no_ghost_above_it() {
    let (term, display) = terminal();
    let start = Instant::now();
    let mut first = display.file(Some("first.bin"), 200 * MB);
    let mut second = display.file(Some("second.bin"), 3 * MB);
    run(&mut first, start, 200 * MB, 4);
    let end = run(&mut second, start, 3 * MB, 2);
    first.finish(end, None);
    second.finish(end, None);

    let shown = lines(&term);
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert!(shown[0].starts_with("first.bin"), "{shown:#?}");
    assert!(shown[1].starts_with("second.bin"), "{shown:#?}");
    assert!(!term.contents().contains("0 B/"), "{}", term.contents());
}

#[test]
fn a_finished_file_says_what_moved_in_what_time_in_decimal_units() {
    let (term, display) = terminal();
    let start = Instant::now();
    let mut line = display.file(Some("big.bin"), 5 * MB);
    let end = run(&mut line, start, 5 * MB, 4);
    line.finish(end, Some((5 * MB, Duration::from_secs(4))));

    let shown = lines(&term);
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(
        shown[0].contains("5.0 MB in 4.00 s, 10.0 Mbit/s"),
        "{shown:#?}"
    );
    assert!(!shown[0].contains("MiB"), "{shown:#?}");
}

#[test]
fn a_receiver_shows_the_name_the_offer_gave() {
    let (term, display) = terminal();
    let mut line = display.file(None, MB);
    line.named("photos/holiday.jpg");
    line.progress(Instant::now(), 0, MB);
    line.end_with("already on the receiver".to_owned());

    let shown = lines(&term);
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(shown[0].starts_with("photos/holiday.jpg"), "{shown:#?}");
    assert!(!shown[0].contains('…'), "{shown:#?}");
}

#[test]
fn a_refused_file_shows_why_and_no_bar() {
    let (term, display) = terminal();
    let mut line = display.file(Some("big.bin"), 200 * MB);
    line.progress(Instant::now(), 0, 200 * MB);
    line.end_with("refused: exists on the receiver".to_owned());

    let shown = lines(&term);
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(
        shown[0].contains("refused: exists on the receiver"),
        "{shown:#?}"
    );
    assert!(
        !shown[0].contains('█') && !shown[0].contains('░'),
        "{shown:#?}"
    );
}

#[test]
fn a_resumed_file_rates_only_the_bytes_this_run_moves() {
    let (term, display) = terminal();
    let start = Instant::now();
    let mut line = display.file(Some("big.bin"), 100 * MB);
    // 90 MB were there before this run; 1 MB a second arrive now.
    for s in 0..=5 {
        line.progress(start + Duration::from_secs(s), 90 * MB + s * MB, 100 * MB);
    }
    let shown = lines(&term);
    assert!(shown[0].contains("95.0 MB/100.0 MB"), "{shown:#?}");
    assert!(shown[0].contains("8.0 Mbit/s"), "{shown:#?}");
    assert!(shown[0].contains("5 s left"), "{shown:#?}");
}

#[test]
fn a_note_goes_above_the_live_lines() {
    let (term, display) = terminal();
    let mut line = display.file(Some("big.bin"), MB);
    line.progress(Instant::now(), MB / 2, MB);
    display.note("resuming at 500.0 kB");

    let shown = lines(&term);
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert_eq!(shown[0], "resuming at 500.0 kB");
    assert!(shown[1].starts_with("big.bin"), "{shown:#?}");
}

#[tokio::test]
async fn a_connection_line_goes_when_the_connection_ends() {
    let (term, display) = terminal();
    let mut file = display.file(Some("big.bin"), MB);
    let live = display.live_line(|| "rtt 600 ms · loss 10.0 %".to_owned());
    tokio::time::sleep(Duration::from_millis(300)).await;
    file.progress(Instant::now(), MB / 2, MB);
    assert!(
        term.contents().contains("rtt 600 ms"),
        "{}",
        term.contents()
    );

    drop(live);
    file.finish(Instant::now(), Some((MB, Duration::from_secs(1))));
    let shown = lines(&term);
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(!term.contents().contains("rtt"), "{}", term.contents());
}
