//! The hardware configuration: which NVDLA build the firmware drives.
//!
//! NVDLA is a family of configurable designs. The register map depends only on the
//! generation ([`HwVersion`]); the rest — which engines are present, the memory atom size,
//! the optional features — is a parameter table chosen once at run time, when the driver
//! probes the device (the `compatible` string of upstream's device tree: `nvidia,nv_full`
//! (`nvdla_os_initial`), `nvidia,nv_small`, `nvidia,nv_large`). The figures come from the
//! hardware project specs (`nvdla/hw` `spec/defs/*.spec`) and upstream's per-config driver
//! data.
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

/// Parameters of one NVDLA build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HwConfig {
    /// Name of the build (`nv_full`, `nv_small`, `nv_large`).
    pub name: &'static str,
    /// Register map generation.
    pub version: HwVersion,
    /// Smallest memory access in bytes (`MEMORY_ATOMIC_SIZE`); surfaces are aligned to it.
    pub atom_size: u32,
    /// BDMA is present.
    pub bdma: bool,
    /// RUBIK is present.
    pub rubik: bool,
    /// Weight compression is supported.
    pub weight_compression: bool,
    /// CV-SRAM (secondary memory interface) is present.
    pub cvsram: bool,
    /// The SDP has its lookup table.
    pub sdp_lut: bool,
    /// The SDP has the element-wise (Y) stage.
    pub sdp_ew: bool,
    /// Winograd convolution is supported.
    pub winograd: bool,
    /// int16 and fp16 data are supported (otherwise int8 only).
    pub wide_precision: bool,
}

impl HwConfig {
    /// NVDLA v1 "full": every engine and feature, 32-byte atoms.
    pub const NV_FULL: HwConfig = HwConfig {
        name: "nv_full",
        version: HwVersion::V1,
        atom_size: 32,
        bdma: true,
        rubik: true,
        weight_compression: true,
        cvsram: true,
        sdp_lut: true,
        sdp_ew: true,
        winograd: true,
        wide_precision: true,
    };

    /// NVDLA v2 "small": int8 only, 8-byte atoms, no BDMA, RUBIK, CV-SRAM, SDP LUT or EW.
    pub const NV_SMALL: HwConfig = HwConfig {
        name: "nv_small",
        version: HwVersion::V2,
        atom_size: 8,
        bdma: false,
        rubik: false,
        weight_compression: false,
        cvsram: false,
        sdp_lut: false,
        sdp_ew: false,
        winograd: false,
        wide_precision: false,
    };

    /// NVDLA v2 "large": int8 only, 32-byte atoms, CV-SRAM, no BDMA or RUBIK.
    pub const NV_LARGE: HwConfig = HwConfig {
        name: "nv_large",
        version: HwVersion::V2,
        atom_size: 32,
        bdma: false,
        rubik: false,
        weight_compression: false,
        cvsram: true,
        sdp_lut: true,
        sdp_ew: true,
        winograd: false,
        wide_precision: false,
    };

    /// The build called `name` (`nv_full`, `nv_small`, `nv_large`).
    pub fn by_name(name: &str) -> Option<HwConfig> {
        [Self::NV_FULL, Self::NV_SMALL, Self::NV_LARGE]
            .into_iter()
            .find(|c| c.name == name)
    }

    /// Whether this build has `feature`.
    pub fn has(&self, feature: Feature) -> bool {
        match feature {
            Feature::Bdma => self.bdma,
            Feature::Rubik => self.rubik,
            Feature::WeightCompression => self.weight_compression,
            Feature::Cvsram => self.cvsram,
            Feature::SdpLut => self.sdp_lut,
            Feature::SdpEw => self.sdp_ew,
            Feature::Winograd => self.winograd,
            Feature::WidePrecision => self.wide_precision,
        }
    }
}
