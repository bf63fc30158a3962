//! The systematic sliding-window encoder: source symbols go out as they are;
//! repair symbols are combinations of any window of them.

use thiserror::Error;

use super::code::{Code, CodeError};
use super::pages::SymbolPages;
use super::MAX_SYMBOL_SIZE;
use crate::gf256::{kernel, Kernel};
use crate::{RepairKey, SymbolId, Window};

/// How an [`Encoder`] is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderConfig {
    /// Bytes per symbol, 1..=[`MAX_SYMBOL_SIZE`]. Shorter source data is
    /// padded with zeros; the true length of a short last symbol travels in
    /// the protocol, not in the code.
    pub symbol_size: usize,
    /// How many source symbols the encoder keeps until they are
    /// acknowledged; the widest window a repair symbol can cover.
    pub max_window: u16,
    /// The code repair symbols are made with.
    pub code: Code,
}

/// A configuration the encoder or decoder cannot work with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// A symbol size of 0 or above [`MAX_SYMBOL_SIZE`].
    #[error("symbol size {0} is out of range (1 to {MAX_SYMBOL_SIZE} bytes)")]
    SymbolSize(usize),
    /// A window of zero symbols.
    #[error("the maximum window must hold at least one symbol")]
    EmptyWindow,
    /// A block mode whose blocks do not fit in the window.
    #[error("blocks of {block} symbols do not fit in a window of {max_window}")]
    BlockTooLarge {
        /// Source symbols per block.
        block: u16,
        /// The configured maximum window.
        max_window: u16,
    },
}

impl EncoderConfig {
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        check_sizes(self.symbol_size, self.max_window, self.code)
    }
}

pub(super) fn check_sizes(
    symbol_size: usize,
    max_window: u16,
    code: Code,
) -> Result<(), ConfigError> {
    if symbol_size == 0 || symbol_size > MAX_SYMBOL_SIZE {
        return Err(ConfigError::SymbolSize(symbol_size));
    }
    if max_window == 0 {
        return Err(ConfigError::EmptyWindow);
    }
    if let Code::Block { source, .. } = code {
        if source == 0 || source > max_window {
            return Err(ConfigError::BlockTooLarge {
                block: source,
                max_window,
            });
        }
    }
    Ok(())
}

/// Why the encoder refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// Source data longer than a symbol.
    #[error("source data of {len} bytes does not fit in a symbol of {symbol_size}")]
    TooLong {
        /// Bytes offered.
        len: usize,
        /// The configured symbol size.
        symbol_size: usize,
    },
    /// Every slot holds an unacknowledged symbol.
    #[error("the encoder holds {0} unacknowledged symbols, its maximum window")]
    Full(u16),
    /// A repair window that reaches symbols the encoder does not hold.
    #[error("window {window} is outside the held symbols [{oldest}, {next})")]
    NotHeld {
        /// The window asked for.
        window: Window,
        /// The oldest symbol still held.
        oldest: SymbolId,
        /// The id the next pushed symbol will get.
        next: SymbolId,
    },
    /// The stream has used every id up to `u64::MAX`.
    #[error("the 64-bit symbol id space is used up")]
    IdsExhausted,
    /// An output buffer whose length is not the symbol size.
    #[error("repair buffer of {len} bytes, expected the symbol size {symbol_size}")]
    WrongSize {
        /// Bytes given.
        len: usize,
        /// The configured symbol size.
        symbol_size: usize,
    },
    /// The code does not allow this window.
    #[error(transparent)]
    Code(#[from] CodeError),
}

/// A systematic sliding-window encoder that keeps its source symbols in a
/// ring until they are acknowledged, and builds repair symbols over any
/// window of them straight from the ring, without copies.
///
/// ```
/// use ltx_coding::codec::{Code, Encoder, EncoderConfig};
/// use ltx_coding::{RepairKey, SymbolId, Window};
///
/// let mut encoder = Encoder::new(EncoderConfig { symbol_size: 4, max_window: 8, code: Code::default() })?;
/// let first = encoder.push(b"abcd")?;
/// encoder.push(b"ef")?; // padded with zeros
/// let mut repair = [0u8; 4];
/// encoder.repair(Window::new(first, 2), RepairKey(7), &mut repair)?;
/// encoder.acknowledge(SymbolId(2)); // both slots are free again
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Encoder {
    config: EncoderConfig,
    kernel: Kernel,
    /// `max_window` slots of `symbol_size` bytes; symbol `id` lives in slot
    /// `id % max_window`. Pages come and go with the symbols held.
    ring: SymbolPages,
    oldest: SymbolId,
    next: SymbolId,
    coefficients: Vec<u8>,
}

impl Encoder {
    /// An encoder whose first symbol will be [`SymbolId`] 0.
    pub fn new(config: EncoderConfig) -> Result<Encoder, ConfigError> {
        Encoder::starting_at(config, SymbolId(0))
    }

    /// An encoder whose first symbol will be `first`.
    pub fn starting_at(config: EncoderConfig, first: SymbolId) -> Result<Encoder, ConfigError> {
        config.check()?;
        Ok(Encoder {
            config,
            kernel: kernel(),
            ring: SymbolPages::new(config.symbol_size, usize::from(config.max_window)),
            oldest: first,
            next: first,
            coefficients: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EncoderConfig {
        &self.config
    }

    /// The oldest symbol still held.
    pub fn oldest(&self) -> SymbolId {
        self.oldest
    }

    /// The id the next pushed symbol will get.
    pub fn next_id(&self) -> SymbolId {
        self.next
    }

    /// How many symbols are held (pushed, not yet acknowledged).
    pub fn held(&self) -> u64 {
        self.next.0 - self.oldest.0
    }

    /// Adds a source symbol, zero-padded to the symbol size, and returns its id.
    pub fn push(&mut self, data: &[u8]) -> Result<SymbolId, EncodeError> {
        let size = self.config.symbol_size;
        if data.len() > size {
            return Err(EncodeError::TooLong {
                len: data.len(),
                symbol_size: size,
            });
        }
        if self.held() >= u64::from(self.config.max_window) {
            return Err(EncodeError::Full(self.config.max_window));
        }
        let id = self.next;
        let Some(next) = id.checked_add(1) else {
            return Err(EncodeError::IdsExhausted);
        };
        let slot = self.ring.hold(self.slot(id));
        slot[..data.len()].copy_from_slice(data);
        slot[data.len()..].fill(0);
        self.next = next;
        Ok(id)
    }

    /// Drops every symbol before `below`: the receiver has them.
    pub fn acknowledge(&mut self, below: SymbolId) {
        let oldest = self.oldest.max(below.min(self.next));
        for id in self.oldest.0..oldest.0 {
            self.ring.release(self.slot(SymbolId(id)));
        }
        self.oldest = oldest;
    }

    /// Bytes of symbol storage allocated now: it grows with the symbols
    /// held, a page at a time, and is given back as they are acknowledged.
    pub fn allocated_bytes(&self) -> usize {
        self.ring.allocated_bytes()
    }

    /// A held source symbol (padded to the symbol size).
    pub fn source(&self, id: SymbolId) -> Option<&[u8]> {
        if id < self.oldest || id >= self.next {
            return None;
        }
        Some(self.ring.get(self.slot(id)))
    }

    /// Writes into `out` the repair symbol over `window` with `key`, in the
    /// encoder's code.
    pub fn repair(
        &mut self,
        window: Window,
        key: RepairKey,
        out: &mut [u8],
    ) -> Result<(), EncodeError> {
        self.repair_with(self.config.code, window, key, out)
    }

    /// Writes into `out` the repair symbol over `window` with `key` in
    /// `code`, which may differ from the encoder's: a sender that mixes XOR
    /// parity with random linear repairs over the same held symbols asks
    /// for each in its own code.
    pub fn repair_with(
        &mut self,
        code: Code,
        window: Window,
        key: RepairKey,
        out: &mut [u8],
    ) -> Result<(), EncodeError> {
        let size = self.config.symbol_size;
        if out.len() != size {
            return Err(EncodeError::WrongSize {
                len: out.len(),
                symbol_size: size,
            });
        }
        let held = window.first >= self.oldest && window.end().is_some_and(|end| end <= self.next);
        if !held {
            return Err(EncodeError::NotHeld {
                window,
                oldest: self.oldest,
                next: self.next,
            });
        }
        self.coefficients.resize(usize::from(window.len), 0);
        code.coefficients(window, key, &mut self.coefficients)?;
        let terms = self
            .coefficients
            .iter()
            .zip(window.ids())
            .map(|(&c, id)| (c, self.ring.get(self.slot(id))));
        dot_product_terms(self.kernel, out, terms, false);
        Ok(())
    }

    fn slot(&self, id: SymbolId) -> usize {
        (id.0 % u64::from(self.config.max_window)) as usize
    }
}

/// Writes into `out` the repair symbol over `window` with `key`, reading the
/// window's source symbols from wherever the caller keeps them.
///
/// # Panics
/// If `sources` does not hold `window.len` symbols, or they and `out` differ
/// in length.
pub fn repair_from_sources(
    code: Code,
    window: Window,
    key: RepairKey,
    sources: &[&[u8]],
    out: &mut [u8],
) -> Result<(), CodeError> {
    assert_eq!(
        sources.len(),
        usize::from(window.len),
        "one source per window symbol"
    );
    let mut coefficients = vec![0u8; sources.len()];
    code.coefficients(window, key, &mut coefficients)?;
    kernel().dot_product(out, sources, &coefficients);
    Ok(())
}

/// Sources handed to the kernel's dot product in one call. They are gathered
/// on the stack, so that building a repair symbol or reducing an equation
/// allocates nothing; `dst` then goes through memory once per this many
/// sources, a small cost beside reading the sources themselves.
const DOT_BATCH: usize = 32;

/// `dst = Σ c·src` over `terms` (`dst ^= Σ c·src` if `accumulate`), through
/// the kernel's dot product, `DOT_BATCH` sources at a time.
///
/// Every source must be as long as `dst`.
pub(super) fn dot_product_terms<'a>(
    kernel: Kernel,
    dst: &mut [u8],
    terms: impl IntoIterator<Item = (u8, &'a [u8])>,
    mut accumulate: bool,
) {
    let mut sources: [&[u8]; DOT_BATCH] = [&[]; DOT_BATCH];
    let mut factors = [0u8; DOT_BATCH];
    let mut n = 0;
    for (c, source) in terms {
        if c == 0 {
            continue;
        }
        sources[n] = source;
        factors[n] = c;
        n += 1;
        if n == DOT_BATCH {
            flush(kernel, dst, &sources, &factors, accumulate);
            accumulate = true;
            n = 0;
        }
    }
    if n > 0 || !accumulate {
        flush(kernel, dst, &sources[..n], &factors[..n], accumulate);
    }
}

fn flush(kernel: Kernel, dst: &mut [u8], sources: &[&[u8]], factors: &[u8], accumulate: bool) {
    if accumulate {
        kernel.dot_product_add(dst, sources, factors);
    } else {
        kernel.dot_product(dst, sources, factors);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gf256;

    fn config(max_window: u16) -> EncoderConfig {
        EncoderConfig {
            symbol_size: 5,
            max_window,
            code: Code::default(),
        }
    }

    /// The batched dot product against the scalar definition, across batch
    /// boundaries, with zero coefficients skipped and `dst` kept or not.
    #[test]
    fn dot_product_terms_matches_the_definition() {
        let kernel = kernel();
        for count in [0, 1, 31, 32, 33, 64, 65, 100] {
            let sources: Vec<Vec<u8>> = (0..count)
                .map(|i| (0..37).map(|j| (i * 7 + j * 13 + 1) as u8).collect())
                .collect();
            let factors: Vec<u8> = (0..count).map(|i| (i * 11 % 5) as u8).collect();
            for accumulate in [false, true] {
                let mut want = vec![0x5Au8; 37];
                if !accumulate {
                    want.fill(0);
                }
                for (source, &c) in sources.iter().zip(&factors) {
                    for (w, &s) in want.iter_mut().zip(source) {
                        *w ^= gf256::mul(c, s);
                    }
                }
                let mut got = vec![0x5Au8; 37];
                let terms = factors
                    .iter()
                    .copied()
                    .zip(sources.iter().map(Vec::as_slice));
                dot_product_terms(kernel, &mut got, terms, accumulate);
                assert_eq!(got, want, "{count} sources, accumulate {accumulate}");
            }
        }
    }

    /// The ring reuses the slot of an acknowledged symbol, and what a repair
    /// reads is the symbol now in the slot.
    #[test]
    fn the_ring_wraps_onto_acknowledged_slots() {
        let mut encoder = Encoder::new(config(3)).unwrap();
        for i in 0..3u8 {
            encoder.push(&[i; 5]).unwrap();
        }
        assert_eq!(encoder.push(&[9; 5]), Err(EncodeError::Full(3)));
        encoder.acknowledge(SymbolId(2));
        assert_eq!(encoder.push(&[3; 5]), Ok(SymbolId(3)));
        assert_eq!(encoder.push(&[4; 5]), Ok(SymbolId(4)));
        assert_eq!(encoder.source(SymbolId(1)), None);
        assert_eq!(encoder.source(SymbolId(4)), Some(&[4u8; 5][..]));
        let in_use = encoder.allocated_bytes();
        assert!(in_use > 0);

        // Over the wrapped window [2, 5), the repair is Σ c·s from the slots.
        let window = Window::new(SymbolId(2), 3);
        let mut repair = [0u8; 5];
        encoder.repair(window, RepairKey(4), &mut repair).unwrap();
        assert_eq!(
            encoder.allocated_bytes(),
            in_use,
            "wrapping allocates nothing"
        );
        let mut c = [0u8; 3];
        Code::default()
            .coefficients(window, RepairKey(4), &mut c)
            .unwrap();
        let want = gf256::mul(c[0], 2) ^ gf256::mul(c[1], 3) ^ gf256::mul(c[2], 4);
        assert_eq!(repair, [want; 5]);
    }

    /// Acknowledging never runs ahead of what was pushed, nor backwards.
    #[test]
    fn acknowledge_is_clamped_to_the_held_symbols() {
        let mut encoder = Encoder::new(config(4)).unwrap();
        encoder.push(b"a").unwrap();
        encoder.push(b"b").unwrap();
        encoder.acknowledge(SymbolId(10));
        assert_eq!((encoder.oldest(), encoder.held()), (SymbolId(2), 0));
        encoder.acknowledge(SymbolId(1));
        assert_eq!(encoder.oldest(), SymbolId(2));
        assert_eq!(encoder.push(b"c"), Ok(SymbolId(2)));
    }

    /// Storage follows the symbols held: a stream many windows long holds
    /// a few pages, and nothing once everything is acknowledged.
    #[test]
    fn storage_follows_the_symbols_held() {
        let mut encoder = Encoder::new(config(4096)).unwrap();
        for i in 0..100_000u64 {
            encoder.push(&[i as u8; 5]).unwrap();
            if i >= 50 {
                encoder.acknowledge(SymbolId(i - 50));
            }
            assert!(encoder.allocated_bytes() <= 4 * 32 * 5);
        }
        encoder.acknowledge(encoder.next_id());
        assert_eq!(encoder.allocated_bytes(), 0);
    }
}
