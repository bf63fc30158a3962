//! The scenario parsers: every accepted form, and a refusal of each kind,
//! with boundary pairs on either side of each limit.

use std::time::Duration;

use ltx_sim::units::{
    parse_duration, parse_fraction, parse_queue, parse_rate, parse_size, QueueSpec, UnitError,
};
use ltx_sim::QueueLimit;

#[test]
fn rates_in_every_accepted_form() {
    for (input, bits) in [
        ("50mbit", 50_000_000),
        ("1gbit", 1_000_000_000),
        ("500kbit", 500_000),
        ("2.5Mbit", 2_500_000),
        ("1000000bit", 1_000_000),
        ("1000000bps", 1_000_000),
        ("50MBIT", 50_000_000),
        (" 50 mbit ", 50_000_000),
        ("50M", 50_000_000),
        ("50m", 50_000_000),
        ("50Mbps", 50_000_000),
        ("50Mbit/s", 50_000_000),
        ("2.5G", 2_500_000_000),
        ("500k", 500_000),
        ("1bit", 1),
    ] {
        assert_eq!(parse_rate(input), Ok(bits), "{input}");
    }
}

#[test]
fn rates_refused() {
    assert!(matches!(parse_rate(""), Err(UnitError::Empty { .. })));
    assert!(matches!(
        parse_rate("-1mbit"),
        Err(UnitError::Negative { .. })
    ));
    assert!(matches!(
        parse_rate("nan"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_rate("1.2.3mbit"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_rate("mbit"),
        Err(UnitError::Malformed { .. })
    ));
    // A bare number: bits or bytes?
    assert!(matches!(
        parse_rate("1000000"),
        Err(UnitError::MissingUnit { .. })
    ));
    // Bytes per second are not a rate's unit here.
    assert!(matches!(
        parse_rate("50MB"),
        Err(UnitError::UnknownUnit { .. })
    ));
    assert!(matches!(
        parse_rate("50Mbyte"),
        Err(UnitError::UnknownUnit { .. })
    ));
    assert!(matches!(
        parse_rate("1e6"),
        Err(UnitError::UnknownUnit { .. })
    ));
    // Zero carries nothing; one bit per second is the least rate.
    assert!(matches!(
        parse_rate("0bit"),
        Err(UnitError::OutOfRange { .. })
    ));
    assert_eq!(parse_rate("1bit"), Ok(1));
    // u64::MAX bits/s fits, one more does not.
    assert_eq!(parse_rate("18446744073709551615bit"), Ok(u64::MAX));
    assert!(matches!(
        parse_rate("18446744073709551616bit"),
        Err(UnitError::OutOfRange { .. })
    ));
    assert!(matches!(
        parse_rate("99999999999999999999999999999999999999999gbit"),
        Err(UnitError::OutOfRange { .. })
    ));
}

#[test]
fn errors_quote_the_input_and_say_what_is_expected() {
    let message = parse_rate("50furlongs").unwrap_err().to_string();
    assert!(message.contains("\"50furlongs\""), "{message}");
    assert!(message.contains("\"furlongs\""), "{message}");
    assert!(message.contains("50mbit"), "{message}");
    let message = parse_fraction("101%").unwrap_err().to_string();
    assert!(message.contains("\"101%\""), "{message}");
    assert!(message.contains("from 0 to 1"), "{message}");
    assert!(
        message.starts_with(|c: char| !c.is_uppercase()),
        "{message}"
    );
}

#[test]
fn durations_in_every_accepted_form() {
    for (input, duration) in [
        ("600ms", Duration::from_millis(600)),
        ("1s", Duration::from_secs(1)),
        ("1.5s", Duration::from_millis(1500)),
        ("5min", Duration::from_secs(300)),
        ("1h", Duration::from_secs(3600)),
        ("1.5h", Duration::from_secs(5400)),
        ("250us", Duration::from_micros(250)),
        ("250µs", Duration::from_micros(250)),
        ("10ns", Duration::from_nanos(10)),
        ("0", Duration::ZERO),
        ("0ms", Duration::ZERO),
        ("0.1s", Duration::from_millis(100)),
        ("600MS", Duration::from_millis(600)),
        ("0.0000000015s", Duration::from_nanos(2)),
    ] {
        assert_eq!(parse_duration(input), Ok(duration), "{input}");
    }
}

#[test]
fn durations_refused() {
    assert!(matches!(parse_duration(" "), Err(UnitError::Empty { .. })));
    assert!(matches!(
        parse_duration("-1ms"),
        Err(UnitError::Negative { .. })
    ));
    assert!(matches!(
        parse_duration("ms"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_duration("1d"),
        Err(UnitError::UnknownUnit { .. })
    ));
    // Zero needs no unit; anything else does.
    assert!(matches!(
        parse_duration("600"),
        Err(UnitError::MissingUnit { .. })
    ));
    assert!(matches!(
        parse_duration("99999999999999999999s"),
        Err(UnitError::OutOfRange { .. })
    ));
}

#[test]
fn fractions_in_every_accepted_form() {
    for (input, fraction) in [
        ("10%", 0.1),
        ("0.1", 0.1),
        ("0", 0.0),
        ("0%", 0.0),
        ("100%", 1.0),
        ("1", 1.0),
        ("2.5%", 0.025),
    ] {
        assert_eq!(parse_fraction(input), Ok(fraction), "{input}");
    }
}

#[test]
fn fractions_refused() {
    assert!(matches!(parse_fraction(""), Err(UnitError::Empty { .. })));
    assert_eq!(parse_fraction("0"), Ok(0.0));
    assert!(matches!(
        parse_fraction("-1"),
        Err(UnitError::Negative { .. })
    ));
    assert!(matches!(
        parse_fraction("-0.0"),
        Err(UnitError::Negative { .. })
    ));
    assert_eq!(parse_fraction("100%"), Ok(1.0));
    assert!(matches!(
        parse_fraction("101%"),
        Err(UnitError::OutOfRange { .. })
    ));
    assert_eq!(parse_fraction("1"), Ok(1.0));
    assert!(matches!(
        parse_fraction("1.01"),
        Err(UnitError::OutOfRange { .. })
    ));
    assert!(matches!(
        parse_fraction("NaN"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_fraction("inf"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_fraction("10pc"),
        Err(UnitError::UnknownUnit { .. })
    ));
}

#[test]
fn sizes_in_every_accepted_form() {
    for (input, bytes) in [
        ("10MB", 10_000_000),
        ("100MiB", 100 << 20),
        ("1500B", 1500),
        ("1500", 1500),
        ("1GB", 1_000_000_000),
        ("64KiB", 65_536),
        ("64kb", 64_000),
        ("1.5MiB", 1_572_864),
        ("2TiB", 2 << 40),
        ("0", 0),
    ] {
        assert_eq!(parse_size(input), Ok(bytes), "{input}");
    }
}

#[test]
fn sizes_refused() {
    assert!(matches!(parse_size(""), Err(UnitError::Empty { .. })));
    assert!(matches!(parse_size("-1"), Err(UnitError::Negative { .. })));
    assert!(matches!(
        parse_size(".MB"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_size("10MBit"),
        Err(UnitError::UnknownUnit { .. })
    ));
    // 16 EiB − 1 fits in u64; 16 EiB does not.
    assert_eq!(parse_size("18446744073709551615B"), Ok(u64::MAX));
    assert!(matches!(
        parse_size("16777216TiB"),
        Err(UnitError::OutOfRange { .. })
    ));
}

#[test]
fn queues_in_every_accepted_form() {
    for (input, spec) in [
        ("1bdp", QueueSpec::Bdp(1.0)),
        ("0.5BDP", QueueSpec::Bdp(0.5)),
        ("100pkt", QueueSpec::Packets(100)),
        ("100packets", QueueSpec::Packets(100)),
        ("64KB", QueueSpec::Bytes(64_000)),
        ("64KiB", QueueSpec::Bytes(65_536)),
        ("1500B", QueueSpec::Bytes(1500)),
        ("unlimited", QueueSpec::Unlimited),
        ("Unlimited", QueueSpec::Unlimited),
    ] {
        assert_eq!(parse_queue(input), Ok(spec), "{input}");
    }
}

#[test]
fn queues_refused() {
    assert!(matches!(parse_queue(""), Err(UnitError::Empty { .. })));
    assert!(matches!(
        parse_queue("-1bdp"),
        Err(UnitError::Negative { .. })
    ));
    assert!(matches!(
        parse_queue("1.5pkt"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_queue("unlimitd"),
        Err(UnitError::Malformed { .. })
    ));
    assert!(matches!(
        parse_queue("100"),
        Err(UnitError::MissingUnit { .. })
    ));
    assert!(matches!(
        parse_queue("3rtt"),
        Err(UnitError::UnknownUnit { .. })
    ));
}

#[test]
fn queue_limits_on_a_path() {
    // 50 Mbit/s × 600 ms = 3.75 MB.
    let rate = 50_000_000;
    let rtt = Duration::from_millis(600);
    let limit = |spec: QueueSpec| spec.limit(rate, rtt, 1500);
    assert_eq!(limit(QueueSpec::Bdp(1.0)), QueueLimit::Bytes(3_750_000));
    assert_eq!(limit(QueueSpec::Bdp(0.5)), QueueLimit::Bytes(1_875_000));
    assert_eq!(limit(QueueSpec::Packets(100)), QueueLimit::Packets(100));
    assert_eq!(limit(QueueSpec::Bytes(64_000)), QueueLimit::Bytes(64_000));
    assert_eq!(limit(QueueSpec::Unlimited), QueueLimit::Unlimited);
    // A BDP queue never holds less than one packet.
    assert_eq!(limit(QueueSpec::Bdp(0.0)), QueueLimit::Bytes(1500));
    assert_eq!(limit(QueueSpec::Bdp(0.0004)), QueueLimit::Bytes(1500));
    assert_eq!(limit(QueueSpec::Bdp(0.0005)), QueueLimit::Bytes(1875));
}
