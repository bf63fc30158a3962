//! Errors of the tokio layer.

use ltx_proto::{CloseReason, ConfigError};

/// Why a connection could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConnectError {
    /// The connection ended before its handshake completed: the peer did
    /// not answer ([`CloseReason::HandshakeTimeout`]) or refused.
    #[error("{}", describe(.0))]
    Closed(CloseReason),
    /// The transport settings are invalid.
    #[error("invalid transport settings: {0}")]
    Config(#[from] ConfigError),
    /// The endpoint has as many connections as it allows.
    #[error("the endpoint has reached its connection limit")]
    TooManyConnections,
    /// The endpoint's socket failed.
    #[error("the endpoint failed: {0}")]
    EndpointFailed(String),
}

/// Why a connection is no longer usable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", describe(.reason))]
pub struct ConnectionError {
    /// How the connection ended.
    pub reason: CloseReason,
}

/// Why a stream could not be opened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpenStreamError {
    /// The peer allows no more streams for now.
    #[error("the peer allows no more streams")]
    StreamLimit,
    /// The connection has ended.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

/// A human sentence for a close reason.
pub(crate) fn describe(reason: &CloseReason) -> String {
    match reason {
        CloseReason::LocallyClosed => "the connection was closed".into(),
        CloseReason::LocallyAborted { code, reason } => {
            format!("the connection was aborted here (code {code:#x}): {reason}")
        }
        CloseReason::ByPeer { code: 0, reason } if reason.is_empty() => {
            "the peer closed the connection".into()
        }
        CloseReason::ByPeer { code, reason } => {
            format!("the peer closed the connection (code {code:#x}): {reason}")
        }
        CloseReason::IdleTimeout => "the connection timed out: nothing heard from the peer".into(),
        CloseReason::HandshakeTimeout => "the peer did not answer the handshake: it is \
            unreachable, or it refused this end's handshake (another public key for the server, \
            a client key it does not allow, or another pre-shared key; a server does not answer \
            a handshake it refuses)"
            .into(),
        CloseReason::Unreachable(ltx_proto::Unreachable::PortClosed) => {
            "nothing listens on that UDP port (its host answered that the port is closed)".into()
        }
        CloseReason::Unreachable(ltx_proto::Unreachable::HostUnreachable) => {
            "the peer's host cannot be reached (a router or the host refused the datagrams)".into()
        }
        CloseReason::HandshakeRefused(why) => format!("the client's handshake was refused: {why}"),
        CloseReason::ProtocolViolation(reason) => {
            format!("the peer broke the protocol: {reason}")
        }
    }
}
