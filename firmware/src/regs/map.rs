//! The NVDLA register map: per-unit register offsets and bit fields.
//!
//! Generated from NVIDIA's `nvdla/sw` firmware headers `opendla_initial.h` (v1, nv_full)
//! and `opendla_small.h` (v2, nv_small/nv_large); do not edit by hand. Every constant is a
//! byte offset from the start of its unit (see [`super::Block`] for the unit bases, which
//! differ between v1 and v2); every register with fields also has a tock-registers
//! bitfield module of the same name. Where the two headers differ in a field's width
//! (v2 widened address, stride, byte-count, entry and bank fields), the wider v2 layout is
//! used: it is what software writes on both generations (v1 ignores the extra bits).
#![allow(missing_docs, clippy::all)]

/// Registers of the GLB unit.
pub mod glb {
    /// `GLB_S_NVDLA_HW_VERSION`.
    pub const S_NVDLA_HW_VERSION: u32 = 0x000;
    /// `GLB_S_INTR_MASK`.
    pub const S_INTR_MASK: u32 = 0x004;
    /// `GLB_S_INTR_SET`.
    pub const S_INTR_SET: u32 = 0x008;
    /// `GLB_S_INTR_STATUS`.
    pub const S_INTR_STATUS: u32 = 0x00c;
    tock_registers::register_bitfields![u32,
        pub S_NVDLA_HW_VERSION [
            MAJOR OFFSET(0) NUMBITS(8) [],
            MINOR OFFSET(8) NUMBITS(16) [],
        ],
        pub S_INTR_MASK [
            SDP_DONE_MASK0 OFFSET(0) NUMBITS(1) [],
            SDP_DONE_MASK1 OFFSET(1) NUMBITS(1) [],
            CDP_DONE_MASK0 OFFSET(2) NUMBITS(1) [],
            CDP_DONE_MASK1 OFFSET(3) NUMBITS(1) [],
            PDP_DONE_MASK0 OFFSET(4) NUMBITS(1) [],
            PDP_DONE_MASK1 OFFSET(5) NUMBITS(1) [],
            BDMA_DONE_MASK0 OFFSET(6) NUMBITS(1) [],
            BDMA_DONE_MASK1 OFFSET(7) NUMBITS(1) [],
            RUBIK_DONE_MASK0 OFFSET(8) NUMBITS(1) [],
            RUBIK_DONE_MASK1 OFFSET(9) NUMBITS(1) [],
            CDMA_DAT_DONE_MASK0 OFFSET(16) NUMBITS(1) [],
            CDMA_DAT_DONE_MASK1 OFFSET(17) NUMBITS(1) [],
            CDMA_WT_DONE_MASK0 OFFSET(18) NUMBITS(1) [],
            CDMA_WT_DONE_MASK1 OFFSET(19) NUMBITS(1) [],
            CACC_DONE_MASK0 OFFSET(20) NUMBITS(1) [],
            CACC_DONE_MASK1 OFFSET(21) NUMBITS(1) [],
        ],
        pub S_INTR_SET [
            SDP_DONE_SET0 OFFSET(0) NUMBITS(1) [],
            SDP_DONE_SET1 OFFSET(1) NUMBITS(1) [],
            CDP_DONE_SET0 OFFSET(2) NUMBITS(1) [],
            CDP_DONE_SET1 OFFSET(3) NUMBITS(1) [],
            PDP_DONE_SET0 OFFSET(4) NUMBITS(1) [],
            PDP_DONE_SET1 OFFSET(5) NUMBITS(1) [],
            BDMA_DONE_SET0 OFFSET(6) NUMBITS(1) [],
            BDMA_DONE_SET1 OFFSET(7) NUMBITS(1) [],
            RUBIK_DONE_SET0 OFFSET(8) NUMBITS(1) [],
            RUBIK_DONE_SET1 OFFSET(9) NUMBITS(1) [],
            CDMA_DAT_DONE_SET0 OFFSET(16) NUMBITS(1) [],
            CDMA_DAT_DONE_SET1 OFFSET(17) NUMBITS(1) [],
            CDMA_WT_DONE_SET0 OFFSET(18) NUMBITS(1) [],
            CDMA_WT_DONE_SET1 OFFSET(19) NUMBITS(1) [],
            CACC_DONE_SET0 OFFSET(20) NUMBITS(1) [],
            CACC_DONE_SET1 OFFSET(21) NUMBITS(1) [],
        ],
        pub S_INTR_STATUS [
            SDP_DONE_STATUS0 OFFSET(0) NUMBITS(1) [],
            SDP_DONE_STATUS1 OFFSET(1) NUMBITS(1) [],
            CDP_DONE_STATUS0 OFFSET(2) NUMBITS(1) [],
            CDP_DONE_STATUS1 OFFSET(3) NUMBITS(1) [],
            PDP_DONE_STATUS0 OFFSET(4) NUMBITS(1) [],
            PDP_DONE_STATUS1 OFFSET(5) NUMBITS(1) [],
            BDMA_DONE_STATUS0 OFFSET(6) NUMBITS(1) [],
            BDMA_DONE_STATUS1 OFFSET(7) NUMBITS(1) [],
            RUBIK_DONE_STATUS0 OFFSET(8) NUMBITS(1) [],
            RUBIK_DONE_STATUS1 OFFSET(9) NUMBITS(1) [],
            CDMA_DAT_DONE_STATUS0 OFFSET(16) NUMBITS(1) [],
            CDMA_DAT_DONE_STATUS1 OFFSET(17) NUMBITS(1) [],
            CDMA_WT_DONE_STATUS0 OFFSET(18) NUMBITS(1) [],
            CDMA_WT_DONE_STATUS1 OFFSET(19) NUMBITS(1) [],
            CACC_DONE_STATUS0 OFFSET(20) NUMBITS(1) [],
            CACC_DONE_STATUS1 OFFSET(21) NUMBITS(1) [],
        ],
    ];
}

/// Registers of the MCIF unit.
pub mod mcif {
    /// `MCIF_CFG_RD_WEIGHT_0`.
    pub const CFG_RD_WEIGHT_0: u32 = 0x000;
    /// `MCIF_CFG_RD_WEIGHT_1`.
    pub const CFG_RD_WEIGHT_1: u32 = 0x004;
    /// `MCIF_CFG_RD_WEIGHT_2`.
    pub const CFG_RD_WEIGHT_2: u32 = 0x008;
    /// `MCIF_CFG_WR_WEIGHT_0`.
    pub const CFG_WR_WEIGHT_0: u32 = 0x00c;
    /// `MCIF_CFG_WR_WEIGHT_1`.
    pub const CFG_WR_WEIGHT_1: u32 = 0x010;
    /// `MCIF_CFG_OUTSTANDING_CNT`.
    pub const CFG_OUTSTANDING_CNT: u32 = 0x014;
    /// `MCIF_STATUS`.
    pub const STATUS: u32 = 0x018;
    tock_registers::register_bitfields![u32,
        pub CFG_RD_WEIGHT_0 [
            RD_WEIGHT_BDMA OFFSET(0) NUMBITS(8) [],
            RD_WEIGHT_SDP OFFSET(8) NUMBITS(8) [],
            RD_WEIGHT_PDP OFFSET(16) NUMBITS(8) [],
            RD_WEIGHT_CDP OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_RD_WEIGHT_1 [
            RD_WEIGHT_SDP_B OFFSET(0) NUMBITS(8) [],
            RD_WEIGHT_SDP_N OFFSET(8) NUMBITS(8) [],
            RD_WEIGHT_SDP_E OFFSET(16) NUMBITS(8) [],
            RD_WEIGHT_CDMA_DAT OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_RD_WEIGHT_2 [
            RD_WEIGHT_CDMA_WT OFFSET(0) NUMBITS(8) [],
            RD_WEIGHT_RBK OFFSET(8) NUMBITS(8) [],
            RD_WEIGHT_RSV_1 OFFSET(16) NUMBITS(8) [],
            RD_WEIGHT_RSV_0 OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_WR_WEIGHT_0 [
            WR_WEIGHT_BDMA OFFSET(0) NUMBITS(8) [],
            WR_WEIGHT_SDP OFFSET(8) NUMBITS(8) [],
            WR_WEIGHT_PDP OFFSET(16) NUMBITS(8) [],
            WR_WEIGHT_CDP OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_WR_WEIGHT_1 [
            WR_WEIGHT_RBK OFFSET(0) NUMBITS(8) [],
            WR_WEIGHT_RSV_2 OFFSET(8) NUMBITS(8) [],
            WR_WEIGHT_RSV_1 OFFSET(16) NUMBITS(8) [],
            WR_WEIGHT_RSV_0 OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_OUTSTANDING_CNT [
            RD_OS_CNT OFFSET(0) NUMBITS(8) [],
            WR_OS_CNT OFFSET(8) NUMBITS(8) [],
        ],
        pub STATUS [
            IDLE OFFSET(8) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
    ];
}

/// Registers of the CVIF unit.
pub mod cvif {
    /// `CVIF_CFG_RD_WEIGHT_0`.
    pub const CFG_RD_WEIGHT_0: u32 = 0x000;
    /// `CVIF_CFG_RD_WEIGHT_1`.
    pub const CFG_RD_WEIGHT_1: u32 = 0x004;
    /// `CVIF_CFG_RD_WEIGHT_2`.
    pub const CFG_RD_WEIGHT_2: u32 = 0x008;
    /// `CVIF_CFG_WR_WEIGHT_0`.
    pub const CFG_WR_WEIGHT_0: u32 = 0x00c;
    /// `CVIF_CFG_WR_WEIGHT_1`.
    pub const CFG_WR_WEIGHT_1: u32 = 0x010;
    /// `CVIF_CFG_OUTSTANDING_CNT`.
    pub const CFG_OUTSTANDING_CNT: u32 = 0x014;
    /// `CVIF_STATUS`.
    pub const STATUS: u32 = 0x018;
    tock_registers::register_bitfields![u32,
        pub CFG_RD_WEIGHT_0 [
            RD_WEIGHT_BDMA OFFSET(0) NUMBITS(8) [],
            RD_WEIGHT_SDP OFFSET(8) NUMBITS(8) [],
            RD_WEIGHT_PDP OFFSET(16) NUMBITS(8) [],
            RD_WEIGHT_CDP OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_RD_WEIGHT_1 [
            RD_WEIGHT_SDP_B OFFSET(0) NUMBITS(8) [],
            RD_WEIGHT_SDP_N OFFSET(8) NUMBITS(8) [],
            RD_WEIGHT_SDP_E OFFSET(16) NUMBITS(8) [],
            RD_WEIGHT_CDMA_DAT OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_RD_WEIGHT_2 [
            RD_WEIGHT_CDMA_WT OFFSET(0) NUMBITS(8) [],
            RD_WEIGHT_RBK OFFSET(8) NUMBITS(8) [],
            RD_WEIGHT_RSV_1 OFFSET(16) NUMBITS(8) [],
            RD_WEIGHT_RSV_0 OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_WR_WEIGHT_0 [
            WR_WEIGHT_BDMA OFFSET(0) NUMBITS(8) [],
            WR_WEIGHT_SDP OFFSET(8) NUMBITS(8) [],
            WR_WEIGHT_PDP OFFSET(16) NUMBITS(8) [],
            WR_WEIGHT_CDP OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_WR_WEIGHT_1 [
            WR_WEIGHT_RBK OFFSET(0) NUMBITS(8) [],
            WR_WEIGHT_RSV_2 OFFSET(8) NUMBITS(8) [],
            WR_WEIGHT_RSV_1 OFFSET(16) NUMBITS(8) [],
            WR_WEIGHT_RSV_0 OFFSET(24) NUMBITS(8) [],
        ],
        pub CFG_OUTSTANDING_CNT [
            RD_OS_CNT OFFSET(0) NUMBITS(8) [],
            WR_OS_CNT OFFSET(8) NUMBITS(8) [],
        ],
        pub STATUS [
            IDLE OFFSET(8) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
    ];
}

/// Registers of the BDMA unit.
pub mod bdma {
    /// `BDMA_CFG_SRC_ADDR_LOW`.
    pub const CFG_SRC_ADDR_LOW: u32 = 0x000;
    /// `BDMA_CFG_SRC_ADDR_HIGH`.
    pub const CFG_SRC_ADDR_HIGH: u32 = 0x004;
    /// `BDMA_CFG_DST_ADDR_LOW`.
    pub const CFG_DST_ADDR_LOW: u32 = 0x008;
    /// `BDMA_CFG_DST_ADDR_HIGH`.
    pub const CFG_DST_ADDR_HIGH: u32 = 0x00c;
    /// `BDMA_CFG_LINE`.
    pub const CFG_LINE: u32 = 0x010;
    /// `BDMA_CFG_CMD`.
    pub const CFG_CMD: u32 = 0x014;
    /// `BDMA_CFG_LINE_REPEAT`.
    pub const CFG_LINE_REPEAT: u32 = 0x018;
    /// `BDMA_CFG_SRC_LINE`.
    pub const CFG_SRC_LINE: u32 = 0x01c;
    /// `BDMA_CFG_DST_LINE`.
    pub const CFG_DST_LINE: u32 = 0x020;
    /// `BDMA_CFG_SURF_REPEAT`.
    pub const CFG_SURF_REPEAT: u32 = 0x024;
    /// `BDMA_CFG_SRC_SURF`.
    pub const CFG_SRC_SURF: u32 = 0x028;
    /// `BDMA_CFG_DST_SURF`.
    pub const CFG_DST_SURF: u32 = 0x02c;
    /// `BDMA_CFG_OP`.
    pub const CFG_OP: u32 = 0x030;
    /// `BDMA_CFG_LAUNCH0`.
    pub const CFG_LAUNCH0: u32 = 0x034;
    /// `BDMA_CFG_LAUNCH1`.
    pub const CFG_LAUNCH1: u32 = 0x038;
    /// `BDMA_CFG_STATUS`.
    pub const CFG_STATUS: u32 = 0x03c;
    /// `BDMA_STATUS`.
    pub const STATUS: u32 = 0x040;
    /// `BDMA_STATUS_GRP0_READ_STALL`.
    pub const STATUS_GRP0_READ_STALL: u32 = 0x044;
    /// `BDMA_STATUS_GRP0_WRITE_STALL`.
    pub const STATUS_GRP0_WRITE_STALL: u32 = 0x048;
    /// `BDMA_STATUS_GRP1_READ_STALL`.
    pub const STATUS_GRP1_READ_STALL: u32 = 0x04c;
    /// `BDMA_STATUS_GRP1_WRITE_STALL`.
    pub const STATUS_GRP1_WRITE_STALL: u32 = 0x050;
    tock_registers::register_bitfields![u32,
        pub CFG_SRC_ADDR_LOW [
            V32 OFFSET(5) NUMBITS(27) [],
        ],
        pub CFG_SRC_ADDR_HIGH [
            V8 OFFSET(0) NUMBITS(32) [],
        ],
        pub CFG_DST_ADDR_LOW [
            V32 OFFSET(5) NUMBITS(27) [],
        ],
        pub CFG_DST_ADDR_HIGH [
            V8 OFFSET(0) NUMBITS(32) [],
        ],
        pub CFG_LINE [
            SIZE OFFSET(0) NUMBITS(13) [],
        ],
        pub CFG_CMD [
            SRC_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CVSRAM = 0,
                MC = 1,
            ],
            DST_RAM_TYPE OFFSET(1) NUMBITS(1) [
                CVSRAM = 0,
                MC = 1,
            ],
        ],
        pub CFG_LINE_REPEAT [
            NUMBER OFFSET(0) NUMBITS(24) [],
        ],
        pub CFG_SRC_LINE [
            STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub CFG_DST_LINE [
            STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub CFG_SURF_REPEAT [
            NUMBER OFFSET(0) NUMBITS(24) [],
        ],
        pub CFG_SRC_SURF [
            STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub CFG_DST_SURF [
            STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub CFG_OP [
            EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub CFG_LAUNCH0 [
            GRP0_LAUNCH OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub CFG_LAUNCH1 [
            GRP1_LAUNCH OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub CFG_STATUS [
            STALL_COUNT_EN OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub STATUS [
            FREE_SLOT OFFSET(0) NUMBITS(8) [],
            IDLE OFFSET(8) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            GRP0_BUSY OFFSET(9) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            GRP1_BUSY OFFSET(10) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub STATUS_GRP0_READ_STALL [
            COUNT OFFSET(0) NUMBITS(32) [],
        ],
        pub STATUS_GRP0_WRITE_STALL [
            COUNT OFFSET(0) NUMBITS(32) [],
        ],
        pub STATUS_GRP1_READ_STALL [
            COUNT OFFSET(0) NUMBITS(32) [],
        ],
        pub STATUS_GRP1_WRITE_STALL [
            COUNT OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the CDMA unit.
pub mod cdma {
    /// `CDMA_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `CDMA_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `CDMA_S_ARBITER`.
    pub const S_ARBITER: u32 = 0x008;
    /// `CDMA_S_CBUF_FLUSH_STATUS`.
    pub const S_CBUF_FLUSH_STATUS: u32 = 0x00c;
    /// `CDMA_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x010;
    /// `CDMA_D_MISC_CFG`.
    pub const D_MISC_CFG: u32 = 0x014;
    /// `CDMA_D_DATAIN_FORMAT`.
    pub const D_DATAIN_FORMAT: u32 = 0x018;
    /// `CDMA_D_DATAIN_SIZE_0`.
    pub const D_DATAIN_SIZE_0: u32 = 0x01c;
    /// `CDMA_D_DATAIN_SIZE_1`.
    pub const D_DATAIN_SIZE_1: u32 = 0x020;
    /// `CDMA_D_DATAIN_SIZE_EXT_0`.
    pub const D_DATAIN_SIZE_EXT_0: u32 = 0x024;
    /// `CDMA_D_PIXEL_OFFSET`.
    pub const D_PIXEL_OFFSET: u32 = 0x028;
    /// `CDMA_D_DAIN_RAM_TYPE`.
    pub const D_DAIN_RAM_TYPE: u32 = 0x02c;
    /// `CDMA_D_DAIN_ADDR_HIGH_0`.
    pub const D_DAIN_ADDR_HIGH_0: u32 = 0x030;
    /// `CDMA_D_DAIN_ADDR_LOW_0`.
    pub const D_DAIN_ADDR_LOW_0: u32 = 0x034;
    /// `CDMA_D_DAIN_ADDR_HIGH_1`.
    pub const D_DAIN_ADDR_HIGH_1: u32 = 0x038;
    /// `CDMA_D_DAIN_ADDR_LOW_1`.
    pub const D_DAIN_ADDR_LOW_1: u32 = 0x03c;
    /// `CDMA_D_LINE_STRIDE`.
    pub const D_LINE_STRIDE: u32 = 0x040;
    /// `CDMA_D_LINE_UV_STRIDE`.
    pub const D_LINE_UV_STRIDE: u32 = 0x044;
    /// `CDMA_D_SURF_STRIDE`.
    pub const D_SURF_STRIDE: u32 = 0x048;
    /// `CDMA_D_DAIN_MAP`.
    pub const D_DAIN_MAP: u32 = 0x04c;
    /// `CDMA_D_RESERVED_X_CFG`.
    pub const D_RESERVED_X_CFG: u32 = 0x050;
    /// `CDMA_D_RESERVED_Y_CFG`.
    pub const D_RESERVED_Y_CFG: u32 = 0x054;
    /// `CDMA_D_BATCH_NUMBER`.
    pub const D_BATCH_NUMBER: u32 = 0x058;
    /// `CDMA_D_BATCH_STRIDE`.
    pub const D_BATCH_STRIDE: u32 = 0x05c;
    /// `CDMA_D_ENTRY_PER_SLICE`.
    pub const D_ENTRY_PER_SLICE: u32 = 0x060;
    /// `CDMA_D_FETCH_GRAIN`.
    pub const D_FETCH_GRAIN: u32 = 0x064;
    /// `CDMA_D_WEIGHT_FORMAT`.
    pub const D_WEIGHT_FORMAT: u32 = 0x068;
    /// `CDMA_D_WEIGHT_SIZE_0`.
    pub const D_WEIGHT_SIZE_0: u32 = 0x06c;
    /// `CDMA_D_WEIGHT_SIZE_1`.
    pub const D_WEIGHT_SIZE_1: u32 = 0x070;
    /// `CDMA_D_WEIGHT_RAM_TYPE`.
    pub const D_WEIGHT_RAM_TYPE: u32 = 0x074;
    /// `CDMA_D_WEIGHT_ADDR_HIGH`.
    pub const D_WEIGHT_ADDR_HIGH: u32 = 0x078;
    /// `CDMA_D_WEIGHT_ADDR_LOW`.
    pub const D_WEIGHT_ADDR_LOW: u32 = 0x07c;
    /// `CDMA_D_WEIGHT_BYTES`.
    pub const D_WEIGHT_BYTES: u32 = 0x080;
    /// `CDMA_D_WGS_ADDR_HIGH`.
    pub const D_WGS_ADDR_HIGH: u32 = 0x084;
    /// `CDMA_D_WGS_ADDR_LOW`.
    pub const D_WGS_ADDR_LOW: u32 = 0x088;
    /// `CDMA_D_WMB_ADDR_HIGH`.
    pub const D_WMB_ADDR_HIGH: u32 = 0x08c;
    /// `CDMA_D_WMB_ADDR_LOW`.
    pub const D_WMB_ADDR_LOW: u32 = 0x090;
    /// `CDMA_D_WMB_BYTES`.
    pub const D_WMB_BYTES: u32 = 0x094;
    /// `CDMA_D_MEAN_FORMAT`.
    pub const D_MEAN_FORMAT: u32 = 0x098;
    /// `CDMA_D_MEAN_GLOBAL_0`.
    pub const D_MEAN_GLOBAL_0: u32 = 0x09c;
    /// `CDMA_D_MEAN_GLOBAL_1`.
    pub const D_MEAN_GLOBAL_1: u32 = 0x0a0;
    /// `CDMA_D_CVT_CFG`.
    pub const D_CVT_CFG: u32 = 0x0a4;
    /// `CDMA_D_CVT_OFFSET`.
    pub const D_CVT_OFFSET: u32 = 0x0a8;
    /// `CDMA_D_CVT_SCALE`.
    pub const D_CVT_SCALE: u32 = 0x0ac;
    /// `CDMA_D_CONV_STRIDE`.
    pub const D_CONV_STRIDE: u32 = 0x0b0;
    /// `CDMA_D_ZERO_PADDING`.
    pub const D_ZERO_PADDING: u32 = 0x0b4;
    /// `CDMA_D_ZERO_PADDING_VALUE`.
    pub const D_ZERO_PADDING_VALUE: u32 = 0x0b8;
    /// `CDMA_D_BANK`.
    pub const D_BANK: u32 = 0x0bc;
    /// `CDMA_D_NAN_FLUSH_TO_ZERO`.
    pub const D_NAN_FLUSH_TO_ZERO: u32 = 0x0c0;
    /// `CDMA_D_NAN_INPUT_DATA_NUM`.
    pub const D_NAN_INPUT_DATA_NUM: u32 = 0x0c4;
    /// `CDMA_D_NAN_INPUT_WEIGHT_NUM`.
    pub const D_NAN_INPUT_WEIGHT_NUM: u32 = 0x0c8;
    /// `CDMA_D_INF_INPUT_DATA_NUM`.
    pub const D_INF_INPUT_DATA_NUM: u32 = 0x0cc;
    /// `CDMA_D_INF_INPUT_WEIGHT_NUM`.
    pub const D_INF_INPUT_WEIGHT_NUM: u32 = 0x0d0;
    /// `CDMA_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x0d4;
    /// `CDMA_D_PERF_DAT_READ_STALL`.
    pub const D_PERF_DAT_READ_STALL: u32 = 0x0d8;
    /// `CDMA_D_PERF_WT_READ_STALL`.
    pub const D_PERF_WT_READ_STALL: u32 = 0x0dc;
    /// `CDMA_D_PERF_DAT_READ_LATENCY`.
    pub const D_PERF_DAT_READ_LATENCY: u32 = 0x0e0;
    /// `CDMA_D_PERF_WT_READ_LATENCY`.
    pub const D_PERF_WT_READ_LATENCY: u32 = 0x0e4;
    /// `CDMA_D_CYA`.
    pub const D_CYA: u32 = 0x0e8;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub S_ARBITER [
            ARB_WEIGHT OFFSET(0) NUMBITS(4) [],
            ARB_WMB OFFSET(16) NUMBITS(4) [],
        ],
        pub S_CBUF_FLUSH_STATUS [
            FLUSH_DONE OFFSET(0) NUMBITS(1) [],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_MISC_CFG [
            CONV_MODE OFFSET(0) NUMBITS(1) [
                DIRECT = 0,
                WINOGRAD = 1,
            ],
            IN_PRECISION OFFSET(8) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            PROC_PRECISION OFFSET(12) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            DATA_REUSE OFFSET(16) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            WEIGHT_REUSE OFFSET(20) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            SKIP_DATA_RLS OFFSET(24) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            SKIP_WEIGHT_RLS OFFSET(28) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATAIN_FORMAT [
            DATAIN_FORMAT OFFSET(0) NUMBITS(1) [
                FEATURE = 0,
                PIXEL = 1,
            ],
            PIXEL_FORMAT OFFSET(8) NUMBITS(6) [
                T_R8 = 0,
                T_R10 = 1,
                T_R12 = 2,
                T_R16 = 3,
                T_R16_I = 4,
                T_R16_F = 5,
                T_A16B16G16R16 = 6,
                T_X16B16G16R16 = 7,
                T_A16B16G16R16_F = 8,
                T_A16Y16U16V16 = 9,
                T_V16U16Y16A16 = 10,
                T_A16Y16U16V16_F = 11,
                T_A8B8G8R8 = 12,
                T_A8R8G8B8 = 13,
                T_B8G8R8A8 = 14,
                T_R8G8B8A8 = 15,
                T_X8B8G8R8 = 16,
                T_X8R8G8B8 = 17,
                T_B8G8R8X8 = 18,
                T_R8G8B8X8 = 19,
                T_A2B10G10R10 = 20,
                T_A2R10G10B10 = 21,
                T_B10G10R10A2 = 22,
                T_R10G10B10A2 = 23,
                T_A2Y10U10V10 = 24,
                T_V10U10Y10A2 = 25,
                T_A8Y8U8V8 = 26,
                T_V8U8Y8A8 = 27,
                T_Y8___U8V8_N444 = 28,
                T_Y8___V8U8_N444 = 29,
                T_Y10___U10V10_N444 = 30,
                T_Y10___V10U10_N444 = 31,
                T_Y12___U12V12_N444 = 32,
                T_Y12___V12U12_N444 = 33,
                T_Y16___U16V16_N444 = 34,
                T_Y16___V16U16_N444 = 35,
            ],
            PIXEL_MAPPING OFFSET(16) NUMBITS(1) [
                PITCH_LINEAR = 0,
                RESERVED_LINEAR = 1,
            ],
            PIXEL_SIGN_OVERRIDE OFFSET(20) NUMBITS(1) [
                UNSIGNED_INT = 0,
                SIGNED_INT = 1,
            ],
        ],
        pub D_DATAIN_SIZE_0 [
            DATAIN_WIDTH OFFSET(0) NUMBITS(13) [],
            DATAIN_HEIGHT OFFSET(16) NUMBITS(13) [],
        ],
        pub D_DATAIN_SIZE_1 [
            DATAIN_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATAIN_SIZE_EXT_0 [
            DATAIN_WIDTH_EXT OFFSET(0) NUMBITS(13) [],
            DATAIN_HEIGHT_EXT OFFSET(16) NUMBITS(13) [],
        ],
        pub D_PIXEL_OFFSET [
            PIXEL_X_OFFSET OFFSET(0) NUMBITS(5) [],
            PIXEL_Y_OFFSET OFFSET(16) NUMBITS(3) [],
        ],
        pub D_DAIN_RAM_TYPE [
            DATAIN_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CVIF = 0,
                MCIF = 1,
            ],
        ],
        pub D_DAIN_ADDR_HIGH_0 [
            DATAIN_ADDR_HIGH_0 OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DAIN_ADDR_LOW_0 [
            DATAIN_ADDR_LOW_0 OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DAIN_ADDR_HIGH_1 [
            DATAIN_ADDR_HIGH_1 OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DAIN_ADDR_LOW_1 [
            DATAIN_ADDR_LOW_1 OFFSET(0) NUMBITS(32) [],
        ],
        pub D_LINE_STRIDE [
            LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_LINE_UV_STRIDE [
            UV_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SURF_STRIDE [
            SURF_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DAIN_MAP [
            LINE_PACKED OFFSET(0) NUMBITS(1) [
                FALSE = 0,
                TRUE = 1,
            ],
            SURF_PACKED OFFSET(16) NUMBITS(1) [
                FALSE = 0,
                TRUE = 1,
            ],
        ],
        pub D_RESERVED_X_CFG [
            RSV_PER_LINE OFFSET(0) NUMBITS(10) [],
            RSV_PER_UV_LINE OFFSET(16) NUMBITS(10) [],
        ],
        pub D_RESERVED_Y_CFG [
            RSV_HEIGHT OFFSET(0) NUMBITS(3) [],
            RSV_Y_INDEX OFFSET(16) NUMBITS(5) [],
        ],
        pub D_BATCH_NUMBER [
            BATCHES OFFSET(0) NUMBITS(5) [],
        ],
        pub D_BATCH_STRIDE [
            BATCH_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_ENTRY_PER_SLICE [
            ENTRIES OFFSET(0) NUMBITS(14) [],
        ],
        pub D_FETCH_GRAIN [
            GRAINS OFFSET(0) NUMBITS(12) [],
        ],
        pub D_WEIGHT_FORMAT [
            WEIGHT_FORMAT OFFSET(0) NUMBITS(1) [
                UNCOMPRESSED = 0,
                COMPRESSED = 1,
            ],
        ],
        pub D_WEIGHT_SIZE_0 [
            BYTE_PER_KERNEL OFFSET(0) NUMBITS(18) [],
        ],
        pub D_WEIGHT_SIZE_1 [
            WEIGHT_KERNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_WEIGHT_RAM_TYPE [
            WEIGHT_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CVIF = 0,
                MCIF = 1,
            ],
        ],
        pub D_WEIGHT_ADDR_HIGH [
            WEIGHT_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WEIGHT_ADDR_LOW [
            WEIGHT_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WEIGHT_BYTES [
            WEIGHT_BYTES OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WGS_ADDR_HIGH [
            WGS_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WGS_ADDR_LOW [
            WGS_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WMB_ADDR_HIGH [
            WMB_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WMB_ADDR_LOW [
            WMB_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WMB_BYTES [
            WMB_BYTES OFFSET(0) NUMBITS(28) [],
        ],
        pub D_MEAN_FORMAT [
            MEAN_FORMAT OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_MEAN_GLOBAL_0 [
            MEAN_RY OFFSET(0) NUMBITS(16) [],
            MEAN_GU OFFSET(16) NUMBITS(16) [],
        ],
        pub D_MEAN_GLOBAL_1 [
            MEAN_BV OFFSET(0) NUMBITS(16) [],
            MEAN_AX OFFSET(16) NUMBITS(16) [],
        ],
        pub D_CVT_CFG [
            CVT_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            CVT_TRUNCATE OFFSET(4) NUMBITS(6) [],
        ],
        pub D_CVT_OFFSET [
            CVT_OFFSET OFFSET(0) NUMBITS(16) [],
        ],
        pub D_CVT_SCALE [
            CVT_SCALE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_CONV_STRIDE [
            CONV_X_STRIDE OFFSET(0) NUMBITS(3) [],
            CONV_Y_STRIDE OFFSET(16) NUMBITS(3) [],
        ],
        pub D_ZERO_PADDING [
            PAD_LEFT OFFSET(0) NUMBITS(5) [],
            PAD_RIGHT OFFSET(8) NUMBITS(6) [],
            PAD_TOP OFFSET(16) NUMBITS(5) [],
            PAD_BOTTOM OFFSET(24) NUMBITS(6) [],
        ],
        pub D_ZERO_PADDING_VALUE [
            PAD_VALUE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_BANK [
            DATA_BANK OFFSET(0) NUMBITS(5) [],
            WEIGHT_BANK OFFSET(16) NUMBITS(5) [],
        ],
        pub D_NAN_FLUSH_TO_ZERO [
            NAN_TO_ZERO OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_NAN_INPUT_DATA_NUM [
            NAN_DATA_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_NAN_INPUT_WEIGHT_NUM [
            NAN_WEIGHT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_INF_INPUT_DATA_NUM [
            INF_DATA_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_INF_INPUT_WEIGHT_NUM [
            INF_WEIGHT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_ENABLE [
            DMA_EN OFFSET(0) NUMBITS(1) [],
        ],
        pub D_PERF_DAT_READ_STALL [
            DAT_RD_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_WT_READ_STALL [
            WT_RD_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_DAT_READ_LATENCY [
            DAT_RD_LATENCY OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_WT_READ_LATENCY [
            WT_RD_LATENCY OFFSET(0) NUMBITS(32) [],
        ],
        pub D_CYA [
            CYA OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the CSC unit.
pub mod csc {
    /// `CSC_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `CSC_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `CSC_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `CSC_D_MISC_CFG`.
    pub const D_MISC_CFG: u32 = 0x00c;
    /// `CSC_D_DATAIN_FORMAT`.
    pub const D_DATAIN_FORMAT: u32 = 0x010;
    /// `CSC_D_DATAIN_SIZE_EXT_0`.
    pub const D_DATAIN_SIZE_EXT_0: u32 = 0x014;
    /// `CSC_D_DATAIN_SIZE_EXT_1`.
    pub const D_DATAIN_SIZE_EXT_1: u32 = 0x018;
    /// `CSC_D_BATCH_NUMBER`.
    pub const D_BATCH_NUMBER: u32 = 0x01c;
    /// `CSC_D_POST_Y_EXTENSION`.
    pub const D_POST_Y_EXTENSION: u32 = 0x020;
    /// `CSC_D_ENTRY_PER_SLICE`.
    pub const D_ENTRY_PER_SLICE: u32 = 0x024;
    /// `CSC_D_WEIGHT_FORMAT`.
    pub const D_WEIGHT_FORMAT: u32 = 0x028;
    /// `CSC_D_WEIGHT_SIZE_EXT_0`.
    pub const D_WEIGHT_SIZE_EXT_0: u32 = 0x02c;
    /// `CSC_D_WEIGHT_SIZE_EXT_1`.
    pub const D_WEIGHT_SIZE_EXT_1: u32 = 0x030;
    /// `CSC_D_WEIGHT_BYTES`.
    pub const D_WEIGHT_BYTES: u32 = 0x034;
    /// `CSC_D_WMB_BYTES`.
    pub const D_WMB_BYTES: u32 = 0x038;
    /// `CSC_D_DATAOUT_SIZE_0`.
    pub const D_DATAOUT_SIZE_0: u32 = 0x03c;
    /// `CSC_D_DATAOUT_SIZE_1`.
    pub const D_DATAOUT_SIZE_1: u32 = 0x040;
    /// `CSC_D_ATOMICS`.
    pub const D_ATOMICS: u32 = 0x044;
    /// `CSC_D_RELEASE`.
    pub const D_RELEASE: u32 = 0x048;
    /// `CSC_D_CONV_STRIDE_EXT`.
    pub const D_CONV_STRIDE_EXT: u32 = 0x04c;
    /// `CSC_D_DILATION_EXT`.
    pub const D_DILATION_EXT: u32 = 0x050;
    /// `CSC_D_ZERO_PADDING`.
    pub const D_ZERO_PADDING: u32 = 0x054;
    /// `CSC_D_ZERO_PADDING_VALUE`.
    pub const D_ZERO_PADDING_VALUE: u32 = 0x058;
    /// `CSC_D_BANK`.
    pub const D_BANK: u32 = 0x05c;
    /// `CSC_D_PRA_CFG`.
    pub const D_PRA_CFG: u32 = 0x060;
    /// `CSC_D_CYA`.
    pub const D_CYA: u32 = 0x064;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_MISC_CFG [
            CONV_MODE OFFSET(0) NUMBITS(1) [
                DIRECT = 0,
                WINOGRAD = 1,
            ],
            IN_PRECISION OFFSET(8) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            PROC_PRECISION OFFSET(12) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            DATA_REUSE OFFSET(16) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            WEIGHT_REUSE OFFSET(20) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            SKIP_DATA_RLS OFFSET(24) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            SKIP_WEIGHT_RLS OFFSET(28) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATAIN_FORMAT [
            DATAIN_FORMAT OFFSET(0) NUMBITS(1) [
                FEATURE = 0,
                PIXEL = 1,
            ],
        ],
        pub D_DATAIN_SIZE_EXT_0 [
            DATAIN_WIDTH_EXT OFFSET(0) NUMBITS(13) [],
            DATAIN_HEIGHT_EXT OFFSET(16) NUMBITS(13) [],
        ],
        pub D_DATAIN_SIZE_EXT_1 [
            DATAIN_CHANNEL_EXT OFFSET(0) NUMBITS(13) [],
        ],
        pub D_BATCH_NUMBER [
            BATCHES OFFSET(0) NUMBITS(5) [],
        ],
        pub D_POST_Y_EXTENSION [
            Y_EXTENSION OFFSET(0) NUMBITS(2) [],
        ],
        pub D_ENTRY_PER_SLICE [
            ENTRIES OFFSET(0) NUMBITS(14) [],
        ],
        pub D_WEIGHT_FORMAT [
            WEIGHT_FORMAT OFFSET(0) NUMBITS(1) [
                UNCOMPRESSED = 0,
                COMPRESSED = 1,
            ],
        ],
        pub D_WEIGHT_SIZE_EXT_0 [
            WEIGHT_WIDTH_EXT OFFSET(0) NUMBITS(5) [],
            WEIGHT_HEIGHT_EXT OFFSET(16) NUMBITS(5) [],
        ],
        pub D_WEIGHT_SIZE_EXT_1 [
            WEIGHT_CHANNEL_EXT OFFSET(0) NUMBITS(13) [],
            WEIGHT_KERNEL OFFSET(16) NUMBITS(13) [],
        ],
        pub D_WEIGHT_BYTES [
            WEIGHT_BYTES OFFSET(0) NUMBITS(32) [],
        ],
        pub D_WMB_BYTES [
            WMB_BYTES OFFSET(0) NUMBITS(28) [],
        ],
        pub D_DATAOUT_SIZE_0 [
            DATAOUT_WIDTH OFFSET(0) NUMBITS(13) [],
            DATAOUT_HEIGHT OFFSET(16) NUMBITS(13) [],
        ],
        pub D_DATAOUT_SIZE_1 [
            DATAOUT_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_ATOMICS [
            ATOMICS OFFSET(0) NUMBITS(21) [],
        ],
        pub D_RELEASE [
            RLS_SLICES OFFSET(0) NUMBITS(12) [],
        ],
        pub D_CONV_STRIDE_EXT [
            CONV_X_STRIDE_EXT OFFSET(0) NUMBITS(3) [],
            CONV_Y_STRIDE_EXT OFFSET(16) NUMBITS(3) [],
        ],
        pub D_DILATION_EXT [
            X_DILATION_EXT OFFSET(0) NUMBITS(5) [],
            Y_DILATION_EXT OFFSET(16) NUMBITS(5) [],
        ],
        pub D_ZERO_PADDING [
            PAD_LEFT OFFSET(0) NUMBITS(5) [],
            PAD_TOP OFFSET(16) NUMBITS(5) [],
        ],
        pub D_ZERO_PADDING_VALUE [
            PAD_VALUE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_BANK [
            DATA_BANK OFFSET(0) NUMBITS(5) [],
            WEIGHT_BANK OFFSET(16) NUMBITS(5) [],
        ],
        pub D_PRA_CFG [
            PRA_TRUNCATE OFFSET(0) NUMBITS(2) [],
        ],
        pub D_CYA [
            CYA OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the CMAC_A unit.
pub mod cmac_a {
    /// `CMAC_A_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `CMAC_A_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `CMAC_A_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `CMAC_A_D_MISC_CFG`.
    pub const D_MISC_CFG: u32 = 0x00c;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_MISC_CFG [
            CONV_MODE OFFSET(0) NUMBITS(1) [
                DIRECT = 0,
                WINOGRAD = 1,
            ],
            PROC_PRECISION OFFSET(12) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
    ];
}

/// Registers of the CMAC_B unit.
pub mod cmac_b {
    /// `CMAC_B_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `CMAC_B_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `CMAC_B_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `CMAC_B_D_MISC_CFG`.
    pub const D_MISC_CFG: u32 = 0x00c;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_MISC_CFG [
            CONV_MODE OFFSET(0) NUMBITS(1) [
                DIRECT = 0,
                WINOGRAD = 1,
            ],
            PROC_PRECISION OFFSET(12) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
    ];
}

/// Registers of the CACC unit.
pub mod cacc {
    /// `CACC_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `CACC_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `CACC_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `CACC_D_MISC_CFG`.
    pub const D_MISC_CFG: u32 = 0x00c;
    /// `CACC_D_DATAOUT_SIZE_0`.
    pub const D_DATAOUT_SIZE_0: u32 = 0x010;
    /// `CACC_D_DATAOUT_SIZE_1`.
    pub const D_DATAOUT_SIZE_1: u32 = 0x014;
    /// `CACC_D_DATAOUT_ADDR`.
    pub const D_DATAOUT_ADDR: u32 = 0x018;
    /// `CACC_D_BATCH_NUMBER`.
    pub const D_BATCH_NUMBER: u32 = 0x01c;
    /// `CACC_D_LINE_STRIDE`.
    pub const D_LINE_STRIDE: u32 = 0x020;
    /// `CACC_D_SURF_STRIDE`.
    pub const D_SURF_STRIDE: u32 = 0x024;
    /// `CACC_D_DATAOUT_MAP`.
    pub const D_DATAOUT_MAP: u32 = 0x028;
    /// `CACC_D_CLIP_CFG`.
    pub const D_CLIP_CFG: u32 = 0x02c;
    /// `CACC_D_OUT_SATURATION`.
    pub const D_OUT_SATURATION: u32 = 0x030;
    /// `CACC_D_CYA`.
    pub const D_CYA: u32 = 0x034;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_MISC_CFG [
            CONV_MODE OFFSET(0) NUMBITS(1) [
                DIRECT = 0,
                WINOGRAD = 1,
            ],
            PROC_PRECISION OFFSET(12) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
        pub D_DATAOUT_SIZE_0 [
            DATAOUT_WIDTH OFFSET(0) NUMBITS(13) [],
            DATAOUT_HEIGHT OFFSET(16) NUMBITS(13) [],
        ],
        pub D_DATAOUT_SIZE_1 [
            DATAOUT_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATAOUT_ADDR [
            DATAOUT_ADDR OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BATCH_NUMBER [
            BATCHES OFFSET(0) NUMBITS(5) [],
        ],
        pub D_LINE_STRIDE [
            LINE_STRIDE OFFSET(0) NUMBITS(24) [],
        ],
        pub D_SURF_STRIDE [
            SURF_STRIDE OFFSET(0) NUMBITS(24) [],
        ],
        pub D_DATAOUT_MAP [
            LINE_PACKED OFFSET(0) NUMBITS(1) [
                FALSE = 0,
                TRUE = 1,
            ],
            SURF_PACKED OFFSET(16) NUMBITS(1) [
                FALSE = 0,
                TRUE = 1,
            ],
        ],
        pub D_CLIP_CFG [
            CLIP_TRUNCATE OFFSET(0) NUMBITS(5) [],
        ],
        pub D_OUT_SATURATION [
            SAT_COUNT OFFSET(0) NUMBITS(32) [],
        ],
        pub D_CYA [
            CYA OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the SDP_RDMA unit.
pub mod sdp_rdma {
    /// `SDP_RDMA_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `SDP_RDMA_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `SDP_RDMA_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `SDP_RDMA_D_DATA_CUBE_WIDTH`.
    pub const D_DATA_CUBE_WIDTH: u32 = 0x00c;
    /// `SDP_RDMA_D_DATA_CUBE_HEIGHT`.
    pub const D_DATA_CUBE_HEIGHT: u32 = 0x010;
    /// `SDP_RDMA_D_DATA_CUBE_CHANNEL`.
    pub const D_DATA_CUBE_CHANNEL: u32 = 0x014;
    /// `SDP_RDMA_D_SRC_BASE_ADDR_LOW`.
    pub const D_SRC_BASE_ADDR_LOW: u32 = 0x018;
    /// `SDP_RDMA_D_SRC_BASE_ADDR_HIGH`.
    pub const D_SRC_BASE_ADDR_HIGH: u32 = 0x01c;
    /// `SDP_RDMA_D_SRC_LINE_STRIDE`.
    pub const D_SRC_LINE_STRIDE: u32 = 0x020;
    /// `SDP_RDMA_D_SRC_SURFACE_STRIDE`.
    pub const D_SRC_SURFACE_STRIDE: u32 = 0x024;
    /// `SDP_RDMA_D_BRDMA_CFG`.
    pub const D_BRDMA_CFG: u32 = 0x028;
    /// `SDP_RDMA_D_BS_BASE_ADDR_LOW`.
    pub const D_BS_BASE_ADDR_LOW: u32 = 0x02c;
    /// `SDP_RDMA_D_BS_BASE_ADDR_HIGH`.
    pub const D_BS_BASE_ADDR_HIGH: u32 = 0x030;
    /// `SDP_RDMA_D_BS_LINE_STRIDE`.
    pub const D_BS_LINE_STRIDE: u32 = 0x034;
    /// `SDP_RDMA_D_BS_SURFACE_STRIDE`.
    pub const D_BS_SURFACE_STRIDE: u32 = 0x038;
    /// `SDP_RDMA_D_BS_BATCH_STRIDE`.
    pub const D_BS_BATCH_STRIDE: u32 = 0x03c;
    /// `SDP_RDMA_D_NRDMA_CFG`.
    pub const D_NRDMA_CFG: u32 = 0x040;
    /// `SDP_RDMA_D_BN_BASE_ADDR_LOW`.
    pub const D_BN_BASE_ADDR_LOW: u32 = 0x044;
    /// `SDP_RDMA_D_BN_BASE_ADDR_HIGH`.
    pub const D_BN_BASE_ADDR_HIGH: u32 = 0x048;
    /// `SDP_RDMA_D_BN_LINE_STRIDE`.
    pub const D_BN_LINE_STRIDE: u32 = 0x04c;
    /// `SDP_RDMA_D_BN_SURFACE_STRIDE`.
    pub const D_BN_SURFACE_STRIDE: u32 = 0x050;
    /// `SDP_RDMA_D_BN_BATCH_STRIDE`.
    pub const D_BN_BATCH_STRIDE: u32 = 0x054;
    /// `SDP_RDMA_D_ERDMA_CFG`.
    pub const D_ERDMA_CFG: u32 = 0x058;
    /// `SDP_RDMA_D_EW_BASE_ADDR_LOW`.
    pub const D_EW_BASE_ADDR_LOW: u32 = 0x05c;
    /// `SDP_RDMA_D_EW_BASE_ADDR_HIGH`.
    pub const D_EW_BASE_ADDR_HIGH: u32 = 0x060;
    /// `SDP_RDMA_D_EW_LINE_STRIDE`.
    pub const D_EW_LINE_STRIDE: u32 = 0x064;
    /// `SDP_RDMA_D_EW_SURFACE_STRIDE`.
    pub const D_EW_SURFACE_STRIDE: u32 = 0x068;
    /// `SDP_RDMA_D_EW_BATCH_STRIDE`.
    pub const D_EW_BATCH_STRIDE: u32 = 0x06c;
    /// `SDP_RDMA_D_FEATURE_MODE_CFG`.
    pub const D_FEATURE_MODE_CFG: u32 = 0x070;
    /// `SDP_RDMA_D_SRC_DMA_CFG`.
    pub const D_SRC_DMA_CFG: u32 = 0x074;
    /// `SDP_RDMA_D_STATUS_NAN_INPUT_NUM`.
    pub const D_STATUS_NAN_INPUT_NUM: u32 = 0x078;
    /// `SDP_RDMA_D_STATUS_INF_INPUT_NUM`.
    pub const D_STATUS_INF_INPUT_NUM: u32 = 0x07c;
    /// `SDP_RDMA_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x080;
    /// `SDP_RDMA_D_PERF_MRDMA_READ_STALL`.
    pub const D_PERF_MRDMA_READ_STALL: u32 = 0x084;
    /// `SDP_RDMA_D_PERF_BRDMA_READ_STALL`.
    pub const D_PERF_BRDMA_READ_STALL: u32 = 0x088;
    /// `SDP_RDMA_D_PERF_NRDMA_READ_STALL`.
    pub const D_PERF_NRDMA_READ_STALL: u32 = 0x08c;
    /// `SDP_RDMA_D_PERF_ERDMA_READ_STALL`.
    pub const D_PERF_ERDMA_READ_STALL: u32 = 0x090;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATA_CUBE_WIDTH [
            WIDTH OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_HEIGHT [
            HEIGHT OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_CHANNEL [
            CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_SRC_BASE_ADDR_LOW [
            SRC_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_BASE_ADDR_HIGH [
            SRC_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_LINE_STRIDE [
            SRC_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_SURFACE_STRIDE [
            SRC_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BRDMA_CFG [
            BRDMA_DISABLE OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BRDMA_DATA_USE OFFSET(1) NUMBITS(2) [
                MUL = 0,
                ALU = 1,
                BOTH = 2,
            ],
            BRDMA_DATA_SIZE OFFSET(3) NUMBITS(1) [
                ONE_BYTE = 0,
                TWO_BYTE = 1,
            ],
            BRDMA_DATA_MODE OFFSET(4) NUMBITS(1) [
                PER_KERNEL = 0,
                PER_ELEMENT = 1,
            ],
            BRDMA_RAM_TYPE OFFSET(5) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_BS_BASE_ADDR_LOW [
            BS_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BS_BASE_ADDR_HIGH [
            BS_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BS_LINE_STRIDE [
            BS_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BS_SURFACE_STRIDE [
            BS_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BS_BATCH_STRIDE [
            BS_BATCH_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_NRDMA_CFG [
            NRDMA_DISABLE OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            NRDMA_DATA_USE OFFSET(1) NUMBITS(2) [
                MUL = 0,
                ALU = 1,
                BOTH = 2,
            ],
            NRDMA_DATA_SIZE OFFSET(3) NUMBITS(1) [
                ONE_BYTE = 0,
                TWO_BYTE = 1,
            ],
            NRDMA_DATA_MODE OFFSET(4) NUMBITS(1) [
                PER_KERNEL = 0,
                PER_ELEMENT = 1,
            ],
            NRDMA_RAM_TYPE OFFSET(5) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_BN_BASE_ADDR_LOW [
            BN_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BN_BASE_ADDR_HIGH [
            BN_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BN_LINE_STRIDE [
            BN_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BN_SURFACE_STRIDE [
            BN_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_BN_BATCH_STRIDE [
            BN_BATCH_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_ERDMA_CFG [
            ERDMA_DISABLE OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            ERDMA_DATA_USE OFFSET(1) NUMBITS(2) [
                MUL = 0,
                ALU = 1,
                BOTH = 2,
            ],
            ERDMA_DATA_SIZE OFFSET(3) NUMBITS(1) [
                ONE_BYTE = 0,
                TWO_BYTE = 1,
            ],
            ERDMA_DATA_MODE OFFSET(4) NUMBITS(1) [
                PER_KERNEL = 0,
                PER_ELEMENT = 1,
            ],
            ERDMA_RAM_TYPE OFFSET(5) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_EW_BASE_ADDR_LOW [
            EW_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_EW_BASE_ADDR_HIGH [
            EW_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_EW_LINE_STRIDE [
            EW_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_EW_SURFACE_STRIDE [
            EW_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_EW_BATCH_STRIDE [
            EW_BATCH_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_FEATURE_MODE_CFG [
            FLYING_MODE OFFSET(0) NUMBITS(1) [
                OFF = 0,
                ON = 1,
            ],
            WINOGRAD OFFSET(1) NUMBITS(1) [
                OFF = 0,
                ON = 1,
            ],
            IN_PRECISION OFFSET(2) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            PROC_PRECISION OFFSET(4) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            OUT_PRECISION OFFSET(6) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            BATCH_NUMBER OFFSET(8) NUMBITS(5) [],
        ],
        pub D_SRC_DMA_CFG [
            SRC_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_STATUS_NAN_INPUT_NUM [
            STATUS_NAN_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_STATUS_INF_INPUT_NUM [
            STATUS_INF_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_ENABLE [
            PERF_DMA_EN OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            PERF_NAN_INF_COUNT_EN OFFSET(1) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub D_PERF_MRDMA_READ_STALL [
            MRDMA_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_BRDMA_READ_STALL [
            BRDMA_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_NRDMA_READ_STALL [
            NRDMA_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_ERDMA_READ_STALL [
            ERDMA_STALL OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the SDP unit.
pub mod sdp {
    /// `SDP_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `SDP_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `SDP_S_LUT_ACCESS_CFG`.
    pub const S_LUT_ACCESS_CFG: u32 = 0x008;
    /// `SDP_S_LUT_ACCESS_DATA`.
    pub const S_LUT_ACCESS_DATA: u32 = 0x00c;
    /// `SDP_S_LUT_CFG`.
    pub const S_LUT_CFG: u32 = 0x010;
    /// `SDP_S_LUT_INFO`.
    pub const S_LUT_INFO: u32 = 0x014;
    /// `SDP_S_LUT_LE_START`.
    pub const S_LUT_LE_START: u32 = 0x018;
    /// `SDP_S_LUT_LE_END`.
    pub const S_LUT_LE_END: u32 = 0x01c;
    /// `SDP_S_LUT_LO_START`.
    pub const S_LUT_LO_START: u32 = 0x020;
    /// `SDP_S_LUT_LO_END`.
    pub const S_LUT_LO_END: u32 = 0x024;
    /// `SDP_S_LUT_LE_SLOPE_SCALE`.
    pub const S_LUT_LE_SLOPE_SCALE: u32 = 0x028;
    /// `SDP_S_LUT_LE_SLOPE_SHIFT`.
    pub const S_LUT_LE_SLOPE_SHIFT: u32 = 0x02c;
    /// `SDP_S_LUT_LO_SLOPE_SCALE`.
    pub const S_LUT_LO_SLOPE_SCALE: u32 = 0x030;
    /// `SDP_S_LUT_LO_SLOPE_SHIFT`.
    pub const S_LUT_LO_SLOPE_SHIFT: u32 = 0x034;
    /// `SDP_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x038;
    /// `SDP_D_DATA_CUBE_WIDTH`.
    pub const D_DATA_CUBE_WIDTH: u32 = 0x03c;
    /// `SDP_D_DATA_CUBE_HEIGHT`.
    pub const D_DATA_CUBE_HEIGHT: u32 = 0x040;
    /// `SDP_D_DATA_CUBE_CHANNEL`.
    pub const D_DATA_CUBE_CHANNEL: u32 = 0x044;
    /// `SDP_D_DST_BASE_ADDR_LOW`.
    pub const D_DST_BASE_ADDR_LOW: u32 = 0x048;
    /// `SDP_D_DST_BASE_ADDR_HIGH`.
    pub const D_DST_BASE_ADDR_HIGH: u32 = 0x04c;
    /// `SDP_D_DST_LINE_STRIDE`.
    pub const D_DST_LINE_STRIDE: u32 = 0x050;
    /// `SDP_D_DST_SURFACE_STRIDE`.
    pub const D_DST_SURFACE_STRIDE: u32 = 0x054;
    /// `SDP_D_DP_BS_CFG`.
    pub const D_DP_BS_CFG: u32 = 0x058;
    /// `SDP_D_DP_BS_ALU_CFG`.
    pub const D_DP_BS_ALU_CFG: u32 = 0x05c;
    /// `SDP_D_DP_BS_ALU_SRC_VALUE`.
    pub const D_DP_BS_ALU_SRC_VALUE: u32 = 0x060;
    /// `SDP_D_DP_BS_MUL_CFG`.
    pub const D_DP_BS_MUL_CFG: u32 = 0x064;
    /// `SDP_D_DP_BS_MUL_SRC_VALUE`.
    pub const D_DP_BS_MUL_SRC_VALUE: u32 = 0x068;
    /// `SDP_D_DP_BN_CFG`.
    pub const D_DP_BN_CFG: u32 = 0x06c;
    /// `SDP_D_DP_BN_ALU_CFG`.
    pub const D_DP_BN_ALU_CFG: u32 = 0x070;
    /// `SDP_D_DP_BN_ALU_SRC_VALUE`.
    pub const D_DP_BN_ALU_SRC_VALUE: u32 = 0x074;
    /// `SDP_D_DP_BN_MUL_CFG`.
    pub const D_DP_BN_MUL_CFG: u32 = 0x078;
    /// `SDP_D_DP_BN_MUL_SRC_VALUE`.
    pub const D_DP_BN_MUL_SRC_VALUE: u32 = 0x07c;
    /// `SDP_D_DP_EW_CFG`.
    pub const D_DP_EW_CFG: u32 = 0x080;
    /// `SDP_D_DP_EW_ALU_CFG`.
    pub const D_DP_EW_ALU_CFG: u32 = 0x084;
    /// `SDP_D_DP_EW_ALU_SRC_VALUE`.
    pub const D_DP_EW_ALU_SRC_VALUE: u32 = 0x088;
    /// `SDP_D_DP_EW_ALU_CVT_OFFSET_VALUE`.
    pub const D_DP_EW_ALU_CVT_OFFSET_VALUE: u32 = 0x08c;
    /// `SDP_D_DP_EW_ALU_CVT_SCALE_VALUE`.
    pub const D_DP_EW_ALU_CVT_SCALE_VALUE: u32 = 0x090;
    /// `SDP_D_DP_EW_ALU_CVT_TRUNCATE_VALUE`.
    pub const D_DP_EW_ALU_CVT_TRUNCATE_VALUE: u32 = 0x094;
    /// `SDP_D_DP_EW_MUL_CFG`.
    pub const D_DP_EW_MUL_CFG: u32 = 0x098;
    /// `SDP_D_DP_EW_MUL_SRC_VALUE`.
    pub const D_DP_EW_MUL_SRC_VALUE: u32 = 0x09c;
    /// `SDP_D_DP_EW_MUL_CVT_OFFSET_VALUE`.
    pub const D_DP_EW_MUL_CVT_OFFSET_VALUE: u32 = 0x0a0;
    /// `SDP_D_DP_EW_MUL_CVT_SCALE_VALUE`.
    pub const D_DP_EW_MUL_CVT_SCALE_VALUE: u32 = 0x0a4;
    /// `SDP_D_DP_EW_MUL_CVT_TRUNCATE_VALUE`.
    pub const D_DP_EW_MUL_CVT_TRUNCATE_VALUE: u32 = 0x0a8;
    /// `SDP_D_DP_EW_TRUNCATE_VALUE`.
    pub const D_DP_EW_TRUNCATE_VALUE: u32 = 0x0ac;
    /// `SDP_D_FEATURE_MODE_CFG`.
    pub const D_FEATURE_MODE_CFG: u32 = 0x0b0;
    /// `SDP_D_DST_DMA_CFG`.
    pub const D_DST_DMA_CFG: u32 = 0x0b4;
    /// `SDP_D_DST_BATCH_STRIDE`.
    pub const D_DST_BATCH_STRIDE: u32 = 0x0b8;
    /// `SDP_D_DATA_FORMAT`.
    pub const D_DATA_FORMAT: u32 = 0x0bc;
    /// `SDP_D_CVT_OFFSET`.
    pub const D_CVT_OFFSET: u32 = 0x0c0;
    /// `SDP_D_CVT_SCALE`.
    pub const D_CVT_SCALE: u32 = 0x0c4;
    /// `SDP_D_CVT_SHIFT`.
    pub const D_CVT_SHIFT: u32 = 0x0c8;
    /// `SDP_D_STATUS`.
    pub const D_STATUS: u32 = 0x0cc;
    /// `SDP_D_STATUS_NAN_INPUT_NUM`.
    pub const D_STATUS_NAN_INPUT_NUM: u32 = 0x0d0;
    /// `SDP_D_STATUS_INF_INPUT_NUM`.
    pub const D_STATUS_INF_INPUT_NUM: u32 = 0x0d4;
    /// `SDP_D_STATUS_NAN_OUTPUT_NUM`.
    pub const D_STATUS_NAN_OUTPUT_NUM: u32 = 0x0d8;
    /// `SDP_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x0dc;
    /// `SDP_D_PERF_WDMA_WRITE_STALL`.
    pub const D_PERF_WDMA_WRITE_STALL: u32 = 0x0e0;
    /// `SDP_D_PERF_LUT_UFLOW`.
    pub const D_PERF_LUT_UFLOW: u32 = 0x0e4;
    /// `SDP_D_PERF_LUT_OFLOW`.
    pub const D_PERF_LUT_OFLOW: u32 = 0x0e8;
    /// `SDP_D_PERF_OUT_SATURATION`.
    pub const D_PERF_OUT_SATURATION: u32 = 0x0ec;
    /// `SDP_D_PERF_LUT_HYBRID`.
    pub const D_PERF_LUT_HYBRID: u32 = 0x0f0;
    /// `SDP_D_PERF_LUT_LE_HIT`.
    pub const D_PERF_LUT_LE_HIT: u32 = 0x0f4;
    /// `SDP_D_PERF_LUT_LO_HIT`.
    pub const D_PERF_LUT_LO_HIT: u32 = 0x0f8;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub S_LUT_ACCESS_CFG [
            LUT_ADDR OFFSET(0) NUMBITS(10) [],
            LUT_TABLE_ID OFFSET(16) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
            LUT_ACCESS_TYPE OFFSET(17) NUMBITS(1) [
                READ = 0,
                WRITE = 1,
            ],
        ],
        pub S_LUT_ACCESS_DATA [
            LUT_DATA OFFSET(0) NUMBITS(16) [],
        ],
        pub S_LUT_CFG [
            LUT_LE_FUNCTION OFFSET(0) NUMBITS(1) [
                EXPONENT = 0,
                LINEAR = 1,
            ],
            LUT_UFLOW_PRIORITY OFFSET(4) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
            LUT_OFLOW_PRIORITY OFFSET(5) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
            LUT_HYBRID_PRIORITY OFFSET(6) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
        ],
        pub S_LUT_INFO [
            LUT_LE_INDEX_OFFSET OFFSET(0) NUMBITS(8) [],
            LUT_LE_INDEX_SELECT OFFSET(8) NUMBITS(8) [],
            LUT_LO_INDEX_SELECT OFFSET(16) NUMBITS(8) [],
        ],
        pub S_LUT_LE_START [
            LUT_LE_START OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LE_END [
            LUT_LE_END OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LO_START [
            LUT_LO_START OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LO_END [
            LUT_LO_END OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LE_SLOPE_SCALE [
            LUT_LE_SLOPE_UFLOW_SCALE OFFSET(0) NUMBITS(16) [],
            LUT_LE_SLOPE_OFLOW_SCALE OFFSET(16) NUMBITS(16) [],
        ],
        pub S_LUT_LE_SLOPE_SHIFT [
            LUT_LE_SLOPE_UFLOW_SHIFT OFFSET(0) NUMBITS(5) [],
            LUT_LE_SLOPE_OFLOW_SHIFT OFFSET(5) NUMBITS(5) [],
        ],
        pub S_LUT_LO_SLOPE_SCALE [
            LUT_LO_SLOPE_UFLOW_SCALE OFFSET(0) NUMBITS(16) [],
            LUT_LO_SLOPE_OFLOW_SCALE OFFSET(16) NUMBITS(16) [],
        ],
        pub S_LUT_LO_SLOPE_SHIFT [
            LUT_LO_SLOPE_UFLOW_SHIFT OFFSET(0) NUMBITS(5) [],
            LUT_LO_SLOPE_OFLOW_SHIFT OFFSET(5) NUMBITS(5) [],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATA_CUBE_WIDTH [
            WIDTH OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_HEIGHT [
            HEIGHT OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_CHANNEL [
            CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DST_BASE_ADDR_LOW [
            DST_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_BASE_ADDR_HIGH [
            DST_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_LINE_STRIDE [
            DST_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_SURFACE_STRIDE [
            DST_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DP_BS_CFG [
            BS_BYPASS OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BS_ALU_BYPASS OFFSET(1) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BS_ALU_ALGO OFFSET(2) NUMBITS(2) [
                MAX = 0,
                MIN = 1,
                SUM = 2,
            ],
            BS_MUL_BYPASS OFFSET(4) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BS_MUL_PRELU OFFSET(5) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BS_RELU_BYPASS OFFSET(6) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub D_DP_BS_ALU_CFG [
            BS_ALU_SRC OFFSET(0) NUMBITS(1) [
                REG = 0,
                MEM = 1,
            ],
            BS_ALU_SHIFT_VALUE OFFSET(8) NUMBITS(6) [],
        ],
        pub D_DP_BS_ALU_SRC_VALUE [
            BS_ALU_OPERAND OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DP_BS_MUL_CFG [
            BS_MUL_SRC OFFSET(0) NUMBITS(1) [
                REG = 0,
                MEM = 1,
            ],
            BS_MUL_SHIFT_VALUE OFFSET(8) NUMBITS(8) [],
        ],
        pub D_DP_BS_MUL_SRC_VALUE [
            BS_MUL_OPERAND OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DP_BN_CFG [
            BN_BYPASS OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BN_ALU_BYPASS OFFSET(1) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BN_ALU_ALGO OFFSET(2) NUMBITS(2) [
                MAX = 0,
                MIN = 1,
                SUM = 2,
            ],
            BN_MUL_BYPASS OFFSET(4) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BN_MUL_PRELU OFFSET(5) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            BN_RELU_BYPASS OFFSET(6) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub D_DP_BN_ALU_CFG [
            BN_ALU_SRC OFFSET(0) NUMBITS(1) [
                REG = 0,
                MEM = 1,
            ],
            BN_ALU_SHIFT_VALUE OFFSET(8) NUMBITS(6) [],
        ],
        pub D_DP_BN_ALU_SRC_VALUE [
            BN_ALU_OPERAND OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DP_BN_MUL_CFG [
            BN_MUL_SRC OFFSET(0) NUMBITS(1) [
                REG = 0,
                MEM = 1,
            ],
            BN_MUL_SHIFT_VALUE OFFSET(8) NUMBITS(8) [],
        ],
        pub D_DP_BN_MUL_SRC_VALUE [
            BN_MUL_OPERAND OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DP_EW_CFG [
            EW_BYPASS OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            EW_ALU_BYPASS OFFSET(1) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            EW_ALU_ALGO OFFSET(2) NUMBITS(2) [
                MAX = 0,
                MIN = 1,
                SUM = 2,
                EQL = 3,
            ],
            EW_MUL_BYPASS OFFSET(4) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            EW_MUL_PRELU OFFSET(5) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            EW_LUT_BYPASS OFFSET(6) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub D_DP_EW_ALU_CFG [
            EW_ALU_SRC OFFSET(0) NUMBITS(1) [
                REG = 0,
                MEM = 1,
            ],
            EW_ALU_CVT_BYPASS OFFSET(1) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub D_DP_EW_ALU_SRC_VALUE [
            EW_ALU_OPERAND OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DP_EW_ALU_CVT_OFFSET_VALUE [
            EW_ALU_CVT_OFFSET OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DP_EW_ALU_CVT_SCALE_VALUE [
            EW_ALU_CVT_SCALE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DP_EW_ALU_CVT_TRUNCATE_VALUE [
            EW_ALU_CVT_TRUNCATE OFFSET(0) NUMBITS(6) [],
        ],
        pub D_DP_EW_MUL_CFG [
            EW_MUL_SRC OFFSET(0) NUMBITS(1) [
                REG = 0,
                MEM = 1,
            ],
            EW_MUL_CVT_BYPASS OFFSET(1) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub D_DP_EW_MUL_SRC_VALUE [
            EW_MUL_OPERAND OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DP_EW_MUL_CVT_OFFSET_VALUE [
            EW_MUL_CVT_OFFSET OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DP_EW_MUL_CVT_SCALE_VALUE [
            EW_MUL_CVT_SCALE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DP_EW_MUL_CVT_TRUNCATE_VALUE [
            EW_MUL_CVT_TRUNCATE OFFSET(0) NUMBITS(6) [],
        ],
        pub D_DP_EW_TRUNCATE_VALUE [
            EW_TRUNCATE OFFSET(0) NUMBITS(10) [],
        ],
        pub D_FEATURE_MODE_CFG [
            FLYING_MODE OFFSET(0) NUMBITS(1) [
                OFF = 0,
                ON = 1,
            ],
            OUTPUT_DST OFFSET(1) NUMBITS(1) [
                MEM = 0,
                PDP = 1,
            ],
            WINOGRAD OFFSET(2) NUMBITS(1) [
                OFF = 0,
                ON = 1,
            ],
            NAN_TO_ZERO OFFSET(3) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            BATCH_NUMBER OFFSET(8) NUMBITS(5) [],
        ],
        pub D_DST_DMA_CFG [
            DST_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_DST_BATCH_STRIDE [
            DST_BATCH_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DATA_FORMAT [
            PROC_PRECISION OFFSET(0) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
            OUT_PRECISION OFFSET(2) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
        pub D_CVT_OFFSET [
            CVT_OFFSET OFFSET(0) NUMBITS(32) [],
        ],
        pub D_CVT_SCALE [
            CVT_SCALE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_CVT_SHIFT [
            CVT_SHIFT OFFSET(0) NUMBITS(6) [],
        ],
        pub D_STATUS [
            STATUS_UNEQUAL OFFSET(0) NUMBITS(1) [],
        ],
        pub D_STATUS_NAN_INPUT_NUM [
            STATUS_NAN_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_STATUS_INF_INPUT_NUM [
            STATUS_INF_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_STATUS_NAN_OUTPUT_NUM [
            STATUS_NAN_OUTPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_ENABLE [
            PERF_DMA_EN OFFSET(0) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            PERF_LUT_EN OFFSET(1) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            PERF_SAT_EN OFFSET(2) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
            PERF_NAN_INF_COUNT_EN OFFSET(3) NUMBITS(1) [
                NO = 0,
                YES = 1,
            ],
        ],
        pub D_PERF_WDMA_WRITE_STALL [
            WDMA_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_UFLOW [
            LUT_UFLOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_OFLOW [
            LUT_OFLOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_OUT_SATURATION [
            OUT_SATURATION OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_HYBRID [
            LUT_HYBRID OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_LE_HIT [
            LUT_LE_HIT OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_LO_HIT [
            LUT_LO_HIT OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the PDP_RDMA unit.
pub mod pdp_rdma {
    /// `PDP_RDMA_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `PDP_RDMA_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `PDP_RDMA_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `PDP_RDMA_D_DATA_CUBE_IN_WIDTH`.
    pub const D_DATA_CUBE_IN_WIDTH: u32 = 0x00c;
    /// `PDP_RDMA_D_DATA_CUBE_IN_HEIGHT`.
    pub const D_DATA_CUBE_IN_HEIGHT: u32 = 0x010;
    /// `PDP_RDMA_D_DATA_CUBE_IN_CHANNEL`.
    pub const D_DATA_CUBE_IN_CHANNEL: u32 = 0x014;
    /// `PDP_RDMA_D_FLYING_MODE`.
    pub const D_FLYING_MODE: u32 = 0x018;
    /// `PDP_RDMA_D_SRC_BASE_ADDR_LOW`.
    pub const D_SRC_BASE_ADDR_LOW: u32 = 0x01c;
    /// `PDP_RDMA_D_SRC_BASE_ADDR_HIGH`.
    pub const D_SRC_BASE_ADDR_HIGH: u32 = 0x020;
    /// `PDP_RDMA_D_SRC_LINE_STRIDE`.
    pub const D_SRC_LINE_STRIDE: u32 = 0x024;
    /// `PDP_RDMA_D_SRC_SURFACE_STRIDE`.
    pub const D_SRC_SURFACE_STRIDE: u32 = 0x028;
    /// `PDP_RDMA_D_SRC_RAM_CFG`.
    pub const D_SRC_RAM_CFG: u32 = 0x02c;
    /// `PDP_RDMA_D_DATA_FORMAT`.
    pub const D_DATA_FORMAT: u32 = 0x030;
    /// `PDP_RDMA_D_OPERATION_MODE_CFG`.
    pub const D_OPERATION_MODE_CFG: u32 = 0x034;
    /// `PDP_RDMA_D_POOLING_KERNEL_CFG`.
    pub const D_POOLING_KERNEL_CFG: u32 = 0x038;
    /// `PDP_RDMA_D_POOLING_PADDING_CFG`.
    pub const D_POOLING_PADDING_CFG: u32 = 0x03c;
    /// `PDP_RDMA_D_PARTIAL_WIDTH_IN`.
    pub const D_PARTIAL_WIDTH_IN: u32 = 0x040;
    /// `PDP_RDMA_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x044;
    /// `PDP_RDMA_D_PERF_READ_STALL`.
    pub const D_PERF_READ_STALL: u32 = 0x048;
    /// `PDP_RDMA_D_CYA`.
    pub const D_CYA: u32 = 0x04c;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATA_CUBE_IN_WIDTH [
            CUBE_IN_WIDTH OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_IN_HEIGHT [
            CUBE_IN_HEIGHT OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_IN_CHANNEL [
            CUBE_IN_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_FLYING_MODE [
            FLYING_MODE OFFSET(0) NUMBITS(1) [
                ON_FLYING = 0,
                OFF_FLYING = 1,
            ],
        ],
        pub D_SRC_BASE_ADDR_LOW [
            SRC_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_BASE_ADDR_HIGH [
            SRC_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_LINE_STRIDE [
            SRC_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_SURFACE_STRIDE [
            SRC_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_RAM_CFG [
            SRC_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_DATA_FORMAT [
            INPUT_DATA OFFSET(0) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
        pub D_OPERATION_MODE_CFG [
            SPLIT_NUM OFFSET(0) NUMBITS(8) [],
        ],
        pub D_POOLING_KERNEL_CFG [
            KERNEL_WIDTH OFFSET(0) NUMBITS(4) [
                KERNEL_WIDTH_1 = 0,
                KERNEL_WIDTH_2 = 1,
                KERNEL_WIDTH_3 = 2,
                KERNEL_WIDTH_4 = 3,
                KERNEL_WIDTH_5 = 4,
                KERNEL_WIDTH_6 = 5,
                KERNEL_WIDTH_7 = 6,
                KERNEL_WIDTH_8 = 7,
            ],
            KERNEL_STRIDE_WIDTH OFFSET(4) NUMBITS(4) [],
        ],
        pub D_POOLING_PADDING_CFG [
            PAD_WIDTH OFFSET(0) NUMBITS(4) [],
        ],
        pub D_PARTIAL_WIDTH_IN [
            PARTIAL_WIDTH_IN_FIRST OFFSET(0) NUMBITS(10) [],
            PARTIAL_WIDTH_IN_LAST OFFSET(10) NUMBITS(10) [],
            PARTIAL_WIDTH_IN_MID OFFSET(20) NUMBITS(10) [],
        ],
        pub D_PERF_ENABLE [
            DMA_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_PERF_READ_STALL [
            PERF_READ_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_CYA [
            CYA OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the PDP unit.
pub mod pdp {
    /// `PDP_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `PDP_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `PDP_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `PDP_D_DATA_CUBE_IN_WIDTH`.
    pub const D_DATA_CUBE_IN_WIDTH: u32 = 0x00c;
    /// `PDP_D_DATA_CUBE_IN_HEIGHT`.
    pub const D_DATA_CUBE_IN_HEIGHT: u32 = 0x010;
    /// `PDP_D_DATA_CUBE_IN_CHANNEL`.
    pub const D_DATA_CUBE_IN_CHANNEL: u32 = 0x014;
    /// `PDP_D_DATA_CUBE_OUT_WIDTH`.
    pub const D_DATA_CUBE_OUT_WIDTH: u32 = 0x018;
    /// `PDP_D_DATA_CUBE_OUT_HEIGHT`.
    pub const D_DATA_CUBE_OUT_HEIGHT: u32 = 0x01c;
    /// `PDP_D_DATA_CUBE_OUT_CHANNEL`.
    pub const D_DATA_CUBE_OUT_CHANNEL: u32 = 0x020;
    /// `PDP_D_OPERATION_MODE_CFG`.
    pub const D_OPERATION_MODE_CFG: u32 = 0x024;
    /// `PDP_D_NAN_FLUSH_TO_ZERO`.
    pub const D_NAN_FLUSH_TO_ZERO: u32 = 0x028;
    /// `PDP_D_PARTIAL_WIDTH_IN`.
    pub const D_PARTIAL_WIDTH_IN: u32 = 0x02c;
    /// `PDP_D_PARTIAL_WIDTH_OUT`.
    pub const D_PARTIAL_WIDTH_OUT: u32 = 0x030;
    /// `PDP_D_POOLING_KERNEL_CFG`.
    pub const D_POOLING_KERNEL_CFG: u32 = 0x034;
    /// `PDP_D_RECIP_KERNEL_WIDTH`.
    pub const D_RECIP_KERNEL_WIDTH: u32 = 0x038;
    /// `PDP_D_RECIP_KERNEL_HEIGHT`.
    pub const D_RECIP_KERNEL_HEIGHT: u32 = 0x03c;
    /// `PDP_D_POOLING_PADDING_CFG`.
    pub const D_POOLING_PADDING_CFG: u32 = 0x040;
    /// `PDP_D_POOLING_PADDING_VALUE_1_CFG`.
    pub const D_POOLING_PADDING_VALUE_1_CFG: u32 = 0x044;
    /// `PDP_D_POOLING_PADDING_VALUE_2_CFG`.
    pub const D_POOLING_PADDING_VALUE_2_CFG: u32 = 0x048;
    /// `PDP_D_POOLING_PADDING_VALUE_3_CFG`.
    pub const D_POOLING_PADDING_VALUE_3_CFG: u32 = 0x04c;
    /// `PDP_D_POOLING_PADDING_VALUE_4_CFG`.
    pub const D_POOLING_PADDING_VALUE_4_CFG: u32 = 0x050;
    /// `PDP_D_POOLING_PADDING_VALUE_5_CFG`.
    pub const D_POOLING_PADDING_VALUE_5_CFG: u32 = 0x054;
    /// `PDP_D_POOLING_PADDING_VALUE_6_CFG`.
    pub const D_POOLING_PADDING_VALUE_6_CFG: u32 = 0x058;
    /// `PDP_D_POOLING_PADDING_VALUE_7_CFG`.
    pub const D_POOLING_PADDING_VALUE_7_CFG: u32 = 0x05c;
    /// `PDP_D_SRC_BASE_ADDR_LOW`.
    pub const D_SRC_BASE_ADDR_LOW: u32 = 0x060;
    /// `PDP_D_SRC_BASE_ADDR_HIGH`.
    pub const D_SRC_BASE_ADDR_HIGH: u32 = 0x064;
    /// `PDP_D_SRC_LINE_STRIDE`.
    pub const D_SRC_LINE_STRIDE: u32 = 0x068;
    /// `PDP_D_SRC_SURFACE_STRIDE`.
    pub const D_SRC_SURFACE_STRIDE: u32 = 0x06c;
    /// `PDP_D_DST_BASE_ADDR_LOW`.
    pub const D_DST_BASE_ADDR_LOW: u32 = 0x070;
    /// `PDP_D_DST_BASE_ADDR_HIGH`.
    pub const D_DST_BASE_ADDR_HIGH: u32 = 0x074;
    /// `PDP_D_DST_LINE_STRIDE`.
    pub const D_DST_LINE_STRIDE: u32 = 0x078;
    /// `PDP_D_DST_SURFACE_STRIDE`.
    pub const D_DST_SURFACE_STRIDE: u32 = 0x07c;
    /// `PDP_D_DST_RAM_CFG`.
    pub const D_DST_RAM_CFG: u32 = 0x080;
    /// `PDP_D_DATA_FORMAT`.
    pub const D_DATA_FORMAT: u32 = 0x084;
    /// `PDP_D_INF_INPUT_NUM`.
    pub const D_INF_INPUT_NUM: u32 = 0x088;
    /// `PDP_D_NAN_INPUT_NUM`.
    pub const D_NAN_INPUT_NUM: u32 = 0x08c;
    /// `PDP_D_NAN_OUTPUT_NUM`.
    pub const D_NAN_OUTPUT_NUM: u32 = 0x090;
    /// `PDP_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x094;
    /// `PDP_D_PERF_WRITE_STALL`.
    pub const D_PERF_WRITE_STALL: u32 = 0x098;
    /// `PDP_D_CYA`.
    pub const D_CYA: u32 = 0x09c;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATA_CUBE_IN_WIDTH [
            CUBE_IN_WIDTH OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_IN_HEIGHT [
            CUBE_IN_HEIGHT OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_IN_CHANNEL [
            CUBE_IN_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_OUT_WIDTH [
            CUBE_OUT_WIDTH OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_OUT_HEIGHT [
            CUBE_OUT_HEIGHT OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_OUT_CHANNEL [
            CUBE_OUT_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_OPERATION_MODE_CFG [
            POOLING_METHOD OFFSET(0) NUMBITS(2) [
                POOLING_METHOD_AVERAGE = 0,
                POOLING_METHOD_MAX = 1,
                POOLING_METHOD_MIN = 2,
            ],
            FLYING_MODE OFFSET(4) NUMBITS(1) [
                ON_FLYING = 0,
                OFF_FLYING = 1,
            ],
            SPLIT_NUM OFFSET(8) NUMBITS(8) [],
        ],
        pub D_NAN_FLUSH_TO_ZERO [
            NAN_TO_ZERO OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_PARTIAL_WIDTH_IN [
            PARTIAL_WIDTH_IN_FIRST OFFSET(0) NUMBITS(10) [],
            PARTIAL_WIDTH_IN_LAST OFFSET(10) NUMBITS(10) [],
            PARTIAL_WIDTH_IN_MID OFFSET(20) NUMBITS(10) [],
        ],
        pub D_PARTIAL_WIDTH_OUT [
            PARTIAL_WIDTH_OUT_FIRST OFFSET(0) NUMBITS(10) [],
            PARTIAL_WIDTH_OUT_LAST OFFSET(10) NUMBITS(10) [],
            PARTIAL_WIDTH_OUT_MID OFFSET(20) NUMBITS(10) [],
        ],
        pub D_POOLING_KERNEL_CFG [
            KERNEL_WIDTH OFFSET(0) NUMBITS(4) [
                KERNEL_WIDTH_1 = 0,
                KERNEL_WIDTH_2 = 1,
                KERNEL_WIDTH_3 = 2,
                KERNEL_WIDTH_4 = 3,
                KERNEL_WIDTH_5 = 4,
                KERNEL_WIDTH_6 = 5,
                KERNEL_WIDTH_7 = 6,
                KERNEL_WIDTH_8 = 7,
            ],
            KERNEL_HEIGHT OFFSET(8) NUMBITS(4) [
                KERNEL_HEIGHT_1 = 0,
                KERNEL_HEIGHT_2 = 1,
                KERNEL_HEIGHT_3 = 2,
                KERNEL_HEIGHT_4 = 3,
                KERNEL_HEIGHT_5 = 4,
                KERNEL_HEIGHT_6 = 5,
                KERNEL_HEIGHT_7 = 6,
                KERNEL_HEIGHT_8 = 7,
            ],
            KERNEL_STRIDE_WIDTH OFFSET(16) NUMBITS(4) [],
            KERNEL_STRIDE_HEIGHT OFFSET(20) NUMBITS(4) [],
        ],
        pub D_RECIP_KERNEL_WIDTH [
            RECIP_KERNEL_WIDTH OFFSET(0) NUMBITS(17) [],
        ],
        pub D_RECIP_KERNEL_HEIGHT [
            RECIP_KERNEL_HEIGHT OFFSET(0) NUMBITS(17) [],
        ],
        pub D_POOLING_PADDING_CFG [
            PAD_LEFT OFFSET(0) NUMBITS(3) [],
            PAD_TOP OFFSET(4) NUMBITS(3) [],
            PAD_RIGHT OFFSET(8) NUMBITS(3) [],
            PAD_BOTTOM OFFSET(12) NUMBITS(3) [],
        ],
        pub D_POOLING_PADDING_VALUE_1_CFG [
            PAD_VALUE_1X OFFSET(0) NUMBITS(19) [],
        ],
        pub D_POOLING_PADDING_VALUE_2_CFG [
            PAD_VALUE_2X OFFSET(0) NUMBITS(19) [],
        ],
        pub D_POOLING_PADDING_VALUE_3_CFG [
            PAD_VALUE_3X OFFSET(0) NUMBITS(19) [],
        ],
        pub D_POOLING_PADDING_VALUE_4_CFG [
            PAD_VALUE_4X OFFSET(0) NUMBITS(19) [],
        ],
        pub D_POOLING_PADDING_VALUE_5_CFG [
            PAD_VALUE_5X OFFSET(0) NUMBITS(19) [],
        ],
        pub D_POOLING_PADDING_VALUE_6_CFG [
            PAD_VALUE_6X OFFSET(0) NUMBITS(19) [],
        ],
        pub D_POOLING_PADDING_VALUE_7_CFG [
            PAD_VALUE_7X OFFSET(0) NUMBITS(19) [],
        ],
        pub D_SRC_BASE_ADDR_LOW [
            SRC_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_BASE_ADDR_HIGH [
            SRC_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_LINE_STRIDE [
            SRC_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_SURFACE_STRIDE [
            SRC_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_BASE_ADDR_LOW [
            DST_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_BASE_ADDR_HIGH [
            DST_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_LINE_STRIDE [
            DST_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_SURFACE_STRIDE [
            DST_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_RAM_CFG [
            DST_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_DATA_FORMAT [
            INPUT_DATA OFFSET(0) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
        pub D_INF_INPUT_NUM [
            INF_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_NAN_INPUT_NUM [
            NAN_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_NAN_OUTPUT_NUM [
            NAN_OUTPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_ENABLE [
            DMA_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_PERF_WRITE_STALL [
            PERF_WRITE_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_CYA [
            CYA OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the CDP_RDMA unit.
pub mod cdp_rdma {
    /// `CDP_RDMA_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `CDP_RDMA_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `CDP_RDMA_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `CDP_RDMA_D_DATA_CUBE_WIDTH`.
    pub const D_DATA_CUBE_WIDTH: u32 = 0x00c;
    /// `CDP_RDMA_D_DATA_CUBE_HEIGHT`.
    pub const D_DATA_CUBE_HEIGHT: u32 = 0x010;
    /// `CDP_RDMA_D_DATA_CUBE_CHANNEL`.
    pub const D_DATA_CUBE_CHANNEL: u32 = 0x014;
    /// `CDP_RDMA_D_SRC_BASE_ADDR_LOW`.
    pub const D_SRC_BASE_ADDR_LOW: u32 = 0x018;
    /// `CDP_RDMA_D_SRC_BASE_ADDR_HIGH`.
    pub const D_SRC_BASE_ADDR_HIGH: u32 = 0x01c;
    /// `CDP_RDMA_D_SRC_LINE_STRIDE`.
    pub const D_SRC_LINE_STRIDE: u32 = 0x020;
    /// `CDP_RDMA_D_SRC_SURFACE_STRIDE`.
    pub const D_SRC_SURFACE_STRIDE: u32 = 0x024;
    /// `CDP_RDMA_D_SRC_DMA_CFG`.
    pub const D_SRC_DMA_CFG: u32 = 0x028;
    /// `CDP_RDMA_D_SRC_COMPRESSION_EN`.
    pub const D_SRC_COMPRESSION_EN: u32 = 0x02c;
    /// `CDP_RDMA_D_OPERATION_MODE`.
    pub const D_OPERATION_MODE: u32 = 0x030;
    /// `CDP_RDMA_D_DATA_FORMAT`.
    pub const D_DATA_FORMAT: u32 = 0x034;
    /// `CDP_RDMA_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x038;
    /// `CDP_RDMA_D_PERF_READ_STALL`.
    pub const D_PERF_READ_STALL: u32 = 0x03c;
    /// `CDP_RDMA_D_CYA`.
    pub const D_CYA: u32 = 0x040;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATA_CUBE_WIDTH [
            WIDTH OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_HEIGHT [
            HEIGHT OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DATA_CUBE_CHANNEL [
            CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_SRC_BASE_ADDR_LOW [
            SRC_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_BASE_ADDR_HIGH [
            SRC_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_LINE_STRIDE [
            SRC_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_SURFACE_STRIDE [
            SRC_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_SRC_DMA_CFG [
            SRC_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_SRC_COMPRESSION_EN [
            SRC_COMPRESSION_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_OPERATION_MODE [
            OPERATION_MODE OFFSET(0) NUMBITS(2) [
                READPHILE = 0,
                WRITEPHILE = 1,
                ORDINARY = 2,
            ],
        ],
        pub D_DATA_FORMAT [
            INPUT_DATA OFFSET(0) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
        pub D_PERF_ENABLE [
            DMA_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_PERF_READ_STALL [
            PERF_READ_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_CYA [
            CYA OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the CDP unit.
pub mod cdp {
    /// `CDP_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `CDP_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `CDP_S_LUT_ACCESS_CFG`.
    pub const S_LUT_ACCESS_CFG: u32 = 0x008;
    /// `CDP_S_LUT_ACCESS_DATA`.
    pub const S_LUT_ACCESS_DATA: u32 = 0x00c;
    /// `CDP_S_LUT_CFG`.
    pub const S_LUT_CFG: u32 = 0x010;
    /// `CDP_S_LUT_INFO`.
    pub const S_LUT_INFO: u32 = 0x014;
    /// `CDP_S_LUT_LE_START_LOW`.
    pub const S_LUT_LE_START_LOW: u32 = 0x018;
    /// `CDP_S_LUT_LE_START_HIGH`.
    pub const S_LUT_LE_START_HIGH: u32 = 0x01c;
    /// `CDP_S_LUT_LE_END_LOW`.
    pub const S_LUT_LE_END_LOW: u32 = 0x020;
    /// `CDP_S_LUT_LE_END_HIGH`.
    pub const S_LUT_LE_END_HIGH: u32 = 0x024;
    /// `CDP_S_LUT_LO_START_LOW`.
    pub const S_LUT_LO_START_LOW: u32 = 0x028;
    /// `CDP_S_LUT_LO_START_HIGH`.
    pub const S_LUT_LO_START_HIGH: u32 = 0x02c;
    /// `CDP_S_LUT_LO_END_LOW`.
    pub const S_LUT_LO_END_LOW: u32 = 0x030;
    /// `CDP_S_LUT_LO_END_HIGH`.
    pub const S_LUT_LO_END_HIGH: u32 = 0x034;
    /// `CDP_S_LUT_LE_SLOPE_SCALE`.
    pub const S_LUT_LE_SLOPE_SCALE: u32 = 0x038;
    /// `CDP_S_LUT_LE_SLOPE_SHIFT`.
    pub const S_LUT_LE_SLOPE_SHIFT: u32 = 0x03c;
    /// `CDP_S_LUT_LO_SLOPE_SCALE`.
    pub const S_LUT_LO_SLOPE_SCALE: u32 = 0x040;
    /// `CDP_S_LUT_LO_SLOPE_SHIFT`.
    pub const S_LUT_LO_SLOPE_SHIFT: u32 = 0x044;
    /// `CDP_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x048;
    /// `CDP_D_FUNC_BYPASS`.
    pub const D_FUNC_BYPASS: u32 = 0x04c;
    /// `CDP_D_DST_BASE_ADDR_LOW`.
    pub const D_DST_BASE_ADDR_LOW: u32 = 0x050;
    /// `CDP_D_DST_BASE_ADDR_HIGH`.
    pub const D_DST_BASE_ADDR_HIGH: u32 = 0x054;
    /// `CDP_D_DST_LINE_STRIDE`.
    pub const D_DST_LINE_STRIDE: u32 = 0x058;
    /// `CDP_D_DST_SURFACE_STRIDE`.
    pub const D_DST_SURFACE_STRIDE: u32 = 0x05c;
    /// `CDP_D_DST_DMA_CFG`.
    pub const D_DST_DMA_CFG: u32 = 0x060;
    /// `CDP_D_DST_COMPRESSION_EN`.
    pub const D_DST_COMPRESSION_EN: u32 = 0x064;
    /// `CDP_D_DATA_FORMAT`.
    pub const D_DATA_FORMAT: u32 = 0x068;
    /// `CDP_D_NAN_FLUSH_TO_ZERO`.
    pub const D_NAN_FLUSH_TO_ZERO: u32 = 0x06c;
    /// `CDP_D_LRN_CFG`.
    pub const D_LRN_CFG: u32 = 0x070;
    /// `CDP_D_DATIN_OFFSET`.
    pub const D_DATIN_OFFSET: u32 = 0x074;
    /// `CDP_D_DATIN_SCALE`.
    pub const D_DATIN_SCALE: u32 = 0x078;
    /// `CDP_D_DATIN_SHIFTER`.
    pub const D_DATIN_SHIFTER: u32 = 0x07c;
    /// `CDP_D_DATOUT_OFFSET`.
    pub const D_DATOUT_OFFSET: u32 = 0x080;
    /// `CDP_D_DATOUT_SCALE`.
    pub const D_DATOUT_SCALE: u32 = 0x084;
    /// `CDP_D_DATOUT_SHIFTER`.
    pub const D_DATOUT_SHIFTER: u32 = 0x088;
    /// `CDP_D_NAN_INPUT_NUM`.
    pub const D_NAN_INPUT_NUM: u32 = 0x08c;
    /// `CDP_D_INF_INPUT_NUM`.
    pub const D_INF_INPUT_NUM: u32 = 0x090;
    /// `CDP_D_NAN_OUTPUT_NUM`.
    pub const D_NAN_OUTPUT_NUM: u32 = 0x094;
    /// `CDP_D_OUT_SATURATION`.
    pub const D_OUT_SATURATION: u32 = 0x098;
    /// `CDP_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x09c;
    /// `CDP_D_PERF_WRITE_STALL`.
    pub const D_PERF_WRITE_STALL: u32 = 0x0a0;
    /// `CDP_D_PERF_LUT_UFLOW`.
    pub const D_PERF_LUT_UFLOW: u32 = 0x0a4;
    /// `CDP_D_PERF_LUT_OFLOW`.
    pub const D_PERF_LUT_OFLOW: u32 = 0x0a8;
    /// `CDP_D_PERF_LUT_HYBRID`.
    pub const D_PERF_LUT_HYBRID: u32 = 0x0ac;
    /// `CDP_D_PERF_LUT_LE_HIT`.
    pub const D_PERF_LUT_LE_HIT: u32 = 0x0b0;
    /// `CDP_D_PERF_LUT_LO_HIT`.
    pub const D_PERF_LUT_LO_HIT: u32 = 0x0b4;
    /// `CDP_D_CYA`.
    pub const D_CYA: u32 = 0x0b8;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub S_LUT_ACCESS_CFG [
            LUT_ADDR OFFSET(0) NUMBITS(10) [],
            LUT_TABLE_ID OFFSET(16) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
            LUT_ACCESS_TYPE OFFSET(17) NUMBITS(1) [
                READ = 0,
                WRITE = 1,
            ],
        ],
        pub S_LUT_ACCESS_DATA [
            LUT_DATA OFFSET(0) NUMBITS(16) [],
        ],
        pub S_LUT_CFG [
            LUT_LE_FUNCTION OFFSET(0) NUMBITS(1) [
                EXPONENT = 0,
                LINEAR = 1,
            ],
            LUT_UFLOW_PRIORITY OFFSET(4) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
            LUT_OFLOW_PRIORITY OFFSET(5) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
            LUT_HYBRID_PRIORITY OFFSET(6) NUMBITS(1) [
                LE = 0,
                LO = 1,
            ],
        ],
        pub S_LUT_INFO [
            LUT_LE_INDEX_OFFSET OFFSET(0) NUMBITS(8) [],
            LUT_LE_INDEX_SELECT OFFSET(8) NUMBITS(8) [],
            LUT_LO_INDEX_SELECT OFFSET(16) NUMBITS(8) [],
        ],
        pub S_LUT_LE_START_LOW [
            LUT_LE_START_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LE_START_HIGH [
            LUT_LE_START_HIGH OFFSET(0) NUMBITS(6) [],
        ],
        pub S_LUT_LE_END_LOW [
            LUT_LE_END_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LE_END_HIGH [
            LUT_LE_END_HIGH OFFSET(0) NUMBITS(6) [],
        ],
        pub S_LUT_LO_START_LOW [
            LUT_LO_START_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LO_START_HIGH [
            LUT_LO_START_HIGH OFFSET(0) NUMBITS(6) [],
        ],
        pub S_LUT_LO_END_LOW [
            LUT_LO_END_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub S_LUT_LO_END_HIGH [
            LUT_LO_END_HIGH OFFSET(0) NUMBITS(6) [],
        ],
        pub S_LUT_LE_SLOPE_SCALE [
            LUT_LE_SLOPE_UFLOW_SCALE OFFSET(0) NUMBITS(16) [],
            LUT_LE_SLOPE_OFLOW_SCALE OFFSET(16) NUMBITS(16) [],
        ],
        pub S_LUT_LE_SLOPE_SHIFT [
            LUT_LE_SLOPE_UFLOW_SHIFT OFFSET(0) NUMBITS(5) [],
            LUT_LE_SLOPE_OFLOW_SHIFT OFFSET(5) NUMBITS(5) [],
        ],
        pub S_LUT_LO_SLOPE_SCALE [
            LUT_LO_SLOPE_UFLOW_SCALE OFFSET(0) NUMBITS(16) [],
            LUT_LO_SLOPE_OFLOW_SCALE OFFSET(16) NUMBITS(16) [],
        ],
        pub S_LUT_LO_SLOPE_SHIFT [
            LUT_LO_SLOPE_UFLOW_SHIFT OFFSET(0) NUMBITS(5) [],
            LUT_LO_SLOPE_OFLOW_SHIFT OFFSET(5) NUMBITS(5) [],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_FUNC_BYPASS [
            SQSUM_BYPASS OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            MUL_BYPASS OFFSET(1) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DST_BASE_ADDR_LOW [
            DST_BASE_ADDR_LOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_BASE_ADDR_HIGH [
            DST_BASE_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_LINE_STRIDE [
            DST_LINE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_SURFACE_STRIDE [
            DST_SURFACE_STRIDE OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DST_DMA_CFG [
            DST_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CV = 0,
                MC = 1,
            ],
        ],
        pub D_DST_COMPRESSION_EN [
            DST_COMPRESSION_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_DATA_FORMAT [
            INPUT_DATA_TYPE OFFSET(0) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
        pub D_NAN_FLUSH_TO_ZERO [
            NAN_TO_ZERO OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_LRN_CFG [
            NORMALZ_LEN OFFSET(0) NUMBITS(2) [
                LEN3 = 0,
                LEN5 = 1,
                LEN7 = 2,
                LEN9 = 3,
            ],
        ],
        pub D_DATIN_OFFSET [
            DATIN_OFFSET OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DATIN_SCALE [
            DATIN_SCALE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DATIN_SHIFTER [
            DATIN_SHIFTER OFFSET(0) NUMBITS(5) [],
        ],
        pub D_DATOUT_OFFSET [
            DATOUT_OFFSET OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DATOUT_SCALE [
            DATOUT_SCALE OFFSET(0) NUMBITS(16) [],
        ],
        pub D_DATOUT_SHIFTER [
            DATOUT_SHIFTER OFFSET(0) NUMBITS(6) [],
        ],
        pub D_NAN_INPUT_NUM [
            NAN_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_INF_INPUT_NUM [
            INF_INPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_NAN_OUTPUT_NUM [
            NAN_OUTPUT_NUM OFFSET(0) NUMBITS(32) [],
        ],
        pub D_OUT_SATURATION [
            OUT_SATURATION OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_ENABLE [
            DMA_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
            LUT_EN OFFSET(1) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_PERF_WRITE_STALL [
            PERF_WRITE_STALL OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_UFLOW [
            PERF_LUT_UFLOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_OFLOW [
            PERF_LUT_OFLOW OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_HYBRID [
            PERF_LUT_HYBRID OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_LE_HIT [
            PERF_LUT_LE_HIT OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_LUT_LO_HIT [
            PERF_LUT_LO_HIT OFFSET(0) NUMBITS(32) [],
        ],
        pub D_CYA [
            CYA OFFSET(0) NUMBITS(32) [],
        ],
    ];
}

/// Registers of the RBK unit.
pub mod rubik {
    /// `RBK_S_STATUS`.
    pub const S_STATUS: u32 = 0x000;
    /// `RBK_S_POINTER`.
    pub const S_POINTER: u32 = 0x004;
    /// `RBK_D_OP_ENABLE`.
    pub const D_OP_ENABLE: u32 = 0x008;
    /// `RBK_D_MISC_CFG`.
    pub const D_MISC_CFG: u32 = 0x00c;
    /// `RBK_D_DAIN_RAM_TYPE`.
    pub const D_DAIN_RAM_TYPE: u32 = 0x010;
    /// `RBK_D_DATAIN_SIZE_0`.
    pub const D_DATAIN_SIZE_0: u32 = 0x014;
    /// `RBK_D_DATAIN_SIZE_1`.
    pub const D_DATAIN_SIZE_1: u32 = 0x018;
    /// `RBK_D_DAIN_ADDR_HIGH`.
    pub const D_DAIN_ADDR_HIGH: u32 = 0x01c;
    /// `RBK_D_DAIN_ADDR_LOW`.
    pub const D_DAIN_ADDR_LOW: u32 = 0x020;
    /// `RBK_D_DAIN_LINE_STRIDE`.
    pub const D_DAIN_LINE_STRIDE: u32 = 0x024;
    /// `RBK_D_DAIN_SURF_STRIDE`.
    pub const D_DAIN_SURF_STRIDE: u32 = 0x028;
    /// `RBK_D_DAIN_PLANAR_STRIDE`.
    pub const D_DAIN_PLANAR_STRIDE: u32 = 0x02c;
    /// `RBK_D_DAOUT_RAM_TYPE`.
    pub const D_DAOUT_RAM_TYPE: u32 = 0x030;
    /// `RBK_D_DATAOUT_SIZE_1`.
    pub const D_DATAOUT_SIZE_1: u32 = 0x034;
    /// `RBK_D_DAOUT_ADDR_HIGH`.
    pub const D_DAOUT_ADDR_HIGH: u32 = 0x038;
    /// `RBK_D_DAOUT_ADDR_LOW`.
    pub const D_DAOUT_ADDR_LOW: u32 = 0x03c;
    /// `RBK_D_DAOUT_LINE_STRIDE`.
    pub const D_DAOUT_LINE_STRIDE: u32 = 0x040;
    /// `RBK_D_CONTRACT_STRIDE_0`.
    pub const D_CONTRACT_STRIDE_0: u32 = 0x044;
    /// `RBK_D_CONTRACT_STRIDE_1`.
    pub const D_CONTRACT_STRIDE_1: u32 = 0x048;
    /// `RBK_D_DAOUT_SURF_STRIDE`.
    pub const D_DAOUT_SURF_STRIDE: u32 = 0x04c;
    /// `RBK_D_DAOUT_PLANAR_STRIDE`.
    pub const D_DAOUT_PLANAR_STRIDE: u32 = 0x050;
    /// `RBK_D_DECONV_STRIDE`.
    pub const D_DECONV_STRIDE: u32 = 0x054;
    /// `RBK_D_PERF_ENABLE`.
    pub const D_PERF_ENABLE: u32 = 0x058;
    /// `RBK_D_PERF_READ_STALL`.
    pub const D_PERF_READ_STALL: u32 = 0x05c;
    /// `RBK_D_PERF_WRITE_STALL`.
    pub const D_PERF_WRITE_STALL: u32 = 0x060;
    tock_registers::register_bitfields![u32,
        pub S_STATUS [
            STATUS_0 OFFSET(0) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
            STATUS_1 OFFSET(16) NUMBITS(2) [
                IDLE = 0,
                RUNNING = 1,
                PENDING = 2,
            ],
        ],
        pub S_POINTER [
            PRODUCER OFFSET(0) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
            CONSUMER OFFSET(16) NUMBITS(1) [
                GROUP_0 = 0,
                GROUP_1 = 1,
            ],
        ],
        pub D_OP_ENABLE [
            OP_EN OFFSET(0) NUMBITS(1) [
                DISABLE = 0,
                ENABLE = 1,
            ],
        ],
        pub D_MISC_CFG [
            RUBIK_MODE OFFSET(0) NUMBITS(2) [
                CONTRACT = 0,
                SPLIT = 1,
                MERGE = 2,
            ],
            IN_PRECISION OFFSET(8) NUMBITS(2) [
                INT8 = 0,
                INT16 = 1,
                FP16 = 2,
            ],
        ],
        pub D_DAIN_RAM_TYPE [
            DATAIN_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CVIF = 0,
                MCIF = 1,
            ],
        ],
        pub D_DATAIN_SIZE_0 [
            DATAIN_WIDTH OFFSET(0) NUMBITS(13) [],
            DATAIN_HEIGHT OFFSET(16) NUMBITS(13) [],
        ],
        pub D_DATAIN_SIZE_1 [
            DATAIN_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DAIN_ADDR_HIGH [
            DAIN_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DAIN_ADDR_LOW [
            DAIN_ADDR_LOW OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DAIN_LINE_STRIDE [
            DAIN_LINE_STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DAIN_SURF_STRIDE [
            DAIN_SURF_STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DAIN_PLANAR_STRIDE [
            DAIN_PLANAR_STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DAOUT_RAM_TYPE [
            DATAOUT_RAM_TYPE OFFSET(0) NUMBITS(1) [
                CVIF = 0,
                MCIF = 1,
            ],
        ],
        pub D_DATAOUT_SIZE_1 [
            DATAOUT_CHANNEL OFFSET(0) NUMBITS(13) [],
        ],
        pub D_DAOUT_ADDR_HIGH [
            DAOUT_ADDR_HIGH OFFSET(0) NUMBITS(32) [],
        ],
        pub D_DAOUT_ADDR_LOW [
            DAOUT_ADDR_LOW OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DAOUT_LINE_STRIDE [
            DAOUT_LINE_STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub D_CONTRACT_STRIDE_0 [
            CONTRACT_STRIDE_0 OFFSET(5) NUMBITS(27) [],
        ],
        pub D_CONTRACT_STRIDE_1 [
            CONTRACT_STRIDE_1 OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DAOUT_SURF_STRIDE [
            DAOUT_SURF_STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DAOUT_PLANAR_STRIDE [
            DAOUT_PLANAR_STRIDE OFFSET(5) NUMBITS(27) [],
        ],
        pub D_DECONV_STRIDE [
            DECONV_X_STRIDE OFFSET(0) NUMBITS(5) [],
            DECONV_Y_STRIDE OFFSET(16) NUMBITS(5) [],
        ],
        pub D_PERF_ENABLE [
            PERF_EN OFFSET(0) NUMBITS(1) [],
        ],
        pub D_PERF_READ_STALL [
            RD_STALL_CNT OFFSET(0) NUMBITS(32) [],
        ],
        pub D_PERF_WRITE_STALL [
            WR_STALL_CNT OFFSET(0) NUMBITS(32) [],
        ],
    ];
}
