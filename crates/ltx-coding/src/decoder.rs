//! The progressive sliding-window decoder.
