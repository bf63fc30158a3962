//! The progressive sliding-window decoder: Gaussian elimination on the fly,
//! as symbols arrive, in any order.
//!
//! It keeps the equations it holds in reduced row echelon form over the
//! unknown source symbols: every row is normalised to 1 at its pivot (its
//! first non-zero column), no other row has a non-zero coefficient in a
//! pivot column, and no row has one in a known column. Two things follow:
//! - a new equation is reduced in one pass — its coefficients at known and
//!   pivot columns say at once which symbols and rows to subtract, and one
//!   dot product subtracts them all (each read once);
//! - a row with nothing left but its pivot *is* that source symbol, so a
//!   symbol is delivered the moment the equations pin it down.
//!
//! Work per symbol is proportional to the window in use (rows, each over its
//! own span), never to the configured maximum.

use std::collections::VecDeque;

use thiserror::Error;

use super::code::{Code, CodeError};
use super::encoder::{check_sizes, dot_product_terms, ConfigError};
use super::pages::SymbolPages;
use crate::gf256::{inv, kernel, Kernel};
use crate::{RepairKey, SymbolId, Window};

/// How a [`Decoder`] is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Bytes per symbol, as the encoder's.
    pub symbol_size: usize,
    /// The widest span of source symbols the decoder holds at once: symbols
    /// at or beyond `base + max_window` are refused until the application
    /// consumes the oldest. Bounds memory to about `2 · max_window` symbols.
    pub max_window: u16,
    /// The code the repair symbols were made with.
    pub code: Code,
}

/// Why the decoder refused a symbol. None of these harm the decoder: the
/// symbol is dropped and the state is as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// A payload whose length is not the symbol size.
    #[error("symbol of {len} bytes, expected {symbol_size}")]
    WrongSize {
        /// Bytes received.
        len: usize,
        /// The configured symbol size.
        symbol_size: usize,
    },
    /// A symbol that the application has already consumed (or a repair
    /// symbol that needs one).
    #[error("symbol {id} is before the window, which starts at {base}")]
    BeforeWindow {
        /// The oldest symbol referred to.
        id: SymbolId,
        /// The oldest symbol the decoder holds.
        base: SymbolId,
    },
    /// A symbol past the configured maximum window.
    #[error("symbol {id} is beyond the window, which ends before {limit}")]
    BeyondWindow {
        /// The newest symbol referred to.
        id: SymbolId,
        /// One past the newest symbol the decoder can hold now.
        limit: SymbolId,
    },
    /// A source symbol that is already known.
    #[error("source symbol {0} is already known")]
    Duplicate(SymbolId),
    /// A repair symbol whose coefficients are all zero: it says nothing.
    #[error("repair symbol over {0} has only zero coefficients")]
    ZeroCoefficients(Window),
    /// The code does not allow the repair symbol's window.
    #[error(transparent)]
    Code(#[from] CodeError),
}

/// What a symbol did for the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The symbol added information; `newly_known` source symbols (perhaps
    /// 0) became known through it.
    Innovative {
        /// Source symbols that became known.
        newly_known: usize,
    },
    /// A repair symbol that was a combination of what the decoder already
    /// had: nothing changed.
    Redundant,
}

/// One equation over unknown source symbols: `Σ coefficients[i]·x[first+i] = payload`,
/// with `coefficients[0] == 1` (the pivot).
#[derive(Debug, Default)]
struct Row {
    first: SymbolId,
    coefficients: Vec<u8>,
    payload: Vec<u8>,
}

impl Row {
    /// The coefficient of `id`, zero outside the row's span.
    fn coefficient(&self, id: SymbolId) -> u8 {
        id.0.checked_sub(self.first.0)
            .and_then(|i| self.coefficients.get(i as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Whether only the pivot is left: the row is its source symbol.
    fn is_solved(&self) -> bool {
        // Rows span up to a whole window and are checked after every
        // elimination: OR them a block at a time, which vectorises, rather
        // than stop at the first non-zero byte, which does not.
        let mut blocks = self.coefficients[1..].chunks_exact(64);
        blocks.all(|block| block.iter().fold(0, |acc, &c| acc | c) == 0)
            && blocks.remainder().iter().all(|&c| c == 0)
    }
}

const NO_ROW: u32 = u32::MAX;

/// Retired rows whose buffers are kept for new equations: enough for a
/// burst of repairs without allocating, few enough that a burst's worth
/// of buffers is not held for the connection's life.
const MAX_SPARE_ROWS: usize = 64;

/// A progressive decoder for the sliding-window code (and the other codes of
/// [`Code`]).
///
/// Feed it source and repair symbols in any order; each source symbol is
/// available ([`symbol`](Decoder::symbol), [`poll_decoded`](Decoder::poll_decoded))
/// the moment it is known, received or decoded. The application
/// [`consume`](Decoder::consume)s symbols to slide the window on.
///
/// ```
/// use ltx_coding::codec::{Code, Decoder, DecoderConfig, Encoder, EncoderConfig};
/// use ltx_coding::{RepairKey, SymbolId, Window};
///
/// let code = Code::default();
/// let mut encoder = Encoder::new(EncoderConfig { symbol_size: 3, max_window: 16, code })?;
/// let mut decoder = Decoder::new(DecoderConfig { symbol_size: 3, max_window: 16, code })?;
/// for data in [b"one", b"two", b"six"] {
///     encoder.push(data)?;
/// }
/// let window = Window::new(SymbolId(0), 3);
/// let mut repair = [0u8; 3];
/// encoder.repair(window, RepairKey(1), &mut repair)?;
///
/// // "two" is lost on the way; the repair symbol stands in for it.
/// decoder.receive_source(SymbolId(0), b"one")?;
/// decoder.receive_source(SymbolId(2), b"six")?;
/// decoder.receive_repair(window, RepairKey(1), &repair)?;
/// assert_eq!(decoder.symbol(SymbolId(1)), Some(&b"two"[..]));
/// assert_eq!(decoder.missing(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Decoder {
    config: DecoderConfig,
    kernel: Kernel,
    /// The oldest symbol held; everything before it has been consumed.
    base: SymbolId,
    /// One past the newest symbol any received symbol referred to.
    end: SymbolId,
    /// No unknown symbol lies in `[base, first_unknown)`.
    first_unknown: SymbolId,
    /// Unknown symbols in `[base, end)`.
    missing: u64,
    /// Per slot (`id % max_window`): whether the symbol is known.
    known: Vec<bool>,
    /// Per slot: the row whose pivot the symbol is, or `NO_ROW`; empty
    /// (all `NO_ROW`) while no equation is held.
    pivot_row: Vec<u32>,
    /// Per slot, `symbol_size` bytes: known symbols, a page at a time.
    sources: SymbolPages,
    /// Equations, indexed by the `pivot_row` entries; free entries are empty.
    rows: Vec<Row>,
    live_rows: Vec<u32>,
    free_rows: Vec<u32>,
    /// Buffers of retired rows, to spare allocations.
    spare_rows: Vec<Row>,
    scale_scratch: Vec<u8>,
    decoded: VecDeque<SymbolId>,
    /// Scratch for one reduction: which known symbols and rows to subtract.
    terms: Vec<(u8, Term)>,
    coefficient_scratch: Vec<u8>,
    touched: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
enum Term {
    Source(usize),
    Row(u32),
}

impl Decoder {
    /// A decoder whose window starts at [`SymbolId`] 0.
    pub fn new(config: DecoderConfig) -> Result<Decoder, ConfigError> {
        Decoder::starting_at(config, SymbolId(0))
    }

    /// A decoder whose window starts at `base`.
    pub fn starting_at(config: DecoderConfig, base: SymbolId) -> Result<Decoder, ConfigError> {
        check_sizes(config.symbol_size, config.max_window, config.code)?;
        let slots = usize::from(config.max_window);
        Ok(Decoder {
            config,
            kernel: kernel(),
            base,
            end: base,
            first_unknown: base,
            missing: 0,
            known: vec![false; slots],
            pivot_row: Vec::new(),
            sources: SymbolPages::new(config.symbol_size, slots),
            rows: Vec::new(),
            live_rows: Vec::new(),
            free_rows: Vec::new(),
            spare_rows: Vec::new(),
            scale_scratch: Vec::new(),
            decoded: VecDeque::new(),
            terms: Vec::new(),
            coefficient_scratch: Vec::new(),
            touched: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// The oldest symbol held (everything before it was consumed).
    pub fn base(&self) -> SymbolId {
        self.base
    }

    /// One past the newest symbol any received symbol referred to: the
    /// window in use is `[base, end)`.
    pub fn end(&self) -> SymbolId {
        self.end
    }

    /// Unknown source symbols in the window in use.
    pub fn missing(&self) -> u64 {
        self.missing
    }

    /// Independent equations held over unknown symbols; when it equals
    /// [`missing`](Decoder::missing), everything decodes.
    pub fn rank(&self) -> usize {
        self.live_rows.len()
    }

    /// Equations lacking for the unknown symbols before `boundary`: how many
    /// more, each involving at least one of them, would determine them all
    /// (at most [`missing`](Decoder::missing) − [`rank`](Decoder::rank)). A
    /// sender whose repairs slide past `boundary` learns from it what only
    /// repairs over older symbols can make up.
    pub fn deficit_before(&mut self, boundary: SymbolId) -> u64 {
        let start = self.next_missing();
        let stop = boundary.min(self.end);
        let unknown = (start.0..stop.0.max(start.0))
            .filter(|&id| !self.is_known(SymbolId(id)))
            .count() as u64;
        // Exact, not an estimate: a row's pivot is its first non-zero
        // column, so the rows that involve symbols before `boundary` are
        // those whose pivot lies there, one per pivot; rows over later
        // symbols only never help.
        let rows = self
            .live_rows
            .iter()
            .filter(|&&r| self.rows[r as usize].first < boundary)
            .count() as u64;
        unknown.saturating_sub(rows)
    }

    /// The oldest unknown symbol, or [`end`](Decoder::end) if all are known:
    /// everything before it can be read in order.
    pub fn next_missing(&mut self) -> SymbolId {
        self.first_unknown = self.first_unknown.max(self.base);
        while self.first_unknown < self.end && self.is_known(self.first_unknown) {
            self.first_unknown = self.first_unknown.next();
        }
        self.first_unknown
    }

    /// Whether source symbol `id` is known (and not consumed).
    pub fn is_known(&self, id: SymbolId) -> bool {
        self.in_window(id) && self.known[self.slot(id)]
    }

    /// A known source symbol, padded to the symbol size.
    pub fn symbol(&self, id: SymbolId) -> Option<&[u8]> {
        self.is_known(id).then(|| self.source(self.slot(id)))
    }

    /// The next source symbol that became known, received or decoded, in
    /// the order they became known.
    pub fn poll_decoded(&mut self) -> Option<SymbolId> {
        self.decoded.pop_front()
    }

    /// Takes a source symbol.
    pub fn receive_source(&mut self, id: SymbolId, data: &[u8]) -> Result<Outcome, DecodeError> {
        self.check_size(data.len())?;
        self.check_span(id, id.checked_add(1))?;
        if self.known[self.slot(id)] {
            return Err(DecodeError::Duplicate(id));
        }
        self.extend_end(id.next());
        let mut newly_known = 1;
        let slot = self.slot(id);
        self.store_source(id, data);
        self.touched.clear();
        let pivot = self.take_pivot(slot);
        if pivot != NO_ROW {
            // The row that solved for `id` now relates other unknowns.
            let row = &mut self.rows[pivot as usize];
            self.kernel.xor(&mut row.payload, data);
            row.coefficients[0] = 0;
            self.repivot(pivot);
        } else {
            let live = std::mem::take(&mut self.live_rows);
            for &r in &live {
                let row = &mut self.rows[r as usize];
                let c = row.coefficient(id);
                if c != 0 {
                    self.kernel.mul_add(&mut row.payload, data, c);
                    let i = (id.0 - row.first.0) as usize;
                    row.coefficients[i] = 0;
                    self.touched.push(r);
                }
            }
            self.live_rows = live;
        }
        newly_known += self.settle_touched();
        Ok(Outcome::Innovative { newly_known })
    }

    /// Takes a repair symbol over `window` made with `key`.
    pub fn receive_repair(
        &mut self,
        window: Window,
        key: RepairKey,
        data: &[u8],
    ) -> Result<Outcome, DecodeError> {
        let mut coefficients = std::mem::take(&mut self.coefficient_scratch);
        coefficients.resize(usize::from(window.len), 0);
        let result = self
            .config
            .code
            .coefficients(window, key, &mut coefficients)
            .map_err(DecodeError::from)
            .and_then(|()| self.receive_combination(window.first, &coefficients, data));
        self.coefficient_scratch = coefficients;
        result
    }

    /// Takes a repair symbol given by its coefficients: `data` is
    /// `Σ coefficients[i] · source[first + i]`.
    ///
    /// For repair symbols whose coefficients the caller draws itself (another
    /// code, or a peer that sends them). Zero coefficients at either end are
    /// ignored, so `first` may lie before the window if those before it are 0.
    #[doc(alias = "receive_repair_with_coefficients")]
    pub fn receive_combination(
        &mut self,
        first: SymbolId,
        coefficients: &[u8],
        data: &[u8],
    ) -> Result<Outcome, DecodeError> {
        self.check_size(data.len())?;
        let window = Window::new(first, coefficients.len().min(usize::from(u16::MAX)) as u16);
        let (Some(lo), Some(hi)) = (
            coefficients.iter().position(|&c| c != 0),
            coefficients.iter().rposition(|&c| c != 0),
        ) else {
            return Err(DecodeError::ZeroCoefficients(window));
        };
        let lo_id = first.checked_add(lo as u64);
        let hi_id = first.checked_add(hi as u64 + 1);
        let Some(lo_id) = lo_id else {
            return Err(DecodeError::BeyondWindow {
                id: SymbolId(u64::MAX),
                limit: self.limit().unwrap_or(SymbolId(u64::MAX)),
            });
        };
        self.check_span(lo_id, hi_id)?;
        let hi_id = hi_id.expect("checked by check_span");
        self.extend_end(hi_id);

        // Reduce against known symbols and pivot rows, all in one pass.
        let mut row = self.take_row();
        row.first = lo_id;
        row.coefficients.clear();
        row.coefficients.extend_from_slice(&coefficients[lo..=hi]);
        // A reused buffer is already the symbol size; its bytes are about to
        // be overwritten.
        row.payload.resize(data.len(), 0);
        self.terms.clear();
        for i in 0..row.coefficients.len() {
            let c = row.coefficients[i];
            if c == 0 {
                continue;
            }
            let id = SymbolId(lo_id.0 + i as u64);
            let slot = self.slot(id);
            if self.known[slot] {
                row.coefficients[i] = 0;
                self.terms.push((c, Term::Source(slot)));
            } else if self.pivot(slot) != NO_ROW {
                let r = self.pivot(slot);
                add_coefficients(self.kernel, &mut row, &self.rows[r as usize], c);
                self.terms.push((c, Term::Row(r)));
            }
        }
        // payload = data + Σ c·(known symbol or pivot row): the received
        // bytes are the dot product's first source, which spares copying them.
        let (sources, rows) = (&self.sources, &self.rows);
        let terms = self.terms.iter().map(|&(c, term)| match term {
            Term::Source(slot) => (c, sources.get(slot)),
            Term::Row(r) => (c, rows[r as usize].payload.as_slice()),
        });
        dot_product_terms(
            self.kernel,
            &mut row.payload,
            std::iter::once((1, data)).chain(terms),
            false,
        );

        let Some(lead) = row.coefficients.iter().position(|&c| c != 0) else {
            self.put_back(row);
            return Ok(Outcome::Redundant);
        };
        trim_front(&mut row, lead);
        normalise(self.kernel, &mut row, &mut self.scale_scratch);
        let r = self.insert_row(row);
        self.touched.clear();
        self.touched.push(r);
        self.eliminate_pivot_from_others(r);
        let newly_known = self.settle_touched();
        Ok(Outcome::Innovative { newly_known })
    }

    /// Frees every symbol before `up_to`: the application has read them, or
    /// gives up on them. Equations that involve an unknown one are dropped.
    pub fn consume(&mut self, up_to: SymbolId) {
        if up_to <= self.base {
            return;
        }
        let seen_end = self.end.min(up_to);
        let count = up_to.0 - self.base.0;
        let slots = u64::from(self.config.max_window);
        for offset in 0..count.min(slots) {
            let id = SymbolId(self.base.0 + offset);
            let slot = self.slot(id);
            if self.known[slot] {
                self.sources.release(slot);
            } else if id < seen_end {
                self.missing -= 1;
            }
            self.known[slot] = false;
            self.take_pivot(slot);
        }
        // A row's pivot is its first non-zero column, so the rows that
        // involve consumed symbols are exactly those that start before `up_to`.
        let mut live = std::mem::take(&mut self.live_rows);
        live.retain(|&r| {
            if self.rows[r as usize].first >= up_to {
                return true;
            }
            let row = std::mem::take(&mut self.rows[r as usize]);
            self.free_rows.push(r);
            self.put_back(row);
            false
        });
        self.live_rows = live;
        self.decoded.retain(|&id| id >= up_to);
        self.base = up_to;
        self.end = self.end.max(up_to);
        if self.live_rows.is_empty() {
            self.drop_spare_buffers();
        }
    }

    /// Bytes the decoder holds for symbols and equations now: they grow
    /// with the window in use and the equations pending, and are given
    /// back as the application consumes.
    pub fn allocated_bytes(&self) -> usize {
        let rows: usize = self
            .rows
            .iter()
            .chain(&self.spare_rows)
            .map(|row| row.coefficients.capacity() + row.payload.capacity())
            .sum();
        self.sources.allocated_bytes()
            + rows
            + self.pivot_row.capacity() * std::mem::size_of::<u32>()
            + self.known.capacity()
    }

    // --- internals -------------------------------------------------------

    fn slot(&self, id: SymbolId) -> usize {
        (id.0 % u64::from(self.config.max_window)) as usize
    }

    fn source(&self, slot: usize) -> &[u8] {
        self.sources.get(slot)
    }

    /// The row whose pivot `slot`'s symbol is, or `NO_ROW`.
    fn pivot(&self, slot: usize) -> u32 {
        self.pivot_row.get(slot).copied().unwrap_or(NO_ROW)
    }

    /// Makes row `r` the pivot of `slot`'s symbol.
    fn set_pivot(&mut self, slot: usize, r: u32) {
        if self.pivot_row.is_empty() {
            self.pivot_row = vec![NO_ROW; usize::from(self.config.max_window)];
        }
        self.pivot_row[slot] = r;
    }

    /// Clears `slot`'s pivot and returns what it was.
    fn take_pivot(&mut self, slot: usize) -> u32 {
        match self.pivot_row.get_mut(slot) {
            Some(pivot) => std::mem::replace(pivot, NO_ROW),
            None => NO_ROW,
        }
    }

    /// With no equation held, gives back what only equations use: the
    /// pivot index, the row table and the spare row buffers.
    fn drop_spare_buffers(&mut self) {
        debug_assert!(self.pivot_row.iter().all(|&r| r == NO_ROW));
        self.pivot_row = Vec::new();
        self.rows = Vec::new();
        self.free_rows = Vec::new();
        self.spare_rows = Vec::new();
    }

    fn in_window(&self, id: SymbolId) -> bool {
        id >= self.base && self.limit().is_none_or(|limit| id < limit)
    }

    /// One past the newest symbol that fits, or `None` if that is past `u64::MAX`.
    fn limit(&self) -> Option<SymbolId> {
        self.base.checked_add(u64::from(self.config.max_window))
    }

    fn check_size(&self, len: usize) -> Result<(), DecodeError> {
        if len == self.config.symbol_size {
            Ok(())
        } else {
            Err(DecodeError::WrongSize {
                len,
                symbol_size: self.config.symbol_size,
            })
        }
    }

    /// Checks that `[first, end)` lies in the window; `end` is `None` when it
    /// overflowed.
    fn check_span(&self, first: SymbolId, end: Option<SymbolId>) -> Result<(), DecodeError> {
        if first < self.base {
            return Err(DecodeError::BeforeWindow {
                id: first,
                base: self.base,
            });
        }
        let limit = self.limit();
        let fits = match (end, limit) {
            (Some(end), Some(limit)) => end <= limit,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if fits {
            Ok(())
        } else {
            let last = end.map_or(SymbolId(u64::MAX), |end| SymbolId(end.0 - 1));
            Err(DecodeError::BeyondWindow {
                id: last,
                limit: limit.unwrap_or(SymbolId(u64::MAX)),
            })
        }
    }

    fn extend_end(&mut self, end: SymbolId) {
        if end > self.end {
            self.missing += end.0 - self.end.0;
            self.end = end;
        }
    }

    fn store_source(&mut self, id: SymbolId, data: &[u8]) {
        let slot = self.slot(id);
        self.sources.hold(slot).copy_from_slice(data);
        self.known[slot] = true;
        self.missing -= 1;
        self.decoded.push_back(id);
    }

    /// A row with buffers to reuse, for a new equation.
    fn take_row(&mut self) -> Row {
        self.spare_rows.pop().unwrap_or_default()
    }

    /// Keeps a row's buffers for later equations.
    fn put_back(&mut self, mut row: Row) {
        row.coefficients.clear();
        if self.spare_rows.len() < MAX_SPARE_ROWS {
            self.spare_rows.push(row);
        }
    }

    /// Adds a normalised row to the system; returns its index.
    fn insert_row(&mut self, row: Row) -> u32 {
        let slot = self.slot(row.first);
        let r = match self.free_rows.pop() {
            Some(r) => {
                self.rows[r as usize] = row;
                r
            }
            None => {
                self.rows.push(row);
                (self.rows.len() - 1) as u32
            }
        };
        self.set_pivot(slot, r);
        self.live_rows.push(r);
        r
    }

    /// Removes row `r` from the system.
    fn remove_row(&mut self, r: u32) {
        let row = std::mem::take(&mut self.rows[r as usize]);
        self.live_rows.retain(|&live| live != r);
        self.free_rows.push(r);
        self.put_back(row);
    }

    /// Row `r` lost its pivot (that symbol became known): find the next one,
    /// or drop the row if nothing is left of it.
    fn repivot(&mut self, r: u32) {
        let row = &mut self.rows[r as usize];
        match row.coefficients.iter().position(|&c| c != 0) {
            None => self.remove_row(r),
            Some(lead) => {
                trim_front(row, lead);
                normalise(self.kernel, row, &mut self.scale_scratch);
                let slot = self.slot(self.rows[r as usize].first);
                self.set_pivot(slot, r);
                self.touched.push(r);
                self.eliminate_pivot_from_others(r);
            }
        }
    }

    /// Clears the pivot column of row `r` from every other row, keeping the
    /// system in reduced form.
    fn eliminate_pivot_from_others(&mut self, r: u32) {
        let pivot = std::mem::take(&mut self.rows[r as usize]);
        for &s in &self.live_rows {
            if s == r {
                continue;
            }
            let row = &mut self.rows[s as usize];
            let c = row.coefficient(pivot.first);
            if c != 0 {
                add_coefficients(self.kernel, row, &pivot, c);
                self.kernel.mul_add(&mut row.payload, &pivot.payload, c);
                self.touched.push(s);
            }
        }
        self.rows[r as usize] = pivot;
    }

    /// Delivers every touched row that is down to its pivot; returns how many.
    fn settle_touched(&mut self) -> usize {
        let mut solved = 0;
        let touched = std::mem::take(&mut self.touched);
        for &r in &touched {
            let row = &self.rows[r as usize];
            if row.coefficients.is_empty() || !row.is_solved() {
                continue; // removed already, or still relates several unknowns
            }
            let id = row.first;
            let slot = self.slot(id);
            self.take_pivot(slot);
            let row = std::mem::take(&mut self.rows[r as usize]);
            self.free_rows.push(r);
            self.store_source(id, &row.payload);
            self.put_back(row);
            solved += 1;
        }
        if solved > 0 {
            // One pass for every row solved, not one per row: a repair can
            // solve hundreds at once. A solved row's slot is empty now.
            let rows = &self.rows;
            self.live_rows
                .retain(|&live| !rows[live as usize].coefficients.is_empty());
        }
        self.touched = touched;
        self.touched.clear();
        solved
    }
}

/// `dst.coefficients ^= c · src.coefficients`, widening `dst` to cover
/// `src`, which must not start before it.
fn add_coefficients(kernel: Kernel, dst: &mut Row, src: &Row, c: u8) {
    debug_assert!(src.first >= dst.first);
    let offset = (src.first.0 - dst.first.0) as usize;
    let needed = offset + src.coefficients.len();
    if dst.coefficients.len() < needed {
        dst.coefficients.resize(needed, 0);
    }
    kernel.mul_add(&mut dst.coefficients[offset..needed], &src.coefficients, c);
}

/// Drops `lead` leading zero coefficients.
fn trim_front(row: &mut Row, lead: usize) {
    row.coefficients.drain(..lead);
    row.first = SymbolId(row.first.0 + lead as u64);
}

/// Scales the row so that its pivot coefficient is 1.
fn normalise(kernel: Kernel, row: &mut Row, scratch: &mut Vec<u8>) {
    let lead = row.coefficients[0];
    if lead == 1 {
        return;
    }
    let factor = inv(lead).expect("the pivot is non-zero");
    for buffer in [&mut row.coefficients, &mut row.payload] {
        scratch.clear();
        scratch.extend_from_slice(buffer);
        kernel.mul(buffer, scratch, factor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gf256;

    const SIZE: usize = 8;

    fn decoder(max_window: u16) -> Decoder {
        Decoder::new(DecoderConfig {
            symbol_size: SIZE,
            max_window,
            code: Code::default(),
        })
        .unwrap()
    }

    fn source(id: u64) -> [u8; SIZE] {
        std::array::from_fn(|i| (id as u8).wrapping_mul(37) ^ (i as u8).wrapping_mul(101) ^ 0x5A)
    }

    /// A small xorshift: keeps the random tests free of dependencies and
    /// seeded.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    fn combination(first: u64, coefficients: &[u8]) -> [u8; SIZE] {
        let mut out = [0u8; SIZE];
        for (i, &c) in coefficients.iter().enumerate() {
            let s = source(first + i as u64);
            for (o, &x) in out.iter_mut().zip(&s) {
                *o ^= gf256::mul(c, x);
            }
        }
        out
    }

    impl Decoder {
        /// Checks the reduced row echelon form and the bookkeeping around it.
        fn check_reduced_form(&self) {
            let live: Vec<&Row> = self
                .live_rows
                .iter()
                .map(|&r| &self.rows[r as usize])
                .collect();
            let buffers = live.len() + self.spare_rows.len();
            for (&r, row) in self.live_rows.iter().zip(&live) {
                assert_eq!(row.coefficients.first(), Some(&1), "row {r} is normalised");
                assert_eq!(
                    self.pivot(self.slot(row.first)),
                    r,
                    "row {r} owns its pivot"
                );
                assert!(row.first >= self.base, "row {r} starts in the window");
                let end = row.first.0 + row.coefficients.len() as u64;
                assert!(end <= self.end.0, "row {r} ends in the window");
                assert!(!row.is_solved(), "a solved row {r} was left undelivered");
                for (i, &c) in row.coefficients.iter().enumerate().skip(1) {
                    let id = SymbolId(row.first.0 + i as u64);
                    if c != 0 {
                        assert!(!self.is_known(id), "row {r} refers to known {id}");
                        assert_eq!(
                            self.pivot(self.slot(id)),
                            NO_ROW,
                            "row {r} refers to pivot {id}"
                        );
                    }
                }
            }
            let pivots = self.pivot_row.iter().filter(|&&r| r != NO_ROW).count();
            assert_eq!(pivots, live.len(), "one pivot per live row");
            // Free entries hold no buffers: a row's buffers are live or spare,
            // and there are never more of them than equations can be held.
            for (r, row) in self.rows.iter().enumerate() {
                if !self.live_rows.contains(&(r as u32)) {
                    assert!(row.payload.is_empty(), "free row {r} keeps a buffer");
                }
            }
            assert!(
                buffers <= usize::from(self.config.max_window) + 1,
                "{buffers} row buffers"
            );
            let known = (self.base.0..self.end.0)
                .filter(|&i| self.is_known(SymbolId(i)))
                .count();
            assert_eq!(known as u64 + self.missing, self.end.0 - self.base.0);
        }
    }

    #[test]
    fn a_row_is_stored_over_its_own_span_only() {
        let mut d = decoder(64);
        let coefficients = [0, 0, 3, 0, 7, 0, 0];
        let data = combination(10, &coefficients);
        assert_eq!(
            d.receive_combination(SymbolId(10), &coefficients, &data),
            Ok(Outcome::Innovative { newly_known: 0 })
        );
        let row = &d.rows[d.live_rows[0] as usize];
        assert_eq!(row.first, SymbolId(12));
        assert_eq!(row.coefficients, [1, 0, gf256::div(7, 3).unwrap()]);
        assert_eq!(d.end(), SymbolId(15));
        d.check_reduced_form();
    }

    #[test]
    fn a_single_unknown_is_delivered_at_once() {
        let mut d = decoder(16);
        let data = combination(4, &[9]);
        assert_eq!(
            d.receive_combination(SymbolId(4), &[9], &data),
            Ok(Outcome::Innovative { newly_known: 1 })
        );
        assert_eq!(d.symbol(SymbolId(4)), Some(&source(4)[..]));
        assert_eq!(
            (d.rank(), d.missing()),
            (0, 4),
            "0..4 are unknown, 4 is not"
        );
        d.check_reduced_form();
    }

    /// Unknowns 1, 2, 7 and 8 of 0..10. The older two lack one equation
    /// with a row over them alone, none once a row also ties 2 to 8: a
    /// row over the newer symbols then settles all four, and only such a
    /// row is still needed. A row over the newer ones never counts for the
    /// older ones.
    #[test]
    fn the_deficit_before_a_symbol_counts_the_rows_that_reach_back() {
        let mut d = decoder(16);
        for id in [0, 3, 4, 5, 6, 9] {
            d.receive_source(SymbolId(id), &source(id)).unwrap();
        }
        fn receive(d: &mut Decoder, first: u64, coefficients: &[u8]) {
            let data = combination(first, coefficients);
            d.receive_combination(SymbolId(first), coefficients, &data)
                .unwrap();
            d.check_reduced_form();
        }
        receive(&mut d, 0, &[0, 3, 5, 0, 0]);
        receive(&mut d, 5, &[0, 0, 4, 6, 0]);
        assert_eq!((d.missing(), d.rank()), (4, 2));
        assert_eq!(d.deficit_before(SymbolId(5)), 1);
        assert_eq!(d.deficit_before(SymbolId(2)), 0, "one unknown, one row");
        assert_eq!(d.deficit_before(SymbolId(1)), 0, "nothing unknown before 1");
        assert_eq!(d.deficit_before(SymbolId(100)), 2, "stops at the end");
        receive(&mut d, 2, &[1, 0, 0, 0, 0, 0, 2]);
        assert_eq!((d.missing(), d.rank()), (4, 3));
        assert_eq!(d.deficit_before(SymbolId(5)), 0);
        assert_eq!(d.deficit_before(SymbolId(10)), 1);
        receive(&mut d, 7, &[1, 1]);
        assert_eq!(d.missing(), 0);
        for id in [1, 2, 7, 8] {
            assert_eq!(d.symbol(SymbolId(id)), Some(&source(id)[..]));
        }
    }

    /// Random states, random boundaries: the deficit before the end is the
    /// whole `missing − rank`; symbols and equations that do not reach back
    /// past the boundary leave the deficit before it as it is; an equation
    /// that does lowers it by one at most, and random ones bring it to 0
    /// about one each.
    #[test]
    fn only_equations_that_reach_back_make_up_the_deficit_before_a_symbol() {
        let seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = xorshift(seed);
        fn random_equation(d: &mut Decoder, first: u64, len: u64, next: &mut dyn FnMut() -> u64) {
            let coefficients: Vec<u8> = (0..len).map(|_| 1 + (next() % 255) as u8).collect();
            let data = combination(first, &coefficients);
            let _ = d.receive_combination(SymbolId(first), &coefficients, &data);
        }
        let (mut needed, mut made_up) = (0, 0);
        for round in 0..200 {
            let mut d = decoder(64);
            for id in 0..64 {
                if next() % 10 >= 3 {
                    d.receive_source(SymbolId(id), &source(id)).unwrap();
                }
            }
            for _ in 0..next() % 30 {
                let first = next() % 64;
                let len = 1 + next() % (64 - first);
                random_equation(&mut d, first, len, &mut next);
            }
            let context = format!("seed {seed:#x}, round {round}");
            assert_eq!(
                d.deficit_before(SymbolId(64)),
                d.missing() - d.rank() as u64,
                "{context}"
            );
            let boundary = next() % 65;
            let before = d.deficit_before(SymbolId(boundary));
            for _ in 0..20 {
                if boundary < 64 {
                    let first = boundary + next() % (64 - boundary);
                    if next().is_multiple_of(2) {
                        let _ = d.receive_source(SymbolId(first), &source(first));
                    } else {
                        let len = 1 + next() % (64 - first);
                        random_equation(&mut d, first, len, &mut next);
                    }
                }
                assert_eq!(d.deficit_before(SymbolId(boundary)), before, "{context}");
            }
            let mut left = before;
            let mut sent = 0;
            while left > 0 && sent < before + 3 {
                random_equation(&mut d, 0, boundary, &mut next);
                sent += 1;
                let now = d.deficit_before(SymbolId(boundary));
                assert!(now + 1 >= left, "{context}: {left} → {now}");
                left = now;
            }
            assert_eq!(left, 0, "{context}: {sent} equations for {before}");
            d.check_reduced_form();
            (needed, made_up) = (needed + before, made_up + sent);
        }
        assert!(
            needed > 200,
            "the rounds left too little to make up: {needed}"
        );
        assert!(made_up <= needed + needed / 50, "{made_up} for {needed}");
    }

    /// Two equations over the same two unknowns: the second one's arrival
    /// solves both, through elimination and the cascade that follows.
    #[test]
    fn decoding_cascades_through_the_rows() {
        let mut d = decoder(16);
        for (first, coefficients) in [(0u64, [1u8, 2, 3]), (0, [4, 5, 6]), (0, [7, 8, 10])] {
            let data = combination(first, &coefficients);
            d.receive_combination(SymbolId(first), &coefficients, &data)
                .unwrap();
            d.check_reduced_form();
        }
        assert_eq!(d.missing(), 0);
        for i in 0..3 {
            assert_eq!(d.symbol(SymbolId(i)), Some(&source(i)[..]));
        }
        assert_eq!(d.live_rows.len(), 0);
        assert_eq!(d.spare_rows.len(), 3, "row buffers are kept for reuse");
    }

    /// A source that is the pivot of a row makes the row pivot on its next
    /// unknown, which other rows must then lose.
    #[test]
    fn a_source_arriving_on_a_pivot_repivots_its_row() {
        let mut d = decoder(16);
        for coefficients in [[1u8, 2, 3, 4], [0, 5, 6, 7]] {
            let data = combination(0, &coefficients);
            d.receive_combination(SymbolId(0), &coefficients, &data)
                .unwrap();
        }
        d.check_reduced_form();
        assert_ne!(d.pivot(0), NO_ROW);
        d.receive_source(SymbolId(0), &source(0)).unwrap();
        d.check_reduced_form();
        assert_eq!(d.rank(), 2);
        d.receive_source(SymbolId(3), &source(3)).unwrap();
        d.check_reduced_form();
        assert_eq!(d.missing(), 0);
        assert_eq!(d.symbol(SymbolId(1)), Some(&source(1)[..]));
        assert_eq!(d.symbol(SymbolId(2)), Some(&source(2)[..]));
    }

    /// Random sources and combinations over random spans, with consumes: the
    /// form holds after every step, and everything delivered is exact.
    #[test]
    fn random_streams_keep_the_reduced_form() {
        let seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = xorshift(seed);
        for round in 0..200 {
            let max_window = 1 + (next() % 40) as u16;
            let mut d = decoder(max_window);
            for _ in 0..150 {
                let base = d.base().0;
                let id = base + next() % u64::from(max_window);
                match next() % 8 {
                    0..=2 => {
                        let _ = d.receive_source(SymbolId(id), &source(id));
                    }
                    3..=6 => {
                        let room = base + u64::from(max_window) - id;
                        let len = 1 + (next() % room.min(12)) as usize;
                        let coefficients: Vec<u8> = (0..len)
                            .map(|_| {
                                if next().is_multiple_of(3) {
                                    0
                                } else {
                                    next() as u8
                                }
                            })
                            .collect();
                        let data = combination(id, &coefficients);
                        let _ = d.receive_combination(SymbolId(id), &coefficients, &data);
                    }
                    _ => d.consume(SymbolId(base + next() % 4)),
                }
                d.check_reduced_form();
                while let Some(id) = d.poll_decoded() {
                    assert_eq!(
                        d.symbol(id),
                        Some(&source(id.0)[..]),
                        "seed {seed:#x}, round {round}, symbol {id}"
                    );
                }
            }
        }
    }

    /// Memory follows the window in use: a long stream with losses and
    /// repairs holds a few pages and rows, and nothing once consumed.
    #[test]
    fn memory_follows_the_window_in_use() {
        let mut d = decoder(4096);
        let mut next = xorshift(7);
        let mut peak = 0;
        let block = 16u64;
        for start in (0..50_000u64).step_by(block as usize) {
            // A block with one symbol lost, repaired by a combination.
            let lost = start + next() % block;
            for id in start..start + block {
                if id != lost {
                    d.receive_source(SymbolId(id), &source(id)).unwrap();
                }
            }
            let coefficients: Vec<u8> = (0..block).map(|i| 1 + (i % 200) as u8).collect();
            let data = combination(start, &coefficients);
            d.receive_combination(SymbolId(start), &coefficients, &data)
                .unwrap();
            assert_eq!(d.symbol(SymbolId(lost)), Some(&source(lost)[..]));
            peak = peak.max(d.allocated_bytes());
            d.consume(SymbolId(start + block));
        }
        let rows = MAX_SPARE_ROWS * (block as usize + SIZE);
        assert!(
            peak <= 4096 + 4096 * 4 + 3 * 32 * SIZE + rows,
            "peak {peak}"
        );
        assert_eq!(
            d.allocated_bytes(),
            4096,
            "only the per-slot known flags are left"
        );
    }
}
