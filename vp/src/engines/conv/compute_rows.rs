//! The fp16 direct convolution on weight rows (CPUs with AVX-512): each data block's
//! active lanes meet sixteen kernels at once (`arith::WeightRows`, whose documentation
//! gives the arithmetic), with the same results as the block kernels bit for bit.
//!
//! Everything that takes time runs on all cores: the weight rows a group of kernels
//! each, the input's blocks a range of rows each, and the outputs a range of rows each.
//! Layers of few input channels keep the weight columns (`conv_fp16`), and layers
//! with a NaN weight the block kernels.

use super::{data_at, op_block, ops, AccOut, Geom};
use crate::engines::conv::arith::{
    block_nan, f16_is_nan, DataLanes, Deferred, Fp48, MacF16, WeightRows, ROW_WIDTH,
};
use crate::engines::conv::cdma::{InputCube, Weights};
use crate::engines::par_ranges;

/// Bytes of weight rows a chunk of kernels may take, so that they stay in the L2 cache
/// while a row of outputs uses them (each row of sixteen kernels is 128 bytes per lane).
pub(super) const CHUNK_BYTES: usize = 512 * 1024;

/// The convolution of every batch on weight rows, or `None` when this layer or CPU does
/// not take them (AVX-512 missing, at most `SPARSE_LANES` channels, a NaN weight).
/// Inputs of more than `max_plane_lanes` decoded lanes are decoded per output
/// position; `chunk_bytes` bounds the weight rows of a chunk of kernels.
pub(super) fn conv(
    g: &Geom,
    input: &InputCube,
    w: &Weights,
    max_plane_lanes: usize,
    chunk_bytes: usize,
) -> Option<AccOut> {
    if g.y_ext != 1 || !WeightRows::available() || w.data.iter().any(|&v| f16_is_nan(v as u16)) {
        return None;
    }
    let ops = ops(g);
    let nops = ops.len();
    let (ow, oh) = (g.out_w, g.out_h);
    let lanes = g.lanes.max(1).next_multiple_of(16);
    // Kernels per chunk: whole rows, as many as fit in `chunk_bytes`.
    let groups = (chunk_bytes / (nops * lanes * 2 * 64).max(1)).max(1);
    let kchunk = groups * ROW_WIDTH;
    if (kchunk + ROW_WIDTH) * nops >= WeightRows::MAX_OWNERS {
        // Too many outputs per chunk for the deferred lanes' keys: the block kernels.
        return None;
    }
    let rows = WeightRows::build(g.k, nops, lanes, |k, op, block| {
        let mut i = 0;
        for seg in &ops[op] {
            for c in seg.c0..seg.c0 + seg.n {
                block[i] = w.data[((k * g.in_c + c) * g.r + seg.r) * g.s + seg.s] as u16;
                i += 1;
            }
        }
    })?;
    // The padded input decoded once into blocks per (position, channel block), which
    // operations refer to by index (as `conv_fp16` does); larger inputs per position.
    let hp = (oh - 1) * g.sy + (g.r - 1) * g.dy + 1;
    let wp = (ow - 1) * g.sx + (g.s - 1) * g.dx + 1;
    let ncb = g.in_c.div_ceil(g.lanes.max(1));
    let plane_lanes = [hp, wp, ncb, lanes]
        .iter()
        .try_fold(1usize, |a, &v| a.checked_mul(v));
    let planes = plane_lanes.is_some_and(|n| n <= max_plane_lanes);
    let op_off: Vec<usize> = ops
        .iter()
        .map(|op| ((op[0].r * g.dy) * wp + op[0].s * g.dx) * ncb + op[0].c0 / g.lanes.max(1))
        .collect();
    let mut out = vec![0i64; input.batches * g.k * oh * ow];
    for b in 0..input.batches {
        // The planes' blocks and their NaN markers, a range of padded rows per task.
        let (mut plane, mut plane_nan) = (DataLanes::default(), Vec::new());
        if planes {
            let parts = par_ranges(hp, |yps| {
                let (mut dl, mut nan) = (DataLanes::default(), Vec::new());
                let mut raw = vec![0u16; g.lanes];
                for yp in yps {
                    for xp in 0..wp {
                        let (x, y) = (xp as isize - g.pl as isize, yp as isize - g.pt as isize);
                        for cb in 0..ncb {
                            let c0 = cb * g.lanes;
                            let n = g.lanes.min(g.in_c - c0);
                            for (i, r) in raw[..n].iter_mut().enumerate() {
                                *r = data_at(g, input, b, c0 + i, y, x) as u16;
                            }
                            dl.push_block(&raw[..n]);
                            nan.push(block_nan(&raw[..n], &[]));
                        }
                    }
                }
                (dl, nan)
            });
            for (dl, nan) in parts {
                plane.append(&dl);
                plane_nan.extend(nan);
            }
        }
        // Work in tiles of one output row and a chunk of kernels (all kernels without
        // planes), enough of them for every core even in layers of few rows; the tiles of
        // one chunk follow each other, so that its weight rows stay in cache.
        let chunks = if planes { g.k.div_ceil(kchunk) } else { 1 };
        let tile = |u: usize| {
            let (chunk, oy) = (u / oh, u % oh);
            let ks = if planes {
                chunk * kchunk..((chunk + 1) * kchunk).min(g.k)
            } else {
                0..g.k
            };
            (ks, oy)
        };
        let parts = par_ranges(chunks * oh, |units| {
            let mut part = Vec::new();
            let mut row = vec![0u32; ow * g.k];
            let mut idx: Vec<usize> = (0..nops).collect();
            let mut nans: Vec<Option<MacF16>> = vec![None; nops];
            let mut local = DataLanes::default();
            let mut raw: Vec<u16> = Vec::with_capacity(g.lanes);
            let mut deferred = Deferred::default();
            let (mut exps, mut sums) = (Vec::new(), Vec::new());
            // The outputs of kernels `ks` at one position from its data blocks.
            let mut kernels = |lanes: &DataLanes,
                               idx: &[usize],
                               nans: Option<&[Option<MacF16>]>,
                               ks: std::ops::Range<usize>,
                               out: &mut [u32]| {
                // Results by operation, then kernel: each kernel's results a column,
                // sixteen kernels summed at once.
                let kpad = ks.len().next_multiple_of(ROW_WIDTH);
                // Every slot is written by `mac` before the deferred lanes are added.
                exps.resize(exps.len().max(kpad * nops), 0);
                sums.resize(sums.len().max(kpad * nops), 0);
                for (oi, &i) in idx.iter().enumerate() {
                    let at = oi * kpad;
                    rows.mac(
                        lanes.block(i),
                        oi,
                        ks.clone(),
                        at,
                        (&mut exps, &mut sums),
                        &mut deferred,
                    );
                }
                deferred.resolve(&mut sums);
                // One kernel's accumulation in CACC order, block by block; a NaN data
                // block's result is its marker (its sum is meaningless).
                let fold = |j: usize, nans: Option<&[Option<MacF16>]>| {
                    (0..nops).fold(Fp48::default(), |acc, oi| {
                        let r = nans.and_then(|n| n[oi]).unwrap_or_else(|| {
                            MacF16::from_sum(exps[oi * kpad + j], sums[oi * kpad + j])
                        });
                        acc.accumulate(r)
                    })
                };
                for j0 in (0..ks.len()).step_by(ROW_WIDTH) {
                    let m = ROW_WIDTH.min(ks.len() - j0);
                    let o = &mut out[ks.start + j0..][..m];
                    if nans.is_some() {
                        for (j, o) in o.iter_mut().enumerate() {
                            *o = fold(j0 + j, nans).to_f32_bits();
                        }
                        continue;
                    }
                    // Exactly, in one sum, when no step of CACC's order can round.
                    let exact = rows.sum_exact(&exps[j0..], &sums[j0..], nops, kpad);
                    for (j, (o, r)) in o.iter_mut().zip(exact).enumerate() {
                        *o = r.unwrap_or_else(|| fold(j0 + j, None)).to_f32_bits();
                    }
                }
            };
            for u in units.clone() {
                let (ks, oy) = tile(u);
                if planes {
                    // Each position's blocks indexed in the planes.
                    for ox in 0..ow {
                        let base = ((oy * g.sy) * wp + ox * g.sx) * ncb;
                        for ((i, nan), &off) in idx.iter_mut().zip(&mut nans).zip(&op_off) {
                            *i = base + off;
                            *nan = plane_nan[*i];
                        }
                        let nan = nans.iter().any(Option::is_some).then_some(&nans[..]);
                        kernels(&plane, &idx, nan, ks.clone(), &mut row[ox * g.k..][..g.k]);
                    }
                } else {
                    for ox in 0..ow {
                        local.clear();
                        for (op, nan) in ops.iter().zip(&mut nans) {
                            op_block(g, input, b, op, (ox, oy), &mut raw);
                            *nan = block_nan(&raw, &[]);
                            local.push_block(&raw);
                        }
                        let nan = nans.iter().any(Option::is_some).then_some(&nans[..]);
                        for ks in ks.clone().step_by(kchunk) {
                            let ks = ks..(ks + kchunk).min(g.k);
                            kernels(&local, &idx, nan, ks, &mut row[ox * g.k..][..g.k]);
                        }
                    }
                }
                // The tile by kernel, then position.
                for k in ks {
                    part.extend((0..ow).map(|ox| row[ox * g.k + k]));
                }
            }
            (units, part)
        });
        for (units, part) in parts {
            let mut at = 0;
            for u in units {
                let (ks, oy) = tile(u);
                for k in ks {
                    let dst = &mut out[((b * g.k + k) * oh + oy) * ow..][..ow];
                    for (d, &v) in dst.iter_mut().zip(&part[at..at + ow]) {
                        *d = i64::from(v);
                    }
                    at += ow;
                }
            }
        }
    }
    Some(AccOut {
        data: out,
        saturated: 0,
    })
}
