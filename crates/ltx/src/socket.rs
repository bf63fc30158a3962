//! The UDP socket: tokio readiness with quinn-udp's batched system calls
//! (GSO on send, GRO on receive, ECN codepoints both ways).

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;

use ltx_proto::EcnCodepoint;

use crate::icmp::IcmpError;
use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState};
use tokio::io::Interest;

/// Largest UDP payload a segment may have; datagrams above it are not ltx's.
const MAX_SEGMENT: usize = 1500;
/// Receive buffers filled per system call.
const RECV_BATCH: usize = 16;
/// Bytes asked of the kernel for each socket buffer: at 1 Gbit/s a
/// millisecond of scheduling delay is 125 kB.
const SOCKET_BUFFER: usize = 4 << 20;
/// Most bytes one GSO send may carry: the kernel refuses a batch whose
/// total exceeds a UDP datagram's 64 KiB (with headers), and quinn-udp
/// drops a refused batch silently.
const MAX_GSO_BYTES: usize = 65_000;

/// A UDP socket driven by tokio, sending and receiving through quinn-udp.
/// Sending takes `&self`, so that several drivers may share it; reading
/// fills [`RecvBuffers`] that one reader owns.
#[derive(Debug)]
pub(crate) struct UdpIo {
    io: tokio::net::UdpSocket,
    state: UdpSocketState,
}

/// What one reader of a [`UdpIo`] fills: a batch of receive buffers.
#[derive(Debug)]
pub(crate) struct RecvBuffers {
    bufs: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
}

/// One datagram read from the socket.
pub(crate) struct Received<'a> {
    /// Who sent it.
    pub(crate) from: SocketAddr,
    /// Its ECN codepoint.
    pub(crate) ecn: EcnCodepoint,
    /// Its payload.
    pub(crate) bytes: &'a [u8],
}

impl UdpIo {
    /// Binds a socket to `addr`.
    pub(crate) fn bind(addr: SocketAddr) -> io::Result<UdpIo> {
        let socket = std::net::UdpSocket::bind(addr)?;
        let state = UdpSocketState::new(UdpSockRef::from(&socket))?;
        crate::icmp::enable(&socket);
        // Larger buffers are a hint: the kernel caps them, which only costs
        // burst tolerance, so a refusal is not an error.
        let _ = state.set_send_buffer_size(UdpSockRef::from(&socket), SOCKET_BUFFER);
        let _ = state.set_recv_buffer_size(UdpSockRef::from(&socket), SOCKET_BUFFER);
        socket.set_nonblocking(true)?;
        let io = tokio::net::UdpSocket::from_std(socket)?;
        Ok(UdpIo { io, state })
    }

    /// Buffers for one reader of this socket: a batch of GRO-sized
    /// datagrams.
    pub(crate) fn recv_buffers(&self) -> RecvBuffers {
        let segments = self.state.gro_segments().max(1);
        RecvBuffers {
            bufs: (0..RECV_BATCH)
                .map(|_| vec![0; MAX_SEGMENT * segments])
                .collect(),
            meta: vec![RecvMeta::default(); RECV_BATCH],
        }
    }

    /// The address the socket is bound to.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }

    /// Segments one GSO send may carry (1 without GSO).
    pub(crate) fn max_gso_segments(&self) -> usize {
        self.state.max_gso_segments().max(1)
    }

    /// Waits until the socket may have datagrams to read, or an ICMP error
    /// in its error queue (see [`crate::icmp`]).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        self.io
            .ready(Interest::READABLE | Interest::ERROR)
            .await
            .map(|_| ())
    }

    /// Reads what the socket holds now, calling `each` for every datagram
    /// (GRO batches are split); returns the number read, 0 when there was
    /// nothing.
    pub(crate) fn try_recv(
        &self,
        buffers: &mut RecvBuffers,
        mut each: impl FnMut(Received<'_>),
    ) -> io::Result<usize> {
        let UdpIo { io, state } = self;
        let RecvBuffers {
            bufs: recv_bufs,
            meta: recv_meta,
        } = buffers;
        let mut slices: Vec<IoSliceMut<'_>> =
            recv_bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let filled = match io.try_io(Interest::READABLE, || {
            state.recv(UdpSockRef::from(&*io), &mut slices, recv_meta)
        }) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut count = 0;
        for (meta, buf) in recv_meta.iter().zip(slices.iter()).take(filled) {
            let ecn = meta.ecn.map_or(EcnCodepoint::NotEct, from_udp_ecn);
            let stride = meta.stride.max(1);
            if meta.len == 0 {
                // `chunks` yields nothing for an empty datagram, which is
                // still one datagram to account for.
                count += 1;
                each(Received {
                    from: meta.addr,
                    ecn,
                    bytes: &[],
                });
                continue;
            }
            for datagram in buf[..meta.len].chunks(stride) {
                count += 1;
                each(Received {
                    from: meta.addr,
                    ecn,
                    bytes: datagram,
                });
            }
        }
        Ok(count)
    }

    /// The ICMP errors queued for datagrams this socket sent (see
    /// [`crate::icmp`]); empties the queue, so that its readiness ends.
    pub(crate) fn take_icmp_errors(&self) -> Vec<IcmpError> {
        let mut errors = Vec::new();
        // Through `try_io`, whose WouldBlock clears the error readiness the
        // queue raised: otherwise `readable` would return at once forever.
        let _ = self.io.try_io(Interest::ERROR, || {
            errors.extend(crate::icmp::take(&self.io));
            Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock))
        });
        errors
    }

    /// Sends one batch: `contents` holds `contents.len() / segment` datagrams
    /// of `segment` bytes (the last may be shorter) for one destination.
    /// Waits for room in the socket's buffer; other errors drop the batch
    /// (datagrams are unreliable; the protocol repairs what is lost).
    pub(crate) async fn send(
        &self,
        destination: SocketAddr,
        ecn: EcnCodepoint,
        contents: &[u8],
        segment: usize,
    ) -> io::Result<()> {
        let transmit = Transmit {
            destination,
            ecn: to_udp_ecn(ecn),
            contents,
            segment_size: (contents.len() > segment).then_some(segment),
            src_ip: None,
        };
        loop {
            match self.io.try_io(Interest::WRITABLE, || {
                self.state.send(UdpSockRef::from(&self.io), &transmit)
            }) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.writable().await?,
                Err(e) => return Err(e),
            }
        }
    }
}

fn from_udp_ecn(ecn: quinn_udp::EcnCodepoint) -> EcnCodepoint {
    match ecn {
        quinn_udp::EcnCodepoint::Ect0 => EcnCodepoint::Ect0,
        quinn_udp::EcnCodepoint::Ect1 => EcnCodepoint::Ect1,
        quinn_udp::EcnCodepoint::Ce => EcnCodepoint::Ce,
    }
}

fn to_udp_ecn(ecn: EcnCodepoint) -> Option<quinn_udp::EcnCodepoint> {
    match ecn {
        EcnCodepoint::NotEct => None,
        EcnCodepoint::Ect0 => Some(quinn_udp::EcnCodepoint::Ect0),
        EcnCodepoint::Ect1 => Some(quinn_udp::EcnCodepoint::Ect1),
        EcnCodepoint::Ce => Some(quinn_udp::EcnCodepoint::Ce),
    }
}

/// Datagrams waiting to be sent, grouped into GSO batches: consecutive
/// datagrams to one destination with one ECN codepoint and one size (the
/// last of a batch may be shorter) share a system call.
#[derive(Debug, Default)]
pub(crate) struct SendQueue {
    batches: Vec<Batch>,
    /// Batch buffers given back after their send ([`SendQueue::recycle`]).
    spare: Vec<Vec<u8>>,
}

/// Batch buffers [`SendQueue`] keeps for reuse at most (each may hold
/// 64 KB): a driver at gigabits sends a dozen batches per wake-up, and
/// every one freed and allocated again costs fresh pages.
const SPARE_BATCHES: usize = 16;

/// One GSO batch.
#[derive(Debug)]
pub(crate) struct Batch {
    /// Where it goes.
    pub(crate) destination: SocketAddr,
    /// Its ECN codepoint.
    pub(crate) ecn: EcnCodepoint,
    /// The size of each datagram but the last.
    pub(crate) segment: usize,
    /// The datagrams, back to back.
    pub(crate) contents: Vec<u8>,
    count: usize,
    closed: bool,
}

impl SendQueue {
    /// Queues a datagram, joining it to the last batch when it can.
    pub(crate) fn push(
        &mut self,
        destination: SocketAddr,
        ecn: EcnCodepoint,
        datagram: &[u8],
        max_segments: usize,
    ) {
        if let Some(last) = self.batches.last_mut() {
            let joins = !last.closed
                && last.destination == destination
                && last.ecn == ecn
                && last.count < max_segments
                && last.contents.len() + datagram.len() <= MAX_GSO_BYTES
                && datagram.len() <= last.segment;
            if joins {
                last.contents.extend_from_slice(datagram);
                last.count += 1;
                // A shorter datagram ends the batch: only the last may be.
                last.closed = datagram.len() < last.segment;
                return;
            }
        }
        // Sized for the whole batch at once: grown datagram by datagram, a
        // 64 KB batch would be copied over again at every doubling.
        let mut contents = self.spare.pop().unwrap_or_default();
        contents.clear();
        contents.reserve(
            datagram
                .len()
                .saturating_mul(max_segments)
                .clamp(datagram.len(), MAX_GSO_BYTES.max(datagram.len())),
        );
        contents.extend_from_slice(datagram);
        self.batches.push(Batch {
            destination,
            ecn,
            segment: datagram.len(),
            contents,
            count: 1,
            closed: false,
        });
    }

    /// Gives back a sent batch's buffer for a later batch.
    pub(crate) fn recycle(&mut self, contents: Vec<u8>) {
        if self.spare.len() < SPARE_BATCHES {
            self.spare.push(contents);
        }
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Takes every queued batch.
    pub(crate) fn take(&mut self) -> Vec<Batch> {
        std::mem::take(&mut self.batches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn equal_datagrams_to_one_destination_share_a_batch_up_to_the_limit() {
        let mut queue = SendQueue::default();
        for _ in 0..5 {
            queue.push(addr(1), EcnCodepoint::Ect0, &[7; 100], 3);
        }
        let batches = queue.take();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].contents.len(), 300);
        assert_eq!(batches[1].contents.len(), 200);
    }

    #[test]
    fn a_shorter_datagram_ends_a_batch_and_a_longer_one_starts_another() {
        let mut queue = SendQueue::default();
        queue.push(addr(1), EcnCodepoint::Ect0, &[1; 100], 64);
        queue.push(addr(1), EcnCodepoint::Ect0, &[2; 40], 64);
        queue.push(addr(1), EcnCodepoint::Ect0, &[3; 40], 64);
        queue.push(addr(1), EcnCodepoint::Ect0, &[4; 120], 64);
        let batches = queue.take();
        let shapes: Vec<(usize, usize)> = batches
            .iter()
            .map(|b| (b.segment, b.contents.len()))
            .collect();
        assert_eq!(shapes, vec![(100, 140), (40, 40), (120, 120)]);
    }

    #[test]
    fn a_batch_is_built_in_a_recycled_buffer_with_room_for_all_of_it() {
        let mut queue = SendQueue::default();
        queue.push(addr(1), EcnCodepoint::Ect0, &[1; 1000], 10);
        let first = queue.take().remove(0);
        assert!(first.contents.capacity() >= 10_000, "sized for the batch");
        let buffer = first.contents.as_ptr();
        queue.recycle(first.contents);
        for _ in 0..10 {
            queue.push(addr(2), EcnCodepoint::Ect0, &[2; 1000], 10);
        }
        let second = queue.take().remove(0);
        assert_eq!(
            second.contents.as_ptr(),
            buffer,
            "the same buffer, never grown"
        );
        assert_eq!(second.contents, vec![2; 10_000]);
    }

    #[test]
    fn a_batch_stays_within_what_one_system_call_may_carry() {
        let mut queue = SendQueue::default();
        for _ in 0..64 {
            queue.push(addr(1), EcnCodepoint::Ect0, &[0; 1400], 64);
        }
        let batches = queue.take();
        assert!(batches.len() > 1);
        assert!(batches.iter().all(|b| b.contents.len() <= MAX_GSO_BYTES));
        let total: usize = batches.iter().map(|b| b.contents.len()).sum();
        assert_eq!(total, 64 * 1400);
    }

    #[test]
    fn destinations_and_codepoints_are_never_mixed() {
        let mut queue = SendQueue::default();
        queue.push(addr(1), EcnCodepoint::Ect0, &[1; 10], 64);
        queue.push(addr(2), EcnCodepoint::Ect0, &[1; 10], 64);
        queue.push(addr(2), EcnCodepoint::NotEct, &[1; 10], 64);
        assert_eq!(queue.take().len(), 3);
    }
}
