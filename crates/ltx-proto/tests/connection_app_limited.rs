//! Application-limited packets: a packet that leaves with no stream data
//! waiting behind it and room in the window says nothing of the path's
//! capacity, and the connection tells the controller so on its
//! acknowledgement; ltx's controller then does not grow its window.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ltx_proto::congestion::{Controller, ControllerFactory, Tolerant, TolerantConfig};
use ltx_proto::rtt::RttEstimator;
use ltx_proto::{Connection, TransportConfig};

/// Acknowledgements a [`Recording`] controller saw.
#[derive(Debug, Default, Clone, Copy)]
struct Acks {
    app_limited: u64,
    window_limited: u64,
}

/// A controller with a fixed window that counts acknowledgements by kind.
#[derive(Debug, Clone)]
struct Recording {
    window: u64,
    acks: Arc<Mutex<Acks>>,
}

impl Controller for Recording {
    fn on_ack(&mut self, _: Instant, _: Instant, _: u64, app_limited: bool, _: &RttEstimator) {
        let mut acks = self.acks.lock().expect("not poisoned");
        if app_limited {
            acks.app_limited += 1;
        } else {
            acks.window_limited += 1;
        }
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn initial_window(&self) -> u64 {
        self.window
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "recording"
    }
}

impl ControllerFactory for Recording {
    fn build(&self, _: Instant, _: u16) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "recording"
    }
}

/// Writes `bytes` on one client stream over an instantaneous, lossless
/// wire, with the client's window fixed at `window_datagrams`, until the
/// server has read them all; what the client's controller saw.
fn transfer(bytes: usize, window_datagrams: u64) -> Acks {
    let acks = Arc::new(Mutex::new(Acks::default()));
    let mut config = TransportConfig::default();
    config.set_congestion_controller(Arc::new(Recording {
        window: window_datagrams * u64::from(config.max_datagram()),
        acks: Arc::clone(&acks),
    }));
    let mut now = Instant::now();
    let mut client = Connection::client(config, now, 1).expect("valid config");
    let mut server = Connection::server(TransportConfig::default(), now, 2).expect("valid");
    let payload = vec![0x5a; bytes];
    let (mut written, mut read, mut stream) = (0, 0, None);
    let mut buf = vec![0u8; 65_536];
    for _ in 0..100_000 {
        if client.is_established() && stream.is_none() {
            stream = Some(client.open_stream().expect("a stream"));
        }
        let mut moved = false;
        if let Some(id) = stream.filter(|_| written < bytes) {
            let n = client.write(id, &payload[written..]).expect("writable");
            written += n;
            moved |= n > 0;
        }
        while let Some(t) = client.poll_transmit(now) {
            server.handle_datagram(now, &t.contents, t.ecn);
            moved = true;
        }
        while let Some(t) = server.poll_transmit(now) {
            client.handle_datagram(now, &t.contents, t.ecn);
            moved = true;
        }
        while let Some(id) = server.accept_stream() {
            let _ = id;
        }
        if let Some(id) = stream {
            while let Ok(ltx_proto::ReadOutcome::Data(n)) = server.read(id, &mut buf) {
                read += n;
            }
        }
        if read == bytes {
            return *acks.lock().expect("not poisoned");
        }
        if moved {
            continue;
        }
        let next = [client.poll_timeout(), server.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or_else(|| {
                panic!(
                    "no timer: client closed {}, server closed {}, {:?}, {:?}",
                    client.is_closed(),
                    server.is_closed(),
                    std::iter::from_fn(|| client.poll_event()).collect::<Vec<_>>(),
                    std::iter::from_fn(|| server.poll_event()).collect::<Vec<_>>()
                )
            });
        now = now.max(next);
        client.handle_timeout(now);
        server.handle_timeout(now);
    }
    panic!("{read} of {bytes} bytes read");
}

#[test]
fn a_short_message_in_a_wide_window_is_application_limited() {
    // One symbol's worth, and a window of 64 datagrams: nothing waits
    // behind the packet, and the window had room for more.
    let acks = transfer(1_000, 64);
    assert!(acks.app_limited >= 1, "{acks:?}");
    assert_eq!(acks.window_limited, 0, "{acks:?}");
}

#[test]
fn a_transfer_larger_than_the_window_is_not() {
    // 200 kB through a window of 8 datagrams: data waits behind every
    // packet until the last flight.
    let acks = transfer(200_000, 8);
    assert!(acks.window_limited >= 100, "{acks:?}");
    assert!(acks.app_limited <= 8, "{acks:?}");
}

/// Ltx's controller in congestion avoidance with a window of 100
/// datagrams, its RTT at its minimum: its window before and after 50 round
/// trips of acknowledgements, each a window's worth, marked as
/// `app_limited`.
fn window_over_rounds(app_limited: bool) -> (u64, u64) {
    let mut config = TolerantConfig::default();
    config.initial_window_packets(100);
    let start = Instant::now();
    let mut cc = Tolerant::new(Arc::new(config), start, 1200);
    let mut rtt = RttEstimator::new(Duration::from_millis(100));
    rtt.update(Duration::ZERO, Duration::from_millis(100));
    // A CE mark ends start-up at once, without a rate measured.
    cc.on_ecn_ce(start, start, 1, &rtt);
    let before = cc.window();
    let mut now = start;
    for _ in 0..50 {
        now += Duration::from_millis(100);
        for _ in 0..before / 1200 {
            cc.on_ack(
                now,
                now - Duration::from_millis(100),
                1200,
                app_limited,
                &rtt,
            );
        }
    }
    (before, cc.window())
}

#[test]
fn ltxs_window_grows_on_a_full_window_and_not_on_an_application_limited_one() {
    // Additive increase: about a datagram per window acknowledged.
    let (before, grown) = window_over_rounds(false);
    assert!(grown >= before + 40 * 1200, "from {before} to {grown}");
    // Acknowledgements of packets the application did not fill the window
    // with say nothing of the path: the window stays where it was.
    let (before, held) = window_over_rounds(true);
    assert_eq!(held, before);
}
