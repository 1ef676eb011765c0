//! The hardware configuration: which NVDLA build the firmware drives.
//!
//! NVDLA is a family of configurable designs. The register map depends only on the
//! generation ([`HwVersion`]); the rest — which engines are present, the memory atom size,
//! the optional features — comes from the build's parameters in [`nvdla_hw`], the one
//! description of every published build, chosen once at run time when the driver probes
//! the device (the `compatible` string of upstream's device tree: `nvidia,nv_full`
//! (`nvdla_os_initial`), `nvidia,nv_small`, `nvidia,nv_large`, ...).
//!
//! The firmware refuses an operation that needs a missing feature with
//! [`Error::FeatureAbsent`](crate::Error::FeatureAbsent) rather than programming registers
//! that do not exist.

pub use crate::regs::HwVersion;

/// An optional hardware feature that an operation may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Feature {
    /// The bridge DMA engine.
    Bdma,
    /// The Rubik reshape engine.
    Rubik,
    /// Compressed weights (WMB/WGS side data).
    WeightCompression,
    /// The second memory interface (CV-SRAM).
    Cvsram,
    /// The SDP lookup table.
    SdpLut,
    /// The SDP element-wise (Y) stage.
    SdpEw,
    /// Winograd convolution.
    Winograd,
    /// 16-bit integer and fp16 data (int8-only builds lack them).
    WidePrecision,
}

/// The build the firmware drives: its parameters, and whether int16/fp16 are accepted on
/// a build whose silicon is int8-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HwConfig {
    /// The build's parameters (a copy: reading them through a reference costs the
    /// scheduler about 1.4 KB of code on thumbv7em, the copy about 100 B of RAM).
    pub build: nvdla_hw::Config,
    /// Accept int16 and fp16 data even when the build is int8-only. Silicon of such a
    /// build has no wide datapath, so this is `false` for real hardware; a hardware model
    /// that computes every precision in every build (NVIDIA's C model, and `nvdla-vp`
    /// which follows it) sets it so that networks compiled for it run.
    pub model_wide_precision: bool,
}

impl HwConfig {
    /// The firmware for silicon of `build`.
    pub const fn new(build: &nvdla_hw::Config) -> Self {
        HwConfig {
            build: *build,
            model_wide_precision: false,
        }
    }

    /// The firmware for silicon of the build called `name` (`nv_full`, `nv_small`, ...,
    /// or upstream's `opendla-*` aliases).
    pub fn by_name(name: &str) -> Option<HwConfig> {
        nvdla_hw::Config::by_name(name).map(HwConfig::new)
    }

    /// Name of the build (`nv_full`, `nv_small`, ...).
    pub const fn name(&self) -> &'static str {
        self.build.name
    }

    /// Register map generation.
    pub const fn version(&self) -> HwVersion {
        self.build.generation
    }

    /// Smallest memory access in bytes (`MEMORY_ATOMIC_SIZE`); surfaces are aligned to it.
    pub const fn atom_size(&self) -> u32 {
        self.build.memory_atomic
    }

    /// Whether this build has `feature`.
    pub const fn has(&self, feature: Feature) -> bool {
        let f = &self.build.features;
        match feature {
            Feature::Bdma => f.bdma,
            Feature::Rubik => f.rubik,
            Feature::WeightCompression => f.weight_compression,
            Feature::Cvsram => f.cvif,
            Feature::SdpLut => f.sdp_lut,
            Feature::SdpEw => f.sdp_ew,
            Feature::Winograd => f.winograd,
            Feature::WidePrecision => (f.int16 && f.fp16) || self.model_wide_precision,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_follow_the_build() {
        let full = HwConfig::new(&nvdla_hw::NV_FULL);
        assert_eq!(full.version(), HwVersion::V1);
        assert_eq!(full.atom_size(), 32);
        for f in [
            Feature::Bdma,
            Feature::Rubik,
            Feature::WeightCompression,
            Feature::Cvsram,
            Feature::SdpLut,
            Feature::SdpEw,
            Feature::Winograd,
            Feature::WidePrecision,
        ] {
            assert!(full.has(f), "{f:?}");
        }
        let small = HwConfig::by_name("nv_small").unwrap();
        assert_eq!((small.version(), small.atom_size()), (HwVersion::V2, 8));
        assert!(!small.has(Feature::Bdma) && !small.has(Feature::Cvsram));
        assert!(!small.has(Feature::WidePrecision));
        let large = HwConfig::by_name("opendla-large").unwrap();
        assert_eq!(large.name(), "nv_large");
        assert!(large.has(Feature::Cvsram) && !large.has(Feature::WidePrecision));
        let model = HwConfig {
            model_wide_precision: true,
            ..large
        };
        assert!(model.has(Feature::WidePrecision) && !model.has(Feature::Rubik));
        for c in nvdla_hw::ALL {
            assert_eq!(HwConfig::by_name(c.name).map(|h| h.build), Some(*c));
        }
        assert!(HwConfig::by_name("nv_huge").is_none());
    }
}
