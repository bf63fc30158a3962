//! Names for source symbols, encoding windows and repair keys.

use std::fmt;

/// The position of a source symbol in its stream, counted from 0.
///
/// 64 bits wide so that it never wraps in the life of a connection: at one
/// symbol per nanosecond it would take 584 years. The wire may carry fewer
/// bits; widening back to a `SymbolId` is the protocol's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SymbolId(pub u64);

impl SymbolId {
    /// The id `n` symbols after this one, or `None` past `u64::MAX`.
    pub fn checked_add(self, n: u64) -> Option<SymbolId> {
        self.0.checked_add(n).map(SymbolId)
    }

    /// The next id.
    ///
    /// # Panics
    /// Past `u64::MAX`, which no real stream reaches.
    pub fn next(self) -> SymbolId {
        SymbolId(self.0 + 1)
    }
}

impl fmt::Display for SymbolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The 16-bit key from which the coding coefficients of one repair symbol
/// are drawn (the RFC 8681 "Repair_Key").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RepairKey(pub u16);

impl fmt::Display for RepairKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key {}", self.0)
    }
}

/// A run of consecutive source symbols `[first, first + len)` that one repair
/// symbol covers (the RFC 8681 encoding window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Window {
    /// The oldest source symbol in the window.
    pub first: SymbolId,
    /// How many source symbols the window holds (the RFC's NSS), at least 1.
    pub len: u16,
}

impl Window {
    /// The window `[first, first + len)`.
    pub fn new(first: SymbolId, len: u16) -> Window {
        Window { first, len }
    }

    /// One past the newest source symbol, or `None` if that overflows.
    pub fn end(self) -> Option<SymbolId> {
        self.first.checked_add(u64::from(self.len))
    }

    /// Whether `id` lies inside the window.
    pub fn contains(self, id: SymbolId) -> bool {
        id >= self.first && id.0 - self.first.0 < u64::from(self.len)
    }

    /// The ids in the window, oldest first.
    pub fn ids(self) -> impl Iterator<Item = SymbolId> {
        (0..u64::from(self.len)).map(move |i| SymbolId(self.first.0 + i))
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, +{})", self.first, self.len)
    }
}
