//! How closely the impairment shim keeps the link model's time on this
//! machine, and what it costs.
//!
//! A paced sender offers datagrams to a 50 Mbit/s link with a 300 ms one-way
//! delay (the long-delay scenario's 600 ms round trip), and the receiver
//! compares each arrival with the time the model gives from the send time:
//! `max(sent, link busy until) + serialization + delay`. Then the link is
//! offered more than it carries, and the delivered rate is compared with its
//! 50 Mbit/s. Last, the relay's CPU time is read while it works and while it
//! idles.
//!
//! `cargo run --release -p ltx --features shim --example shim_precision [offered Mbit/s] [seconds]`
//! (45 and 5 by default).

use std::net::UdpSocket;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ltx::shim::ImpairedPath;
use ltx_link::{LinkConfig, QueueLimit, Rate};

const PACKET: usize = 1400;
const DELAY: Duration = Duration::from_millis(300);
const RATE_MBIT: f64 = 50.0;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let offered: f64 = args.next().map_or(Ok(45.0), |a| a.parse())?;
    let seconds: f64 = args.next().map_or(Ok(5.0), |a| a.parse())?;
    let duration = Duration::from_secs_f64(seconds);
    let rate = Rate::mbit(RATE_MBIT);
    let link = LinkConfig {
        delay: DELAY,
        rate: Some(rate),
        // One bandwidth-delay product of a 600 ms round trip.
        queue: QueueLimit::Bytes(3_750_000),
        ..LinkConfig::default()
    };

    println!("link: {RATE_MBIT} Mbit/s, {DELAY:?} one way, {PACKET}-byte datagrams");
    println!();
    println!("1. delay error at {offered} Mbit/s offered for {seconds} s");
    let run = Run::start(link.clone(), offered, duration)?;
    let (sent, arrivals, path, cpu) = run.finish()?;
    let serialization = rate.serialization(PACKET);
    let mut arrived = vec![None; sent.len()];
    for &(index, at) in &arrivals {
        arrived[index as usize] = Some(at);
    }
    // The model's queue, fed with the send times: a datagram starts when
    // it is sent or when the one before it is through, whichever is later.
    let mut busy = Duration::ZERO;
    let mut errors: Vec<f64> = Vec::new();
    for (&sent_at, arrived_at) in sent.iter().zip(&arrived) {
        busy = busy.max(sent_at) + serialization;
        if let Some(arrived_at) = arrived_at {
            errors.push(micros(*arrived_at) - micros(busy + DELAY));
        }
    }
    println!("   {} of {} datagrams arrived", errors.len(), sent.len());
    print_distribution("   arrival after the model's time (µs)", &mut errors);
    let (relay, _) = path.relay_stats();
    println!(
        "   relay release lateness (µs): mean {:.1}  p50 {:.1}  p99 {:.1}  max {:.1}",
        micros(relay.mean_lateness()),
        micros(relay.lateness.quantile(0.5)),
        micros(relay.lateness.quantile(0.99)),
        micros(relay.lateness.max())
    );
    println!(
        "   relay thread CPU: {:.1} % of one core ({} send errors)",
        cpu * 100.0,
        relay.send_errors
    );
    drop(path);

    let over = RATE_MBIT * 1.2;
    println!();
    println!("2. delivered rate at {over} Mbit/s offered for {seconds} s");
    let run = Run::start(link, over, duration)?;
    let (_, arrivals, path, cpu) = run.finish()?;
    // The queue fills during the first round trip; measure after it.
    let steady: Vec<Duration> = arrivals
        .iter()
        .map(|&(_, at)| at)
        .filter(|&at| at > DELAY * 2)
        .collect();
    if let (Some(first), Some(last)) = (steady.first(), steady.last()) {
        let bits = ((steady.len() - 1) * PACKET * 8) as f64;
        let measured = bits / (*last - *first).as_secs_f64() / 1e6;
        println!(
            "   {measured:.3} Mbit/s delivered: {:+.3} % against the link's rate",
            (measured / RATE_MBIT - 1.0) * 100.0
        );
    }
    let (stats, relay) = (path.stats().0, path.relay_stats().0);
    println!(
        "   link: {} offered, {} delivered, {} dropped by the full queue; relay: {} received, {} send errors",
        stats.offered, stats.delivered, stats.dropped_queue, relay.received, relay.send_errors
    );
    println!("   relay thread CPU: {:.1} % of one core", cpu * 100.0);

    println!();
    println!("3. an idle relay for 2 s");
    let server = UdpSocket::bind("127.0.0.1:0")?;
    let path = ImpairedPath::start(
        server.local_addr()?,
        LinkConfig::default(),
        LinkConfig::default(),
        1,
    )?;
    let before = relay_cpu()?;
    std::thread::sleep(Duration::from_secs(2));
    let spent = relay_cpu()? - before;
    println!("   relay thread CPU: {spent:?} in 2 s");
    drop(path);
    Ok(())
}

/// One measured run: a paced sender and a receiver on either side of a
/// path.
struct Run {
    path: ImpairedPath,
    sender: JoinHandle<std::io::Result<Vec<Duration>>>,
    receiver: JoinHandle<std::io::Result<Vec<(u64, Duration)>>>,
    cpu_start: Duration,
}

impl Run {
    fn start(link: LinkConfig, offered_mbit: f64, duration: Duration) -> std::io::Result<Run> {
        let server = UdpSocket::bind("127.0.0.1:0")?;
        let path = ImpairedPath::start(server.local_addr()?, link, LinkConfig::default(), 1)
            .map_err(std::io::Error::other)?;
        let client = UdpSocket::bind("127.0.0.1:0")?;
        client.connect(path.client_facing_addr())?;
        let base = Instant::now();
        let cpu_start = relay_cpu()?;
        let receiver = std::thread::spawn(move || receive(server, base));
        let sender = std::thread::spawn(move || send(client, base, offered_mbit, duration));
        Ok(Run {
            path,
            sender,
            receiver,
            cpu_start,
        })
    }

    /// Send times by index, arrivals in order, the path, and the relay's
    /// CPU share while it worked.
    #[allow(clippy::type_complexity)]
    fn finish(self) -> std::io::Result<(Vec<Duration>, Vec<(u64, Duration)>, ImpairedPath, f64)> {
        let sent = self.sender.join().expect("sender")?;
        let arrivals = self.receiver.join().expect("receiver")?;
        // The relay works from the first datagram sent to the last one
        // delivered; the receiver's quiet second after that costs it nothing.
        let busy = arrivals.last().map_or(Duration::ZERO, |&(_, at)| at);
        let cpu = (relay_cpu()? - self.cpu_start).as_secs_f64() / busy.as_secs_f64();
        Ok((sent, arrivals, self.path, cpu))
    }
}

/// Sends `PACKET`-byte datagrams at `mbit` for `duration`, each carrying
/// its index; returns when each was sent.
fn send(
    socket: UdpSocket,
    base: Instant,
    mbit: f64,
    duration: Duration,
) -> std::io::Result<Vec<Duration>> {
    let interval = Rate::mbit(mbit).serialization(PACKET);
    let mut sent = Vec::new();
    let mut payload = vec![0u8; PACKET];
    let mut next = Duration::ZERO;
    while next < duration {
        let now = base.elapsed();
        if now < next {
            std::thread::sleep(next - now);
        }
        payload[..8].copy_from_slice(&(sent.len() as u64).to_be_bytes());
        let at = base.elapsed();
        socket.send(&payload)?;
        sent.push(at);
        next += interval;
    }
    Ok(sent)
}

/// Reads until nothing comes for a second: each datagram's index and when
/// it arrived.
fn receive(socket: UdpSocket, base: Instant) -> std::io::Result<Vec<(u64, Duration)>> {
    socket.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut buf = vec![0u8; 65536];
    let mut arrivals = Vec::new();
    while let Ok(len) = socket.recv(&mut buf) {
        let at = base.elapsed();
        if len >= 8 {
            let index = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
            arrivals.push((index, at));
        }
    }
    Ok(arrivals)
}

/// The CPU time of the relay thread, from the scheduler's statistics.
fn relay_cpu() -> std::io::Result<Duration> {
    // A new thread names itself once it runs.
    for _ in 0..100 {
        if let Some(cpu) = find_relay_cpu()? {
            return Ok(cpu);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err(std::io::Error::other("no relay thread"))
}

fn find_relay_cpu() -> std::io::Result<Option<Duration>> {
    for task in std::fs::read_dir("/proc/self/task")? {
        let task = task?.path();
        if std::fs::read_to_string(task.join("comm"))?.trim() == "ltx-shim" {
            let schedstat = std::fs::read_to_string(task.join("schedstat"))?;
            let nanos: u64 = schedstat
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            return Ok(Some(Duration::from_nanos(nanos)));
        }
    }
    Ok(None)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn print_distribution(label: &str, values: &mut [f64]) {
    if values.is_empty() {
        println!("{label}: no samples");
        return;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    println!(
        "{label}: mean {mean:.1}  min {:.1}  p50 {:.1}  p99 {:.1}  max {:.1}",
        at(0.0),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
