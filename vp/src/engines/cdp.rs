//! CDP (channel data processor: local response normalisation) and CDP_RDMA.
//!
//! For every element (hwarch "Channel Data Processor"; integer arithmetic from
//! `cmod/cdp/NV_NVDLA_cdp.cpp` `lookup_lut_int8` and `cmod/hls/cdp_libs/`):
//!
//! 1. input converter: `(x - offset) * scale`, shifted right with rounding (ties away
//!    from zero) and saturated to 9 bits (int8) or 17 bits (int16);
//! 2. square sum over a window of 3, 5, 7 or 9 channels centred on the element
//!    (channels outside the cube contribute 0; `SQSUM_BYPASS` takes the converted value
//!    itself);
//! 3. two lookup tables, LE (65 entries, linear or exponent indexed) and LO (257 entries,
//!    linear), each with under/overflow extrapolation by a slope; the priority bits pick
//!    the result when both miss or both hit;
//! 4. multiply by the converted input (unless `MUL_BYPASS`);
//! 5. output converter: subtract offset, multiply by scale, rounding shift, saturate to
//!    the data width.
//!
//! fp16 follows the floating-point variant of the same steps (see `run_fp16`).

use super::{addr64, check_precision, par_ranges, CubeLayout, EngineError, Precision};
use crate::arith::{sat, sext, shr_round_sat};
use crate::config::HwConfig;
use crate::fp::{f16_to_f32, FP16, FP17, FP32};
use crate::mem::{Memory, RamType};
use crate::regs::{ids, Reg, RegFile};
use crate::vp::LutRam;
use ids::cdp::{D_FUNC_BYPASS as CDP_FUNC_BYPASS, S_LUT_CFG as LUT_CFG, S_LUT_INFO as LUT_INFO};
use tock_registers::LocalRegisterCopy;

const BLOCK: &str = "CDP";

/// Rounds `v / 2^shift` to nearest, ties away from zero, for a signed 5-bit shift
/// (a negative shift multiplies), saturating to 56 bits — the C model's
/// `convert(v, shift, INTERP_INTERMIDIATE_BITS_INT8 = 56, true)`. The caller adds the
/// table entry and saturates the sum to 16 bits (`convert(.., 0, 16, true)`).
fn scale_shift(v: i64, shift: i64) -> i64 {
    if shift >= 0 {
        sat(crate::arith::shr_round(v, shift as u32), 56)
    } else {
        crate::arith::shl_sat(v, (-shift) as u32, 56)
    }
}

/// Which way a table lookup went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LutHit {
    /// Below the table start.
    Underflow,
    /// Past the table end.
    Overflow,
    /// Interpolated inside the table.
    Hit,
}

/// One table's programming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableCfg {
    /// Exponent-indexed (LE table only).
    pub exponent: bool,
    /// Start of the covered input range.
    pub start: i64,
    /// End of the covered input range.
    pub end: i64,
    /// Index select: fraction bits of the linear index (signed 6-bit).
    pub index_select: i64,
    /// Exponent offset (signed 8-bit, exponent mode).
    pub index_offset: i64,
    /// Underflow slope scale and shift.
    pub uflow: (i64, i64),
    /// Overflow slope scale and shift.
    pub oflow: (i64, i64),
}

/// Looks `x` up in `table` (its last index is `table.len() - 1`).
pub fn lookup(x: i64, t: &TableCfg, table: &[u16]) -> (i64, LutHit) {
    let last = table.len() - 1;
    let entry = |i: usize| i64::from(table[i.min(last)] as i16);
    // The C model forms the slope product in 64 bits before `convert` scales and
    // saturates it to 56 bits.
    let prod = |d: i128, s: i64| crate::arith::sat128(d * i128::from(s), 64);
    let under = |extra: i64| {
        let d = i128::from(x) - i128::from(t.start) - i128::from(extra);
        let v = entry(0) + scale_shift(prod(d, t.uflow.0), t.uflow.1);
        (sat(v, 16), LutHit::Underflow)
    };
    let over = || {
        let v = entry(last)
            + scale_shift(
                prod(i128::from(x) - i128::from(t.end), t.oflow.0),
                t.oflow.1,
            );
        (sat(v, 16), LutHit::Overflow)
    };
    let d = x.saturating_sub(t.start);
    if t.exponent {
        let log = if d <= 0 {
            0
        } else {
            63 - i64::from(d.leading_zeros())
        };
        let index = log - t.index_offset;
        if index < 0 || d <= 0 {
            let extra = if t.index_offset < 0 {
                0
            } else {
                1i64 << t.index_offset.min(62)
            };
            return under(extra);
        }
        if index as usize >= last {
            return over();
        }
        let i = index as usize;
        let p = index + t.index_offset;
        let mut frac = d - (1i64 << p);
        frac = if p > 16 {
            frac >> (p - 16)
        } else {
            frac << (16 - p)
        };
        let v = entry(i) + scale_shift((entry(i + 1) - entry(i)) * frac, 16);
        return (sat(v, 16), LutHit::Hit);
    }
    let sel = t.index_select;
    let index = if sel < 0 {
        d << (-sel).min(62)
    } else {
        d >> sel.min(62)
    };
    if index < 0 || d <= 0 {
        return under(0);
    }
    if index as usize >= last {
        return over();
    }
    let i = index as usize;
    let frac = if sel < 0 {
        0
    } else {
        let f = d & ((1i64 << sel.min(62)) - 1);
        if sel > 16 {
            f >> (sel - 16)
        } else {
            f << (16 - sel)
        }
    };
    let v = entry(i) + scale_shift((entry(i + 1) - entry(i)) * frac, 16);
    (sat(v, 16), LutHit::Hit)
}

/// The LE/LO pair with its selection rules (`S_LUT_CFG`).
#[derive(Debug, Clone, Copy)]
pub struct LutCfg {
    /// LE table programming.
    pub le: TableCfg,
    /// LO table programming.
    pub lo: TableCfg,
    /// Select LO when both underflow.
    pub uflow_lo: bool,
    /// Select LO when both overflow.
    pub oflow_lo: bool,
    /// Select LO when both hit (or one hits while the other misses the other way).
    pub hybrid_lo: bool,
}

impl LutCfg {
    /// Result of both tables combined.
    pub fn eval(&self, x: i64, ram: &LutRam) -> i64 {
        let (le, le_h) = lookup(x, &self.le, &ram.le);
        let (lo, lo_h) = lookup(x, &self.lo, &ram.lo);
        match (le_h, lo_h) {
            (LutHit::Underflow, LutHit::Underflow) => {
                if self.uflow_lo {
                    lo
                } else {
                    le
                }
            }
            (LutHit::Overflow, LutHit::Overflow) => {
                if self.oflow_lo {
                    lo
                } else {
                    le
                }
            }
            (LutHit::Hit, LutHit::Hit)
            | (LutHit::Underflow | LutHit::Overflow, LutHit::Underflow | LutHit::Overflow) => {
                if self.hybrid_lo {
                    lo
                } else {
                    le
                }
            }
            (LutHit::Hit, _) => le,
            (_, LutHit::Hit) => lo,
        }
    }

    fn decode(cdp: &RegFile) -> Self {
        let g = |n: Reg| cdp.get(0, n);
        let wide = |lo: Reg, hi: Reg| (sext(g(hi), 6) << 32) | i64::from(g(lo));
        let cfg: LocalRegisterCopy<u32, LUT_CFG::Register> =
            LocalRegisterCopy::new(g(ids::cdp::S_LUT_CFG));
        let info: LocalRegisterCopy<u32, LUT_INFO::Register> =
            LocalRegisterCopy::new(g(ids::cdp::S_LUT_INFO));
        let les = g(ids::cdp::S_LUT_LE_SLOPE_SCALE);
        let lesh = g(ids::cdp::S_LUT_LE_SLOPE_SHIFT);
        let los = g(ids::cdp::S_LUT_LO_SLOPE_SCALE);
        let losh = g(ids::cdp::S_LUT_LO_SLOPE_SHIFT);
        LutCfg {
            le: TableCfg {
                exponent: cfg.matches_all(LUT_CFG::LUT_LE_FUNCTION::EXPONENT),
                start: wide(ids::cdp::S_LUT_LE_START_LOW, ids::cdp::S_LUT_LE_START_HIGH),
                end: wide(ids::cdp::S_LUT_LE_END_LOW, ids::cdp::S_LUT_LE_END_HIGH),
                // Sign-extended from bit 5 (`lookup_lut_int8`).
                index_select: sext(info.read(LUT_INFO::LUT_LE_INDEX_SELECT) & 0x3f, 6),
                index_offset: sext(info.read(LUT_INFO::LUT_LE_INDEX_OFFSET), 8),
                uflow: (sext(les & 0xffff, 16), sext(lesh & 0x1f, 5)),
                oflow: (sext(les >> 16, 16), sext((lesh >> 5) & 0x1f, 5)),
            },
            lo: TableCfg {
                exponent: false,
                start: wide(ids::cdp::S_LUT_LO_START_LOW, ids::cdp::S_LUT_LO_START_HIGH),
                end: wide(ids::cdp::S_LUT_LO_END_LOW, ids::cdp::S_LUT_LO_END_HIGH),
                index_select: sext(info.read(LUT_INFO::LUT_LO_INDEX_SELECT) & 0x3f, 6),
                index_offset: 0,
                uflow: (sext(los & 0xffff, 16), sext(losh & 0x1f, 5)),
                oflow: (sext(los >> 16, 16), sext((losh >> 5) & 0x1f, 5)),
            },
            uflow_lo: cfg.matches_all(LUT_CFG::LUT_UFLOW_PRIORITY::LO),
            oflow_lo: cfg.matches_all(LUT_CFG::LUT_OFLOW_PRIORITY::LO),
            hybrid_lo: cfg.matches_all(LUT_CFG::LUT_HYBRID_PRIORITY::LO),
        }
    }
}

/// Runs one layer.
pub fn run(
    cfg: &HwConfig,
    cdp: &RegFile,
    rdma: &RegFile,
    lut: &LutRam,
    mem: &mut Memory,
) -> Result<(), EngineError> {
    let prec = Precision::from_field(cdp.cur(ids::cdp::D_DATA_FORMAT), BLOCK)?;
    check_precision(cfg, prec, BLOCK)?;
    let d = |n: Reg| (rdma.cur(n) & 0x1fff) as usize + 1;
    let (w, h, c) = (
        d(ids::cdp_rdma::D_DATA_CUBE_WIDTH),
        d(ids::cdp_rdma::D_DATA_CUBE_HEIGHT),
        d(ids::cdp_rdma::D_DATA_CUBE_CHANNEL),
    );
    super::check_cube(BLOCK, w, h, c.next_multiple_of(32))?;
    let atom = cfg.hw.memory_atomic;
    let cpa = (atom / prec.bytes()).max(1) as usize;
    let cp = c.div_ceil(cpa) * cpa;
    // Refuse an unreachable output before computing it.
    let dst = CubeLayout {
        ram: RamType::from_field(cdp.cur(ids::cdp::D_DST_DMA_CFG)),
        base: addr64(
            cdp.cur(ids::cdp::D_DST_BASE_ADDR_HIGH),
            cdp.cur(ids::cdp::D_DST_BASE_ADDR_LOW),
        ),
        line_stride: u64::from(cdp.cur(ids::cdp::D_DST_LINE_STRIDE)),
        surf_stride: u64::from(cdp.cur(ids::cdp::D_DST_SURFACE_STRIDE)),
        w,
        h,
        c: cp,
        prec,
        atom,
    };
    dst.check(mem)?;
    let input = CubeLayout {
        ram: RamType::from_field(rdma.cur(ids::cdp_rdma::D_SRC_DMA_CFG)),
        base: addr64(
            rdma.cur(ids::cdp_rdma::D_SRC_BASE_ADDR_HIGH),
            rdma.cur(ids::cdp_rdma::D_SRC_BASE_ADDR_LOW),
        ),
        line_stride: u64::from(rdma.cur(ids::cdp_rdma::D_SRC_LINE_STRIDE)),
        surf_stride: u64::from(rdma.cur(ids::cdp_rdma::D_SRC_SURFACE_STRIDE)),
        w,
        h,
        c,
        prec,
        atom,
    }
    .read(mem)?;

    if prec == Precision::Fp16 {
        let out = run_fp16(cdp, lut, &input, (w, h, c), cp);
        return dst.write(mem, &out);
    }
    let int8 = prec == Precision::Int8;
    // Input converter widths (cdp_icvt.h): int8 uses the 8-bit offset lane, a 9-bit
    // subtract, 25-bit product and 9-bit result; int16 17/33/17 bits.
    let (in_off, in_bits) = if int8 {
        (sext(cdp.cur(ids::cdp::D_DATIN_OFFSET) & 0xff, 8), 9)
    } else {
        (
            sext(
                cdp.field(
                    ids::cdp::D_DATIN_OFFSET,
                    ids::cdp::D_DATIN_OFFSET::DATIN_OFFSET,
                ),
                16,
            ),
            17,
        )
    };
    let in_scale = sext(
        cdp.field(
            ids::cdp::D_DATIN_SCALE,
            ids::cdp::D_DATIN_SCALE::DATIN_SCALE,
        ),
        16,
    );
    let in_shift = cdp.field(
        ids::cdp::D_DATIN_SHIFTER,
        ids::cdp::D_DATIN_SHIFTER::DATIN_SHIFTER,
    );
    // Output converter (cdp_ocvt.h): int8 lanes take a 25-bit offset, int16 32 bits.
    let out_off = if int8 {
        sext(cdp.cur(ids::cdp::D_DATOUT_OFFSET) & 0x1ff_ffff, 25)
    } else {
        sext(cdp.cur(ids::cdp::D_DATOUT_OFFSET), 32)
    };
    let out_scale = sext(
        cdp.field(
            ids::cdp::D_DATOUT_SCALE,
            ids::cdp::D_DATOUT_SCALE::DATOUT_SCALE,
        ),
        16,
    );
    let out_shift = cdp.field(
        ids::cdp::D_DATOUT_SHIFTER,
        ids::cdp::D_DATOUT_SHIFTER::DATOUT_SHIFTER,
    );
    let out_bits = prec.bytes() * 8;
    let bypass = cdp.cur_as::<CDP_FUNC_BYPASS::Register>(ids::cdp::D_FUNC_BYPASS);
    let sqsum_bypass = bypass.is_set(CDP_FUNC_BYPASS::SQSUM_BYPASS);
    let mul_bypass = bypass.is_set(CDP_FUNC_BYPASS::MUL_BYPASS);
    let half = (cdp.cur(ids::cdp::D_LRN_CFG) & 3) as usize + 1;
    let lcfg = LutCfg::decode(cdp);

    // Converted input, padded lanes are 0 (the C model fills them with the raw offset).
    let plane = w * h;
    let mut cv = vec![0i64; cp * plane];
    for (o, &x) in cv.iter_mut().zip(&input) {
        *o = shr_round_sat((i64::from(x) - in_off) * in_scale, in_shift, in_bits);
    }
    // Every output is independent: ranges of channels on the cores, joined in order.
    let parts = par_ranges(cp, |chs| {
        let mut out = Vec::with_capacity(chs.len() * plane);
        for ch in chs {
            let lo_ch = ch.saturating_sub(half);
            let hi_ch = (ch + half).min(cp - 1);
            for i in 0..plane {
                let v = cv[ch * plane + i];
                let s = if sqsum_bypass {
                    v
                } else {
                    (lo_ch..=hi_ch)
                        .map(|k| cv[k * plane + i] * cv[k * plane + i])
                        .sum()
                };
                let r = lcfg.eval(s, lut);

                let m = if mul_bypass { r } else { r * v };
                let o = shr_round_sat((m - out_off) * out_scale, out_shift, out_bits);
                out.push(o as i32);
            }
        }
        out
    });
    dst.write(mem, &parts.concat())
}

/// One fp16 table lookup (`HLS_CDP_lookup_lut`, `cmod/hls_wrapper/cdp_hls_wrapper.cpp`):
/// the index arithmetic in fp32, the interpolation in fp17. Returns fp17 bits.
#[allow(clippy::too_many_arguments)]
fn lookup_fp(
    sum: u64,
    upper: usize,
    exp_mode: bool,
    table: &[u16],
    start: u64,
    end: u64,
    slope_u: u64,
    slope_o: u64,
    index_offset: i64,
    index_select: i64,
) -> (u64, LutHit) {
    let f16_17 = |h: u16| FP16.convert(u64::from(h), FP17, true);
    let sub = FP32.add(sum, start ^ 0x8000_0000);
    let subf = FP32.to_f64(sub);
    let mut hit = if subf <= 0.0 || subf.is_nan() {
        LutHit::Underflow
    } else {
        LutHit::Hit
    };
    let mut index = 0usize;
    let mut frac = 0u64;
    if hit == LutHit::Hit {
        if exp_mode {
            let e = ((sub >> 23) & 0xff) as i64 - 127;
            let i = e - index_offset;
            let off = (sub >> 7) & 0xffff;
            if i < 0 {
                hit = LutHit::Underflow;
            } else if i as usize >= upper {
                hit = LutHit::Overflow;
            } else {
                index = i as usize;
                frac = off;
            }
        } else {
            let shifted = (subf / 2f64.powi(index_select as i32)) as f32 as f64;
            if shifted >= upper as f64 {
                hit = LutHit::Overflow;
            } else {
                index = shifted as usize;
                frac = ((shifted - index as f64) * 65536.0) as u64 & 0xffff;
            }
        }
    }
    let out = match hit {
        LutHit::Underflow => {
            let d = if exp_mode {
                let off = if index_offset <= -127 {
                    0.0f32
                } else {
                    2f32.powi(index_offset as i32)
                };
                let adj = FP32.add(start, u64::from(off.to_bits()));
                FP32.add(sum, adj ^ 0x8000_0000)
            } else {
                sub
            };
            let m = FP17.mul(FP32.convert(d, FP17, false), f16_17(slope_u as u16));
            FP17.add(m, f16_17(table[0]))
        }
        LutHit::Overflow => {
            let d = FP32.add(sum, end ^ 0x8000_0000);
            let m = FP17.mul(FP32.convert(d, FP17, false), f16_17(slope_o as u16));
            FP17.add(m, f16_17(table[upper.min(table.len() - 1)]))
        }
        LutHit::Hit => {
            let l0 = u64::from(f16_to_f32(table[index]));
            let l1 = u64::from(f16_to_f32(table[(index + 1).min(table.len() - 1)]));
            let diff = FP32.convert(FP32.add(l1, l0 ^ 0x8000_0000), FP17, false);
            let f = FP17.round(frac as f64 / 65536.0, false);
            FP17.add(FP17.mul(diff, f), f16_17(table[index]))
        }
    };
    (out, hit)
}

/// fp16 LRN (`HLS_CDP_lookup_fp16`): input widened to fp17/fp32, squares and the
/// window sum in fp32 (centre pair first, then outward pairs), the lookup as
/// [`lookup_fp`], the multiply in fp17, the result rounded to fp16. The offset/scale
/// converters are not applied in fp16.
fn run_fp16(
    cdp: &RegFile,
    ram: &LutRam,
    input: &[i32],
    (w, h, _c): (usize, usize, usize),
    cp: usize,
) -> Vec<i32> {
    let plane = w * h;
    let g = |n: Reg| cdp.get(0, n);
    let cfg = g(ids::cdp::S_LUT_CFG);
    let info = g(ids::cdp::S_LUT_INFO);
    let les = u64::from(g(ids::cdp::S_LUT_LE_SLOPE_SCALE));
    let los = u64::from(g(ids::cdp::S_LUT_LO_SLOPE_SCALE));
    let bypass = cdp.cur(ids::cdp::D_FUNC_BYPASS);
    let half = (cdp.cur(ids::cdp::D_LRN_CFG) & 3) as usize + 1;
    let x17: Vec<u64> = (0..cp * plane)
        .map(|i| {
            input
                .get(i)
                .map_or(0, |&v| FP16.convert((v as u32 & 0xffff) as u64, FP17, true))
        })
        .collect();
    let x32: Vec<u64> = x17.iter().map(|&v| FP17.convert(v, FP32, false)).collect();
    let sq: Vec<u64> = if bypass & 1 != 0 {
        x32.clone()
    } else {
        x32.iter().map(|&v| FP32.mul(v, v)).collect()
    };
    // Every output is independent: ranges of channels on the cores, joined in order.
    par_ranges(cp, |chs| {
        let mut out = Vec::with_capacity(chs.len() * plane);
        for ch in chs {
            for i in 0..plane {
                let at = |k: isize| -> u64 {
                    let c = ch as isize + k;
                    if c < 0 || c as usize >= cp {
                        0
                    } else {
                        sq[c as usize * plane + i]
                    }
                };
                let sum = if bypass & 1 != 0 {
                    at(0)
                } else {
                    let mut s = FP32.add(FP32.add(at(-1), at(1)), at(0));
                    for k in 2..=half as isize {
                        s = FP32.add(s, FP32.add(at(-k), at(k)));
                    }
                    s
                };
                let (le, le_h) = lookup_fp(
                    sum,
                    64,
                    cfg & 1 == 0,
                    &ram.le,
                    u64::from(g(ids::cdp::S_LUT_LE_START_LOW)),
                    u64::from(g(ids::cdp::S_LUT_LE_END_LOW)),
                    les & 0xffff,
                    les >> 16,
                    sext(info & 0xff, 8),
                    sext((info >> 8) & 0xff, 8),
                );
                let (lo, lo_h) = lookup_fp(
                    sum,
                    256,
                    false,
                    &ram.lo,
                    u64::from(g(ids::cdp::S_LUT_LO_START_LOW)),
                    u64::from(g(ids::cdp::S_LUT_LO_END_LOW)),
                    los & 0xffff,
                    los >> 16,
                    0,
                    sext((info >> 16) & 0xff, 8),
                );
                let r = match (le_h, lo_h) {
                    (LutHit::Underflow, LutHit::Underflow) => {
                        if cfg & 0x10 != 0 {
                            lo
                        } else {
                            le
                        }
                    }
                    (LutHit::Overflow, LutHit::Overflow) => {
                        if cfg & 0x20 != 0 {
                            lo
                        } else {
                            le
                        }
                    }
                    (LutHit::Hit, LutHit::Underflow | LutHit::Overflow) => le,
                    (LutHit::Underflow | LutHit::Overflow, LutHit::Hit) => lo,
                    _ => {
                        if cfg & 0x40 != 0 {
                            lo
                        } else {
                            le
                        }
                    }
                };
                let xv = x17[ch * plane + i];
                let m = if bypass & 2 != 0 {
                    if FP17.is_nan(xv) {
                        xv
                    } else {
                        r
                    }
                } else {
                    FP17.mul(xv, r)
                };
                out.push(FP17.convert(m, FP16, true) as i32);
            }
        }
        out
    })
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linear(start: i64, sel: i64, n: i64) -> TableCfg {
        TableCfg {
            exponent: false,
            start,
            end: start + (n << sel),
            index_select: sel,
            index_offset: 0,
            uflow: (0, 0),
            oflow: (0, 0),
        }
    }

    #[test]
    fn linear_interpolation_rounds() {
        let table: Vec<u16> = (0..=64).map(|i| (i * 10) as u16).collect();
        let t = linear(0, 2, 64);
        // x = 6 -> index 1, fraction 2/4 -> 10 + (20-10)*0.5 = 15
        assert_eq!(lookup(6, &t, &table), (15, LutHit::Hit));
        // x = 5 -> 10 + 10 * 0.25 = 12.5 -> 13
        assert_eq!(lookup(5, &t, &table), (13, LutHit::Hit));
        assert_eq!(lookup(0, &t, &table).1, LutHit::Underflow);
        assert_eq!(lookup(1000, &t, &table), (640, LutHit::Overflow));
    }

    #[test]
    fn slopes_extrapolate() {
        let table: Vec<u16> = vec![100; 65];
        let mut t = linear(10, 0, 64);
        t.uflow = (3, 1); // (x - start) * 3 / 2
        t.oflow = (-2, -1); // (x - end) * -2 * 2
        assert_eq!(lookup(5, &t, &table), (100 - 8, LutHit::Underflow)); // -15/2 = -7.5 -> -8
        assert_eq!(lookup(80, &t, &table), (100 - 24, LutHit::Overflow));
    }

    #[test]
    fn fp16_lrn_with_unit_lut_is_identity() {
        use crate::config::HwConfig;
        use crate::fp::f32_to_f16;
        use crate::mem::RamType;
        use crate::vp::Vp;
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
        let w = |vp: &mut Vp, r: Reg, v: u32| {
            let a = vp.addr(r).unwrap();
            vp.csb_write(a, v)
        };
        // Both tables all 1.0 (fp16 0x3c00).
        w(&mut vp, ids::cdp::S_LUT_ACCESS_CFG, 0x3_0000);
        for _ in 0..257 {
            w(&mut vp, ids::cdp::S_LUT_ACCESS_DATA, 0x3c00);
        }
        w(&mut vp, ids::cdp::S_LUT_ACCESS_CFG, 0x2_0000);
        for _ in 0..65 {
            w(&mut vp, ids::cdp::S_LUT_ACCESS_DATA, 0x3c00);
        }
        w(&mut vp, ids::cdp::S_LUT_CFG, 1); // LE linear
        w(&mut vp, ids::cdp::S_LUT_LE_END_LOW, 64f32.to_bits());
        w(&mut vp, ids::cdp::S_LUT_LO_END_LOW, 256f32.to_bits());
        let vals: Vec<f32> = (0..16).map(|i| (i as f32 - 7.0) * 0.8125).collect();
        let bytes: Vec<u8> = vals
            .iter()
            .flat_map(|v| f32_to_f16(v.to_bits()).to_le_bytes())
            .collect();
        vp.mem.write(RamType::Dram, 0x4000, &bytes).unwrap();
        for (r, v) in [
            (ids::cdp_rdma::D_DATA_CUBE_WIDTH, 0),
            (ids::cdp_rdma::D_DATA_CUBE_HEIGHT, 0),
            (ids::cdp_rdma::D_DATA_CUBE_CHANNEL, 15),
            (ids::cdp_rdma::D_SRC_BASE_ADDR_LOW, 0x4000),
            (ids::cdp_rdma::D_SRC_LINE_STRIDE, 0x20),
            (ids::cdp_rdma::D_SRC_SURFACE_STRIDE, 0x20),
            (ids::cdp_rdma::D_SRC_DMA_CFG, 1),
            (ids::cdp_rdma::D_DATA_FORMAT, 2),
            (ids::cdp_rdma::D_OP_ENABLE, 1),
        ] {
            w(&mut vp, r, v);
        }
        for (r, v) in [
            (ids::cdp::D_DST_BASE_ADDR_LOW, 0x8000),
            (ids::cdp::D_DST_LINE_STRIDE, 0x20),
            (ids::cdp::D_DST_SURFACE_STRIDE, 0x20),
            (ids::cdp::D_DST_DMA_CFG, 1),
            (ids::cdp::D_DATA_FORMAT, 2),
            (ids::cdp::D_LRN_CFG, 1),
            (ids::cdp::D_OP_ENABLE, 1),
        ] {
            w(&mut vp, r, v);
        }
        assert!(vp.irq_pending(), "{:?}", vp.fault());
        let out = vp.mem.read_vec(RamType::Dram, 0x8000, 32).unwrap();
        assert_eq!(out, bytes);
    }

    /// Compares integer LRN with vectors from the C model's `NV_NVDLA_cdp::lookup_lut_int8`
    /// and `lookup_lut` (int16) when `NVDLA_VP_CDP_INT8_VECTORS` names such a file: first
    /// line the LE and LO tables, then per line the register values, the channels and
    /// the results for channels 4 onwards. Skipped otherwise.
    #[test]
    fn int8_matches_c_model_vectors() {
        use crate::config::HwConfig;
        use crate::mem::RamType;
        use crate::vp::Vp;
        let Ok(path) = std::env::var("NVDLA_VP_CDP_INT8_VECTORS") else {
            eprintln!("skipping: NVDLA_VP_CDP_INT8_VECTORS not set");
            return;
        };
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        let tables: Vec<u32> = lines
            .next()
            .unwrap()
            .split_whitespace()
            .map(|t| u32::from_str_radix(t, 16).unwrap())
            .collect();
        let (mut n, mut bad) = (0, 0);
        for line in lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            let hx = |i: usize| u32::from_str_radix(f[i], 16).unwrap();
            let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
            let w = |vp: &mut Vp, r: Reg, v: u32| {
                let a = vp.addr(r).unwrap();
                vp.csb_write(a, v)
            };
            w(&mut vp, ids::cdp::S_LUT_ACCESS_CFG, 0x2_0000);
            for &t in &tables[..65] {
                w(&mut vp, ids::cdp::S_LUT_ACCESS_DATA, t);
            }
            w(&mut vp, ids::cdp::S_LUT_ACCESS_CFG, 0x3_0000);
            for &t in &tables[65..] {
                w(&mut vp, ids::cdp::S_LUT_ACCESS_DATA, t);
            }
            for (r, v) in [
                (ids::cdp::D_DATIN_OFFSET, hx(0)),
                (ids::cdp::D_DATIN_SCALE, hx(1)),
                (ids::cdp::D_DATIN_SHIFTER, hx(2)),
                (ids::cdp::D_DATOUT_OFFSET, hx(3)),
                (ids::cdp::D_DATOUT_SCALE, hx(4)),
                (ids::cdp::D_DATOUT_SHIFTER, hx(5)),
                (
                    ids::cdp::S_LUT_CFG,
                    hx(6) | (hx(7) << 4) | (hx(8) << 5) | (hx(9) << 6),
                ),
                (ids::cdp::S_LUT_LE_START_LOW, hx(10)),
                (ids::cdp::S_LUT_LE_START_HIGH, hx(11)),
                (ids::cdp::S_LUT_LE_END_LOW, hx(12)),
                (ids::cdp::S_LUT_LE_END_HIGH, hx(13)),
                (ids::cdp::S_LUT_LO_START_LOW, hx(14)),
                (ids::cdp::S_LUT_LO_START_HIGH, hx(15)),
                (ids::cdp::S_LUT_LO_END_LOW, hx(16)),
                (ids::cdp::S_LUT_LO_END_HIGH, hx(17)),
                (
                    ids::cdp::S_LUT_INFO,
                    hx(20) | (hx(18) << 8) | (hx(19) << 16),
                ),
                (ids::cdp::S_LUT_LE_SLOPE_SCALE, hx(21) | (hx(22) << 16)),
                (ids::cdp::S_LUT_LO_SLOPE_SCALE, hx(23) | (hx(24) << 16)),
                (ids::cdp::S_LUT_LE_SLOPE_SHIFT, hx(25) | (hx(26) << 5)),
                (ids::cdp::S_LUT_LO_SLOPE_SHIFT, hx(27) | (hx(28) << 5)),
                (ids::cdp::D_LRN_CFG, hx(32)),
                (ids::cdp::D_FUNC_BYPASS, hx(33) | (hx(34) << 1)),
                (ids::cdp::D_DST_BASE_ADDR_LOW, 0x8000),
                (ids::cdp::D_DST_LINE_STRIDE, 0x20),
                (ids::cdp::D_DST_SURFACE_STRIDE, 0x20),
                (ids::cdp::D_DST_DMA_CFG, 1),
            ] {
                w(&mut vp, r, v);
            }
            // int16 lines carry a `16` marker, 12 channels and 4 results.
            let is16 = f.len() == 52;
            let (first, nch, nout) = if is16 { (36, 12, 4) } else { (35, 16, 8) };
            let data: Vec<u8> = if is16 {
                (0..nch)
                    .flat_map(|i| (hx(first + i) as u16).to_le_bytes())
                    .collect()
            } else {
                (0..nch).map(|i| hx(first + i) as u8).collect()
            };
            w(&mut vp, ids::cdp::D_DATA_FORMAT, u32::from(is16));
            vp.mem.write(RamType::Dram, 0x4000, &data).unwrap();
            for (r, v) in [
                (ids::cdp_rdma::D_DATA_CUBE_WIDTH, 0),
                (ids::cdp_rdma::D_DATA_CUBE_HEIGHT, 0),
                (ids::cdp_rdma::D_DATA_CUBE_CHANNEL, nch as u32 - 1),
                (ids::cdp_rdma::D_SRC_BASE_ADDR_LOW, 0x4000),
                (ids::cdp_rdma::D_SRC_LINE_STRIDE, 0x20),
                (ids::cdp_rdma::D_SRC_SURFACE_STRIDE, 0x20),
                (ids::cdp_rdma::D_SRC_DMA_CFG, 1),
                (ids::cdp_rdma::D_DATA_FORMAT, u32::from(is16)),
                (ids::cdp_rdma::D_OP_ENABLE, 1),
            ] {
                w(&mut vp, r, v);
            }
            w(&mut vp, ids::cdp::D_OP_ENABLE, 1);
            assert!(vp.irq_pending(), "{:?}", vp.fault());
            let bpe = if is16 { 2 } else { 1 };
            let out = vp
                .mem
                .read_vec(RamType::Dram, 0x8000 + 4 * bpe, nout * bpe as usize)
                .unwrap();
            for k in 0..nout {
                let got = if is16 {
                    u32::from(u16::from_le_bytes([out[2 * k], out[2 * k + 1]]))
                } else {
                    u32::from(out[k])
                };
                n += 1;
                if got != hx(first + nch + k) {
                    bad += 1;
                    if bad <= 5 {
                        eprintln!("mismatch ch {}: {line} -> {got:x}", 4 + k);
                    }
                }
            }
        }
        eprintln!("{n} results, {bad} mismatches");
        assert_eq!(bad, 0);
    }

    /// Compares fp16 LRN with vectors from the C model's `HLS_CDP_lookup_fp16`
    /// (`cmod/hls_wrapper/cdp_hls_wrapper.cpp`) when `NVDLA_VP_CDP_FP16_VECTORS` names
    /// such a file: first line the LE and LO tables, then per line the configuration,
    /// a window of 12 channels and the 4 results for channels 4..7. Skipped otherwise.
    #[test]
    fn fp16_matches_c_model_vectors() {
        use crate::config::HwConfig;
        use crate::mem::RamType;
        use crate::vp::Vp;
        let Ok(path) = std::env::var("NVDLA_VP_CDP_FP16_VECTORS") else {
            eprintln!("skipping: NVDLA_VP_CDP_FP16_VECTORS not set");
            return;
        };
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        let tables: Vec<u32> = lines
            .next()
            .unwrap()
            .split_whitespace()
            .map(|t| u32::from_str_radix(t, 16).unwrap())
            .collect();
        let (mut n, mut bad) = (0, 0);
        for line in lines {
            let f: Vec<&str> = line.split_whitespace().collect();
            let hx = |i: usize| u32::from_str_radix(f[i], 16).unwrap();
            let dec = |i: usize| f[i].parse::<i32>().unwrap();
            let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
            let w = |vp: &mut Vp, r: Reg, v: u32| {
                let a = vp.addr(r).unwrap();
                vp.csb_write(a, v)
            };
            w(&mut vp, ids::cdp::S_LUT_ACCESS_CFG, 0x2_0000);
            for &t in &tables[..65] {
                w(&mut vp, ids::cdp::S_LUT_ACCESS_DATA, t);
            }
            w(&mut vp, ids::cdp::S_LUT_ACCESS_CFG, 0x3_0000);
            for &t in &tables[65..] {
                w(&mut vp, ids::cdp::S_LUT_ACCESS_DATA, t);
            }
            let cfg = hx(1) | (hx(2) << 4) | (hx(3) << 5) | (hx(4) << 6);
            w(&mut vp, ids::cdp::S_LUT_CFG, cfg);
            let info = (dec(9) as u32 & 0xff)
                | ((dec(10) as u32 & 0xff) << 8)
                | ((dec(11) as u32 & 0xff) << 16);
            w(&mut vp, ids::cdp::S_LUT_INFO, info);
            w(&mut vp, ids::cdp::S_LUT_LE_START_LOW, hx(5));
            w(&mut vp, ids::cdp::S_LUT_LE_END_LOW, hx(6));
            w(&mut vp, ids::cdp::S_LUT_LO_START_LOW, hx(7));
            w(&mut vp, ids::cdp::S_LUT_LO_END_LOW, hx(8));
            w(
                &mut vp,
                ids::cdp::S_LUT_LE_SLOPE_SCALE,
                hx(12) | (hx(13) << 16),
            );
            w(
                &mut vp,
                ids::cdp::S_LUT_LO_SLOPE_SCALE,
                hx(14) | (hx(15) << 16),
            );
            let data: Vec<u8> = (0..12)
                .flat_map(|i| (hx(18 + i) as u16).to_le_bytes())
                .collect();
            vp.mem.write(RamType::Dram, 0x4000, &data).unwrap();
            for (r, v) in [
                (ids::cdp_rdma::D_DATA_CUBE_WIDTH, 0),
                (ids::cdp_rdma::D_DATA_CUBE_HEIGHT, 0),
                (ids::cdp_rdma::D_DATA_CUBE_CHANNEL, 11),
                (ids::cdp_rdma::D_SRC_BASE_ADDR_LOW, 0x4000),
                (ids::cdp_rdma::D_SRC_LINE_STRIDE, 0x20),
                (ids::cdp_rdma::D_SRC_SURFACE_STRIDE, 0x20),
                (ids::cdp_rdma::D_SRC_DMA_CFG, 1),
                (ids::cdp_rdma::D_DATA_FORMAT, 2),
                (ids::cdp_rdma::D_OP_ENABLE, 1),
            ] {
                w(&mut vp, r, v);
            }
            for (r, v) in [
                (ids::cdp::D_DST_BASE_ADDR_LOW, 0x8000),
                (ids::cdp::D_DST_LINE_STRIDE, 0x20),
                (ids::cdp::D_DST_SURFACE_STRIDE, 0x20),
                (ids::cdp::D_DST_DMA_CFG, 1),
                (ids::cdp::D_DATA_FORMAT, 2),
                (ids::cdp::D_LRN_CFG, hx(0)),
                (ids::cdp::D_FUNC_BYPASS, hx(16) | (hx(17) << 1)),
                (ids::cdp::D_OP_ENABLE, 1),
            ] {
                w(&mut vp, r, v);
            }
            assert!(vp.irq_pending(), "{:?}", vp.fault());
            let out = vp.mem.read_vec(RamType::Dram, 0x8000 + 8, 8).unwrap();
            for k in 0..4 {
                let got = u16::from_le_bytes([out[2 * k], out[2 * k + 1]]);
                n += 1;
                if u32::from(got) != hx(30 + k) {
                    bad += 1;
                    if bad <= 5 {
                        eprintln!("mismatch ch {}: {line} -> {got:x}", 4 + k);
                    }
                }
            }
        }
        eprintln!("{n} results, {bad} mismatches");
        assert_eq!(bad, 0);
    }

    #[test]
    fn exponent_table() {
        let table: Vec<u16> = (0..=64).map(|i| (i * 16) as u16).collect();
        let t = TableCfg {
            exponent: true,
            start: 0,
            end: 1 << 40,
            index_select: 0,
            index_offset: 0,
            uflow: (0, 0),
            oflow: (0, 0),
        };
        // x = 12: log2 = 3, fraction (12 - 8) / 8 = 0.5 -> 48 + 8 = 56
        assert_eq!(lookup(12, &t, &table), (56, LutHit::Hit));
    }
}
