//! Guards for messages sent in the middle of other data.
//!
//! A message (a keystroke, a request, a reply: see
//! `Streams::take_message_sent`) that leaves while other data keeps the
//! sender busy gets no tail repair, and on a short path no proactive repair
//! either: if its packet is lost, it waits a round trip of feedback. A
//! guard is one repair over the message's symbol alone, sent a few packets
//! after it, so that a loss of the one is made up by the other unless both
//! fall in one burst. A message after which the data runs out is covered by
//! the tail instead.
//!
//! Guards are few by construction: one per message, from a credit that
//! source symbols earn ([`CREDIT_PER_SOURCE`]), so that a stream of small
//! writes cannot double the bytes on the wire.

use std::collections::VecDeque;

use ltx_coding::SymbolId;

use crate::recovery::LossEstimate;

/// Guard credit a source symbol earns: at most one guard per sixteen
/// symbols sent, over time.
const CREDIT_PER_SOURCE: f64 = 1.0 / 16.0;
/// The most credit held, which is also what a connection starts with: the
/// guards a burst of messages may take at once.
const MAX_CREDIT: f64 = 4.0;
/// The fewest packets between a message and its guard.
const MIN_SPACING: u64 = 4;
/// The most packets between a message and its guard.
const MAX_SPACING: u64 = 32;

/// The guards owed and the credit left for more.
#[derive(Debug, Clone)]
pub(super) struct MessageGuards {
    credit: f64,
    /// Symbols to guard, oldest first, each with the packet number from
    /// which its guard may go.
    owed: VecDeque<(SymbolId, u64)>,
}

impl Default for MessageGuards {
    fn default() -> MessageGuards {
        MessageGuards {
            credit: MAX_CREDIT,
            owed: VecDeque::new(),
        }
    }
}

impl MessageGuards {
    /// Source symbol `id` left in packet `number`, holding a message if
    /// `message`: it earns credit, and a message is owed a guard where the
    /// path loses packets (`estimate`) and the credit allows one. The guard
    /// is spaced twice the mean burst of losses after it.
    pub(super) fn on_source_sent(
        &mut self,
        id: SymbolId,
        number: u64,
        message: bool,
        estimate: &LossEstimate,
    ) {
        self.credit = (self.credit + CREDIT_PER_SOURCE).min(MAX_CREDIT);
        if !message || estimate.rate <= 0.0 || self.credit < 1.0 {
            return;
        }
        self.credit -= 1.0;
        let spacing = ((2.0 * estimate.burst).ceil() as u64).clamp(MIN_SPACING, MAX_SPACING);
        self.owed.push_back((id, number + spacing));
    }

    /// Forgets the guards of symbols before `oldest`, which the peer has
    /// decoded.
    pub(super) fn forget_before(&mut self, oldest: SymbolId) {
        while self.owed.front().is_some_and(|&(id, _)| id < oldest) {
            self.owed.pop_front();
        }
    }

    /// Whether a guard may go in packet `number`: its spacing has passed,
    /// or `data` is false (nothing else would go, so the spacing would
    /// never pass).
    pub(super) fn due(&self, number: u64, data: bool) -> bool {
        self.owed
            .front()
            .is_some_and(|&(_, from)| number >= from || !data)
    }

    /// Takes the symbol of the guard that is due, as [`due`](Self::due)
    /// said.
    pub(super) fn take(&mut self) -> Option<SymbolId> {
        self.owed.pop_front().map(|(id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOSSY: LossEstimate = LossEstimate {
        rate: 0.1,
        burst: 1.0,
        samples: 100,
    };

    #[test]
    fn a_message_is_guarded_a_few_packets_later() {
        let mut guards = MessageGuards::default();
        guards.on_source_sent(SymbolId(7), 20, true, &LOSSY);
        assert!(!guards.due(21, true));
        assert!(guards.due(24, true));
        // With nothing else to send, the guard need not wait.
        assert!(guards.due(21, false));
        assert_eq!(guards.take(), Some(SymbolId(7)));
        assert!(!guards.due(100, false));
    }

    #[test]
    fn bursts_space_the_guard_further() {
        let mut guards = MessageGuards::default();
        let bursty = LossEstimate {
            burst: 5.0,
            ..LOSSY
        };
        guards.on_source_sent(SymbolId(0), 0, true, &bursty);
        assert!(!guards.due(9, true));
        assert!(guards.due(10, true));
    }

    #[test]
    fn no_guard_without_loss_or_for_bulk_data() {
        let mut guards = MessageGuards::default();
        guards.on_source_sent(SymbolId(0), 0, true, &LossEstimate::CLEAN);
        guards.on_source_sent(SymbolId(1), 1, false, &LOSSY);
        assert!(!guards.due(100, false));
    }

    #[test]
    fn guards_are_bounded_by_the_credit_sources_earn() {
        let mut guards = MessageGuards::default();
        let mut owed = 0;
        for id in 0..160 {
            guards.on_source_sent(SymbolId(id), id, true, &LOSSY);
            while guards.due(u64::MAX, true) {
                guards.take();
                owed += 1;
            }
        }
        // Four held at the start, one per sixteen symbols after.
        assert_eq!(owed, 4 + 160 / 16 - 1);
    }

    #[test]
    fn a_decoded_symbol_needs_no_guard() {
        let mut guards = MessageGuards::default();
        guards.on_source_sent(SymbolId(3), 0, true, &LOSSY);
        guards.on_source_sent(SymbolId(9), 1, true, &LOSSY);
        guards.forget_before(SymbolId(4));
        assert_eq!(guards.take(), Some(SymbolId(9)));
    }
}
