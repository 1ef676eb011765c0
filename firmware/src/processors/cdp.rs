//! CDP: the channel data processor (local response normalisation across channels), with
//! its read DMA CDP_RDMA. Memory to memory; uses the CDP LUT for the normalisation curve.

use nvdla_loadable::dla::{CdpOpDesc, CdpSurfaceDesc};

use super::fields::fld;
use super::lut::{self, LutRegs};
use super::{hi, lo, on_the_fly, Ctx};
use crate::error::Error;
use crate::hw::Hw;
use crate::regs::{cdp, cdp_rdma, glb, Block};

const LUT: LutRegs = LutRegs {
    block: Block::Cdp,
    access_cfg: cdp::S_LUT_ACCESS_CFG,
    access_data: cdp::S_LUT_ACCESS_DATA,
    cfg: cdp::S_LUT_CFG,
    info: cdp::S_LUT_INFO,
    ranges: [
        (cdp::S_LUT_LE_START_LOW, Some(cdp::S_LUT_LE_START_HIGH)),
        (cdp::S_LUT_LE_END_LOW, Some(cdp::S_LUT_LE_END_HIGH)),
        (cdp::S_LUT_LO_START_LOW, Some(cdp::S_LUT_LO_START_HIGH)),
        (cdp::S_LUT_LO_END_LOW, Some(cdp::S_LUT_LO_END_HIGH)),
    ],
    le_slope_scale: cdp::S_LUT_LE_SLOPE_SCALE,
    le_slope_shift: cdp::S_LUT_LE_SLOPE_SHIFT,
    lo_slope_scale: cdp::S_LUT_LO_SLOPE_SCALE,
    lo_slope_shift: cdp::S_LUT_LO_SLOPE_SHIFT,
};

/// Programs the selected CDP and CDP_RDMA register groups (and the LUT). Returns the LUT
/// index loaded, -1 for none.
#[inline(never)]
pub(super) fn program<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    op: &CdpOpDesc,
    s: &CdpSurfaceDesc,
) -> Result<i16, Error> {
    ctx.unmask_interrupts(
        (glb::S_INTR_MASK::CDP_DONE_MASK0::SET + glb::S_INTR_MASK::CDP_DONE_MASK1::SET).value,
    )?;
    let src = &s.src_data;
    let dst = &s.dst_data;
    ctx.check(
        !on_the_fly(src),
        fld!("dla_cdp_surface_desc.src_data.type"),
        2,
    )?;
    ctx.check(
        !on_the_fly(dst),
        fld!("dla_cdp_surface_desc.dst_data.type"),
        2,
    )?;
    ctx.check(
        op.in_precision == op.out_precision,
        fld!("dla_cdp_op_desc.out_precision"),
        u32::from(op.out_precision),
    )?;
    let precision = ctx.precision(op.in_precision, fld!("dla_cdp_op_desc.in_precision"))?;
    let src_ram = ctx.ram(src.mem_type, fld!("dla_cdp_surface_desc.src_data.type"))?;
    let dst_ram = ctx.ram(dst.mem_type, fld!("dla_cdp_surface_desc.dst_data.type"))?;
    // Normalisation window of 3, 5, 7 or 9 channels.
    ctx.check(
        matches!(op.local_size, 3 | 5 | 7 | 9),
        fld!("dla_cdp_op_desc.local_size"),
        u32::from(op.local_size),
    )?;

    let input = ctx.input_addr(src, 1, fld!("dla_cdp_surface_desc.src_data.address"))?;
    let output = ctx.cube_addr(dst, fld!("dla_cdp_surface_desc.dst_data.address"))?;
    // Bound by reference below: moving the 700-byte LUT out of the result would copy it.
    let lut_read = if op.lut_index >= 0 {
        Some(ctx.task.read_lut(ctx.hw, op.lut_index))
    } else {
        None
    };
    let lut_param = match &lut_read {
        Some(Err(e)) => return Err(*e),
        Some(Ok(l)) => Some(l),
        None => None,
    };

    {
        use cdp_rdma::*;
        let w = ctx.m1(
            u32::from(src.width),
            fld!("dla_cdp_surface_desc.src_data.width"),
        )?;
        let h = ctx.m1(
            u32::from(src.height),
            fld!("dla_cdp_surface_desc.src_data.height"),
        )?;
        let c = ctx.m1(
            u32::from(src.channel),
            fld!("dla_cdp_surface_desc.src_data.channel"),
        )?;
        let b = Block::CdpRdma;
        ctx.wr(b, D_DATA_CUBE_WIDTH, D_DATA_CUBE_WIDTH::WIDTH.val(w).value)?;
        ctx.wr(
            b,
            D_DATA_CUBE_HEIGHT,
            D_DATA_CUBE_HEIGHT::HEIGHT.val(h).value,
        )?;
        ctx.wr(
            b,
            D_DATA_CUBE_CHANNEL,
            D_DATA_CUBE_CHANNEL::CHANNEL.val(c).value,
        )?;
        ctx.wr(b, D_SRC_BASE_ADDR_LOW, lo(input))?;
        ctx.wr(b, D_SRC_BASE_ADDR_HIGH, hi(input))?;
        ctx.wr(b, D_SRC_LINE_STRIDE, src.line_stride)?;
        ctx.wr(b, D_SRC_SURFACE_STRIDE, src.surf_stride)?;
        ctx.wr(
            b,
            D_SRC_DMA_CFG,
            D_SRC_DMA_CFG::SRC_RAM_TYPE.val(src_ram.is_mc()).value,
        )?;
        ctx.wr(
            b,
            D_DATA_FORMAT,
            D_DATA_FORMAT::INPUT_DATA
                .val(u32::from(precision.raw()))
                .value,
        )?;
    }

    if let Some(l) = lut_param {
        lut::program(ctx, &LUT, l, precision)?;
    }

    use cdp::*;
    let b = Block::Cdp;
    ctx.wr(b, D_DST_BASE_ADDR_LOW, lo(output))?;
    ctx.wr(b, D_DST_BASE_ADDR_HIGH, hi(output))?;
    ctx.wr(b, D_DST_LINE_STRIDE, dst.line_stride)?;
    ctx.wr(b, D_DST_SURFACE_STRIDE, dst.surf_stride)?;
    ctx.wr(
        b,
        D_DST_DMA_CFG,
        D_DST_DMA_CFG::DST_RAM_TYPE.val(dst_ram.is_mc()).value,
    )?;
    ctx.wr(
        b,
        D_DATA_FORMAT,
        D_DATA_FORMAT::INPUT_DATA_TYPE
            .val(u32::from(precision.raw()))
            .value,
    )?;
    // 3 → LEN3 (0), 5 → LEN5 (1), ...
    let len = (u32::from(op.local_size).wrapping_sub(1) / 2).wrapping_sub(1);
    ctx.wr(b, D_LRN_CFG, D_LRN_CFG::NORMALZ_LEN.val(len).value)?;
    // Converter parameters go in whole, sign-extended, as the reference firmware writes
    // them; the hardware uses the low bits of each field.
    ctx.wr(b, D_DATIN_OFFSET, op.in_cvt.offset as u32)?;
    ctx.wr(b, D_DATIN_SCALE, i32::from(op.in_cvt.scale) as u32)?;
    ctx.wr(b, D_DATIN_SHIFTER, u32::from(op.in_cvt.truncate))?;
    ctx.wr(b, D_DATOUT_OFFSET, op.out_cvt.offset as u32)?;
    ctx.wr(b, D_DATOUT_SCALE, i32::from(op.out_cvt.scale) as u32)?;
    ctx.wr(b, D_DATOUT_SHIFTER, u32::from(op.out_cvt.truncate))?;
    let sqsum = if op.bypass_sqsum != 0 {
        D_FUNC_BYPASS::SQSUM_BYPASS::ENABLE
    } else {
        D_FUNC_BYPASS::SQSUM_BYPASS::DISABLE
    };
    let mul = if op.bypass_out_mul != 0 {
        D_FUNC_BYPASS::MUL_BYPASS::ENABLE
    } else {
        D_FUNC_BYPASS::MUL_BYPASS::DISABLE
    };
    ctx.wr(b, D_FUNC_BYPASS, (sqsum + mul).value)?;
    Ok(if lut_param.is_some() {
        op.lut_index
    } else {
        -1
    })
}
