//! Traces of simulated transfers written as qlog, read back and checked
//! against the schema kept beside the crate.

use std::collections::BTreeSet;
use std::time::Duration;

use ltx_proto::event::PacketKind;
use ltx_proto::wire::PacketNumber;
use ltx_proto::{CloseReason, TraceEvent};
use ltx_sim::scenario::Scenario;
use serde_json::Value;

use super::{QlogWriter, Vantage, RECORD_SEPARATOR};

const SCHEMA: &str = include_str!("../schema/qlog.schema.json");

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema")
}

/// The records of a JSON-SEQ file: each opens with the separator and ends
/// with a line feed.
fn parse(file: &[u8]) -> Vec<Value> {
    assert_eq!(
        file.first(),
        Some(&RECORD_SEPARATOR),
        "the file opens a record"
    );
    file.split(|&b| b == RECORD_SEPARATOR)
        .skip(1)
        .map(|record| {
            assert_eq!(
                record.last(),
                Some(&b'\n'),
                "a record ends with a line feed"
            );
            serde_json::from_slice(record).expect("a record is JSON")
        })
        .collect()
}

/// The qlog of one end of a simulated 1 MB transfer over 100 ms at 10 %
/// loss in bursts of 2, seeded with `seed`.
fn simulated(seed: u64, vantage: Vantage) -> Vec<u8> {
    let mut scenario = Scenario {
        rate_bps: 20_000_000,
        rtt: Duration::from_millis(100),
        loss: 0.10,
        burst: 2.0,
        size: 1_000_000,
        seed,
        ..Scenario::default()
    };
    scenario.trace = true;
    let result = scenario.run().expect("the scenario runs");
    assert!(result.verified, "seed {seed}: the transfer completes");
    let trace = match vantage {
        Vantage::Client => &result.trace,
        Vantage::Server => &result.receiver_trace,
    };
    let mut writer = QlogWriter::new(Vec::new(), "simulated", vantage, 0.0).expect("header");
    let remote = "10.0.0.2:7000".parse().expect("an address");
    writer
        .connection_started(Duration::ZERO, None, remote)
        .expect("write");
    let mut last = 0.0;
    for (at, event) in trace {
        last = *at;
        writer
            .event(Duration::from_secs_f64(*at), event)
            .expect("write");
    }
    let close = CloseReason::LocallyClosed;
    writer
        .connection_closed(Duration::from_secs_f64(last), &close)
        .expect("write");
    writer.finish().expect("flush")
}

#[test]
fn the_header_names_the_version_the_format_and_the_vantage_point() {
    let file = QlogWriter::new(Vec::new(), "t", Vantage::Server, 1.5e12)
        .and_then(QlogWriter::finish)
        .expect("a header");
    let records = parse(&file);
    assert_eq!(records.len(), 1);
    let header = &records[0];
    assert_eq!(header["qlog_version"], "0.3");
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert_eq!(header["trace"]["vantage_point"]["type"], "server");
    assert_eq!(header["trace"]["common_fields"]["reference_time"], 1.5e12);
    assert_eq!(header["trace"]["common_fields"]["time_format"], "relative");
    assert!(validator().is_valid(header));
}

#[test]
fn every_record_of_both_ends_matches_the_schema() {
    let validator = validator();
    for seed in [1, 2] {
        for vantage in [Vantage::Client, Vantage::Server] {
            let records = parse(&simulated(seed, vantage));
            assert!(
                records.len() > 100,
                "seed {seed}: {} records",
                records.len()
            );
            for record in &records {
                let errors: Vec<String> = validator
                    .iter_errors(record)
                    .map(|e| e.to_string())
                    .collect();
                assert!(errors.is_empty(), "seed {seed}: {record}: {errors:?}");
            }
        }
    }
}

#[test]
fn a_lossy_transfer_shows_sends_losses_repairs_and_recoveries() {
    let seed = 3;
    let names = |file: &[u8]| -> BTreeSet<String> {
        parse(file)
            .iter()
            .skip(1)
            .map(|r| r["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    let sender = names(&simulated(seed, Vantage::Client));
    for name in [
        "connectivity:connection_started",
        "transport:packet_sent",
        "transport:packet_received",
        "recovery:packet_lost",
        "recovery:metrics_updated",
        "ltx:coding_updated",
        "ltx:repair_sent",
        "transport:data_moved",
        "connectivity:connection_closed",
    ] {
        assert!(
            sender.contains(name),
            "seed {seed}: no {name} in {sender:?}"
        );
    }
    let receiver = names(&simulated(seed, Vantage::Server));
    assert!(
        receiver.contains("ltx:symbol_recovered"),
        "seed {seed}: {receiver:?}"
    );
}

#[test]
fn times_never_go_back() {
    let seed = 4;
    let records = parse(&simulated(seed, Vantage::Client));
    let times: Vec<f64> = records[1..]
        .iter()
        .map(|r| r["time"].as_f64().expect("a time"))
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "seed {seed}");
}

#[test]
fn the_schema_refuses_a_record_it_does_not_describe() {
    let validator = validator();
    let mut writer = QlogWriter::new(Vec::new(), "t", Vantage::Client, 0.0).expect("header");
    let sent = TraceEvent::PacketSent {
        number: PacketNumber(7),
        bytes: 1200,
        kind: PacketKind::Ack,
    };
    writer
        .event(Duration::from_millis(1), &sent)
        .expect("write");
    let records = parse(&writer.finish().expect("flush"));
    let good = &records[1];
    assert!(validator.is_valid(good), "{good}");

    let mut no_length = good.clone();
    no_length["data"]["raw"] = serde_json::json!({});
    assert!(!validator.is_valid(&no_length));
    let mut unknown = good.clone();
    unknown["name"] = "transport:packet_teleported".into();
    assert!(!validator.is_valid(&unknown));
    let mut negative = good.clone();
    negative["time"] = (-1.0).into();
    assert!(!validator.is_valid(&negative));
}
