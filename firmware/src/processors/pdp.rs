//! PDP: the planar data processor (max/min/average pooling), with its read DMA PDP_RDMA.
//! Input comes from memory through PDP_RDMA, or on the fly from SDP; wide inputs are split
//! into `split_num` vertical strips with partial widths.

use nvdla_loadable::dla::{DataCube, PdpOpDesc, PdpSurfaceDesc, Precision};

use super::fields::{fld, Fld};
use super::{hi, lo, on_the_fly, Ctx};
use crate::error::Error;
use crate::hw::Hw;
use crate::regs::{glb, pdp, pdp_rdma, Block};

/// Largest cube edge any engine accepts.
pub(super) const MAX_CUBE_DIM: u16 = 8192;
/// Most strips a pooling operation may be split into.
const MAX_SPLIT: u8 = 64;

/// Reciprocals of the kernel extent 1..8 for average pooling: Q16 fixed point for integer
/// data, fp16 bit patterns for fp16 data.
const RECIP_INT: [u32; 8] = [
    0x10000, 0x8000, 0x5555, 0x4000, 0x3333, 0x2aaa, 0x2492, 0x2000,
];
const RECIP_FP16: [u32; 8] = [
    0x7c00, 0x7800, 0x7555, 0x7400, 0x7266, 0x7155, 0x7092, 0x7000,
];

fn check_cube<H: Hw>(ctx: &Ctx<'_, H>, c: &DataCube, field: Fld) -> Result<(), Error> {
    for v in [c.width, c.height, c.channel] {
        ctx.check(v <= MAX_CUBE_DIM, field, u32::from(v))?;
    }
    ctx.check(c.mem_type <= 2, field, u32::from(c.mem_type))
}

/// `v - 1`, or 0 for 0 (partial widths of unused strips are 0).
fn partial(v: u16) -> u32 {
    u32::from(v.saturating_sub(1))
}

/// Programs the selected PDP (and, for memory input, PDP_RDMA) register group.
#[inline(never)]
pub(super) fn program<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    op: &PdpOpDesc,
    s: &PdpSurfaceDesc,
) -> Result<(), Error> {
    ctx.unmask_interrupts(
        (glb::S_INTR_MASK::PDP_DONE_MASK0::SET + glb::S_INTR_MASK::PDP_DONE_MASK1::SET).value,
    )?;
    let src = &s.src_data;
    let dst = &s.dst_data;
    ctx.check(
        !on_the_fly(dst),
        fld!("dla_pdp_surface_desc.dst_data.type"),
        2,
    )?;
    check_cube(ctx, src, fld!("dla_pdp_surface_desc.src_data"))?;
    check_cube(ctx, dst, fld!("dla_pdp_surface_desc.dst_data"))?;
    let precision = ctx.precision(op.precision, fld!("dla_pdp_op_desc.precision"))?;
    for (v, f) in [
        (op.stride_x, fld!("dla_pdp_op_desc.stride_x")),
        (op.stride_y, fld!("dla_pdp_op_desc.stride_y")),
    ] {
        // D_POOLING_KERNEL_CFG's KERNEL_STRIDE_WIDTH/HEIGHT: 4 bits, stride - 1.
        ctx.check((1..=16).contains(&v), f, u32::from(v))?;
    }
    ctx.check(
        (1..=MAX_SPLIT).contains(&op.split_num),
        fld!("dla_pdp_op_desc.split_num"),
        u32::from(op.split_num),
    )?;
    ctx.check(
        op.pool_width < 8,
        fld!("dla_pdp_op_desc.pool_width"),
        u32::from(op.pool_width),
    )?;
    ctx.check(
        op.pool_height < 8,
        fld!("dla_pdp_op_desc.pool_height"),
        u32::from(op.pool_height),
    )?;
    ctx.check(
        op.pool_mode < 3,
        fld!("dla_pdp_op_desc.pool_mode"),
        u32::from(op.pool_mode),
    )?;
    let fly = on_the_fly(src);
    let dst_ram = ctx.ram(dst.mem_type, fld!("dla_pdp_surface_desc.dst_data.type"))?;

    let input = ctx.input_addr(src, 1, fld!("dla_pdp_surface_desc.src_data.address"))?;
    let output = if dst.address != -1 {
        ctx.cube_addr(dst, fld!("dla_pdp_surface_desc.dst_data.address"))?
    } else {
        0
    };
    let split = u32::from(op.split_num).wrapping_sub(1);
    let in_w = ctx.m1(
        u32::from(src.width),
        fld!("dla_pdp_surface_desc.src_data.width"),
    )?;
    let in_h = ctx.m1(
        u32::from(src.height),
        fld!("dla_pdp_surface_desc.src_data.height"),
    )?;
    let in_c = ctx.m1(
        u32::from(src.channel),
        fld!("dla_pdp_surface_desc.src_data.channel"),
    )?;
    let out_w = ctx.m1(
        u32::from(dst.width),
        fld!("dla_pdp_surface_desc.dst_data.width"),
    )?;
    let out_h = ctx.m1(
        u32::from(dst.height),
        fld!("dla_pdp_surface_desc.dst_data.height"),
    )?;
    let out_c = ctx.m1(
        u32::from(dst.channel),
        fld!("dla_pdp_surface_desc.dst_data.channel"),
    )?;
    let (sx, sy) = (
        u32::from(op.stride_x).wrapping_sub(1),
        u32::from(op.stride_y).wrapping_sub(1),
    );

    if !fly {
        use pdp_rdma::*;
        let src_ram = ctx.ram(src.mem_type, fld!("dla_pdp_surface_desc.src_data.type"))?;
        let b = Block::PdpRdma;
        ctx.wr(b, D_DATA_CUBE_IN_WIDTH, in_w)?;
        ctx.wr(b, D_DATA_CUBE_IN_HEIGHT, in_h)?;
        ctx.wr(b, D_DATA_CUBE_IN_CHANNEL, in_c)?;
        ctx.wr(b, D_SRC_BASE_ADDR_HIGH, hi(input))?;
        ctx.wr(b, D_SRC_BASE_ADDR_LOW, lo(input))?;
        ctx.wr(b, D_SRC_LINE_STRIDE, src.line_stride)?;
        ctx.wr(b, D_SRC_SURFACE_STRIDE, src.surf_stride)?;
        ctx.wr(
            b,
            D_DATA_FORMAT,
            D_DATA_FORMAT::INPUT_DATA
                .val(u32::from(precision.raw()))
                .value,
        )?;
        ctx.wr(
            b,
            D_SRC_RAM_CFG,
            D_SRC_RAM_CFG::SRC_RAM_TYPE.val(src_ram.is_mc()).value,
        )?;
        ctx.wr(
            b,
            D_OPERATION_MODE_CFG,
            D_OPERATION_MODE_CFG::SPLIT_NUM.val(split).value,
        )?;
        ctx.wr(
            b,
            D_POOLING_KERNEL_CFG,
            (D_POOLING_KERNEL_CFG::KERNEL_WIDTH.val(u32::from(op.pool_width))
                + D_POOLING_KERNEL_CFG::KERNEL_STRIDE_WIDTH.val(sx))
            .value,
        )?;
        ctx.wr(
            b,
            D_POOLING_PADDING_CFG,
            D_POOLING_PADDING_CFG::PAD_WIDTH
                .val(u32::from(op.pad_left))
                .value,
        )?;
        ctx.wr(
            b,
            D_PARTIAL_WIDTH_IN,
            (D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_FIRST.val(partial(op.partial_in_width_first))
                + D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_MID.val(partial(op.partial_in_width_mid))
                + D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_LAST.val(partial(op.partial_in_width_last)))
            .value,
        )?;
    } else {
        ctx.check(
            op.split_num == 1,
            fld!("dla_pdp_op_desc.split_num"),
            u32::from(op.split_num),
        )?;
    }

    use pdp::*;
    let b = Block::Pdp;
    ctx.wr(
        b,
        D_DATA_CUBE_IN_WIDTH,
        D_DATA_CUBE_IN_WIDTH::CUBE_IN_WIDTH.val(in_w).value,
    )?;
    ctx.wr(
        b,
        D_DATA_CUBE_IN_HEIGHT,
        D_DATA_CUBE_IN_HEIGHT::CUBE_IN_HEIGHT.val(in_h).value,
    )?;
    ctx.wr(
        b,
        D_DATA_CUBE_IN_CHANNEL,
        D_DATA_CUBE_IN_CHANNEL::CUBE_IN_CHANNEL.val(in_c).value,
    )?;
    ctx.wr(
        b,
        D_DATA_CUBE_OUT_WIDTH,
        D_DATA_CUBE_OUT_WIDTH::CUBE_OUT_WIDTH.val(out_w).value,
    )?;
    ctx.wr(
        b,
        D_DATA_CUBE_OUT_HEIGHT,
        D_DATA_CUBE_OUT_HEIGHT::CUBE_OUT_HEIGHT.val(out_h).value,
    )?;
    ctx.wr(
        b,
        D_DATA_CUBE_OUT_CHANNEL,
        D_DATA_CUBE_OUT_CHANNEL::CUBE_OUT_CHANNEL.val(out_c).value,
    )?;
    let fly_mode = if fly {
        D_OPERATION_MODE_CFG::FLYING_MODE::ON_FLYING
    } else {
        D_OPERATION_MODE_CFG::FLYING_MODE::OFF_FLYING
    };
    ctx.wr(
        b,
        D_OPERATION_MODE_CFG,
        (D_OPERATION_MODE_CFG::POOLING_METHOD.val(u32::from(op.pool_mode))
            + fly_mode
            + D_OPERATION_MODE_CFG::SPLIT_NUM.val(split))
        .value,
    )?;
    ctx.wr(
        b,
        D_PARTIAL_WIDTH_IN,
        (D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_FIRST.val(partial(op.partial_in_width_first))
            + D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_MID.val(partial(op.partial_in_width_mid))
            + D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_LAST.val(partial(op.partial_in_width_last)))
        .value,
    )?;
    ctx.wr(
        b,
        D_PARTIAL_WIDTH_OUT,
        (D_PARTIAL_WIDTH_OUT::PARTIAL_WIDTH_OUT_FIRST.val(partial(op.partial_width_first))
            + D_PARTIAL_WIDTH_OUT::PARTIAL_WIDTH_OUT_MID.val(partial(op.partial_width_mid))
            + D_PARTIAL_WIDTH_OUT::PARTIAL_WIDTH_OUT_LAST.val(partial(op.partial_width_last)))
        .value,
    )?;
    ctx.wr(
        b,
        D_POOLING_KERNEL_CFG,
        (D_POOLING_KERNEL_CFG::KERNEL_WIDTH.val(u32::from(op.pool_width))
            + D_POOLING_KERNEL_CFG::KERNEL_HEIGHT.val(u32::from(op.pool_height))
            + D_POOLING_KERNEL_CFG::KERNEL_STRIDE_WIDTH.val(sx)
            + D_POOLING_KERNEL_CFG::KERNEL_STRIDE_HEIGHT.val(sy))
        .value,
    )?;
    let recip = if precision == Precision::Fp16 {
        &RECIP_FP16
    } else {
        &RECIP_INT
    };
    // Checked above (and nothing is written after a failed check).
    let recip_of = |k: u8| recip.get(usize::from(k)).copied().unwrap_or(0);
    ctx.wr(b, D_RECIP_KERNEL_WIDTH, recip_of(op.pool_width))?;
    ctx.wr(b, D_RECIP_KERNEL_HEIGHT, recip_of(op.pool_height))?;
    let padding = (D_POOLING_PADDING_CFG::PAD_LEFT.val(u32::from(op.pad_left))
        + D_POOLING_PADDING_CFG::PAD_RIGHT.val(u32::from(op.pad_right))
        + D_POOLING_PADDING_CFG::PAD_TOP.val(u32::from(op.pad_top))
        + D_POOLING_PADDING_CFG::PAD_BOTTOM.val(u32::from(op.pad_bottom)))
    .value;
    if precision == Precision::Fp16 {
        // fp16 pooling pads with zero only.
        for &v in &op.padding_value {
            ctx.check(v == 0, fld!("dla_pdp_op_desc.padding_value"), v as u32)?;
        }
    }
    ctx.wr(b, D_POOLING_PADDING_CFG, padding)?;
    const PAD_VALUES: [u32; 7] = [
        D_POOLING_PADDING_VALUE_1_CFG,
        D_POOLING_PADDING_VALUE_2_CFG,
        D_POOLING_PADDING_VALUE_3_CFG,
        D_POOLING_PADDING_VALUE_4_CFG,
        D_POOLING_PADDING_VALUE_5_CFG,
        D_POOLING_PADDING_VALUE_6_CFG,
        D_POOLING_PADDING_VALUE_7_CFG,
    ];
    for (reg, &v) in PAD_VALUES.iter().zip(&op.padding_value) {
        ctx.wr(b, *reg, v as u32)?;
    }
    if !fly {
        ctx.wr(b, D_SRC_LINE_STRIDE, src.line_stride)?;
        ctx.wr(b, D_SRC_SURFACE_STRIDE, src.surf_stride)?;
    }
    ctx.wr(b, D_DST_BASE_ADDR_LOW, lo(output))?;
    ctx.wr(b, D_DST_BASE_ADDR_HIGH, hi(output))?;
    ctx.wr(b, D_DST_LINE_STRIDE, dst.line_stride)?;
    ctx.wr(b, D_DST_SURFACE_STRIDE, dst.surf_stride)?;
    ctx.wr(
        b,
        D_DST_RAM_CFG,
        D_DST_RAM_CFG::DST_RAM_TYPE.val(dst_ram.is_mc()).value,
    )?;
    ctx.wr(
        b,
        D_DATA_FORMAT,
        D_DATA_FORMAT::INPUT_DATA
            .val(u32::from(precision.raw()))
            .value,
    )
}
