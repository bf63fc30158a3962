//! The client of the README's library example: it sends a line to the
//! echo server of `echo_server.rs` and prints what comes back. Below this
//! header the file is the README's code, formatted (`ltx-cli`'s
//! `tests/readme.rs` checks that the two agree but for whitespace), so that
//! CI compiles the example the README shows.
//!
//! ```sh
//! cargo run -p ltx --example echo_server                 # prints its public key
//! cargo run -p ltx --example echo_client -- PUBLIC_KEY
//! ```

use ltx::{Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server_key = std::env::args()
        .nth(1)
        .ok_or("usage: client PUBLIC_KEY")?
        .parse()?;
    let endpoint = Endpoint::bind("0.0.0.0:0".parse()?, EndpointConfig::client())?;
    let connection = endpoint
        .connect("127.0.0.1:7000".parse()?, server_key)
        .await?;
    let (mut send, mut recv) = connection.open_stream()?; // AsyncWrite and AsyncRead halves
    send.write_all(b"hello over a lossy sky").await?;
    send.shutdown().await?; // the peer reads the end of the stream
    let mut echo = Vec::new();
    recv.read_to_end(&mut echo).await?;
    println!(
        "{} ({:?})",
        String::from_utf8_lossy(&echo),
        connection.stats().rtt
    );
    connection.close().await?; // returns once everything written is delivered
    Ok(())
}
