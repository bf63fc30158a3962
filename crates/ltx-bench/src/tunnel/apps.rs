//! The applications of `ltx-bench tunnel`, run as `ltx-bench tunnel-peer
//! …`: the server namespace's HTTP/1.1 file server and echo server, and the
//! interactive client that times 100-byte messages through the echo.
//!
//! One TCP port serves both: a connection whose first bytes are `GET ` is
//! HTTP, any other is echoed, so every tunnel needs one forward.
//!
//! The HTTP server answers `GET /bytes/N` with the first N bytes of the
//! benchmark's payload pattern (seed 1), and `GET /bytes/endless` with the
//! pattern until the client goes away; it keeps connections alive, as
//! HTTP/1.1 clients expect. Every body is the pattern from its start, so the
//! harness checks what curl saved against the same pattern.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::super::payload::Pattern;

/// The payload pattern's seed: every body is its first bytes.
pub(crate) const PATTERN_SEED: u64 = 1;

/// Options of `tunnel-peer serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// TCP address of the HTTP and echo server.
    #[arg(long)]
    listen: SocketAddr,
}

/// Options of `tunnel-peer ping`.
#[derive(Debug, Args)]
pub(crate) struct PingArgs {
    /// The echo server's address (through the system under test).
    #[arg(long)]
    connect: SocketAddr,
    /// Messages to send.
    #[arg(long, default_value_t = 100)]
    count: u32,
    /// Bytes per message.
    #[arg(long, default_value_t = 100)]
    size: usize,
    /// Milliseconds between messages.
    #[arg(long, default_value_t = 100)]
    interval_ms: u64,
    /// Seconds to wait for the last replies after the last message.
    #[arg(long, default_value_t = 10.0)]
    drain_s: f64,
}

/// Serves HTTP and echo until stopped.
pub(crate) async fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let pattern = Pattern::new(PATTERN_SEED);
    loop {
        let (stream, _) = listener.accept().await?;
        let pattern = pattern.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(stream, &pattern).await {
                eprintln!("serve: {e:#}");
            }
        });
    }
}

/// Tells HTTP from echo by the first four bytes, then serves either.
async fn connection(stream: TcpStream, pattern: &Pattern) -> anyhow::Result<()> {
    let mut first = [0_u8; 4];
    loop {
        let n = stream.peek(&mut first).await?;
        if n == 0 {
            return Ok(());
        }
        if n == first.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    if &first == b"GET " {
        return http_connection(stream, pattern).await;
    }
    stream.set_nodelay(true)?;
    let (mut read, mut write) = stream.into_split();
    tokio::io::copy(&mut read, &mut write).await?;
    Ok(())
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Body {
    Bytes(u64),
    Endless,
}

/// `GET /bytes/N` or `GET /bytes/endless`.
fn parse_target(line: &str) -> Option<Body> {
    let mut words = line.split_whitespace();
    if words.next()? != "GET" {
        return None;
    }
    match words.next()?.strip_prefix("/bytes/")? {
        "endless" => Some(Body::Endless),
        n => n.parse().ok().map(Body::Bytes),
    }
}

/// Answers the requests of one connection, in order, until it closes.
async fn http_connection(stream: TcpStream, pattern: &Pattern) -> anyhow::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let request = line.clone();
        let mut close = false;
        // The headers: only Connection: close matters here.
        loop {
            line.clear();
            if read.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let header = line.trim().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            close |= header == "connection: close";
        }
        let Some(body) = parse_target(&request) else {
            write
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                .await?;
            continue;
        };
        match body {
            Body::Bytes(n) => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                     content-length: {n}\r\n\r\n"
                );
                write.write_all(head.as_bytes()).await?;
                for chunk in pattern.chunks(n) {
                    write.write_all(&chunk).await?;
                }
            }
            Body::Endless => {
                write
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                          connection: close\r\n\r\n",
                    )
                    .await?;
                loop {
                    write.write_all(pattern.block()).await?;
                }
            }
        }
        if close {
            return Ok(());
        }
    }
}

/// Sends `count` messages of `size` bytes, one per interval, and prints one
/// JSON line: each reply's time after its message was sent (ms, in order;
/// the messages never answered are left out and counted).
pub(crate) async fn ping(args: &PingArgs) -> anyhow::Result<()> {
    if args.size < 8 {
        bail!("--size must be at least 8");
    }
    let stream = TcpStream::connect(args.connect)
        .await
        .with_context(|| format!("connecting to {}", args.connect))?;
    stream.set_nodelay(true)?;
    let (mut read, mut write) = stream.into_split();
    let interval = Duration::from_millis(args.interval_ms);
    let start = Instant::now();
    let count = args.count;
    let size = args.size;
    let sender = tokio::spawn(async move {
        let mut message = vec![0x2a_u8; size];
        let mut sent = Vec::with_capacity(count as usize);
        for n in 0..count {
            tokio::time::sleep_until((start + interval * n).into()).await;
            message[..8].copy_from_slice(&u64::from(n).to_le_bytes());
            sent.push(Instant::now());
            write.write_all(&message).await?;
        }
        anyhow::Ok((sent, write))
    });
    let last_send = start + interval * count;
    let deadline = last_send + Duration::from_secs_f64(args.drain_s);
    let mut replies: Vec<(u64, Instant)> = Vec::with_capacity(count as usize);
    let mut message = vec![0_u8; size];
    while replies.len() < count as usize {
        let read_one = read.read_exact(&mut message);
        match tokio::time::timeout_at(deadline.into(), read_one).await {
            Ok(Ok(_)) => {
                let n = u64::from_le_bytes(message[..8].try_into()?);
                replies.push((n, Instant::now()));
            }
            Ok(Err(e)) => return Err(e).context("reading a reply"),
            Err(_) => break,
        }
    }
    let (sent, _write) = sender.await??;
    let mut rtts_ms = Vec::with_capacity(replies.len());
    for (n, at) in &replies {
        let Some(sent_at) = sent.get(*n as usize) else {
            bail!("a reply to message {n}, which was not sent");
        };
        rtts_ms.push((at.duration_since(*sent_at).as_secs_f64() * 1e3 * 1e3).round() / 1e3);
    }
    println!(
        "{}",
        json!({"sent": sent.len(), "answered": replies.len(), "rtts_ms": rtts_ms})
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_of_a_size_or_endless_is_served() {
        assert_eq!(
            parse_target("GET /bytes/2000 HTTP/1.1\r\n"),
            Some(Body::Bytes(2000))
        );
        assert_eq!(
            parse_target("GET /bytes/endless HTTP/1.1"),
            Some(Body::Endless)
        );
        assert_eq!(parse_target("GET /other HTTP/1.1"), None);
        assert_eq!(parse_target("POST /bytes/1 HTTP/1.1"), None);
        assert_eq!(parse_target("GET /bytes/x HTTP/1.1"), None);
    }
}
