//! The replay window: which recent packet numbers were already accepted.

/// Packet numbers the window remembers below the largest accepted one.
/// Older packets are refused: by then the coding has replaced whatever
/// they carried, and a window this wide covers any reordering a path
/// produces at the rates ltx runs.
pub const REPLAY_WINDOW: u64 = 0x800;

const WORDS: usize = (REPLAY_WINDOW / 64) as usize;

/// A sliding bitmap over the last [`REPLAY_WINDOW`] packet numbers.
///
/// Checked and updated only after a packet authenticates, so a forgery
/// cannot move it.
#[derive(Debug, Clone)]
pub(crate) struct ReplayWindow {
    largest: Option<u64>,
    /// Bit `n % REPLAY_WINDOW` is set when packet `n` (within the window)
    /// was accepted.
    seen: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> ReplayWindow {
        ReplayWindow {
            largest: None,
            seen: [0; WORDS],
        }
    }
}

impl ReplayWindow {
    fn bit(number: u64) -> (usize, u64) {
        let slot = number % REPLAY_WINDOW;
        ((slot / 64) as usize, 1 << (slot % 64))
    }

    /// Accepts `number` if it is new and within the window, and records it.
    pub(crate) fn accept(&mut self, number: u64) -> bool {
        match self.largest {
            Some(largest) if number <= largest => {
                if largest - number >= REPLAY_WINDOW {
                    return false;
                }
                let (word, mask) = ReplayWindow::bit(number);
                if self.seen[word] & mask != 0 {
                    return false;
                }
                self.seen[word] |= mask;
                true
            }
            _ => {
                // Forget the slots the window slides past.
                let from = self.largest.map_or(0, |l| l + 1);
                if number - from >= REPLAY_WINDOW || self.largest.is_none() {
                    self.seen = [0; WORDS];
                } else {
                    for n in from..number {
                        let (word, mask) = ReplayWindow::bit(n);
                        self.seen[word] &= !mask;
                    }
                }
                let (word, mask) = ReplayWindow::bit(number);
                self.seen[word] |= mask;
                self.largest = Some(number);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_number_is_accepted_once_in_any_order() {
        let mut window = ReplayWindow::default();
        for n in [5, 3, 9, 4, 100, 6] {
            assert!(window.accept(n), "{n}");
        }
        for n in [5, 3, 9, 4, 100, 6] {
            assert!(!window.accept(n), "{n} again");
        }
        assert!(window.accept(7) && window.accept(0));
    }

    #[test]
    fn the_window_edge_is_exact() {
        let mut window = ReplayWindow::default();
        let largest = 10 * REPLAY_WINDOW;
        assert!(window.accept(largest));
        // REPLAY_WINDOW − 1 behind is inside; REPLAY_WINDOW behind is out.
        assert!(window.accept(largest - (REPLAY_WINDOW - 1)));
        assert!(!window.accept(largest - REPLAY_WINDOW));
    }

    #[test]
    fn slots_reused_after_the_window_slides_start_clear() {
        let mut window = ReplayWindow::default();
        assert!(window.accept(1));
        // Packet 1 + REPLAY_WINDOW takes packet 1's slot.
        assert!(window.accept(1 + REPLAY_WINDOW));
        assert!(!window.accept(1));
        // Slide by less than the window: slots in between are cleared.
        assert!(window.accept(1 + REPLAY_WINDOW + 10));
        for n in 2 + REPLAY_WINDOW..1 + REPLAY_WINDOW + 10 {
            assert!(window.accept(n), "{n}");
        }
    }
}
