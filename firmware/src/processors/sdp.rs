//! SDP: the single data point processor, with its read DMA SDP_RDMA.
//!
//! SDP applies per-element arithmetic in three stages: X1 (BS: bias/scale), X2 (BN: batch
//! norm) and Y (EW: element-wise, with converters and the LUT). Each stage has an ALU and a
//! multiplier whose operand is a register value (per layer) or read from memory (per
//! channel or per element) by one of SDP_RDMA's three DMA streams (BRDMA, NRDMA, ERDMA).
//! The main input comes from memory through SDP_RDMA, or on the fly from the convolution
//! pipeline (CACC); the output goes to memory or on the fly to PDP.

use nvdla_loadable::dla::{
    Activation, ConvMode, Precision, SdpAluType, SdpOp, SdpOpDesc, SdpOpMode, SdpOpType,
    SdpSurfaceDesc,
};

use super::fields::{fld, Fld};
use super::lut::{self, LutRegs};
use super::{hi, lo, on_the_fly, Ctx};
use crate::config::Feature;
use crate::error::Error;
use crate::hw::Hw;
use crate::regs::{glb, sdp, sdp_rdma, Block};

const LUT: LutRegs = LutRegs {
    block: Block::Sdp,
    access_cfg: sdp::S_LUT_ACCESS_CFG,
    access_data: sdp::S_LUT_ACCESS_DATA,
    cfg: sdp::S_LUT_CFG,
    info: sdp::S_LUT_INFO,
    ranges: [
        (sdp::S_LUT_LE_START, None),
        (sdp::S_LUT_LE_END, None),
        (sdp::S_LUT_LO_START, None),
        (sdp::S_LUT_LO_END, None),
    ],
    le_slope_scale: sdp::S_LUT_LE_SLOPE_SCALE,
    le_slope_shift: sdp::S_LUT_LE_SLOPE_SHIFT,
    lo_slope_scale: sdp::S_LUT_LO_SLOPE_SCALE,
    lo_slope_shift: sdp::S_LUT_LO_SLOPE_SHIFT,
};

/// Whether a stage reads its operand from memory.
fn stage_reads_memory(s: &SdpOp) -> bool {
    s.enable != 0 && s.mode != SdpOpMode::PerLayer.raw()
}

/// SDP_RDMA is needed to read the input from memory or any operand.
pub(super) fn rdma_needed(op: &SdpOpDesc, s: &SdpSurfaceDesc) -> bool {
    !on_the_fly(&s.src_data)
        || stage_reads_memory(&op.x1_op)
        || stage_reads_memory(&op.x2_op)
        || stage_reads_memory(&op.y_op)
}

/// The processing precision for `src` in, `dst` out: int8 input stays int8 unless the
/// output is fp16; otherwise the input precision (fp16 input processes in fp16).
fn proc_precision(dst: Precision, src: Precision) -> u32 {
    match (dst, src) {
        (_, Precision::Fp16) => 2,
        (Precision::Int8, _) => 0,
        (_, Precision::Int16) => 1,
        (_, Precision::Int8) => 0,
    }
}

/// A checked view of one stage.
struct Stage {
    enable: bool,
    ty: SdpOpType,
    alu: SdpAluType,
    mode: SdpOpMode,
    act: Activation,
    /// The stage's operand comes from a DMA stream.
    dma: bool,
    /// Operand element is one byte (int8) rather than two.
    one_byte: bool,
}

fn stage<H: Hw>(ctx: &Ctx<'_, H>, s: &SdpOp, name: Fld) -> Result<Stage, Error> {
    let ty = ctx.or_invalid(
        SdpOpType::try_from(s.op_type),
        SdpOpType::None,
        name,
        s.op_type,
    );
    let alu = ctx.or_invalid(
        SdpAluType::try_from(s.alu_type),
        SdpAluType::Max,
        name,
        s.alu_type,
    );
    let mode = ctx.or_invalid(
        SdpOpMode::try_from(s.mode),
        SdpOpMode::PerLayer,
        name,
        s.mode,
    );
    let act = ctx.or_invalid(Activation::try_from(s.act), Activation::None, name, s.act);
    let precision = ctx.or_invalid(
        Precision::try_from(s.precision),
        Precision::Int8,
        name,
        s.precision,
    );
    let enable = s.enable != 0;
    Ok(Stage {
        enable,
        ty,
        alu,
        mode,
        act,
        dma: enable && ty != SdpOpType::None && mode != SdpOpMode::PerLayer,
        one_byte: precision == Precision::Int8,
    })
}

/// `*RDMA_CFG` value of one operand stream (the three share a layout).
fn dma_cfg(st: &Stage, mc: u32) -> u32 {
    use sdp_rdma::D_BRDMA_CFG as C;
    let disable = if st.dma {
        C::BRDMA_DISABLE::NO
    } else {
        C::BRDMA_DISABLE::YES
    };
    let data_use = match st.ty {
        SdpOpType::None | SdpOpType::Mul => C::BRDMA_DATA_USE::MUL,
        SdpOpType::Add => C::BRDMA_DATA_USE::ALU,
        SdpOpType::Both => C::BRDMA_DATA_USE::BOTH,
    };
    let size = if st.one_byte {
        C::BRDMA_DATA_SIZE::ONE_BYTE
    } else {
        C::BRDMA_DATA_SIZE::TWO_BYTE
    };
    let mode = if st.mode == SdpOpMode::PerKernel {
        C::BRDMA_DATA_MODE::PER_KERNEL
    } else {
        C::BRDMA_DATA_MODE::PER_ELEMENT
    };
    (disable + data_use + size + mode + C::BRDMA_RAM_TYPE.val(mc)).value
}

/// `DP_*_CFG` value of stage X1 or X2 (BS and BN share a layout): bypass bits are 1 =
/// bypassed.
fn dp_cfg(st: &Stage) -> u32 {
    use sdp::D_DP_BS_CFG as C;
    let b = |bypass: bool| u32::from(bypass);
    let uses_alu = st.ty != SdpOpType::Mul && st.ty != SdpOpType::None;
    let uses_mul = st.ty != SdpOpType::Add && st.ty != SdpOpType::None;
    (C::BS_BYPASS.val(b(!st.enable))
        + C::BS_ALU_BYPASS.val(b(!uses_alu))
        + C::BS_ALU_ALGO.val(u32::from(st.alu.raw()))
        + C::BS_MUL_BYPASS.val(b(!uses_mul))
        + C::BS_MUL_PRELU.val(u32::from(st.act == Activation::Prelu))
        + C::BS_RELU_BYPASS.val(b(st.act != Activation::Relu)))
    .value
}

/// Register offsets of stage X1 (BS) or X2 (BN).
struct DpRegs {
    alu_cfg: u32,
    alu_src_value: u32,
    mul_src_value: u32,
    mul_cfg: u32,
}

fn program_dp_stage<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    r: &DpRegs,
    st: &Stage,
    s: &SdpOp,
) -> Result<(), Error> {
    use sdp::{D_DP_BS_ALU_CFG as A, D_DP_BS_MUL_CFG as M};
    if !st.enable {
        return Ok(());
    }
    // Operand source: 0 = register (per layer), 1 = memory.
    let src = u32::from(st.mode != SdpOpMode::PerLayer);
    if matches!(st.ty, SdpOpType::Add | SdpOpType::Both) {
        ctx.wr(
            Block::Sdp,
            r.alu_cfg,
            (A::BS_ALU_SRC.val(src) + A::BS_ALU_SHIFT_VALUE.val(u32::from(s.shift_value))).value,
        )?;
    }
    if st.mode == SdpOpMode::PerLayer {
        ctx.wr(Block::Sdp, r.alu_src_value, s.alu_operand as u32)?;
        ctx.wr(Block::Sdp, r.mul_src_value, s.mul_operand as u32)?;
    }
    // The multiplier's truncation applies even when the multiplier is bypassed.
    ctx.wr(
        Block::Sdp,
        r.mul_cfg,
        (M::BS_MUL_SRC.val(src) + M::BS_MUL_SHIFT_VALUE.val(u32::from(s.truncate))).value,
    )
}

/// Programs the selected SDP and SDP_RDMA register groups (and the LUT). Returns the LUT
/// index loaded, -1 for none.
#[inline(never)]
pub(super) fn program<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    rdma: bool,
    op: &SdpOpDesc,
    s: &SdpSurfaceDesc,
) -> Result<i16, Error> {
    ctx.unmask_interrupts(
        (glb::S_INTR_MASK::SDP_DONE_MASK0::SET + glb::S_INTR_MASK::SDP_DONE_MASK1::SET).value,
    )?;
    let src_p = ctx.precision(op.src_precision, fld!("dla_sdp_op_desc.src_precision"))?;
    let dst_p = ctx.precision(op.dst_precision, fld!("dla_sdp_op_desc.dst_precision"))?;
    let conv_mode = ctx.or_invalid(
        ConvMode::try_from(op.conv_mode),
        ConvMode::Direct,
        fld!("dla_sdp_op_desc.conv_mode"),
        op.conv_mode,
    );
    if conv_mode == ConvMode::Winograd {
        ctx.need(Feature::Winograd)?;
    }
    let x1 = stage(ctx, &op.x1_op, fld!("dla_sdp_op_desc.x1_op"))?;
    let x2 = stage(ctx, &op.x2_op, fld!("dla_sdp_op_desc.x2_op"))?;
    let y = stage(ctx, &op.y_op, fld!("dla_sdp_op_desc.y_op"))?;
    if y.enable {
        ctx.need(Feature::SdpEw)?;
    }
    let batch = ctx.m1(u32::from(op.batch_num), fld!("dla_sdp_op_desc.batch_num"))?;
    let fly = on_the_fly(&s.src_data);
    let out_dma = !on_the_fly(&s.dst_data);

    let src_addr = if fly {
        0
    } else {
        ctx.input_addr(
            &s.src_data,
            1,
            fld!("dla_sdp_surface_desc.src_data.address"),
        )?
    };
    let dst_addr = if out_dma {
        ctx.cube_addr(&s.dst_data, fld!("dla_sdp_surface_desc.dst_data.address"))?
    } else {
        0
    };
    // Bound by reference below: moving the 700-byte LUT out of the result would copy it.
    let lut_read = if op.lut_index >= 0 {
        ctx.need(Feature::SdpLut)?;
        Some(ctx.task.read_lut(ctx.hw, op.lut_index))
    } else {
        None
    };
    let lut_param = match &lut_read {
        Some(Err(e)) => return Err(*e),
        Some(Ok(l)) => Some(l),
        None => None,
    };
    let x1_addr = if x1.dma {
        ctx.cube_addr(&s.x1_data, fld!("dla_sdp_surface_desc.x1_data.address"))?
    } else {
        0
    };
    let x2_addr = if x2.dma {
        ctx.cube_addr(&s.x2_data, fld!("dla_sdp_surface_desc.x2_data.address"))?
    } else {
        0
    };
    let y_addr = if y.dma {
        ctx.cube_addr(&s.y_data, fld!("dla_sdp_surface_desc.y_data.address"))?
    } else {
        0
    };
    // Operand streams that are not read may have any memory type; only the used ones must
    // be in RAM.
    let ram_of = |ctx: &Ctx<'_, H>, used: bool, t: u16, f: Fld| -> Result<u32, Error> {
        if used {
            Ok(ctx.ram(t, f)?.is_mc())
        } else {
            Ok(u32::from(t == 0))
        }
    };
    let x1_mc = ram_of(
        ctx,
        x1.dma,
        s.x1_data.mem_type,
        fld!("dla_sdp_surface_desc.x1_data.type"),
    )?;
    let x2_mc = ram_of(
        ctx,
        x2.dma,
        s.x2_data.mem_type,
        fld!("dla_sdp_surface_desc.x2_data.type"),
    )?;
    let y_mc = ram_of(
        ctx,
        y.dma,
        s.y_data.mem_type,
        fld!("dla_sdp_surface_desc.y_data.type"),
    )?;
    let src_mc = ram_of(
        ctx,
        !fly,
        s.src_data.mem_type,
        fld!("dla_sdp_surface_desc.src_data.type"),
    )?;
    let dst_mc = ram_of(
        ctx,
        out_dma,
        s.dst_data.mem_type,
        fld!("dla_sdp_surface_desc.dst_data.type"),
    )?;

    {
        use sdp_rdma::*;
        let b = Block::SdpRdma;
        // Park the RDMA group in a known state first: memory input, all streams off.
        ctx.wr(
            b,
            D_FEATURE_MODE_CFG,
            D_FEATURE_MODE_CFG::FLYING_MODE::OFF.value,
        )?;
        ctx.wr(b, D_BRDMA_CFG, D_BRDMA_CFG::BRDMA_DISABLE::YES.value)?;
        ctx.wr(b, D_NRDMA_CFG, D_NRDMA_CFG::NRDMA_DISABLE::YES.value)?;
        ctx.wr(b, D_ERDMA_CFG, D_ERDMA_CFG::ERDMA_DISABLE::YES.value)?;
        let proc = proc_precision(dst_p, src_p);
        ctx.wr(
            b,
            D_FEATURE_MODE_CFG,
            (D_FEATURE_MODE_CFG::FLYING_MODE.val(u32::from(fly))
                + D_FEATURE_MODE_CFG::WINOGRAD.val(u32::from(conv_mode == ConvMode::Winograd))
                + D_FEATURE_MODE_CFG::IN_PRECISION.val(u32::from(src_p.raw()))
                + D_FEATURE_MODE_CFG::OUT_PRECISION.val(u32::from(dst_p.raw()))
                + D_FEATURE_MODE_CFG::PROC_PRECISION.val(proc)
                + D_FEATURE_MODE_CFG::BATCH_NUMBER.val(batch))
            .value,
        )?;
        if rdma {
            let c = &s.src_data;
            ctx.wr(
                b,
                D_DATA_CUBE_WIDTH,
                ctx.m1(
                    u32::from(c.width),
                    fld!("dla_sdp_surface_desc.src_data.width"),
                )?,
            )?;
            ctx.wr(
                b,
                D_DATA_CUBE_HEIGHT,
                ctx.m1(
                    u32::from(c.height),
                    fld!("dla_sdp_surface_desc.src_data.height"),
                )?,
            )?;
            ctx.wr(
                b,
                D_DATA_CUBE_CHANNEL,
                ctx.m1(
                    u32::from(c.channel),
                    fld!("dla_sdp_surface_desc.src_data.channel"),
                )?,
            )?;
            if !fly {
                ctx.wr(b, D_SRC_BASE_ADDR_LOW, lo(src_addr))?;
                ctx.wr(b, D_SRC_BASE_ADDR_HIGH, hi(src_addr))?;
                ctx.wr(b, D_SRC_LINE_STRIDE, c.line_stride)?;
                ctx.wr(b, D_SRC_SURFACE_STRIDE, c.surf_stride)?;
                ctx.wr(b, D_SRC_DMA_CFG, src_mc)?;
            }
            ctx.wr(b, D_BRDMA_CFG, dma_cfg(&x1, x1_mc))?;
            if x1.dma {
                ctx.wr(b, D_BS_BASE_ADDR_LOW, lo(x1_addr))?;
                ctx.wr(b, D_BS_BASE_ADDR_HIGH, hi(x1_addr))?;
                ctx.wr(b, D_BS_LINE_STRIDE, s.x1_data.line_stride)?;
                ctx.wr(b, D_BS_SURFACE_STRIDE, s.x1_data.surf_stride)?;
            }
            ctx.wr(b, D_NRDMA_CFG, dma_cfg(&x2, x2_mc))?;
            if x2.dma {
                ctx.wr(b, D_BN_BASE_ADDR_LOW, lo(x2_addr))?;
                ctx.wr(b, D_BN_BASE_ADDR_HIGH, hi(x2_addr))?;
                ctx.wr(b, D_BN_LINE_STRIDE, s.x2_data.line_stride)?;
                ctx.wr(b, D_BN_SURFACE_STRIDE, s.x2_data.surf_stride)?;
            }
            ctx.wr(b, D_ERDMA_CFG, dma_cfg(&y, y_mc))?;
            if y.dma {
                ctx.wr(b, D_EW_BASE_ADDR_LOW, lo(y_addr))?;
                ctx.wr(b, D_EW_BASE_ADDR_HIGH, hi(y_addr))?;
                ctx.wr(b, D_EW_LINE_STRIDE, s.y_data.line_stride)?;
                ctx.wr(b, D_EW_SURFACE_STRIDE, s.y_data.surf_stride)?;
            }
        }
    }

    if let Some(l) = lut_param {
        lut::program(ctx, &LUT, l, src_p)?;
    }

    use sdp::*;
    let b = Block::Sdp;
    let c = &s.src_data;
    ctx.wr(
        b,
        D_DATA_CUBE_WIDTH,
        ctx.m1(
            u32::from(c.width),
            fld!("dla_sdp_surface_desc.src_data.width"),
        )?,
    )?;
    ctx.wr(
        b,
        D_DATA_CUBE_HEIGHT,
        ctx.m1(
            u32::from(c.height),
            fld!("dla_sdp_surface_desc.src_data.height"),
        )?,
    )?;
    ctx.wr(
        b,
        D_DATA_CUBE_CHANNEL,
        ctx.m1(
            u32::from(c.channel),
            fld!("dla_sdp_surface_desc.src_data.channel"),
        )?,
    )?;
    if out_dma {
        ctx.wr(b, D_DST_BASE_ADDR_HIGH, hi(dst_addr))?;
        ctx.wr(b, D_DST_BASE_ADDR_LOW, lo(dst_addr))?;
        ctx.wr(b, D_DST_LINE_STRIDE, s.dst_data.line_stride)?;
        ctx.wr(b, D_DST_SURFACE_STRIDE, s.dst_data.surf_stride)?;
    }

    ctx.wr(b, D_DP_BS_CFG, dp_cfg(&x1))?;
    program_dp_stage(
        ctx,
        &DpRegs {
            alu_cfg: D_DP_BS_ALU_CFG,
            alu_src_value: D_DP_BS_ALU_SRC_VALUE,
            mul_src_value: D_DP_BS_MUL_SRC_VALUE,
            mul_cfg: D_DP_BS_MUL_CFG,
        },
        &x1,
        &op.x1_op,
    )?;
    ctx.wr(b, D_DP_BN_CFG, dp_cfg(&x2))?;
    program_dp_stage(
        ctx,
        &DpRegs {
            alu_cfg: D_DP_BN_ALU_CFG,
            alu_src_value: D_DP_BN_ALU_SRC_VALUE,
            mul_src_value: D_DP_BN_MUL_SRC_VALUE,
            mul_cfg: D_DP_BN_MUL_CFG,
        },
        &x2,
        &op.x2_op,
    )?;

    // Stage Y: like X1/X2, but the last bypass bit is the LUT's and the operands have
    // converters.
    {
        let uses_alu = y.ty != SdpOpType::Mul && y.ty != SdpOpType::None;
        let uses_mul = y.ty != SdpOpType::Add && y.ty != SdpOpType::None;
        ctx.wr(
            b,
            D_DP_EW_CFG,
            (D_DP_EW_CFG::EW_BYPASS.val(u32::from(!y.enable))
                + D_DP_EW_CFG::EW_ALU_BYPASS.val(u32::from(!uses_alu))
                + D_DP_EW_CFG::EW_ALU_ALGO.val(u32::from(y.alu.raw()))
                + D_DP_EW_CFG::EW_MUL_BYPASS.val(u32::from(!uses_mul))
                + D_DP_EW_CFG::EW_MUL_PRELU.val(u32::from(y.act == Activation::Prelu))
                + D_DP_EW_CFG::EW_LUT_BYPASS.val(u32::from(y.act != Activation::Lut)))
            .value,
        )?;
        if y.enable {
            let yo = &op.y_op;
            let src = u32::from(y.mode != SdpOpMode::PerLayer);
            if uses_alu {
                let cvt = &yo.cvt.alu_cvt;
                ctx.wr(
                    b,
                    D_DP_EW_ALU_CFG,
                    (D_DP_EW_ALU_CFG::EW_ALU_SRC.val(src)
                        + D_DP_EW_ALU_CFG::EW_ALU_CVT_BYPASS.val(u32::from(cvt.enable == 0)))
                    .value,
                )?;
                if y.mode == SdpOpMode::PerLayer {
                    ctx.wr(b, D_DP_EW_ALU_SRC_VALUE, yo.alu_operand as u32)?;
                } else {
                    ctx.wr(b, D_DP_EW_ALU_CVT_OFFSET_VALUE, cvt.offset as u32)?;
                    ctx.wr(b, D_DP_EW_ALU_CVT_SCALE_VALUE, i32::from(cvt.scale) as u32)?;
                    ctx.wr(b, D_DP_EW_ALU_CVT_TRUNCATE_VALUE, u32::from(cvt.truncate))?;
                }
            }
            if uses_mul {
                let cvt = &yo.cvt.mul_cvt;
                ctx.wr(
                    b,
                    D_DP_EW_MUL_CFG,
                    (D_DP_EW_MUL_CFG::EW_MUL_SRC.val(src)
                        + D_DP_EW_MUL_CFG::EW_MUL_CVT_BYPASS.val(u32::from(cvt.enable == 0)))
                    .value,
                )?;
                if y.mode == SdpOpMode::PerLayer {
                    ctx.wr(b, D_DP_EW_MUL_SRC_VALUE, yo.mul_operand as u32)?;
                } else {
                    ctx.wr(b, D_DP_EW_MUL_CVT_OFFSET_VALUE, cvt.offset as u32)?;
                    ctx.wr(b, D_DP_EW_MUL_CVT_SCALE_VALUE, i32::from(cvt.scale) as u32)?;
                    ctx.wr(b, D_DP_EW_MUL_CVT_TRUNCATE_VALUE, u32::from(cvt.truncate))?;
                }
            }
            ctx.wr(b, D_DP_EW_TRUNCATE_VALUE, u32::from(yo.truncate))?;
        }
    }

    ctx.wr(
        b,
        D_FEATURE_MODE_CFG,
        (D_FEATURE_MODE_CFG::FLYING_MODE.val(u32::from(fly))
            + D_FEATURE_MODE_CFG::OUTPUT_DST.val(u32::from(!out_dma))
            + D_FEATURE_MODE_CFG::WINOGRAD.val(u32::from(conv_mode == ConvMode::Winograd))
            + D_FEATURE_MODE_CFG::BATCH_NUMBER.val(batch))
        .value,
    )?;
    ctx.wr(b, D_DST_DMA_CFG, dst_mc)?;
    if op.batch_num > 1 {
        ctx.wr(b, D_DST_BATCH_STRIDE, op.batch_stride)?;
    }
    ctx.wr(
        b,
        D_DATA_FORMAT,
        (D_DATA_FORMAT::PROC_PRECISION.val(proc_precision(dst_p, src_p))
            + D_DATA_FORMAT::OUT_PRECISION.val(u32::from(dst_p.raw())))
        .value,
    )?;
    ctx.wr(b, D_CVT_OFFSET, op.out_cvt.offset as u32)?;
    ctx.wr(b, D_CVT_SCALE, i32::from(op.out_cvt.scale) as u32)?;
    ctx.wr(b, D_CVT_SHIFT, u32::from(op.out_cvt.truncate))?;
    Ok(if lut_param.is_some() {
        op.lut_index
    } else {
        -1
    })
}
