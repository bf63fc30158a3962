//! The SOCKS5 front end of a tunnel client (`--socks`): CONNECT without
//! authentication, to an IPv4 or IPv6 address or a name that the server
//! resolves. Each accepted request becomes a tunnel stream; the server's
//! answer becomes the SOCKS reply.

use std::io;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::client::{OpenError, TunnelClient};
use crate::message_io::{read_message, write_message, MessageError};
use crate::splice::Spliced;
use crate::wire::socks5::{
    method_choice, Command, Greeting, Method, Reply, ReplyCode, Request, SocksError,
    MAX_GREETING_LEN, MAX_REQUEST_LEN,
};
use crate::wire::{Destination, OpenStatus};

/// How long a SOCKS client has for its greeting and request.
pub const SOCKS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a SOCKS client was not served.
#[derive(Debug, thiserror::Error)]
pub enum SocksFailure {
    /// Its connection failed, or it sent nothing in time.
    #[error("the SOCKS client's connection: {0}")]
    Io(#[from] io::Error),
    /// It did not speak SOCKS5.
    #[error("not a SOCKS5 request: {0}")]
    Malformed(SocksError),
    /// It offered no method this front end accepts (only "no
    /// authentication").
    #[error("the SOCKS client offers no method without authentication")]
    NoAcceptableMethod,
    /// It asked for another command than CONNECT.
    #[error("the SOCKS command {0:?} is not supported (only CONNECT)")]
    Unsupported(Command),
    /// The tunnel did not open (the server refused, or the connection to
    /// it failed).
    #[error("{destination}: {error}")]
    NotOpened {
        /// Where the client asked to go.
        destination: Destination,
        /// Why it did not.
        error: OpenError,
    },
}

impl From<MessageError<SocksError>> for SocksFailure {
    fn from(error: MessageError<SocksError>) -> SocksFailure {
        match error {
            MessageError::Io(e) => SocksFailure::Io(e),
            MessageError::Malformed(e) => SocksFailure::Malformed(e),
        }
    }
}

/// Serves one SOCKS client on `tcp` through `client`: the negotiation,
/// the request, the tunnel stream, the reply, then the copying. Returns
/// where it went and how it ended.
pub async fn serve_socks5(
    client: &TunnelClient,
    mut tcp: TcpStream,
) -> Result<(Destination, Spliced), SocksFailure> {
    let request = match tokio::time::timeout(SOCKS_HANDSHAKE_TIMEOUT, negotiate(&mut tcp)).await {
        Ok(Ok(request)) => request,
        Ok(Err(failure)) => return Err(failure),
        Err(_) => {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no SOCKS request in time").into())
        }
    };
    let destination = request.destination;
    match client.open(&destination).await {
        Ok(stream) => {
            reply(&mut tcp, ReplyCode::Succeeded).await?;
            Ok((destination, stream.splice(tcp).await))
        }
        Err(error) => {
            let code = match &error {
                OpenError::NotOpened(result) => reply_code(result.status),
                _ => ReplyCode::GeneralFailure,
            };
            reply(&mut tcp, code).await?;
            Err(SocksFailure::NotOpened { destination, error })
        }
    }
}

/// The greeting and the request; a failure is answered (where SOCKS5 has
/// an answer for it) before it is returned.
async fn negotiate(tcp: &mut TcpStream) -> Result<Request, SocksFailure> {
    let greeting = read_message(tcp, MAX_GREETING_LEN, Greeting::parse).await?;
    if !greeting.offers(Method::NO_AUTHENTICATION) {
        tcp.write_all(&method_choice(Method::NONE_ACCEPTABLE))
            .await?;
        return Err(SocksFailure::NoAcceptableMethod);
    }
    tcp.write_all(&method_choice(Method::NO_AUTHENTICATION))
        .await?;
    let request = match read_message(tcp, MAX_REQUEST_LEN, Request::parse).await {
        Ok(request) => request,
        Err(MessageError::Malformed(e)) => {
            reply(tcp, e.reply_code()).await?;
            return Err(SocksFailure::Malformed(e));
        }
        Err(e) => return Err(e.into()),
    };
    if request.command != Command::Connect {
        reply(tcp, ReplyCode::CommandNotSupported).await?;
        return Err(SocksFailure::Unsupported(request.command));
    }
    Ok(request)
}

/// Sends a reply. After a failure the caller drops the connection, which
/// closes it with a FIN (RFC 1928 asks for a close soon after), not a
/// reset, which could make the client lose the reply unread.
async fn reply(tcp: &mut TcpStream, code: ReplyCode) -> io::Result<()> {
    write_message(tcp, |out| Reply::new(code).emit(out)).await
}

/// The SOCKS reply for a tunnel server's answer.
pub fn reply_code(status: OpenStatus) -> ReplyCode {
    match status {
        OpenStatus::Connected => ReplyCode::Succeeded,
        OpenStatus::Refused => ReplyCode::ConnectionRefused,
        OpenStatus::NotPermitted => ReplyCode::NotAllowed,
        OpenStatus::Unreachable => ReplyCode::HostUnreachable,
        OpenStatus::LimitReached | OpenStatus::Failed => ReplyCode::GeneralFailure,
    }
}
