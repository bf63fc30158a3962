//! An echo server: every stream's bytes are sent back on it.
//!
//! ```sh
//! cargo run -p ltx --example echo_server -- 127.0.0.1:7000
//! ```
//!
//! With no address it binds 127.0.0.1:7000. It serves until interrupted.
//! Its key pair is fresh each run: it prints the public key a client must
//! connect with.

use ltx::{Connection, Endpoint, EndpointConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7000".into())
        .parse()?;
    let endpoint = Endpoint::bind(addr, EndpointConfig::server())?;
    let key = endpoint.public_key().expect("a server has a key");
    println!("echoing on {} with public key {key}", endpoint.local_addr());
    while let Some(connection) = endpoint.accept().await {
        tokio::spawn(serve(connection));
    }
    Ok(())
}

async fn serve(connection: Connection) {
    let peer = connection.remote_address();
    println!("{peer}: connected");
    while let Ok((mut send, mut recv)) = connection.accept_stream().await {
        tokio::spawn(async move {
            match tokio::io::copy(&mut recv, &mut send).await {
                Ok(n) => {
                    let _ = send.finish();
                    println!("{peer}: echoed {n} bytes");
                }
                Err(e) => println!("{peer}: stream failed: {e}"),
            }
        });
    }
    println!(
        "{peer}: {}",
        ltx::ConnectionError {
            reason: connection.closed().await
        }
    );
}
