//! The forwarder: one thread per direction that reads IP packets from one
//! namespace's TUN device, offers them to that direction's link, and writes
//! what the link delivers into the other namespace's TUN device, each at
//! the time the link scheduled.
//!
//! Like the shim's relay in `ltx`, a thread waits in `ppoll(2)` with a
//! timeout in nanoseconds until its next release or its next packet, with
//! its timer slack and scheduler slice lowered (`ltx-realtime`), and never
//! spins. Two threads rather than one, so that each direction's releases
//! wait only for its own work.
//!
//! The threads also ask for `SCHED_FIFO` at the lowest real-time priority
//! (the emulator runs as root, so it is granted): the emulated network
//! must not wait behind the programs it carries, nor behind whatever else
//! the machine runs. Writing a packet into the egress device runs the
//! receiving stack's work in the forwarder's thread, so on a busy machine
//! this decides the path's throughput (measured in `docs/results.md`, "The
//! emulator's forwarder"). Since the threads never spin, they take from
//! other work only what forwarding costs.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ltx_link::{DelayHistogram, Link};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use crate::ip_packet::IpPacket;

/// The largest packet a TUN device hands out: its MTU is 1500, but a
/// larger buffer costs nothing and never truncates, whatever the MTU.
const READ_BUFFER: usize = 65_536;
/// Packets read per wake-up before the thread releases what is due, so
/// that a flood in cannot hold back the packets going out.
const READS_PER_WAKE: usize = 64;

/// What the forwarder did in one direction, besides what the link counts.
#[derive(Debug, Clone, Default)]
pub struct ForwarderStats {
    /// Packets read from the ingress TUN device and offered to the link.
    pub read: u64,
    /// Packets the link delivered and the egress TUN device took.
    pub written: u64,
    /// Packets the link delivered that the egress TUN device refused.
    pub write_errors: u64,
    /// How late each delivered packet was written, after the time its link
    /// scheduled.
    pub lateness: DelayHistogram,
    /// CPU time the direction's thread used, user and system (the stack's
    /// work on the packets it writes included); filled in when the thread
    /// ends, so zero while the emulator runs.
    pub cpu_time: Duration,
}

/// A direction's link and its counters, shared with the emulator's handle.
pub(crate) struct DirectionState {
    pub(crate) link: Link<IpPacket>,
    pub(crate) forwarder: ForwarderStats,
}

/// One direction's thread.
pub(crate) struct Forwarder {
    pub(crate) ingress: Arc<OwnedFd>,
    pub(crate) egress: Arc<OwnedFd>,
    /// Readable (at end of file) once the emulator stops.
    pub(crate) stop: UnixStream,
    pub(crate) state: Arc<Mutex<DirectionState>>,
}

impl Forwarder {
    /// Forwards until the stop stream becomes readable or the ingress
    /// device fails.
    pub(crate) fn run(self) -> std::io::Result<()> {
        let result = self.forward();
        let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        lock(&self.state).forwarder.cpu_time = Duration::new(cpu.tv_sec as u64, cpu.tv_nsec as u32);
        result
    }

    fn forward(&self) -> std::io::Result<()> {
        ltx_realtime::prefer_prompt_wakeups();
        // The emulated network must not wait behind the programs it
        // carries, nor behind anything else the machine runs.
        if let Err(error) = ltx_realtime::prefer_realtime_scheduling() {
            tracing::debug!(%error, "the forwarder runs under the default policy");
        }
        let mut buffer = vec![0u8; READ_BUFFER];
        loop {
            let timeout = match self.release_due() {
                Some(next) => {
                    let wait = next.saturating_duration_since(Instant::now());
                    if wait.is_zero() {
                        continue;
                    }
                    Some(wait)
                }
                None => None,
            };
            let (readable, stopped) = match self.wait(timeout) {
                Ok(ready) => ready,
                Err(Errno::INTR) => continue,
                Err(error) => return Err(error.into()),
            };
            if stopped {
                return Ok(());
            }
            if readable {
                self.receive(&mut buffer)?;
            }
        }
    }

    /// Waits until a packet comes in, the emulator stops or `timeout` has
    /// passed: whether the ingress device and the stop stream are ready.
    fn wait(&self, timeout: Option<Duration>) -> rustix::io::Result<(bool, bool)> {
        let mut fds = [
            PollFd::new(&self.ingress, PollFlags::IN),
            PollFd::new(&self.stop, PollFlags::IN),
        ];
        let timeout = timeout.and_then(|t| Timespec::try_from(t).ok());
        rustix::event::poll(&mut fds, timeout.as_ref())?;
        Ok((!fds[0].revents().is_empty(), !fds[1].revents().is_empty()))
    }

    /// Writes every packet the link has delivered by now; returns when the
    /// next one is due.
    fn release_due(&self) -> Option<Instant> {
        let mut state = lock(&self.state);
        self.release(&mut state, Instant::now());
        state.link.next_event()
    }

    /// Writes the packets the link has delivered by `now`.
    fn release(&self, state: &mut DirectionState, now: Instant) {
        while let Some(due) = state.link.next_event().filter(|&at| at <= now) {
            let Some(packet) = state.link.dequeue_ready(now) else {
                break;
            };
            // A packet the device refuses is lost, not retried: the link
            // has already decided when it arrives.
            match rustix::io::write(self.egress.as_fd(), packet.as_bytes()) {
                Ok(_) => state.forwarder.written += 1,
                Err(error) => {
                    state.forwarder.write_errors += 1;
                    tracing::debug!(%error, "the egress TUN device refused a packet");
                }
            }
            let lateness = Instant::now().saturating_duration_since(due);
            state.forwarder.lateness.record(lateness);
        }
    }

    /// Reads what the ingress device holds, a bounded number of packets,
    /// and offers each to the link as it arrives; a packet due at once (a
    /// link without delay or rate) leaves before the next is read.
    fn receive(&self, buffer: &mut [u8]) -> std::io::Result<()> {
        for _ in 0..READS_PER_WAKE {
            let len = match rustix::io::read(self.ingress.as_fd(), &mut *buffer) {
                Ok(len) => len,
                Err(Errno::AGAIN) => return Ok(()),
                Err(Errno::INTR) => continue,
                Err(error) => return Err(error.into()),
            };
            let packet = IpPacket::new(buffer[..len].to_vec());
            let now = Instant::now();
            let mut state = lock(&self.state);
            state.forwarder.read += 1;
            state.link.enqueue(now, packet);
            if state.link.next_event().is_some_and(|at| at <= now) {
                self.release(&mut state, now);
            }
        }
        Ok(())
    }
}

/// The direction's state, even if a thread panicked holding it: its
/// counters are still the best there are.
pub(crate) fn lock(state: &Mutex<DirectionState>) -> MutexGuard<'_, DirectionState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
