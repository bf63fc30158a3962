//! `ltx-bench forwarder`: what the emulator's forwarder costs a path with
//! no impairment. Kernel TCP between the two namespaces for a few seconds
//! (throughput) and UDP ping-pong (round-trip time), through the emulator
//! and, in the same run, through a veth pair between two other namespaces,
//! the kernel's own path and the reference. Runs alternate between the two
//! paths so that both see the same load on the machine.
//!
//! The ping threads run under `SCHED_FIFO`, as the forwarder's do, on both
//! paths: the round trips then measure the path rather than how long the
//! machine's other work keeps the two ends from running. The TCP ends run
//! under the default policy. The added round-trip time is the difference
//! of the two paths' quantiles, for a whole round trip (two crossings of
//! the forwarder).
//!
//! The benchmark also reports the machine's wake-up floor: how late a bare
//! `SCHED_FIFO` thread wakes from a short sleep, which bounds what any
//! latency figure on that machine can mean. The veth pair hands TCP 64 KB
//! segments (TSO/GRO); the TUN devices carry packets of at most the MTU,
//! each read and written separately. Figures are in `docs/results.md` ("The
//! emulator's forwarder").

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use clap::Args;
use ltx_cli::live::round;
use ltx_emu::{Emulator, EmulatorConfig, NetNamespace, PathStats, CLIENT_ADDR, SERVER_ADDR};
use ltx_link::LinkConfig;
use ltx_sim::units::parse_duration;
use serde_json::json;

use super::measure::median;

/// Bytes per write of the TCP sender.
const WRITE_CHUNK: usize = 128 * 1024;
/// Bytes of a ping.
const PING_BYTES: usize = 64;
/// Pings sent before any is timed: routes, caches and the forwarder's
/// threads warm up.
const WARM_UP_PINGS: usize = 100;
/// How long a ping may take before it counts as lost.
const PING_TIMEOUT: Duration = Duration::from_secs(1);
/// The sleep whose overshoot measures the machine's wake-up latency: a
/// full-size packet's time at 60 Mbit/s.
const TIMER_SLEEP: Duration = Duration::from_micros(200);
/// How long the wake-up latency is measured.
const TIMER_DURATION: Duration = Duration::from_secs(2);

/// How long `ltx-bench forwarder` measures.
#[derive(Debug, Args)]
pub(crate) struct ForwarderArgs {
    /// Length of each TCP transfer.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    duration: Duration,
    /// Runs on each path; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Timed pings per run.
    #[arg(long, default_value_t = 5000)]
    pings: usize,
    /// One JSON object per line instead of a summary.
    #[arg(long)]
    json: bool,
}

/// One run's figures on one path.
#[derive(Debug, Clone, Copy)]
struct RunFigures {
    mbit_s: f64,
    rtt_p50_us: f64,
    rtt_p99_us: f64,
    lost_pings: usize,
}

/// Runs `ltx-bench forwarder`.
pub(crate) fn run(args: &ForwarderArgs) -> anyhow::Result<()> {
    if args.runs == 0 || args.pings == 0 {
        bail!("--runs and --pings must be at least 1");
    }
    let missing = ltx_emu::missing();
    if !missing.is_empty() {
        return Err(ltx_emu::EmuError::Missing(missing).into());
    }
    let mut emulated = Vec::new();
    let mut reference = Vec::new();
    for run in 1..=args.runs {
        let emulator = Emulator::start(EmulatorConfig::symmetric(LinkConfig::default(), 1))?;
        let figures =
            measure(emulator.client(), emulator.server(), args).context("through the emulator")?;
        let stats = emulator.shutdown();
        report(args, run, "emulator", &figures, Some(&stats));
        emulated.push(figures);

        let (client, server) = veth_pair()?;
        let figures = measure(&client, &server, args).context("through a veth pair")?;
        report(args, run, "veth", &figures, None);
        reference.push(figures);
    }
    let middle = |runs: &[RunFigures], figure: fn(&RunFigures) -> f64| {
        median(&runs.iter().map(figure).collect::<Vec<_>>()).expect("at least one run")
    };
    let mbit_s = middle(&emulated, |f| f.mbit_s);
    let veth_mbit_s = middle(&reference, |f| f.mbit_s);
    let p50 = middle(&emulated, |f| f.rtt_p50_us);
    let p99 = middle(&emulated, |f| f.rtt_p99_us);
    let veth_p50 = middle(&reference, |f| f.rtt_p50_us);
    let veth_p99 = middle(&reference, |f| f.rtt_p99_us);
    let (timer_p50, timer_p99) = wake_up_lateness()?;
    let summary = json!({
        "bench": "forwarder",
        "runs": args.runs,
        "tcp_mbit_s": round(mbit_s, 1),
        "veth_tcp_mbit_s": round(veth_mbit_s, 1),
        "tcp_over_veth": round(mbit_s / veth_mbit_s, 4),
        "rtt_p50_us": round(p50, 1),
        "rtt_p99_us": round(p99, 1),
        "veth_rtt_p50_us": round(veth_p50, 1),
        "veth_rtt_p99_us": round(veth_p99, 1),
        "added_rtt_p50_us": round(p50 - veth_p50, 1),
        "added_rtt_p99_us": round(p99 - veth_p99, 1),
        "timer_late_p50_us": round(timer_p50, 1),
        "timer_late_p99_us": round(timer_p99, 1),
    });
    if args.json {
        println!("{summary}");
    } else {
        println!(
            "median of {} runs: TCP {mbit_s:.0} Mbit/s through the emulator, {veth_mbit_s:.0} \
             through veth (×{:.3}); round trip p50 {p50:.0} µs, p99 {p99:.0} µs (veth {veth_p50:.0} \
             / {veth_p99:.0} µs): the forwarder adds {:.0} µs at p50, {:.0} µs at p99 per round trip",
            args.runs,
            mbit_s / veth_mbit_s,
            p50 - veth_p50,
            p99 - veth_p99,
        );
        println!(
            "a thread scheduled as the forwarder's wakes from a {} µs sleep {timer_p50:.0} µs \
             late at p50, {timer_p99:.0} µs at p99 on this machine now",
            TIMER_SLEEP.as_micros()
        );
    }
    Ok(())
}

/// How late a thread scheduled as the forwarder's threads are wakes from
/// short sleeps, p50 and p99 in µs: the floor under any emulated path's
/// timing on this machine at this moment (a virtual machine whose host
/// takes its CPUs away shows it here first).
fn wake_up_lateness() -> anyhow::Result<(f64, f64)> {
    let mut late = std::thread::spawn(|| {
        timed_thread();
        let mut late = Vec::new();
        let started = Instant::now();
        while started.elapsed() < TIMER_DURATION {
            let asleep = Instant::now();
            std::thread::sleep(TIMER_SLEEP);
            late.push(asleep.elapsed().saturating_sub(TIMER_SLEEP));
        }
        late
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the sleeping thread panicked"))?;
    late.sort_unstable();
    let quantile = |q: f64| {
        let rank = ((q * late.len() as f64).ceil() as usize).clamp(1, late.len());
        late[rank - 1].as_secs_f64() * 1e6
    };
    Ok((quantile(0.5), quantile(0.99)))
}

fn report(
    args: &ForwarderArgs,
    run: usize,
    path: &str,
    figures: &RunFigures,
    stats: Option<&PathStats>,
) {
    let mut line = json!({
        "bench": "forwarder",
        "run": run,
        "path": path,
        "tcp_mbit_s": round(figures.mbit_s, 1),
        "rtt_p50_us": round(figures.rtt_p50_us, 1),
        "rtt_p99_us": round(figures.rtt_p99_us, 1),
        "lost_pings": figures.lost_pings,
    });
    if let Some(stats) = stats {
        let lateness = |q| {
            let both = [&stats.forward, &stats.reverse]
                .map(|d| d.forwarder.lateness.quantile(q).as_secs_f64() * 1e6);
            round(both[0].max(both[1]), 1)
        };
        let tun_dropped: Option<u64> = [&stats.forward, &stats.reverse]
            .iter()
            .map(|d| d.ingress.map(|c| c.tx_dropped))
            .sum();
        line["lateness_p50_us"] = json!(lateness(0.5));
        line["lateness_p99_us"] = json!(lateness(0.99));
        line["tun_tx_dropped"] = json!(tun_dropped);
        line["packets"] = json!(stats.forward.link.delivered + stats.reverse.link.delivered);
        let cpu_s =
            (stats.forward.forwarder.cpu_time + stats.reverse.forwarder.cpu_time).as_secs_f64();
        line["forwarder_cpu_s"] = json!(round(cpu_s, 3));
        // Per 10^9 bytes carried client to server (the TCP data; the pings
        // add a few hundred kilobytes).
        let gigabytes = stats.forward.link.delivered_bytes as f64 / 1e9;
        if gigabytes > 0.0 {
            line["forwarder_cpu_s_per_gb"] = json!(round(cpu_s / gigabytes, 3));
        }
    }
    if args.json {
        println!("{line}");
    } else {
        eprintln!("run {run} {path}: {line}");
    }
}

/// Two namespaces joined by a veth pair with the emulator's addresses.
fn veth_pair() -> anyhow::Result<(NetNamespace, NetNamespace)> {
    let (client, server) = NetNamespace::create_pair()?;
    client.ip_batch(&format!(
        "link add veth0 type veth peer name veth0 netns {}\n\
         addr add {CLIENT_ADDR}/30 dev veth0\n\
         link set dev veth0 up\n",
        server.name()
    ))?;
    server.ip_batch(&format!(
        "addr add {SERVER_ADDR}/30 dev veth0\nlink set dev veth0 up\n"
    ))?;
    Ok((client, server))
}

/// Throughput, then round-trip times, from `client` to `server`.
fn measure(
    client: &NetNamespace,
    server: &NetNamespace,
    args: &ForwarderArgs,
) -> anyhow::Result<RunFigures> {
    let mbit_s = tcp_throughput(client, server, args.duration).context("TCP")?;
    let (mut rtts, lost_pings) = ping_pong(client, server, args.pings).context("UDP ping-pong")?;
    ensure!(!rtts.is_empty(), "every ping was lost");
    rtts.sort_unstable();
    let quantile = |q: f64| {
        let rank = ((q * rtts.len() as f64).ceil() as usize).clamp(1, rtts.len());
        rtts[rank - 1].as_secs_f64() * 1e6
    };
    Ok(RunFigures {
        mbit_s,
        rtt_p50_us: quantile(0.5),
        rtt_p99_us: quantile(0.99),
        lost_pings,
    })
}

/// Sends as much as TCP takes for `duration`, then closes; the rate is what
/// the receiver read by the end of the stream over the time since the
/// first write, in Mbit/s.
fn tcp_throughput(
    client: &NetNamespace,
    server: &NetNamespace,
    duration: Duration,
) -> anyhow::Result<f64> {
    let listener = server.run_inside(|| TcpListener::bind((SERVER_ADDR, 0)))??;
    let port = listener.local_addr()?.port();
    let receiver = std::thread::spawn(move || -> io::Result<(u64, Instant)> {
        let (mut stream, _) = listener.accept()?;
        let mut buffer = vec![0u8; 4 * WRITE_CHUNK];
        let mut received = 0u64;
        loop {
            match stream.read(&mut buffer)? {
                0 => return Ok((received, Instant::now())),
                n => received += n as u64,
            }
        }
    });
    let mut stream = client.run_inside(|| TcpStream::connect((SERVER_ADDR, port)))??;
    let chunk = vec![0x5a; WRITE_CHUNK];
    let mut sent = 0u64;
    let started = Instant::now();
    while started.elapsed() < duration {
        stream.write_all(&chunk)?;
        sent += chunk.len() as u64;
    }
    stream.shutdown(Shutdown::Write)?;
    let (received, ended) = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))??;
    ensure!(received == sent, "sent {sent} bytes, {received} arrived");
    Ok(received as f64 * 8.0 / ended.duration_since(started).as_secs_f64() / 1e6)
}

/// `count` timed round trips of a small datagram, one at a time, after a
/// warm-up: the round-trip times, and how many pings were lost.
fn ping_pong(
    client: &NetNamespace,
    server: &NetNamespace,
    count: usize,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let echo = server.run_inside(|| UdpSocket::bind((SERVER_ADDR, 0)))??;
    let port = echo.local_addr()?.port();
    echo.set_read_timeout(Some(PING_TIMEOUT * 2))?;
    let echoing = std::thread::spawn(move || {
        timed_thread();
        let mut buffer = [0u8; PING_BYTES];
        // Ends on the empty datagram that closes the run, or on silence.
        while let Ok((len, from)) = echo.recv_from(&mut buffer) {
            if len == 0 {
                break;
            }
            let _ = echo.send_to(&buffer[..len], from);
        }
    });
    let socket = client.run_inside(|| UdpSocket::bind((CLIENT_ADDR, 0)))??;
    socket.connect((SERVER_ADDR, port))?;
    // The pings go out from a thread of their own, which leaves the
    // caller's scheduling as it was.
    let result = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                timed_thread();
                pings(&socket, count)
            })
            .join()
            .map_err(|_| anyhow::anyhow!("the pinging thread panicked"))?
    });
    // The empty datagram stops the echo; should it be lost, the echo stops
    // after two timeouts of silence.
    let _ = socket.send(&[]);
    let _ = echoing.join();
    result
}

/// Asks for the scheduling of the forwarder's threads, so that the round
/// trips measure the path and not how long the machine's other work keeps
/// the two ends from running; the same on both paths.
fn timed_thread() {
    ltx_realtime::prefer_prompt_wakeups();
    if let Err(error) = ltx_realtime::prefer_realtime_scheduling() {
        eprintln!("ltx-bench forwarder: the ping threads run under the default policy ({error})");
    }
}

/// `count` timed round trips on `socket` after a warm-up.
fn pings(socket: &UdpSocket, count: usize) -> anyhow::Result<(Vec<Duration>, usize)> {
    socket.set_read_timeout(Some(PING_TIMEOUT))?;
    let mut rtts = Vec::with_capacity(count);
    let mut lost = 0;
    let mut ping = [0u8; PING_BYTES];
    let mut reply = [0u8; PING_BYTES];
    for seq in 0..(WARM_UP_PINGS + count) as u64 {
        ping[..8].copy_from_slice(&seq.to_be_bytes());
        let sent = Instant::now();
        socket.send(&ping)?;
        let answered = loop {
            match socket.recv(&mut reply) {
                // A late reply to an earlier ping is skipped.
                Ok(len) if len >= 8 && reply[..8] == ping[..8] => break true,
                Ok(_) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break false
                }
                Err(e) => return Err(e.into()),
            }
        };
        let rtt = sent.elapsed();
        if seq as usize >= WARM_UP_PINGS {
            if answered {
                rtts.push(rtt);
            } else {
                lost += 1;
            }
        }
    }
    Ok((rtts, lost))
}
