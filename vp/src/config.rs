//! The hardware configuration the model implements.
//!
//! NVDLA is a parameterised design: the same RTL is built with different atomic sizes,
//! convolution-buffer geometry and optional units. The parameters of every published
//! build (nv_full on `nvdla/hw` branch `nvdlav1`; nv_large, nv_medium_1024_full,
//! nv_medium_512, nv_small, nv_small_256 and nv_small_256_full on `master`) are
//! [`nvdla_hw`]'s, generated from `spec/defs/<build>.spec`; everything in the model reads
//! them through [`HwConfig::hw`] instead of testing the configuration by name.
//!
//! One model policy is layered on top, in two parts, both following NVIDIA's C model
//! (`cmod/`, the engine of NVIDIA's virtual platform), which has no build gating:
//! - precisions: the v2 specs build their datapath int8-only, but the C model computes
//!   int16 and fp16 in every build, and NVIDIA's compiler emits fp16 networks for v2
//!   targets;
//! - SDP units: the RTL of a build without `SDP_EW_ENABLE` (or `SDP_LUT_ENABLE`, `_BS_`,
//!   `_BN_`) bypasses that unit whatever its registers say (`cfg_ew_en <= 1'b0` in
//!   `vmod/nvdla/sdp/NV_NVDLA_SDP_core.v`), while the C model computes it, and the golden
//!   CRCs of the nv_small and nv_small_256 `sdp_*_ew_*` traces are the computed results
//!   (NVIDIA's own nv_small RTL test list, `verif/regression/testplans/
//!   nv_small_test_list_L1.py`, comments those four tests out).
//!
//! The model follows the C model by default ([`HwConfig::new`]); [`HwConfig::as_built`]
//! models the silicon instead (spec precisions; absent SDP units bypassed and their read
//! DMA channels off).

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

/// The SDP units the model computes, which may exceed the build's own (see the module
/// documentation). A unit not computed is bypassed, as the RTL bypasses a unit it was
/// built without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSdpUnits {
    /// X1 (BS).
    pub bs: bool,
    /// X2 (BN).
    pub bn: bool,
    /// Y (EW).
    pub ew: bool,
    /// The Y unit's lookup table.
    pub lut: bool,
}

/// One modelled build: its parameters and the model's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwConfig {
    /// The build's parameters: geometry, units, throughputs.
    pub hw: &'static nvdla_hw::Config,
    /// The precisions the model computes (int8 always).
    pub precisions: ModelPrecisions,
    /// The SDP units the model computes.
    pub sdp_units: ModelSdpUnits,
}

impl HwConfig {
    /// `hw` as NVIDIA's C model computes it: int8, int16 and fp16, and every SDP unit,
    /// in every build.
    pub const fn new(hw: &'static nvdla_hw::Config) -> Self {
        HwConfig {
            hw,
            precisions: ModelPrecisions {
                int16: true,
                fp16: true,
            },
            sdp_units: ModelSdpUnits {
                bs: true,
                bn: true,
                ew: true,
                lut: true,
            },
        }
    }

    /// `hw` as its RTL is built: the precisions of its spec only (int8 alone on the v2
    /// builds), and the SDP units it has (the others bypassed).
    pub const fn as_built(hw: &'static nvdla_hw::Config) -> Self {
        let f = &hw.features;
        HwConfig {
            hw,
            precisions: ModelPrecisions {
                int16: f.int16,
                fp16: f.fp16,
            },
            sdp_units: ModelSdpUnits {
                bs: f.sdp_bs,
                bn: f.sdp_bn,
                ew: f.sdp_ew,
                lut: f.sdp_lut,
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
    fn the_c_model_policy_widens_precisions_and_sdp_units_only() {
        let small = HwConfig::new(&nvdla_hw::NV_SMALL);
        assert!(small.computes(Precision::Fp16) && small.computes(Precision::Int16));
        assert_eq!(small.hw.cbuf_bytes(), 128 * 1024);
        let silicon = HwConfig::as_built(&nvdla_hw::NV_SMALL);
        assert!(silicon.computes(Precision::Int8) && !silicon.computes(Precision::Fp16));
        assert!(small.sdp_units.ew && small.sdp_units.lut);
        assert!(!silicon.sdp_units.ew && !silicon.sdp_units.lut && silicon.sdp_units.bn);
        let full = HwConfig::as_built(&nvdla_hw::NV_FULL);
        assert!(full.computes(Precision::Int16) && full.computes(Precision::Fp16));
        assert_eq!(full.hw.cbuf_bytes(), 512 * 1024);
    }
}
