//! The packet and frame format.
