//! The transport settings a tunnel's connections run with.

use std::time::Duration;

use ltx::TransportConfig;

/// How long a tunnel's connection survives silence (an outage, a
/// suspended laptop) before it and its TCP connections are given up.
pub const TUNNEL_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How often an idle tunnel pings, so that NAT bindings and the peer's
/// idle timer stay alive while no TCP connection sends anything.
pub const TUNNEL_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a tunnel's end waits, with a TCP connection open, for the
/// peer to send before it pings: a client whose address changed while it
/// only downloaded tells the server where it is now this soon (see
/// `TransportConfig::set_silence_probe`).
pub const TUNNEL_SILENCE_PROBE: Duration = Duration::from_secs(1);

/// Bytes one stream may have in flight beyond what its reader took: a
/// stalled reader (a paused download) holds at most this much of the
/// connection's receive window, so the others keep moving. The receiver
/// gives credit back once half of it is used, so a stream always has at
/// least half of it to send: 6 MiB, 1.7 times the bandwidth-delay product
/// of a 50 Mbit/s path with a 600 ms round trip (at 4 MiB a download on
/// such a path was held to about 40 Mbit/s).
pub const TUNNEL_STREAM_WINDOW: u64 = 12 << 20;

/// Bytes all of a connection's streams may have in flight beyond what
/// their readers took: ten stalled readers leave the others room.
pub const TUNNEL_RECEIVE_WINDOW: u64 = 128 << 20;

/// Streams a client may open over the life of one connection. The
/// transport keeps a little state for every stream it ever carried, so
/// this bounds that; a client whose connection has opened them all makes
/// a new connection for the next ones.
pub const TUNNEL_STREAMS_PER_CONNECTION: u64 = 16_384;

/// The transport of a tunnel's connections, on either side: the defaults
/// of [`TransportConfig`] with the idle time-out, keep-alive, silence
/// probe, windows and stream count above, and early data on (a client that
/// connects again sends the first forwarded bytes in its first flight).
pub fn tunnel_transport() -> TransportConfig {
    let mut transport = TransportConfig::default();
    transport
        .set_idle_timeout(TUNNEL_IDLE_TIMEOUT)
        .expect("a non-zero idle time-out");
    transport
        .set_keep_alive(Some(TUNNEL_KEEP_ALIVE))
        .set_silence_probe(Some(TUNNEL_SILENCE_PROBE))
        .set_stream_receive_window(TUNNEL_STREAM_WINDOW)
        .set_receive_window(TUNNEL_RECEIVE_WINDOW)
        .set_max_streams(TUNNEL_STREAMS_PER_CONNECTION)
        .set_early_data(true);
    transport
}
