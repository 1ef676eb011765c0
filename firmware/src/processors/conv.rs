//! The convolution pipeline: CDMA fetches input data and weights into the convolution
//! buffer (CBUF), CSC sequences them into the two MAC arrays CMAC_A/CMAC_B, and CACC
//! accumulates the partial sums and hands the result on the fly to SDP. The five units are
//! programmed and enabled together, with one producer pointer value; CACC's done interrupt
//! completes the operation, and CDMA raises separate "data fetched" and "weights fetched"
//! interrupts that later operations may wait for (so the next layer's fetch can overlap).

use nvdla_loadable::dla::{
    ConvMode, ConvOpDesc, ConvSurfaceDesc, DataFormat, MeanFormat, PixelMapping, WeightFormat,
};

use super::fields::fld;
use super::{hi, lo, Ctx};
use crate::config::Feature;
use crate::error::Error;
use crate::hw::Hw;
use crate::regs::{cacc, cdma, cmac_a, cmac_b, csc, Block};

/// Sets the producer pointer of all five units.
pub(super) fn set_producer<H: Hw>(ctx: &mut Ctx<'_, H>, group: u32) -> Result<(), Error> {
    let v = cacc::S_POINTER::PRODUCER.val(group).value;
    ctx.wr(Block::Cacc, cacc::S_POINTER, v)?;
    ctx.wr(Block::CmacA, cmac_a::S_POINTER, v)?;
    ctx.wr(Block::CmacB, cmac_b::S_POINTER, v)?;
    ctx.wr(Block::Csc, csc::S_POINTER, v)?;
    ctx.wr(Block::Cdma, cdma::S_POINTER, v)
}

/// Waits for the convolution buffer to be flushed (after reset), then enables all five
/// units, last to first.
pub(super) fn enable<H: Hw>(ctx: &mut Ctx<'_, H>) -> Result<(), Error> {
    ctx.poll(Block::Cdma, cdma::S_CBUF_FLUSH_STATUS, |v| {
        cdma::S_CBUF_FLUSH_STATUS::FLUSH_DONE.is_set(v)
    })?;
    let on = cacc::D_OP_ENABLE::OP_EN::ENABLE.value;
    ctx.wr(Block::Cacc, cacc::D_OP_ENABLE, on)?;
    ctx.wr(Block::CmacA, cmac_a::D_OP_ENABLE, on)?;
    ctx.wr(Block::CmacB, cmac_b::D_OP_ENABLE, on)?;
    ctx.wr(Block::Csc, csc::D_OP_ENABLE, on)?;
    ctx.wr(Block::Cdma, cdma::D_OP_ENABLE, on)
}

/// CDMA pixel format code and bytes per pixel of an input format (feature data: 2).
fn pixel_format(f: DataFormat) -> (u32, u32) {
    use DataFormat::*;
    let bpp = match f {
        R8 | Y8U8V8N444 | Y8V8U8N444 => 1,
        R10 | R12 | R16 | R16I | R16F | Y10U10V10N444 | Y10V10U10N444 | Y12U12V12N444
        | Y12V12U12N444 | Y16U16V16N444 | Y16V16U16N444 => 2,
        A16B16G16R16 | X16B16G16R16 | A16B16G16R16F | A16Y16U16V16 | V16U16Y16A16
        | A16Y16U16V16F => 8,
        Feature => 2,
        _ => 4,
    };
    // The pixel format codes follow the descriptor's numbering; for feature data the
    // table entry is the DATAIN_FORMAT value FEATURE (0).
    let code = if f == Feature { 0 } else { u32::from(f.raw()) };
    (code, bpp)
}

/// The status of group `group` in a unit's `S_STATUS` (0 = idle).
fn group_status(v: u32, group: u8) -> u32 {
    if group == 0 {
        cacc::S_STATUS::STATUS_0.read(v)
    } else {
        cacc::S_STATUS::STATUS_1.read(v)
    }
}

/// Programs the selected register group of CACC, CMAC_A/B, CSC and CDMA.
#[inline(never)]
pub(super) fn program<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    group: u8,
    op: &ConvOpDesc,
    s: &ConvSurfaceDesc,
) -> Result<(), Error> {
    let atom = ctx.cfg.atom_size();
    let mode = ctx.or_invalid(
        ConvMode::try_from(op.conv_mode),
        ConvMode::Direct,
        fld!("dla_conv_op_desc.conv_mode"),
        op.conv_mode,
    );
    if mode == ConvMode::Winograd {
        ctx.need(Feature::Winograd)?;
    }
    let in_p = ctx.precision(op.in_precision, fld!("dla_conv_op_desc.in_precision"))?;
    let out_p = ctx.precision(op.out_precision, fld!("dla_conv_op_desc.out_precision"))?;
    let format = ctx.or_invalid(
        DataFormat::try_from(op.data_format),
        DataFormat::Feature,
        fld!("dla_conv_op_desc.data_format"),
        op.data_format,
    );
    let weight_format = ctx.or_invalid(
        WeightFormat::try_from(op.weight_format),
        WeightFormat::Uncompressed,
        fld!("dla_conv_op_desc.weight_format"),
        op.weight_format,
    );
    let mapping = ctx.or_invalid(
        PixelMapping::try_from(op.pixel_mapping),
        PixelMapping::PitchLinear,
        fld!("dla_conv_op_desc.pixel_mapping"),
        op.pixel_mapping,
    );
    let mean = ctx.or_invalid(
        MeanFormat::try_from(op.mean_format),
        MeanFormat::Disable,
        fld!("dla_conv_op_desc.mean_format"),
        op.mean_format,
    );

    let mut wmb = 0;
    let mut wgs = 0;
    if weight_format == WeightFormat::Compressed {
        ctx.need(Feature::WeightCompression)?;
        wmb = ctx.cube_addr(&s.wmb_data, fld!("dla_conv_surface_desc.wmb_data.address"))?;
        wgs = ctx.cube_addr(&s.wgs_data, fld!("dla_conv_surface_desc.wgs_data.address"))?;
    }
    let weight = if s.weight_data.address != -1 {
        ctx.cube_addr(
            &s.weight_data,
            fld!("dla_conv_surface_desc.weight_data.address"),
        )?
    } else {
        0
    };
    let output = if s.dst_data.address != -1 {
        ctx.cube_addr(&s.dst_data, fld!("dla_conv_surface_desc.dst_data.address"))?
    } else {
        0
    };
    let (pixel_code, bpp) = pixel_format(format);
    let input = ctx.input_addr(
        &s.src_data,
        bpp,
        fld!("dla_conv_surface_desc.src_data.address"),
    )?;
    ctx.check(
        op.out_cvt.scale == 1,
        fld!("dla_conv_op_desc.out_cvt.scale"),
        op.out_cvt.scale as u32,
    )?;
    ctx.check(
        op.out_cvt.offset == 0,
        fld!("dla_conv_op_desc.out_cvt.offset"),
        op.out_cvt.offset as u32,
    )?;
    let src_ram = ctx.ram(
        s.src_data.mem_type,
        fld!("dla_conv_surface_desc.src_data.type"),
    )?;
    let weight_ram = ctx.ram(
        s.weight_data.mem_type,
        fld!("dla_conv_surface_desc.weight_data.type"),
    )?;

    // The group about to be programmed must be idle in every unit.
    for (block, reg) in [
        (Block::Cacc, cacc::S_STATUS),
        (Block::CmacA, cmac_a::S_STATUS),
        (Block::CmacB, cmac_b::S_STATUS),
        (Block::Csc, csc::S_STATUS),
        (Block::Cdma, cdma::S_STATUS),
    ] {
        let v = ctx.rd(block, reg)?;
        ctx.check(
            group_status(v, group) == 0,
            fld!("S_STATUS (group busy)"),
            v,
        )?;
    }

    let dst = &s.dst_data;
    let src = &s.src_data;
    let f = |name| name;
    let out_w = ctx.m1(
        u32::from(dst.width),
        f(fld!("dla_conv_surface_desc.dst_data.width")),
    )?;
    let out_h = ctx.m1(
        u32::from(dst.height),
        f(fld!("dla_conv_surface_desc.dst_data.height")),
    )?;
    let out_c = ctx.m1(
        u32::from(dst.channel),
        f(fld!("dla_conv_surface_desc.dst_data.channel")),
    )?;
    let batch = ctx.m1(u32::from(op.batch), fld!("dla_conv_op_desc.batch"))?;
    let mode_v = u32::from(mode.raw());
    let out_pv = u32::from(out_p.raw());

    // CACC.
    {
        use cacc::*;
        let b = Block::Cacc;
        ctx.wr(
            b,
            D_MISC_CFG,
            (D_MISC_CFG::CONV_MODE.val(mode_v) + D_MISC_CFG::PROC_PRECISION.val(out_pv)).value,
        )?;
        ctx.wr(
            b,
            D_DATAOUT_SIZE_0,
            (D_DATAOUT_SIZE_0::DATAOUT_WIDTH.val(out_w)
                + D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.val(out_h))
            .value,
        )?;
        ctx.wr(
            b,
            D_DATAOUT_SIZE_1,
            D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.val(out_c).value,
        )?;
        ctx.wr(b, D_DATAOUT_ADDR, lo(output))?;
        ctx.wr(b, D_BATCH_NUMBER, batch)?;
        ctx.wr(b, D_LINE_STRIDE, dst.line_stride)?;
        ctx.wr(b, D_SURF_STRIDE, dst.surf_stride)?;
        let packed = if dst.width == 1 && dst.height == 1 {
            // A 1x1 output is one atom per surface: lines and surfaces are packed.
            ctx.check(
                dst.line_stride == u32::from(dst.width) * atom,
                fld!("dla_conv_surface_desc.dst_data.line_stride"),
                dst.line_stride,
            )?;
            D_DATAOUT_MAP::LINE_PACKED::TRUE + D_DATAOUT_MAP::SURF_PACKED::TRUE
        } else {
            D_DATAOUT_MAP::LINE_PACKED::FALSE + D_DATAOUT_MAP::SURF_PACKED::FALSE
        };
        ctx.wr(b, D_DATAOUT_MAP, packed.value)?;
        ctx.wr(b, D_CLIP_CFG, u32::from(op.out_cvt.truncate))?;
    }

    // CMAC A and B.
    let cmac = (cmac_a::D_MISC_CFG::CONV_MODE.val(mode_v)
        + cmac_a::D_MISC_CFG::PROC_PRECISION.val(out_pv))
    .value;
    ctx.wr(Block::CmacA, cmac_a::D_MISC_CFG, cmac)?;
    ctx.wr(Block::CmacB, cmac_b::D_MISC_CFG, cmac)?;

    let in_format = u32::from(format.is_pixel());
    let reuse = |v: u8| u32::from(v);
    let w_csc = ctx.m1(
        u32::from(op.input_width_csc),
        fld!("dla_conv_op_desc.input_width_csc"),
    )?;
    let h_csc = ctx.m1(
        u32::from(op.input_height_csc),
        fld!("dla_conv_op_desc.input_height_csc"),
    )?;
    let c_csc = ctx.m1(
        u32::from(op.input_channel_csc),
        fld!("dla_conv_op_desc.input_channel_csc"),
    )?;
    let kw = ctx.m1(
        u32::from(op.kernel_width_csc),
        fld!("dla_conv_op_desc.kernel_width_csc"),
    )?;
    let kh = ctx.m1(
        u32::from(op.kernel_height_csc),
        fld!("dla_conv_op_desc.kernel_height_csc"),
    )?;
    let kc = ctx.m1(
        u32::from(op.kernel_channel_csc),
        fld!("dla_conv_op_desc.kernel_channel_csc"),
    )?;
    let w_cmac = ctx.m1(
        u32::from(op.input_width_cmac),
        fld!("dla_conv_op_desc.input_width_cmac"),
    )?;
    let h_cmac = ctx.m1(
        u32::from(op.input_height_cmac),
        fld!("dla_conv_op_desc.input_height_cmac"),
    )?;
    let entries = ctx.m1(
        u32::from(op.entry_per_slice),
        fld!("dla_conv_op_desc.entry_per_slice"),
    )?;
    let release = ctx.m1(u32::from(op.release), fld!("dla_conv_op_desc.release"))?;
    let data_bank = ctx.m1(u32::from(op.data_bank), fld!("dla_conv_op_desc.data_bank"))?;
    let weight_bank = ctx.m1(
        u32::from(op.weight_bank),
        fld!("dla_conv_op_desc.weight_bank"),
    )?;
    let dil_x = ctx.m1(
        u32::from(op.dilation_x),
        fld!("dla_conv_op_desc.dilation_x"),
    )?;
    let dil_y = ctx.m1(
        u32::from(op.dilation_y),
        fld!("dla_conv_op_desc.dilation_y"),
    )?;
    let stride_x = ctx.m1(
        u32::from(op.conv_stride_x),
        fld!("dla_conv_op_desc.conv_stride_x"),
    )?;
    let stride_y = ctx.m1(
        u32::from(op.conv_stride_y),
        fld!("dla_conv_op_desc.conv_stride_y"),
    )?;
    let atomics = (u32::from(dst.width) * u32::from(dst.height))
        .checked_sub(1)
        .ok_or(ctx.invalid(fld!("dla_conv_surface_desc.dst_data.width"), 0))?;

    // CSC.
    {
        use csc::*;
        let b = Block::Csc;
        // The sequencer is told the output precision for both input and processing.
        ctx.wr(
            b,
            D_MISC_CFG,
            (D_MISC_CFG::CONV_MODE.val(mode_v)
                + D_MISC_CFG::IN_PRECISION.val(out_pv)
                + D_MISC_CFG::PROC_PRECISION.val(out_pv)
                + D_MISC_CFG::DATA_REUSE.val(reuse(op.data_reuse))
                + D_MISC_CFG::WEIGHT_REUSE.val(reuse(op.weight_reuse))
                + D_MISC_CFG::SKIP_DATA_RLS.val(reuse(op.skip_data_rls))
                + D_MISC_CFG::SKIP_WEIGHT_RLS.val(reuse(op.skip_weight_rls)))
            .value,
        )?;
        ctx.wr(
            b,
            D_DATAIN_FORMAT,
            D_DATAIN_FORMAT::DATAIN_FORMAT.val(in_format).value,
        )?;
        ctx.wr(
            b,
            D_DATAIN_SIZE_EXT_0,
            (D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.val(w_csc)
                + D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.val(h_csc))
            .value,
        )?;
        ctx.wr(
            b,
            D_DATAIN_SIZE_EXT_1,
            D_DATAIN_SIZE_EXT_1::DATAIN_CHANNEL_EXT.val(c_csc).value,
        )?;
        ctx.wr(b, D_BATCH_NUMBER, D_BATCH_NUMBER::BATCHES.val(batch).value)?;
        ctx.wr(
            b,
            D_POST_Y_EXTENSION,
            D_POST_Y_EXTENSION::Y_EXTENSION
                .val(u32::from(op.post_extension))
                .value,
        )?;
        ctx.wr(
            b,
            D_ENTRY_PER_SLICE,
            D_ENTRY_PER_SLICE::ENTRIES.val(entries).value,
        )?;
        ctx.wr(
            b,
            D_WEIGHT_FORMAT,
            D_WEIGHT_FORMAT::WEIGHT_FORMAT
                .val(u32::from(weight_format.raw()))
                .value,
        )?;
        ctx.wr(
            b,
            D_WEIGHT_SIZE_EXT_0,
            (D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.val(kw)
                + D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.val(kh))
            .value,
        )?;
        ctx.wr(
            b,
            D_WEIGHT_SIZE_EXT_1,
            (D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.val(kc)
                + D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.val(out_c))
            .value,
        )?;
        ctx.wr(b, D_WEIGHT_BYTES, s.weight_data.size)?;
        ctx.wr(b, D_WMB_BYTES, s.wmb_data.size)?;
        ctx.wr(
            b,
            D_DATAOUT_SIZE_0,
            (D_DATAOUT_SIZE_0::DATAOUT_WIDTH.val(w_cmac)
                + D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.val(h_cmac))
            .value,
        )?;
        ctx.wr(
            b,
            D_DATAOUT_SIZE_1,
            D_DATAOUT_SIZE_1::DATAOUT_CHANNEL.val(out_c).value,
        )?;
        ctx.wr(b, D_ATOMICS, D_ATOMICS::ATOMICS.val(atomics).value)?;
        ctx.wr(b, D_RELEASE, D_RELEASE::RLS_SLICES.val(release).value)?;
        // Winograd takes its stride and padding from the pre-transformed data.
        let (sx, sy, px, py) = if mode == ConvMode::Direct {
            (
                stride_x,
                stride_y,
                u32::from(op.pad_x_left),
                u32::from(op.pad_y_top),
            )
        } else {
            (0, 0, 0, 0)
        };
        ctx.wr(
            b,
            D_CONV_STRIDE_EXT,
            (D_CONV_STRIDE_EXT::CONV_X_STRIDE_EXT.val(sx)
                + D_CONV_STRIDE_EXT::CONV_Y_STRIDE_EXT.val(sy))
            .value,
        )?;
        ctx.wr(
            b,
            D_DILATION_EXT,
            (D_DILATION_EXT::X_DILATION_EXT.val(dil_x) + D_DILATION_EXT::Y_DILATION_EXT.val(dil_y))
                .value,
        )?;
        ctx.wr(
            b,
            D_ZERO_PADDING,
            (D_ZERO_PADDING::PAD_LEFT.val(px) + D_ZERO_PADDING::PAD_TOP.val(py)).value,
        )?;
        ctx.wr(
            b,
            D_ZERO_PADDING_VALUE,
            D_ZERO_PADDING_VALUE::PAD_VALUE
                .val(i32::from(op.pad_val) as u32)
                .value,
        )?;
        ctx.wr(
            b,
            D_BANK,
            (D_BANK::DATA_BANK.val(data_bank) + D_BANK::WEIGHT_BANK.val(weight_bank)).value,
        )?;
        ctx.wr(b, D_PRA_CFG, u32::from(op.pra_truncate))?;
    }

    // CDMA.
    {
        use cdma::*;
        let b = Block::Cdma;
        ctx.wr(
            b,
            D_MISC_CFG,
            (D_MISC_CFG::CONV_MODE.val(mode_v)
                + D_MISC_CFG::IN_PRECISION.val(u32::from(in_p.raw()))
                + D_MISC_CFG::PROC_PRECISION.val(out_pv)
                + D_MISC_CFG::DATA_REUSE.val(reuse(op.data_reuse))
                + D_MISC_CFG::WEIGHT_REUSE.val(reuse(op.weight_reuse))
                + D_MISC_CFG::SKIP_DATA_RLS.val(reuse(op.skip_data_rls))
                + D_MISC_CFG::SKIP_WEIGHT_RLS.val(reuse(op.skip_weight_rls)))
            .value,
        )?;
        ctx.wr(
            b,
            D_DATAIN_FORMAT,
            (D_DATAIN_FORMAT::DATAIN_FORMAT.val(in_format)
                + D_DATAIN_FORMAT::PIXEL_FORMAT.val(pixel_code)
                + D_DATAIN_FORMAT::PIXEL_MAPPING.val(u32::from(mapping.raw()))
                + D_DATAIN_FORMAT::PIXEL_SIGN_OVERRIDE.val(u32::from(op.pixel_override)))
            .value,
        )?;
        let w = ctx.m1(
            u32::from(src.width),
            fld!("dla_conv_surface_desc.src_data.width"),
        )?;
        let h = ctx.m1(
            u32::from(src.height),
            fld!("dla_conv_surface_desc.src_data.height"),
        )?;
        let c = ctx.m1(
            u32::from(src.channel),
            fld!("dla_conv_surface_desc.src_data.channel"),
        )?;
        ctx.wr(
            b,
            D_DATAIN_SIZE_0,
            (D_DATAIN_SIZE_0::DATAIN_WIDTH.val(w) + D_DATAIN_SIZE_0::DATAIN_HEIGHT.val(h)).value,
        )?;
        ctx.wr(
            b,
            D_DATAIN_SIZE_1,
            D_DATAIN_SIZE_1::DATAIN_CHANNEL.val(c).value,
        )?;
        ctx.wr(
            b,
            D_DATAIN_SIZE_EXT_0,
            (D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.val(w_csc)
                + D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.val(h_csc))
            .value,
        )?;
        ctx.wr(
            b,
            D_DAIN_RAM_TYPE,
            D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE.val(src_ram.is_mc()).value,
        )?;
        ctx.wr(b, D_DAIN_ADDR_HIGH_0, hi(input))?;
        ctx.wr(b, D_DAIN_ADDR_LOW_0, lo(input))?;
        // Second plane (semi-planar pixel formats) at `offset_u` from the first.
        let uv = input.wrapping_add(s.offset_u as u64);
        ctx.wr(b, D_DAIN_ADDR_HIGH_1, hi(uv))?;
        ctx.wr(b, D_DAIN_ADDR_LOW_1, lo(uv))?;
        ctx.wr(b, D_LINE_STRIDE, src.line_stride)?;
        ctx.wr(b, D_SURF_STRIDE, src.surf_stride)?;
        ctx.wr(b, D_LINE_UV_STRIDE, s.in_line_uv_stride)?;
        let line_packed = u64::from(src.line_stride) == u64::from(src.width) * u64::from(atom);
        let surf_packed = u64::from(src.surf_stride)
            == u64::from(src.width) * u64::from(src.height) * u64::from(atom);
        ctx.wr(
            b,
            D_DAIN_MAP,
            (D_DAIN_MAP::LINE_PACKED.val(u32::from(line_packed))
                + D_DAIN_MAP::SURF_PACKED.val(u32::from(surf_packed)))
            .value,
        )?;
        ctx.wr(b, D_BATCH_NUMBER, D_BATCH_NUMBER::BATCHES.val(batch).value)?;
        ctx.wr(b, D_BATCH_STRIDE, op.batch_stride)?;
        ctx.wr(
            b,
            D_ENTRY_PER_SLICE,
            D_ENTRY_PER_SLICE::ENTRIES.val(entries).value,
        )?;
        let grains = ctx.m1(
            u32::from(op.fetch_grain),
            fld!("dla_conv_op_desc.fetch_grain"),
        )?;
        ctx.wr(b, D_FETCH_GRAIN, D_FETCH_GRAIN::GRAINS.val(grains).value)?;
        ctx.wr(
            b,
            D_WEIGHT_FORMAT,
            D_WEIGHT_FORMAT::WEIGHT_FORMAT
                .val(u32::from(weight_format.raw()))
                .value,
        )?;
        let bpk = ctx.m1(
            op.bytes_per_kernel,
            fld!("dla_conv_op_desc.bytes_per_kernel"),
        )?;
        ctx.wr(
            b,
            D_WEIGHT_SIZE_0,
            D_WEIGHT_SIZE_0::BYTE_PER_KERNEL.val(bpk).value,
        )?;
        ctx.wr(
            b,
            D_WEIGHT_SIZE_1,
            D_WEIGHT_SIZE_1::WEIGHT_KERNEL.val(out_c).value,
        )?;
        ctx.wr(
            b,
            D_WEIGHT_RAM_TYPE,
            D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE
                .val(weight_ram.is_mc())
                .value,
        )?;
        ctx.wr(b, D_WEIGHT_ADDR_HIGH, hi(weight))?;
        ctx.wr(b, D_WEIGHT_ADDR_LOW, lo(weight))?;
        ctx.wr(b, D_WEIGHT_BYTES, s.weight_data.size)?;
        if weight_format == WeightFormat::Compressed {
            ctx.wr(b, D_WGS_ADDR_HIGH, hi(wgs))?;
            ctx.wr(b, D_WGS_ADDR_LOW, lo(wgs))?;
            ctx.wr(b, D_WMB_ADDR_HIGH, hi(wmb))?;
            ctx.wr(b, D_WMB_ADDR_LOW, lo(wmb))?;
            ctx.wr(b, D_WMB_BYTES, s.wmb_data.size)?;
        }
        ctx.wr(
            b,
            D_MEAN_FORMAT,
            D_MEAN_FORMAT::MEAN_FORMAT.val(u32::from(mean.raw())).value,
        )?;
        if mean == MeanFormat::Enable {
            ctx.wr(
                b,
                D_MEAN_GLOBAL_0,
                (D_MEAN_GLOBAL_0::MEAN_RY.val(i32::from(op.mean_ry) as u32)
                    + D_MEAN_GLOBAL_0::MEAN_GU.val(i32::from(op.mean_gu) as u32))
                .value,
            )?;
            ctx.wr(
                b,
                D_MEAN_GLOBAL_1,
                (D_MEAN_GLOBAL_1::MEAN_BV.val(i32::from(op.mean_bv) as u32)
                    + D_MEAN_GLOBAL_1::MEAN_AX.val(i32::from(op.mean_ax) as u32))
                .value,
            )?;
        }
        if op.in_cvt.enable != 0 {
            ctx.wr(
                b,
                D_CVT_CFG,
                (D_CVT_CFG::CVT_EN::ENABLE
                    + D_CVT_CFG::CVT_TRUNCATE.val(u32::from(op.in_cvt.truncate)))
                .value,
            )?;
            ctx.wr(b, D_CVT_OFFSET, op.in_cvt.offset as u32)?;
            ctx.wr(b, D_CVT_SCALE, i32::from(op.in_cvt.scale) as u32)?;
        } else {
            ctx.wr(b, D_CVT_CFG, D_CVT_CFG::CVT_EN::DISABLE.value)?;
        }
        ctx.wr(
            b,
            D_CONV_STRIDE,
            (D_CONV_STRIDE::CONV_X_STRIDE.val(stride_x)
                + D_CONV_STRIDE::CONV_Y_STRIDE.val(stride_y))
            .value,
        )?;
        ctx.wr(
            b,
            D_ZERO_PADDING,
            (D_ZERO_PADDING::PAD_LEFT.val(u32::from(op.pad_x_left))
                + D_ZERO_PADDING::PAD_RIGHT.val(u32::from(op.pad_x_right))
                + D_ZERO_PADDING::PAD_TOP.val(u32::from(op.pad_y_top))
                + D_ZERO_PADDING::PAD_BOTTOM.val(u32::from(op.pad_y_bottom)))
            .value,
        )?;
        ctx.wr(
            b,
            D_ZERO_PADDING_VALUE,
            D_ZERO_PADDING_VALUE::PAD_VALUE
                .val(i32::from(op.pad_val) as u32)
                .value,
        )?;
        ctx.wr(
            b,
            D_BANK,
            (D_BANK::WEIGHT_BANK.val(weight_bank) + D_BANK::DATA_BANK.val(data_bank)).value,
        )?;
    }
    Ok(())
}
