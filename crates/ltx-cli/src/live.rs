//! What the transfer commands show while they run: progress bars, the
//! connection's live estimates, and figures rounded for people.

use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use ltx::{Connection, ConnectionStats};

/// A progress bar for one file.
pub fn file_bar(size: u64, name: &str) -> ProgressBar {
    let bar = ProgressBar::new(size).with_style(transfer_style());
    bar.set_prefix(name.to_owned());
    bar
}

fn transfer_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix:24!} {bar:30} {bytes:>10}/{total_bytes:10} {binary_bytes_per_sec:>12} eta {eta:>4} {msg}",
    )
    .expect("a valid template")
}

/// Moves a file's bar: hashing shows as such, transferring as bytes.
pub fn show_progress(bar: &ProgressBar, hashing: bool, done: u64, total: u64) {
    bar.set_length(total);
    bar.set_position(done);
    bar.set_message(if hashing { "hashing" } else { "" });
}

/// The connection's live estimates, as one line.
pub fn describe(stats: &ConnectionStats) -> String {
    format!(
        "rtt {:.0} ms · loss {:.1} % · redundancy {:.1} % · cwnd {}",
        stats.rtt.as_secs_f64() * 1e3,
        stats.loss_rate * 100.0,
        stats.redundancy * 100.0,
        human_bytes(stats.cwnd)
    )
}

/// Shows the connection's estimates under the bars until aborted.
pub async fn show_stats(connection: Connection, bars: MultiProgress) {
    let line = bars.add(ProgressBar::new_spinner());
    loop {
        line.set_message(describe(&connection.stats()));
        line.tick();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `value` rounded to `digits` decimals, for JSON.
pub fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

/// A byte count for people (decimal units).
pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.2} GB", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1_000 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} B"),
    }
}
