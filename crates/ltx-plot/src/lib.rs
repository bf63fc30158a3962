//! Plots of ltx.
//!
//! [`draw`] turns a connection's qlog trace ([`Trace::parse`], as written
//! by `--qlog`) into stacked panels on one time axis — rates, congestion
//! window and bytes in flight, RTTs, the loss estimate and redundancy,
//! source symbols sent against the peer's decoding, repair symbols by
//! reason — for `ltx plot` and `ltx sim run --plot`. [`load_font`] loads
//! the font every plot of the project draws its text with.

mod draw;
mod font;
mod trace;

pub use draw::{draw, panels, Line, Panel, PlotError};
pub use font::{load_font, FontError, FAMILY, FONT_PATHS};
pub use trace::{bit_rate, counts, growth_rate, Points, Trace, TraceError, REPAIR_REASONS};

#[cfg(test)]
mod tests;
