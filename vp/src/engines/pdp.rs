//! PDP (planar data processor: pooling) and PDP_RDMA.
//!
//! Max, min or average over kernels of 1..8 x 1..8 with strides 1..16 and up to 7
//! padded elements per side (hwarch "Planar Data Processor"). Input comes from memory
//! through PDP_RDMA or on the fly from SDP. Arithmetic follows
//! `cmod/pdp/NV_NVDLA_pdp.cpp` (`PoolingStage0Calc`/`PoolingStage1Calc`):
//!
//! - max/min consider only the elements inside the input cube (padding does not take
//!   part);
//! - average sums the valid elements of a window row, adds `PAD_VALUE_<n>X` when `n`
//!   columns of that row are padding, adds `PAD_VALUE_<n>X * kernel_width` when `n`
//!   whole rows are padding, then multiplies by `RECIP_KERNEL_WIDTH` and
//!   `RECIP_KERNEL_HEIGHT` (unsigned 0.16 fixed point), rounding each product to the
//!   nearest integer with ties away from zero; the result is stored in the output width
//!   without saturation (the C model's `static_cast`).
//!
//! fp16 pools in fp16 (max/min) or fp17 (average), see [`Pooling::plane_fp16`].
//!
//! The split-width programming (`SPLIT_NUM`, `PARTIAL_WIDTH_*`) only changes how the
//! hardware walks the cube; the result equals a single pass, which is what is computed.

use super::{addr64, check_precision, par_ranges, sdp::Cube, CubeLayout, EngineError, Precision};
use crate::arith::{sext, shr_round};
use crate::config::HwConfig;
use crate::fp::{FP16, FP17};
use crate::mem::{Memory, RamType};
use crate::regs::{ids, Reg, RegFile};
use ids::pdp::{
    D_OPERATION_MODE_CFG as PDP_OPERATION_MODE, D_POOLING_KERNEL_CFG as PDP_KERNEL_CFG,
    D_POOLING_PADDING_CFG as PDP_PADDING_CFG,
};

const BLOCK: &str = "PDP";

/// `D_POOLING_PADDING_VALUE_<n>_CFG`, n = 1..=7.
const PAD_VALUES: [Reg; 7] = {
    use ids::pdp::*;
    [
        D_POOLING_PADDING_VALUE_1_CFG,
        D_POOLING_PADDING_VALUE_2_CFG,
        D_POOLING_PADDING_VALUE_3_CFG,
        D_POOLING_PADDING_VALUE_4_CFG,
        D_POOLING_PADDING_VALUE_5_CFG,
        D_POOLING_PADDING_VALUE_6_CFG,
        D_POOLING_PADDING_VALUE_7_CFG,
    ]
};

/// True when PDP takes its input from SDP (`FLYING_MODE = ON_FLYING`).
pub fn on_the_fly(pdp: &RegFile) -> bool {
    pdp.cur_as::<PDP_OPERATION_MODE::Register>(ids::pdp::D_OPERATION_MODE_CFG)
        .matches_all(PDP_OPERATION_MODE::FLYING_MODE::ON_FLYING)
}

/// Pooling method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Average.
    Average,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

/// Geometry and arithmetic parameters of one pooling layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pooling {
    /// Method.
    pub method: Method,
    /// Kernel width and height.
    pub kernel: (usize, usize),
    /// Stride in x and y.
    pub stride: (usize, usize),
    /// Padding left and top.
    pub pad: (usize, usize),
    /// Output width and height.
    pub out: (usize, usize),
    /// `PAD_VALUE_1X..7X` (index 0 unused).
    pub pad_values: [i64; 8],
    /// Reciprocal of kernel width and height, 0.16 fixed point.
    pub recip: (i64, i64),
}

impl Pooling {
    /// Pools one channel plane `src` of `w x h` into `dst` (`out.0 x out.1`).
    pub fn plane(&self, src: &[i32], w: usize, h: usize, dst: &mut [i64]) {
        let (kw, kh) = self.kernel;
        let (ow, oh) = self.out;
        for oy in 0..oh {
            for ox in 0..ow {
                let x0 = (ox * self.stride.0) as isize - self.pad.0 as isize;
                let y0 = (oy * self.stride.1) as isize - self.pad.1 as isize;
                let xs = (x0.max(0) as usize)..((x0 + kw as isize).clamp(0, w as isize) as usize);
                let ys = (y0.max(0) as usize)..((y0 + kh as isize).clamp(0, h as isize) as usize);
                let v = match self.method {
                    Method::Max | Method::Min => {
                        let mut acc: Option<i64> = None;
                        for y in ys.clone() {
                            for x in xs.clone() {
                                let e = i64::from(src[y * w + x]);
                                acc = Some(match (acc, self.method) {
                                    (None, _) => e,
                                    (Some(a), Method::Max) => a.max(e),
                                    (Some(a), _) => a.min(e),
                                });
                            }
                        }
                        acc.unwrap_or(0)
                    }
                    Method::Average => {
                        let pad_cols = kw - xs.len();
                        let pad_rows = kh - ys.len();
                        let mut sum = 0i64;
                        for y in ys.clone() {
                            for x in xs.clone() {
                                sum += i64::from(src[y * w + x]);
                            }
                            if pad_cols > 0 {
                                sum += self.pad_values[pad_cols.min(7)];
                            }
                        }
                        if pad_rows > 0 {
                            sum += self.pad_values[pad_rows.min(7)] * kw as i64;
                        }
                        let t = shr_round(sum * self.recip.0, 16);
                        shr_round(t * self.recip.1, 16)
                    }
                };
                dst[oy * ow + ox] = v;
            }
        }
    }
}

impl Pooling {
    /// Pools one fp16 plane (`HLS_PDP_PoolingStage*_FP16`, `cmod/hls_wrapper/
    /// pdp_hls_wrapper.cpp`): max/min compare fp16 patterns (`FpCmp`), average
    /// accumulates in fp17 — each row left to right, then rows top to bottom, padding
    /// values (fp17 patterns, times the kernel width for padded rows) added per row —
    /// multiplies by the fp17 reciprocals and rounds to fp16.
    pub fn plane_fp16(&self, src: &[i32], w: usize, h: usize, dst: &mut [i64]) {
        let (kw, kh) = self.kernel;
        let (ow, oh) = self.out;
        // 1.0 .. 7.0 as fp17 (kernel_width_map).
        let kw17 = FP17.round(kw as f64, false);
        let pad17 = |n: usize| (self.pad_values[n.min(7)] as u64) & 0x1_ffff;
        for oy in 0..oh {
            for ox in 0..ow {
                let x0 = (ox * self.stride.0) as isize - self.pad.0 as isize;
                let y0 = (oy * self.stride.1) as isize - self.pad.1 as isize;
                let xs = (x0.max(0) as usize)..((x0 + kw as isize).clamp(0, w as isize) as usize);
                let ys = (y0.max(0) as usize)..((y0 + kh as isize).clamp(0, h as isize) as usize);
                let e = |x: usize, y: usize| (src[y * w + x] as u32 & 0xffff) as u64;
                let v = match self.method {
                    Method::Max | Method::Min => {
                        let max = self.method == Method::Max;
                        let mut acc: Option<u64> = None;
                        for y in ys.clone() {
                            let mut row: Option<u64> = None;
                            for x in xs.clone() {
                                row = Some(match row {
                                    None => e(x, y),
                                    Some(a) => FP16.cmp_select(a, e(x, y), max),
                                });
                            }
                            if let Some(r) = row {
                                acc = Some(match acc {
                                    None => r,
                                    Some(a) => FP16.cmp_select(r, a, max),
                                });
                            }
                        }
                        acc.unwrap_or(0)
                    }
                    Method::Average => {
                        let pad_cols = kw - xs.len();
                        let pad_rows = kh - ys.len();
                        let mut acc: Option<u64> = None;
                        for y in ys.clone() {
                            let mut row: Option<u64> = None;
                            for x in xs.clone() {
                                let v17 = FP16.convert(e(x, y), FP17, true);
                                row = Some(match row {
                                    None => v17,
                                    Some(a) => FP17.add(a, v17),
                                });
                            }
                            let mut r = row.unwrap_or(0);
                            if pad_cols > 0 {
                                r = FP17.add(r, pad17(pad_cols));
                            }
                            acc = Some(match acc {
                                None => r,
                                Some(a) => FP17.add(r, a),
                            });
                        }
                        let mut sum = acc.unwrap_or(0);
                        if pad_rows > 0 {
                            sum = FP17.add(sum, FP17.mul(pad17(pad_rows), kw17));
                        }
                        let o1 = FP17.mul(sum, self.recip.0 as u64 & 0x1_ffff);
                        let o2 = FP17.mul(o1, self.recip.1 as u64 & 0x1_ffff);
                        FP17.convert(o2, FP16, true)
                    }
                };
                dst[oy * ow + ox] = v as i64;
            }
        }
    }
}

/// Runs one layer; `input` is the SDP output in on-the-fly mode.
pub fn run(
    cfg: &HwConfig,
    pdp: &RegFile,
    rdma: &RegFile,
    mem: &mut Memory,
    input: Option<Cube>,
) -> Result<(), EngineError> {
    let bad = |m: String| EngineError::Config {
        block: BLOCK,
        msg: m,
    };
    let prec = Precision::from_field(pdp.cur(ids::pdp::D_DATA_FORMAT), BLOCK)?;
    check_precision(cfg, prec, BLOCK)?;
    let d = |n: Reg| (pdp.cur(n) & 0x1fff) as usize + 1;
    let (w, h, c) = (
        d(ids::pdp::D_DATA_CUBE_IN_WIDTH),
        d(ids::pdp::D_DATA_CUBE_IN_HEIGHT),
        d(ids::pdp::D_DATA_CUBE_IN_CHANNEL),
    );
    let (ow, oh, oc) = (
        d(ids::pdp::D_DATA_CUBE_OUT_WIDTH),
        d(ids::pdp::D_DATA_CUBE_OUT_HEIGHT),
        d(ids::pdp::D_DATA_CUBE_OUT_CHANNEL),
    );
    super::check_cube(BLOCK, w.max(ow), h.max(oh), c.next_multiple_of(32))?;
    if oc != c {
        return Err(bad(format!(
            "output channels {oc} differ from input channels {c}"
        )));
    }
    let mode = pdp.cur_as::<PDP_OPERATION_MODE::Register>(ids::pdp::D_OPERATION_MODE_CFG);
    let method = match mode.read_as_enum(PDP_OPERATION_MODE::POOLING_METHOD) {
        Some(PDP_OPERATION_MODE::POOLING_METHOD::Value::POOLING_METHOD_AVERAGE) => Method::Average,
        Some(PDP_OPERATION_MODE::POOLING_METHOD::Value::POOLING_METHOD_MAX) => Method::Max,
        Some(PDP_OPERATION_MODE::POOLING_METHOD::Value::POOLING_METHOD_MIN) => Method::Min,
        None => return Err(bad("reserved pooling method 3".into())),
    };
    let k = pdp.cur_as::<PDP_KERNEL_CFG::Register>(ids::pdp::D_POOLING_KERNEL_CFG);
    let pad = pdp.cur_as::<PDP_PADDING_CFG::Register>(ids::pdp::D_POOLING_PADDING_CFG);
    let kf = |f| k.read(f) as usize + 1;
    let mut pad_values = [0i64; 8];
    for (n, v) in pad_values.iter_mut().enumerate().skip(1) {
        *v = sext(pdp.cur(PAD_VALUES[n - 1]), 19);
    }
    let p = Pooling {
        method,
        kernel: (
            kf(PDP_KERNEL_CFG::KERNEL_WIDTH),
            kf(PDP_KERNEL_CFG::KERNEL_HEIGHT),
        ),
        stride: (
            kf(PDP_KERNEL_CFG::KERNEL_STRIDE_WIDTH),
            kf(PDP_KERNEL_CFG::KERNEL_STRIDE_HEIGHT),
        ),
        pad: (
            pad.read(PDP_PADDING_CFG::PAD_LEFT) as usize,
            pad.read(PDP_PADDING_CFG::PAD_TOP) as usize,
        ),
        out: (ow, oh),
        pad_values,
        recip: (
            i64::from(pdp.field(
                ids::pdp::D_RECIP_KERNEL_WIDTH,
                ids::pdp::D_RECIP_KERNEL_WIDTH::RECIP_KERNEL_WIDTH,
            )),
            i64::from(pdp.field(
                ids::pdp::D_RECIP_KERNEL_HEIGHT,
                ids::pdp::D_RECIP_KERNEL_HEIGHT::RECIP_KERNEL_HEIGHT,
            )),
        ),
    };
    if p.kernel.0 > 8 || p.kernel.1 > 8 {
        return Err(bad(format!(
            "kernel {}x{} larger than 8x8",
            p.kernel.0, p.kernel.1
        )));
    }
    // One strip wider than the line banks hold never finishes on silicon (NVIDIA's
    // nv_small RTL; docs/rtl.md, "Wide pooling"): refuse it, on the builds whose banks are
    // known.
    let strips = mode.read(PDP_OPERATION_MODE::SPLIT_NUM) + 1;
    let lines = nvdla_hw::Config::pdp_buffered_lines(p.kernel.1 as u32, p.stride.1 as u32);
    if let Some(cap) = cfg.hw.pdp_line_pixels(lines, prec.bytes()) {
        if strips == 1 && ow > cap as usize {
            return Err(bad(format!(
                "{ow} outputs per line in one strip, but with {lines} lines buffered a line \
                 of the PDP's banks holds {cap}: split the width (SPLIT_NUM)"
            )));
        }
    }
    let atom = cfg.hw.memory_atomic;
    // Whole atoms go through the datapath (see the SDP note); padding lanes included.
    let cpa = (atom / prec.bytes()).max(1) as usize;
    let cp = c.div_ceil(cpa) * cpa;
    // Refuse an unreachable output before computing it.
    let dst = CubeLayout {
        ram: RamType::from_field(pdp.cur(ids::pdp::D_DST_RAM_CFG)),
        base: addr64(
            pdp.cur(ids::pdp::D_DST_BASE_ADDR_HIGH),
            pdp.cur(ids::pdp::D_DST_BASE_ADDR_LOW),
        ),
        line_stride: u64::from(pdp.cur(ids::pdp::D_DST_LINE_STRIDE)),
        surf_stride: u64::from(pdp.cur(ids::pdp::D_DST_SURFACE_STRIDE)),
        w: ow,
        h: oh,
        c: cp,
        prec,
        atom,
    };
    dst.check(mem)?;
    let data = match input {
        Some(cube) => {
            if (cube.w, cube.h) != (w, h) || cube.c < c {
                return Err(bad(format!(
                    "SDP delivers {}x{}x{}, PDP expects {w}x{h}x{c}",
                    cube.w, cube.h, cube.c
                )));
            }
            let mut v = cube.data;
            v.resize(w * h * cp, 0);
            v
        }
        None => CubeLayout {
            ram: RamType::from_field(rdma.cur(ids::pdp_rdma::D_SRC_RAM_CFG)),
            base: addr64(
                rdma.cur(ids::pdp_rdma::D_SRC_BASE_ADDR_HIGH),
                rdma.cur(ids::pdp_rdma::D_SRC_BASE_ADDR_LOW),
            ),
            line_stride: u64::from(rdma.cur(ids::pdp_rdma::D_SRC_LINE_STRIDE)),
            surf_stride: u64::from(rdma.cur(ids::pdp_rdma::D_SRC_SURFACE_STRIDE)),
            w,
            h,
            c: cp,
            prec,
            atom,
        }
        .read(mem)?,
    };
    // Channel planes are independent: ranges of them on the cores, joined in order.
    let parts = par_ranges(cp, |chs| {
        let mut out = vec![0i32; ow * oh * chs.len()];
        let mut plane = vec![0i64; ow * oh];
        for (ch, o) in chs.zip(out.chunks_exact_mut(ow * oh)) {
            let src = &data[ch * w * h..(ch + 1) * w * h];
            if prec == Precision::Fp16 {
                p.plane_fp16(src, w, h, &mut plane);
            } else {
                p.plane(src, w, h, &mut plane);
            }
            for (o, v) in o.iter_mut().zip(&plane) {
                // Stored in the output width without saturation (static_cast in the C
                // model).
                *o = *v as i32;
            }
        }
        out
    });
    dst.write(mem, &parts.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(
        method: Method,
        kernel: (usize, usize),
        stride: (usize, usize),
        pad: (usize, usize),
        out: (usize, usize),
    ) -> Pooling {
        Pooling {
            method,
            kernel,
            stride,
            pad,
            out,
            pad_values: [0, -10, -20, -30, -40, -50, -60, -70],
            recip: (0x10000 / kernel.0 as i64, 0x10000 / kernel.1 as i64),
        }
    }

    #[test]
    fn fp16_average_and_max() {
        use crate::fp::{f32_to_f16, FP16, FP17};
        let h = |v: f32| i32::from(f32_to_f16(v.to_bits()));
        let src = [h(1.0), h(2.0), h(-3.5), h(0.25)];
        let mut d = [0i64; 1];
        let mut p = pool(Method::Average, (2, 2), (1, 1), (0, 0), (1, 1));
        p.recip = (FP17.round(0.5, false) as i64, FP17.round(0.5, false) as i64);
        p.plane_fp16(&src, 2, 2, &mut d);
        assert_eq!(FP16.to_f64(d[0] as u64), -0.0625);
        p.method = Method::Max;
        p.plane_fp16(&src, 2, 2, &mut d);
        assert_eq!(FP16.to_f64(d[0] as u64), 2.0);
        p.method = Method::Min;
        p.plane_fp16(&src, 2, 2, &mut d);
        assert_eq!(FP16.to_f64(d[0] as u64), -3.5);
    }

    #[test]
    fn max_min_ignore_padding() {
        let src = [-5, -6, -7, -8];
        let mut d = [0i64; 4];
        pool(Method::Max, (2, 2), (1, 1), (1, 1), (2, 2)).plane(&src, 2, 2, &mut d);
        assert_eq!(d, [-5, -5, -5, -5]);
        pool(Method::Min, (2, 2), (1, 1), (0, 0), (2, 2)).plane(&src, 2, 2, &mut d);
        assert_eq!(d, [-8, -8, -8, -8]);
    }

    #[test]
    fn average_with_padding_values_and_rounding() {
        // 3x1 input, kernel 2x1, pad left 1: first window = PAD_VALUE_1X + src[0].
        let src = [3, 4, 6];
        let mut d = [0i64; 2];
        let mut p = pool(Method::Average, (2, 1), (2, 1), (1, 0), (2, 1));
        p.recip = (0x8000, 0x10000);
        p.plane(&src, 3, 1, &mut d);
        // (-10 + 3) / 2 = -3.5 -> -4 ; (4 + 6) / 2 = 5
        assert_eq!(d, [-4, 5]);
        // padded row adds PAD_VALUE_1X * kernel_width
        let src = [1, 1];
        let mut d = [0i64; 1];
        let mut p = pool(Method::Average, (2, 2), (1, 1), (0, 1), (1, 1));
        p.recip = (0x8000, 0x8000);
        p.plane(&src, 2, 1, &mut d);
        // (1 + 1 + (-10) * 2) / 4 = -4.5 -> -5 after two roundings: -18/2 = -9, -9/2 = -4.5 -> -5
        assert_eq!(d, [-5]);
    }
}
