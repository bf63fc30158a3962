//! ltx: the library directly (not `ltx send` / `ltx recv`, whose file
//! handling, hashing and disk would be timed too), one bidirectional
//! stream whose send half carries the payload, every setting at its default
//! but for an optional rate hint, with early data on as `ltx send` has it
//! (the stream's first bytes go in the first flight). Encrypted, as every
//! ltx connection on a network path is: the receiver's key pair is derived
//! from the payload seed (see [`benchmark_keypair`]), so both ends know it
//! without a key file.
//!
//! A server refuses early data for its first second (see the security
//! docs): the sender waits [`SERVER_AGE`] before its clock starts, as a
//! deployed server has long been up. A resumed transfer starts from a path
//! an earlier transfer saved (careful resume): `--save-path` writes it, and
//! `--saved-path` reads it back, so that the transfer that measures the
//! path and the timed one are separate runs, each counted on its own.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use ltx::{
    Connection, Endpoint, EndpointConfig, SavedPath, Security, SecurityConfig, StaticKeypair,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::super::payload::{Pattern, Verifier};
use super::report::{cpu_seconds, monotonic_ns, run_queue_seconds, ClientReport, ServerReport};
use super::{PayloadArgs, Received};

/// Bytes asked for in each read.
const READ_SIZE: usize = 1 << 20;

/// How long the sender waits after the receiver is up before its clock
/// starts: longer than a server refuses early data after it starts.
const SERVER_AGE: std::time::Duration = std::time::Duration::from_millis(1_200);

/// The receiver's key pair for payload seed `seed`. Anyone who knows the
/// seed knows the private key: for benchmarks only, where it lets the two
/// ends run as separate commands without exchanging a key, and the
/// cryptographic work per packet is what real keys would cost.
fn benchmark_keypair(seed: u64) -> StaticKeypair {
    let private = blake3::derive_key("ltx bench peer receiver key", &seed.to_le_bytes());
    StaticKeypair::from_private(private)
}

/// Takes one connection on `listen` and checks the stream it opens.
pub(super) async fn receive(
    listen: SocketAddr,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<Received> {
    let mut config = EndpointConfig::server();
    config.security = Security::Noise(SecurityConfig::new(benchmark_keypair(args.seed)));
    config.transport.set_early_data(true);
    config.qlog_dir = args.qlog_dir.clone();
    let endpoint = Endpoint::bind(listen, config).with_context(|| format!("binding {listen}"))?;
    let connection = endpoint.accept().await.context("the endpoint closed")?;
    let (_send, mut stream) = connection.accept_stream().await?;
    let mut verifier = Verifier::new(pattern);
    let mut buffer = vec![0; READ_SIZE];
    let mut first_ns = None;
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            break;
        }
        first_ns.get_or_insert(monotonic_ns()?);
        verifier.feed(&buffer[..n]);
    }
    let end_ns = monotonic_ns()?;
    let report = ServerReport::new(
        args.system.name(),
        args.size,
        verifier.finish(),
        first_ns.unwrap_or(end_ns),
        end_ns,
    )?;
    // The sender closes once everything is decoded here; stay for it.
    Ok(Received {
        report,
        linger: Box::pin(async move {
            connection.closed().await;
            drop(endpoint);
        }),
    })
}

/// Where a sender's path comes from and goes to (careful resume).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Resume<'a> {
    /// Write the path this transfer measured here.
    pub(super) save_to: Option<&'a Path>,
    /// Start from the path written here.
    pub(super) saved: Option<&'a Path>,
}

/// A saved path as `--save-path` writes it: `{"rate": bytes per second,
/// "min_rtt_us": microseconds}`, or `null` when the transfer measured no
/// rate (too short for start-up to read one).
fn saved_path_json(saved: Option<SavedPath>) -> serde_json::Value {
    saved.map_or(serde_json::Value::Null, |saved| {
        serde_json::json!({
            "rate": saved.rate,
            "min_rtt_us": u64::try_from(saved.min_rtt.as_micros()).unwrap_or(u64::MAX),
        })
    })
}

/// Reads what [`saved_path_json`] wrote.
fn parse_saved_path(text: &str) -> anyhow::Result<Option<SavedPath>> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    if value.is_null() {
        return Ok(None);
    }
    let field = |name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_u64)
            .with_context(|| format!("no whole number \"{name}\""))
    };
    Ok(Some(SavedPath {
        rate: field("rate")?,
        min_rtt: Duration::from_micros(field("min_rtt_us")?),
    }))
}

/// Reads the path `--save-path` wrote to `path`.
fn read_saved_path(path: &Path) -> anyhow::Result<Option<SavedPath>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the saved path {}", path.display()))?;
    parse_saved_path(&text).with_context(|| format!("{} is not a saved path", path.display()))
}

/// Sends the payload to `connect` and closes once the receiver has decoded
/// all of it, starting from a saved path and saving the one it measured
/// as `resume` says.
pub(super) async fn send(
    connect: SocketAddr,
    rate_hint: Option<u64>,
    resume: Resume<'_>,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<ClientReport> {
    let saved = match resume.saved {
        Some(path) => {
            let saved = read_saved_path(path)?;
            if saved.is_none() {
                // A transfer too short for start-up to measure a rate (a
                // small payload over loopback) saves nothing: this one is
                // then a first contact, and says so.
                eprintln!("ltx-resumed: the saved transfer measured no rate; this one starts without a saved path");
            }
            saved
        }
        None => None,
    };
    tokio::time::sleep(SERVER_AGE).await;
    let start_ns = monotonic_ns()?;
    let qlog_dir = args.qlog_dir.clone();
    let (connection, _endpoint) =
        transfer(connect, rate_hint, saved, qlog_dir, args, pattern).await?;
    if let Some(path) = resume.save_to {
        let json = saved_path_json(connection.path_to_save()).to_string();
        std::fs::write(path, json)
            .with_context(|| format!("writing the saved path {}", path.display()))?;
    }
    Ok(ClientReport {
        system: args.system.name().to_owned(),
        bytes: args.size,
        start_ns,
        cpu_s: cpu_seconds()?,
        run_queue_s: run_queue_seconds(),
        wire_bytes: Some(connection.stats().bytes_sent),
    })
}

/// One connection that carries the payload and closes once the receiver
/// has decoded it, traced into `qlog_dir` if given; the endpoint is
/// returned to outlive the connection.
async fn transfer(
    connect: SocketAddr,
    rate_hint: Option<u64>,
    saved: Option<SavedPath>,
    qlog_dir: Option<PathBuf>,
    args: &PayloadArgs,
    pattern: &Pattern,
) -> anyhow::Result<(Connection, Endpoint)> {
    let mut config = EndpointConfig::client();
    config.qlog_dir = qlog_dir;
    config
        .transport
        .set_rate_hint(rate_hint.map(|bps| (bps / 8).max(1)))
        .context("the rate hint")?;
    config.transport.set_early_data(true);
    config.transport.set_saved_path(saved);
    let local = if connect.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let endpoint = Endpoint::bind(local, config).context("binding a UDP socket")?;
    let server_key = benchmark_keypair(args.seed).public();
    let connection = endpoint
        .connect_early(connect, server_key)
        .context("the handshake")?;
    let (mut stream, _recv) = connection.open_stream()?;
    for chunk in pattern.chunks(args.size) {
        stream.write_all(&chunk).await?;
    }
    stream.shutdown().await?;
    // A graceful close returns once the receiver has decoded everything.
    connection.close().await?;
    Ok((connection, endpoint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_path_reads_back_as_it_was_written() {
        let saved = SavedPath {
            rate: 6_250_000,
            min_rtt: Duration::from_micros(600_123),
        };
        let written = saved_path_json(Some(saved)).to_string();
        let read = parse_saved_path(&written).expect("it parses");
        assert_eq!(read, Some(saved));
        assert!(parse_saved_path(&saved_path_json(None).to_string())
            .expect("null parses")
            .is_none());
        assert!(parse_saved_path("{\"rate\": 5}").is_err());
        assert!(parse_saved_path("not json").is_err());
    }
}
