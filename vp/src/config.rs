//! The hardware configuration the model implements.
//!
//! NVDLA is a parameterised design: the same RTL is built with different atomic sizes,
//! convolution-buffer geometry and optional units. The parameters of every published
//! build (nv_full on `nvdla/hw` branch `nvdlav1`; nv_large, nv_medium_1024_full,
//! nv_medium_512, nv_small, nv_small_256 and nv_small_256_full on `master`) are
//! [`nvdla_hw`]'s, generated from `spec/defs/<build>.spec`; everything in the model reads
//! them through [`HwConfig::hw`] instead of testing the configuration by name.
//!
//! One model policy is layered on top: precisions. The v2 specs build their datapath
//! int8-only, but NVIDIA's C model (`cmod/`, the engine of NVIDIA's virtual platform) has
//! no precision gating: it computes int16 and fp16 in every build, and NVIDIA's compiler
//! emits fp16 networks for v2 targets. The model follows the C model by default
//! ([`HwConfig::new`]); [`HwConfig::as_built`] models the silicon's precisions instead.

use std::fmt;
use std::str::FromStr;

use crate::engines::Precision;

/// Register-map generation of the hardware: [`nvdla_hw::Generation`].
pub type HwVersion = nvdla_hw::Generation;

/// The precisions the model computes, which may exceed the build's own (see the module
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelPrecisions {
    /// int16 feature data.
    pub int16: bool,
    /// fp16 feature data.
    pub fp16: bool,
}

/// One modelled build: its parameters and the model's precision policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwConfig {
    /// The build's parameters: geometry, units, throughputs.
    pub hw: &'static nvdla_hw::Config,
    /// The precisions the model computes (int8 always).
    pub precisions: ModelPrecisions,
}

impl HwConfig {
    /// `hw` as NVIDIA's C model computes it: int8, int16 and fp16 in every build.
    pub const fn new(hw: &'static nvdla_hw::Config) -> Self {
        HwConfig {
            hw,
            precisions: ModelPrecisions {
                int16: true,
                fp16: true,
            },
        }
    }

    /// `hw` with the precisions of its spec only (int8 alone on the v2 builds).
    pub const fn as_built(hw: &'static nvdla_hw::Config) -> Self {
        HwConfig {
            hw,
            precisions: ModelPrecisions {
                int16: hw.features.int16,
                fp16: hw.features.fp16,
            },
        }
    }

    /// Every published build, as [`HwConfig::new`] models it, in [`nvdla_hw::ALL`]'s order.
    pub fn all() -> impl Iterator<Item = HwConfig> {
        nvdla_hw::ALL.iter().map(HwConfig::new)
    }

    /// Build name (`nv_full`, `nv_small`, ...).
    pub const fn name(&self) -> &'static str {
        self.hw.name
    }

    /// Register-map generation.
    pub const fn version(&self) -> HwVersion {
        self.hw.generation
    }

    /// Whether the model computes precision `p` for this configuration.
    pub const fn computes(&self, p: Precision) -> bool {
        match p {
            Precision::Int8 => true,
            Precision::Int16 => self.precisions.int16,
            Precision::Fp16 => self.precisions.fp16,
        }
    }
}

/// Error for an unknown configuration name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hardware configuration `{0}` (expected one of {names})", names = names())]
pub struct UnknownConfig(pub String);

/// The build names, comma-separated.
fn names() -> String {
    nvdla_hw::Config::names().collect::<Vec<_>>().join(", ")
}

impl FromStr for HwConfig {
    type Err = UnknownConfig;
    /// A build by name (upstream's `opendla-*` aliases included), as [`HwConfig::new`]
    /// models it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        nvdla_hw::Config::by_name(s)
            .map(HwConfig::new)
            .ok_or_else(|| UnknownConfig(s.to_string()))
    }
}

impl fmt::Display for HwConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.hw.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(HwConfig::all().count(), 7);
        for c in HwConfig::all() {
            assert_eq!(c.name().parse::<HwConfig>().unwrap(), c);
        }
        let e = "nv_huge".parse::<HwConfig>().unwrap_err().to_string();
        assert!(e.contains("nv_small_256_full"), "{e}");
    }

    #[test]
    fn the_c_model_policy_widens_precisions_only() {
        let small = HwConfig::new(&nvdla_hw::NV_SMALL);
        assert!(small.computes(Precision::Fp16) && small.computes(Precision::Int16));
        assert_eq!(small.hw.cbuf_bytes(), 128 * 1024);
        let silicon = HwConfig::as_built(&nvdla_hw::NV_SMALL);
        assert!(silicon.computes(Precision::Int8) && !silicon.computes(Precision::Fp16));
        let full = HwConfig::as_built(&nvdla_hw::NV_FULL);
        assert!(full.computes(Precision::Int16) && full.computes(Precision::Fp16));
        assert_eq!(full.hw.cbuf_bytes(), 512 * 1024);
    }
}
