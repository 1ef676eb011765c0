//! CSC + CMAC + CACC: the convolution itself, on the cubes CDMA produced.
//!
//! CSC walks, for every output position and kernel, a sequence of MAC operations: for
//! each block of atomic-C channels, for each kernel position (row-major), one block of
//! data against one block of weights (image input with post-extension packs several
//! kernel rows into one operation). CACC adds the operation results in that order.
//!
//! Integer results do not depend on the order (products and block sums are exact, and
//! the 48-bit accumulator cannot saturate unless the worst case exceeds 2^47, which
//! [`conv`] checks before taking a fast path). The fast path lays the input out as
//! padded per-channel planes and accumulates whole output rows with a scalar weight, so
//! the inner loop is a contiguous multiply-add that LLVM vectorises. fp16 follows the
//! operation order exactly through [`super::arith`].

use super::arith::{
    acc48_add, block_nan, cacc_int_out, Blocks, Deferred, Fp48, MacF16, WeightColumns,
};
use super::cdma::{InputCube, Weights};
use crate::engines::{check_cube, par_ranges, EngineError, Precision};

/// Convolution geometry as CSC sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geom {
    /// Input width.
    pub in_w: usize,
    /// Input height.
    pub in_h: usize,
    /// Input channels (= kernel channels).
    pub in_c: usize,
    /// Output width.
    pub out_w: usize,
    /// Output height.
    pub out_h: usize,
    /// Kernels (= output channels).
    pub k: usize,
    /// Kernel height.
    pub r: usize,
    /// Kernel width.
    pub s: usize,
    /// Stride x.
    pub sx: usize,
    /// Stride y.
    pub sy: usize,
    /// Dilation x.
    pub dx: usize,
    /// Dilation y.
    pub dy: usize,
    /// Left padding.
    pub pl: usize,
    /// Top padding.
    pub pt: usize,
    /// Padding element (signed value for integers, raw bits for fp16).
    pub pad: i32,
    /// Lanes of one MAC operation (atomic C).
    pub lanes: usize,
    /// Kernel rows per MAC operation (image post-extension; 1 otherwise).
    pub y_ext: usize,
}

/// CACC output of all batches: `[batch][k][y][x]`, 32-bit values (int) or fp32 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccOut {
    /// Elements.
    pub data: Vec<i64>,
    /// Results that saturated in the integer truncation.
    pub saturated: u32,
}

/// Largest layer the model computes (about a minute of work); larger valid programming
/// is refused with [`EngineError::Unsupported`] rather than stalling the platform.
pub const MAX_MACS: u64 = 1 << 38;

/// Largest decoded fp16 input (in lanes) the convolution keeps for a layer.
const MAX_PLANE_LANES: usize = 1 << 24;

/// fp16 blocks computed before their deferred Booth lanes are resolved: a chunk of
/// kernels whose weights (under 0.5 MB on the AVX-512 layout) stay in the L2 cache while
/// a row of outputs uses them.
const CHUNK_BLOCKS: usize = 2048;

#[path = "compute_rows.rs"]
mod rows;

/// One channel run of a MAC operation: kernel position and channels `c0..c0 + n`.
#[derive(Debug, Clone, Copy)]
struct Seg {
    r: usize,
    s: usize,
    c0: usize,
    n: usize,
}

/// The MAC operations of one output in CACC order; each is a list of segments whose
/// lanes are taken in order.
fn ops(g: &Geom) -> Vec<Vec<Seg>> {
    let mut v = Vec::new();
    if g.y_ext > 1 {
        for op in 0..g.r.div_ceil(g.y_ext) {
            let segs = (0..g.y_ext)
                .map(|ii| op * g.y_ext + ii)
                .filter(|&r| r < g.r)
                .map(|r| Seg {
                    r,
                    s: 0,
                    c0: 0,
                    n: g.in_c,
                })
                .collect();
            v.push(segs);
        }
        return v;
    }
    for cb in 0..g.in_c.div_ceil(g.lanes) {
        let c0 = cb * g.lanes;
        let n = g.lanes.min(g.in_c - c0);
        for r in 0..g.r {
            for s in 0..g.s {
                v.push(vec![Seg { r, s, c0, n }]);
            }
        }
    }
    v
}

/// Runs the convolution of every batch.
pub fn conv(
    g: &Geom,
    prec: Precision,
    input: &InputCube,
    w: &Weights,
    truncate: u32,
) -> Result<AccOut, EngineError> {
    check_cube("CACC", g.out_w, g.out_h, g.k.saturating_mul(input.batches))?;
    let macs = [g.out_w, g.out_h, g.k, input.batches, g.in_c, g.r, g.s]
        .iter()
        .try_fold(1u64, |a, &v| a.checked_mul(v as u64));
    if macs.is_none_or(|m| m > MAX_MACS) {
        return Err(EngineError::Unsupported {
            block: "CSC",
            msg: format!("layer exceeds the model's limit of {MAX_MACS} multiply-accumulates"),
        });
    }
    if prec == Precision::Fp16 {
        if let Some(out) = rows::conv(g, input, w, MAX_PLANE_LANES, rows::CHUNK_BYTES) {
            return Ok(out);
        }
        return conv_fp16(g, input, w, MAX_PLANE_LANES, CHUNK_BLOCKS);
    }
    let mut data = conv_int(g, input, w)?;
    let counts = crate::engines::par_chunks(
        &mut data,
        crate::engines::PARALLEL_ELEMENTS,
        #[inline(always)]
        |_, part| {
            let mut saturated = 0u32;
            for a in part {
                let (v, s) = cacc_int_out(*a, truncate);
                saturated += u32::from(s);
                *a = v;
            }
            saturated
        },
    );
    let saturated = counts.into_iter().fold(0u32, u32::saturating_add);
    Ok(AccOut { data, saturated })
}

/// `max|data|` (with the padding value) and `max|weight|` of a layer.
fn int_magnitudes(g: &Geom, input: &InputCube, w: &Weights) -> (u32, u32) {
    let max_abs = |v: &[i32]| {
        crate::engines::par_read_chunks(
            v,
            crate::engines::PARALLEL_ELEMENTS,
            #[inline(always)]
            |_, part| part.iter().fold(0u32, |m, x| m.max(x.unsigned_abs())),
        )
        .into_iter()
        .max()
        .unwrap_or(0)
    };
    (
        max_abs(&input.data).max(g.pad.unsigned_abs()),
        max_abs(&w.data),
    )
}

/// `max|data| · max|weight| · C·R·S`: no partial sum of an output is larger.
fn int_bound(g: &Geom, max_data: u32, max_weight: u32) -> u128 {
    u128::from(max_data) * u128::from(max_weight) * (g.in_c * g.r * g.s) as u128
}

/// CACC's integer sums before truncation: on the host's SIMD kernels where every
/// partial sum fits in 32 bits ([`super::int_simd`]), else [`conv_int_portable`].
fn conv_int(g: &Geom, input: &InputCube, w: &Weights) -> Result<Vec<i64>, EngineError> {
    let (md, mw) = int_magnitudes(g, input, w);
    if int_bound(g, md, mw) < (1 << 31) && super::int_simd::applies(g, md, mw) {
        if let Some(v) = super::int_simd::conv(g, input, w) {
            return Ok(v);
        }
    }
    conv_int_portable(g, input, w)
}

/// CACC's integer sums in portable loops: 32-bit or 64-bit lanes where the bound allows
/// any order, else in CACC order with the saturating 48-bit accumulator.
pub(super) fn conv_int_portable(
    g: &Geom,
    input: &InputCube,
    w: &Weights,
) -> Result<Vec<i64>, EngineError> {
    let (md, mw) = int_magnitudes(g, input, w);
    let bound = int_bound(g, md, mw);
    Ok(if bound < (1 << 31) {
        conv_int_planes::<i32>(g, input, w)?
    } else if bound < (1 << 47) {
        conv_int_planes::<i64>(g, input, w)?
    } else {
        conv_int_ordered(g, input, w)
    })
}

/// Element type of the fast integer path.
trait AccT:
    Copy + Default + std::ops::AddAssign + std::ops::Mul<Output = Self> + From<i32> + Into<i64>
{
}
impl AccT for i32 {}
impl AccT for i64 {}

/// Padded input planes: `[b][c][y][x]` of `hp x wp`, input at `(pt, pl)`.
fn padded<T: AccT>(g: &Geom, input: &InputCube) -> Result<(Vec<T>, usize, usize), EngineError> {
    let hp = (g.out_h - 1) * g.sy + (g.r - 1) * g.dy + 1;
    let wp = (g.out_w - 1) * g.sx + (g.s - 1) * g.dx + 1;
    check_cube("CSC", wp, hp, g.in_c.saturating_mul(input.batches))?;
    let pad = T::from(g.pad);
    let mut p = vec![pad; input.batches * g.in_c * hp * wp];
    for b in 0..input.batches {
        for c in 0..g.in_c {
            let src = &input.data[((b * g.in_c + c) * g.in_h) * g.in_w..][..g.in_h * g.in_w];
            let dst = &mut p[((b * g.in_c + c) * hp) * wp..][..hp * wp];
            // Input columns inside the plane; none when the left padding covers it all.
            let n = g.in_w.min(wp.saturating_sub(g.pl));
            if n == 0 {
                continue;
            }
            for y in 0..g.in_h.min(hp.saturating_sub(g.pt)) {
                let row = &src[y * g.in_w..(y + 1) * g.in_w];
                let d = &mut dst[(y + g.pt) * wp + g.pl..][..n];
                for (o, &v) in d.iter_mut().zip(&row[..n]) {
                    *o = T::from(v);
                }
            }
        }
    }
    Ok((p, hp, wp))
}

fn conv_int_planes<T: AccT>(
    g: &Geom,
    input: &InputCube,
    w: &Weights,
) -> Result<Vec<i64>, EngineError> {
    let (planes, hp, wp) = padded::<T>(g, input)?;
    let (ow, oh) = (g.out_w, g.out_h);
    let mut out = vec![0i64; input.batches * g.k * oh * ow];
    let mut acc = vec![T::default(); oh * ow];
    for b in 0..input.batches {
        for k in 0..g.k {
            acc.fill(T::default());
            for c in 0..g.in_c {
                let plane = &planes[((b * g.in_c + c) * hp) * wp..][..hp * wp];
                for r in 0..g.r {
                    for s in 0..g.s {
                        let wv = w.data[((k * g.in_c + c) * g.r + r) * g.s + s];
                        if wv == 0 {
                            continue;
                        }
                        let wv = T::from(wv);
                        for oy in 0..oh {
                            let start = (oy * g.sy + r * g.dy) * wp + s * g.dx;
                            let dst = &mut acc[oy * ow..(oy + 1) * ow];
                            if g.sx == 1 {
                                let src = &plane[start..start + ow];
                                for (a, &x) in dst.iter_mut().zip(src) {
                                    *a += wv * x;
                                }
                            } else {
                                let src = plane[start..].iter().step_by(g.sx);
                                for (a, &x) in dst.iter_mut().zip(src) {
                                    *a += wv * x;
                                }
                            }
                        }
                    }
                }
            }
            let o = &mut out[((b * g.k + k) * oh) * ow..][..oh * ow];
            for (d, &a) in o.iter_mut().zip(&acc) {
                *d = a.into();
            }
        }
    }
    Ok(out)
}

/// Data element at input `(x, y)` (signed coordinates), channel `c`, batch `b`.
#[inline]
fn data_at(g: &Geom, input: &InputCube, b: usize, c: usize, y: isize, x: isize) -> i32 {
    if y < 0 || x < 0 || y >= g.in_h as isize || x >= g.in_w as isize {
        return g.pad;
    }
    input.data[((b * g.in_c + c) * g.in_h + y as usize) * g.in_w + x as usize]
}

/// The fp16 bit patterns of operation `op`'s data block for output `(ox, oy)` of batch
/// `b`, into `raw`.
fn op_block(
    g: &Geom,
    input: &InputCube,
    b: usize,
    op: &[Seg],
    (ox, oy): (usize, usize),
    raw: &mut Vec<u16>,
) {
    raw.clear();
    for seg in op {
        let (x, y) = in_coord(g, ox, oy, seg);
        for c in seg.c0..seg.c0 + seg.n {
            raw.push(data_at(g, input, b, c, y, x) as u16);
        }
    }
}

fn in_coord(g: &Geom, ox: usize, oy: usize, seg: &Seg) -> (isize, isize) {
    let x = (ox * g.sx + seg.s * g.dx) as isize - g.pl as isize;
    let y = (oy * g.sy + seg.r * g.dy) as isize - g.pt as isize;
    (x, y)
}

/// Integer convolution in CACC order with the saturating 48-bit accumulator.
fn conv_int_ordered(g: &Geom, input: &InputCube, w: &Weights) -> Vec<i64> {
    let ops = ops(g);
    let (ow, oh) = (g.out_w, g.out_h);
    let mut out = vec![0i64; input.batches * g.k * oh * ow];
    for b in 0..input.batches {
        for k in 0..g.k {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = 0i64;
                    for op in &ops {
                        let mut sum = 0i64;
                        for seg in op {
                            let (x, y) = in_coord(g, ox, oy, seg);
                            for c in seg.c0..seg.c0 + seg.n {
                                let d = data_at(g, input, b, c, y, x);
                                let wv = w.data[((k * g.in_c + c) * g.r + seg.r) * g.s + seg.s];
                                sum += i64::from(d) * i64::from(wv);
                            }
                        }
                        acc = acc48_add(acc, sum);
                    }
                    out[((b * g.k + k) * oh + oy) * ow + ox] = acc;
                }
            }
        }
    }
    out
}

fn conv_fp16(
    g: &Geom,
    input: &InputCube,
    w: &Weights,
    max_plane_lanes: usize,
    chunk_blocks: usize,
) -> Result<AccOut, EngineError> {
    let ops = ops(g);
    let nops = ops.len();
    let (ow, oh) = (g.out_w, g.out_h);
    // Weight blocks of every (kernel, operation), decoded once per layer and stored
    // contiguously in that order (the order the kernels are computed in).
    let mut wblocks = Blocks::new(g.lanes);
    let mut wnan: Vec<Option<MacF16>> = Vec::with_capacity(g.k * nops);
    let mut raw: Vec<u16> = Vec::with_capacity(g.lanes);
    for k in 0..g.k {
        for op in &ops {
            raw.clear();
            for seg in op {
                for c in seg.c0..seg.c0 + seg.n {
                    raw.push(w.data[((k * g.in_c + c) * g.r + seg.r) * g.s + seg.s] as u16);
                }
            }
            wblocks.push_block(&raw);
            wnan.push(block_nan(&[], &raw));
        }
    }
    let any_wnan = wnan.iter().any(Option::is_some);
    // Layers of few channels: the weights as columns over the kernels, so that a data
    // block meets many kernels at once.
    let columns = WeightColumns::new(&wblocks, g.k, nops, g.in_c);
    // Direct convolution: the data block of an operation is one channel block at one
    // input position, so the padded input is decoded once into blocks per
    // (position, channel block) and operations refer to them by index. Image input
    // with post-extension gathers each operation's block per output position.
    // Planes cost about 22 bytes per lane: larger inputs take the per-position path.
    let hp = (oh - 1) * g.sy + (g.r - 1) * g.dy + 1;
    let wp = (ow - 1) * g.sx + (g.s - 1) * g.dx + 1;
    let ncb = g.in_c.div_ceil(g.lanes.max(1));
    let plane_lanes = [hp, wp, ncb, g.lanes.next_multiple_of(16)]
        .iter()
        .try_fold(1usize, |a, &v| a.checked_mul(v));
    let planes = g.y_ext == 1 && plane_lanes.is_some_and(|n| n <= max_plane_lanes);
    // Block index of each operation relative to the output position's block.
    let op_off: Vec<usize> = ops
        .iter()
        .map(|op| ((op[0].r * g.dy) * wp + op[0].s * g.dx) * ncb + op[0].c0 / g.lanes.max(1))
        .collect();
    let mut out = vec![0i64; input.batches * g.k * oh * ow];
    for b in 0..input.batches {
        let mut dplane = Blocks::new(g.lanes);
        let mut dplane_nan: Vec<Option<MacF16>> = Vec::new();
        if planes {
            for yp in 0..hp {
                for xp in 0..wp {
                    let (x, y) = (xp as isize - g.pl as isize, yp as isize - g.pt as isize);
                    for cb in 0..ncb {
                        let c0 = cb * g.lanes;
                        raw.clear();
                        for c in c0..(c0 + g.lanes).min(g.in_c) {
                            raw.push(data_at(g, input, b, c, y, x) as u16);
                        }
                        dplane.push_block(&raw);
                        dplane_nan.push(block_nan(&raw, &[]));
                    }
                }
            }
        }
        // Output rows in parallel; each output is independent and follows CACC order.
        let parts = par_ranges(oh, |rows| {
            let mut part = vec![0u32; rows.len() * ow * g.k];
            let mut raw: Vec<u16> = Vec::with_capacity(g.lanes);
            // Without planes: the data blocks of every operation of one output
            // position, decoded once and used by every kernel.
            let mut dblocks = Blocks::new(g.lanes);
            let mut dnans: Vec<Option<MacF16>> = vec![None; nops];
            let mut idx: Vec<usize> = (0..nops).collect();
            // Kernels per chunk of deferred blocks (`chunk_blocks`).
            let kchunk = (chunk_blocks / nops.max(1)).max(1);
            let mut deferred = Deferred::default();
            let (mut exps, mut sums) = (Vec::new(), Vec::new());
            let mut done: Vec<bool> = Vec::with_capacity(nops);
            // The blocks of a chunk of kernels at one output position first, with the
            // lanes that need the Booth multiplier deferred and resolved together; then
            // each kernel's accumulation in CACC order.
            let mut kernels =
                |src: &Blocks, idx: &[usize], ks: std::ops::Range<usize>, out: &mut [u32]| {
                    exps.clear();
                    sums.clear();
                    exps.resize(ks.len() * nops, 0);
                    sums.resize(ks.len() * nops, 0);
                    // Operations whose data block the weight columns took, for every
                    // kernel of the chunk at once.
                    done.clear();
                    done.extend(idx.iter().enumerate().map(|(oi, &i)| {
                        columns.as_ref().is_some_and(|cols| {
                            let at = (nops, oi);
                            cols.mac(src, i, oi, ks.clone(), at, (&mut exps, &mut sums))
                        })
                    }));
                    for k in ks.clone() {
                        for (oi, &i) in idx.iter().enumerate() {
                            if done[oi] {
                                continue;
                            }
                            let slot = (k - ks.start) * nops + oi;
                            let (e, s) = src.mac_deferred(
                                i,
                                &wblocks,
                                k * nops + oi,
                                slot as u32,
                                &mut deferred,
                            );
                            exps[slot] = e;
                            sums[slot] = s;
                        }
                    }
                    deferred.resolve(&mut sums);
                    for (k, (ke, ksum)) in
                        ks.zip(exps.chunks_exact(nops).zip(sums.chunks_exact(nops)))
                    {
                        // Exactly, in one sum, when no step of CACC's order can round.
                        let acc = Fp48::sum_exact(ke, ksum).unwrap_or_else(|| {
                            ke.iter().zip(ksum).fold(Fp48::default(), |acc, (&e, &s)| {
                                acc.accumulate(MacF16::from_sum(e, s))
                            })
                        });
                        out[k] = acc.to_f32_bits();
                    }
                };
            // One output's kernels with a NaN operand somewhere: block by block.
            let with_nans =
                |src: &Blocks, idx: &[usize], nans: &[Option<MacF16>], out: &mut [u32]| {
                    for (k, o) in out.iter_mut().enumerate() {
                        let mut acc = Fp48::default();
                        let wk = k * nops;
                        for (oi, (&i, dnan)) in idx.iter().zip(nans).enumerate() {
                            let r = match (wnan[wk + oi], *dnan) {
                                (Some(n), _) | (None, Some(n)) => n,
                                (None, None) => src.mac(i, &wblocks, wk + oi),
                            };
                            acc = acc.accumulate(r);
                        }
                        *o = acc.to_f32_bits();
                    }
                };
            // A row's results by position and kernel, then stored by kernel.
            let mut row = vec![0u32; ow * g.k];
            for (ri, oy) in rows.clone().enumerate() {
                if planes {
                    // Chunk by chunk of kernels over the whole row (the chunk's weights
                    // stay in cache), each position's blocks indexed in the planes.
                    let idx_at = |ox: usize, idx: &mut [usize]| {
                        let base = ((oy * g.sy) * wp + ox * g.sx) * ncb;
                        for (i, &off) in idx.iter_mut().zip(&op_off) {
                            *i = base + off;
                        }
                    };
                    let mut nan_at = vec![any_wnan; ow];
                    for (ox, nan) in nan_at.iter_mut().enumerate() {
                        idx_at(ox, &mut idx);
                        *nan |= idx.iter().any(|&i| dplane_nan[i].is_some());
                        if *nan {
                            for (dnan, &i) in dnans.iter_mut().zip(&idx) {
                                *dnan = dplane_nan[i];
                            }
                            with_nans(&dplane, &idx, &dnans, &mut row[ox * g.k..][..g.k]);
                        }
                    }
                    for ks in (0..g.k).step_by(kchunk) {
                        let ks = ks..(ks + kchunk).min(g.k);
                        for ox in (0..ow).filter(|&ox| !nan_at[ox]) {
                            idx_at(ox, &mut idx);
                            kernels(&dplane, &idx, ks.clone(), &mut row[ox * g.k..][..g.k]);
                        }
                    }
                } else {
                    for ox in 0..ow {
                        dblocks.clear();
                        for (op, dnan) in ops.iter().zip(&mut dnans) {
                            op_block(g, input, b, op, (ox, oy), &mut raw);
                            *dnan = block_nan(&raw, &[]);
                            dblocks.push_block(&raw);
                        }
                        let o = &mut row[ox * g.k..][..g.k];
                        if any_wnan || dnans.iter().any(Option::is_some) {
                            with_nans(&dblocks, &idx, &dnans, o);
                        } else {
                            for ks in (0..g.k).step_by(kchunk) {
                                kernels(&dblocks, &idx, ks..(ks + kchunk).min(g.k), o);
                            }
                        }
                    }
                }
                for ox in 0..ow {
                    for k in 0..g.k {
                        part[(k * rows.len() + ri) * ow + ox] = row[ox * g.k + k];
                    }
                }
            }
            (rows, part)
        });
        for (rows, part) in parts {
            let n = rows.len();
            for k in 0..g.k {
                for (ri, oy) in rows.clone().enumerate() {
                    let dst = &mut out[((b * g.k + k) * oh + oy) * ow..][..ow];
                    for (d, &v) in dst.iter_mut().zip(&part[(k * n + ri) * ow..][..ow]) {
                        *d = i64::from(v);
                    }
                }
            }
        }
    }
    Ok(AccOut {
        data: out,
        saturated: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> i32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as i32
    }

    fn geom(in_w: usize, in_h: usize, in_c: usize, k: usize, r: usize, s: usize) -> Geom {
        Geom {
            in_w,
            in_h,
            in_c,
            out_w: in_w,
            out_h: in_h,
            k,
            r,
            s,
            sx: 1,
            sy: 1,
            dx: 1,
            dy: 1,
            pl: r / 2,
            pt: s / 2,
            pad: 0,
            lanes: 64,
            y_ext: 1,
        }
    }

    /// Independent reference: direct 7-loop convolution in i64.
    fn reference(g: &Geom, input: &InputCube, w: &Weights) -> Vec<i64> {
        let mut out = vec![0i64; g.k * g.out_h * g.out_w];
        for k in 0..g.k {
            for oy in 0..g.out_h {
                for ox in 0..g.out_w {
                    let mut s = 0i64;
                    for c in 0..g.in_c {
                        for r in 0..g.r {
                            for q in 0..g.s {
                                let y = (oy * g.sy + r * g.dy) as i64 - g.pt as i64;
                                let x = (ox * g.sx + q * g.dx) as i64 - g.pl as i64;
                                let d =
                                    if y < 0 || x < 0 || y >= g.in_h as i64 || x >= g.in_w as i64 {
                                        g.pad
                                    } else {
                                        input.data[(c * g.in_h + y as usize) * g.in_w + x as usize]
                                    };
                                s += i64::from(d)
                                    * i64::from(w.data[((k * g.in_c + c) * g.r + r) * g.s + q]);
                            }
                        }
                    }
                    out[(k * g.out_h + oy) * g.out_w + ox] = s;
                }
            }
        }
        out
    }

    fn random_case(g: &Geom, bits: u32, seed: u64) -> (InputCube, Weights) {
        let mut s = seed;
        let m = 1 << (bits - 1);
        let input = InputCube {
            w: g.in_w,
            h: g.in_h,
            c: g.in_c,
            batches: 1,
            data: (0..g.in_w * g.in_h * g.in_c)
                .map(|_| lcg(&mut s).rem_euclid(2 * m) - m)
                .collect(),
        };
        let w = Weights {
            k: g.k,
            c: g.in_c,
            r: g.r,
            s: g.s,
            data: (0..g.k * g.in_c * g.r * g.s)
                .map(|_| lcg(&mut s).rem_euclid(2 * m) - m)
                .collect(),
        };
        (input, w)
    }

    #[test]
    fn int8_matches_reference_with_stride_dilation_padding() {
        let mut g = geom(9, 7, 70, 5, 3, 2);
        g.sx = 2;
        g.dy = 2;
        g.out_w = 5;
        g.out_h = 4;
        g.pad = -3;
        let (input, w) = random_case(&g, 8, 1);
        let want: Vec<i64> = reference(&g, &input, &w);
        let got = conv(&g, Precision::Int8, &input, &w, 0).unwrap();
        assert_eq!(got.data, want);
        // Truncation rounds half away from zero.
        let got = conv(&g, Precision::Int8, &input, &w, 3).unwrap();
        let want3: Vec<i64> = want
            .iter()
            .map(|&v| crate::arith::shr_round(v, 3))
            .collect();
        assert_eq!(got.data, want3);
    }

    /// Left or top padding past every tap the outputs read: they see only the pad value
    /// (fuzz `csb`: the padded-plane copy indexed past the plane's end).
    #[test]
    fn padding_beyond_the_window_gives_pad_values_only() {
        for (pl, pt) in [(5, 0), (0, 6), (7, 7), (2, 1)] {
            let mut g = geom(3, 3, 8, 2, 2, 2);
            (g.out_w, g.out_h, g.pl, g.pt, g.pad) = (2, 2, pl, pt, 3);
            let (input, w) = random_case(&g, 8, 9);
            let want = reference(&g, &input, &w);
            for prec in [Precision::Int8, Precision::Int16] {
                let got = conv(&g, prec, &input, &w, 0).unwrap();
                assert_eq!(got.data, want, "{pl} {pt} {prec:?}");
            }
        }
    }

    #[test]
    fn int16_matches_reference_and_saturates() {
        let g = geom(4, 3, 66, 3, 3, 3);
        let (input, w) = random_case(&g, 16, 2);
        let want = reference(&g, &input, &w);
        let got = conv(&g, Precision::Int16, &input, &w, 0).unwrap();
        let sat: Vec<i64> = want
            .iter()
            .map(|&v| v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)))
            .collect();
        assert_eq!(got.data, sat);
        assert_eq!(
            got.saturated as usize,
            want.iter().zip(&sat).filter(|(a, b)| a != b).count()
        );
        // The ordered path gives the same integers.
        assert_eq!(conv_int_ordered(&g, &input, &w), want);
    }

    /// The fp16 convolution as the hardware defines it, written directly: for each
    /// output and kernel, each MAC operation in CACC order on the Booth path
    /// (`mac_f16_block`), NaN markers as CMAC emits them.
    fn fp16_reference(g: &Geom, input: &InputCube, w: &Weights) -> Vec<i64> {
        use crate::engines::conv::arith::{block_nan, mac_f16_block};
        let mut out = vec![0i64; input.batches * g.k * g.out_h * g.out_w];
        for b in 0..input.batches {
            for k in 0..g.k {
                for oy in 0..g.out_h {
                    for ox in 0..g.out_w {
                        let mut acc = Fp48::default();
                        for op in ops(g) {
                            let (mut d, mut wt) = (Vec::new(), Vec::new());
                            for seg in &op {
                                let (x, y) = in_coord(g, ox, oy, seg);
                                for c in seg.c0..seg.c0 + seg.n {
                                    d.push(data_at(g, input, b, c, y, x) as u16);
                                    let wi = ((k * g.in_c + c) * g.r + seg.r) * g.s + seg.s;
                                    wt.push(w.data[wi] as u16);
                                }
                            }
                            let r = block_nan(&d, &wt).unwrap_or_else(|| mac_f16_block(&d, &wt));
                            acc = acc.accumulate(r);
                        }
                        let o = ((b * g.k + k) * g.out_h + oy) * g.out_w + ox;
                        out[o] = i64::from(acc.to_f32_bits());
                    }
                }
            }
        }
        out
    }

    #[test]
    fn fp16_matches_booth_path_random_geometries() {
        let mut s = 0xf16u64;
        let mut ext_cases = 0;
        let (mut rows_cases, mut nan_rows_cases) = (0, 0);
        for case in 0..80 {
            let r = 1 + (lcg(&mut s) % 3) as usize;
            let q = 1 + (lcg(&mut s) % 3) as usize;
            let in_c = [3, 8, 64, 70, 130][case % 5];
            let lanes = [64, 32, 8][case % 3];
            let mut g = geom(
                2 + (lcg(&mut s) % 6) as usize,
                2 + (lcg(&mut s) % 6) as usize,
                in_c,
                1 + (lcg(&mut s) % 4) as usize,
                r,
                q,
            );
            g.lanes = lanes;
            g.sx = 1 + (lcg(&mut s) % 2) as usize;
            g.sy = 1 + (lcg(&mut s) % 2) as usize;
            g.dx = 1 + (lcg(&mut s) % 2) as usize;
            g.dy = 1 + (lcg(&mut s) % 2) as usize;
            g.pl = (lcg(&mut s) % 2) as usize;
            g.pt = (lcg(&mut s) % 2) as usize;
            g.out_w = 1 + (g.in_w + 2 * g.pl).saturating_sub((q - 1) * g.dx + 1) / g.sx;
            g.out_h = 1 + (g.in_h + 2 * g.pt).saturating_sub((r - 1) * g.dy + 1) / g.sy;
            g.pad = [0, 0x3c00, 0xbc00, 0x0001][case % 4];
            if case % 4 == 3 && in_c * 4 <= lanes {
                // Image post-extension: several kernel rows per operation.
                g.y_ext = [2, 4][(case / 4) % 2];
                ext_cases += 1;
            }
            // Values spread over the exponent range, with zeros, subnormals, and in a
            // few cases NaN and infinity patterns.
            let val = |s: &mut u64| -> i32 {
                let x = lcg(s) as u32;
                let h = match x % 16 {
                    0 => 0,
                    1 => 0x8000,
                    2 => (x >> 8) & 0x83ff,
                    3 if case % 5 == 4 => 0x7c00 | ((x >> 8) & 0x83ff),
                    _ => {
                        let e = 8 + (x >> 4) % 16;
                        ((x >> 9) & 0x8000) | (e << 10) | ((x >> 12) & 0x3ff)
                    }
                };
                h as i32
            };
            let input = InputCube {
                w: g.in_w,
                h: g.in_h,
                c: g.in_c,
                batches: 1 + case % 2,
                data: (0..g.in_w * g.in_h * g.in_c * (1 + case % 2))
                    .map(|_| val(&mut s))
                    .collect(),
            };
            let w = Weights {
                k: g.k,
                c: g.in_c,
                r,
                s: q,
                data: (0..g.k * g.in_c * r * q).map(|_| val(&mut s)).collect(),
            };
            let want = fp16_reference(&g, &input, &w);
            let got = conv(&g, Precision::Fp16, &input, &w, 0).unwrap();
            assert_eq!(got.data, want, "case {case}: {g:?}");
            // The per-position data path (large inputs) too.
            let got = conv_fp16(&g, &input, &w, 0, CHUNK_BLOCKS).unwrap();
            assert_eq!(got.data, want, "case {case} without planes: {g:?}");
            // One kernel per chunk of deferred blocks.
            let got = conv_fp16(&g, &input, &w, usize::MAX, 1).unwrap();
            assert_eq!(got.data, want, "case {case}, chunks of one kernel: {g:?}");
            // The weight rows (AVX-512, more than SPARSE_LANES channels, no NaN weight):
            // per position and in chunks of one row of kernels too.
            for (planes, chunk) in [(usize::MAX, rows::CHUNK_BYTES), (0, 1)] {
                if let Some(got) = rows::conv(&g, &input, &w, planes, chunk) {
                    assert_eq!(got.data, want, "case {case} on weight rows: {g:?}");
                    rows_cases += 1;
                }
            }
            // NaN and infinity in the data only: the rows take them.
            if case % 5 == 4 {
                let finite = Weights {
                    data: w
                        .data
                        .iter()
                        .map(|&v| if v & 0x7c00 == 0x7c00 { 0x3c00 } else { v })
                        .collect(),
                    ..w.clone()
                };
                let want = fp16_reference(&g, &input, &finite);
                if let Some(got) = rows::conv(&g, &input, &finite, usize::MAX, 1) {
                    assert_eq!(
                        got.data, want,
                        "case {case} on weight rows with NaN data: {g:?}"
                    );
                    nan_rows_cases += 1;
                }
            }
        }
        assert!(ext_cases >= 5, "{ext_cases} post-extension cases");
        if super::super::arith::WeightRows::available() {
            assert!(
                rows_cases >= 40 && nan_rows_cases >= 5,
                "{rows_cases} {nan_rows_cases}"
            );
        }
    }

    #[test]
    fn fp16_small_integers_are_exact() {
        // Small integer-valued fp16 operands: every product and sum is exact in the
        // MAC and the fp48 accumulator, so the result equals the integer convolution.
        let g = geom(5, 4, 70, 3, 3, 3);
        let (input, w) = random_case(&g, 4, 3);
        let want = reference(&g, &input, &w);
        let to_h = |v: i32| crate::fp::int_to_f16(i64::from(v)) as i32;
        let hin = InputCube {
            data: input.data.iter().map(|&v| to_h(v)).collect(),
            ..input.clone()
        };
        let hw = Weights {
            data: w.data.iter().map(|&v| to_h(v)).collect(),
            ..w.clone()
        };
        let got = conv(&g, Precision::Fp16, &hin, &hw, 0).unwrap();
        let got: Vec<i64> = got
            .data
            .iter()
            .map(|&b| f32::from_bits(b as u32) as i64)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn fp16_close_to_float_reference() {
        let g = geom(4, 4, 64, 2, 3, 3);
        let mut s = 9u64;
        let f = |s: &mut u64| (lcg(s) % 2000) as f32 / 1000.0;
        let vals: Vec<f32> = (0..g.in_w * g.in_h * g.in_c).map(|_| f(&mut s)).collect();
        let wv: Vec<f32> = (0..g.k * g.in_c * 9).map(|_| f(&mut s) - 1.0).collect();
        let h = |v: f32| crate::fp::f32_to_f16(v.to_bits()) as i32;
        let back = |b: i32| f32::from_bits(crate::fp::f16_to_f32(b as u16));
        let input = InputCube {
            w: g.in_w,
            h: g.in_h,
            c: g.in_c,
            batches: 1,
            data: vals.iter().map(|&v| h(v)).collect(),
        };
        let w = Weights {
            k: g.k,
            c: g.in_c,
            r: 3,
            s: 3,
            data: wv.iter().map(|&v| h(v)).collect(),
        };
        let got = conv(&g, Precision::Fp16, &input, &w, 0).unwrap();
        for k in 0..g.k {
            for oy in 0..4 {
                for ox in 0..4 {
                    let mut want = 0f64;
                    for c in 0..g.in_c {
                        for r in 0..3 {
                            for q in 0..3 {
                                let y = oy as i64 + r as i64 - 1;
                                let x = ox as i64 + q as i64 - 1;
                                if y < 0 || x < 0 || y >= 4 || x >= 4 {
                                    continue;
                                }
                                let d = back(input.data[(c * 4 + y as usize) * 4 + x as usize]);
                                let wt = back(w.data[((k * g.in_c + c) * 3 + r) * 3 + q]);
                                want += f64::from(d) * f64::from(wt);
                            }
                        }
                    }
                    let v = f64::from(f32::from_bits(got.data[(k * 4 + oy) * 4 + ox] as u32));
                    assert!((v - want).abs() < 0.05, "k={k} ({ox},{oy}): {v} vs {want}");
                }
            }
        }
    }
}
