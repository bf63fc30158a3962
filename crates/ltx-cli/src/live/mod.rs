//! What the transfer commands show while they run: a line per file with
//! its progress, rate and time left; a line per connection with its live
//! estimates; notes above them. One system of units throughout
//! ([`units`]): bytes in kB/MB/GB, rates in bit/s.
//!
//! Every line is added to the display before it draws anything, so none
//! is drawn twice or left behind; a connection's line goes when the
//! connection ends.

pub mod meter;
pub mod units;

use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use ltx::{Connection, ConnectionStats};

use meter::RateMeter;

/// Redraws per second at most.
const REFRESH_HZ: u8 = 20;

/// Columns a file's name gets on its line.
const NAME_WIDTH: usize = 24;

/// The live display of a transfer command, on stderr; hidden for `--json`
/// (and by indicatif when stderr is not a terminal).
#[derive(Debug, Clone)]
pub struct Display {
    bars: MultiProgress,
}

impl Display {
    /// The display on stderr, or none at all when `hidden`.
    pub fn new(hidden: bool) -> Display {
        let target = if hidden {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        Display {
            bars: MultiProgress::with_draw_target(target),
        }
    }

    /// The display on a terminal of the caller's, e.g. an in-memory one in
    /// a test.
    pub fn on_terminal(terminal: impl TermLike + 'static) -> Display {
        let target = ProgressDrawTarget::term_like_with_hz(Box::new(terminal), REFRESH_HZ);
        Display {
            bars: MultiProgress::with_draw_target(target),
        }
    }

    /// Whether nothing is drawn.
    pub fn is_hidden(&self) -> bool {
        self.bars.is_hidden()
    }

    /// Prints `line` above the live lines (on stderr when hidden: a note is
    /// never lost because the bars are off).
    pub fn note(&self, line: &str) {
        if self.bars.is_hidden() {
            eprintln!("{line}");
        } else {
            let _ = self.bars.println(line);
        }
    }

    /// A spinner with `message`, e.g. while connecting; clear it with
    /// `finish_and_clear`.
    pub fn spinner(&self, message: String) -> ProgressBar {
        let spinner = self.add(ProgressBar::new_spinner());
        spinner.set_message(message);
        spinner.enable_steady_tick(Duration::from_millis(120));
        spinner
    }

    /// The line of one file of `size` bytes; `name` may come later
    /// ([`FileLine::named`]) on a receiver that learns it from the offer.
    pub fn file(&self, name: Option<&str>, size: u64) -> FileLine {
        let bar = self.add(ProgressBar::new(size).with_style(progress_style()));
        let mut line = FileLine {
            bar,
            meter: RateMeter::default(),
            detail: String::new(),
        };
        line.named(name.unwrap_or("(waiting for its name)"));
        line
    }

    /// A line with `connection`'s live estimates, as seen from `side`,
    /// until the returned guard is dropped, which clears it.
    pub fn connection(&self, connection: Connection, side: Side) -> ConnectionLine {
        self.live_line(move || describe(&connection.stats(), side))
    }

    /// A line that shows what `text` says, four times a second, until the
    /// returned guard is dropped, which clears it.
    fn live_line(&self, text: impl Fn() -> String + Send + 'static) -> ConnectionLine {
        let line = self.add(ProgressBar::new_spinner());
        let task = tokio::spawn({
            let line = line.clone();
            async move {
                loop {
                    line.set_message(text());
                    line.tick();
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        });
        ConnectionLine { line, task }
    }

    /// Adds `bar` before it has drawn anything: a bar that draws on its own
    /// first leaves a ghost copy above the display.
    fn add(&self, bar: ProgressBar) -> ProgressBar {
        bar.set_draw_target(ProgressDrawTarget::hidden());
        self.bars.add(bar)
    }
}

/// Which end's view of a connection a line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The end that sends the data: its loss estimate and redundancy.
    Sending,
    /// The end that receives it: the loss dealt to it and what coding
    /// repaired.
    Receiving,
}

fn progress_style() -> ProgressStyle {
    ProgressStyle::with_template(&format!("{{prefix:{NAME_WIDTH}}} {{bar:30}} {{wide_msg}}"))
        .expect("a valid template")
}

fn final_style() -> ProgressStyle {
    ProgressStyle::with_template(&format!("{{prefix:{NAME_WIDTH}}} {{wide_msg}}"))
        .expect("a valid template")
}

/// One file's line: hashing, then bytes with the rate and time left of
/// the bytes this run moves, then how it ended.
#[derive(Debug)]
pub struct FileLine {
    bar: ProgressBar,
    meter: RateMeter,
    detail: String,
}

impl FileLine {
    /// Shows the file's name (its end, when it is long).
    pub fn named(&mut self, name: &str) {
        self.bar.set_prefix(units::fit_name(name, NAME_WIDTH));
    }

    /// Text after the figures, e.g. the connection's estimates.
    pub fn set_detail(&mut self, detail: String) {
        self.detail = detail;
    }

    /// `done` of `total` bytes hashed (for the resume check).
    pub fn hashing(&mut self, done: u64, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(done);
        let percent = done as f64 * 100.0 / total.max(1) as f64;
        self.bar.set_message(format!("hashing {percent:.0} %"));
    }

    /// `done` of `total` bytes are there at `now`. The first call counts
    /// what is already there as before this run (a resumed part).
    pub fn progress(&mut self, now: Instant, done: u64, total: u64) {
        self.meter.update(now, done, total);
        self.bar.set_length(total);
        self.bar.set_position(done);
        let mut message = format!("{}/{}", units::bytes(done), units::bytes(total));
        if let Some(rate) = self.meter.rate() {
            message += &format!("  {}", units::bit_rate(rate));
        }
        if let Some(left) = self.meter.time_left(now) {
            message += &format!("  {} left", units::duration(left));
        }
        if !self.detail.is_empty() {
            message += &format!("  · {}", self.detail);
        }
        self.bar.set_message(message);
    }

    /// Starts the rate and time left again at `now`, from `done` of `total`
    /// bytes: a file that resumes has its first bytes already, and they
    /// count neither in the rate nor against the time.
    pub fn resumed(&mut self, now: Instant, done: u64, total: u64) {
        self.meter = RateMeter::default();
        self.progress(now, done, total);
    }

    /// Ends the line: `bytes` moved in `elapsed` (given by the caller when
    /// it times the transfer itself, else as the meter saw them).
    pub fn finish(self, now: Instant, moved: Option<(u64, Duration)>) {
        let (bytes, elapsed) = moved.unwrap_or_else(|| self.meter.moved(now));
        let seconds = elapsed.as_secs_f64();
        let rate = if seconds > 0.0 {
            format!(", {}", units::bit_rate(bytes as f64 / seconds))
        } else {
            String::new()
        };
        self.bar.set_position(self.bar.length().unwrap_or(0));
        self.bar
            .finish_with_message(format!("{} in {seconds:.2} s{rate}", units::bytes(bytes)));
    }

    /// Ends the line with `text` instead of a bar, e.g. "refused: …",
    /// "already on the receiver", "failed: …": a bar would say more arrived
    /// than did.
    pub fn end_with(self, text: String) {
        self.bar.set_style(final_style());
        self.bar.abandon_with_message(text);
    }
}

/// A connection's line of live estimates; dropping it clears the line.
#[derive(Debug)]
pub struct ConnectionLine {
    line: ProgressBar,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ConnectionLine {
    fn drop(&mut self) {
        self.task.abort();
        self.line.finish_and_clear();
    }
}

/// The connection's live estimates as one line, from `side`'s view.
pub fn describe(stats: &ConnectionStats, side: Side) -> String {
    // An end that only receives may never measure the RTT: no figure
    // rather than the configured initial one.
    let rtt = if stats.rtt_measured {
        format!("{:.0} ms", stats.rtt.as_secs_f64() * 1e3)
    } else {
        "–".to_owned()
    };
    match side {
        Side::Sending => format!(
            "rtt {rtt} · loss {:.1} % · redundancy {:.1} % · window {}",
            stats.loss_rate * 100.0,
            stats.redundancy * 100.0,
            units::bytes(stats.cwnd)
        ),
        Side::Receiving => format!(
            "rtt {rtt} · loss {:.1} % · {} symbols repaired",
            stats.incoming_loss() * 100.0,
            stats.symbols_repaired
        ),
    }
}

/// `value` rounded to `digits` decimals, for JSON.
pub fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

/// A byte count for people: [`units::bytes`].
pub fn human_bytes(bytes: u64) -> String {
    units::bytes(bytes)
}

#[cfg(test)]
mod tests;
