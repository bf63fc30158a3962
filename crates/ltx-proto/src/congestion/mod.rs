//! Congestion control.
