//! NVDLA register definitions: units, their base addresses per hardware generation, and the
//! register offsets and bit fields inside each unit.
//!
//! The configuration space bus (CSB) of NVDLA is one flat 32-bit register aperture divided
//! into 4 KiB units: the global unit (GLB: interrupt mask, set and status), the memory
//! interfaces (MCIF for DRAM, CVIF for on-chip CV-SRAM), and one unit per engine stage:
//! BDMA; the convolution pipeline CDMA → CSC → CMAC_A/CMAC_B → CACC; SDP and its read DMA
//! SDP_RDMA; PDP/PDP_RDMA; CDP/CDP_RDMA; RUBIK.
//!
//! Inside a unit, the register layout is the same on every generation. Registers named
//! `S_*` are *single* (status, pointers, LUT access); registers named `D_*` are *doubled*:
//! each unit has two copies ("register groups" 0 and 1), and `S_POINTER.PRODUCER` selects
//! which copy CSB writes reach. That is what lets software program the next operation while
//! the hardware runs the current one (see [`crate::engine`]).
//!
//! What differs between generations is only where each unit starts:
//!
//! | unit      | v1 (nv_full) | v2 (nv_small, nv_large) |
//! |-----------|--------------|-------------------------|
//! | CFGROM    | —            | 0x0_0000                |
//! | GLB       | 0x0_0000     | 0x0_1000                |
//! | MCIF      | 0x0_2000     | 0x0_2000                |
//! | CVIF      | 0x0_3000     | 0x0_F000                |
//! | BDMA      | 0x0_4000     | 0x1_0000                |
//! | CDMA      | 0x0_5000     | 0x0_3000                |
//! | CSC       | 0x0_6000     | 0x0_4000                |
//! | CMAC_A    | 0x0_7000     | 0x0_5000                |
//! | CMAC_B    | 0x0_8000     | 0x0_6000                |
//! | CACC      | 0x0_9000     | 0x0_7000                |
//! | SDP_RDMA  | 0x0_A000     | 0x0_8000                |
//! | SDP       | 0x0_B000     | 0x0_9000                |
//! | PDP_RDMA  | 0x0_C000     | 0x0_A000                |
//! | PDP       | 0x0_D000     | 0x0_B000                |
//! | CDP_RDMA  | 0x0_E000     | 0x0_C000                |
//! | CDP       | 0x0_F000     | 0x0_D000                |
//! | GEC       | —            | 0x0_E000                |
//! | RUBIK     | 0x1_0000     | 0x1_1000                |
//!
//! nv_small and nv_large share the v2 map (NVIDIA's firmware builds both from
//! `opendla_small.h`); they differ in which units are populated and in their parameters (see
//! [`crate::config`]). The v2 manuals also widen some fields (addresses and strides that v1
//! declares as bits 31:5, entry-per-slice, bank counts); the field definitions in [`map`]
//! are v2's, which contain v1's: software writes them identically on both generations.
//!
//! The register map itself is `nvdla-hw`'s (`nvdla_hw::regs`, generated from NVIDIA's
//! register manuals by `hw/gen`); this module only names it the way the processors use it.

/// The NVDLA register map: per unit, one `u32` byte-offset constant per register and a
/// tock-registers bitfield module of the same name. A re-export of `nvdla_hw::regs::v2`
/// (constants only: nothing here is a runtime table), whose offsets and fields hold for v1
/// too (same offsets inside each unit; v2's fields contain v1's).
pub mod map {
    pub use nvdla_hw::regs::v2::{
        bdma, cacc, cdma, cdp, cdp_rdma, cmac_a, cmac_b, csc, cvif, glb, mcif, pdp, pdp_rdma,
        rbk as rubik, sdp, sdp_rdma,
    };
}

pub use map::*;

/// The hardware generation, which selects the register map: [`nvdla_hw::Generation`]
/// (`V1`: nv_full, `opendla_initial.h`; `V2`: every other build, `opendla_small.h`).
pub use nvdla_hw::Generation as HwVersion;

/// One CSB unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Block {
    /// Global: version, interrupt mask/set/status.
    Glb,
    /// DRAM memory interface.
    Mcif,
    /// CV-SRAM memory interface.
    Cvif,
    /// Bridge DMA.
    Bdma,
    /// Convolution DMA.
    Cdma,
    /// Convolution sequence controller.
    Csc,
    /// Convolution MAC array, first half.
    CmacA,
    /// Convolution MAC array, second half.
    CmacB,
    /// Convolution accumulator.
    Cacc,
    /// SDP read DMA.
    SdpRdma,
    /// Single data point processor.
    Sdp,
    /// PDP read DMA.
    PdpRdma,
    /// Planar data processor.
    Pdp,
    /// CDP read DMA.
    CdpRdma,
    /// Channel data processor.
    Cdp,
    /// Data reshape engine.
    Rubik,
}

impl Block {
    /// Byte offset of this unit in the CSB aperture of hardware generation `v` (from
    /// `nvdla_hw::regs`).
    pub const fn base(self, v: HwVersion) -> u32 {
        use nvdla_hw::regs::{v1, v2};
        match v {
            HwVersion::V1 => match self {
                Block::Glb => v1::glb::BASE,
                Block::Mcif => v1::mcif::BASE,
                Block::Cvif => v1::cvif::BASE,
                Block::Bdma => v1::bdma::BASE,
                Block::Cdma => v1::cdma::BASE,
                Block::Csc => v1::csc::BASE,
                Block::CmacA => v1::cmac_a::BASE,
                Block::CmacB => v1::cmac_b::BASE,
                Block::Cacc => v1::cacc::BASE,
                Block::SdpRdma => v1::sdp_rdma::BASE,
                Block::Sdp => v1::sdp::BASE,
                Block::PdpRdma => v1::pdp_rdma::BASE,
                Block::Pdp => v1::pdp::BASE,
                Block::CdpRdma => v1::cdp_rdma::BASE,
                Block::Cdp => v1::cdp::BASE,
                Block::Rubik => v1::rbk::BASE,
            },
            HwVersion::V2 => match self {
                Block::Glb => v2::glb::BASE,
                Block::Mcif => v2::mcif::BASE,
                Block::Cvif => v2::cvif::BASE,
                Block::Bdma => v2::bdma::BASE,
                Block::Cdma => v2::cdma::BASE,
                Block::Csc => v2::csc::BASE,
                Block::CmacA => v2::cmac_a::BASE,
                Block::CmacB => v2::cmac_b::BASE,
                Block::Cacc => v2::cacc::BASE,
                Block::SdpRdma => v2::sdp_rdma::BASE,
                Block::Sdp => v2::sdp::BASE,
                Block::PdpRdma => v2::pdp_rdma::BASE,
                Block::Pdp => v2::pdp::BASE,
                Block::CdpRdma => v2::cdp_rdma::BASE,
                Block::Cdp => v2::cdp::BASE,
                Block::Rubik => v2::rbk::BASE,
            },
        }
    }

    /// Every unit, in v1 address order.
    pub const ALL: [Block; 16] = [
        Block::Glb,
        Block::Mcif,
        Block::Cvif,
        Block::Bdma,
        Block::Cdma,
        Block::Csc,
        Block::CmacA,
        Block::CmacB,
        Block::Cacc,
        Block::SdpRdma,
        Block::Sdp,
        Block::PdpRdma,
        Block::Pdp,
        Block::CdpRdma,
        Block::Cdp,
        Block::Rubik,
    ];

    /// The unit that CSB byte offset `offset` falls in on generation `v`, and the offset
    /// inside it; `None` for an address outside every unit (CFGROM and GEC on v2 included).
    pub fn decode(v: HwVersion, offset: u32) -> Option<(Block, u32)> {
        let page = offset & !0xfff;
        Block::ALL
            .iter()
            .find(|b| b.base(v) == page)
            .map(|&b| (b, offset & 0xfff))
    }

    /// Upper-case name as in the hardware manuals.
    pub const fn name(self) -> &'static str {
        match self {
            Block::Glb => "GLB",
            Block::Mcif => "MCIF",
            Block::Cvif => "CVIF",
            Block::Bdma => "BDMA",
            Block::Cdma => "CDMA",
            Block::Csc => "CSC",
            Block::CmacA => "CMAC_A",
            Block::CmacB => "CMAC_B",
            Block::Cacc => "CACC",
            Block::SdpRdma => "SDP_RDMA",
            Block::Sdp => "SDP",
            Block::PdpRdma => "PDP_RDMA",
            Block::Pdp => "PDP",
            Block::CdpRdma => "CDP_RDMA",
            Block::Cdp => "CDP",
            Block::Rubik => "RBK",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_match_the_headers() {
        // Spot checks against opendla_initial.h / opendla_small.h absolute addresses.
        assert_eq!(Block::Glb.base(HwVersion::V1) + glb::S_INTR_STATUS, 0x000c);
        assert_eq!(Block::Glb.base(HwVersion::V2) + glb::S_INTR_MASK, 0x1004);
        assert_eq!(
            Block::Bdma.base(HwVersion::V1) + bdma::CFG_SRC_ADDR_LOW,
            0x4000
        );
        assert_eq!(Block::Bdma.base(HwVersion::V2) + bdma::STATUS, 0x10040);
        assert_eq!(Block::Cdma.base(HwVersion::V1) + cdma::S_STATUS, 0x5000);
        assert_eq!(Block::Cdma.base(HwVersion::V2) + cdma::D_MISC_CFG, 0x3014);
        assert_eq!(Block::Sdp.base(HwVersion::V1) + sdp::S_POINTER, 0xb004);
        assert_eq!(Block::Rubik.base(HwVersion::V2), 0x11000);
    }

    #[test]
    fn fields_compose() {
        let v = cdma::D_MISC_CFG::CONV_MODE::WINOGRAD
            + cdma::D_MISC_CFG::IN_PRECISION::FP16
            + cdma::D_MISC_CFG::PROC_PRECISION.val(1);
        assert_eq!(v.value, 1 | (2 << 8) | (1 << 12));
        assert_eq!(glb::S_INTR_STATUS::CACC_DONE_STATUS1.mask << 21, 1 << 21);
    }

    #[test]
    fn decode_finds_units() {
        assert_eq!(Block::decode(HwVersion::V1, 0xb004), Some((Block::Sdp, 4)));
        assert_eq!(Block::decode(HwVersion::V2, 0xb004), Some((Block::Pdp, 4)));
        assert_eq!(Block::decode(HwVersion::V2, 0x0000), None);
    }
}
