//! Lookup-table programming, shared by SDP and CDP.
//!
//! Both engines have one LUT made of two raw tables: the 65-entry "linear/exponential"
//! (LE) table, indexed either linearly or by the exponent of the input, and the 257-entry
//! "linear only" (LO) table. Tables are written through an access window (`S_LUT_ACCESS_CFG`
//! selects the table and write mode, then every write to `S_LUT_ACCESS_DATA` stores the next
//! entry). The LUT is single (`S_*`), shared by both register groups, and locked while the
//! engine runs, which is why the scheduler delays programming a group that needs a
//! different LUT than the running one (see [`crate::engine`]).
//!
//! CDP's range registers are 38 bits wide (LOW/HIGH pairs); SDP's are 32 bits.

use nvdla_loadable::dla::{LutParam, Precision};

use super::fields::fld;
use super::Ctx;
use crate::error::Error;
use crate::hw::Hw;
use crate::regs::{cdp, Block};

/// Where one engine's LUT registers are.
pub(super) struct LutRegs {
    pub block: Block,
    pub access_cfg: u32,
    pub access_data: u32,
    pub cfg: u32,
    pub info: u32,
    /// `(low, Some(high))` offsets of the LE start, LE end, LO start and LO end registers.
    pub ranges: [(u32, Option<u32>); 4],
    pub le_slope_scale: u32,
    pub le_slope_shift: u32,
    pub lo_slope_scale: u32,
    pub lo_slope_shift: u32,
}

/// Loads `lut` into the engine's LUT. `precision` is the engine's input precision: fp16
/// slopes are raw half floats, integer slopes are scale/shift pairs.
pub(super) fn program<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    r: &LutRegs,
    lut: &LutParam,
    precision: Precision,
) -> Result<(), Error> {
    // The field layouts are identical in SDP and CDP; CDP's definitions serve both.
    use cdp::{
        S_LUT_ACCESS_CFG as ACC, S_LUT_CFG as CFG, S_LUT_INFO as INFO,
        S_LUT_LE_SLOPE_SCALE as LESC, S_LUT_LE_SLOPE_SHIFT as LESH, S_LUT_LO_SLOPE_SCALE as LOSC,
        S_LUT_LO_SLOPE_SHIFT as LOSH,
    };
    for (field, v) in [
        (fld!("dla_lut_param.method"), lut.method),
        (fld!("dla_lut_param.hybrid_priority"), lut.hybrid_priority),
        (
            fld!("dla_lut_param.underflow_priority"),
            lut.underflow_priority,
        ),
        (
            fld!("dla_lut_param.overflow_priority"),
            lut.overflow_priority,
        ),
    ] {
        ctx.check(v <= 1, field, u32::from(v))?;
    }

    // Raw tables; entries are signed 16-bit values, written sign-extended.
    ctx.wr(
        r.block,
        r.access_cfg,
        (ACC::LUT_TABLE_ID::LE + ACC::LUT_ACCESS_TYPE::WRITE).value,
    )?;
    for &e in &lut.linear_exp_table {
        ctx.wr(r.block, r.access_data, i32::from(e) as u32)?;
    }
    ctx.wr(
        r.block,
        r.access_cfg,
        (ACC::LUT_TABLE_ID::LO + ACC::LUT_ACCESS_TYPE::WRITE).value,
    )?;
    for &e in &lut.linear_only_table {
        ctx.wr(r.block, r.access_data, i32::from(e) as u32)?;
    }

    let exponential = lut.method == 0;
    ctx.wr(
        r.block,
        r.cfg,
        (CFG::LUT_LE_FUNCTION.val(u32::from(lut.method))
            + CFG::LUT_HYBRID_PRIORITY.val(u32::from(lut.hybrid_priority))
            + CFG::LUT_UFLOW_PRIORITY.val(u32::from(lut.underflow_priority))
            + CFG::LUT_OFLOW_PRIORITY.val(u32::from(lut.overflow_priority)))
        .value,
    )?;
    let lo_select = INFO::LUT_LO_INDEX_SELECT.val(lut.linear_only_offset.frac_bits() as u32);
    let info = if exponential {
        INFO::LUT_LE_INDEX_OFFSET.val(lut.linear_exp_offset.exp_offset() as u32) + lo_select
    } else {
        INFO::LUT_LE_INDEX_SELECT.val(lut.linear_exp_offset.frac_bits() as u32) + lo_select
    };
    ctx.wr(r.block, r.info, info.value)?;

    let ranges = [
        lut.linear_exp_start,
        lut.linear_exp_end,
        lut.linear_only_start,
        lut.linear_only_end,
    ];
    for ((low, high), v) in r.ranges.iter().zip(ranges) {
        ctx.wr(r.block, *low, v as u32)?;
        if let Some(high) = high {
            ctx.wr(r.block, *high, (v >> 32) as u32)?;
        }
    }

    if precision == Precision::Fp16 {
        ctx.wr(
            r.block,
            r.le_slope_scale,
            (LESC::LUT_LE_SLOPE_UFLOW_SCALE
                .val(u32::from(lut.linear_exp_underflow_slope.data_f()))
                + LESC::LUT_LE_SLOPE_OFLOW_SCALE
                    .val(u32::from(lut.linear_exp_overflow_slope.data_f())))
            .value,
        )?;
        ctx.wr(
            r.block,
            r.lo_slope_scale,
            (LOSC::LUT_LO_SLOPE_UFLOW_SCALE
                .val(u32::from(lut.linear_only_underflow_slope.data_f()))
                + LOSC::LUT_LO_SLOPE_OFLOW_SCALE
                    .val(u32::from(lut.linear_only_overflow_slope.data_f())))
            .value,
        )?;
    } else {
        let (u, o) = (
            lut.linear_exp_underflow_slope.data_i(),
            lut.linear_exp_overflow_slope.data_i(),
        );
        ctx.wr(
            r.block,
            r.le_slope_scale,
            (LESC::LUT_LE_SLOPE_UFLOW_SCALE.val(u.scale as u32)
                + LESC::LUT_LE_SLOPE_OFLOW_SCALE.val(o.scale as u32))
            .value,
        )?;
        ctx.wr(
            r.block,
            r.le_slope_shift,
            (LESH::LUT_LE_SLOPE_UFLOW_SHIFT.val(u.shifter as u32)
                + LESH::LUT_LE_SLOPE_OFLOW_SHIFT.val(o.shifter as u32))
            .value,
        )?;
        let (u, o) = (
            lut.linear_only_underflow_slope.data_i(),
            lut.linear_only_overflow_slope.data_i(),
        );
        ctx.wr(
            r.block,
            r.lo_slope_scale,
            (LOSC::LUT_LO_SLOPE_UFLOW_SCALE.val(u.scale as u32)
                + LOSC::LUT_LO_SLOPE_OFLOW_SCALE.val(o.scale as u32))
            .value,
        )?;
        ctx.wr(
            r.block,
            r.lo_slope_shift,
            (LOSH::LUT_LO_SLOPE_UFLOW_SHIFT.val(u.shifter as u32)
                + LOSH::LUT_LO_SLOPE_OFLOW_SHIFT.val(o.shifter as u32))
            .value,
        )?;
    }
    Ok(())
}
