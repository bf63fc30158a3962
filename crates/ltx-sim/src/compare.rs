//! Every preset over the seed scenario matrix (`docs/benchmarks.md`, "The
//! simulator comparison"): which cells to run ([`Plan`]), running them on
//! worker threads ([`run_all`]), and medians per cell and preset with the
//! targets they meet ([`summarize`], [`targets`]).
//!
//! Each run is one [`Scenario`](crate::scenario::Scenario) of one seed, so
//! a run's figures depend only on its cell, preset and seed, never on the
//! number of threads or the order they finish in.

mod plan;
mod runner;
mod summary;

pub use plan::{Cell, Plan, RunSpec, Section, UnknownSection, PATTERNS};
pub use runner::{run_all, run_one, Run};
pub use summary::{best, summarize, targets, CellSummary, Target};
