//! The sender's record of packets in flight, and loss detection by packet
//! number and time (RFC 9002 style). Packet numbers are never reused, so an
//! acknowledgement names exactly one transmission.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

/// What a sent packet carried, as far as recovery cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carried {
    Source,
    /// A repair over the most recent symbols, sent ahead of need.
    Repair,
    /// A repair over everything the peer may lack (reactive, tail, probe).
    WideRepair,
    Other,
}

/// A packet that may still be acknowledged.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentPacket {
    pub(crate) time: Instant,
    pub(crate) size: u64,
    /// Counts towards the congestion window (ack-eliciting).
    pub(crate) in_flight: bool,
    pub(crate) carried: Carried,
    /// Whether the sender had no data waiting and room in its window when
    /// the packet left: its acknowledgement says nothing of the path's
    /// capacity, so the controller does not grow its window on it.
    pub(crate) app_limited: bool,
    /// Whether it left after [`BLIND_AFTER_PTOS`] probe time-outs in a row
    /// with no acknowledgement: into a path that is down, most likely. Its
    /// fate says nothing of the loss rate the path deals while it is up,
    /// so the loss estimator leaves it out either way.
    pub(crate) blind: bool,
}

/// Probe time-outs in a row without an acknowledgement after which the
/// packets sent are [`blind`](SentPacket::blind).
pub(crate) const BLIND_AFTER_PTOS: u32 = 2;

/// Packets declared lost whose later acknowledgement would reveal
/// reordering; bounded.
const LOST_MEMORY: usize = 4096;
/// A packet is lost once this many later packets are acknowledged.
const PACKET_THRESHOLD: u64 = 3;

/// Sent packets, by number.
#[derive(Debug, Default)]
pub(crate) struct SentPackets {
    /// The packets from number `first` on, a slot per number: numbers are
    /// handed out in order and mostly acknowledged in order, so a ring
    /// indexed by number does what a map would at a fraction of its cost
    /// per packet. Slots of numbers not recorded (acknowledgement-only
    /// packets) or already resolved are empty; the ring never starts with
    /// one.
    packets: VecDeque<Option<SentPacket>>,
    /// The number of the ring's first slot.
    first: u64,
    /// Numbers declared lost, the newest [`LOST_MEMORY`] of them.
    recently_lost: BTreeSet<u64>,
    pub(crate) bytes_in_flight: u64,
    /// Repairs in flight that cover the peer's oldest gaps: proactive ones
    /// over recent symbols do not count, they answer recent losses.
    pub(crate) repairs_in_flight: u64,
    /// Source symbols in flight.
    pub(crate) sources_in_flight: u64,
    /// Proactive repairs in flight.
    pub(crate) proactive_in_flight: u64,
    pub(crate) ack_eliciting_in_flight: u64,
}

/// What an acknowledgement did.
#[derive(Debug, Default)]
pub(crate) struct AckOutcome {
    /// Newly acknowledged packets, with their numbers, oldest first.
    pub(crate) acked: Vec<(u64, SentPacket)>,
    /// Packets declared lost before that were acknowledged after all.
    pub(crate) spurious: Vec<u64>,
}

impl SentPackets {
    pub(crate) fn on_sent(&mut self, number: u64, packet: SentPacket) {
        if packet.in_flight {
            self.bytes_in_flight += packet.size;
            self.ack_eliciting_in_flight += 1;
            match packet.carried {
                Carried::WideRepair => self.repairs_in_flight += 1,
                Carried::Repair => self.proactive_in_flight += 1,
                Carried::Source => self.sources_in_flight += 1,
                Carried::Other => {}
            }
        }
        if self.packets.is_empty() {
            self.first = number;
        }
        if number < self.first {
            // Not done by the connection, whose numbers only grow; kept
            // correct all the same.
            for _ in number..self.first {
                self.packets.push_front(None);
            }
            self.first = number;
        }
        let index = self.index(number);
        if index >= self.packets.len() {
            self.packets.resize(index + 1, None);
        }
        if let Some(old) = self.packets[index].replace(packet) {
            self.forget(&old);
        }
    }

    /// Slot of `number`, which is not below `first`.
    fn index(&self, number: u64) -> usize {
        usize::try_from(number - self.first).unwrap_or(usize::MAX)
    }

    /// Takes packet `number` out of the record, if it is there.
    fn remove(&mut self, number: u64) -> Option<SentPacket> {
        let index = number.checked_sub(self.first)?;
        let packet = self.packets.get_mut(usize::try_from(index).ok()?)?.take()?;
        while self.packets.front().is_some_and(Option::is_none) {
            self.packets.pop_front();
            self.first += 1;
        }
        Some(packet)
    }

    /// The recorded packets with numbers below `end`, oldest first.
    fn before(&self, end: u64) -> impl Iterator<Item = (u64, &SentPacket)> {
        let take = usize::try_from(end.saturating_sub(self.first)).unwrap_or(usize::MAX);
        let first = self.first;
        self.packets
            .iter()
            .take(take)
            .enumerate()
            .filter_map(move |(i, p)| p.as_ref().map(|p| (first + i as u64, p)))
    }

    fn forget(&mut self, packet: &SentPacket) {
        if packet.in_flight {
            self.bytes_in_flight -= packet.size;
            self.ack_eliciting_in_flight -= 1;
            match packet.carried {
                Carried::WideRepair => self.repairs_in_flight -= 1,
                Carried::Repair => self.proactive_in_flight -= 1,
                Carried::Source => self.sources_in_flight -= 1,
                Carried::Other => {}
            }
        }
    }

    /// Takes packet `number` out of flight with no fate: neither
    /// acknowledged nor lost (an early packet the server refused).
    pub(crate) fn withdraw(&mut self, number: u64) {
        if let Some(packet) = self.remove(number) {
            self.forget(&packet);
        }
    }

    /// Source symbols in flight sent after the newest repair in flight:
    /// no repair sent yet covers them.
    pub(crate) fn sources_after_last_repair(&self) -> u64 {
        self.packets
            .iter()
            .rev()
            .flatten()
            .filter(|p| p.in_flight && p.carried != Carried::Other)
            .take_while(|p| p.carried == Carried::Source)
            .count() as u64
    }

    /// Removes the packets in `first..=last` that are still recorded.
    pub(crate) fn on_ack_range(&mut self, first: u64, last: u64, outcome: &mut AckOutcome) {
        let end = last.saturating_add(1);
        let from = first.max(self.first);
        let to = end.min(self.first + self.packets.len() as u64);
        for number in from..to {
            if let Some(packet) = self.remove(number) {
                self.forget(&packet);
                outcome.acked.push((number, packet));
            }
        }
        let spurious: Vec<u64> = self.recently_lost.range(first..=last).copied().collect();
        for number in spurious {
            self.recently_lost.remove(&number);
            outcome.spurious.push(number);
        }
    }

    /// Declares lost the packets before `largest_acked` that are
    /// [`PACKET_THRESHOLD`] behind it or older than `loss_delay`; returns
    /// them, and the time the next one would be declared lost.
    pub(crate) fn detect_losses(
        &mut self,
        now: Instant,
        largest_acked: u64,
        loss_delay: Duration,
    ) -> (Vec<(u64, SentPacket)>, Option<Instant>) {
        let mut lost = Vec::new();
        let mut next_loss = None;
        let lost_before = now.checked_sub(loss_delay);
        for (number, packet) in self.before(largest_acked) {
            let by_count = largest_acked - number >= PACKET_THRESHOLD;
            let by_time = lost_before.is_some_and(|t| packet.time <= t);
            if by_count || by_time {
                lost.push((number, *packet));
            } else {
                next_loss = Some(packet.time + loss_delay);
                break;
            }
        }
        for (number, packet) in &lost {
            self.remove(*number);
            self.forget(packet);
            if packet.in_flight {
                self.recently_lost.insert(*number);
                if self.recently_lost.len() > LOST_MEMORY {
                    self.recently_lost.pop_first();
                }
            }
        }
        (lost, next_loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(carried: Carried, in_flight: bool) -> SentPacket {
        SentPacket {
            time: Instant::now(),
            size: 1200,
            in_flight,
            carried,
            app_limited: false,
            blind: false,
        }
    }

    #[test]
    fn the_sources_after_the_newest_repair_are_counted_apart() {
        let mut sent = SentPackets::default();
        assert_eq!(sent.sources_after_last_repair(), 0);
        sent.on_sent(0, packet(Carried::Source, true));
        sent.on_sent(1, packet(Carried::Repair, true));
        sent.on_sent(2, packet(Carried::Source, true));
        // An acknowledgement-only packet neither ends the run nor counts.
        sent.on_sent(3, packet(Carried::Other, false));
        sent.on_sent(4, packet(Carried::Source, true));
        assert_eq!(sent.sources_after_last_repair(), 2);
        assert_eq!(sent.sources_in_flight, 3);
        sent.on_sent(5, packet(Carried::WideRepair, true));
        assert_eq!(sent.sources_after_last_repair(), 0);
        // Once both repairs are acknowledged, every source in flight is
        // after the newest repair.
        let mut outcome = AckOutcome::default();
        sent.on_ack_range(1, 1, &mut outcome);
        sent.on_ack_range(5, 5, &mut outcome);
        assert_eq!(sent.sources_after_last_repair(), 3);
    }

    #[test]
    fn packets_are_found_by_number_across_gaps_and_out_of_order_acks() {
        let mut sent = SentPackets::default();
        // 11 and 14 are acknowledgement-only packets, never recorded.
        for number in [10, 12, 13, 15, 16, 17] {
            sent.on_sent(number, packet(Carried::Source, true));
        }
        assert_eq!(sent.sources_in_flight, 6);
        let mut outcome = AckOutcome::default();
        sent.on_ack_range(13, 15, &mut outcome);
        let acked: Vec<u64> = outcome.acked.iter().map(|(n, _)| *n).collect();
        assert_eq!(acked, vec![13, 15]);
        // Acknowledged again, or beyond anything sent: nothing more.
        let mut again = AckOutcome::default();
        sent.on_ack_range(0, u64::MAX - 1, &mut again);
        let acked: Vec<u64> = again.acked.iter().map(|(n, _)| *n).collect();
        assert_eq!(acked, vec![10, 12, 16, 17]);
        assert_eq!(sent.sources_in_flight, 0);
        assert_eq!(sent.bytes_in_flight, 0);
        assert!(sent.packets.is_empty());
        // After the record empties, numbering goes on from where it is.
        sent.on_sent(30, packet(Carried::Repair, true));
        sent.withdraw(30);
        sent.withdraw(31);
        assert_eq!(sent.proactive_in_flight, 0);
    }

    #[test]
    fn losses_are_declared_oldest_first_by_count_and_by_time() {
        let mut sent = SentPackets::default();
        let start = Instant::now();
        for number in 0..6 {
            let mut p = packet(Carried::Source, true);
            p.time = start + Duration::from_millis(number * 10);
            sent.on_sent(number, p);
        }
        let mut outcome = AckOutcome::default();
        sent.on_ack_range(5, 5, &mut outcome);
        // 0, 1 and 2 are three or more behind 5; 3 is 30 ms old at 60 ms
        // with a 25 ms delay; 4 is neither, and sets the next time.
        let (lost, next) = sent.detect_losses(
            start + Duration::from_millis(60),
            5,
            Duration::from_millis(25),
        );
        let lost: Vec<u64> = lost.iter().map(|(n, _)| *n).collect();
        assert_eq!(lost, vec![0, 1, 2, 3]);
        assert_eq!(next, Some(start + Duration::from_millis(65)));
        assert_eq!(sent.sources_in_flight, 1);
        // An acknowledgement of a packet declared lost is spurious.
        let mut late = AckOutcome::default();
        sent.on_ack_range(1, 1, &mut late);
        assert!(late.acked.is_empty());
        assert_eq!(late.spurious, vec![1]);
    }
}
