//! Hardware configurations.
//!
//! NVDLA is a parameterised design: the same RTL is built with different atomic sizes,
//! convolution-buffer geometry and optional units. The three builds modelled here are
//! `nv_full` (NVDLA v1, branch `nvdlav1` of `nvdla/hw`) and `nv_large`, `nv_small`
//! (NVDLA v2, branch `master`). Every number below comes from `spec/defs/<config>.spec`
//! of that branch; everything else in the model reads this table instead of testing the
//! configuration by name.

use std::fmt;
use std::str::FromStr;

/// Register-map generation of the hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HwVersion {
    /// NVDLA v1 (nv_full): GLB at CSB 0x0000, BDMA at 0x4000, no CFGROM.
    V1,
    /// NVDLA v2 (nv_small, nv_large): CFGROM at 0x0000, GLB at 0x1000.
    V2,
}

/// Optional units and datapath features of one build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// Bridge DMA (`BDMA_ENABLE`).
    pub bdma: bool,
    /// RUBIK reshape engine (`RUBIK_ENABLE`).
    pub rubik: bool,
    /// Channel data processor, LRN (`CDP_ENABLE`).
    pub cdp: bool,
    /// Planar data processor, pooling (`PDP_ENABLE`).
    pub pdp: bool,
    /// SDP lookup table in the Y unit (`SDP_LUT_ENABLE`).
    pub sdp_lut: bool,
    /// SDP X1 (BS) unit (`SDP_BS_ENABLE`).
    pub sdp_bs: bool,
    /// SDP X2 (BN) unit (`SDP_BN_ENABLE`).
    pub sdp_bn: bool,
    /// SDP Y (EW) unit (`SDP_EW_ENABLE`).
    pub sdp_ew: bool,
    /// Secondary memory interface to on-chip SRAM through CVIF (`SECONDARY_MEMIF_ENABLE`).
    pub cvif: bool,
    /// int16 feature data (v1 only; v2 specs define `FEATURE_DATA_TYPE_INT8`).
    pub int16: bool,
    /// fp16 feature data (v1 only).
    pub fp16: bool,
    /// Winograd convolution (`WINOGRAD_ENABLE`).
    pub winograd: bool,
    /// Weight compression (`WEIGHT_COMPRESSION_ENABLE`).
    pub weight_compression: bool,
    /// Batch mode (`BATCH_ENABLE`).
    pub batch: bool,
}

/// Elements per cycle of the post-processing units (`*_THROUGHPUT_*`); reported in
/// CFGROM on v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throughput {
    /// SDP X1 (`SDP_BS_THROUGHPUT`).
    pub sdp_bs: u32,
    /// SDP X2 (`SDP_BN_THROUGHPUT`).
    pub sdp_bn: u32,
    /// SDP Y (`SDP_EW_THROUGHPUT`, 0 when absent).
    pub sdp_ew: u32,
    /// PDP (`PDP_THROUGHPUT`).
    pub pdp: u32,
    /// CDP (`CDP_THROUGHPUT`).
    pub cdp: u32,
}

/// One hardware build: geometry and feature set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwConfig {
    /// Build name (`nv_full`, `nv_large`, `nv_small`).
    pub name: &'static str,
    /// Register-map generation.
    pub version: HwVersion,
    /// MAC atomic C: input channels consumed per MAC cycle (`MAC_ATOMIC_C_SIZE_*`).
    pub atomic_c: u32,
    /// MAC atomic K: output kernels per MAC cycle (`MAC_ATOMIC_K_SIZE_*`).
    pub atomic_k: u32,
    /// Memory atom in bytes: the unit of every DMA and of the channel packing of a
    /// feature cube (`MEMORY_ATOMIC_SIZE_*`).
    pub memory_atomic: u32,
    /// Convolution buffer banks (`CBUF_BANK_NUMBER_*`).
    pub cbuf_banks: u32,
    /// Convolution buffer bank width in bytes (`CBUF_BANK_WIDTH_*`).
    pub cbuf_bank_width: u32,
    /// Convolution buffer bank depth in entries (`CBUF_BANK_DEPTH_*`).
    pub cbuf_bank_depth: u32,
    /// Memory address width in bits (`MEM_ADDRESS_WIDTH_*`; v1 has a 64-bit AXI address).
    pub mem_address_width: u32,
    /// Optional units and datapath features.
    pub features: Features,
    /// Post-processing throughputs.
    pub throughput: Throughput,
}

impl HwConfig {
    /// `nv_full`: `nvdlav1:spec/defs/nv_full.spec`.
    pub fn nv_full() -> Self {
        HwConfig {
            name: "nv_full",
            version: HwVersion::V1,
            atomic_c: 64,
            atomic_k: 32,
            memory_atomic: 32,
            cbuf_banks: 16,
            cbuf_bank_width: 64,
            cbuf_bank_depth: 512,
            mem_address_width: 64,
            features: Features {
                bdma: true,
                rubik: true,
                cdp: true,
                pdp: true,
                sdp_lut: true,
                sdp_bs: true,
                sdp_bn: true,
                sdp_ew: true,
                cvif: true,
                int16: true,
                fp16: true,
                winograd: true,
                weight_compression: true,
                batch: true,
            },
            throughput: Throughput {
                sdp_bs: 16,
                sdp_bn: 16,
                sdp_ew: 4,
                pdp: 8,
                cdp: 8,
            },
        }
    }

    /// `nv_large`: `master:spec/defs/nv_large.spec`.
    pub fn nv_large() -> Self {
        HwConfig {
            name: "nv_large",
            version: HwVersion::V2,
            atomic_c: 64,
            atomic_k: 32,
            memory_atomic: 32,
            cbuf_banks: 16,
            cbuf_bank_width: 64,
            cbuf_bank_depth: 512,
            mem_address_width: 64,
            features: Features {
                bdma: false,
                rubik: false,
                cdp: true,
                pdp: true,
                sdp_lut: true,
                sdp_bs: true,
                sdp_bn: true,
                sdp_ew: true,
                cvif: true,
                // The spec builds this configuration int8-only, but NVIDIA's C model
                // (`cmod/`, the engine of NVIDIA's virtual platform) has no precision
                // gating: it computes int16 and fp16 in every build, and NVIDIA's compiler
                // emits fp16 networks for v2 targets. The model follows the C model; the
                // firmware's silicon table (nvdla_firmware::HwConfig) keeps int8-only, and
                // port::vp configures the firmware from this table.
                int16: true,
                fp16: true,
                winograd: false,
                weight_compression: false,
                batch: false,
            },
            throughput: Throughput {
                sdp_bs: 16,
                sdp_bn: 16,
                sdp_ew: 4,
                pdp: 8,
                cdp: 8,
            },
        }
    }

    /// `nv_small`: `master:spec/defs/nv_small.spec`.
    pub fn nv_small() -> Self {
        HwConfig {
            name: "nv_small",
            version: HwVersion::V2,
            atomic_c: 8,
            atomic_k: 8,
            memory_atomic: 8,
            cbuf_banks: 32,
            cbuf_bank_width: 8,
            cbuf_bank_depth: 512,
            mem_address_width: 32,
            features: Features {
                bdma: false,
                rubik: false,
                cdp: true,
                pdp: true,
                sdp_lut: false,
                sdp_bs: true,
                sdp_bn: true,
                sdp_ew: false,
                cvif: false,
                // The spec builds this configuration int8-only, but NVIDIA's C model
                // (`cmod/`, the engine of NVIDIA's virtual platform) has no precision
                // gating: it computes int16 and fp16 in every build, and NVIDIA's compiler
                // emits fp16 networks for v2 targets. The model follows the C model; the
                // firmware's silicon table (nvdla_firmware::HwConfig) keeps int8-only, and
                // port::vp configures the firmware from this table.
                int16: true,
                fp16: true,
                winograd: false,
                weight_compression: false,
                batch: false,
            },
            throughput: Throughput {
                sdp_bs: 1,
                sdp_bn: 1,
                sdp_ew: 0,
                pdp: 1,
                cdp: 1,
            },
        }
    }

    /// All known builds, in the order they are documented.
    pub fn all() -> [HwConfig; 3] {
        [Self::nv_full(), Self::nv_large(), Self::nv_small()]
    }

    /// Total convolution buffer size in bytes.
    pub fn cbuf_bytes(&self) -> u64 {
        u64::from(self.cbuf_banks)
            * u64::from(self.cbuf_bank_width)
            * u64::from(self.cbuf_bank_depth)
    }
}

/// Error for an unknown configuration name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hardware configuration `{0}` (expected nv_full, nv_large or nv_small)")]
pub struct UnknownConfig(pub String);

impl FromStr for HwConfig {
    type Err = UnknownConfig;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "nv_full" => Ok(Self::nv_full()),
            "nv_large" => Ok(Self::nv_large()),
            "nv_small" => Ok(Self::nv_small()),
            other => Err(UnknownConfig(other.to_string())),
        }
    }
}

impl fmt::Display for HwConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in HwConfig::all() {
            assert_eq!(c.name.parse::<HwConfig>().unwrap(), c);
        }
        assert!("nv_huge".parse::<HwConfig>().is_err());
    }

    #[test]
    fn cbuf_sizes_match_spec() {
        // nv_full / nv_large: 16 banks x 64 B x 512 = 512 KiB; nv_small: 32 x 8 x 512 = 128 KiB.
        assert_eq!(HwConfig::nv_full().cbuf_bytes(), 512 * 1024);
        assert_eq!(HwConfig::nv_small().cbuf_bytes(), 128 * 1024);
    }
}
