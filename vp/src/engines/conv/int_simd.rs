//! Integer convolution on the host's SIMD multiply-adds of 16-bit pairs (AVX-512 VNNI's
//! `vpdpwssd`, AVX2's `vpmaddwd`), for int8 and int16 layers whose every partial sum fits
//! in 32 bits.
//!
//! **Exactness.** [`super::compute::conv`] takes this path only when
//! `max|data| · max|weight| · C·R·S < 2^31`: then the exact sum of any subset of a
//! output's products is a 32-bit integer, so 32-bit lanes that add products in any order
//! give the hardware's result (CMAC's products and block sums are exact and CACC's 48-bit
//! accumulator does not saturate below 2^47). The kernels add with wrap-around; even an
//! intermediate wrap would cancel, since the final sum is in range. Operands must fit in
//! 16 bits (int8 and int16 elements do; a padding value outside that range takes the
//! portable path).
//!
//! **Layout.** The GEMM has no im2col. The padded input is split into `sx · sy` phase
//! planes (element `(y, x)` goes to phase `(y mod sy, x mod sx)` at `(y / sy, x / sx)`),
//! each of rows `wq` wide, with channels `2j` and `2j + 1` paired in one 32-bit word. Then
//! for every kernel tap `(r, s)` and channel pair, the inputs of consecutive outputs of a
//! row are consecutive words of one plane, and the outputs of a whole layer are the
//! "virtual" positions `oy · wq + ox` of the plane: every MAC step of an output tile is a
//! contiguous load at a per-step offset (`Plan::steps`). Positions with `ox >= out_w` are
//! computed and dropped (for a 3x3 convolution with padding 1, two columns of each row).
//! Kernels are packed in blocks of [`MR`] with each weight pair broadcast per step.
//!
//! Outputs are partitioned between threads by position tiles; every output is computed
//! whole by one thread, so results do not depend on the thread count.

use super::cdma::{InputCube, Weights};
use super::compute::Geom;
use crate::engines::{par_chunks, par_ranges, zeroed};

/// Integer convolution kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntKernel {
    /// The portable loops of [`super::compute`] (no SIMD kernel).
    Portable,
    /// AVX2: `vpmaddwd` then `vpaddd`, eight 32-bit lanes.
    Avx2,
    /// AVX-512 VNNI: `vpdpwssd`, sixteen 32-bit lanes.
    Avx512Vnni,
}

impl IntKernel {
    /// Name as `nvdla-vp bench` prints it.
    pub fn name(self) -> &'static str {
        match self {
            IntKernel::Portable => "portable",
            IntKernel::Avx2 => "avx2",
            IntKernel::Avx512Vnni => "avx512-vnni",
        }
    }
}

/// The widest kernel this CPU runs. `NVDLA_VP_INT_KERNEL=portable|avx2` caps it (to
/// compare kernels, or to run the portable loops as the reference).
pub fn int_kernel() -> IntKernel {
    static KERNEL: std::sync::OnceLock<IntKernel> = std::sync::OnceLock::new();
    *KERNEL.get_or_init(|| {
        let cap = match std::env::var("NVDLA_VP_INT_KERNEL").as_deref() {
            Ok("portable") => IntKernel::Portable,
            Ok("avx2") => IntKernel::Avx2,
            _ => IntKernel::Avx512Vnni,
        };
        detect().min_by(cap)
    })
}

impl IntKernel {
    fn rank(self) -> u8 {
        match self {
            IntKernel::Portable => 0,
            IntKernel::Avx2 => 1,
            IntKernel::Avx512Vnni => 2,
        }
    }
    fn min_by(self, cap: IntKernel) -> IntKernel {
        if cap.rank() < self.rank() {
            cap
        } else {
            self
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn detect() -> IntKernel {
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
    {
        IntKernel::Avx512Vnni
    } else if std::arch::is_x86_feature_detected!("avx2") {
        IntKernel::Avx2
    } else {
        IntKernel::Portable
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> IntKernel {
    IntKernel::Portable
}

/// Kernels per block (one broadcast weight pair each per step).
const MR: usize = 8;
/// Output positions per tile: three AVX-512 registers, six AVX2 ones.
const TILE: usize = 48;
/// Below this many multiply-accumulates a layer runs on one thread (starting threads
/// costs more than it saves).
const PARALLEL_MACS: u64 = 4 << 20;

/// Where a layer's operands sit for the kernels.
struct Plan {
    /// Channel pairs.
    cp: usize,
    /// Width of a phase plane's rows.
    wq: usize,
    /// Words of one phase plane.
    plane_len: usize,
    /// Phase planes per channel pair (`sx · sy`).
    phases: usize,
    /// Virtual output positions (`out_h · wq`), rounded up to [`TILE`].
    npos: usize,
    /// Offset of each MAC step's operand (for position 0) in the planes, in the weights'
    /// step order: channel pair, then kernel row, then kernel column.
    steps: Vec<u32>,
    /// The largest of `steps`.
    max_step: usize,
    /// Words of the planes buffer: every step's load of every tile stays inside it.
    len: usize,
}

impl Plan {
    fn new(g: &Geom) -> Option<Plan> {
        let hp = (g.out_h - 1) * g.sy + (g.r - 1) * g.dy + 1;
        let wp = (g.out_w - 1) * g.sx + (g.s - 1) * g.dx + 1;
        let (hq, wq) = (hp.div_ceil(g.sy), wp.div_ceil(g.sx));
        let cp = g.in_c.div_ceil(2);
        let phases = g.sx * g.sy;
        let plane_len = hq.checked_mul(wq)?;
        let npos = g.out_h.checked_mul(wq)?.next_multiple_of(TILE);
        let mut steps = Vec::with_capacity(cp * g.r * g.s);
        for c in 0..cp {
            for r in 0..g.r {
                for s in 0..g.s {
                    let (y, x) = (r * g.dy, s * g.dx);
                    let phase = (y % g.sy) * g.sx + x % g.sx;
                    let off = ((c * phases + phase) * plane_len) + (y / g.sy) * wq + x / g.sx;
                    steps.push(u32::try_from(off).ok()?);
                }
            }
        }
        let max_step = steps.iter().max().map_or(0, |&m| m as usize);
        let reach = max_step + npos;
        let len = reach.max(cp * phases * plane_len);
        // Positions and offsets are 32-bit in the kernels' index arithmetic.
        u32::try_from(len).ok()?;
        Some(Plan {
            cp,
            wq,
            plane_len,
            phases,
            npos,
            steps,
            max_step,
            len,
        })
    }
}

/// Two 16-bit values in one word, `lo` in the low half (the lane order of `vpmaddwd`).
fn pair(lo: i32, hi: i32) -> i32 {
    i32::from(lo as u16) | (i32::from(hi as u16) << 16)
}

/// The phase planes of batch `b` (see the module documentation). Inlined into
/// [`crate::engines::wide`]'s wrapper by its caller.
#[inline(always)]
fn planes(g: &Geom, p: &Plan, input: &InputCube, b: usize) -> Vec<i32> {
    let hq = p.plane_len / p.wq;
    let pad = pair(g.pad, g.pad);
    let mut v = zeroed(p.len);
    let channel = |c: usize| -> Option<&[i32]> {
        (c < g.in_c).then(|| &input.data[(b * g.in_c + c) * g.in_h * g.in_w..][..g.in_h * g.in_w])
    };
    // Channel pairs in parallel: pair `c` owns its phase planes, one run of `v`.
    let pair_len = p.phases * p.plane_len;
    par_chunks(
        &mut v[..p.cp * pair_len],
        pair_len,
        #[inline(always)]
        |c, v| {
            let (lo, hi) = (channel(2 * c), channel(2 * c + 1));
            // A missing odd channel pairs with 0 (its weights are 0 too).
            let pad = if hi.is_some() { pad } else { pair(g.pad, 0) };
            for phy in 0..g.sy {
                for phx in 0..g.sx {
                    let base = (phy * g.sx + phx) * p.plane_len;
                    // Plane columns `xq` whose input column `xq * sx + phx - pl` exists.
                    let first = g.pl.saturating_sub(phx).div_ceil(g.sx).min(p.wq);
                    let end = (g.in_w + g.pl)
                        .saturating_sub(phx)
                        .div_ceil(g.sx)
                        .clamp(first, p.wq);
                    for yq in 0..hq {
                        let row = &mut v[base + yq * p.wq..][..p.wq];
                        let y = (yq * g.sy + phy).wrapping_sub(g.pt);
                        if y >= g.in_h || first == end {
                            row.fill(pad);
                            continue;
                        }
                        row[..first].fill(pad);
                        row[end..].fill(pad);
                        let x0 = first * g.sx + phx - g.pl;
                        let src_lo = lo.map(|l| &l[y * g.in_w + x0..]);
                        let src_hi = hi.map(|h| &h[y * g.in_w + x0..]);
                        let dst = &mut row[first..end];
                        match (src_lo, src_hi) {
                            (Some(l), Some(h)) => {
                                for (j, o) in dst.iter_mut().enumerate() {
                                    *o = pair(l[j * g.sx], h[j * g.sx]);
                                }
                            }
                            (Some(l), None) => {
                                for (j, o) in dst.iter_mut().enumerate() {
                                    *o = pair(l[j * g.sx], 0);
                                }
                            }
                            _ => unreachable!("channel 2c exists for every pair"),
                        }
                    }
                }
            }
        },
    );
    v
}

/// The weights in blocks of [`MR`] kernels: `[block][step][kernel]` pairs, kernels past
/// the last zero.
#[inline(always)]
fn packed_weights(g: &Geom, p: &Plan, w: &Weights) -> Vec<i32> {
    let blocks = g.k.div_ceil(MR);
    let nsteps = p.steps.len();
    let taps = g.r * g.s;
    let mut v = zeroed(blocks * nsteps * MR);
    let kernel_len = g.in_c * taps;
    // Blocks in parallel: block `kb` holds kernels `kb * MR ..`.
    par_chunks(
        &mut v,
        nsteps * MR,
        #[inline(always)]
        |kb, block| {
            let kernels: Vec<&[i32]> = w.data[kb * MR * kernel_len..]
                .chunks_exact(kernel_len)
                .take(MR.min(g.k - kb * MR))
                .collect();
            // Step by step, so that the block is written in order.
            for (st, d) in block.chunks_exact_mut(MR).enumerate() {
                let (c, t) = (st / taps, st % taps);
                let (lo, hi) = (2 * c * taps + t, (2 * c + 1) * taps + t);
                for (o, kernel) in d.iter_mut().zip(&kernels) {
                    *o = pair(kernel[lo], kernel.get(hi).copied().unwrap_or(0));
                }
            }
        },
    );
    v
}

/// Whether [`conv`] can take the layer: a SIMD kernel exists and every operand fits in
/// 16 bits. (The caller has checked the 32-bit bound.)
pub(super) fn applies(g: &Geom, max_data: u32, max_weight: u32) -> bool {
    let i16_range = |v: i32| i16::try_from(v).is_ok();
    // Magnitudes up to 2^15 - 1 fit; -2^15 alone would too, but is not worth a scan.
    int_kernel() != IntKernel::Portable
        && i16_range(g.pad)
        && max_data < 1 << 15
        && max_weight < 1 << 15
}

/// The convolution of every batch, `[batch][k][y][x]`, or `None` when the layout does not
/// fit 32-bit offsets. Only after [`applies`].
pub(super) fn conv(g: &Geom, input: &InputCube, w: &Weights) -> Option<Vec<i64>> {
    let kernel = int_kernel();
    let p = Plan::new(g)?;
    use crate::engines::wide;
    let wk = wide(
        #[inline(always)]
        || packed_weights(g, &p, w),
    );
    let blocks = g.k.div_ceil(MR);
    let nsteps = p.steps.len();
    let (ow, oh) = (g.out_w, g.out_h);
    let mut out = zeroed(input.batches * g.k * oh * ow);
    let macs = (g.k * oh * ow * g.in_c * g.r * g.s) as u64;
    for b in 0..input.batches {
        let planes = wide(
            #[inline(always)]
            || planes(g, &p, input, b),
        );
        let tiles = p.npos / TILE;
        let run = |range: std::ops::Range<usize>| -> (usize, Vec<i32>) {
            // `[k][position]` for this range's positions.
            let n = range.len() * TILE;
            let mut part = vec![0i32; blocks * MR * n];
            let mut tile = [[0i32; TILE]; MR];
            // Tiles outer: a tile's operands stay in the L1 cache for every kernel block,
            // while the weights stream in order.
            for t in range.clone() {
                let i0 = t * TILE;
                for kb in 0..blocks {
                    let wb = &wk[kb * nsteps * MR..][..nsteps * MR];
                    run_tile(kernel, &planes, &p.steps, p.max_step, i0, wb, &mut tile);
                    for (m, row) in tile.iter().enumerate() {
                        let o = (kb * MR + m) * n + (t - range.start) * TILE;
                        part[o..o + TILE].copy_from_slice(row);
                    }
                }
            }
            (range.start * TILE, part)
        };
        let parts = if macs >= PARALLEL_MACS {
            par_ranges(tiles, run)
        } else {
            vec![run(0..tiles)]
        };
        // Scatter the virtual positions' sums to the outputs, row by row, kernels in
        // parallel.
        let batch = &mut out[b * g.k * oh * ow..][..g.k * oh * ow];
        par_chunks(
            batch,
            oh * ow,
            #[inline(always)]
            |k, dst| {
                for (first, part) in &parts {
                    let n = part.len() / (blocks * MR);
                    let (first, end) = (*first, first + n);
                    let src = &part[k * n..][..n];
                    for (oy, d) in dst.chunks_exact_mut(ow).enumerate() {
                        let row = oy * p.wq;
                        let (lo, hi) = (row.max(first), (row + ow).min(end));
                        if lo < hi {
                            for (o, &v) in d[lo - row..hi - row].iter_mut().zip(&src[lo - first..])
                            {
                                *o = i64::from(v);
                            }
                        }
                    }
                }
            },
        );
    }
    Some(out)
}

/// One tile: [`MR`] kernels by [`TILE`] positions from `i0`; `max_step` is the largest of
/// `steps`.
fn run_tile(
    kernel: IntKernel,
    planes: &[i32],
    steps: &[u32],
    max_step: usize,
    i0: usize,
    w: &[i32],
    out: &mut [[i32; TILE]; MR],
) {
    // Every load of the tile: words `i0 + step .. i0 + step + TILE` of the planes.
    let last = max_step + i0 + TILE;
    assert!(last <= planes.len() && w.len() == steps.len() * MR);
    match kernel {
        #[cfg(target_arch = "x86_64")]
        IntKernel::Avx512Vnni => {
            // SAFETY: `int_kernel` returns this variant only when the CPU has AVX-512F,
            // BW and VNNI; the assertion above bounds every load from `planes` and `w`.
            #[allow(unsafe_code)]
            unsafe {
                x86::tile_avx512(planes.as_ptr().add(i0), steps, w, out)
            }
        }
        #[cfg(target_arch = "x86_64")]
        IntKernel::Avx2 => {
            // SAFETY: as above, with AVX2.
            #[allow(unsafe_code)]
            unsafe {
                x86::tile_avx2(planes.as_ptr().add(i0), steps, w, out)
            }
        }
        _ => tile_portable(&planes[i0..], steps, w, out),
    }
}

/// The tile in plain Rust (the kernels' definition; used where no SIMD kernel runs).
fn tile_portable(planes: &[i32], steps: &[u32], w: &[i32], out: &mut [[i32; TILE]; MR]) {
    for row in out.iter_mut() {
        row.fill(0);
    }
    let half = |v: i32, hi: bool| i32::from(if hi { (v >> 16) as i16 } else { v as i16 });
    for (st, &off) in steps.iter().enumerate() {
        let b = &planes[off as usize..][..TILE];
        for (m, row) in out.iter_mut().enumerate() {
            let a = w[st * MR + m];
            for (o, &d) in row.iter_mut().zip(b) {
                let v =
                    (half(a, false) * half(d, false)).wrapping_add(half(a, true) * half(d, true));
                *o = o.wrapping_add(v);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use super::{MR, TILE};
    use core::arch::x86_64::{
        __m256i, __m512i, _mm256_add_epi32, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_set1_epi32, _mm256_setzero_si256, _mm256_storeu_si256, _mm512_dpwssd_epi32,
        _mm512_loadu_si512, _mm512_set1_epi32, _mm512_setzero_si512, _mm512_storeu_si512,
    };

    const V512: usize = TILE / 16;

    /// # Safety
    /// The CPU has AVX-512F, BW and VNNI; `planes[step + j]` is readable for every step
    /// and `j < TILE`; `w` holds `steps.len() · MR` words.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn tile_avx512(
        planes: *const i32,
        steps: &[u32],
        w: &[i32],
        out: &mut [[i32; TILE]; MR],
    ) {
        let mut acc = [[_mm512_setzero_si512(); V512]; MR];
        for (st, &off) in steps.iter().enumerate() {
            // SAFETY: in bounds by the function's contract.
            let p = unsafe { planes.add(off as usize) };
            let mut b = [_mm512_setzero_si512(); V512];
            for (v, r) in b.iter_mut().enumerate() {
                // SAFETY: as above.
                *r = unsafe { _mm512_loadu_si512(p.add(16 * v).cast::<__m512i>()) };
            }
            let ws = &w[st * MR..][..MR];
            for (a, &wv) in acc.iter_mut().zip(ws) {
                let wv = _mm512_set1_epi32(wv);
                for (x, &bv) in a.iter_mut().zip(&b) {
                    *x = _mm512_dpwssd_epi32(*x, wv, bv);
                }
            }
        }
        for (row, a) in out.iter_mut().zip(&acc) {
            for (v, &x) in a.iter().enumerate() {
                // SAFETY: `row` has TILE = 16 · V512 words.
                unsafe { _mm512_storeu_si512(row.as_mut_ptr().add(16 * v).cast::<__m512i>(), x) };
            }
        }
    }

    /// Positions per AVX2 accumulator block: two registers of eight.
    const AVX2_POS: usize = 16;
    /// Kernels per AVX2 accumulator block (4 x 2 = 8 of the 16 registers accumulate).
    const AVX2_KER: usize = 4;

    /// # Safety
    /// As [`tile_avx512`], with AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn tile_avx2(
        planes: *const i32,
        steps: &[u32],
        w: &[i32],
        out: &mut [[i32; TILE]; MR],
    ) {
        // Sixteen registers: blocks of four kernels by 16 positions keep their eight
        // accumulators, two data loads, a broadcast weight and the products in registers
        // (four by 24 spill one accumulator per step; eight by 48 would spill them all).
        for kh in 0..MR / AVX2_KER {
            for ph in 0..TILE / AVX2_POS {
                let mut acc = [[_mm256_setzero_si256(); AVX2_POS / 8]; AVX2_KER];
                for (st, &off) in steps.iter().enumerate() {
                    // SAFETY: in bounds by the function's contract.
                    let p = unsafe { planes.add(off as usize + ph * AVX2_POS) };
                    let mut b = [_mm256_setzero_si256(); AVX2_POS / 8];
                    for (v, r) in b.iter_mut().enumerate() {
                        // SAFETY: as above.
                        *r = unsafe { _mm256_loadu_si256(p.add(8 * v).cast::<__m256i>()) };
                    }
                    let ws = &w[st * MR + kh * AVX2_KER..][..AVX2_KER];
                    for (a, &wv) in acc.iter_mut().zip(ws) {
                        let wv = _mm256_set1_epi32(wv);
                        for (x, &bv) in a.iter_mut().zip(&b) {
                            *x = _mm256_add_epi32(*x, _mm256_madd_epi16(wv, bv));
                        }
                    }
                }
                for (row, a) in out[kh * AVX2_KER..].iter_mut().zip(&acc) {
                    for (v, &x) in a.iter().enumerate() {
                        // SAFETY: `row` has TILE words, `ph * AVX2_POS + 8 * v + 8 <= TILE`.
                        unsafe {
                            _mm256_storeu_si256(
                                row.as_mut_ptr()
                                    .add(ph * AVX2_POS + 8 * v)
                                    .cast::<__m256i>(),
                                x,
                            )
                        };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_put_the_low_channel_in_the_low_half() {
        assert_eq!(pair(-1, 2) as u32, 0x0002_ffff);
        assert_eq!(pair(-32768, 32767) as u32, 0x7fff_8000);
    }

    /// Every kernel this CPU has, and the portable tile, against the portable loops of
    /// `compute` on geometries with strides, dilations, odd channels and padding values.
    #[test]
    fn every_kernel_matches_the_portable_convolution() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as i32
        };
        for case in 0..40 {
            let r = 1 + (next() % 3) as usize;
            let s = 1 + (next() % 3) as usize;
            let (sx, sy) = (1 + (next() % 3) as usize, 1 + (next() % 2) as usize);
            let (dx, dy) = (1 + (next() % 2) as usize, 1 + (next() % 2) as usize);
            let in_w = 1 + (next() % 20) as usize + (s - 1) * dx;
            let in_h = 1 + (next() % 9) as usize + (r - 1) * dy;
            let in_c = 1 + (next() % 40) as usize;
            let k = 1 + (next() % 20) as usize;
            let (pl, pt) = ((next() % 2) as usize, (next() % 2) as usize);
            let out_w = (in_w + 2 * pl - (s - 1) * dx - 1) / sx + 1;
            let out_h = (in_h + 2 * pt - (r - 1) * dy - 1) / sy + 1;
            let bits = if case % 3 == 0 { 12 } else { 8 };
            let m = 1 << (bits - 1);
            let batches = 1 + case % 2;
            let g = Geom {
                in_w,
                in_h,
                in_c,
                out_w,
                out_h,
                k,
                r,
                s,
                sx,
                sy,
                dx,
                dy,
                pl,
                pt,
                pad: next().rem_euclid(2 * m) - m,
                lanes: 32,
                y_ext: 1,
            };
            let input = InputCube {
                w: in_w,
                h: in_h,
                c: in_c,
                batches,
                data: (0..batches * in_w * in_h * in_c)
                    .map(|_| next().rem_euclid(2 * m) - m)
                    .collect(),
            };
            let w = Weights {
                k,
                c: in_c,
                r,
                s,
                data: (0..k * in_c * r * s)
                    .map(|_| next().rem_euclid(2 * m) - m)
                    .collect(),
            };
            let want = super::super::compute::conv_int_portable(&g, &input, &w).unwrap();
            let p = Plan::new(&g).unwrap();
            let planes_b: Vec<Vec<i32>> = (0..batches).map(|b| planes(&g, &p, &input, b)).collect();
            let wk = packed_weights(&g, &p, &w);
            let nsteps = p.steps.len();
            let mut kernels = vec![IntKernel::Portable];
            if int_kernel() == IntKernel::Avx512Vnni {
                kernels.push(IntKernel::Avx512Vnni);
            }
            if int_kernel() != IntKernel::Portable {
                kernels.push(IntKernel::Avx2);
            }
            for kernel in kernels {
                let mut got = vec![0i64; want.len()];
                let mut tile = [[0i32; TILE]; MR];
                for (b, pl) in planes_b.iter().enumerate() {
                    for kb in 0..g.k.div_ceil(MR) {
                        for t in 0..p.npos / TILE {
                            let wb = &wk[kb * nsteps * MR..][..nsteps * MR];
                            run_tile(kernel, pl, &p.steps, p.max_step, t * TILE, wb, &mut tile);
                            for (mi, row) in tile.iter().enumerate() {
                                let kk = kb * MR + mi;
                                for (j, &v) in row.iter().enumerate() {
                                    let i = t * TILE + j;
                                    let (oy, ox) = (i / p.wq, i % p.wq);
                                    if kk < k && oy < out_h && ox < out_w {
                                        got[((b * k + kk) * out_h + oy) * out_w + ox] =
                                            i64::from(v);
                                    }
                                }
                            }
                        }
                    }
                }
                assert_eq!(got, want, "case {case} {kernel:?}: {g:?}");
            }
            assert_eq!(conv(&g, &input, &w).unwrap(), want, "case {case}: {g:?}");
        }
    }
}
