//! Which code a stream uses. All three are random linear codes over
//! GF(2^8) described by (window, repair key), so one encoder and one decoder
//! serve them and the protocol can switch between them.

use thiserror::Error;

use crate::rfc8681::{coding_coefficients, Density, InvalidDensity};

/// The density byte of an XOR parity repair. In RFC 8681's terms it is the
/// code over GF(2) (m = 1, the high nibble) with DT = 15 (the low nibble),
/// whose coefficients are all 1; the random codes over GF(2^8) use the bytes
/// 0x00..=0x0F, so the two never collide.
pub const XOR_PARITY_DENSITY: u8 = 0x1f;
use crate::{RepairKey, SymbolId, Window};

/// The code that turns source symbols into repair symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The sliding-window random linear code of RFC 8681 over GF(2^8): a
    /// repair symbol may cover any window, its coefficients drawn from the
    /// repair key. The default, and the code of Coded TCP (seed 003) without
    /// its block boundaries.
    SlidingWindow {
        /// RFC 8681 DT: the share of non-zero coefficients.
        density: Density,
    },
    /// XOR parity over a group of consecutive source symbols (every
    /// coefficient 1), as TCP-IR / TCP-dFEC send it (seed 002). One repair
    /// per group repairs one loss in the group; a second repair over the same
    /// group adds nothing.
    XorParity,
    /// Fixed blocks of `source` symbols, each protected by its own repair
    /// symbols, as LT-TCP and Coded TCP send them (seeds 000 and 003, blocks
    /// of 32). It is the sliding-window code restricted to the aligned
    /// windows `[j·source, (j+1)·source)`; how many repair symbols a block
    /// gets is the sender's policy, not the code's.
    Block {
        /// Source symbols per block (k).
        source: u16,
        /// RFC 8681 DT of the coefficients.
        density: Density,
    },
}

impl Default for Code {
    fn default() -> Code {
        Code::SlidingWindow {
            density: Density::FULL,
        }
    }
}

/// A repair symbol that its code does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CodeError {
    /// The window holds no symbol.
    #[error("window {0} is empty")]
    EmptyWindow(Window),
    /// In block mode, a window that is not one whole block.
    #[error("window {window} is not a block of {block} symbols")]
    NotABlock {
        /// The window asked for.
        window: Window,
        /// Source symbols per block.
        block: u16,
    },
    /// A block mode with blocks of zero symbols.
    #[error("blocks must hold at least one source symbol")]
    EmptyBlock,
}

impl Code {
    /// Checks that the code can describe a repair symbol over `window`.
    pub fn check_window(&self, window: Window) -> Result<(), CodeError> {
        if window.len == 0 {
            return Err(CodeError::EmptyWindow(window));
        }
        if let Code::Block { source, .. } = *self {
            if source == 0 {
                return Err(CodeError::EmptyBlock);
            }
            if window.len != source || !window.first.0.is_multiple_of(u64::from(source)) {
                return Err(CodeError::NotABlock {
                    window,
                    block: source,
                });
            }
        }
        Ok(())
    }

    /// Fills `out` (one byte per symbol of `window`, oldest first) with the
    /// coefficients of the repair symbol over `window` with `key`.
    ///
    /// # Panics
    /// If `out` is not `window.len` bytes long.
    pub fn coefficients(
        &self,
        window: Window,
        key: RepairKey,
        out: &mut [u8],
    ) -> Result<(), CodeError> {
        assert_eq!(
            out.len(),
            usize::from(window.len),
            "one coefficient per symbol"
        );
        self.check_window(window)?;
        match *self {
            Code::SlidingWindow { density } | Code::Block { density, .. } => {
                coding_coefficients(key, density, out);
            }
            Code::XorParity => out.fill(1),
        }
        Ok(())
    }

    /// The byte a repair symbol carries to name its coefficients: RFC 8681's
    /// density DT (0..=15) for the random codes, whose coefficients are
    /// GF(2^8) elements drawn from the key; [`XOR_PARITY_DENSITY`] for XOR
    /// parity.
    pub fn density_byte(&self) -> u8 {
        match *self {
            Code::SlidingWindow { density } | Code::Block { density, .. } => density.get(),
            Code::XorParity => XOR_PARITY_DENSITY,
        }
    }

    /// The code a receiver rebuilds a repair's coefficients with, from its
    /// density byte: any window, so a block repair decodes as a
    /// sliding-window one whose window is the block (the coefficients are
    /// the same).
    pub fn from_density_byte(byte: u8) -> Result<Code, InvalidDensity> {
        if byte == XOR_PARITY_DENSITY {
            return Ok(Code::XorParity);
        }
        Ok(Code::SlidingWindow {
            density: Density::new(byte)?,
        })
    }

    /// In block mode, the block that holds `id`; `None` for the other codes.
    pub fn block_of(&self, id: SymbolId) -> Option<Window> {
        match *self {
            Code::Block { source, .. } if source > 0 => {
                let first = id.0 - id.0 % u64::from(source);
                Some(Window::new(SymbolId(first), source))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_mode_accepts_whole_aligned_blocks_only() {
        let code = Code::Block {
            source: 32,
            density: Density::FULL,
        };
        assert_eq!(code.check_window(Window::new(SymbolId(64), 32)), Ok(()));
        assert!(code.check_window(Window::new(SymbolId(65), 32)).is_err());
        assert!(code.check_window(Window::new(SymbolId(64), 31)).is_err());
        assert_eq!(
            code.block_of(SymbolId(95)),
            Some(Window::new(SymbolId(64), 32))
        );
        assert_eq!(
            code.block_of(SymbolId(96)),
            Some(Window::new(SymbolId(96), 32))
        );
    }

    #[test]
    fn xor_parity_coefficients_are_all_one() {
        let mut out = [0u8; 7];
        Code::XorParity
            .coefficients(Window::new(SymbolId(3), 7), RepairKey(99), &mut out)
            .unwrap();
        assert_eq!(out, [1; 7]);
    }

    #[test]
    fn the_density_byte_names_the_code_both_ways() {
        for code in [
            Code::default(),
            Code::XorParity,
            Code::SlidingWindow {
                density: Density::new(3).unwrap(),
            },
        ] {
            assert_eq!(Code::from_density_byte(code.density_byte()), Ok(code));
        }
        assert_eq!(Code::XorParity.density_byte(), 0x1f);
        assert_eq!(Code::from_density_byte(0x10), Err(InvalidDensity(0x10)));
        assert_eq!(Code::from_density_byte(0x20), Err(InvalidDensity(0x20)));
    }

    #[test]
    fn an_empty_window_is_refused() {
        let mut out = [];
        assert_eq!(
            Code::default().coefficients(Window::new(SymbolId(0), 0), RepairKey(0), &mut out),
            Err(CodeError::EmptyWindow(Window::new(SymbolId(0), 0)))
        );
    }
}
