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

    /// Moves the lines as `event` says.
    pub(crate) fn on_event(&self, event: Event<'_>) {
        let name = event.name.as_str();
        let now = Instant::now();
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
