//! Tail protection of application-limited traffic: a lone message (an
//! ssh keystroke) whose only packet is lost is repaired by the sender's
//! tail repair, not after a probe time-out, and the interactive traffic
//! around it neither grows the window nor raises the loss estimate past
//! what the path dealt; a message lost in the middle of a download is
//! repaired by its guard, not a round trip later.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ltx_proto::{Connection, EcnCodepoint, ReadOutcome, StreamId, TransportConfig};

/// The one-way delay of a long path, where repair goes ahead of loss.
const LONG: Duration = Duration::from_millis(300);
/// The one-way delay of a short path, where gaps are left to feedback.
const SHORT: Duration = Duration::from_millis(10);

/// Two connections joined by a wire with a fixed one-way delay, in
/// virtual time; `drop` decides, for each client datagram in order,
/// whether the wire loses it.
struct Path {
    now: Instant,
    one_way: Duration,
    client: Connection,
    server: Connection,
    /// Datagrams on the wire: arrival time (and a sequence number to keep
    /// the order of equal times) → (to the server?, bytes).
    wire: BTreeMap<(Instant, u64), (bool, Vec<u8>)>,
    sequence: u64,
    client_datagrams: u64,
    drop: Box<Loses>,
}

/// Whether the wire loses the client's `n`th datagram (with these bytes).
type Loses = dyn FnMut(u64, &[u8]) -> bool;

impl Path {
    fn new(one_way: Duration, drop: impl FnMut(u64, &[u8]) -> bool + 'static) -> Path {
        let now = Instant::now();
        Path {
            now,
            one_way,
            client: Connection::client(TransportConfig::default(), now, 7).unwrap(),
            server: Connection::server(TransportConfig::default(), now, 8).unwrap(),
            wire: BTreeMap::new(),
            sequence: 0,
            client_datagrams: 0,
            drop: Box::new(drop),
        }
    }

    /// Puts what both ends have to send on the wire.
    fn send(&mut self) {
        while let Some(t) = self.client.poll_transmit(self.now) {
            let n = self.client_datagrams;
            self.client_datagrams += 1;
            if !(self.drop)(n, &t.contents) {
                self.sequence += 1;
                self.wire
                    .insert((self.now + self.one_way, self.sequence), (true, t.contents));
            }
        }
        while let Some(t) = self.server.poll_transmit(self.now) {
            self.sequence += 1;
            self.wire.insert(
                (self.now + self.one_way, self.sequence),
                (false, t.contents),
            );
        }
    }

    /// Runs until `until`, delivering datagrams and firing timers in order.
    fn run_until(&mut self, until: Instant) {
        loop {
            self.send();
            let arrival = self.wire.keys().next().map(|(t, _)| *t);
            let next = [
                arrival,
                self.client.poll_timeout(),
                self.server.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|t| *t <= until) else {
                self.now = until;
                return;
            };
            self.now = self.now.max(next);
            while let Some(entry) = self.wire.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                let (to_server, bytes) = entry.remove();
                let to = if to_server {
                    &mut self.server
                } else {
                    &mut self.client
                };
                to.handle_datagram(self.now, &bytes, EcnCodepoint::NotEct);
            }
            self.client.handle_timeout(self.now);
            self.server.handle_timeout(self.now);
        }
    }

    /// Writes `message` on the client's stream `id` and runs in steps of
    /// `step` until the server reads it (reading `also` meanwhile), for at
    /// most `limit`: how long it took.
    fn deliver(
        &mut self,
        id: StreamId,
        message: &[u8],
        step: Duration,
        limit: Duration,
        also: Option<StreamId>,
    ) -> Option<Duration> {
        let sent = self.now;
        self.client.write(id, message).unwrap();
        while self.now < sent + limit {
            self.run_until(self.now + step);
            if self.read(id) > 0 {
                return Some(self.now - sent);
            }
            if let Some(also) = also {
                self.read(also);
            }
        }
        None
    }

    /// Bytes the server has to read on `id` now.
    fn read(&mut self, id: StreamId) -> usize {
        let mut buf = [0u8; 4096];
        let mut total = 0;
        while let Ok(ReadOutcome::Data(n)) = self.server.read(id, &mut buf) {
            total += n;
        }
        total
    }
}

/// A connection that has carried a few messages, so that both ends have
/// measured the path; the stream they went on.
fn established(path: &mut Path) -> (StreamId, u64) {
    path.run_until(path.now + Duration::from_secs(1));
    assert!(path.client.is_established(), "the handshake completes");
    let initial_window = path.client.stats().cwnd;
    let id = path.client.open_stream().unwrap();
    let mut read = 0;
    for _ in 0..40 {
        path.client.write(id, &[b'x'; 100]).unwrap();
        path.run_until(path.now + Duration::from_millis(300));
        read += path.read(id);
    }
    path.run_until(path.now + Duration::from_secs(3));
    read += path.read(id);
    assert_eq!(read, 40 * 100);
    path.run_until(path.now + Duration::from_secs(3));
    (id, initial_window)
}

#[test]
fn a_lone_lost_keystroke_is_repaired_before_a_probe_time_out() {
    // Lose the first client datagram sent after the marker is set.
    let armed = std::rc::Rc::new(std::cell::Cell::new(false));
    let lost = std::rc::Rc::new(std::cell::Cell::new(None));
    let (a, l) = (armed.clone(), lost.clone());
    // Before: one datagram in ten lost, so that the path's loss is known
    // (on a path that has never lost anything, a lone message gets no
    // tail repair: it would double every keystroke's packets).
    let mut path = Path::new(LONG, move |n, _| {
        if a.get() {
            if l.get().is_none() {
                l.set(Some(n));
                return true;
            }
            return false;
        }
        n % 10 == 9
    });
    let (id, initial_window) = established(&mut path);
    armed.set(true);
    let step = Duration::from_millis(5);
    let delivered = path.deliver(id, b"k", step, Duration::from_secs(5), None);
    assert!(lost.get().is_some(), "the keystroke's datagram was dropped");
    let delay = delivered.expect("the keystroke arrives");
    let rtt = path.client.stats().rtt;
    let stats = path.client.stats();
    println!(
        "keystroke delivered after {delay:?}, rtt {rtt:?}, loss estimate {:.3}, cwnd {}, tail repairs {}",
        stats.loss_rate, stats.cwnd, stats.repair_tail
    );
    // A probe time-out is at least a smoothed RTT after the send, and the
    // probe then takes a one-way delay: arriving before that is the tail
    // repair's doing.
    assert!(delay < rtt + LONG, "{delay:?} with rtt {rtt:?}");
    // Interactive traffic and its tail repairs neither grow the window
    // nor raise the loss estimate above the one in ten the path dealt.
    assert!(
        stats.cwnd <= initial_window,
        "{} > {initial_window}",
        stats.cwnd
    );
    assert!(stats.loss_rate <= 0.15, "loss estimate {}", stats.loss_rate);
}

#[test]
fn a_message_lost_beside_a_download_is_repaired_by_its_guard() {
    // One datagram in ten lost while the path is measured, none while the
    // download gets going; then the three datagrams sent after the message
    // is written (it goes in the second source symbol, behind one of the
    // download's), and nothing else.
    let phase = std::rc::Rc::new(std::cell::Cell::new(Phase::Measuring));
    let p = phase.clone();
    let mut path = Path::new(SHORT, move |n, _| match p.get() {
        Phase::Measuring => n % 10 == 9,
        Phase::Clean => false,
        Phase::LoseFrom(first) => (first..first + 3).contains(&n),
    });
    let (message_stream, _) = established(&mut path);
    phase.set(Phase::Clean);
    let download = path.client.open_stream().unwrap();
    let bulk = vec![b'd'; 1 << 20];
    let (mut written, mut read) = (0, 0);
    for _ in 0..10 {
        written += path.client.write(download, &bulk).unwrap();
        path.run_until(path.now + Duration::from_millis(5));
        read += path.read(download);
    }
    assert!(read > 0 && read < written, "the download is going");
    let repaired_before = path.server.stats().symbols_repaired;
    phase.set(Phase::LoseFrom(path.client_datagrams));
    let step = Duration::from_micros(500);
    let delivered = path.deliver(
        message_stream,
        b"reply",
        step,
        Duration::from_secs(1),
        Some(download),
    );
    let delay = delivered.expect("the message arrives");
    let rtt = path.client.stats().rtt;
    let repaired = path.server.stats().symbols_repaired - repaired_before;
    println!("message delivered after {delay:?}, rtt {rtt:?}, {repaired} symbols repaired");
    assert!(repaired > 0, "a lost symbol was repaired");
    // The window is full when the message is written: it leaves with the
    // next flight, up to a round trip later, and its guard a few packets
    // after it. A repair in answer to feedback would arrive a round trip
    // after the flight.
    assert!(delay < SHORT + rtt, "{delay:?} with rtt {rtt:?}");
}

/// Which client datagrams the wire loses.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// One in ten.
    Measuring,
    /// None.
    Clean,
    /// Three from this one on, and none after.
    LoseFrom(u64),
}
