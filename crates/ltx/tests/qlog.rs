//! Endpoints told to write qlog: one file per connection, at each end,
//! that reads back as qlog. Bounded in time; no test asserts a duration.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use ltx::{Endpoint, EndpointConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

const BOUND: Duration = Duration::from_secs(60);

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().expect("a valid address")
}

/// The records of every `.sqlog` file in `dir`, by file.
fn read_traces(dir: &Path) -> Vec<Vec<Value>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            assert_eq!(
                path.extension().and_then(|e| e.to_str()),
                Some("sqlog"),
                "{path:?}"
            );
            let bytes = std::fs::read(path).expect("read a trace");
            bytes
                .split(|&b| b == 0x1E)
                .skip(1)
                .map(|record| serde_json::from_slice(record).expect("a JSON record"))
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn each_end_writes_one_qlog_file_per_connection() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = |base: EndpointConfig| EndpointConfig {
        qlog_dir: Some(dir.path().to_owned()),
        ..base
    };
    timeout(BOUND, async {
        let server = Endpoint::bind(loopback(), config(EndpointConfig::server())).expect("bind");
        let client = Endpoint::bind(loopback(), config(EndpointConfig::client())).expect("bind");
        let receiver = {
            let server = server.clone();
            tokio::spawn(async move {
                let connection = server.accept().await.expect("a connection");
                let (_, mut recv) = connection.accept_stream().await.expect("a stream");
                let mut data = Vec::new();
                recv.read_to_end(&mut data).await.expect("read");
                connection.closed().await;
                data.len()
            })
        };
        let connection = client
            .connect(server.local_addr(), server.public_key().expect("a key"))
            .await
            .expect("the handshake");
        let (mut send, _) = connection.open_stream().expect("a stream");
        send.write_all(&vec![7u8; 300_000]).await.expect("write");
        send.shutdown().await.expect("finish");
        connection.close().await.expect("a clean close");
        assert_eq!(receiver.await.expect("the receiver"), 300_000);
        drop((connection, client, server));
        tokio::time::sleep(Duration::from_millis(200)).await;
    })
    .await
    .expect("the transfer ends in time");

    let traces = read_traces(dir.path());
    assert_eq!(traces.len(), 2, "one file per end");
    let mut vantages: Vec<&str> = traces
        .iter()
        .map(|t| {
            t[0]["trace"]["vantage_point"]["type"]
                .as_str()
                .expect("a vantage point")
        })
        .collect();
    vantages.sort();
    assert_eq!(vantages, ["client", "server"]);
    for trace in &traces {
        assert_eq!(trace[0]["qlog_version"], "0.3");
        let names: Vec<&str> = trace[1..]
            .iter()
            .map(|r| r["name"].as_str().expect("a name"))
            .collect();
        assert_eq!(names.first(), Some(&"connectivity:connection_started"));
        assert_eq!(
            names.last(),
            Some(&"connectivity:connection_closed"),
            "{names:?}"
        );
        assert!(names.contains(&"transport:packet_sent"));
        assert!(names.contains(&"transport:packet_received"));
    }
}

#[test]
fn a_missing_qlog_directory_is_refused_at_bind() {
    let config = EndpointConfig {
        qlog_dir: Some("/nonexistent/ltx-qlog".into()),
        ..EndpointConfig::client()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _guard = runtime.enter();
    let error = Endpoint::bind(loopback(), config).expect_err("a missing directory");
    assert!(
        error.to_string().contains("/nonexistent/ltx-qlog"),
        "{error}"
    );
}
