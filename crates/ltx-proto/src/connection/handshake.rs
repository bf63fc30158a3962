//! The handshake's packets: copies of the client's first flight, the
//! first RTT sample, the server's retry cookie.

use std::time::Instant;

use super::copy_spacing::CopySpacing;

/// Where the handshake's sending stands.
#[derive(Default)]
pub(super) struct Handshake {
    /// Handshake packets to send now (the client sends each Initial flight
    /// in several copies: on a lossy path one lost Initial would cost a
    /// time-out).
    pub(super) to_send: u8,
    /// Initial packets the client has sent.
    pub(super) attempts: u32,
    /// When the client's first Initial left, for the first RTT sample.
    pub(super) sent: Option<Instant>,
    /// The copies of the client's first Initial flight, whose answers'
    /// spacing reads the bottleneck's rate, until the reading concludes.
    pub(super) copy_spacing: Option<CopySpacing>,
    /// The cookie of the server's retry, sent with every Initial after it.
    pub(super) retry_cookie: Option<Vec<u8>>,
}
