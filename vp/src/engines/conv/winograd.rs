//! Winograd convolution (`CONV_MODE = WINOGRAD`, nv_full only): F(2x2, 3x3) on 4x4
//! input tiles, as CSC, CMAC and CACC compute it (`nvdlav1:cmod`).
//!
//! Software and CDMA prepare everything but the data transform:
//! - the compiler stores each kernel channel already transformed into a 4x4 tile (in
//!   real numbers `G g Gᵀ`, scaled and rounded as it likes); the hardware multiplies
//!   with the tiles as given;
//! - CDMA pads the input in CBUF and folds the convolution stride into channels, so CSC
//!   sees an "extended" cube `W' x H' x C'` to convolve with stride 1 and no padding
//!   ([`super::cdma::fetch_winograd`]).
//!
//! Output tiles of 2x2 start at even positions `(2·tx, 2·ty)` and read the 4x4 input
//! tile at the same position. For every output tile and every kernel CSC walks the
//! extended channels in "super channels" of 4, and for each:
//! 1. **PRA**, CSC's pre-addition (`NV_NVDLA_CSC_pra_cell`,
//!    `cmod/hls/csc_libs/csc_cvt.cpp`): each channel's tile `d` (row-major) becomes
//!    `Bᵀ d B` with `Bᵀ = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]]`, rows first.
//!    Integers (int8 sign-extended to 16 bits) take 17 then 18 bits exactly, are shifted
//!    right by `D_PRA_CFG.PRA_TRUNCATE` rounding half away from zero and saturate to
//!    the processing precision (`IntShiftRight<18,2,8|16>`). fp16 goes through the fp17
//!    adder (`FpAdd`/`FpSub<6,10>`, subtraction adds the negated operand) and back to
//!    fp16 (`Fp17ToFp16`); the truncation does not apply.
//! 2. **CMAC** (`calculation_int8`, `calculation_int16`, `calculation_fp16` in
//!    `cmod/cmac/NV_NVDLA_cmac.h`): the 16 positions x 4 channels are the 64 lanes of
//!    one MAC cell (lane `position * 4 + channel`); per position the 4 channel products
//!    are summed, then the post-addition (POA) `Aᵀ m A` with
//!    `Aᵀ = [[1,1,1,0],[0,1,-1,-1]]` gives the four outputs of the tile. Integer cells
//!    keep 22 (int8) or 44 (int16) bits, more than the worst case needs, so they are
//!    exact. fp16 lanes are aligned to one block exponent over all 64 lanes, exactly as
//!    in direct convolution (CSC masks `±0`; coarse/fine exponents; Booth multiplier
//!    with separately truncated carry-save vectors), the aligned products are summed as
//!    integers before the POA, and all four outputs carry the block exponent; a NaN
//!    operand makes all four the NaN marker.
//! 3. **CACC** (`mac2accu_b_transport`, `cmod/cacc/NV_NVDLA_cacc.cpp`) adds the four
//!    results to their outputs' accumulators in super-channel order, as in direct
//!    convolution (48-bit saturating integers; the fp48 accumulator), and delivers them
//!    the same way (`CLIP_TRUNCATE` rounding and 32-bit saturation; fp32).
//!
//! CACC hands the tiles to SDP in Winograd order (two columns by four rows); SDP in
//! Winograd output mode puts them back in place, so the cube SDP receives here is the
//! ordinary `[k][y][x]` one.

use super::arith::{acc48_add, block_nan, booth_product, cacc_int_out, F16Lane, Fp48, MacF16};
use super::cdma::{InputCube, Weights};
use super::compute::{AccOut, MAX_MACS};
use crate::engines::par_ranges;
use crate::engines::{check_cube, EngineError, Precision};
use crate::fp::{FP16, FP17};

/// Geometry of a Winograd layer as CSC sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geom {
    /// Extended input width `W'`.
    pub in_w: usize,
    /// Extended input height `H'`.
    pub in_h: usize,
    /// Extended input channels `C'` (a multiple of 4; = kernel channels).
    pub in_c: usize,
    /// Output width (a multiple of 4).
    pub out_w: usize,
    /// Output height (a multiple of 4).
    pub out_h: usize,
    /// Kernels.
    pub k: usize,
    /// `PRA_TRUNCATE` (integer precisions).
    pub pra_truncate: u32,
}

/// Channels per super channel (one MAC operation).
pub const SUPER: usize = 4;

/// The pre-addition `Bᵀ d B` with the given difference and sum, rows first, in the
/// operand order of `NV_NVDLA_CSC_pra_cell` (it matters for the sign of fp zeros).
#[inline]
fn pra_with<T: Copy>(d: &[T; 16], sub: impl Fn(T, T) -> T, add: impl Fn(T, T) -> T) -> [T; 16] {
    let mut m = [d[0]; 16];
    for x in 0..4 {
        m[x] = sub(d[x], d[8 + x]);
        m[4 + x] = add(d[4 + x], d[8 + x]);
        m[8 + x] = sub(d[8 + x], d[4 + x]);
        m[12 + x] = sub(d[4 + x], d[12 + x]);
    }
    let mut o = [d[0]; 16];
    for r in 0..4 {
        let row = &m[4 * r..4 * r + 4];
        o[4 * r] = sub(row[0], row[2]);
        o[4 * r + 1] = add(row[1], row[2]);
        o[4 * r + 2] = sub(row[2], row[1]);
        o[4 * r + 3] = sub(row[1], row[3]);
    }
    o
}

/// PRA of one integer tile (values already signed): exact 17/18-bit sums, then
/// `IntShiftRight` by `truncate` to `bits` (8 or 16).
pub fn pra_int(d: &[i32; 16], truncate: u32, bits: u32) -> [i32; 16] {
    let t = pra_with(d, |a, b| a - b, |a, b| a + b);
    t.map(|v| crate::arith::shr_round_sat(i64::from(v), truncate, bits) as i32)
}

/// PRA of one fp16 tile (bit patterns) in the fp17 adder, rounded back to fp16.
pub fn pra_fp16(d: &[u16; 16]) -> [u16; 16] {
    let to17 = d.map(|h| FP16.convert(u64::from(h), FP17, true));
    let neg = 1u64 << 16;
    let t = pra_with(&to17, |a, b| FP17.add(a, b ^ neg), |a, b| FP17.add(a, b));
    t.map(|v| FP17.convert(v, FP16, true) as u16)
}

/// POA `Aᵀ m A` of the 16 per-position sums (row-major): outputs `(0,0), (1,0), (0,1),
/// (1,1)` as `[y * 2 + x]` (phase 2 over rows, phase 3 over columns, as CMAC adds).
#[inline]
pub fn poa(m: &[i64; 16]) -> [i64; 4] {
    let mut p2 = [0i64; 8];
    for i in 0..4 {
        p2[i] = m[i] + m[i + 4] + m[i + 8];
        p2[i + 4] = m[i + 4] - m[i + 8] - m[i + 12];
    }
    let mut o = [0i64; 4];
    for i in 0..2 {
        o[i * 2] = p2[i * 4] + p2[i * 4 + 1] + p2[i * 4 + 2];
        o[i * 2 + 1] = p2[i * 4 + 1] - p2[i * 4 + 2] - p2[i * 4 + 3];
    }
    o
}

/// One integer MAC operation: lanes `position * 4 + channel` of PRA output `d` and
/// weights `w`. The products and sums fit the cells (int8: |result| < 2^20 of 22 bits;
/// int16: < 2^36 of 44, and of the 38 CACC keeps), so plain i64 arithmetic is exact.
#[inline]
pub fn mac_int(d: &[i32], w: &[i32]) -> [i64; 4] {
    let mut m = [0i64; 16];
    for (p, s) in m.iter_mut().enumerate() {
        let (dd, ww) = (&d[p * 4..p * 4 + 4], &w[p * 4..p * 4 + 4]);
        *s = dd
            .iter()
            .zip(ww)
            .map(|(&a, &b)| i64::from(a) * i64::from(b))
            .sum();
    }
    poa(&m)
}

/// Aligned product of one active fp16 lane pair, `shift` bits right of the exact
/// product: exact at 0, the floor at 4 (the Booth carry-save truncation never loses a
/// carry there, see `conv/arith.rs`), the Booth multiplier otherwise.
#[inline]
fn lane_product(d: F16Lane, w: F16Lane, shift: u32) -> i64 {
    let neg = d.sign != w.sign;
    let p = i64::from(d.mts) * i64::from(w.mts);
    let p = if neg { -p } else { p };
    match shift {
        0 => p,
        4 => p >> 4,
        _ => i64::from(booth_product(
            neg,
            u32::from(w.mts),
            u32::from(d.mts),
            shift,
        )),
    }
}

/// One fp16 MAC operation on decoded lanes (`position * 4 + channel`): the four POA
/// results with the block exponent. `nan` is the block's NaN marker, if any.
#[inline]
pub fn mac_fp16(d: &[F16Lane], w: &[F16Lane], nan: Option<MacF16>) -> [MacF16; 4] {
    if let Some(n) = nan {
        return [n; 4];
    }
    let mut max = 0u32;
    for (a, b) in d.iter().zip(w) {
        if a.active && b.active {
            max = max.max(u32::from(a.coarse) + u32::from(b.coarse));
        }
    }
    let mut m = [0i64; 16];
    for (p, s) in m.iter_mut().enumerate() {
        for i in p * 4..p * 4 + 4 {
            let (a, b) = (d[i], w[i]);
            if a.active && b.active {
                let shift = (max - u32::from(a.coarse) - u32::from(b.coarse)) * 4;
                *s += lane_product(a, b, shift);
            }
        }
    }
    // Lane products are 32-bit, the POA sums stay below 2^34: the 38-bit mantissa
    // never wraps.
    poa(&m).map(|v| MacF16 {
        exp: (max * 4) as u8,
        mant: v,
    })
}

/// Checks the geometry against the cubes and the model's limits.
fn check(g: &Geom, input: &InputCube, w: &Weights) -> Result<(), EngineError> {
    let err = |msg: String| EngineError::Config { block: "CSC", msg };
    if (input.w, input.h, input.c) != (g.in_w, g.in_h, g.in_c) || input.batches != 1 {
        return Err(err(format!(
            "extended input {}x{}x{} (batches {}) for a {}x{}x{} Winograd layer",
            input.w, input.h, input.c, input.batches, g.in_w, g.in_h, g.in_c
        )));
    }
    if (w.k, w.c, w.r, w.s) != (g.k, g.in_c, 4, 4) {
        return Err(err(format!(
            "weights {}x{}x{}x{} for {} kernels of 4x4x{}",
            w.k, w.c, w.r, w.s, g.k, g.in_c
        )));
    }
    if !g.in_c.is_multiple_of(SUPER) || !g.out_w.is_multiple_of(4) || !g.out_h.is_multiple_of(4) {
        return Err(err(format!(
            "Winograd needs channels in fours and outputs in multiples of 4 \
             ({} channels, {}x{} outputs)",
            g.in_c, g.out_w, g.out_h
        )));
    }
    if g.out_w + 2 > g.in_w || g.out_h + 2 > g.in_h {
        return Err(err(format!(
            "{}x{} outputs need a {}x{} extended input, it is {}x{}",
            g.out_w,
            g.out_h,
            g.out_w + 2,
            g.out_h + 2,
            g.in_w,
            g.in_h
        )));
    }
    check_cube("CACC", g.out_w, g.out_h, g.k)?;
    // PRA output: 4 values per input position per channel.
    check_cube("CSC", g.out_w * 2, g.out_h * 2, g.in_c)?;
    let ops = [g.out_w / 2, g.out_h / 2, g.k, g.in_c, 16]
        .iter()
        .try_fold(1u64, |a, &v| a.checked_mul(v as u64));
    if ops.is_none_or(|m| m > MAX_MACS) {
        return Err(EngineError::Unsupported {
            block: "CSC",
            msg: format!("layer exceeds the model's limit of {MAX_MACS} multiply-accumulates"),
        });
    }
    Ok(())
}

/// The 4x4 input tile of output tile `(tx, ty)` in channel `c`, row-major.
#[inline]
fn tile<T: Copy>(
    input: &InputCube,
    c: usize,
    tx: usize,
    ty: usize,
    f: impl Fn(i32) -> T,
) -> [T; 16] {
    let plane = &input.data[c * input.h * input.w..(c + 1) * input.h * input.w];
    std::array::from_fn(|i| f(plane[(2 * ty + i / 4) * input.w + 2 * tx + i % 4]))
}

/// Runs a Winograd layer on the extended input cube and the 4x4 weight tiles; returns
/// the CACC output `[k][y][x]` (32-bit integers, or fp32 bit patterns).
pub fn conv(
    g: &Geom,
    prec: Precision,
    input: &InputCube,
    w: &Weights,
    truncate: u32,
) -> Result<AccOut, EngineError> {
    check(g, input, w)?;
    let (tw, th) = (g.out_w / 2, g.out_h / 2);
    let tiles = tw * th;
    let nsc = g.in_c / SUPER;
    // Operands of every MAC operation, in lanes `position * 4 + channel`: data per
    // (tile, super channel), weights per (kernel, super channel).
    let lane_data = |get: &dyn Fn(usize, usize, usize) -> [i32; 16]| -> Vec<i32> {
        let mut v = vec![0i32; tiles * nsc * 64];
        for t in 0..tiles {
            for c in 0..g.in_c {
                let d = get(c, t % tw, t / tw);
                let base = (t * nsc + c / SUPER) * 64 + c % SUPER;
                for (p, &x) in d.iter().enumerate() {
                    v[base + p * 4] = x;
                }
            }
        }
        v
    };
    let mut wl = vec![0i32; g.k * nsc * 64];
    for k in 0..g.k {
        for c in 0..g.in_c {
            let base = (k * nsc + c / SUPER) * 64 + c % SUPER;
            for p in 0..16 {
                wl[base + p * 4] = w.data[(k * g.in_c + c) * 16 + p];
            }
        }
    }
    let plane = g.out_w * g.out_h;
    let mut out = vec![0i64; g.k * plane];
    let mut saturated = 0u32;
    match prec {
        Precision::Int8 | Precision::Int16 => {
            let bits = if prec == Precision::Int8 { 8 } else { 16 };
            let dl = lane_data(&|c, tx, ty| {
                pra_int(&tile(input, c, tx, ty, |v| v), g.pra_truncate, bits)
            });
            let parts = par_ranges(g.k, |ks| {
                let mut part = vec![0i64; ks.len() * plane];
                for (ki, k) in ks.enumerate() {
                    for t in 0..tiles {
                        let mut acc = [0i64; 4];
                        for s in 0..nsc {
                            let d = &dl[(t * nsc + s) * 64..][..64];
                            let wk = &wl[(k * nsc + s) * 64..][..64];
                            for (a, v) in acc.iter_mut().zip(mac_int(d, wk)) {
                                *a = acc48_add(*a, v);
                            }
                        }
                        let (x0, y0) = (2 * (t % tw), 2 * (t / tw));
                        for (j, &a) in acc.iter().enumerate() {
                            part[ki * plane + (y0 + j / 2) * g.out_w + x0 + j % 2] = a;
                        }
                    }
                }
                part
            });
            for (o, a) in out.iter_mut().zip(parts.into_iter().flatten()) {
                let (v, s) = cacc_int_out(a, truncate);
                saturated += u32::from(s);
                *o = v;
            }
        }
        Precision::Fp16 => {
            let dl = lane_data(&|c, tx, ty| {
                pra_fp16(&tile(input, c, tx, ty, |v| v as u16)).map(i32::from)
            });
            let decode = |v: &[i32]| -> Vec<F16Lane> {
                v.iter().map(|&h| F16Lane::decode(h as u16)).collect()
            };
            let raw = |v: &[i32]| -> Vec<u16> { v.iter().map(|&h| h as u16).collect() };
            let (dd, wd) = (decode(&dl), decode(&wl));
            // NaN markers per operand block (weights first, as CMAC looks).
            let dn: Vec<Option<MacF16>> = dl.chunks(64).map(|b| block_nan(&raw(b), &[])).collect();
            let wn: Vec<Option<MacF16>> = wl.chunks(64).map(|b| block_nan(&[], &raw(b))).collect();
            let parts = par_ranges(g.k, |ks| {
                let mut part = vec![0i64; ks.len() * plane];
                for (ki, k) in ks.enumerate() {
                    for t in 0..tiles {
                        let mut acc = [Fp48::default(); 4];
                        for s in 0..nsc {
                            let (di, wi) = (t * nsc + s, k * nsc + s);
                            let nan = wn[wi].or(dn[di]);
                            let r = mac_fp16(&dd[di * 64..][..64], &wd[wi * 64..][..64], nan);
                            for (a, v) in acc.iter_mut().zip(r) {
                                *a = a.accumulate(v);
                            }
                        }
                        let (x0, y0) = (2 * (t % tw), 2 * (t / tw));
                        for (j, a) in acc.iter().enumerate() {
                            part[ki * plane + (y0 + j / 2) * g.out_w + x0 + j % 2] =
                                i64::from(a.to_f32_bits());
                        }
                    }
                }
                part
            });
            for (o, a) in out.iter_mut().zip(parts.into_iter().flatten()) {
                *o = a;
            }
        }
    }
    Ok(AccOut {
        data: out,
        saturated,
    })
}

#[cfg(test)]
mod tests {
    //! The references below are written from the transform's definition, not from the
    //! functions above: `Bᵀ d B` and `Aᵀ M A` as matrix products, the hardware's
    //! rounding written out, and for fp16 the hardware primitives (`fp.rs` adders,
    //! `booth_product`, the fp48 accumulator) applied lane by lane without shortcuts.
    use super::*;
    use crate::engines::conv::arith::mac_nan;
    use crate::regs::{ids, Reg};

    const BT: [[i64; 4]; 4] = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]];
    const AT: [[i64; 4]; 2] = [[1, 1, 1, 0], [0, 1, -1, -1]];
    /// `2·G` of F(2x2, 3x3): integer, so `(2G) g (2G)ᵀ = 4·G g Gᵀ` is exact.
    const G2: [[i64; 3]; 4] = [[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]];

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) as u32
        }
        /// Uniform in `lo..=hi`.
        fn range(&mut self, lo: i32, hi: i32) -> i32 {
            lo + (self.next() % (hi - lo + 1) as u32) as i32
        }
    }

    /// Round half away from zero, then saturate to `bits`.
    fn round_sat(v: i64, t: u32, bits: u32) -> i64 {
        let r = if t == 0 {
            v
        } else if v >= 0 {
            (v + (1 << (t - 1))) >> t
        } else {
            -((-v + (1 << (t - 1))) >> t)
        };
        r.clamp(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    }

    fn ref_pra_int(d: &[i32; 16], t: u32, bits: u32) -> [i32; 16] {
        let mut o = [0i32; 16];
        for i in 0..4 {
            for j in 0..4 {
                let mut v = 0i64;
                for k in 0..4 {
                    for l in 0..4 {
                        v += BT[i][k] * i64::from(d[k * 4 + l]) * BT[j][l];
                    }
                }
                o[i * 4 + j] = round_sat(v, t, bits) as i32;
            }
        }
        o
    }

    /// `Σ coef·x` in fp17 with the positive terms first (index order), then the
    /// negative ones subtracted: the order the PRA adders use.
    fn fp17_comb(coef: &[i64; 4], x: &[u64; 4]) -> u64 {
        let neg = 1u64 << 16;
        let mut acc: Option<u64> = None;
        for want_pos in [true, false] {
            for (c, &v) in coef.iter().zip(x) {
                if *c == 0 || (*c > 0) != want_pos {
                    continue;
                }
                let v = if *c < 0 { v ^ neg } else { v };
                acc = Some(match acc {
                    None => v,
                    Some(a) => FP17.add(a, v),
                });
            }
        }
        acc.unwrap_or(0)
    }

    fn ref_pra_f16(d: &[u16; 16]) -> [u16; 16] {
        let x: Vec<u64> = d
            .iter()
            .map(|&h| FP16.convert(u64::from(h), FP17, true))
            .collect();
        let mut m = [0u64; 16];
        for i in 0..4 {
            for l in 0..4 {
                let col = [x[l], x[4 + l], x[8 + l], x[12 + l]];
                m[i * 4 + l] = fp17_comb(&BT[i], &col);
            }
        }
        let mut o = [0u16; 16];
        for i in 0..4 {
            for j in 0..4 {
                let row = [m[i * 4], m[i * 4 + 1], m[i * 4 + 2], m[i * 4 + 3]];
                o[i * 4 + j] = FP17.convert(fp17_comb(&BT[j], &row), FP16, true) as u16;
            }
        }
        o
    }

    fn ref_poa(m: &[i64; 16]) -> [i64; 4] {
        let mut o = [0i64; 4];
        for i in 0..2 {
            for j in 0..2 {
                for k in 0..4 {
                    for l in 0..4 {
                        o[i * 2 + j] += AT[i][k] * m[k * 4 + l] * AT[j][l];
                    }
                }
            }
        }
        o
    }

    /// One fp16 MAC cell in Winograd mode, lane by lane on the Booth multiplier.
    fn ref_mac_f16(d: &[u16], w: &[u16]) -> [MacF16; 4] {
        let is_nan = |h: u16| h & 0x7c00 == 0x7c00 && h & 0x3ff != 0;
        if let Some(&h) = w.iter().chain(d).find(|&&h| is_nan(h)) {
            return [mac_nan(h); 4];
        }
        let dec = |h: u16| {
            let e = u32::from((h >> 10) & 31);
            let fine = if e == 0 { 1 } else { e & 3 };
            let m = (u32::from(h & 0x3ff) | if e != 0 { 0x400 } else { 0 }) << fine;
            (h & 0x7fff != 0, h >> 15 == 1, e >> 2, m)
        };
        let mut max = 0;
        for (&a, &b) in d.iter().zip(w) {
            let (da, wa) = (dec(a), dec(b));
            if da.0 && wa.0 {
                max = max.max(da.2 + wa.2);
            }
        }
        let mut m = [0i64; 16];
        for (i, (&a, &b)) in d.iter().zip(w).enumerate() {
            let (da, wa) = (dec(a), dec(b));
            if da.0 && wa.0 {
                let shift = (max - da.2 - wa.2) * 4;
                m[i / 4] += i64::from(booth_product(da.1 != wa.1, wa.3, da.3, shift));
            }
        }
        ref_poa(&m).map(|v| MacF16 {
            exp: (max * 4) as u8,
            mant: v,
        })
    }

    /// The Winograd layer by definition: for every kernel, output tile and super
    /// channel, PRA of the data tiles, elementwise products with the weight tiles
    /// summed over the 4 channels, POA, CACC accumulation and delivery.
    fn ref_conv(g: &Geom, prec: Precision, input: &InputCube, w: &Weights, trunc: u32) -> Vec<i64> {
        let mut out = vec![0i64; g.k * g.out_w * g.out_h];
        let at = |c: usize, y: usize, x: usize| input.data[(c * input.h + y) * input.w + x];
        for k in 0..g.k {
            for ty in 0..g.out_h / 2 {
                for tx in 0..g.out_w / 2 {
                    let mut iacc = [0i64; 4];
                    let mut facc = [Fp48::default(); 4];
                    for s in 0..g.in_c / 4 {
                        let (mut dl, mut wl) = (vec![0i32; 64], vec![0i32; 64]);
                        for ci in 0..4 {
                            let c = 4 * s + ci;
                            let d: [i32; 16] =
                                std::array::from_fn(|i| at(c, 2 * ty + i / 4, 2 * tx + i % 4));
                            let v: Vec<i32> = match prec {
                                Precision::Fp16 => ref_pra_f16(&d.map(|x| x as u16))
                                    .iter()
                                    .map(|&h| i32::from(h))
                                    .collect(),
                                Precision::Int8 => ref_pra_int(&d, g.pra_truncate, 8).to_vec(),
                                Precision::Int16 => ref_pra_int(&d, g.pra_truncate, 16).to_vec(),
                            };
                            for p in 0..16 {
                                dl[p * 4 + ci] = v[p];
                                wl[p * 4 + ci] = w.data[(k * g.in_c + c) * 16 + p];
                            }
                        }
                        if prec == Precision::Fp16 {
                            let h = |v: &[i32]| v.iter().map(|&x| x as u16).collect::<Vec<_>>();
                            for (a, r) in facc.iter_mut().zip(ref_mac_f16(&h(&dl), &h(&wl))) {
                                *a = a.accumulate(r);
                            }
                        } else {
                            let mut m = [0i64; 16];
                            for i in 0..64 {
                                m[i / 4] += i64::from(dl[i]) * i64::from(wl[i]);
                            }
                            for (a, v) in iacc.iter_mut().zip(ref_poa(&m)) {
                                *a = (*a + v).clamp(-(1 << 47), (1 << 47) - 1);
                            }
                        }
                    }
                    for j in 0..4 {
                        let o = (k * g.out_h + 2 * ty + j / 2) * g.out_w + 2 * tx + j % 2;
                        out[o] = if prec == Precision::Fp16 {
                            i64::from(facc[j].to_f32_bits())
                        } else {
                            round_sat(iacc[j], trunc, 32)
                        };
                    }
                }
            }
        }
        out
    }

    #[test]
    fn pra_int_matches_the_matrix_product_with_rounding_and_saturation() {
        let mut r = Lcg(1);
        for case in 0..4000 {
            let (bits, lim) = if case % 2 == 0 { (8, 128) } else { (16, 32768) };
            let small = case % 3 == 0;
            let d: [i32; 16] = std::array::from_fn(|_| {
                if small {
                    r.range(-lim / 8, lim / 8 - 1)
                } else {
                    r.range(-lim, lim - 1)
                }
            });
            let t = (case / 2 % 4) as u32;
            assert_eq!(
                pra_int(&d, t, bits),
                ref_pra_int(&d, t, bits),
                "{d:?} >> {t}"
            );
        }
        // Rounding half away from zero and saturation, by hand: d[0][0] alone
        // passes through; 3 >> 1 = 2, -3 >> 1 = -2; 127 + 127 + 127 + 127 saturates.
        let mut d = [0i32; 16];
        d[0] = 3;
        assert_eq!(pra_int(&d, 1, 8)[0], 2);
        d[0] = -3;
        assert_eq!(pra_int(&d, 1, 8)[0], -2);
        let mut d = [0i32; 16];
        d[5] = 127;
        d[6] = 127;
        d[9] = 127;
        d[10] = 127;
        // Position (1,1): (d11 + d21) + (d12 + d22).
        assert_eq!(pra_int(&d, 0, 8)[5], 127);
        assert_eq!(pra_int(&d, 0, 16)[5], 508);
        assert_eq!(pra_int(&d, 2, 8)[5], 127);
    }

    #[test]
    fn pra_fp16_matches_the_fp17_matrix_product() {
        let mut r = Lcg(2);
        for case in 0..4000 {
            let d: [u16; 16] = std::array::from_fn(|_| {
                let x = r.next();
                match x % 16 {
                    0 => 0,
                    1 => 0x8000,
                    2 => ((x >> 8) & 0x83ff) as u16, // subnormals
                    3 if case % 7 == 0 => 0x7c00 | ((x >> 8) & 0x83ff) as u16, // NaN/Inf
                    4 => 0x7bff | ((x >> 5) & 0x8000) as u16, // largest finite
                    _ => {
                        let e = 1 + (x >> 4) % 30;
                        (((x >> 9) & 0x8000) | (e << 10) | ((x >> 12) & 0x3ff)) as u16
                    }
                }
            });
            assert_eq!(pra_fp16(&d), ref_pra_f16(&d), "{d:04x?}");
        }
        // Small integers are exact: compare with f64 arithmetic.
        for _ in 0..200 {
            let v: [i32; 16] = std::array::from_fn(|_| r.range(-100, 100));
            let h = v.map(|x| crate::fp::int_to_f16(i64::from(x)));
            let want = ref_pra_int(&v, 0, 32);
            let got = pra_fp16(&h).map(|b| FP16.to_f64(u64::from(b)));
            for (g, w) in got.iter().zip(want) {
                assert_eq!(*g, w as f64);
            }
        }
    }

    #[test]
    fn poa_and_int_mac_match_the_matrix_product() {
        let mut r = Lcg(3);
        for _ in 0..2000 {
            let d: Vec<i32> = (0..64).map(|_| r.range(-32768, 32767)).collect();
            let w: Vec<i32> = (0..64).map(|_| r.range(-32768, 32767)).collect();
            let mut m = [0i64; 16];
            for i in 0..64 {
                m[i / 4] += i64::from(d[i]) * i64::from(w[i]);
            }
            assert_eq!(mac_int(&d, &w), ref_poa(&m));
        }
    }

    #[test]
    fn fp16_mac_matches_the_booth_lanes() {
        let mut r = Lcg(4);
        for case in 0..3000 {
            let val = |r: &mut Lcg| -> u16 {
                let x = r.next();
                let spread = [4, 8, 16, 30][case % 4];
                match x % 16 {
                    0 => 0,
                    1 => 0x8000,
                    2 => ((x >> 8) & 0x83ff) as u16,
                    3 if case % 11 == 0 => 0x7c01 | ((x >> 8) & 0x83ff) as u16,
                    _ => {
                        let e = 1 + (x >> 4) % spread + (15 - spread / 2);
                        (((x >> 9) & 0x8000) | (e << 10) | ((x >> 12) & 0x3ff)) as u16
                    }
                }
            };
            let d: Vec<u16> = (0..64).map(|_| val(&mut r)).collect();
            let w: Vec<u16> = (0..64).map(|_| val(&mut r)).collect();
            let dl: Vec<F16Lane> = d.iter().map(|&h| F16Lane::decode(h)).collect();
            let wl: Vec<F16Lane> = w.iter().map(|&h| F16Lane::decode(h)).collect();
            let got = mac_fp16(&dl, &wl, block_nan(&d, &w));
            assert_eq!(got, ref_mac_f16(&d, &w), "case {case}");
        }
    }

    fn random_layer(
        r: &mut Lcg,
        prec: Precision,
        out: (usize, usize),
        c: usize,
        k: usize,
        pra: u32,
    ) -> (Geom, InputCube, Weights) {
        let g = Geom {
            in_w: out.0 + 4,
            in_h: out.1 + 4,
            in_c: c,
            out_w: out.0,
            out_h: out.1,
            k,
            pra_truncate: pra,
        };
        let val = |r: &mut Lcg| -> i32 {
            match prec {
                Precision::Int8 => r.range(-128, 127),
                Precision::Int16 => r.range(-32768, 32767),
                Precision::Fp16 => {
                    let x = r.next();
                    match x % 12 {
                        0 => 0,
                        1 => 0x8000,
                        2 => ((x >> 8) & 0x83ff) as i32,
                        _ => {
                            let e = 8 + (x >> 4) % 14;
                            (((x >> 9) & 0x8000) | (e << 10) | ((x >> 12) & 0x3ff)) as i32
                        }
                    }
                }
            }
        };
        let input = InputCube {
            w: g.in_w,
            h: g.in_h,
            c,
            batches: 1,
            data: (0..g.in_w * g.in_h * c).map(|_| val(r)).collect(),
        };
        let w = Weights {
            k,
            c,
            r: 4,
            s: 4,
            data: (0..k * c * 16).map(|_| val(r)).collect(),
        };
        (g, input, w)
    }

    #[test]
    fn int_layers_match_the_definition() {
        let mut r = Lcg(5);
        for case in 0..12 {
            let prec = if case % 2 == 0 {
                Precision::Int8
            } else {
                Precision::Int16
            };
            let (g, input, w) = random_layer(
                &mut r,
                prec,
                ([4, 8, 12][case % 3], [4, 8][case % 2]),
                [4, 8, 36][case % 3],
                [1, 5, 33][case % 3],
                (case % 4) as u32,
            );
            for trunc in [0, 3, 11] {
                let got = conv(&g, prec, &input, &w, trunc).unwrap();
                let want = ref_conv(&g, prec, &input, &w, trunc);
                assert_eq!(got.data, want, "case {case} trunc {trunc}");
                let sat = want
                    .iter()
                    .filter(|&&v| v == i64::from(i32::MAX) || v == i64::from(i32::MIN));
                if trunc == 0 && prec == Precision::Int16 {
                    // Full-range int16 tiles overflow 32 bits after accumulation.
                    assert!(got.saturated as usize >= sat.count().min(1));
                }
            }
        }
    }

    #[test]
    fn fp16_layers_match_the_definition() {
        let mut r = Lcg(6);
        for case in 0..10 {
            let (g, mut input, mut w) = random_layer(
                &mut r,
                Precision::Fp16,
                ([4, 8][case % 2], 4),
                [4, 12][case % 2],
                3,
                0,
            );
            if case % 5 == 4 {
                // A NaN in the data and one in the weights.
                input.data[7] = 0x7e01;
                w.data[20] = 0xfd55;
            }
            let got = conv(&g, Precision::Fp16, &input, &w, 0).unwrap();
            assert_eq!(
                got.data,
                ref_conv(&g, Precision::Fp16, &input, &w, 0),
                "case {case}"
            );
        }
    }

    /// Direct convolution of `[c][y][x]` (already padded) with `[k][c][r][s]` kernels
    /// at stride (sx, sy), output `ow x oh`.
    #[allow(clippy::too_many_arguments)]
    fn direct(
        d: &[i64],
        (w, h): (usize, usize),
        g: &[i64],
        (k, c, kr, ks): (usize, usize, usize, usize),
        (sx, sy): (usize, usize),
        (ow, oh): (usize, usize),
    ) -> Vec<i64> {
        let mut out = vec![0i64; k * oh * ow];
        for kk in 0..k {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut s = 0;
                    for cc in 0..c {
                        for r in 0..kr {
                            for q in 0..ks {
                                let (y, x) = (oy * sy + r, ox * sx + q);
                                if y < h && x < w {
                                    s += d[(cc * h + y) * w + x]
                                        * g[((kk * c + cc) * kr + r) * ks + q];
                                }
                            }
                        }
                    }
                    out[(kk * oh + oy) * ow + ox] = s;
                }
            }
        }
        out
    }

    /// Stride folding into channels and `(2G) g (2G)ᵀ`, as a compiler prepares a
    /// Winograd layer: returns the extended cube and the 4x4 tiles. `d` is the padded
    /// input `[c][y][x]` (`w x h`), `g` the `[k][c][R][S]` kernels with
    /// `ceil(R / sy) = ceil(S / sx) = 3`; `c4` the channels rounded up to 4.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        d: &[i64],
        (w, h): (usize, usize),
        g: &[i64],
        (k, c, kr, ks): (usize, usize, usize, usize),
        (sx, sy): (usize, usize),
        c4: usize,
    ) -> (Vec<i64>, (usize, usize, usize), Vec<i64>) {
        let (ew, eh, ec) = (w / sx, h / sy, c4 * sx * sy);
        let mut e = vec![0i64; ec * eh * ew];
        let mut gt = vec![0i64; k * ec * 9];
        for ry in 0..sy {
            for rx in 0..sx {
                for cc in 0..c {
                    let ch = (ry * sx + rx) * c4 + cc;
                    for y in 0..eh {
                        for x in 0..ew {
                            e[(ch * eh + y) * ew + x] = d[(cc * h + y * sy + ry) * w + x * sx + rx];
                        }
                    }
                    for kk in 0..k {
                        for r in 0..3 {
                            for q in 0..3 {
                                let (rr, qq) = (r * sy + ry, q * sx + rx);
                                if rr < kr && qq < ks {
                                    gt[((kk * ec + ch) * 3 + r) * 3 + q] =
                                        g[((kk * c + cc) * kr + rr) * ks + qq];
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut u = vec![0i64; k * ec * 16];
        for kc in 0..k * ec {
            for i in 0..4 {
                for j in 0..4 {
                    let mut v = 0;
                    for a in 0..3 {
                        for b in 0..3 {
                            v += G2[i][a] * gt[kc * 9 + a * 3 + b] * G2[j][b];
                        }
                    }
                    u[kc * 16 + i * 4 + j] = v;
                }
            }
        }
        (e, (ew, eh, ec), u)
    }

    /// With integer data and weights whose transform is exact, the hardware's
    /// Winograd result equals direct convolution:
    /// - the scaled transform `(2G) g (2G)ᵀ` is an integer tile, the same for the
    ///   hardware as for exact arithmetic, and gives 4x the convolution, which the
    ///   CACC truncation by 2 divides exactly (a multiple of 4 has no rounding);
    /// - `Bᵀ d B` only adds and subtracts, so it is exact while it does not saturate:
    ///   |d| <= 31 keeps the int8 PRA (4 terms) inside int8, with `PRA_TRUNCATE` 0;
    /// - the int8/int16 MAC cells and CACC hold the sums without wrapping (checked in
    ///   the module notes), and `Aᵀ (U ⊙ V) A` over the channels is the convolution;
    /// - fp16: the PRA and the products are exact only when no product is shifted out
    ///   of the MAC's block alignment; with every non-zero operand in [2, 32) (even
    ///   data, weights from even kernels) all lanes share the coarse exponent 4, the
    ///   alignment shift is 0, and the fp48 accumulator adds small integers exactly.
    #[test]
    fn exact_transforms_equal_direct_convolution() {
        let mut r = Lcg(7);
        type Case = (
            Precision,
            usize,
            usize,
            usize,
            usize,
            usize,
            usize,
            (usize, usize),
        );
        let cases: [Case; 6] = [
            // (prec, w, h, c, k, stride, kernel, pads)
            (Precision::Int8, 8, 8, 6, 3, 1, 3, (1, 1)),
            (Precision::Int8, 6, 9, 5, 2, 2, 5, (2, 2)),
            (Precision::Int16, 9, 7, 7, 4, 1, 3, (1, 0)),
            (Precision::Int16, 10, 6, 3, 3, 2, 6, (2, 1)),
            (Precision::Fp16, 8, 5, 6, 3, 1, 3, (1, 1)),
            (Precision::Fp16, 7, 8, 3, 2, 2, 5, (0, 2)),
        ];
        for (i, &(prec, w, h, c, k, st, ks, (pl, pt))) in cases.iter().enumerate() {
            // Output of the direct convolution, rounded up to 4; padded input sized
            // for the extended cube (output + 4 per direction) at this stride.
            let ow = ((w + 2 * pl - ks) / st + 1).next_multiple_of(4);
            let oh = ((h + 2 * pt - ks) / st + 1).next_multiple_of(4);
            let (pw, ph) = ((ow + 4) * st, (oh + 4) * st);
            let pad = match prec {
                Precision::Fp16 => 2,
                _ => -3,
            };
            let dv = |r: &mut Lcg| -> i64 {
                i64::from(match prec {
                    Precision::Int8 => r.range(-31, 31),
                    Precision::Int16 => r.range(-2000, 2000),
                    Precision::Fp16 => 2 * r.range(-3, 3),
                })
            };
            let gv = |r: &mut Lcg| -> i64 {
                i64::from(match prec {
                    Precision::Int8 => r.range(-14, 14),
                    Precision::Int16 => r.range(-300, 300),
                    Precision::Fp16 => 2 * r.range(-1, 1),
                })
            };
            let mut d = vec![pad; c * ph * pw];
            for cc in 0..c {
                for y in 0..h {
                    for x in 0..w {
                        d[(cc * ph + y + pt) * pw + x + pl] = dv(&mut r);
                    }
                }
            }
            let g: Vec<i64> = (0..k * c * ks * ks).map(|_| gv(&mut r)).collect();
            let c4 = c.next_multiple_of(4);
            let (e, (ew, eh, ec), u) = prepare(&d, (pw, ph), &g, (k, c, ks, ks), (st, st), c4);
            let geom = Geom {
                in_w: ew,
                in_h: eh,
                in_c: ec,
                out_w: ow,
                out_h: oh,
                k,
                pra_truncate: 0,
            };
            let enc = |v: i64| -> i32 {
                if prec == Precision::Fp16 {
                    i32::from(crate::fp::int_to_f16(v))
                } else {
                    v as i32
                }
            };
            let input = InputCube {
                w: ew,
                h: eh,
                c: ec,
                batches: 1,
                data: e.iter().map(|&v| enc(v)).collect(),
            };
            let wt = Weights {
                k,
                c: ec,
                r: 4,
                s: 4,
                data: u.iter().map(|&v| enc(v)).collect(),
            };
            let want = direct(&d, (pw, ph), &g, (k, c, ks, ks), (st, st), (ow, oh));
            let got = conv(&geom, prec, &input, &wt, 2).unwrap();
            let got: Vec<i64> = match prec {
                Precision::Fp16 => got
                    .data
                    .iter()
                    .map(|&b| {
                        let f = f64::from(f32::from_bits(b as u32));
                        assert_eq!(f, f.trunc());
                        f as i64 / 4
                    })
                    .collect(),
                _ => got.data,
            };
            assert_eq!(got, want, "case {i}");
            assert!(want.iter().any(|&v| v != 0));
        }
    }

    /// One Winograd layer through the whole platform: input cube and weight tiles in
    /// DRAM in the hardware layouts, CDMA/CSC/CMAC/CACC/SDP programmed over the CSB the
    /// way the firmware does (`nvdla/sw` `conv.c`: CDMA padding and stride, CSC's
    /// extended sizes and 4x4 kernels), SDP in Winograd output mode writing int8/int16
    /// or fp16. Returns the SDP output `[k][y][x]` (values, fp16 as numbers) and the
    /// direct convolution of the same layer (x4 for fp16, see
    /// `exact_transforms_equal_direct_convolution`).
    #[allow(clippy::type_complexity)]
    fn through_the_platform(
        prec: Precision,
        (w, h, c, k): (usize, usize, usize, usize),
        (st, ks, pl, pt): (usize, usize, usize, usize),
        pad: i64,
        seed: u64,
        cfg: crate::HwConfig,
        tweak: &[(Reg, u32)],
    ) -> Result<(Vec<i64>, Vec<i64>), String> {
        use crate::engines::conv::cdma::{winograd_weight_offset, WeightGeom, WinoInput};
        use crate::engines::CubeLayout;
        use crate::mem::RamType;
        use crate::Vp;
        const IN: u64 = 0x8000_0000;
        const WT: u64 = 0x8100_0000;
        const OUT: u64 = 0x8200_0000;
        let mut r = Lcg(seed);
        let mut vp = Vp::new(cfg);
        let (p, bpe) = match prec {
            Precision::Int8 => (0u32, 1usize),
            Precision::Int16 => (1, 2),
            Precision::Fp16 => (2, 2),
        };
        let ow = ((w + 2 * pl - ks) / st + 1).next_multiple_of(4);
        let oh = ((h + 2 * pt - ks) / st + 1).next_multiple_of(4);
        let (ew, eh) = (ow + 4, oh + 4);
        let (pr, pb) = (ew * st - pl - w, eh * st - pt - h);
        let cpad = WinoInput::padded_channels(c, prec, cfg.hw.memory_atomic);
        let ec = cpad * st * st;
        let (dlim, glim, even) = match prec {
            Precision::Int8 => (3, 1, 1),
            Precision::Int16 => (20, 8, 1),
            Precision::Fp16 => (3, 1, 2),
        };
        let d: Vec<i64> = (0..c * h * w)
            .map(|_| even * i64::from(r.range(-dlim, dlim)))
            .collect();
        let g: Vec<i64> = (0..k * c * ks * ks)
            .map(|_| even * i64::from(r.range(-glim, glim)))
            .collect();
        let enc = |v: i64| -> i32 {
            if prec == Precision::Fp16 {
                i32::from(crate::fp::int_to_f16(v))
            } else {
                v as i32
            }
        };
        // Input in the feature layout (channels past `c` in the last atom are zero).
        let atom = cfg.hw.memory_atomic;
        let line = u64::from(atom) * w as u64;
        let layout = |base, w: usize, h: usize, c: usize| CubeLayout {
            ram: RamType::Dram,
            base,
            line_stride: u64::from(atom) * w as u64,
            surf_stride: u64::from(atom) * (w * h) as u64,
            w,
            h,
            c,
            prec,
            atom,
        };
        let dv: Vec<i32> = d.iter().map(|&v| enc(v)).collect();
        layout(IN, w, h, c)
            .write(&mut vp.mem, &dv)
            .map_err(|e| e.to_string())?;
        // Padded input for the reference and the compiler-side weight preparation.
        let (pw, ph) = (ew * st, eh * st);
        let mut pd = vec![pad; c * ph * pw];
        for cc in 0..c {
            for y in 0..h {
                for x in 0..w {
                    pd[(cc * ph + y + pt) * pw + x + pl] = d[(cc * h + y) * w + x];
                }
            }
        }
        let (_, _, u) = prepare(&pd, (pw, ph), &g, (k, c, ks, ks), (st, st), cpad);
        let wg = WeightGeom {
            k,
            c: ec,
            r: 4,
            s: 4,
            group: if prec == Precision::Int8 { 32 } else { 16 },
            block: SUPER,
            bpe,
            y_ext: 1,
        };
        let bytes = (k * wg.bytes_per_kernel()).next_multiple_of(128);
        // Written in the order of the compiler's `execWtTrnsOpsForWG`: kernel groups,
        // groups of 4 channels, kernels, tile rows, tile columns, channels.
        let mut wbuf = Vec::with_capacity(bytes);
        for kg in (0..k).step_by(wg.group) {
            for cg in (0..ec).step_by(4) {
                for kk in kg..(kg + wg.group).min(k) {
                    for i in 0..16 {
                        for ch in cg..cg + 4 {
                            let v = enc(u[(kk * ec + ch) * 16 + i]) as u16;
                            wbuf.extend_from_slice(&v.to_le_bytes()[..bpe]);
                        }
                    }
                }
            }
        }
        assert_eq!(wbuf.len(), k * wg.bytes_per_kernel());
        assert_eq!(
            winograd_weight_offset(&wg, k - 1, ec - 1, 3, 3),
            wbuf.len() - bpe
        );
        wbuf.resize(bytes, 0);
        vp.mem
            .write(RamType::Dram, WT, &wbuf)
            .map_err(|e| e.to_string())?;

        let entries = (ew * ec * bpe / 128) as u32;
        let per_bank = crate::engines::conv::cbuf_entries_per_bank(&cfg) as u32;
        let data_banks = (entries * eh as u32).div_ceil(per_bank);
        let bank = (data_banks - 1) | ((cfg.hw.cbuf_banks - data_banks - 1) << 16);
        let sz = |a: usize, b: usize| ((b as u32 - 1) << 16) | (a as u32 - 1);
        let misc = 1 | (p << 8) | (p << 12);
        let regs: &[(Reg, u32)] = &[
            (ids::cdma::D_MISC_CFG, misc),
            (ids::cdma::D_DATAIN_FORMAT, 0),
            (ids::cdma::D_DATAIN_SIZE_0, sz(w, h)),
            (ids::cdma::D_DATAIN_SIZE_1, c as u32 - 1),
            (ids::cdma::D_DATAIN_SIZE_EXT_0, sz(ew, eh)),
            (ids::cdma::D_DAIN_RAM_TYPE, 1),
            (ids::cdma::D_DAIN_ADDR_LOW_0, IN as u32),
            (ids::cdma::D_LINE_STRIDE, line as u32),
            (ids::cdma::D_SURF_STRIDE, (line * h as u64) as u32),
            (ids::cdma::D_DAIN_MAP, 0x1_0001),
            (ids::cdma::D_ENTRY_PER_SLICE, entries - 1),
            (ids::cdma::D_WEIGHT_SIZE_0, wg.bytes_per_kernel() as u32 - 1),
            (ids::cdma::D_WEIGHT_SIZE_1, k as u32 - 1),
            (ids::cdma::D_WEIGHT_RAM_TYPE, 1),
            (ids::cdma::D_WEIGHT_ADDR_LOW, WT as u32),
            (ids::cdma::D_WEIGHT_BYTES, bytes as u32),
            (ids::cdma::D_CONV_STRIDE, sz(st, st)),
            (
                ids::cdma::D_ZERO_PADDING,
                (pl | pr << 8 | pt << 16 | pb << 24) as u32,
            ),
            (ids::cdma::D_ZERO_PADDING_VALUE, enc(pad) as u32 & 0xffff),
            (ids::cdma::D_BANK, bank),
            (ids::csc::D_MISC_CFG, misc),
            (ids::csc::D_DATAIN_FORMAT, 0),
            (ids::csc::D_DATAIN_SIZE_EXT_0, sz(ew, eh)),
            (ids::csc::D_DATAIN_SIZE_EXT_1, ec as u32 - 1),
            (ids::csc::D_ENTRY_PER_SLICE, entries - 1),
            (ids::csc::D_WEIGHT_SIZE_EXT_0, sz(4, 4)),
            (
                ids::csc::D_WEIGHT_SIZE_EXT_1,
                ((k as u32 - 1) << 16) | (ec as u32 - 1),
            ),
            (ids::csc::D_WEIGHT_BYTES, bytes as u32),
            (ids::csc::D_DATAOUT_SIZE_0, sz(ow, oh)),
            (ids::csc::D_DATAOUT_SIZE_1, k as u32 - 1),
            (ids::csc::D_ATOMICS, (ow * oh) as u32 - 1),
            (ids::csc::D_RELEASE, eh as u32),
            (ids::csc::D_PRA_CFG, 0),
            (ids::csc::D_BANK, bank),
            (ids::cmac_a::D_MISC_CFG, 1 | (p << 12)),
            (ids::cmac_b::D_MISC_CFG, 1 | (p << 12)),
            (ids::cacc::D_MISC_CFG, 1 | (p << 12)),
            (ids::cacc::D_DATAOUT_SIZE_0, sz(ow, oh)),
            (ids::cacc::D_DATAOUT_SIZE_1, k as u32 - 1),
            // (2G) g (2G)ᵀ is 4x the kernel: the CACC truncation divides it back
            // (integers; fp16 delivers the x4 result).
            (ids::cacc::D_CLIP_CFG, 2),
            (ids::sdp::D_DATA_CUBE_WIDTH, ow as u32 - 1),
            (ids::sdp::D_DATA_CUBE_HEIGHT, oh as u32 - 1),
            (ids::sdp::D_DATA_CUBE_CHANNEL, k as u32 - 1),
            (ids::sdp::D_DST_BASE_ADDR_LOW, OUT as u32),
            (
                ids::sdp::D_DST_LINE_STRIDE,
                u64::from(atom) as u32 * ow as u32,
            ),
            (ids::sdp::D_DST_SURFACE_STRIDE, atom * (ow * oh) as u32),
            (ids::sdp::D_DP_BS_CFG, 1),
            (ids::sdp::D_DP_BN_CFG, 1),
            (ids::sdp::D_DP_EW_CFG, 1),
            (ids::sdp::D_FEATURE_MODE_CFG, 1 | 4),
            (ids::sdp::D_DST_DMA_CFG, 1),
            (ids::sdp::D_DATA_FORMAT, p | (p << 2)),
            (ids::sdp::D_CVT_SCALE, 1),
        ];
        for &(reg, v) in regs.iter().chain(tweak) {
            let a = vp
                .addr(reg)
                .ok_or_else(|| format!("no register {}+{:#x}", reg.unit(), reg.offset()))?;
            vp.csb_write(a, v);
        }
        for r in [
            ids::sdp::D_OP_ENABLE,
            ids::cacc::D_OP_ENABLE,
            ids::cmac_a::D_OP_ENABLE,
            ids::cmac_b::D_OP_ENABLE,
            ids::csc::D_OP_ENABLE,
            ids::cdma::D_OP_ENABLE,
        ] {
            let a = vp.addr(r).ok_or("no D_OP_ENABLE")?;
            vp.csb_write(a, 1);
        }
        if !vp.irq_pending() {
            return Err(match vp.fault() {
                Some(f) => format!("model fault: {:?}: {}", f.block, f.error),
                None => "no interrupt".into(),
            });
        }
        let out = layout(OUT, ow, oh, k)
            .read(&vp.mem)
            .map_err(|e| e.to_string())?;
        let out = out
            .iter()
            .map(|&v| match prec {
                Precision::Fp16 => FP16.to_f64(v as u64 & 0xffff) as i64,
                _ => i64::from(v),
            })
            .collect();
        let want = direct(&pd, (pw, ph), &g, (k, c, ks, ks), (st, st), (ow, oh));
        let want = want
            .into_iter()
            .map(|v| match prec {
                Precision::Int8 => v.clamp(-128, 127),
                Precision::Int16 => v.clamp(-32768, 32767),
                Precision::Fp16 => 4 * v,
            })
            .collect();
        Ok((out, want))
    }

    #[test]
    fn layers_through_the_platform_equal_direct_convolution() {
        let cases = [
            (Precision::Int8, (8, 7, 40, 3), (1, 3, 1, 1), -2, 11),
            (Precision::Int8, (9, 6, 33, 34), (2, 5, 2, 2), 1, 12),
            (Precision::Int16, (10, 6, 20, 5), (2, 5, 2, 1), 5, 13),
            (Precision::Int16, (6, 9, 16, 17), (1, 3, 0, 1), 0, 14),
            (Precision::Fp16, (7, 8, 5, 2), (1, 3, 1, 1), 2, 15),
            (Precision::Fp16, (11, 5, 3, 3), (2, 6, 2, 2), 0, 16),
        ];
        for (i, &(prec, dims, conv_cfg, pad, seed)) in cases.iter().enumerate() {
            let (got, want) = through_the_platform(
                prec,
                dims,
                conv_cfg,
                pad,
                seed,
                crate::HwConfig::new(&nvdla_hw::NV_FULL),
                &[],
            )
            .unwrap_or_else(|e| panic!("case {i}: {e}"));
            assert_eq!(got, want, "case {i} ({prec:?})");
            assert!(want.iter().filter(|&&v| v != 0).count() > want.len() / 2);
        }
    }

    #[test]
    fn bad_winograd_programming_faults_with_a_reason() {
        use crate::HwConfig;
        let run = |cfg: HwConfig, tweak: &[(Reg, u32)]| {
            through_the_platform(
                Precision::Int16,
                (8, 8, 16, 4),
                (1, 3, 1, 1),
                0,
                1,
                cfg,
                tweak,
            )
            .err()
            .unwrap_or_default()
        };
        // The layer: 8x8 outputs from a 12x12 extended input (pads 1, 3).
        type Tweak<'a> = &'a [(Reg, u32)];
        let cases: &[(Tweak, &str)] = &[
            (
                &[(ids::sdp::D_FEATURE_MODE_CFG, 1)],
                "Winograd output mode differs",
            ),
            (
                &[(ids::cdma::D_ZERO_PADDING, 1 | 2 << 8 | 1 << 16 | 3 << 24)],
                "multiple of 4",
            ),
            (&[(ids::csc::D_WEIGHT_SIZE_EXT_0, 2 | 2 << 16)], "4x4"),
            (
                &[
                    (ids::csc::D_DATAOUT_SIZE_0, 9 | 9 << 16),
                    (ids::cacc::D_DATAOUT_SIZE_0, 9 | 9 << 16),
                ],
                "multiple of 4",
            ),
            (
                &[
                    (ids::csc::D_DATAOUT_SIZE_0, 11 | 11 << 16),
                    (ids::cacc::D_DATAOUT_SIZE_0, 11 | 11 << 16),
                ],
                "extended input less 4",
            ),
            (&[(ids::csc::D_DATAIN_SIZE_EXT_1, 31)], "Winograd extension"),
            (
                &[(ids::cmac_b::D_MISC_CFG, 1 << 12)],
                "convolution mode differs",
            ),
            (
                &[
                    (ids::cdma::D_DATAIN_FORMAT, 1),
                    (ids::csc::D_DATAIN_FORMAT, 1),
                ],
                "feature input",
            ),
            (&[(ids::cdma::D_ENTRY_PER_SLICE, 5)], "ENTRY_PER_SLICE"),
            // SDP reading memory (its RDMA enabled) in Winograd output mode.
            (
                &[
                    (ids::sdp::D_FEATURE_MODE_CFG, 4),
                    (ids::sdp_rdma::D_OP_ENABLE, 1),
                ],
                "on the fly",
            ),
        ];
        for (tweak, want) in cases {
            let e = run(HwConfig::new(&nvdla_hw::NV_FULL), tweak);
            assert!(e.contains(want), "{tweak:?}: {e:?}");
        }
        // The programming is valid without the tweaks, and nv_small has no Winograd.
        assert_eq!(run(HwConfig::new(&nvdla_hw::NV_FULL), &[]), "");
        assert!(run(HwConfig::new(&nvdla_hw::NV_SMALL), &[]).contains("no Winograd"));
    }

    /// A valid Winograd layer with one or two of its registers overwritten by random
    /// values (whole words, single bit flips, small integers): every run ends in an
    /// interrupt or a fault, never a panic, and a run that completes still writes the
    /// output surface it was programmed with.
    #[test]
    fn mutated_winograd_programming_never_panics() {
        const REGS: &[Reg] = &[
            ids::cacc::D_DATAOUT_SIZE_0,
            ids::cacc::D_DATAOUT_SIZE_1,
            ids::cacc::D_MISC_CFG,
            ids::cacc::D_CLIP_CFG,
            ids::cdma::D_BANK,
            ids::cdma::D_CONV_STRIDE,
            ids::cdma::D_ZERO_PADDING,
            ids::cdma::D_DAIN_MAP,
            ids::cdma::D_DATAIN_FORMAT,
            ids::cdma::D_DATAIN_SIZE_0,
            ids::cdma::D_DATAIN_SIZE_1,
            ids::cdma::D_DATAIN_SIZE_EXT_0,
            ids::cdma::D_ENTRY_PER_SLICE,
            ids::cdma::D_LINE_STRIDE,
            ids::cdma::D_MISC_CFG,
            ids::cdma::D_SURF_STRIDE,
            ids::cdma::D_WEIGHT_BYTES,
            ids::cdma::D_WEIGHT_SIZE_0,
            ids::cdma::D_WEIGHT_SIZE_1,
            ids::cdma::D_ZERO_PADDING_VALUE,
            ids::cmac_a::D_MISC_CFG,
            ids::cmac_b::D_MISC_CFG,
            ids::csc::D_ATOMICS,
            ids::csc::D_BANK,
            ids::csc::D_DATAIN_FORMAT,
            ids::csc::D_DATAIN_SIZE_EXT_0,
            ids::csc::D_DATAIN_SIZE_EXT_1,
            ids::csc::D_DATAOUT_SIZE_0,
            ids::csc::D_DATAOUT_SIZE_1,
            ids::csc::D_ENTRY_PER_SLICE,
            ids::csc::D_MISC_CFG,
            ids::csc::D_PRA_CFG,
            ids::csc::D_RELEASE,
            ids::csc::D_WEIGHT_BYTES,
            ids::csc::D_WEIGHT_SIZE_EXT_0,
            ids::csc::D_WEIGHT_SIZE_EXT_1,
            ids::sdp::D_FEATURE_MODE_CFG,
            ids::sdp::D_DATA_CUBE_WIDTH,
            ids::sdp::D_DATA_CUBE_HEIGHT,
            ids::sdp::D_DATA_CUBE_CHANNEL,
        ];
        let mut r = Lcg(0x3170);
        let (mut completed, mut faulted) = (0, 0);
        for it in 0..2000 {
            let prec = [Precision::Int8, Precision::Int16, Precision::Fp16][it % 3];
            let mut tweak = Vec::new();
            for _ in 0..1 + it % 2 {
                let reg = REGS[r.next() as usize % REGS.len()];
                let v = match r.next() % 3 {
                    0 => r.next(),
                    1 => 1 << (r.next() % 32),
                    _ => r.next() % 64,
                };
                tweak.push((reg, v));
            }
            let run = std::panic::catch_unwind(|| {
                through_the_platform(
                    prec,
                    (8, 6, 12, 3),
                    (1, 3, 1, 1),
                    1,
                    it as u64,
                    crate::HwConfig::new(&nvdla_hw::NV_FULL),
                    &tweak,
                )
            });
            match run {
                Ok(Ok(_)) => completed += 1,
                Ok(Err(_)) => faulted += 1,
                Err(_) => panic!("iteration {it}: {prec:?} with {tweak:?} panicked"),
            }
        }
        // Both outcomes occur: the mutations reach the checks and the computation.
        eprintln!("{completed} completed, {faulted} faulted");
        assert!(completed > 20 && faulted > 20, "{completed} {faulted}");
    }

    /// Compares the PRA with vectors from the C model's `NV_NVDLA_CSC_pra_cell` when
    /// `NVDLA_VP_CSC_PRA_VECTORS` names such a file: per line the precision (0 int8,
    /// 1 int16, 2 fp16), `PRA_TRUNCATE`, the 16 input and the 16 output elements in hex
    /// (int8 sign-extended to 16 bits). Skipped otherwise.
    #[test]
    fn pra_matches_c_model_vectors() {
        let Ok(path) = std::env::var("NVDLA_VP_CSC_PRA_VECTORS") else {
            eprintln!("skipping: NVDLA_VP_CSC_PRA_VECTORS not set");
            return;
        };
        let text = std::fs::read_to_string(path).unwrap();
        let (mut n, mut bad) = (0, 0);
        for line in text.lines() {
            let f: Vec<u32> = line
                .split_whitespace()
                .map(|t| u32::from_str_radix(t, 16).unwrap())
                .collect();
            let (prec, trunc) = (f[0], f[1]);
            let input: [u16; 16] = std::array::from_fn(|i| f[2 + i] as u16);
            let want: [u16; 16] = std::array::from_fn(|i| f[18 + i] as u16);
            let got = match prec {
                2 => pra_fp16(&input),
                _ => {
                    let bits = if prec == 0 { 8 } else { 16 };
                    pra_int(&input.map(|v| i32::from(v as i16)), trunc, bits).map(|v| v as u16)
                }
            };
            n += 1;
            if got != want {
                bad += 1;
                if bad <= 5 {
                    eprintln!("mismatch: {line}\n  model {got:04x?}");
                }
            }
        }
        eprintln!("{n} PRA vectors, {bad} mismatches");
        assert!(n > 0);
        assert_eq!(bad, 0);
    }

    /// Compares the MAC operations with vectors from the C model's MAC cell
    /// (`NvdlaMacCell::calculation_int8/int16/fp16` in Winograd mode) when
    /// `NVDLA_VP_CMAC_WINO_VECTORS` names such a file: per line the precision, the 64
    /// data lanes, the weight lanes (int8: two kernels of 64) and the results in hex
    /// (int8: 8 values of 22 bits, kernel 0 at even indexes; int16/fp16: 4 values of 44
    /// bits, fp16 as exponent bits 43..38 and mantissa 37..0). Skipped otherwise.
    #[test]
    fn mac_matches_c_model_vectors() {
        let Ok(path) = std::env::var("NVDLA_VP_CMAC_WINO_VECTORS") else {
            eprintln!("skipping: NVDLA_VP_CMAC_WINO_VECTORS not set");
            return;
        };
        let text = std::fs::read_to_string(path).unwrap();
        let sx = |v: u64, bits: u32| ((v << (64 - bits)) as i64) >> (64 - bits);
        let (mut n, mut bad) = (0, 0);
        for line in text.lines() {
            let f: Vec<u64> = line
                .split_whitespace()
                .map(|t| u64::from_str_radix(t, 16).unwrap())
                .collect();
            let d: Vec<u16> = f[1..65].iter().map(|&v| v as u16).collect();
            let ok = match f[0] {
                0 => {
                    let i8v = |v: &u64| i32::from(*v as u8 as i8);
                    let dl: Vec<i32> = d.iter().map(|&v| i32::from(v as u8 as i8)).collect();
                    let w0: Vec<i32> = f[65..129].iter().map(i8v).collect();
                    let w1: Vec<i32> = f[129..193].iter().map(i8v).collect();
                    let r: Vec<i64> = f[193..201].iter().map(|&v| sx(v, 22)).collect();
                    let (a, b) = (mac_int(&dl, &w0), mac_int(&dl, &w1));
                    (0..4).all(|j| a[j] == r[2 * j] && b[j] == r[2 * j + 1])
                }
                1 => {
                    let dl: Vec<i32> = d.iter().map(|&v| i32::from(v as i16)).collect();
                    let wl: Vec<i32> = f[65..129].iter().map(|&v| i32::from(v as i16)).collect();
                    let r: Vec<i64> = f[129..133].iter().map(|&v| sx(v, 44)).collect();
                    mac_int(&dl, &wl).to_vec() == r
                }
                _ => {
                    let w: Vec<u16> = f[65..129].iter().map(|&v| v as u16).collect();
                    let dl: Vec<F16Lane> = d.iter().map(|&h| F16Lane::decode(h)).collect();
                    let wl: Vec<F16Lane> = w.iter().map(|&h| F16Lane::decode(h)).collect();
                    let got = mac_fp16(&dl, &wl, block_nan(&d, &w));
                    got.iter().zip(&f[129..133]).all(|(g, &r)| {
                        u64::from(g.exp) == r >> 38 && g.mant == sx(r & ((1 << 38) - 1), 38)
                    })
                }
            };
            n += 1;
            if !ok {
                bad += 1;
                if bad <= 5 {
                    eprintln!("mismatch: {line}");
                }
            }
        }
        eprintln!("{n} Winograd MAC vectors, {bad} mismatches");
        assert!(n > 0);
        assert_eq!(bad, 0);
    }
}
