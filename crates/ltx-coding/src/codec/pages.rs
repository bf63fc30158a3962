//! Storage for a ring of symbol slots that takes memory a page at a time,
//! as slots come into use, and gives each page back when its last symbol
//! goes: the encoder's and decoder's buffers follow the window actually in
//! use, not the largest one allowed (a connection that moves a few
//! kilobytes holds a page, not the tens of megabytes of a full window).

/// Slots per page. At ltx's symbols of about 1400 bytes a page is about
/// 44 KB: small beside a busy connection's window, large enough that a
/// bulk transfer allocates rarely.
const PAGE_SLOTS: usize = 32;

/// Symbol slots `0..slots`, each `symbol_size` bytes, allocated by page.
#[derive(Debug)]
pub(super) struct SymbolPages {
    symbol_size: usize,
    slots: usize,
    /// One entry per page of the ring, allocated on first use.
    pages: Vec<Option<Box<[u8]>>>,
    /// Per page: how many of its slots hold a symbol.
    held: Vec<u16>,
    /// Pages allocated, the spares included.
    allocated: usize,
    /// Freed pages, up to [`MAX_SPARE_PAGES`], kept for the next
    /// allocations while others are in use, so a window sliding through
    /// the ring does not allocate a page for every page it leaves, nor for
    /// every page an acknowledgement of many symbols frees at once.
    spares: Vec<Box<[u8]>>,
}

/// Freed pages kept for reuse at most: about 350 KB at ltx's symbols.
const MAX_SPARE_PAGES: usize = 8;

impl SymbolPages {
    /// `slots` empty slots of `symbol_size` bytes; nothing allocated yet.
    pub(super) fn new(symbol_size: usize, slots: usize) -> SymbolPages {
        SymbolPages {
            symbol_size,
            slots,
            pages: Vec::new(),
            held: Vec::new(),
            allocated: 0,
            spares: Vec::new(),
        }
    }

    /// The bytes of a held slot.
    ///
    /// # Panics
    /// If `slot` holds no symbol (its page may not exist).
    pub(super) fn get(&self, slot: usize) -> &[u8] {
        let (page, start) = self.locate(slot);
        let page = self.pages[page].as_deref().expect("a held slot's page");
        &page[start..start + self.symbol_size]
    }

    /// Takes `slot` into use and returns its bytes to fill (their old
    /// contents are unspecified). A slot must be [`release`](Self::release)d
    /// before it is held again.
    pub(super) fn hold(&mut self, slot: usize) -> &mut [u8] {
        let (page, start) = self.locate(slot);
        if self.pages.is_empty() {
            let count = self.slots.div_ceil(PAGE_SLOTS);
            self.pages.resize_with(count, || None);
            self.held.resize(count, 0);
        }
        if self.pages[page].is_none() {
            let fresh = match self.spares.pop() {
                Some(spare) => spare,
                None => {
                    self.allocated += 1;
                    vec![0u8; PAGE_SLOTS * self.symbol_size].into_boxed_slice()
                }
            };
            self.pages[page] = Some(fresh);
        }
        self.held[page] += 1;
        let page = self.pages[page].as_deref_mut().expect("allocated above");
        &mut page[start..start + self.symbol_size]
    }

    /// Gives up a held slot; its page goes when nothing else in it is held,
    /// and every page goes when no slot is held.
    pub(super) fn release(&mut self, slot: usize) {
        let (page, _) = self.locate(slot);
        let Some(held) = self.held.get_mut(page).filter(|held| **held > 0) else {
            debug_assert!(false, "slot {slot} released but not held");
            return;
        };
        *held -= 1;
        if *held > 0 {
            return;
        }
        let freed = self.pages[page].take();
        if self.held.iter().all(|&held| held == 0) {
            // Nothing in use: give everything back, the page index too.
            self.pages = Vec::new();
            self.held = Vec::new();
            self.spares = Vec::new();
            self.allocated = 0;
        } else if let Some(freed) = freed.filter(|_| self.spares.len() < MAX_SPARE_PAGES) {
            self.spares.push(freed);
        } else {
            self.allocated -= 1;
        }
    }

    /// Bytes of symbol storage allocated now.
    pub(super) fn allocated_bytes(&self) -> usize {
        self.allocated * PAGE_SLOTS * self.symbol_size
    }

    fn locate(&self, slot: usize) -> (usize, usize) {
        debug_assert!(slot < self.slots);
        (slot / PAGE_SLOTS, (slot % PAGE_SLOTS) * self.symbol_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_come_with_use_and_go_with_the_last_symbol() {
        let mut pages = SymbolPages::new(4, 100);
        assert_eq!(pages.allocated_bytes(), 0);
        pages.hold(0).copy_from_slice(b"abcd");
        pages.hold(1).copy_from_slice(b"efgh");
        assert_eq!(pages.allocated_bytes(), PAGE_SLOTS * 4);
        pages.hold(PAGE_SLOTS + 3).copy_from_slice(b"ijkl");
        assert_eq!(pages.allocated_bytes(), 2 * PAGE_SLOTS * 4);
        assert_eq!(pages.get(1), b"efgh");
        pages.release(0);
        pages.release(1);
        // The first page is kept as the spare while the second is in use.
        assert_eq!(pages.allocated_bytes(), 2 * PAGE_SLOTS * 4);
        assert_eq!(pages.get(PAGE_SLOTS + 3), b"ijkl");
        pages.hold(2 * PAGE_SLOTS).copy_from_slice(b"mnop");
        assert_eq!(
            pages.allocated_bytes(),
            2 * PAGE_SLOTS * 4,
            "the spare is reused"
        );
        pages.release(PAGE_SLOTS + 3);
        pages.release(2 * PAGE_SLOTS);
        assert_eq!(pages.allocated_bytes(), 0, "nothing held, nothing kept");
    }

    #[test]
    fn a_window_sliding_through_the_ring_holds_only_its_own_pages() {
        let slots = 1000;
        let mut pages = SymbolPages::new(8, slots);
        let window = 40;
        for id in 0..10 * slots {
            pages.hold(id % slots).fill(id as u8);
            if id >= window {
                let old = id - window;
                assert_eq!(pages.get(old % slots)[0], old as u8);
                pages.release(old % slots);
            }
            // The window spans at most three pages, plus the spare.
            assert!(pages.allocated_bytes() <= 4 * PAGE_SLOTS * 8);
        }
    }

    #[test]
    fn pages_freed_together_are_kept_for_the_next_ones() {
        let mut pages = SymbolPages::new(4, 1000);
        // Five full pages and one slot of a sixth, which stays held.
        for slot in 0..5 * PAGE_SLOTS + 1 {
            pages.hold(slot).fill(1);
        }
        let six = 6 * PAGE_SLOTS * 4;
        assert_eq!(pages.allocated_bytes(), six);
        // One acknowledgement frees the first five pages.
        for slot in 0..5 * PAGE_SLOTS {
            pages.release(slot);
        }
        assert_eq!(pages.allocated_bytes(), six, "kept as spares");
        for slot in 6 * PAGE_SLOTS..11 * PAGE_SLOTS {
            pages.hold(slot).fill(2);
        }
        assert_eq!(pages.allocated_bytes(), six, "the spares reused");
    }
}
