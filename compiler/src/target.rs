//! The compilation target: one hardware configuration (from `nvdla-hw`) and a precision.
//!
//! Everything the lowering needs to know about the hardware is derived here from the
//! configuration table, so no pass tests a configuration by name.

use crate::error::{CompileError, Result};
use nvdla_hw::{Config, Generation};

/// Arithmetic precision of a compiled network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE half precision.
    Fp16,
    /// 8-bit integers with per-tensor scales.
    Int8,
}

impl Precision {
    /// Bytes per element.
    pub const fn bytes(self) -> u32 {
        match self {
            Precision::Fp16 => 2,
            Precision::Int8 => 1,
        }
    }
    /// The DLA interface's precision code (`PRECISION_*`).
    pub const fn dla(self) -> nvdla_loadable::dla::Precision {
        match self {
            Precision::Fp16 => nvdla_loadable::dla::Precision::Fp16,
            Precision::Int8 => nvdla_loadable::dla::Precision::Int8,
        }
    }
    /// Parse `fp16` / `int8`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fp16" => Some(Precision::Fp16),
            "int8" => Some(Precision::Int8),
            _ => None,
        }
    }
}

/// The published build called `name`; the error names `option` (the flag or argument
/// that gave it) and the known builds.
pub fn build_by_name(name: &str, option: &str) -> Result<&'static Config> {
    Config::by_name(name).ok_or_else(|| {
        CompileError::Option(format!(
            "unknown {option} `{name}` (known: {})",
            nvdla_hw::ALL
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// The precision called `name` (`fp16`, `int8`); the error names `option`.
pub fn precision_by_name(name: &str, option: &str) -> Result<Precision> {
    Precision::parse(name)
        .ok_or_else(|| CompileError::Option(format!("unknown {option} `{name}` (fp16 or int8)")))
}

/// A hardware configuration and the precision to compile for.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The hardware build.
    pub hw: &'static Config,
    /// Arithmetic precision.
    pub precision: Precision,
}

impl Target {
    /// A target; refuses int8 on a build without an int8 datapath. fp16 is accepted on
    /// every build: NVIDIA's compiler emits it for the int8-only v2 builds too, and
    /// NVIDIA's C model (like our virtual platform) computes it; see
    /// [`Target::precision_in_silicon`] for whether the silicon does.
    pub fn new(hw: &'static Config, precision: Precision) -> Result<Self> {
        let ok = match precision {
            Precision::Fp16 => true,
            Precision::Int8 => hw.features.int8,
        };
        if !ok {
            return Err(CompileError::Option(format!(
                "{} has no {:?} datapath (its precisions: {})",
                hw.name,
                precision,
                precisions(hw)
            )));
        }
        Ok(Self { hw, precision })
    }

    /// Whether the configuration's silicon computes this precision (false: only the C
    /// model and our virtual platform do).
    pub fn precision_in_silicon(&self) -> bool {
        match self.precision {
            Precision::Fp16 => self.hw.features.fp16,
            Precision::Int8 => self.hw.features.int8,
        }
    }

    /// Bytes per element.
    pub fn bpe(&self) -> u32 {
        self.precision.bytes()
    }

    /// Memory atom in bytes: the unit of channel packing.
    pub fn atom(&self) -> u32 {
        self.hw.memory_atomic
    }

    /// Channels per memory atom in a feature surface.
    pub fn channels_per_atom(&self) -> u32 {
        (self.atom() / self.bpe()).max(1)
    }

    /// The atom of a surface of precision `p`: the build's own for its precision; 32 bytes
    /// (the `FEATURE` format) for the half-precision network outputs an int8 build's CPU
    /// partitions write, which no engine reads.
    pub fn atom_of(&self, p: Precision) -> u32 {
        if p == self.precision {
            self.atom()
        } else {
            32
        }
    }

    /// Channels per atom of a surface of precision `p` ([`Self::atom_of`]).
    pub fn channels_per_atom_of(&self, p: Precision) -> u32 {
        (self.atom_of(p) / p.bytes()).max(1)
    }

    /// Bytes of one CBUF entry: a 64-channel 16-bit atom on v1 (`atomic_c * 2`), the bank
    /// width on v2 (hwarch "Convolution Buffer"; upstream's `bufEntryWidth`).
    pub fn cbuf_entry_bytes(&self) -> u32 {
        match self.hw.generation {
            Generation::V1 => self.hw.atomic_c * 2,
            Generation::V2 => self.hw.cbuf_bank_width,
        }
    }

    /// Entries of one CBUF bank.
    pub fn cbuf_entries_per_bank(&self) -> u32 {
        (self.hw.cbuf_bytes() / u64::from(self.hw.cbuf_banks) / u64::from(self.cbuf_entry_bytes()))
            as u32
    }

    /// Kernels per weight group: atomic K for int8, half of it for 16-bit data.
    pub fn kernels_per_group(&self) -> u32 {
        if self.bpe() == 1 {
            self.hw.atomic_k
        } else {
            (self.hw.atomic_k / 2).max(1)
        }
    }

    /// Channels per weight block (atomic C).
    pub fn weight_channel_block(&self) -> u32 {
        self.hw.atomic_c
    }

    /// CBUF entries one input line of `w` pixels and `c` channels takes in direct
    /// convolution of feature data: whole entries of atoms, and a trailing partial entry
    /// shared by neighbouring pixels (upstream `calculateEPS`; hwarch "Convolution
    /// Buffer").
    pub fn entries_per_slice(&self, w: u32, c: u32) -> u32 {
        let atoms = (c * self.bpe()).div_ceil(self.atom());
        let per_entry = (self.cbuf_entry_bytes() / self.atom()).max(1);
        let whole = atoms / per_entry * w;
        let last = atoms % per_entry;
        let frac = if last == 0 {
            0
        } else if last == 3 {
            w
        } else {
            (last * w).div_ceil(per_entry)
        };
        whole + frac
    }

    /// CBUF banks the whole weight set of `kernels` kernels of `bytes_per_kernel` takes.
    pub fn banks_for_weights(&self, kernels: u32, bytes_per_kernel: u32) -> u32 {
        let entry = u64::from(self.cbuf_entry_bytes());
        let total = (u64::from(kernels) * u64::from(bytes_per_kernel)).next_multiple_of(entry);
        (total / entry).div_ceil(u64::from(self.cbuf_entries_per_bank())) as u32
    }

    /// CBUF banks the weights of one kernel group take (the minimum to stream weights).
    pub fn min_banks_for_weights(&self, bytes_per_kernel: u32) -> u32 {
        self.banks_for_weights(self.kernels_per_group(), bytes_per_kernel)
    }
}

/// The precisions of a configuration, for messages.
pub fn precisions(hw: &Config) -> String {
    let f = &hw.features;
    let mut v = Vec::new();
    if f.int8 {
        v.push("int8");
    }
    if f.int16 {
        v.push("int16");
    }
    if f.fp16 {
        v.push("fp16");
    }
    v.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Target {
        Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap()
    }

    #[test]
    fn cbuf_geometry() {
        let t = full();
        assert_eq!(t.cbuf_entry_bytes(), 128);
        assert_eq!(t.cbuf_entries_per_bank(), 256);
        let s = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
        assert_eq!(s.cbuf_entry_bytes(), 8);
        assert_eq!(s.cbuf_entries_per_bank(), 512);
    }

    #[test]
    fn weight_banks_as_nvidia_lenet() {
        // NVIDIA's LeNet fp16 loadable for nv_full: conv2 (50 kernels of 5x5x20) takes
        // 2 banks, conv1 (image mode, 200 bytes per kernel, 20 kernels) 1.
        let t = full();
        assert_eq!(t.banks_for_weights(50, 1000), 2);
        assert_eq!(t.banks_for_weights(20, 200), 1);
        // ip1: 500 kernels of 4x4x50: more than the CBUF, one group of 16 takes 1 bank.
        assert_eq!(t.min_banks_for_weights(1600), 1);
    }

    #[test]
    fn entries_per_slice_feature() {
        let t = full();
        // 12 pixels of 20 fp16 channels: 2 atoms of 32 bytes in a 128-byte entry: w/2.
        assert_eq!(t.entries_per_slice(12, 20), 6);
        // 64 fp16 channels = 4 atoms = one whole entry per pixel.
        assert_eq!(t.entries_per_slice(7, 64), 7);
        // 3 atoms: one entry per pixel.
        assert_eq!(t.entries_per_slice(5, 48), 5);
        // 1 atom: a quarter entry per pixel.
        assert_eq!(t.entries_per_slice(5, 16), 2);
    }
}
