//! The fp16 MAC cell with sixteen kernels across an AVX-512 register.
//!
//! The block kernels (`arith_avx512`) put a block's 64 lanes across registers: every
//! (data block, weight block) pair pays horizontal reductions for the block exponent and
//! the sums, and every lane is computed whether its data is zero or not. Here a data
//! block meets sixteen kernels at once instead, one 32-bit register lane per kernel, and
//! its lanes are taken one after the other, each broadcast against a row of sixteen
//! weights ([`WeightRows`]: per operation and lane, the kernels side by side):
//! - the block exponent of each kernel is a running maximum of the coarse sums, with no
//!   horizontal step;
//! - lanes whose data is zero are inactive (CSC masks them: they set no exponent and add
//!   nothing), so they are skipped altogether ([`DataLanes`] lists the active lanes of
//!   each block); after a ReLU about half of them are zero;
//! - each product is exact in 32 bits (|mantissa| < 2^14, so |product| < 2^28); a lane
//!   aligned by 0 or 4 bits adds the product shifted arithmetically, which is the exact
//!   value or its floor, and so does one aligned by 8 bits when the product's low byte
//!   is above 8 (the Booth multiplier's truncation loses nothing there,
//!   `super::booth8_errors`); the others, active lanes aligned by 12 bits or more and the
//!   8-bit ones with a low byte of 8 or less (about 15 % of the active products in
//!   ResNet-50), are compressed into [`Pending`] and resolved thirty-two at a time with
//!   the Booth multiplier's carry-save tree in 16-bit register lanes ([`carries`]);
//! - eight products of at most 2^28 in magnitude stay below 2^31, so the 32-bit sums are
//!   widened to 64 bits every eight lanes;
//! - CACC's exact sum of each kernel's blocks runs for sixteen kernels at once
//!   ([`WeightRows::sum_exact`]).
//!
//! The block results are those of `Blocks::mac_deferred` bit for bit (test
//! `rows_match_the_block_kernel`). Used on CPUs with AVX-512 F and BW and POPCNT
//! ([`WeightRows::available`]), and with AVX2 and POPCNT as two registers of eight
//! kernels (`arith_rows_avx2`); `conv/compute_rows.rs` drives it.

use super::{Deferred, Fp48};
use core::arch::x86_64::{
    __m512i, __mmask32, _mm512_abs_epi16, _mm512_abs_epi64, _mm512_add_epi32, _mm512_add_epi64,
    _mm512_and_si512, _mm512_castsi512_si256, _mm512_cmpeq_epi32_mask, _mm512_cmpeq_epi64_mask,
    _mm512_cmpge_epi32_mask, _mm512_cmpgt_epu16_mask, _mm512_cmple_epi64_mask,
    _mm512_cmple_epu32_mask, _mm512_cvtepi32_epi64, _mm512_cvtepi32_epi8, _mm512_cvtepu8_epi64,
    _mm512_extracti64x4_epi64, _mm512_load_si512, _mm512_loadu_si512, _mm512_madd_epi16,
    _mm512_mask_add_epi32, _mm512_mask_cmple_epu32_mask, _mm512_mask_cmplt_epu32_mask,
    _mm512_mask_max_epu64, _mm512_mask_min_epu64, _mm512_mask_mov_epi16, _mm512_mask_sub_epi32,
    _mm512_maskz_compress_epi32, _mm512_maskz_mov_epi16, _mm512_maskz_mov_epi32,
    _mm512_maskz_mov_epi64, _mm512_max_epi32, _mm512_min_epu16, _mm512_movm_epi16,
    _mm512_mullo_epi32, _mm512_or_si512, _mm512_permutex2var_epi16, _mm512_set1_epi16,
    _mm512_set1_epi32, _mm512_set1_epi64, _mm512_setr_epi32, _mm512_setzero_si512,
    _mm512_slli_epi16, _mm512_slli_epi32, _mm512_slli_epi64, _mm512_sllv_epi16, _mm512_sllv_epi64,
    _mm512_srai_epi16, _mm512_srai_epi32, _mm512_srai_epi64, _mm512_srav_epi16, _mm512_srav_epi32,
    _mm512_srli_epi32, _mm512_storeu_si512, _mm512_sub_epi16, _mm512_sub_epi32, _mm512_sub_epi64,
    _mm512_ternarylogic_epi32, _mm512_test_epi16_mask, _mm512_test_epi64_mask, _mm512_xor_si512,
    _mm_loadl_epi64, _mm_storeu_si128,
};
use safe_arch::m256i;

/// Kernels computed together: one per 32-bit lane of a register.
pub const WIDTH: usize = 16;

/// Four times the coarse exponent of a zero weight: so far below every active lane's
/// (four times a coarse sum is 0 to 56) that its shift is never below 2^19.
const INACTIVE4: i32 = -(1 << 20);

/// Shifts at or above this belong to inactive lanes.
pub(super) const INACTIVE_SHIFT: i32 = 1 << 19;

/// One active lane of a data block: its index, four times its coarse exponent and its
/// signed mantissa (the low 16 bits of `val`, the high 16 bits zero).
#[derive(Debug, Clone, Copy, Default)]
pub struct DataLane {
    pub(super) lane: u32,
    pub(super) coarse4: i32,
    pub(super) val: i32,
}

/// The active lanes of blocks of fp16 operands, block after block.
#[derive(Debug, Clone)]
pub struct DataLanes {
    /// Where each block's lanes start, and where the last ends.
    start: Vec<u32>,
    lanes: Vec<DataLane>,
}

impl Default for DataLanes {
    fn default() -> Self {
        DataLanes {
            start: vec![0],
            lanes: Vec::new(),
        }
    }
}

impl DataLanes {
    /// Removes every block.
    pub fn clear(&mut self) {
        self.start.truncate(1);
        self.lanes.clear();
    }

    /// Appends the block of fp16 bit patterns `h` (lane `i` is `h[i]`).
    pub fn push_block(&mut self, h: &[u16]) {
        for (i, &h) in h.iter().enumerate() {
            if let Some((coarse4, val)) = decode(h) {
                self.lanes.push(DataLane {
                    lane: i as u32,
                    coarse4,
                    val,
                });
            }
        }
        self.start.push(self.lanes.len() as u32);
    }

    /// Appends the blocks of `other`.
    pub fn append(&mut self, other: &DataLanes) {
        let base = self.lanes.len() as u32;
        self.lanes.extend_from_slice(&other.lanes);
        self.start
            .extend(other.start[1..].iter().map(|&s| base + s));
    }

    /// The active lanes of block `i`.
    pub fn block(&self, i: usize) -> &[DataLane] {
        &self.lanes[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

/// An active operand (nonzero fp16 pattern) as the MAC cell takes it: four times its
/// coarse exponent and its signed pre-shifted mantissa in 16 bits (zero-extended).
#[inline]
fn decode(h: u16) -> Option<(i32, i32)> {
    let l = super::F16Lane::decode(h);
    l.active.then(|| {
        let m = l.mts as i16;
        let v = if l.sign { -m } else { m };
        (4 * i32::from(l.coarse), i32::from(v as u16))
    })
}

/// One row of [`WIDTH`] kernels' values, aligned for the kernel's loads.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Row(pub(super) [i32; WIDTH]);

/// The weight blocks of a layer as rows of [`WIDTH`] kernels: for each group of kernels,
/// operation and lane, four times the coarse exponents ([`INACTIVE4`] for a zero weight)
/// and the signed mantissas (the low 16 bits, zero above). Kernels past the layer's are
/// zero.
#[derive(Debug, Clone)]
pub struct WeightRows {
    ops: usize,
    lanes: usize,
    kernels: usize,
    /// Per (group, operation, lane): the coarse row, then the mantissa row (side by
    /// side, so that the first pass brings both into the cache).
    rows: Vec<[Row; 2]>,
    /// Whether the AVX-512 kernels run ([`WeightRows::wide`]).
    wide: bool,
}

impl WeightRows {
    /// Bound on the output indices [`WeightRows::mac`] takes (the deferred lanes keep
    /// them in 24 bits beside an 8-bit shift).
    pub const MAX_OWNERS: usize = 1 << 23;

    /// Whether this CPU computes weight rows (AVX-512 F and BW, or AVX2; POPCNT).
    /// `NVDLA_VP_NO_ROWS=1` turns them off (the block kernels then run, to compare).
    pub fn available() -> bool {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| {
            (Self::wide() || super::arith_avx2::available())
                && std::arch::is_x86_feature_detected!("popcnt")
                && std::env::var_os("NVDLA_VP_NO_ROWS").is_none_or(|v| v.is_empty() || v == "0")
        })
    }

    /// Whether the AVX-512 kernels run (sixteen kernels to a register), else the AVX2
    /// ones (`arith_rows_avx2`, two registers of eight).
    fn wide() -> bool {
        super::arith_avx512::available()
    }

    /// The rows of a layer's weights, on CPUs with AVX-512 F and BW or AVX2 (`None`
    /// elsewhere):
    /// `fill(k, op, block)` writes kernel `k`'s fp16 bit patterns for operation `op`
    /// (lane `i` at `block[i]`; `block` comes zeroed, with `lanes` lanes). Built on all
    /// cores, a group of kernels each.
    pub fn build(
        kernels: usize,
        ops: usize,
        lanes: usize,
        fill: impl Fn(usize, usize, &mut [u16]) + Sync,
    ) -> Option<Self> {
        use rayon::prelude::*;
        if !Self::available() || kernels == 0 || ops == 0 || lanes == 0 {
            return None;
        }
        let per_group = ops * lanes;
        let n = kernels.div_ceil(WIDTH) * per_group;
        let mut rows = vec![[Row([INACTIVE4; WIDTH]), Row([0; WIDTH])]; n];
        rows.par_chunks_mut(per_group)
            .enumerate()
            .for_each(|(g, rows)| {
                let mut block = vec![0u16; lanes];
                for k in g * WIDTH..kernels.min((g + 1) * WIDTH) {
                    let j = k % WIDTH;
                    for op in 0..ops {
                        block.fill(0);
                        fill(k, op, &mut block);
                        for (i, &h) in block.iter().enumerate() {
                            if let Some((c4, v)) = decode(h) {
                                let [coarse, val] = &mut rows[op * lanes + i];
                                coarse.0[j] = c4;
                                val.0[j] = v;
                            }
                        }
                    }
                }
            });
        Some(WeightRows {
            ops,
            lanes,
            kernels: kernels.next_multiple_of(WIDTH),
            rows,
            wide: Self::wide(),
        })
    }

    /// [`Fp48::sum_exact`] of [`WIDTH`] kernels at once: kernel `j`'s block results for
    /// operation `op` at `op * stride + j` of `exps` and `sums` (`stride` at least
    /// [`WIDTH`]). Eight kernels to a register: the lowest exponent, then the sum in
    /// 64-bit lanes when the exponents' spread leaves room for it (else the scalar sum).
    pub fn sum_exact(
        &self,
        exps: &[u8],
        sums: &[i64],
        ops: usize,
        stride: usize,
    ) -> [Option<Fp48>; WIDTH] {
        let end = (ops.max(1) - 1) * stride + WIDTH;
        assert!(stride >= WIDTH && ops > 0 && exps.len() >= end && sums.len() >= end);
        // SAFETY: `self` exists only where `available()` found AVX-512 F (`wide`) or
        // AVX2.
        #[allow(unsafe_code)]
        unsafe {
            if self.wide {
                sum_exact16(exps, sums, ops, stride)
            } else {
                super::arith_rows_avx2::sum_exact(exps, sums, ops, stride)
            }
        }
    }

    /// For the active lanes `d` of one data block, operation `op` and the kernels `ks`
    /// (`ks.start` a multiple of [`WIDTH`]): each kernel `k`'s block exponent and the sum
    /// of its aligned products except the deferred lanes, written at
    /// `slot + k - ks.start` of the two output slices (which have room for whole rows of
    /// [`WIDTH`] kernels there), as `Blocks::mac_deferred` gives them; the deferred lanes
    /// go to `deferred` with that index as their owner. Blocks without NaN operands only.
    pub fn mac(
        &self,
        d: &[DataLane],
        op: usize,
        ks: std::ops::Range<usize>,
        slot: usize,
        (exps, sums): (&mut [u8], &mut [i64]),
        deferred: &mut Deferred,
    ) {
        let end = slot + ks.len().next_multiple_of(WIDTH);
        assert!(ks.start.is_multiple_of(WIDTH) && ks.end <= self.kernels && op < self.ops);
        assert!(end < Self::MAX_OWNERS && exps.len() >= end && sums.len() >= end);
        for k0 in ks.clone().step_by(WIDTH) {
            let g = k0 / WIDTH;
            let rows = (g * self.ops + op) * self.lanes..(g * self.ops + op + 1) * self.lanes;
            let at = slot + k0 - ks.start;
            let pending = &mut deferred.rows;
            pending.reserve(d.len() * WIDTH + WIDTH);
            let (rows, out) = (&self.rows[rows], (&mut exps[at..], &mut sums[at..]));
            // SAFETY: `WeightRows` exists only where `available()` found POPCNT and
            // AVX-512 F and BW (`wide`) or AVX2 (`WeightRows::build`).
            #[allow(unsafe_code)]
            unsafe {
                if self.wide {
                    mac_group(rows, d, at, out, pending)
                } else {
                    super::arith_rows_avx2::mac_group(rows, d, at, out, pending)
                }
            };
        }
    }
}

/// The row as a register.
#[inline]
#[target_feature(enable = "avx512f")]
fn load(r: &Row) -> __m512i {
    // SAFETY: a `Row` is 64 readable bytes aligned to 64.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_load_si512(r.0.as_ptr().cast())
    }
}

/// Lanes of [`WeightRows::mac`] left for the Booth multiplier, `n` of them: signed
/// mantissas as `w | d << 16` in `operands`, and `shift | owner << 8` (the shift in bits,
/// the owning block's index) in `keys`. The arrays are kept at least [`WIDTH`] entries
/// longer than `n` so that the kernel stores whole registers.
#[derive(Debug, Clone, Default)]
pub struct Pending {
    pub(super) n: usize,
    pub(super) operands: Vec<i32>,
    pub(super) keys: Vec<i32>,
}

impl Pending {
    /// Room for `more` entries after the `n` there are, plus two registers' (the kernel
    /// stores whole registers, `resolve` reads thirty-two entries at a time).
    fn reserve(&mut self, more: usize) {
        let len = self.n + more + 2 * WIDTH;
        if self.operands.len() < len {
            self.operands.resize(len, 0);
            self.keys.resize(len, 0);
        }
    }

    /// Adds each entry's aligned product to `sums[owner]` and forgets the entries: up
    /// to 16 bits, the floor of the exact product less the carry out of the Booth
    /// multiplier's low bits (`booth_carries`); beyond, the whole multiplier.
    pub fn resolve(&mut self, sums: &mut [i64]) {
        // Every `Deferred` resolves its `Pending`, on hosts without AVX-512 too (where it
        // stays empty): the kernel must not run there, not even on no entries.
        if self.n == 0 {
            return;
        }
        // SAFETY: `Pending` is filled only by the kernels of `WeightRows::mac`, which
        // run only where `WeightRows::available()` found AVX-512 F and BW or AVX2; the
        // AVX-512 resolver runs only where `arith_avx512::available()` found them.
        #[allow(unsafe_code)]
        unsafe {
            if WeightRows::wide() {
                resolve(&self.operands, &self.keys, self.n, sums)
            } else {
                super::arith_rows_avx2::resolve(&self.operands, &self.keys, self.n, sums)
            }
        };
        self.n = 0;
    }
}

/// [`Pending::resolve`] on the first `n` entries, thirty-two at a time (`operands` and
/// `keys` hold at least `n` rounded up to 32).
#[target_feature(enable = "avx512f,avx512bw")]
fn resolve(operands: &[i32], keys: &[i32], n: usize, sums: &mut [i64]) {
    const N: usize = 2 * WIDTH;
    let (mut v, mut sh, mut owner) = ([0i32; N], [0i32; N], [0i32; N]);
    let low_byte = _mm512_set1_epi32(0xff);
    // Word `i` of the thirty-two entries' two registers: the high (data) and low
    // (weight) halves, side by side.
    let high = _mm512_setr_epi32(
        0x0003_0001,
        0x0007_0005,
        0x000b_0009,
        0x000f_000d,
        0x0013_0011,
        0x0017_0015,
        0x001b_0019,
        0x001f_001d,
        0x0023_0021,
        0x0027_0025,
        0x002b_0029,
        0x002f_002d,
        0x0033_0031,
        0x0037_0035,
        0x003b_0039,
        0x003f_003d,
    );
    let low = _mm512_sub_epi16(high, _mm512_set1_epi16(1));
    for at in (0..n).step_by(N) {
        let o = [load_at(operands, at), load_at(operands, at + WIDTH)];
        let k = [load_at(keys, at), load_at(keys, at + WIDTH)];
        let d16 = _mm512_permutex2var_epi16(o[0], high, o[1]);
        let w16 = _mm512_permutex2var_epi16(o[0], low, o[1]);
        let s16 = _mm512_min_epu16(
            _mm512_and_si512(
                _mm512_permutex2var_epi16(k[0], low, k[1]),
                _mm512_set1_epi16(0xff),
            ),
            _mm512_set1_epi16(16),
        );
        let carry = carries(d16, w16, s16);
        for h in 0..2 {
            let d = _mm512_srai_epi32::<16>(o[h]);
            let w = _mm512_srai_epi32::<16>(_mm512_slli_epi32::<16>(o[h]));
            let s = _mm512_and_si512(k[h], low_byte);
            // The floor of the aligned product less the carry (right up to 16 bits).
            let p = _mm512_srav_epi32(_mm512_mullo_epi32(d, w), s);
            let c = (carry >> (h * WIDTH)) as u16;
            let p = _mm512_mask_sub_epi32(p, c, p, _mm512_set1_epi32(1));
            store(&mut v, h * WIDTH, p);
            store(&mut sh, h * WIDTH, s);
            store(&mut owner, h * WIDTH, _mm512_srli_epi32::<8>(k[h]));
        }
        for j in 0..N.min(n - at) {
            let p = if sh[j] <= 16 {
                v[j]
            } else {
                let o = operands[at + j];
                let (dv, wv) = (o >> 16, i32::from(o as i16));
                let neg = (dv ^ wv) < 0;
                super::booth_product(neg, wv.unsigned_abs(), dv.unsigned_abs(), sh[j] as u32)
            };
            sums[owner[j] as usize] += i64::from(p);
        }
    }
}

/// `super::arith_avx2::booth_carries` on thirty-two 16-bit lanes in registers (signed
/// mantissas `d`, `w`, shifts `s` of 16 bits at most): bit `j` set where the Booth
/// multiplier loses the carry out of lane `j`'s low `s` bits. The same bit operations
/// (test `carries_in_registers_match_the_arrays`).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn carries(d: __m512i, w: __m512i, s: __m512i) -> __mmask32 {
    let one = _mm512_set1_epi16(1);
    let neg = _mm512_srai_epi16::<15>(_mm512_xor_si512(d, w));
    let da = _mm512_abs_epi16(d);
    let da2 = _mm512_slli_epi16::<1>(da);
    // The multiplier's bits, shifted left once, complemented for a negative product.
    let wm = _mm512_xor_si512(_mm512_slli_epi16::<1>(_mm512_abs_epi16(w)), neg);
    let mut rows = [_mm512_setzero_si512(); 8];
    let mut inv = [_mm512_setzero_si512(); 8];
    for i in 0..8 {
        let t = _mm512_srav_epi16(wm, _mm512_set1_epi16(2 * i as i16));
        let b0 = _mm512_test_epi16_mask(t, one);
        let b1 = _mm512_test_epi16_mask(t, _mm512_set1_epi16(2));
        let b2 = _mm512_test_epi16_mask(t, _mm512_set1_epi16(4));
        let mag1 = b1 ^ b0;
        let mag2 = !mag1 & (b2 ^ b1);
        let negative = b2 & !(b1 & b0);
        let v = _mm512_mask_mov_epi16(_mm512_maskz_mov_epi16(mag1, da), mag2, da2);
        rows[i] = _mm512_xor_si512(v, _mm512_movm_epi16(negative));
        inv[i] = _mm512_maskz_mov_epi16(negative, one);
    }
    let (a0, a1) = csa5([
        rows[0],
        or(_mm512_slli_epi16::<2>(rows[1]), inv[0]),
        or(
            _mm512_slli_epi16::<4>(rows[2]),
            _mm512_slli_epi16::<2>(inv[1]),
        ),
        or(
            _mm512_slli_epi16::<6>(rows[3]),
            _mm512_slli_epi16::<4>(inv[2]),
        ),
        _mm512_slli_epi16::<6>(inv[3]),
    ]);
    let (b0, b1) = csa5([
        _mm512_slli_epi16::<8>(rows[4]),
        or(
            _mm512_slli_epi16::<10>(rows[5]),
            _mm512_slli_epi16::<8>(inv[4]),
        ),
        or(
            _mm512_slli_epi16::<12>(rows[6]),
            _mm512_slli_epi16::<10>(inv[5]),
        ),
        or(
            _mm512_slli_epi16::<14>(rows[7]),
            _mm512_slli_epi16::<12>(inv[6]),
        ),
        _mm512_slli_epi16::<14>(inv[7]),
    ]);
    let (x, c) = csa(a0, a1, b0);
    let (p0, p1) = csa(x, c, b1);
    let m = _mm512_sub_epi16(_mm512_sllv_epi16(one, s), one);
    let (a, b) = (_mm512_and_si512(p0, m), _mm512_and_si512(p1, m));
    _mm512_cmpgt_epu16_mask(a, _mm512_sub_epi16(m, b))
}

/// Bitwise or.
#[inline]
#[target_feature(enable = "avx512f")]
fn or(a: __m512i, b: __m512i) -> __m512i {
    _mm512_or_si512(a, b)
}

/// One carry-save adder on 16-bit lanes: (sum, carry << 1).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn csa(a: __m512i, b: __m512i, c: __m512i) -> (__m512i, __m512i) {
    let sum = _mm512_ternarylogic_epi32::<0x96>(a, b, c);
    let majority = _mm512_ternarylogic_epi32::<0xe8>(a, b, c);
    (sum, _mm512_slli_epi16::<1>(majority))
}

/// Five rows reduced as the MAC cell's adder tree does (`super::csa5`).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn csa5(v: [__m512i; 5]) -> (__m512i, __m512i) {
    let (s, c) = csa(v[0], v[1], v[2]);
    let (s, c) = csa(s, c, v[3]);
    csa(s, c, v[4])
}

/// Sixteen entries of `v` from `at` as a register.
#[inline]
#[target_feature(enable = "avx512f")]
fn load_at(v: &[i32], at: usize) -> __m512i {
    let src: &[i32; WIDTH] = v[at..at + WIDTH].try_into().expect("reserved");
    // SAFETY: `src` is 64 readable bytes.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_loadu_si512(src.as_ptr().cast())
    }
}

/// Sixteen entries from `at` of `v` (which has them).
#[inline]
#[target_feature(enable = "avx512f")]
fn store(v: &mut [i32], at: usize, x: __m512i) {
    let dst: &mut [i32; WIDTH] = (&mut v[at..at + WIDTH]).try_into().expect("reserved");
    // SAFETY: `dst` is 64 writable bytes.
    #[allow(unsafe_code)]
    unsafe {
        _mm512_storeu_si512(dst.as_mut_ptr().cast(), x)
    }
}

/// One data block against one row group: per kernel four times the block exponent
/// (-1 when no lane is active on both sides) and the sum of the aligned products that
/// are not deferred. The deferred lanes go to `pending` (which has room for
/// `WIDTH * (d.len() + 1)` more) with owner `base + j * stride` for kernel `j`.
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
fn mac_group(
    rows: &[[Row; 2]],
    d: &[DataLane],
    base: usize,
    (exps, sums): (&mut [u8], &mut [i64]),
    pending: &mut Pending,
) {
    // The block exponents: the largest coarse sum per kernel (-1 before any active one).
    let mut max = _mm512_set1_epi32(-1);
    for l in d {
        let c = _mm512_add_epi32(
            load(&rows[l.lane as usize][0]),
            _mm512_set1_epi32(l.coarse4),
        );
        max = _mm512_max_epi32(max, c);
    }
    let eight = _mm512_set1_epi32(8);
    let low_byte = _mm512_set1_epi32(0xff);
    let inactive = _mm512_set1_epi32(INACTIVE_SHIFT);
    let zero = _mm512_setzero_si512();
    // `owner << 8` per kernel, for the deferred lanes' keys.
    let owners = _mm512_slli_epi32::<8>(_mm512_add_epi32(
        _mm512_set1_epi32(base as i32),
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    ));
    let (mut acc, mut lo, mut hi) = (zero, zero, zero);
    let mut np = pending.n;
    for (n, l) in d.iter().enumerate() {
        let i = l.lane as usize;
        // The shift in bits: 4 · (block exponent - coarse sum).
        let a = _mm512_sub_epi32(max, _mm512_set1_epi32(l.coarse4));
        let s = _mm512_sub_epi32(a, load(&rows[i][0]));
        // The exact product: the data's 16 bits against the weight's, high halves zero.
        let w = load(&rows[i][1]);
        let dv = _mm512_set1_epi32(l.val);
        let p = _mm512_madd_epi16(dv, w);
        let q = _mm512_srav_epi32(p, s);
        let near = _mm512_cmple_epu32_mask(s, eight);
        let at8 = _mm512_cmpeq_epi32_mask(s, eight);
        let fix8 = _mm512_mask_cmple_epu32_mask(at8, _mm512_and_si512(p, low_byte), eight);
        acc = _mm512_mask_add_epi32(acc, near & !fix8, acc, q);
        // Active lanes aligned by 12 bits or more, and the 8-bit lanes to fix, stored
        // side by side (the stores past them are overwritten by the next).
        let far = _mm512_mask_cmplt_epu32_mask(!near, s, inactive);
        let bits = far | fix8;
        let operands = _mm512_or_si512(w, _mm512_set1_epi32(l.val << 16));
        let keys = _mm512_or_si512(s, owners);
        store(
            &mut pending.operands,
            np,
            _mm512_maskz_compress_epi32(bits, operands),
        );
        store(
            &mut pending.keys,
            np,
            _mm512_maskz_compress_epi32(bits, keys),
        );
        np += bits.count_ones() as usize;
        if n % 8 == 7 {
            lo = _mm512_add_epi64(lo, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc)));
            hi = _mm512_add_epi64(
                hi,
                _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(acc)),
            );
            acc = zero;
        }
    }
    pending.n = np;
    lo = _mm512_add_epi64(lo, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc)));
    hi = _mm512_add_epi64(
        hi,
        _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(acc)),
    );
    // Kernels without an active lane: exponent and sum 0.
    let active = _mm512_cmpge_epi32_mask(max, zero);
    let exps: &mut [u8; WIDTH] = (&mut exps[..WIDTH]).try_into().expect("room for a row");
    let sums: &mut [i64; WIDTH] = (&mut sums[..WIDTH]).try_into().expect("room for a row");
    // SAFETY: `exps` is 16 writable bytes, `sums` 128.
    #[allow(unsafe_code)]
    unsafe {
        _mm_storeu_si128(
            exps.as_mut_ptr().cast(),
            _mm512_cvtepi32_epi8(_mm512_maskz_mov_epi32(active, max)),
        );
        _mm512_storeu_si512(
            sums.as_mut_ptr().cast(),
            _mm512_maskz_mov_epi64(active as u8, lo),
        );
        _mm512_storeu_si512(
            sums[8..].as_mut_ptr().cast(),
            _mm512_maskz_mov_epi64((active >> 8) as u8, hi),
        );
    }
}

#[target_feature(enable = "avx512f")]
fn sum_exact16(exps: &[u8], sums: &[i64], ops: usize, stride: usize) -> [Option<Fp48>; WIDTH] {
    let mut out = [None; WIDTH];
    // Spreads of exponents for which every shifted 38-bit mantissa and the sum of `ops`
    // magnitudes stay below 2^63.
    let limit = 63 - 38 - i64::from(usize::BITS - ops.leading_zeros());
    for half in 0..2 {
        let at = |op: usize| op * stride + half * 8;
        let (mut emin, mut emax) = (_mm512_set1_epi64(255), _mm512_setzero_si512());
        let mut nan: u8 = 0;
        for op in 0..ops {
            let (e, m) = load_results(exps, sums, at(op));
            let nonzero = _mm512_test_epi64_mask(m, m);
            nan |= nonzero & _mm512_cmpeq_epi64_mask(e, _mm512_set1_epi64(0x3f));
            emin = _mm512_mask_min_epu64(emin, nonzero, emin, e);
            emax = _mm512_mask_max_epu64(emax, nonzero, emax, e);
        }
        let fits =
            !nan & _mm512_cmple_epi64_mask(_mm512_sub_epi64(emax, emin), _mm512_set1_epi64(limit));
        let (mut total, mut magnitude, mut ones) = (
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
        );
        if fits != 0 {
            for op in 0..ops {
                let (e, m) = load_results(exps, sums, at(op));
                // Zero mantissas (whose exponent may be below the lowest) shift to 0.
                let v = _mm512_sllv_epi64(m, _mm512_sub_epi64(e, emin));
                total = _mm512_add_epi64(total, v);
                let a = _mm512_abs_epi64(v);
                magnitude = _mm512_add_epi64(magnitude, a);
                ones = _mm512_or_si512(ones, a);
            }
        }
        let (emin, total) = (lanes64(emin), lanes64(total));
        let (magnitude, ones) = (lanes64(magnitude), lanes64(ones));
        for j in 0..8 {
            out[half * 8 + j] = if nan & (1 << j) != 0 {
                None
            } else if emin[j] == 255 {
                Some(Fp48::default())
            } else if fits & (1 << j) != 0 {
                Fp48::from_exact(
                    emin[j] as u8,
                    i128::from(total[j]),
                    u128::from(magnitude[j] as u64),
                    u128::from(ones[j] as u64),
                )
            } else {
                let e: Vec<u8> = (0..ops).map(|op| exps[at(op) + j]).collect();
                let m: Vec<i64> = (0..ops).map(|op| sums[at(op) + j]).collect();
                Fp48::sum_exact(&e, &m)
            };
        }
    }
    out
}

/// Eight block results from `at`: exponents and mantissas (sign-extended from 38 bits,
/// as CACC takes them).
#[inline]
#[target_feature(enable = "avx512f")]
fn load_results(exps: &[u8], sums: &[i64], at: usize) -> (__m512i, __m512i) {
    let e: &[u8; 8] = exps[at..at + 8].try_into().expect("eight results");
    let m: &[i64; 8] = sums[at..at + 8].try_into().expect("eight results");
    // SAFETY: `e` is 8 readable bytes, `m` 64.
    #[allow(unsafe_code)]
    let (e, m) = unsafe {
        (
            _mm512_cvtepu8_epi64(_mm_loadl_epi64(e.as_ptr().cast())),
            _mm512_loadu_si512(m.as_ptr().cast()),
        )
    };
    (e, _mm512_srai_epi64::<26>(_mm512_slli_epi64::<26>(m)))
}

/// The eight 64-bit lanes of `v`.
#[inline]
#[target_feature(enable = "avx512f")]
fn lanes64(v: __m512i) -> [i64; 8] {
    let a: [i64; 4] = m256i(_mm512_castsi512_si256(v)).into();
    let b: [i64; 4] = m256i(_mm512_extracti64x4_epi64::<1>(v)).into();
    [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_in_registers_match_the_arrays() {
        // The register form against `booth_carries` (checked exhaustively against the
        // Booth multiplier) on random and extreme operands at every shift they take.
        if !WeightRows::wide() {
            return;
        }
        let mut x = 0x5eed_u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) as i32
        };
        let edge = [1, 2, 3, 0x3ff8, 0x3fff, 0x2000, 0x1fff, 0x400, 0x7ff];
        for it in 0..200_000 {
            let lane = |r: i32, it: usize| -> i16 {
                let m = if it.is_multiple_of(3) {
                    edge[r as usize % edge.len()]
                } else {
                    1 + r % 0x3fff
                };
                if r & 0x4000 != 0 {
                    -m as i16
                } else {
                    m as i16
                }
            };
            let d: [i16; 32] = std::array::from_fn(|_| lane(next(), it));
            let w: [i16; 32] = std::array::from_fn(|_| lane(next(), it));
            let s: [u16; 32] = std::array::from_fn(|_| [4, 8, 12, 16][next() as usize % 4]);
            let want = super::super::arith_avx2::booth_carries(&d, &w, &s);
            // SAFETY: `wide()` found AVX-512 F and BW.
            #[allow(unsafe_code)]
            let got = unsafe {
                let reg = |a: [i16; 32]| _mm512_loadu_si512(a.as_ptr().cast());
                carries(reg(d), reg(w), reg(s.map(|v| v as i16)))
            };
            for j in 0..32 {
                assert_eq!(
                    u16::from(got >> j & 1 == 1),
                    want[j],
                    "{} x {} >> {}",
                    d[j],
                    w[j],
                    s[j]
                );
            }
        }
    }
}
