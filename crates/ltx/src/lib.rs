//! ltx over UDP with tokio.

pub mod shim;
