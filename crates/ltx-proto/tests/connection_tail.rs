//! Tail protection of application-limited traffic: a lone message (an
//! ssh keystroke) whose only packet is lost is repaired by the sender's
//! tail repair, not after a probe time-out, and the interactive traffic
//! around it neither grows the window nor raises the loss estimate past
//! what the path dealt.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ltx_proto::{Connection, EcnCodepoint, ReadOutcome, StreamId, TransportConfig};

const ONE_WAY: Duration = Duration::from_millis(300);

/// Two connections joined by a wire with a fixed one-way delay, in
/// virtual time; `drop` decides, for each client datagram in order,
/// whether the wire loses it.
struct Path {
    now: Instant,
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
    fn new(drop: impl FnMut(u64, &[u8]) -> bool + 'static) -> Path {
        let now = Instant::now();
        Path {
            now,
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
                    .insert((self.now + ONE_WAY, self.sequence), (true, t.contents));
            }
        }
        while let Some(t) = self.server.poll_transmit(self.now) {
            self.sequence += 1;
            self.wire
                .insert((self.now + ONE_WAY, self.sequence), (false, t.contents));
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
    let mut path = Path::new(move |n, _| {
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
    let sent = path.now;
    path.client.write(id, b"k").unwrap();
    let mut delivered = None;
    while path.now < sent + Duration::from_secs(5) {
        path.run_until(path.now + Duration::from_millis(5));
        if path.read(id) > 0 {
            delivered = Some(path.now - sent);
            break;
        }
    }
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
    assert!(delay < rtt + ONE_WAY, "{delay:?} with rtt {rtt:?}");
    // Interactive traffic and its tail repairs neither grow the window
    // nor raise the loss estimate above the one in ten the path dealt.
    assert!(
        stats.cwnd <= initial_window,
        "{} > {initial_window}",
        stats.cwnd
    );
    assert!(stats.loss_rate <= 0.15, "loss estimate {}", stats.loss_rate);
}
