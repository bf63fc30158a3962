//! Region kernels and their runtime dispatch.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use super::{scalar, KERNEL_ENV};

#[cfg(target_arch = "x86_64")]
use super::{avx2, gfni, ssse3};

/// The instruction sets a region kernel can be built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// Portable table lookups; always available.
    Scalar,
    /// 128-bit split-nibble shuffles (`pshufb`).
    Ssse3,
    /// 256-bit split-nibble shuffles (`vpshufb`).
    Avx2,
    /// 256-bit `gf2p8affineqb` (needs GFNI and AVX2).
    Gfni256,
    /// 512-bit `gf2p8affineqb` (needs GFNI, AVX-512F and AVX-512BW).
    Gfni512,
}

impl KernelKind {
    /// Every kind, slowest first.
    pub const ALL: [KernelKind; 5] = [
        KernelKind::Scalar,
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
        }
    }

    /// Whether this CPU can run the kind (and this build contains it).
    ///
    /// The CPU is asked once per process; after that this is a load and a
    /// bit test.
    pub fn is_available(self) -> bool {
        static AVAILABLE: OnceLock<u8> = OnceLock::new();
        let mask = AVAILABLE.get_or_init(|| {
            KernelKind::ALL
                .into_iter()
                .filter(|kind| kind.cpu_supports())
                .fold(0, |mask, kind| mask | kind.bit())
        });
        mask & self.bit() != 0
    }

    /// This kind's bit in the cached availability mask.
    fn bit(self) -> u8 {
        1 << self as u8
    }

    /// Asks the CPU (and the operating system, which must save the wide
    /// registers) whether the kind's instructions can run.
    #[cfg(target_arch = "x86_64")]
    fn cpu_supports(self) -> bool {
        match self {
            KernelKind::Scalar => true,
            KernelKind::Ssse3 => is_x86_feature_detected!("ssse3"),
            KernelKind::Avx2 => is_x86_feature_detected!("avx2"),
            KernelKind::Gfni256 => {
                is_x86_feature_detected!("gfni") && is_x86_feature_detected!("avx2")
            }
            KernelKind::Gfni512 => {
                is_x86_feature_detected!("gfni")
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
            }
        }
    }

    /// Only the scalar kernel is built for other architectures.
    #[cfg(not(target_arch = "x86_64"))]
    fn cpu_supports(self) -> bool {
        self == KernelKind::Scalar
    }
}

impl fmt::Display for KernelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel name that is not one of [`KernelKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GF(2^8) kernel {0:?} (expected scalar, ssse3, avx2, gfni256 or gfni512)")]
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

/// Calls the region function `$op` of the kernel of kind `$kind`: the
/// function of that name in the kind's module.
///
/// Every caller has checked the regions' lengths first, as the SIMD functions
/// require.
macro_rules! dispatch {
    ($kind:expr, $op:ident($($arg:expr),*)) => {
        match $kind {
            KernelKind::Scalar => scalar::$op($($arg),*),
            #[cfg(target_arch = "x86_64")]
            KernelKind::Ssse3 => {
                // SAFETY: a `Kernel` of this kind is only made after the CPU
                // reported SSSE3; the caller has checked the lengths.
                unsafe { ssse3::$op($($arg),*) }
            }
            #[cfg(target_arch = "x86_64")]
            KernelKind::Avx2 => {
                // SAFETY: as above, for AVX2.
                unsafe { avx2::$op($($arg),*) }
            }
            #[cfg(target_arch = "x86_64")]
            KernelKind::Gfni256 => {
                // SAFETY: as above, for GFNI and AVX2.
                unsafe { gfni::ymm::$op($($arg),*) }
            }
            #[cfg(target_arch = "x86_64")]
            KernelKind::Gfni512 => {
                // SAFETY: as above, for GFNI, AVX-512F and AVX-512BW.
                unsafe { gfni::zmm::$op($($arg),*) }
            }
            // Elsewhere no `Kernel` of another kind is ever made.
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::$op($($arg),*),
        }
    };
}

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
        dispatch!(self.kind, xor(dst, src));
    }

    /// `dst = c·src`, byte by byte. With `c = 0` this zeroes `dst`, with
    /// `c = 1` it copies `src`.
    ///
    /// # Panics
    /// If the two regions differ in length.
    pub fn mul(self, dst: &mut [u8], src: &[u8], c: u8) {
        assert_eq!(dst.len(), src.len(), "region lengths differ");
        dispatch!(self.kind, mul(dst, src, c));
    }

    /// `dst ^= c·src`, byte by byte (multiply-add). With `c = 0` this does
    /// nothing, with `c = 1` it is [`xor`](Kernel::xor).
    ///
    /// # Panics
    /// If the two regions differ in length.
    pub fn mul_add(self, dst: &mut [u8], src: &[u8], c: u8) {
        assert_eq!(dst.len(), src.len(), "region lengths differ");
        dispatch!(self.kind, mul_add(dst, src, c));
    }

    /// `dst = Σ cᵢ·srcᵢ` over `sources` and `coefficients` taken in pairs,
    /// overwriting `dst`; with no sources, `dst` is zeroed. Each source byte
    /// is read once and each `dst` byte written once, however many sources;
    /// sources with coefficient 0 are not read, those with 1 not multiplied.
    ///
    /// # Panics
    /// If `sources` and `coefficients` differ in number, or a source differs
    /// in length from `dst`.
    pub fn dot_product(self, dst: &mut [u8], sources: &[&[u8]], coefficients: &[u8]) {
        check_dot_product(dst, sources, coefficients);
        dispatch!(self.kind, dot_product(dst, sources, coefficients, false));
    }

    /// `dst ^= Σ cᵢ·srcᵢ`: [`dot_product`](Kernel::dot_product) added to what
    /// `dst` holds, at the same cost. It is the decoder's elimination step:
    /// subtracting the known symbols' contributions from a repair symbol in
    /// one pass over it.
    ///
    /// # Panics
    /// As for [`dot_product`](Kernel::dot_product).
    pub fn dot_product_add(self, dst: &mut [u8], sources: &[&[u8]], coefficients: &[u8]) {
        check_dot_product(dst, sources, coefficients);
        dispatch!(self.kind, dot_product(dst, sources, coefficients, true));
    }
}

/// The shape checks of [`Kernel::dot_product`], on which the SIMD kernels'
/// memory safety rests.
fn check_dot_product(dst: &[u8], sources: &[&[u8]], coefficients: &[u8]) {
    assert_eq!(
        sources.len(),
        coefficients.len(),
        "one coefficient per source"
    );
    for source in sources {
        assert_eq!(source.len(), dst.len(), "region lengths differ");
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
