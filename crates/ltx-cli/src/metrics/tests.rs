//! The metrics endpoint scraped during and after a transfer on loopback,
//! its text parsed as Prometheus reads it. Bounded in time; no test
//! asserts a duration.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use ltx::{Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{MetricsServer, SAMPLE_EVERY};

const BOUND: Duration = Duration::from_secs(60);

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().expect("an address")
}

/// Sends `request` to `addr` and returns the status line and the body.
async fn http(addr: SocketAddr, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().expect("a status line").to_owned();
    (status, body.to_owned())
}

/// The samples of a text exposition: `name{labels}` → value. Fails on any
/// line that is neither a comment nor a sample with a number.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        assert!(!line.starts_with('#'), "an unknown comment: {line}");
        let (series, value) = line
            .rsplit_once(' ')
            .expect("a sample is a series and a value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("not a number in {line}")),
        };
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "a metric name: {line}"
        );
        samples.insert(series.to_owned(), value);
    }
    samples
}

async fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let (status, body) = http(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    parse(&body)
}

#[tokio::test]
async fn a_scrape_during_and_after_a_transfer_counts_what_moved() {
    timeout(BOUND, async {
        let server = Endpoint::bind(loopback(), EndpointConfig::server()).expect("bind");
        let metrics = MetricsServer::start(loopback(), server.clone())
            .await
            .expect("the metrics endpoint");
        let client = Endpoint::bind(loopback(), EndpointConfig::client()).expect("bind");
        let (halfway_tx, halfway_rx) = tokio::sync::oneshot::channel();
        let (go_on_tx, go_on_rx) = tokio::sync::oneshot::channel::<()>();
        let receiver = {
            let server = server.clone();
            tokio::spawn(async move {
                let connection = server.accept().await.expect("a connection");
                let (mut send, mut recv) = connection.accept_stream().await.expect("a stream");
                let mut first = vec![0u8; 500_000];
                recv.read_exact(&mut first).await.expect("the first half");
                // An answer, acknowledged by the client: a receiver that
                // only receives would measure no RTT to sample.
                send.write_all(b"halfway").await.expect("an answer");
                send.shutdown().await.expect("its end");
                halfway_tx.send(()).expect("the test waits");
                // The rest waits until the test has scraped: the
                // connection is open meanwhile.
                go_on_rx.await.expect("the test goes on");
                let mut rest = Vec::new();
                recv.read_to_end(&mut rest).await.expect("the rest");
                connection.closed().await;
                first.len() + rest.len()
            })
        };
        let connection = client
            .connect(server.local_addr(), server.public_key().expect("a key"))
            .await
            .expect("the handshake");
        let sender = tokio::spawn(async move {
            let (mut send, _answers) = connection.open_stream().expect("a stream");
            send.write_all(&vec![5u8; 1_000_000]).await.expect("write");
            send.shutdown().await.expect("finish");
            connection.close().await.expect("a clean close");
        });

        halfway_rx.await.expect("halfway");
        tokio::time::sleep(SAMPLE_EVERY + Duration::from_millis(200)).await;
        // The sampler runs once a second: on a loaded machine its tick may
        // come late, so scrape until it has observed the connection (the
        // test's time-out bounds the wait).
        let mut during = scrape(metrics.local_addr()).await;
        while during["ltx_connection_rtt_seconds_count"] < 1.0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            during = scrape(metrics.local_addr()).await;
        }
        go_on_tx.send(()).expect("the receiver waits");
        sender.await.expect("the sender");
        assert_eq!(receiver.await.expect("the receiver"), 1_000_000);
        let after = scrape(metrics.local_addr()).await;

        assert_eq!(during["ltx_connections_accepted_total"], 1.0);
        assert_eq!(during["ltx_connections_open"], 1.0);
        assert_eq!(during["ltx_streams_open"], 1.0);
        assert_eq!(during["ltx_handshakes_completed_total"], 1.0);
        assert!(
            during["ltx_stream_bytes_read_total"] >= 500_000.0,
            "{during:?}"
        );
        assert!(
            during["ltx_connection_rtt_seconds_count"] >= 1.0,
            "{during:?}"
        );
        assert!(during.contains_key("ltx_repair_symbols_sent_total{kind=\"tail\"}"));
        assert!(during.contains_key("ltx_connection_loss_estimate_bucket{le=\"0.1\"}"));

        assert_eq!(after["ltx_stream_bytes_read_total"], 1_000_000.0);
        assert_eq!(after["ltx_connections_closed_total{reason=\"clean\"}"], 1.0);
        assert_eq!(after["ltx_streams_open"], 0.0);
        for (series, value) in &during {
            if series.contains("_total") {
                assert!(after[series] >= *value, "{series} went back");
            }
        }
        assert!(after["ltx_bytes_received_total"] > 1_000_000.0);
        every_metric_of_the_dashboard_is_served(&after);
    })
    .await
    .expect("the test ends in time");
}

#[tokio::test]
async fn other_paths_and_garbage_get_errors_not_metrics() {
    let server = Endpoint::bind(loopback(), EndpointConfig::server()).expect("bind");
    let metrics = MetricsServer::start(loopback(), server)
        .await
        .expect("start");
    let (status, _) = http(metrics.local_addr(), "GET / HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let (status, _) = http(metrics.local_addr(), "\u{1}\u{2} nonsense\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
}

/// The Grafana dashboard under `dist/` asks only for metrics the endpoint
/// serves.
fn every_metric_of_the_dashboard_is_served(scrape: &BTreeMap<String, f64>) {
    let dashboard = include_str!("../../../../dist/grafana-ltx.json");
    let served: Vec<&str> = scrape
        .keys()
        .map(|series| series.split('{').next().unwrap_or(series))
        .collect();
    let mut asked = 0;
    for (at, _) in dashboard.match_indices("ltx_") {
        let name: String = dashboard[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        if name.len() > "ltx_".len() {
            asked += 1;
            assert!(
                served.contains(&name.as_str()),
                "the dashboard asks for {name}"
            );
        }
    }
    assert!(asked > 10, "the dashboard names {asked} metrics");
}
