//! RUBIK: the data reshape engine (deconvolution output contraction, channel split into
//! planes, plane merge into channels). Memory to memory only.

use nvdla_loadable::dla::{RubikMode, RubikOpDesc, RubikSurfaceDesc};

use super::fields::fld;
use super::{hi, lo, on_the_fly, Ctx};
use crate::config::Feature;
use crate::error::Error;
use crate::hw::Hw;
use crate::regs::{glb, rubik, Block};

/// Programs the selected RUBIK register group.
#[inline(never)]
pub(super) fn program<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    op: &RubikOpDesc,
    s: &RubikSurfaceDesc,
) -> Result<(), Error> {
    ctx.need(Feature::Rubik)?;
    ctx.unmask_interrupts(
        (glb::S_INTR_MASK::RUBIK_DONE_MASK0::SET + glb::S_INTR_MASK::RUBIK_DONE_MASK1::SET).value,
    )?;
    let src = &s.src_data;
    let dst = &s.dst_data;
    ctx.check(
        !on_the_fly(src),
        fld!("dla_rubik_surface_desc.src_data.type"),
        2,
    )?;
    ctx.check(
        !on_the_fly(dst),
        fld!("dla_rubik_surface_desc.dst_data.type"),
        2,
    )?;
    let mode = ctx.or_invalid(
        RubikMode::try_from(op.mode),
        RubikMode::Contract,
        fld!("dla_rubik_op_desc.mode"),
        op.mode,
    );
    let precision = ctx.precision(op.precision, fld!("dla_rubik_op_desc.precision"))?;
    let src_ram = ctx.ram(src.mem_type, fld!("dla_rubik_surface_desc.src_data.type"))?;
    let dst_ram = ctx.ram(dst.mem_type, fld!("dla_rubik_surface_desc.dst_data.type"))?;

    let input = ctx.input_addr(src, 1, fld!("dla_rubik_surface_desc.src_data.address"))?;
    let output = ctx.cube_addr(dst, fld!("dla_rubik_surface_desc.dst_data.address"))?;

    use rubik::*;
    ctx.wr(
        Block::Rubik,
        D_MISC_CFG,
        (D_MISC_CFG::RUBIK_MODE.val(u32::from(mode.raw()))
            + D_MISC_CFG::IN_PRECISION.val(u32::from(precision.raw())))
        .value,
    )?;
    ctx.wr(
        Block::Rubik,
        D_DAIN_RAM_TYPE,
        D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE.val(src_ram.is_mc()).value,
    )?;
    let w = ctx.m1(
        u32::from(src.width),
        fld!("dla_rubik_surface_desc.src_data.width"),
    )?;
    let h = ctx.m1(
        u32::from(src.height),
        fld!("dla_rubik_surface_desc.src_data.height"),
    )?;
    let c = ctx.m1(
        u32::from(src.channel),
        fld!("dla_rubik_surface_desc.src_data.channel"),
    )?;
    ctx.wr(
        Block::Rubik,
        D_DATAIN_SIZE_0,
        (D_DATAIN_SIZE_0::DATAIN_WIDTH.val(w) + D_DATAIN_SIZE_0::DATAIN_HEIGHT.val(h)).value,
    )?;
    ctx.wr(
        Block::Rubik,
        D_DATAIN_SIZE_1,
        D_DATAIN_SIZE_1::DATAIN_CHANNEL.val(c).value,
    )?;
    ctx.wr(Block::Rubik, D_DAIN_ADDR_LOW, lo(input))?;
    ctx.wr(Block::Rubik, D_DAIN_ADDR_HIGH, hi(input))?;
    if mode == RubikMode::Merge {
        ctx.check(
            src.plane_stride != 0 && src.plane_stride & 0x1f == 0,
            fld!("dla_rubik_surface_desc.src_data.plane_stride"),
            src.plane_stride,
        )?;
        ctx.wr(Block::Rubik, D_DAIN_PLANAR_STRIDE, src.plane_stride)?;
    } else {
        ctx.wr(Block::Rubik, D_DAIN_SURF_STRIDE, src.surf_stride)?;
    }
    ctx.wr(Block::Rubik, D_DAIN_LINE_STRIDE, src.line_stride)?;
    ctx.wr(
        Block::Rubik,
        D_DAOUT_RAM_TYPE,
        D_DAOUT_RAM_TYPE::DATAOUT_RAM_TYPE
            .val(dst_ram.is_mc())
            .value,
    )?;
    let oc = ctx.m1(
        u32::from(dst.channel),
        fld!("dla_rubik_surface_desc.dst_data.channel"),
    )?;
    ctx.wr(
        Block::Rubik,
        D_DATAOUT_SIZE_1,
        D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.val(oc).value,
    )?;
    ctx.wr(Block::Rubik, D_DAOUT_ADDR_LOW, lo(output))?;
    ctx.wr(Block::Rubik, D_DAOUT_ADDR_HIGH, hi(output))?;
    ctx.wr(Block::Rubik, D_DAOUT_LINE_STRIDE, dst.line_stride)?;
    if mode == RubikMode::Split {
        ctx.wr(Block::Rubik, D_DAOUT_PLANAR_STRIDE, dst.plane_stride)?;
    } else {
        ctx.wr(Block::Rubik, D_DAOUT_SURF_STRIDE, dst.surf_stride)?;
        if mode == RubikMode::Contract {
            // Input surfaces per output channel group (32-byte units) times the input
            // surface stride, and the output line stride per deconvolution row.
            let bpe = precision.bytes_per_element();
            let groups = (u32::from(dst.channel) * bpe).div_ceil(32);
            ctx.wr(
                Block::Rubik,
                D_CONTRACT_STRIDE_0,
                groups.wrapping_mul(src.surf_stride),
            )?;
            ctx.wr(
                Block::Rubik,
                D_CONTRACT_STRIDE_1,
                u32::from(op.stride_y).wrapping_mul(dst.line_stride),
            )?;
            let sx = ctx.m1(u32::from(op.stride_x), fld!("dla_rubik_op_desc.stride_x"))?;
            let sy = ctx.m1(u32::from(op.stride_y), fld!("dla_rubik_op_desc.stride_y"))?;
            ctx.wr(
                Block::Rubik,
                D_DECONV_STRIDE,
                (D_DECONV_STRIDE::DECONV_X_STRIDE.val(sx)
                    + D_DECONV_STRIDE::DECONV_Y_STRIDE.val(sy))
                .value,
            )?;
        }
    }
    Ok(())
}
