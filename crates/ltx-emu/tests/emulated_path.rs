//! An emulated path between two namespaces, exercised with real sockets.
//! Each test needs root, network namespaces, the TUN driver and iproute2;
//! where any is missing it says so and passes without running (CI runs as
//! root, so there they run).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ltx_emu::{missing, EmuError, Emulator, EmulatorConfig, ServerWait, CLIENT_ADDR, SERVER_ADDR};
use ltx_link::{Aqm, Jitter, LinkConfig, LossModel, Outage, QueueLimit, Rate};

/// Whether the machine can run the emulator; if not, says what is missing.
fn supported() -> bool {
    let missing = missing();
    if !missing.is_empty() {
        let what: Vec<String> = missing.iter().map(ToString::to_string).collect();
        eprintln!(
            "skipped: the emulator cannot run here ({})",
            what.join("; ")
        );
    }
    missing.is_empty()
}

/// The names of this process's namespaces that exist now.
fn own_namespaces() -> Vec<String> {
    let prefix = format!("ltx{}-", std::process::id());
    std::fs::read_dir("/run/netns")
        .map(|dir| {
            dir.filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Deterministic bytes to send and check.
fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn a_tcp_transfer_crosses_a_20_mbit_40_ms_path_intact_at_the_links_rate() {
    if !supported() {
        return;
    }
    let rate = Rate::mbit(20.0);
    let one_way = LinkConfig {
        delay: Duration::from_millis(20),
        rate: Some(rate),
        // About two BDPs at 20 Mbit/s and 40 ms.
        queue: QueueLimit::Bytes(200_000),
        ..LinkConfig::default()
    };
    let emulator = Emulator::start(EmulatorConfig::symmetric(one_way, 3)).unwrap();
    let data = payload(4_000_000);

    let listener = emulator
        .server()
        .run_inside(|| TcpListener::bind((SERVER_ADDR, 5001)))
        .unwrap()
        .unwrap();
    let receiver = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        (got, peer)
    });
    let started = Instant::now();
    let mut sender = emulator
        .client()
        .run_inside(|| TcpStream::connect((SERVER_ADDR, 5001)))
        .unwrap()
        .unwrap();
    sender.write_all(&data).unwrap();
    sender.shutdown(std::net::Shutdown::Write).unwrap();
    let (got, peer) = receiver.join().unwrap();
    let elapsed = started.elapsed();

    assert_eq!(peer.ip(), CLIENT_ADDR);
    assert!(
        got == data,
        "the bytes arrived changed or incomplete ({} of {})",
        got.len(),
        data.len()
    );
    // The link cannot carry the payload faster than its rate.
    let floor = rate.serialization(data.len());
    assert!(
        elapsed >= floor,
        "{elapsed:?} is faster than the link's {floor:?}"
    );

    let stats = emulator.shutdown();
    for (name, direction) in [("forward", &stats.forward), ("reverse", &stats.reverse)] {
        let (link, forwarder) = (&direction.link, &direction.forwarder);
        assert_eq!(
            link.offered, forwarder.read,
            "{name}: every packet read is offered"
        );
        assert_eq!(
            link.delivered,
            forwarder.written + forwarder.write_errors,
            "{name}: every delivery is written or counted as refused"
        );
        assert_eq!(forwarder.write_errors, 0, "{name}");
        assert!(link.offered >= link.delivered + link.dropped(), "{name}");
        let ingress = direction.ingress.expect("the TUN counters are readable");
        assert_eq!(
            ingress.tx_packets,
            forwarder.read + ingress.tx_dropped,
            "{name}: the TUN device counts what the forwarder read and what it dropped"
        );
    }
    // 4 MB in segments of at most 1448 bytes.
    assert!(stats.forward.link.delivered_bytes >= data.len() as u64);
    assert!(stats.forward.link.delivered >= (data.len() / 1448) as u64);
}

/// Sends datagrams numbered 0 to `count` − 1 from the client to the
/// server, in bursts small enough for the forwarder and the server's
/// socket buffer, and returns the numbers that arrived, in arrival order.
fn send_numbered(emulator: &Emulator, count: u64, port: u16) -> Vec<u64> {
    let server = emulator
        .server()
        .run_inside(|| UdpSocket::bind((SERVER_ADDR, port)))
        .unwrap()
        .unwrap();
    let client = emulator
        .client()
        .run_inside(|| UdpSocket::bind((CLIENT_ADDR, 0)))
        .unwrap()
        .unwrap();
    client.connect((SERVER_ADDR, port)).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 2048];
    let mut drain = |server: &UdpSocket| {
        while let Ok(len) = server.recv(&mut buffer) {
            if let Ok(number) = buffer[..len].try_into() {
                received.push(u64::from_be_bytes(number));
            }
        }
    };
    server.set_nonblocking(true).unwrap();
    for number in 0..count {
        client.send(&number.to_be_bytes()).unwrap();
        if number % 20 == 19 {
            // Drain what has come so far, so that the socket never overflows.
            drain(&server);
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    server.set_nonblocking(false).unwrap();
    server
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    drain(&server);
    received
}

/// How many datagrams arrived: [`send_numbered`]'s count.
fn send_datagrams(emulator: &Emulator, count: usize, port: u16) -> usize {
    send_numbered(emulator, count as u64, port).len()
}

/// Pairs of arrivals in which a later-numbered datagram came first.
fn overtakings(arrivals: &[u64]) -> usize {
    arrivals.windows(2).filter(|pair| pair[0] > pair[1]).count()
}

#[test]
fn duplicated_datagrams_arrive_twice() {
    if !supported() {
        return;
    }
    let link = LinkConfig {
        duplicate: 0.2,
        ..LinkConfig::default()
    };
    let emulator = Emulator::start(EmulatorConfig::symmetric(link, 4)).unwrap();
    let arrivals = send_numbered(&emulator, 1000, 5006);
    let stats = emulator.shutdown().forward;
    assert!(stats.link.duplicated > 100, "about 200 of 1000 duplicated");
    assert_eq!(arrivals.len() as u64, 1000 + stats.link.duplicated);
    assert_eq!(stats.link.delivered, arrivals.len() as u64);
    let mut distinct = arrivals.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct, (0..1000).collect::<Vec<u64>>());
}

#[test]
fn jitter_reorders_datagrams_only_when_reordering_is_allowed() {
    if !supported() {
        return;
    }
    for reorder in [true, false] {
        let link = LinkConfig {
            jitter: Some(Jitter {
                max: Duration::from_millis(5),
                reorder,
            }),
            ..LinkConfig::default()
        };
        let emulator = Emulator::start(EmulatorConfig::symmetric(link, 6)).unwrap();
        let arrivals = send_numbered(&emulator, 400, 5007);
        assert_eq!(arrivals.len(), 400, "reorder {reorder}: none lost");
        let overtaken = overtakings(&arrivals);
        if reorder {
            // 20 datagrams sent within a few hundred microseconds, each
            // delayed by up to 5 ms: most bursts come out shuffled.
            assert!(overtaken > 20, "only {overtaken} overtakings");
        } else {
            assert_eq!(overtaken, 0, "{arrivals:?}");
        }
    }
}

#[test]
fn nothing_crosses_during_an_outage() {
    if !supported() {
        return;
    }
    let link = LinkConfig {
        outages: vec![Outage {
            start: Duration::ZERO,
            end: Duration::from_secs(3600),
        }],
        ..LinkConfig::default()
    };
    let emulator = Emulator::start(EmulatorConfig::symmetric(link, 1)).unwrap();
    assert_eq!(send_datagrams(&emulator, 100, 5008), 0);
    let stats = emulator.shutdown().forward.link;
    assert_eq!((stats.offered, stats.dropped_outage), (100, 100));
}

#[test]
fn an_iid_10_percent_loss_path_drops_a_tenth_of_the_datagrams_within_statistical_bounds() {
    if !supported() {
        return;
    }
    let lossy = LinkConfig {
        loss: LossModel::Bernoulli { p: 0.10 },
        ..LinkConfig::default()
    };
    let seed = 11;
    let emulator = Emulator::start(EmulatorConfig {
        forward: lossy,
        reverse: LinkConfig::default(),
        seed,
    })
    .unwrap();
    let sent = 4000;
    let received = send_datagrams(&emulator, sent, 5002);
    let stats = emulator.shutdown();
    let link = &stats.forward.link;

    assert_eq!(
        stats.forward.ingress.map(|c| c.tx_dropped),
        Some(0),
        "the TUN queue dropped nothing"
    );
    assert_eq!(link.offered, sent as u64, "seed {seed}");
    assert_eq!(
        link.delivered, received as u64,
        "seed {seed}: all deliveries arrived"
    );
    assert_eq!(
        link.offered,
        link.delivered + link.dropped_random,
        "seed {seed}"
    );
    // Four standard deviations of a binomial ratio: a correct link fails
    // this about once in 15 000 seeds; a link at 8 % or 12 % almost always.
    let ratio = link.dropped_random as f64 / link.offered as f64;
    let sigma = (0.1f64 * 0.9 / sent as f64).sqrt();
    assert!(
        (ratio - 0.10).abs() < 4.0 * sigma,
        "seed {seed}: dropped {ratio:.4}, expected 0.10 ± {:.4}",
        4.0 * sigma
    );
}

#[test]
fn the_namespaces_exist_while_the_emulator_runs_and_are_gone_after_it_is_dropped() {
    if !supported() {
        return;
    }
    let emulator = Emulator::start(EmulatorConfig::symmetric(LinkConfig::default(), 1)).unwrap();
    let names = [
        emulator.client().name().to_owned(),
        emulator.server().name().to_owned(),
    ];
    assert!(names
        .iter()
        .all(|n| emulator.client().path().with_file_name(n).exists()));
    drop(emulator);
    let left: Vec<String> = own_namespaces();
    assert!(
        names.iter().all(|n| !left.contains(n)),
        "left behind: {left:?}"
    );
}

#[test]
fn the_namespaces_are_gone_after_a_command_fails_to_start() {
    if !supported() {
        return;
    }
    let emulator = Emulator::start(EmulatorConfig::symmetric(LinkConfig::default(), 1)).unwrap();
    let names = [
        emulator.client().name().to_owned(),
        emulator.server().name().to_owned(),
    ];
    let mut server = emulator.server().command("sleep");
    server.arg("30");
    let started = Instant::now();
    let error = emulator
        .run_commands(
            Some(server),
            Command::new("/nonexistent/ltx-emu-test-program"),
            ServerWait::Fixed(Duration::ZERO),
            &AtomicBool::new(false),
        )
        .unwrap_err();
    assert!(matches!(error, EmuError::Command { .. }), "{error}");
    // The server was stopped, not waited for.
    assert!(started.elapsed() < Duration::from_secs(30));
    drop(emulator);
    let left = own_namespaces();
    assert!(
        names.iter().all(|n| !left.contains(n)),
        "left behind: {left:?}"
    );
}

#[test]
fn an_invalid_link_is_refused_naming_its_direction() {
    if !supported() {
        return;
    }
    let bad = LinkConfig {
        duplicate: 1.5,
        ..LinkConfig::default()
    };
    let error = Emulator::start(EmulatorConfig {
        forward: bad.clone(),
        reverse: LinkConfig::default(),
        seed: 1,
    })
    .unwrap_err();
    assert!(matches!(error, EmuError::Forward(_)), "{error}");
    let error = Emulator::start(EmulatorConfig {
        forward: LinkConfig::default(),
        reverse: bad,
        seed: 1,
    })
    .unwrap_err();
    assert!(matches!(error, EmuError::Reverse(_)), "{error}");
}

#[test]
fn parallel_emulators_have_their_own_namespaces_and_paths() {
    if !supported() {
        return;
    }
    let emulators: Vec<Emulator> = std::thread::scope(|scope| {
        let starts: Vec<_> = (0..3)
            .map(|seed| {
                scope.spawn(move || {
                    Emulator::start(EmulatorConfig::symmetric(LinkConfig::default(), seed)).unwrap()
                })
            })
            .collect();
        starts.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut names: Vec<&str> = emulators
        .iter()
        .flat_map(|e| [e.client().name(), e.server().name()])
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 6, "{names:?}");
    // The same addresses and port in each: each path is its own.
    for emulator in &emulators {
        assert_eq!(send_datagrams(emulator, 50, 5003), 50);
    }
    for emulator in emulators {
        let stats = emulator.shutdown();
        assert_eq!(stats.forward.link.delivered, 50);
    }
}

#[test]
fn the_client_runs_once_the_server_listens_and_the_server_is_stopped_after_it() {
    if !supported() {
        return;
    }
    let emulator = Emulator::start(EmulatorConfig::symmetric(LinkConfig::default(), 1)).unwrap();
    // The server binds after a pause; a client started at once would find
    // nothing listening.
    let mut server = emulator.server().command("sh");
    server.args([
        "-c",
        "sleep 0.3; exec python3 -c 'import socket,time; s=socket.socket(); \
         s.bind((\"10.77.0.2\", 5004)); s.listen(); time.sleep(60)'",
    ]);
    let mut client = emulator.client().command("sh");
    client.args([
        "-c",
        "exec python3 -c 'import socket; socket.create_connection((\"10.77.0.2\", 5004), timeout=5)'",
    ]);
    if Command::new("python3").arg("-V").output().is_err() {
        eprintln!("skipped: needs python3 for a listening server");
        return;
    }
    let started = Instant::now();
    let outcome = emulator
        .run_commands(
            Some(server),
            client,
            ServerWait::Listening(Duration::from_secs(20)),
            &AtomicBool::new(false),
        )
        .unwrap();
    assert!(outcome.client.is_some_and(|s| s.success()), "{outcome:?}");
    assert_eq!(outcome.server_exited, None, "the server ran until stopped");
    assert!(!outcome.interrupted);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the server was stopped"
    );
}

#[test]
fn an_interrupted_run_stops_the_client() {
    if !supported() {
        return;
    }
    let emulator = Emulator::start(EmulatorConfig::symmetric(LinkConfig::default(), 1)).unwrap();
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupted);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    let mut client = emulator.client().command("sleep");
    client.arg("60");
    let outcome = emulator
        .run_commands(
            None,
            client,
            ServerWait::Fixed(Duration::ZERO),
            &interrupted,
        )
        .unwrap();
    setter.join().unwrap();
    assert!(outcome.interrupted);
    assert!(outcome.client.is_some_and(|s| !s.success()), "{outcome:?}");
}

/// A counter of `/proc/net/netstat` or `/proc/net/snmp` in the namespace
/// whose file this is: `group` (e.g. `TcpExt`) and `name`.
fn kernel_counter(text: &str, group: &str, name: &str) -> Option<u64> {
    let mut rows = text
        .lines()
        .filter(|line| line.starts_with(&format!("{group}:")));
    let names = rows.next()?;
    let values = rows.next()?;
    let at = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(at)?.parse().ok()
}

fn read_inside(emulator: &Emulator, client: bool, file: &'static str) -> String {
    let namespace = if client {
        emulator.client()
    } else {
        emulator.server()
    };
    namespace
        .run_inside(|| std::fs::read_to_string(format!("/proc/thread-self/net/{file}")))
        .unwrap()
        .unwrap()
}

#[test]
fn ce_marks_from_the_aqm_reach_the_tcp_receiver_with_valid_ip_headers() {
    if !supported() {
        return;
    }
    let forward = LinkConfig {
        delay: Duration::from_millis(10),
        rate: Some(Rate::mbit(10.0)),
        queue: QueueLimit::Bytes(250_000),
        aqm: Some(Aqm::codel()),
        ..LinkConfig::default()
    };
    let reverse = LinkConfig {
        delay: Duration::from_millis(10),
        ..LinkConfig::default()
    };
    let emulator = Emulator::start(EmulatorConfig {
        forward,
        reverse,
        seed: 5,
    })
    .unwrap();
    // The client asks for ECN on its connections (the server accepts it by
    // default); both sysctls are the namespaces' own.
    emulator
        .client()
        .run_inside(|| std::fs::write("/proc/sys/net/ipv4/tcp_ecn", "1"))
        .unwrap()
        .unwrap();
    let listener = emulator
        .server()
        .run_inside(|| TcpListener::bind((SERVER_ADDR, 5005)))
        .unwrap()
        .unwrap();
    let receiver = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        got
    });
    let data = payload(3_000_000);
    let mut sender = emulator
        .client()
        .run_inside(|| TcpStream::connect((SERVER_ADDR, 5005)))
        .unwrap()
        .unwrap();
    sender.write_all(&data).unwrap();
    sender.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(
        receiver.join().unwrap() == data,
        "the bytes arrived changed"
    );

    let client_netstat = read_inside(&emulator, true, "netstat");
    let server_snmp = read_inside(&emulator, false, "snmp");
    let stats = emulator.shutdown();
    let link = &stats.forward.link;
    assert!(link.marked > 0, "a saturated CoDel queue marks ECT packets");
    // Echoed back by the receiver as ECE and counted by the sender: the
    // marks arrived, in packets the receiver accepted.
    let delivered_ce = kernel_counter(&client_netstat, "TcpExt", "TCPDeliveredCE");
    assert!(
        delivered_ce.is_some_and(|n| n > 0),
        "TCPDeliveredCE {delivered_ce:?}"
    );
    assert_eq!(kernel_counter(&server_snmp, "Ip", "InHdrErrors"), Some(0));
    assert_eq!(
        kernel_counter(&server_snmp, "Ip", "InCsumErrors").unwrap_or(0),
        0
    );
}
