//! Copying between a TCP connection and an ltx stream, both ways, with
//! the TCP connection's ends carried across:
//!
//! - a half-close (FIN) read from TCP finishes the stream; a finished
//!   stream half-closes the TCP connection (`shutdown(Write)`), so either
//!   side may stop writing and keep reading;
//! - an error on either side (a TCP reset, a stream reset by the peer,
//!   the ltx connection lost) resets everything: the TCP connection is
//!   closed with a reset (RST, not FIN, so that the application sees a
//!   failure and not a short answer), the stream is reset, and the peer is
//!   asked to stop sending.
//!
//! Each direction holds one buffer of [`COPY_BUFFER`] bytes and nothing
//! more: a stream that cannot take more (its send buffer is full because
//! the peer's reader is slow) stops the reads from the TCP socket, and TCP
//! flow control holds the application back in turn. A stalled reader
//! therefore costs its own stream's buffers, never unbounded memory, and
//! never the other streams' progress.

use std::io;

use ltx::{RecvStream, SendStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;

use crate::message_io::{read_message, MessageError};
use crate::rate_limit::{Bucket, ClientBuckets};
use crate::wire::{OpenResult, OpenStatus, WireError, MAX_RESULT_LEN};

/// Bytes read at once from either side of a tunnelled connection.
pub const COPY_BUFFER: usize = 32 * 1024;

/// The codes a tunnel end resets a stream, or asks its peer to stop, with.
pub mod codes {
    /// The TCP connection at this end was reset or failed; or the stream
    /// broke and this end reset its TCP connection.
    pub const TCP_RESET: u64 = 0x01;
    /// The server did not connect the stream (its result says why).
    pub const NOT_OPENED: u64 = 0x02;
}

/// How a tunnelled connection ended, and what it carried.
#[derive(Debug)]
pub struct Spliced {
    /// Bytes read from the TCP connection and written to the stream.
    pub to_stream: u64,
    /// Bytes read from the stream and written to the TCP connection.
    pub to_tcp: u64,
    /// How it ended.
    pub end: SpliceEnd,
}

/// How a tunnelled connection ended.
#[derive(Debug)]
pub enum SpliceEnd {
    /// Both directions ended with a half-close: an orderly end.
    Closed,
    /// Something broke; the TCP connection was reset and so was the
    /// stream.
    Reset(Broken),
}

/// What broke a tunnelled connection.
#[derive(Debug, thiserror::Error)]
pub enum Broken {
    /// The TCP connection failed (reset by the application, most often).
    #[error("the TCP connection failed: {0}")]
    Tcp(io::Error),
    /// The stream failed: reset by the peer (whose TCP connection was
    /// reset), or the ltx connection was lost.
    #[error("the tunnel stream failed: {0}")]
    Stream(io::Error),
    /// The server did not connect the destination.
    #[error("the server did not connect: {0}")]
    NotOpened(OpenResult),
    /// The server's answer was not an open result.
    #[error("the server's answer was not understood: {0}")]
    BadResult(MessageError<WireError>),
}

/// When the bytes from the stream start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// At once.
    Now,
    /// After the server's open result, which must say connected.
    AfterOpenResult,
}

/// Copies both ways until both directions have ended or one broke (see
/// the [module](self)); resets all on a break.
/// With `limits` (the server's, for this stream's client), each chunk
/// waits for its bytes in the direction's bucket.
pub(crate) async fn run(
    mut tcp: TcpStream,
    mut send: SendStream,
    mut recv: RecvStream,
    start: Start,
    limits: Option<&ClientBuckets>,
) -> Spliced {
    let mut to_stream = 0;
    let mut to_tcp = 0;
    // Bytes go to the stream before the server's result arrives (an
    // application that speaks first saves a round trip). A server that
    // refuses stops the stream, which fails those writes: the result, not
    // that failure, says why, so a failed write waits until the result is
    // read (a refusal ends the wait by failing the other direction).
    let (result_read, mut result_known) = tokio::sync::watch::channel(start == Start::Now);
    let outcome = {
        let (mut tcp_in, mut tcp_out) = tcp.split();
        let up = async {
            let bucket = limits.map(|l| &l.to_client);
            let copied = tcp_to_stream(&mut tcp_in, &mut send, &mut to_stream, bucket).await;
            if let Err(Broken::Stream(_)) = &copied {
                let _ = result_known.wait_for(|&read| read).await;
            }
            copied
        };
        let down = async {
            if start == Start::AfterOpenResult {
                expect_connected(&mut recv).await?;
                result_read.send_replace(true);
            }
            let bucket = limits.map(|l| &l.from_client);
            stream_to_tcp(&mut recv, &mut tcp_out, &mut to_tcp, bucket).await
        };
        tokio::try_join!(up, down)
    };
    let end = match outcome {
        Ok(((), ())) => SpliceEnd::Closed,
        Err(broken) => {
            reset(&tcp, &mut send, &mut recv);
            SpliceEnd::Reset(broken)
        }
    };
    Spliced {
        to_stream,
        to_tcp,
        end,
    }
}

/// Resets a TCP connection (when it is dropped) and both halves of its
/// stream.
pub(crate) fn reset(tcp: &TcpStream, send: &mut SendStream, recv: &mut RecvStream) {
    reset_tcp(tcp);
    // Either may be gone with the connection already; nothing to undo.
    let _ = send.reset(codes::TCP_RESET);
    let _ = recv.stop(codes::TCP_RESET);
}

/// Makes a TCP connection end with a reset when it is dropped.
pub(crate) fn reset_tcp(tcp: &TcpStream) {
    if let Err(e) = tcp.set_zero_linger() {
        tracing::debug!("SO_LINGER on a tunnelled connection: {e}");
    }
}

/// Reads the server's open result; anything but connected is a break.
async fn expect_connected(recv: &mut RecvStream) -> Result<(), Broken> {
    let result = read_message(recv, MAX_RESULT_LEN, OpenResult::parse)
        .await
        .map_err(Broken::BadResult)?;
    match result.status {
        OpenStatus::Connected => Ok(()),
        _ => Err(Broken::NotOpened(result)),
    }
}

async fn tcp_to_stream(
    tcp: &mut ReadHalf<'_>,
    send: &mut SendStream,
    count: &mut u64,
    bucket: Option<&Bucket>,
) -> Result<(), Broken> {
    let mut buf = vec![0; COPY_BUFFER];
    loop {
        let n = tcp.read(&mut buf).await.map_err(Broken::Tcp)?;
        if n == 0 {
            return send.finish().map_err(Broken::Stream);
        }
        if let Some(bucket) = bucket {
            bucket.take(n).await;
        }
        send.write_all(&buf[..n]).await.map_err(Broken::Stream)?;
        *count += n as u64;
    }
}

async fn stream_to_tcp(
    recv: &mut RecvStream,
    tcp: &mut WriteHalf<'_>,
    count: &mut u64,
    bucket: Option<&Bucket>,
) -> Result<(), Broken> {
    let mut buf = vec![0; COPY_BUFFER];
    loop {
        let n = recv.read(&mut buf).await.map_err(Broken::Stream)?;
        if n == 0 {
            return tcp.shutdown().await.map_err(Broken::Tcp);
        }
        if let Some(bucket) = bucket {
            bucket.take(n).await;
        }
        tcp.write_all(&buf[..n]).await.map_err(Broken::Tcp)?;
        *count += n as u64;
    }
}
