//! ltx over UDP with tokio.
