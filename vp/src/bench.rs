//! `nvdla-vp bench`: throughput of the convolution model against a plain reference.
//!
//! One realistic layer — a 56x56x64 input, 64 kernels of 3x3x64, stride 1, padding 1 —
//! runs through the model on nv_full exactly as firmware would drive it: the input cube
//! and weights are placed in DRAM in the hardware layouts, CDMA/CSC/CMAC/CACC/SDP are
//! programmed through the CSB and enabled, and the interrupt line is awaited; SDP writes
//! the result to memory. In the same run a plain reference convolution (seven nested
//! loops over `[c][y][x]` arrays, i32 for int8, f32 for fp16) computes the same layer.
//! Both are timed over the same number of runs and reported in MAC/s; the model's
//! output is checked against the reference (exactly for int8, within fp16 rounding for
//! fp16).

use crate::engines::conv::cdma::WeightGeom;
use crate::engines::conv::entries_per_slice;
use crate::engines::{CubeLayout, Precision};
use crate::fp::{f16_to_f32, f32_to_f16};
use crate::mem::RamType;
use crate::regs::{ids, Reg};
use crate::{HwConfig, Vp};
use ids::cdma::D_MISC_CFG;
use std::time::Instant;

const W: usize = 56;
const H: usize = 56;
const C: usize = 64;
const K: usize = 64;
const R: usize = 3;
const IN_ADDR: u64 = 0x8000_0000;
const WT_ADDR: u64 = 0x9000_0000;
const OUT_ADDR: u64 = 0xa000_0000;
/// SDP output shift for int8 (keeps the int8 result in range).
const INT8_SHIFT: u32 = 10;

/// Figures of one benchmark layer.
#[derive(Debug, Clone)]
pub struct Figures {
    /// Precision.
    pub prec: Precision,
    /// Multiply-accumulates of one layer.
    pub macs: u64,
    /// Runs timed.
    pub runs: u32,
    /// Model: seconds per layer (best of the runs).
    pub model_s: f64,
    /// Reference: seconds per layer (best of the runs).
    pub reference_s: f64,
    /// Largest difference between model output and reference (0 for int8).
    pub max_error: f64,
}

impl Figures {
    /// Model MAC/s.
    pub fn model_macs(&self) -> f64 {
        self.macs as f64 / self.model_s
    }
    /// Reference MAC/s.
    pub fn reference_macs(&self) -> f64 {
        self.macs as f64 / self.reference_s
    }
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
}

/// Element values as stored: int8 values, or fp16 bit patterns.
fn make_data(prec: Precision) -> (Vec<i32>, Vec<i32>) {
    let mut g = Lcg(0x5eed);
    let mut v = |n: usize| -> Vec<i32> {
        (0..n)
            .map(|_| match prec {
                Precision::Fp16 => {
                    let f = (g.next() % 4001) as f32 / 2000.0 - 1.0;
                    i32::from(f32_to_f16(f.to_bits()))
                }
                _ => (g.next() % 256) as i32 - 128,
            })
            .collect()
    };
    (v(C * H * W), v(K * C * R * R))
}

fn as_f32(h: i32) -> f32 {
    f32::from_bits(f16_to_f32(h as u16))
}

/// The plain reference: `[k][y][x]` outputs from `[c][y][x]` inputs, `[k][c][r][s]`
/// weights, padding 1.
fn reference_i32(input: &[i32], w: &[i32], out: &mut [i32]) {
    for k in 0..K {
        for oy in 0..H {
            for ox in 0..W {
                let mut acc = 0i32;
                for c in 0..C {
                    for r in 0..R {
                        for s in 0..R {
                            let y = oy as isize + r as isize - 1;
                            let x = ox as isize + s as isize - 1;
                            if y >= 0 && x >= 0 && (y as usize) < H && (x as usize) < W {
                                acc += input[(c * H + y as usize) * W + x as usize]
                                    * w[((k * C + c) * R + r) * R + s];
                            }
                        }
                    }
                }
                out[(k * H + oy) * W + ox] = acc;
            }
        }
    }
}

fn reference_f32(input: &[f32], w: &[f32], out: &mut [f32]) {
    for k in 0..K {
        for oy in 0..H {
            for ox in 0..W {
                let mut acc = 0f32;
                for c in 0..C {
                    for r in 0..R {
                        for s in 0..R {
                            let y = oy as isize + r as isize - 1;
                            let x = ox as isize + s as isize - 1;
                            if y >= 0 && x >= 0 && (y as usize) < H && (x as usize) < W {
                                acc += input[(c * H + y as usize) * W + x as usize]
                                    * w[((k * C + c) * R + r) * R + s];
                            }
                        }
                    }
                }
                out[(k * H + oy) * W + ox] = acc;
            }
        }
    }
}

/// Loads the layer into a fresh platform and programs every unit (not yet enabled).
fn setup(prec: Precision, input: &[i32], weights: &[i32]) -> Result<Vp, String> {
    let cfg = HwConfig::new(&nvdla_hw::NV_FULL);
    let mut vp = Vp::new(cfg);
    let atom = cfg.hw.memory_atomic;
    let line = u64::from(atom) * W as u64;
    let layout = |base, c| CubeLayout {
        ram: RamType::Dram,
        base,
        line_stride: line,
        surf_stride: line * H as u64,
        w: W,
        h: H,
        c,
        prec,
        atom,
    };
    layout(IN_ADDR, C)
        .write(&mut vp.mem, input)
        .map_err(|e| e.to_string())?;
    let bpe = prec.bytes() as usize;
    let wg = WeightGeom {
        k: K,
        c: C,
        r: R,
        s: R,
        group: if prec == Precision::Int8 { 32 } else { 16 },
        block: cfg.hw.atomic_c as usize,
        bpe,
        y_ext: 1,
    };
    let bytes = (K * wg.bytes_per_kernel()).next_multiple_of(128);
    let mut wbuf = vec![0u8; bytes];
    for k in 0..K {
        for c in 0..C {
            for r in 0..R {
                for s in 0..R {
                    let o = wg.offset(k, c, r, s);
                    let v = weights[((k * C + c) * R + r) * R + s];
                    wbuf[o..o + bpe].copy_from_slice(&(v as u16).to_le_bytes()[..bpe]);
                }
            }
        }
    }
    vp.mem
        .write(RamType::Dram, WT_ADDR, &wbuf)
        .map_err(|e| e.to_string())?;

    let p = match prec {
        Precision::Int8 => 0,
        Precision::Int16 => 1,
        Precision::Fp16 => 2,
    };
    let entries = entries_per_slice(&cfg, W, C, prec) as u32;
    let per_bank = crate::engines::conv::cbuf_entries_per_bank(&cfg) as u32;
    let data_banks = (entries * H as u32).div_ceil(per_bank);
    let bank = (data_banks - 1) | ((cfg.hw.cbuf_banks - data_banks - 1) << 16);
    let wh = ((H as u32 - 1) << 16) | (W as u32 - 1);
    let regs: &[(Reg, u32)] = &[
        (
            ids::cdma::D_MISC_CFG,
            (D_MISC_CFG::IN_PRECISION.val(p) + D_MISC_CFG::PROC_PRECISION.val(p)).value,
        ),
        (ids::cdma::D_DATAIN_FORMAT, 0),
        (ids::cdma::D_DATAIN_SIZE_0, wh),
        (ids::cdma::D_DATAIN_SIZE_1, C as u32 - 1),
        (ids::cdma::D_DATAIN_SIZE_EXT_0, wh),
        (ids::cdma::D_DAIN_RAM_TYPE, 1),
        (ids::cdma::D_DAIN_ADDR_HIGH_0, 0),
        (ids::cdma::D_DAIN_ADDR_LOW_0, IN_ADDR as u32),
        (ids::cdma::D_LINE_STRIDE, line as u32),
        (ids::cdma::D_SURF_STRIDE, (line * H as u64) as u32),
        (ids::cdma::D_DAIN_MAP, 0x1_0001),
        (ids::cdma::D_ENTRY_PER_SLICE, entries - 1),
        (ids::cdma::D_WEIGHT_FORMAT, 0),
        (ids::cdma::D_WEIGHT_SIZE_0, wg.bytes_per_kernel() as u32 - 1),
        (ids::cdma::D_WEIGHT_SIZE_1, K as u32 - 1),
        (ids::cdma::D_WEIGHT_RAM_TYPE, 1),
        (ids::cdma::D_WEIGHT_ADDR_HIGH, 0),
        (ids::cdma::D_WEIGHT_ADDR_LOW, WT_ADDR as u32),
        (ids::cdma::D_WEIGHT_BYTES, bytes as u32),
        (ids::cdma::D_CONV_STRIDE, 0),
        (ids::cdma::D_ZERO_PADDING, 0x0101_0101),
        (ids::cdma::D_ZERO_PADDING_VALUE, 0),
        (ids::cdma::D_BANK, bank),
        (ids::csc::D_MISC_CFG, (p << 8) | (p << 12)),
        (ids::csc::D_DATAIN_FORMAT, 0),
        (ids::csc::D_DATAIN_SIZE_EXT_0, wh),
        (ids::csc::D_DATAIN_SIZE_EXT_1, C as u32 - 1),
        (ids::csc::D_ENTRY_PER_SLICE, entries - 1),
        (ids::csc::D_WEIGHT_FORMAT, 0),
        (
            ids::csc::D_WEIGHT_SIZE_EXT_0,
            ((R as u32 - 1) << 16) | (R as u32 - 1),
        ),
        (
            ids::csc::D_WEIGHT_SIZE_EXT_1,
            ((K as u32 - 1) << 16) | (C as u32 - 1),
        ),
        (ids::csc::D_WEIGHT_BYTES, bytes as u32),
        (ids::csc::D_DATAOUT_SIZE_0, wh),
        (ids::csc::D_DATAOUT_SIZE_1, K as u32 - 1),
        (ids::csc::D_ATOMICS, (W * H) as u32 - 1),
        (ids::csc::D_RELEASE, H as u32),
        (ids::csc::D_CONV_STRIDE_EXT, 0),
        (ids::csc::D_DILATION_EXT, 0),
        (ids::csc::D_ZERO_PADDING, 0x1_0001),
        (ids::csc::D_ZERO_PADDING_VALUE, 0),
        (ids::csc::D_BANK, bank),
        (ids::cmac_a::D_MISC_CFG, p << 12),
        (ids::cmac_b::D_MISC_CFG, p << 12),
        (ids::cacc::D_MISC_CFG, p << 12),
        (ids::cacc::D_DATAOUT_SIZE_0, wh),
        (ids::cacc::D_DATAOUT_SIZE_1, K as u32 - 1),
        (ids::cacc::D_CLIP_CFG, 0),
        (ids::sdp::D_DATA_CUBE_WIDTH, W as u32 - 1),
        (ids::sdp::D_DATA_CUBE_HEIGHT, H as u32 - 1),
        (ids::sdp::D_DATA_CUBE_CHANNEL, K as u32 - 1),
        (ids::sdp::D_DST_BASE_ADDR_LOW, OUT_ADDR as u32),
        (ids::sdp::D_DST_BASE_ADDR_HIGH, 0),
        (ids::sdp::D_DST_LINE_STRIDE, line as u32),
        (ids::sdp::D_DST_SURFACE_STRIDE, (line * H as u64) as u32),
        (ids::sdp::D_DP_BS_CFG, 1),
        (ids::sdp::D_DP_BN_CFG, 1),
        (ids::sdp::D_DP_EW_CFG, 1),
        (ids::sdp::D_FEATURE_MODE_CFG, 1),
        (ids::sdp::D_DST_DMA_CFG, 1),
        (ids::sdp::D_DATA_FORMAT, p | (p << 2)),
        (ids::sdp::D_CVT_OFFSET, 0),
        (ids::sdp::D_CVT_SCALE, 1),
        (
            ids::sdp::D_CVT_SHIFT,
            if prec == Precision::Int8 {
                INT8_SHIFT
            } else {
                0
            },
        ),
    ];
    for &(r, v) in regs {
        let a = vp
            .addr(r)
            .ok_or_else(|| format!("no register {}+{:#x}", r.unit(), r.offset()))?;
        vp.csb_write(a, v);
    }
    Ok(vp)
}

fn enable_and_wait(vp: &mut Vp) -> Result<(), String> {
    use ids::{cacc, cdma, cmac_a, cmac_b, csc, sdp};
    for r in [
        sdp::D_OP_ENABLE,
        cacc::D_OP_ENABLE,
        cmac_a::D_OP_ENABLE,
        cmac_b::D_OP_ENABLE,
        csc::D_OP_ENABLE,
        cdma::D_OP_ENABLE,
    ] {
        let a = vp.addr(r).ok_or("no D_OP_ENABLE")?;
        vp.csb_write(a, 1);
    }
    if !vp.irq_pending() {
        return Err(match vp.fault() {
            Some(f) => format!("model fault: {}: {}", f.block, f.error),
            None => "no interrupt".into(),
        });
    }
    Ok(())
}

/// Runs the benchmark layer `runs` times through the model and the reference.
pub fn run(prec: Precision, runs: u32) -> Result<Figures, String> {
    let (input, weights) = make_data(prec);
    let runs = runs.max(1);
    // Model.
    let mut model_s = f64::INFINITY;
    let mut vp = setup(prec, &input, &weights)?;
    for _ in 0..runs {
        vp = setup(prec, &input, &weights)?;
        let t = Instant::now();
        enable_and_wait(&mut vp)?;
        model_s = model_s.min(t.elapsed().as_secs_f64());
    }
    let out = CubeLayout {
        ram: RamType::Dram,
        base: OUT_ADDR,
        line_stride: u64::from(vp.config().hw.memory_atomic) * W as u64,
        surf_stride: u64::from(vp.config().hw.memory_atomic) * (W * H) as u64,
        w: W,
        h: H,
        c: K,
        prec,
        atom: vp.config().hw.memory_atomic,
    }
    .read(&vp.mem)
    .map_err(|e| e.to_string())?;
    // Reference.
    let mut reference_s = f64::INFINITY;
    let mut max_error = 0f64;
    match prec {
        Precision::Fp16 => {
            let fi: Vec<f32> = input.iter().map(|&h| as_f32(h)).collect();
            let fw: Vec<f32> = weights.iter().map(|&h| as_f32(h)).collect();
            let mut ro = vec![0f32; K * H * W];
            for _ in 0..runs {
                let t = Instant::now();
                reference_f32(std::hint::black_box(&fi), &fw, &mut ro);
                reference_s = reference_s.min(t.elapsed().as_secs_f64());
            }
            for (&m, &r) in out.iter().zip(&ro) {
                let d = f64::from((as_f32(m) - r).abs());
                // fp16 output rounding (half an ulp of values up to ~64) plus the
                // hardware's block alignment.
                max_error = max_error.max(d);
            }
            if max_error > 0.1 {
                return Err(format!("fp16 model differs from reference by {max_error}"));
            }
        }
        _ => {
            let mut ro = vec![0i32; K * H * W];
            for _ in 0..runs {
                let t = Instant::now();
                reference_i32(std::hint::black_box(&input), &weights, &mut ro);
                reference_s = reference_s.min(t.elapsed().as_secs_f64());
            }
            for (i, (&m, &r)) in out.iter().zip(&ro).enumerate() {
                let want = crate::arith::shr_round(i64::from(r), INT8_SHIFT).clamp(-128, 127);
                if i64::from(m) != want {
                    return Err(format!("int8 output {i}: model {m}, reference {want}"));
                }
            }
        }
    }
    Ok(Figures {
        prec,
        macs: (K * H * W * C * R * R) as u64,
        runs,
        model_s,
        reference_s,
        max_error,
    })
}
