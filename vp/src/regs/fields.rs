//! Field layouts of the registers the engines decode, as `tock-registers` bitfields.
//!
//! Offsets and widths are those of the register manuals (`NVDLA_SDP.rdl`,
//! `NVDLA_PDP.rdl`, ... on `master`; identical in `arnvdla.h` of `nvdlav1` for these
//! registers). Engines read a register value from the executing group and decode it
//! with [`tock_registers::LocalRegisterCopy`], so a field cannot be read from the wrong
//! register.

#![allow(missing_docs)] // the field names are the manual's

use tock_registers::register_bitfields;

register_bitfields![u32,
    /// SDP `D_DP_BS_CFG`, `D_DP_BN_CFG`, `D_DP_EW_CFG` (bit 6 is ReLU bypass for BS/BN and
    /// LUT bypass for EW).
    pub DP_CFG [
        BYPASS OFFSET(0) NUMBITS(1) [],
        ALU_BYPASS OFFSET(1) NUMBITS(1) [],
        ALU_ALGO OFFSET(2) NUMBITS(2) [Max = 0, Min = 1, Sum = 2, Eql = 3],
        MUL_BYPASS OFFSET(4) NUMBITS(1) [],
        MUL_PRELU OFFSET(5) NUMBITS(1) [],
        RELU_OR_LUT_BYPASS OFFSET(6) NUMBITS(1) []
    ],
    /// SDP `D_DP_BS_ALU_CFG`, `D_DP_BN_ALU_CFG`.
    pub DP_ALU_CFG [
        SRC OFFSET(0) NUMBITS(1) [Reg = 0, Mem = 1],
        SHIFT_VALUE OFFSET(8) NUMBITS(6) []
    ],
    /// SDP `D_DP_BS_MUL_CFG`, `D_DP_BN_MUL_CFG` (shift is 8 bits in the register).
    pub DP_MUL_CFG [
        SRC OFFSET(0) NUMBITS(1) [Reg = 0, Mem = 1],
        SHIFT_VALUE OFFSET(8) NUMBITS(8) []
    ],
    /// SDP `D_DP_EW_ALU_CFG`, `D_DP_EW_MUL_CFG`.
    pub EW_OP_CFG [
        SRC OFFSET(0) NUMBITS(1) [Reg = 0, Mem = 1],
        CVT_BYPASS OFFSET(1) NUMBITS(1) []
    ],
    /// SDP `D_FEATURE_MODE_CFG`.
    pub SDP_FEATURE_MODE [
        FLYING_MODE OFFSET(0) NUMBITS(1) [Off = 0, On = 1],
        OUTPUT_DST OFFSET(1) NUMBITS(1) [Mem = 0, Pdp = 1],
        WINOGRAD OFFSET(2) NUMBITS(1) [],
        NAN_TO_ZERO OFFSET(3) NUMBITS(1) [],
        BATCH_NUMBER OFFSET(8) NUMBITS(5) []
    ],
    /// SDP `D_DATA_FORMAT`.
    pub SDP_DATA_FORMAT [
        PROC_PRECISION OFFSET(0) NUMBITS(2) [],
        OUT_PRECISION OFFSET(2) NUMBITS(2) []
    ],
    /// SDP_RDMA `D_FEATURE_MODE_CFG`.
    pub SDP_RDMA_FEATURE_MODE [
        FLYING_MODE OFFSET(0) NUMBITS(1) [],
        WINOGRAD OFFSET(1) NUMBITS(1) [],
        IN_PRECISION OFFSET(2) NUMBITS(2) [],
        PROC_PRECISION OFFSET(4) NUMBITS(2) [],
        OUT_PRECISION OFFSET(6) NUMBITS(2) [],
        BATCH_NUMBER OFFSET(8) NUMBITS(5) []
    ],
    /// SDP_RDMA `D_BRDMA_CFG`, `D_NRDMA_CFG`, `D_ERDMA_CFG`.
    pub OPERAND_DMA_CFG [
        DISABLE OFFSET(0) NUMBITS(1) [],
        DATA_USE OFFSET(1) NUMBITS(2) [Mul = 0, Alu = 1, Both = 2],
        DATA_SIZE OFFSET(3) NUMBITS(1) [OneByte = 0, TwoByte = 1],
        DATA_MODE OFFSET(4) NUMBITS(1) [PerKernel = 0, PerElement = 1],
        RAM_TYPE OFFSET(5) NUMBITS(1) [Cv = 0, Mc = 1]
    ],
    /// SDP/CDP `S_LUT_CFG`.
    pub LUT_CFG [
        LE_FUNCTION OFFSET(0) NUMBITS(1) [Exponent = 0, Linear = 1],
        UFLOW_PRIORITY OFFSET(4) NUMBITS(1) [Le = 0, Lo = 1],
        OFLOW_PRIORITY OFFSET(5) NUMBITS(1) [Le = 0, Lo = 1],
        HYBRID_PRIORITY OFFSET(6) NUMBITS(1) [Le = 0, Lo = 1]
    ],
    /// SDP/CDP `S_LUT_INFO`.
    pub LUT_INFO [
        LE_INDEX_OFFSET OFFSET(0) NUMBITS(8) [],
        LE_INDEX_SELECT OFFSET(8) NUMBITS(8) [],
        LO_INDEX_SELECT OFFSET(16) NUMBITS(8) []
    ],
    /// PDP `D_OPERATION_MODE_CFG`.
    pub PDP_OPERATION_MODE [
        POOLING_METHOD OFFSET(0) NUMBITS(2) [Average = 0, Max = 1, Min = 2],
        FLYING_MODE OFFSET(4) NUMBITS(1) [OnFlying = 0, OffFlying = 1],
        SPLIT_NUM OFFSET(8) NUMBITS(8) []
    ],
    /// PDP `D_POOLING_KERNEL_CFG`.
    pub PDP_KERNEL_CFG [
        KERNEL_WIDTH OFFSET(0) NUMBITS(4) [],
        KERNEL_HEIGHT OFFSET(8) NUMBITS(4) [],
        KERNEL_STRIDE_WIDTH OFFSET(16) NUMBITS(4) [],
        KERNEL_STRIDE_HEIGHT OFFSET(20) NUMBITS(4) []
    ],
    /// PDP `D_POOLING_PADDING_CFG`.
    pub PDP_PADDING_CFG [
        PAD_LEFT OFFSET(0) NUMBITS(3) [],
        PAD_TOP OFFSET(4) NUMBITS(3) [],
        PAD_RIGHT OFFSET(8) NUMBITS(3) [],
        PAD_BOTTOM OFFSET(12) NUMBITS(3) []
    ],
    /// CDP `D_FUNC_BYPASS`.
    pub CDP_FUNC_BYPASS [
        SQSUM_BYPASS OFFSET(0) NUMBITS(1) [],
        MUL_BYPASS OFFSET(1) NUMBITS(1) []
    ],
    /// BDMA `CFG_CMD`.
    pub BDMA_CMD [
        SRC_RAM_TYPE OFFSET(0) NUMBITS(1) [Cv = 0, Mc = 1],
        DST_RAM_TYPE OFFSET(1) NUMBITS(1) [Cv = 0, Mc = 1]
    ],
    /// RUBIK `D_MISC_CFG`.
    pub RBK_MISC_CFG [
        RUBIK_MODE OFFSET(0) NUMBITS(2) [Contract = 0, Split = 1, Merge = 2],
        IN_PRECISION OFFSET(8) NUMBITS(2) []
    ]
];

#[cfg(test)]
mod tests {
    use super::*;
    use tock_registers::LocalRegisterCopy;

    #[test]
    fn decode_trace_values() {
        // sdp_relu_int16: D_DP_BS_CFG = 0x18 (ALU sum, MUL bypass, ReLU on)
        let r: LocalRegisterCopy<u32, DP_CFG::Register> = LocalRegisterCopy::new(0x18);
        assert!(!r.is_set(DP_CFG::BYPASS));
        assert_eq!(
            r.read_as_enum(DP_CFG::ALU_ALGO),
            Some(DP_CFG::ALU_ALGO::Value::Sum)
        );
        assert!(r.is_set(DP_CFG::MUL_BYPASS));
        // pdp_max_pooling_int16: kernel 0x101 = 2x2, stride 1
        let k: LocalRegisterCopy<u32, PDP_KERNEL_CFG::Register> = LocalRegisterCopy::new(0x101);
        assert_eq!(k.read(PDP_KERNEL_CFG::KERNEL_WIDTH) + 1, 2);
        assert_eq!(k.read(PDP_KERNEL_CFG::KERNEL_HEIGHT) + 1, 2);
    }
}
