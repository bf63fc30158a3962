//! Toy endpoints that exercise the simulator without any protocol: a paced
//! sender, a receiver that logs arrivals and echoes acks, two nodes that
//! bounce a datagram, and a bare timer.

// Each test file uses a different subset of these.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ltx_sim::{Datagram, Node};

/// Every toy, so that one network can hold senders and receivers.
pub(crate) enum Toy {
    Sender(Sender),
    Receiver(Receiver),
    Bouncer(Bouncer),
    Timer(Timer),
}

impl Toy {
    pub(crate) fn sender(&self) -> &Sender {
        match self {
            Toy::Sender(s) => s,
            _ => panic!("not a sender"),
        }
    }

    pub(crate) fn receiver(&self) -> &Receiver {
        match self {
            Toy::Receiver(r) => r,
            _ => panic!("not a receiver"),
        }
    }

    pub(crate) fn bouncer(&self) -> &Bouncer {
        match self {
            Toy::Bouncer(b) => b,
            _ => panic!("not a bouncer"),
        }
    }

    pub(crate) fn timer(&self) -> &Timer {
        match self {
            Toy::Timer(t) => t,
            _ => panic!("not a timer"),
        }
    }

    pub(crate) fn timer_mut(&mut self) -> &mut Timer {
        match self {
            Toy::Timer(t) => t,
            _ => panic!("not a timer"),
        }
    }

    fn node(&mut self) -> &mut dyn Node {
        match self {
            Toy::Sender(s) => s,
            Toy::Receiver(r) => r,
            Toy::Bouncer(b) => b,
            Toy::Timer(t) => t,
        }
    }
}

impl Node for Toy {
    fn handle_datagram(&mut self, now: Instant, datagram: Datagram) {
        self.node().handle_datagram(now, datagram);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        self.node().poll_transmit(now)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.node().poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.node().handle_timeout(now);
    }
}

/// The sequence number in a toy datagram's first eight bytes.
pub(crate) fn seq_of(datagram: &Datagram) -> u64 {
    u64::from_be_bytes(datagram.payload[..8].try_into().expect("8 bytes"))
}

fn numbered(seq: u64, size: usize) -> Datagram {
    let mut payload = seq.to_be_bytes().to_vec();
    payload.resize(size.max(8), 0);
    Datagram {
        payload,
        ..Datagram::default()
    }
}

/// Sends `count` numbered datagrams of `size` bytes, datagram `k` at
/// `start + k · interval` (all at once for a zero interval).
pub(crate) struct Sender {
    start: Instant,
    interval: Duration,
    count: u64,
    size: usize,
    /// When each datagram was sent, by sequence number.
    pub(crate) sent: Vec<Instant>,
    /// Acks received: (sequence number, arrival time).
    pub(crate) acks: Vec<(u64, Instant)>,
}

impl Sender {
    pub(crate) fn toy(start: Instant, count: u64, size: usize, interval: Duration) -> Toy {
        Toy::Sender(Sender {
            start,
            interval,
            count,
            size,
            sent: Vec::new(),
            acks: Vec::new(),
        })
    }

    fn next_send(&self) -> Option<Instant> {
        let next = self.sent.len() as u64;
        (next < self.count).then(|| self.start + self.interval * next as u32)
    }
}

impl Node for Sender {
    fn handle_datagram(&mut self, now: Instant, datagram: Datagram) {
        self.acks.push((seq_of(&datagram), now));
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        let due = self.next_send()? <= now;
        due.then(|| {
            let seq = self.sent.len() as u64;
            self.sent.push(now);
            numbered(seq, self.size)
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.next_send()
    }

    fn handle_timeout(&mut self, _now: Instant) {
        // Sending is poll_transmit's job; the timeout only wakes it.
    }
}

/// Logs every arrival and, if `echo`, answers each with an 8-byte ack
/// carrying its sequence number.
pub(crate) struct Receiver {
    echo: bool,
    pending: VecDeque<u64>,
    /// Arrivals: (sequence number, time, bytes).
    pub(crate) arrivals: Vec<(u64, Instant, usize)>,
}

impl Receiver {
    pub(crate) fn toy(echo: bool) -> Toy {
        Toy::Receiver(Receiver {
            echo,
            pending: VecDeque::new(),
            arrivals: Vec::new(),
        })
    }

    /// Bytes that arrived in `from..to`.
    pub(crate) fn bytes_between(&self, from: Instant, to: Instant) -> usize {
        self.arrivals
            .iter()
            .filter(|&&(_, at, _)| from <= at && at < to)
            .map(|&(_, _, len)| len)
            .sum()
    }
}

impl Node for Receiver {
    fn handle_datagram(&mut self, now: Instant, datagram: Datagram) {
        let seq = seq_of(&datagram);
        self.arrivals.push((seq, now, datagram.payload.len()));
        if self.echo {
            self.pending.push_back(seq);
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Datagram> {
        self.pending.pop_front().map(|seq| numbered(seq, 8))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

/// Sends a datagram back for each one it gets, until it has got `limit`;
/// a serving bouncer also sends the first.
pub(crate) struct Bouncer {
    limit: u64,
    pending: bool,
    /// Datagrams received.
    pub(crate) got: u64,
    /// When the last one arrived.
    pub(crate) last: Option<Instant>,
}

impl Bouncer {
    pub(crate) fn toy(limit: u64, serve: bool) -> Toy {
        Toy::Bouncer(Bouncer {
            limit,
            pending: serve,
            got: 0,
            last: None,
        })
    }
}

impl Node for Bouncer {
    fn handle_datagram(&mut self, now: Instant, _datagram: Datagram) {
        self.got += 1;
        self.last = Some(now);
        self.pending = self.got < self.limit;
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Datagram> {
        std::mem::take(&mut self.pending).then(|| numbered(self.got, 8))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

/// A node that only has a timer, and logs when it fires.
#[derive(Default)]
pub(crate) struct Timer {
    at: Option<Instant>,
    /// When handle_timeout was called.
    pub(crate) fired: Vec<Instant>,
}

impl Timer {
    pub(crate) fn toy(at: Option<Instant>) -> Toy {
        Toy::Timer(Timer {
            at,
            fired: Vec::new(),
        })
    }

    pub(crate) fn set(&mut self, at: Instant) {
        self.at = Some(at);
    }
}

impl Node for Timer {
    fn handle_datagram(&mut self, _now: Instant, _datagram: Datagram) {}

    fn poll_transmit(&mut self, _now: Instant) -> Option<Datagram> {
        None
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.at
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.at = None;
        self.fired.push(now);
    }
}
