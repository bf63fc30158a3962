//! Region kernels and their runtime dispatch.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use super::{scalar, KERNEL_ENV};

/// The instruction sets a region kernel can be built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// Portable table lookups; always available.
    Scalar,
    /// 128-bit split-nibble shuffles (`pshufb`).
    Ssse3,
    /// 256-bit split-nibble shuffles (`vpshufb`).
    Avx2,
    /// 256-bit `gf2p8affineqb`.
    Gfni256,
    /// 512-bit `gf2p8affineqb` (needs AVX-512BW).
    Gfni512,
    /// aarch64 128-bit table lookups (`tbl`).
    Neon,
}

impl KernelKind {
    /// Every kind, slowest first.
    pub const ALL: [KernelKind; 6] = [
        KernelKind::Scalar,
        KernelKind::Neon,
        KernelKind::Ssse3,
        KernelKind::Avx2,
        KernelKind::Gfni256,
        KernelKind::Gfni512,
    ];

    /// The name used in `LTX_GF_KERNEL`, benchmarks and logs.
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::Scalar => "scalar",
            KernelKind::Ssse3 => "ssse3",
            KernelKind::Avx2 => "avx2",
            KernelKind::Gfni256 => "gfni256",
            KernelKind::Gfni512 => "gfni512",
            KernelKind::Neon => "neon",
        }
    }

    /// Whether this CPU can run the kind (and this build contains it).
    pub fn is_available(self) -> bool {
        matches!(self, KernelKind::Scalar)
    }
}

impl fmt::Display for KernelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel name that is not one of [`KernelKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GF(2^8) kernel {0:?} (expected scalar, ssse3, avx2, gfni256, gfni512 or neon)")]
pub struct UnknownKernel(String);

impl FromStr for KernelKind {
    type Err = UnknownKernel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KernelKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| UnknownKernel(s.to_owned()))
    }
}

/// A kernel was asked for that this CPU cannot run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("GF(2^8) kernel {0} is not supported by this CPU or build")]
pub struct KernelUnavailable(pub KernelKind);

/// A region kernel that this CPU is known to support.
///
/// The only way to get one is through a check of the CPU's features, so the
/// SIMD paths it dispatches to never run on a CPU without the instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    kind: KernelKind,
}

impl Kernel {
    /// The portable kernel.
    pub fn scalar() -> Kernel {
        Kernel {
            kind: KernelKind::Scalar,
        }
    }

    /// The kernel of the given kind, if this CPU supports it.
    pub fn new(kind: KernelKind) -> Result<Kernel, KernelUnavailable> {
        if kind.is_available() {
            Ok(Kernel { kind })
        } else {
            Err(KernelUnavailable(kind))
        }
    }

    /// The fastest kernel this CPU supports.
    pub fn best() -> Kernel {
        KernelKind::ALL
            .into_iter()
            .rev()
            .find(|kind| kind.is_available())
            .map_or_else(Kernel::scalar, |kind| Kernel { kind })
    }

    /// Every kernel this CPU supports, slowest first.
    pub fn available() -> Vec<Kernel> {
        KernelKind::ALL
            .into_iter()
            .filter_map(|kind| Kernel::new(kind).ok())
            .collect()
    }

    /// Which instruction set the kernel uses.
    pub fn kind(self) -> KernelKind {
        self.kind
    }

    /// `dst ^= src`, byte by byte.
    ///
    /// # Panics
    /// If the two regions differ in length.
    pub fn xor(self, dst: &mut [u8], src: &[u8]) {
        assert_eq!(dst.len(), src.len(), "region lengths differ");
        scalar::xor(dst, src);
    }

    /// `dst = c·src`, byte by byte.
    ///
    /// # Panics
    /// If the two regions differ in length.
    pub fn mul(self, dst: &mut [u8], src: &[u8], c: u8) {
        assert_eq!(dst.len(), src.len(), "region lengths differ");
        scalar::mul_region(dst, src, c);
    }

    /// `dst ^= c·src`, byte by byte (multiply-add).
    ///
    /// # Panics
    /// If the two regions differ in length.
    pub fn mul_add(self, dst: &mut [u8], src: &[u8], c: u8) {
        assert_eq!(dst.len(), src.len(), "region lengths differ");
        scalar::mul_add(dst, src, c);
    }

    /// `dst = Σ cᵢ·srcᵢ`, reading each source once and writing `dst` once
    /// per cache-sized chunk rather than once per source.
    ///
    /// # Panics
    /// If `sources` and `coefficients` differ in number, or a source differs
    /// in length from `dst`.
    pub fn dot_product(self, dst: &mut [u8], sources: &[&[u8]], coefficients: &[u8]) {
        assert_eq!(sources.len(), coefficients.len(), "one coefficient per source");
        for source in sources {
            assert_eq!(source.len(), dst.len(), "region lengths differ");
        }
        dst.fill(0);
        for (source, &c) in sources.iter().zip(coefficients) {
            scalar::mul_add(dst, source, c);
        }
    }
}

impl Default for Kernel {
    fn default() -> Kernel {
        kernel()
    }
}

/// The process-wide kernel: chosen once, on first use, as the fastest the CPU
/// supports, unless `LTX_GF_KERNEL` names another.
///
/// # Panics
/// On first use, if `LTX_GF_KERNEL` names an unknown kernel or one this CPU
/// cannot run: a forced kernel that silently fell back would make benchmarks
/// and tests measure the wrong code.
pub fn kernel() -> Kernel {
    static CHOSEN: OnceLock<Kernel> = OnceLock::new();
    *CHOSEN.get_or_init(|| match std::env::var(KERNEL_ENV) {
        Ok(name) if !name.is_empty() => {
            let kind = name
                .parse::<KernelKind>()
                .unwrap_or_else(|e| panic!("{KERNEL_ENV}: {e}"));
            Kernel::new(kind).unwrap_or_else(|e| panic!("{KERNEL_ENV}: {e}"))
        }
        _ => Kernel::best(),
    })
}
