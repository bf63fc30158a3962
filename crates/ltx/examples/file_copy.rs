//! Copies a file to a fresh name through an ltx connection on loopback and
//! prints what the connection saw.
//!
//! ```sh
//! cargo run --release -p ltx --example file_copy -- SOURCE DESTINATION
//! ```

use std::path::PathBuf;
use std::time::Instant;

use ltx::{Endpoint, EndpointConfig};
use tokio::io::AsyncWriteExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let (Some(source), Some(destination)) = (args.next(), args.next()) else {
        return Err("usage: file_copy SOURCE DESTINATION".into());
    };
    if destination.exists() {
        return Err(format!("{} exists; not overwriting it", destination.display()).into());
    }
    let loopback = "127.0.0.1:0".parse()?;
    let server = Endpoint::bind(loopback, EndpointConfig::server())?;
    let client = Endpoint::bind(loopback, EndpointConfig::client())?;
    let receiver = {
        let server = server.clone();
        tokio::spawn(async move {
            let connection = server.accept().await.ok_or("the server stopped")?;
            let (_send, mut recv) = connection.accept_stream().await?;
            let mut file = tokio::fs::File::create(&destination).await?;
            let bytes = tokio::io::copy(&mut recv, &mut file).await?;
            file.sync_all().await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(bytes)
        })
    };
    let start = Instant::now();
    let server_key = server.public_key().ok_or("the server has a key")?;
    let connection = client.connect(server.local_addr(), server_key).await?;
    let (mut send, _recv) = connection.open_stream()?;
    let mut file = tokio::fs::File::open(&source).await?;
    tokio::io::copy(&mut file, &mut send).await?;
    send.shutdown().await?;
    let bytes = receiver.await?.map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    let stats = connection.stats();
    println!(
        "copied {bytes} bytes in {seconds:.3} s ({:.1} Mbit/s), rtt {:?}, {} packets sent",
        bytes as f64 * 8.0 / seconds / 1e6,
        stats.rtt,
        stats.packets_sent
    );
    connection.close().await?;
    Ok(())
}
