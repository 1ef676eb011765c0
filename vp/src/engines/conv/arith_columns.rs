//! The fp16 MAC cell on blocks of few channels, sixteen kernels at a time.
//!
//! A layer of at most [`SPARSE_LANES`] input channels (ResNet's 3-channel stem in
//! direct mode) has data blocks of that many active lanes, which [`Blocks::mac`] takes
//! lane by lane ([`Blocks::mac_sparse`]) for every kernel in turn: 49 scalar blocks per
//! output of a 7x7 stem. Here the weights of each (operation, channel) are stored as a
//! column over the kernels ([`WeightColumns`]), and one data block meets sixteen kernels
//! in fixed-size arrays that the compiler vectorises: the coarse sums, their largest per
//! kernel (the block exponent), and the products aligned by 0, 4 or 8 bits, which are
//! exact or the floor, except at 8 bits when the product's low byte is at most 8
//! ([`super::lane_product`]). Those and the rare lanes aligned by 12 bits or more take
//! [`super::lane_product`] itself afterwards. The results are those of
//! [`Blocks::mac_sparse`] bit for bit (test `columns_match_the_block_kernel`).

use super::{booth8_errors, lane_product, Blocks, INACTIVE, SPARSE_LANES};

/// Kernels computed together.
const WIDTH: usize = 16;

/// The weight blocks of a layer of at most [`SPARSE_LANES`] channels, by operation and
/// channel, each a column over the kernels (followed by [`WIDTH`] inactive lanes).
#[derive(Debug, Clone)]
pub struct WeightColumns {
    ops: usize,
    channels: usize,
    kernels: usize,
    /// Coarse exponent, [`INACTIVE`] for a zero weight, at `(op * channels + c) * kernels + k`.
    coarse: Vec<i32>,
    /// Signed pre-shifted mantissa at the same index.
    val: Vec<i32>,
}

impl WeightColumns {
    /// The columns of weight blocks `w` (block `k * ops + op` for kernel `k`), when their
    /// blocks have at most [`SPARSE_LANES`] lanes that can be active (`channels`).
    pub fn new(w: &Blocks, kernels: usize, ops: usize, channels: usize) -> Option<Self> {
        if channels > SPARSE_LANES || w.len() != kernels * ops {
            return None;
        }
        // A run of WIDTH kernels may start at any kernel.
        let padded = kernels + WIDTH;
        let n = ops * channels * padded;
        let (mut coarse, mut val) = (vec![i32::from(INACTIVE); n], vec![0; n]);
        for k in 0..kernels {
            for op in 0..ops {
                let base = (k * ops + op) * w.lanes;
                for c in 0..channels {
                    let at = (op * channels + c) * padded + k;
                    coarse[at] = i32::from(w.coarse[base + c]);
                    val[at] = i32::from(w.val[base + c]);
                }
            }
        }
        Some(WeightColumns {
            ops,
            channels,
            kernels: padded,
            coarse,
            val,
        })
    }

    /// For data block `di` of `d`, operation `op` and kernels `ks`: the block exponent and
    /// the sum of the aligned products of each kernel `k`, written at
    /// `(k - ks.start) * stride + slot` of the two output slices, as [`Blocks::mac_deferred`]
    /// gives them (data blocks without NaN). `false` (nothing written) when the data
    /// block has lanes beyond the columns' channels.
    pub fn mac(
        &self,
        d: &Blocks,
        di: usize,
        op: usize,
        ks: std::ops::Range<usize>,
        (stride, slot): (usize, usize),
        (exps, sums): (&mut [u8], &mut [i64]),
    ) -> bool {
        let sparse = d.sparse[di];
        let active = sparse.lanes.get(..usize::from(sparse.n));
        let Some(active) =
            active.filter(|a| op < self.ops && a.iter().all(|&c| usize::from(c) < self.channels))
        else {
            return false;
        };
        // The data block's active lanes: coarse exponent, signed mantissa, channel.
        let base = di * d.lanes;
        let mut lanes = [(0i32, 0i32, 0usize); SPARSE_LANES];
        for (l, &c) in lanes.iter_mut().zip(active) {
            let c = usize::from(c);
            *l = (i32::from(d.coarse[base + c]), i32::from(d.val[base + c]), c);
        }
        let lanes = &lanes[..active.len()];
        let t8 = booth8_errors();
        let mut k0 = ks.start;
        while k0 < ks.end {
            let m = WIDTH.min(ks.end - k0);
            let column = |c: usize| (op * self.channels + c) * self.kernels + k0;
            let mut max = [-1i32; WIDTH];
            for &(dcv, _, c) in lanes {
                let wc: &[i32; WIDTH] = self.coarse[column(c)..][..WIDTH]
                    .try_into()
                    .expect("columns padded to WIDTH");
                for (mx, &w) in max.iter_mut().zip(wc) {
                    *mx = (*mx).max(dcv + w);
                }
            }
            let mut sum = [0i32; WIDTH];
            let mut slow = [0i32; WIDTH];
            for &(dcv, dv, c) in lanes {
                let at = column(c);
                let wc: &[i32; WIDTH] = self.coarse[at..][..WIDTH].try_into().expect("padded");
                let wv: &[i32; WIDTH] = self.val[at..][..WIDTH].try_into().expect("padded");
                for j in 0..WIDTH {
                    // A zero weight's coarse sum is negative, and so its `shift` is above
                    // 2 (`max[j] >= -1`). |p| < 2^28 and at most six lanes: the sums
                    // stay in 32 bits.
                    let cs = dcv + wc[j];
                    let shift = max[j] - cs;
                    let p = dv * wv[j];
                    let v = match shift {
                        0 => p,
                        1 => p >> 4,
                        _ => p >> 8,
                    };
                    let exact = exact_here(shift, p);
                    sum[j] += if exact { v } else { 0 };
                    slow[j] |= i32::from(!exact) & !(cs >> 31);
                }
            }
            for j in 0..m {
                let mut s = i64::from(sum[j]);
                if slow[j] != 0 {
                    for &(dcv, dv, c) in lanes {
                        let at = column(c) + j;
                        let (cs, wv) = (dcv + self.coarse[at], self.val[at]);
                        if cs >= 0 && !exact_here(max[j] - cs, dv * wv) {
                            s += i64::from(lane_product(max[j], cs, dv, wv, t8));
                        }
                    }
                }
                let o = (k0 - ks.start + j) * stride + slot;
                let active = max[j] >= 0;
                exps[o] = if active { (max[j] * 4) as u8 } else { 0 };
                sums[o] = if active { s } else { 0 };
            }
            k0 += m;
        }
        true
    }
}

/// Whether a lane of product `p` aligned by `4 * shift` bits takes the floor of the
/// aligned product: shifts 0 and 4 always, shift 8 when the product's low byte is above 8
/// (the Booth multiplier's truncation error is 0 there, [`super::booth8_errors`]).
#[inline(always)]
fn exact_here(shift: i32, p: i32) -> bool {
    shift <= 1 || (shift == 2 && p & 0xff > 8)
}
