//! The sliding-window systematic encoder.
