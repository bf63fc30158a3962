//! The live display's lines for the files of one transfer, moved by the
//! file protocol's events: a line appears when a file's exchange starts
//! (on a receiver, under the name the offer gives), moves with its
//! hashing and data, and ends once, as the file ended.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use ltx_cli::live::{units, Display, FileLine};
use ltx_files::{Ending, Event, EventKind, Phase};

/// Which end of a transfer the lines are drawn for: the words differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// `ltx send`.
    Sender,
    /// `ltx recv`.
    Receiver,
}

/// The lines of the files under way.
pub(crate) struct FileLines {
    display: Display,
    end: End,
    /// Each file's line and its size, by transfer name.
    lines: Mutex<HashMap<String, (FileLine, Option<u64>)>>,
}

impl FileLines {
    /// No lines yet, on `display`.
    pub(crate) fn new(display: Display, end: End) -> FileLines {
        FileLines {
            display,
            end,
            lines: Mutex::new(HashMap::new()),
        }
    }

    /// Moves the lines as `event`, heard at `now`, says.
    pub(crate) fn on_event(&self, now: Instant, event: Event<'_>) {
        let name = event.name.as_str();
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        match event.kind {
            EventKind::Started { size } => {
                let line = self.display.file(Some(name), size.unwrap_or(0));
                lines.insert(name.to_owned(), (line, size));
            }
            EventKind::Progress(progress) => {
                if let Some((line, _)) = lines.get_mut(name) {
                    match progress.phase {
                        Phase::Hashing => line.hashing(progress.done, progress.total),
                        Phase::Transferring => line.progress(now, progress.done, progress.total),
                    }
                }
            }
            EventKind::Resumed { at } => {
                if let Some((line, size)) = lines.get_mut(name) {
                    line.resumed(now, at, size.unwrap_or(at));
                }
                self.display
                    .note(&format!("{name}: resuming at {}", units::bytes(at)));
            }
            EventKind::Finished(ending) => {
                if let Some((line, size)) = lines.remove(name) {
                    match self.ending_text(ending, size) {
                        None => line.finish(now, None),
                        Some(text) => line.end_with(text),
                    }
                }
            }
        }
    }

    /// What a file's line ends with instead of its figures, if anything.
    fn ending_text(&self, ending: Ending<'_>, size: Option<u64>) -> Option<String> {
        match ending {
            Ending::Stored => None,
            Ending::AlreadyPresent => Some(match self.end {
                End::Sender => "already on the receiver, identical".to_owned(),
                End::Receiver => "already here, identical".to_owned(),
            }),
            Ending::Stopped { kept } => Some(match size {
                Some(size) => format!(
                    "interrupted at {} of {}",
                    units::bytes(kept),
                    units::bytes(size)
                ),
                None => format!("interrupted at {}", units::bytes(kept)),
            }),
            Ending::Failed(error) => Some(format!("{error}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use indicatif::InMemoryTerm;
    use ltx_files::{Progress, RefuseReason, TransferError, TransferName};

    use super::*;

    const MB: u64 = 1_000_000;

    fn terminal(end: End) -> (InMemoryTerm, FileLines) {
        let term = InMemoryTerm::new(12, 140);
        let lines = FileLines::new(Display::on_terminal(term.clone()), end);
        (term, lines)
    }

    /// The screen's lines that are not blank.
    fn shown(term: &InMemoryTerm) -> Vec<String> {
        term.contents()
            .lines()
            .map(str::trim_end)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn event<'a>(name: &'a TransferName, kind: EventKind<'a>) -> Event<'a> {
        Event { name, kind }
    }

    fn moved(done: u64, total: u64) -> EventKind<'static> {
        EventKind::Progress(Progress {
            phase: Phase::Transferring,
            done,
            total,
        })
    }

    /// A receiver's lines carry the names the offers gave, and each file
    /// ends on one line, once.
    #[test]
    fn each_file_ends_once_under_its_offered_name() {
        let (term, lines) = terminal(End::Receiver);
        let t0 = Instant::now();
        let a = TransferName::parse("photos/a.jpg").unwrap();
        let b = TransferName::parse("photos/b.jpg").unwrap();
        let later = t0 + Duration::from_secs(1);
        for name in [&a, &b] {
            lines.on_event(t0, event(name, EventKind::Started { size: Some(MB) }));
            lines.on_event(t0, event(name, moved(0, MB)));
            lines.on_event(later, event(name, moved(MB, MB)));
        }
        lines.on_event(later, event(&a, EventKind::Finished(Ending::Stored)));
        lines.on_event(
            later,
            event(&b, EventKind::Finished(Ending::AlreadyPresent)),
        );
        // A late event for a file that ended draws nothing.
        lines.on_event(later, event(&a, moved(MB, MB)));

        let shown = shown(&term);
        assert_eq!(shown.len(), 2, "{shown:#?}");
        assert!(
            shown[0].starts_with("photos/a.jpg") && shown[0].contains("1.0 MB in 1.00 s"),
            "{shown:#?}"
        );
        assert!(
            shown[1].starts_with("photos/b.jpg") && shown[1].ends_with("already here, identical"),
            "{shown:#?}"
        );
    }

    /// A refused file's line says why, with no bar.
    #[test]
    fn a_refused_file_says_why_without_a_bar() {
        let (term, lines) = terminal(End::Sender);
        let t0 = Instant::now();
        let name = TransferName::parse("report.pdf").unwrap();
        lines.on_event(
            t0,
            event(
                &name,
                EventKind::Started {
                    size: Some(200 * MB),
                },
            ),
        );
        lines.on_event(t0, event(&name, moved(0, 200 * MB)));
        let refused = TransferError::Refused {
            reason: RefuseReason::Exists,
            message: ltx_files::Text::new("report.pdf exists on the receiver and differs; the receiver can overwrite it with `ltx recv --force`"),
        };
        lines.on_event(
            t0,
            event(&name, EventKind::Finished(Ending::Failed(&refused))),
        );

        let shown = shown(&term);
        assert_eq!(shown.len(), 1, "{shown:#?}");
        assert_eq!(
            shown[0].split_whitespace().nth(1),
            Some("refused"),
            "{shown:#?}"
        );
        assert!(
            !shown[0].contains('█') && !shown[0].contains('░'),
            "{shown:#?}"
        );
    }

    /// A resumed file is announced above the lines, and its rate and time
    /// left count only the bytes this run moves: 1 MB a second after 90 MB
    /// were there, not 91 MB in the first second.
    #[test]
    fn a_resumed_file_says_where_and_rates_only_the_new_bytes() {
        let (term, lines) = terminal(End::Sender);
        let t0 = Instant::now();
        let name = TransferName::parse("big.bin").unwrap();
        lines.on_event(
            t0,
            event(
                &name,
                EventKind::Started {
                    size: Some(100 * MB),
                },
            ),
        );
        lines.on_event(t0, event(&name, moved(0, 100 * MB)));
        lines.on_event(t0, event(&name, EventKind::Resumed { at: 90 * MB }));
        for s in 1..=5 {
            let now = t0 + Duration::from_secs(s);
            lines.on_event(now, event(&name, moved(90 * MB + s * MB, 100 * MB)));
        }

        let shown = shown(&term);
        assert_eq!(shown.len(), 2, "{shown:#?}");
        assert_eq!(shown[0], "big.bin: resuming at 90.0 MB");
        // The screen may show any of the last seconds (it redraws at most
        // 20 times a second): each has the same rate, and some time left.
        assert!(shown[1].contains("8.0 Mbit/s"), "{shown:#?}");
        assert!(shown[1].contains(" s left"), "{shown:#?}");
    }
}
