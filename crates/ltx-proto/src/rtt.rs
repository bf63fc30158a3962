//! Round-trip time estimation.
