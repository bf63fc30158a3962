//! What the two command-line programs of ltx share: the `ltx` binary of
//! this package and the `ltx-bench` binary of `crates/ltx-bench`.
//!
//! - [`repair_args`]: the repair flags, with one meaning on every command
//!   that makes a connection, in the simulator or over the network;
//! - [`settings`]: the transport a command runs, from a preset and those
//!   flags, each checked by `ltx-proto`;
//! - [`realtime`]: one transfer in real time through the impairment shim on
//!   loopback (`ltx demo`, `ltx-bench fidelity`);
//! - [`live`]: figures for people and the transfer commands' live display;
//! - [`path_cache`]: the paths `ltx send` measured, for careful resume;
//! - [`exit`]: the exit codes and how an error maps onto them;
//! - [`end_quietly_on_closed_stdout`]: SIGPIPE for the commands that only
//!   compute and print.
//!
//! It is shaped by the two command lines (clap arguments, anyhow errors)
//! and changes with them; applications use the `ltx` and `ltx-files`
//! crates.

pub mod exit;
pub mod live;
pub mod metrics;
pub mod observe_args;
pub mod path_cache;
pub mod qlog;
pub mod realtime;
pub mod repair_args;
pub mod settings;
pub mod stats_lines;

/// Lets a closed stdout end the process as it ends any Unix filter
/// (`ltx sim soak --json | head`), instead of a panic in the first print
/// after it: the default action of SIGPIPE, which Rust's runtime ignores.
/// Only for the commands that compute and print and hold nothing to clean
/// up (the simulator's, and the benchmarks on loopback): the others own
/// namespaces or partial files, which a signal would leave behind.
pub fn end_quietly_on_closed_stdout() {
    // SAFETY: `signal` with a standard signal and `SIG_DFL` only resets a
    // disposition; the process has no handler for SIGPIPE to lose.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
