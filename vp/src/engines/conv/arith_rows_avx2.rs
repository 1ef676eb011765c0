//! The weight rows' kernels on AVX2 (CPUs without AVX-512): the same arithmetic as the
//! AVX-512 kernels of `arith_rows` (whose documentation gives it and its bounds), a row
//! of sixteen kernels taken as two registers of eight.
//!
//! What AVX-512 does with mask registers is done with vector masks here: the lanes to
//! defer are picked from the compare results with `movemask` and packed to the front of
//! a register by a permutation from a table ([`COMPRESS`]), so that the deferred lanes
//! are stored side by side as `vpcompressd` stores them. The deferred lanes are resolved
//! with the Booth multiplier's carries in 16-bit lanes (`arith_avx2::booth_carries`,
//! checked exhaustively against the multiplier), and CACC's exact sum runs on arrays
//! that the compiler vectorises.

use super::arith_rows::{DataLane, Pending, Row, INACTIVE_SHIFT, WIDTH};
use super::{booth_product, Fp48};
use core::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256,
    _mm256_castsi256_ps, _mm256_castsi256_si128, _mm256_cmpeq_epi32, _mm256_cmpgt_epi32,
    _mm256_cvtepi32_epi64, _mm256_extracti128_si256, _mm256_load_si256, _mm256_madd_epi16,
    _mm256_max_epi32, _mm256_movemask_ps, _mm256_or_si256, _mm256_permutevar8x32_epi32,
    _mm256_set1_epi32, _mm256_setr_epi32, _mm256_setzero_si256, _mm256_slli_epi32,
    _mm256_srav_epi32, _mm256_srlv_epi32, _mm256_storeu_si256, _mm256_sub_epi32,
};

/// Kernels per register.
const HALF: usize = WIDTH / 2;

/// For each 8-bit mask, the indices of its set bits in order, a nibble each (the rest
/// zero): the permutation that packs those lanes to the front of a register.
static COMPRESS: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut m = 0;
    while m < 256 {
        let (mut v, mut n, mut i) = (0u32, 0, 0);
        while i < 8 {
            if m & (1 << i) != 0 {
                v |= (i as u32) << (4 * n);
                n += 1;
            }
            i += 1;
        }
        t[m] = v;
        m += 1;
    }
    t
};

/// Half `h` of a row (kernels `8h..8h + 8`) as a register.
#[inline]
#[target_feature(enable = "avx2")]
fn load(r: &Row, h: usize) -> __m256i {
    let half = &r.0[h * HALF..][..HALF];
    // SAFETY: a `Row` is 64 bytes aligned to 64, so each half is 32 readable bytes
    // aligned to 32.
    #[allow(unsafe_code)]
    unsafe {
        _mm256_load_si256(half.as_ptr().cast())
    }
}

/// Stores a register at `v[at..at + 8]` (which exists).
#[inline]
#[target_feature(enable = "avx2")]
fn store(v: &mut [i32], at: usize, x: __m256i) {
    let dst: &mut [i32; HALF] = (&mut v[at..at + HALF]).try_into().expect("reserved");
    // SAFETY: `dst` is 32 writable bytes.
    #[allow(unsafe_code)]
    unsafe {
        _mm256_storeu_si256(dst.as_mut_ptr().cast(), x)
    }
}

/// The four 64-bit lanes of `v`.
#[inline]
#[target_feature(enable = "avx2")]
fn lanes64(v: __m256i) -> [i64; 4] {
    safe_arch::m256i(v).into()
}

/// `arith_rows::mac_group` on AVX2: one data block against one row group, the block
/// exponents (times four, -1 when no lane is active on both sides) and the sums of the
/// aligned products that are not deferred at `exps[..16]` and `sums[..16]`; the
/// deferred lanes to `pending` (which has room for `WIDTH * (d.len() + 1)` more) with
/// owner `base + j` for kernel `j`.
#[target_feature(enable = "avx2,popcnt")]
pub(super) fn mac_group(
    rows: &[[Row; 2]],
    d: &[DataLane],
    base: usize,
    (exps, sums): (&mut [u8], &mut [i64]),
    pending: &mut Pending,
) {
    // The block exponents: the largest coarse sum per kernel (-1 before any active one).
    let mut max = [_mm256_set1_epi32(-1); 2];
    for l in d {
        let c = _mm256_set1_epi32(l.coarse4);
        let row = &rows[l.lane as usize][0];
        for (h, m) in max.iter_mut().enumerate() {
            *m = _mm256_max_epi32(*m, _mm256_add_epi32(load(row, h), c));
        }
    }
    let nine = _mm256_set1_epi32(9);
    let eight = _mm256_set1_epi32(8);
    let low_byte = _mm256_set1_epi32(0xff);
    let inactive = _mm256_set1_epi32(INACTIVE_SHIFT);
    let nibbles = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    let zero = _mm256_setzero_si256();
    // `owner << 8` per kernel, for the deferred lanes' keys.
    let owners: [__m256i; 2] = std::array::from_fn(|h| {
        _mm256_slli_epi32::<8>(_mm256_add_epi32(
            _mm256_set1_epi32((base + h * HALF) as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        ))
    });
    let mut acc = [zero; 2];
    // Per half, the 64-bit sums of kernels 0-3 and 4-7.
    let mut wide = [[zero; 2]; 2];
    let mut np = pending.n;
    for (n, l) in d.iter().enumerate() {
        let [coarse, val] = &rows[l.lane as usize];
        let c4 = _mm256_set1_epi32(l.coarse4);
        let dv = _mm256_set1_epi32(l.val);
        let dhigh = _mm256_set1_epi32(l.val << 16);
        for h in 0..2 {
            // The shift in bits: 4 · (block exponent - coarse sum); never negative.
            let s = _mm256_sub_epi32(_mm256_sub_epi32(max[h], c4), load(coarse, h));
            // The exact product: the data's 16 bits against the weight's, high halves 0.
            let w = load(val, h);
            let p = _mm256_madd_epi16(dv, w);
            let q = _mm256_srav_epi32(p, s);
            let near = _mm256_cmpgt_epi32(nine, s);
            let at8 = _mm256_cmpeq_epi32(s, eight);
            let fix8 =
                _mm256_and_si256(at8, _mm256_cmpgt_epi32(nine, _mm256_and_si256(p, low_byte)));
            acc[h] = _mm256_add_epi32(acc[h], _mm256_and_si256(_mm256_andnot_si256(fix8, near), q));
            // Active lanes aligned by 12 bits or more, and the 8-bit lanes to fix,
            // packed to the front and stored side by side (the stores past them are
            // overwritten by the next).
            let far = _mm256_andnot_si256(near, _mm256_cmpgt_epi32(inactive, s));
            let bits = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(far, fix8))) as u32;
            let perm =
                _mm256_srlv_epi32(_mm256_set1_epi32(COMPRESS[bits as usize] as i32), nibbles);
            let operands = _mm256_or_si256(w, dhigh);
            let keys = _mm256_or_si256(s, owners[h]);
            store(
                &mut pending.operands,
                np,
                _mm256_permutevar8x32_epi32(operands, perm),
            );
            store(
                &mut pending.keys,
                np,
                _mm256_permutevar8x32_epi32(keys, perm),
            );
            np += bits.count_ones() as usize;
        }
        // Eight products below 2^28 in magnitude each stay below 2^31.
        if n % 8 == 7 {
            widen(&mut wide, &mut acc);
        }
    }
    pending.n = np;
    widen(&mut wide, &mut acc);
    for h in 0..2 {
        let m: [i32; HALF] = safe_arch::m256i(max[h]).into();
        let s = [lanes64(wide[h][0]), lanes64(wide[h][1])];
        for j in 0..HALF {
            // Kernels without an active lane: exponent and sum 0.
            let active = m[j] >= 0;
            exps[h * HALF + j] = if active { m[j] as u8 } else { 0 };
            sums[h * HALF + j] = if active { s[j / 4][j % 4] } else { 0 };
        }
    }
}

/// Adds the 32-bit sums to the 64-bit ones and clears them.
#[inline]
#[target_feature(enable = "avx2")]
fn widen(wide: &mut [[__m256i; 2]; 2], acc: &mut [__m256i; 2]) {
    for h in 0..2 {
        let a = acc[h];
        wide[h][0] = _mm256_add_epi64(wide[h][0], _mm256_cvtepi32_epi64(_mm256_castsi256_si128(a)));
        wide[h][1] = _mm256_add_epi64(
            wide[h][1],
            _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(a)),
        );
        acc[h] = _mm256_setzero_si256();
    }
}

/// `Pending::resolve` on AVX2: the first `n` entries, thirty-two at a time through the
/// Booth multiplier's carries (`operands` and `keys` hold at least `n`).
#[target_feature(enable = "avx2")]
pub(super) fn resolve(operands: &[i32], keys: &[i32], n: usize, sums: &mut [i64]) {
    use super::arith_avx2::{booth_carries, CARRY_LANES as N};
    for at in (0..n).step_by(N) {
        let m = N.min(n - at);
        // Padding lanes: zero products.
        let (mut d, mut w, mut s) = ([0i16; N], [0i16; N], [16u16; N]);
        for j in 0..m {
            let o = operands[at + j];
            d[j] = (o >> 16) as i16;
            w[j] = o as i16;
            s[j] = ((keys[at + j] & 0xff) as u16).min(16);
        }
        let carry = booth_carries(&d, &w, &s);
        for j in 0..m {
            let k = keys[at + j];
            let shift = (k & 0xff) as u32;
            let p = if shift <= 16 {
                ((i32::from(d[j]) * i32::from(w[j])) >> shift) - i32::from(carry[j])
            } else {
                let neg = (d[j] ^ w[j]) < 0;
                booth_product(
                    neg,
                    w[j].unsigned_abs().into(),
                    d[j].unsigned_abs().into(),
                    shift,
                )
            };
            sums[(k as u32 >> 8) as usize] += i64::from(p);
        }
    }
}

/// `WeightRows::sum_exact` on arrays: the lowest exponent of each kernel's nonzero
/// results, then their sum in 64 bits when the exponents' spread leaves room for it
/// (else the scalar sum).
#[target_feature(enable = "avx2")]
pub(super) fn sum_exact(
    exps: &[u8],
    sums: &[i64],
    ops: usize,
    stride: usize,
) -> [Option<Fp48>; WIDTH] {
    // Spreads of exponents for which every shifted 38-bit mantissa and the sum of `ops`
    // magnitudes stay below 2^63.
    let limit = 63 - 38 - i64::from(usize::BITS - ops.leading_zeros());
    // Mantissas as CACC takes them: sign-extended from 38 bits.
    let mant = |v: i64| (v << 26) >> 26;
    let (mut emin, mut emax, mut nan) = ([255i64; WIDTH], [0i64; WIDTH], [false; WIDTH]);
    for op in 0..ops {
        let e: &[u8; WIDTH] = exps[op * stride..][..WIDTH].try_into().expect("a row");
        let m: &[i64; WIDTH] = sums[op * stride..][..WIDTH].try_into().expect("a row");
        for j in 0..WIDTH {
            if mant(m[j]) != 0 {
                let e = i64::from(e[j]);
                nan[j] |= e == 0x3f;
                emin[j] = emin[j].min(e);
                emax[j] = emax[j].max(e);
            }
        }
    }
    let fits: [bool; WIDTH] = std::array::from_fn(|j| !nan[j] && emax[j] - emin[j] <= limit);
    let (mut total, mut magnitude, mut ones) = ([0i64; WIDTH], [0i64; WIDTH], [0i64; WIDTH]);
    if fits.contains(&true) {
        for op in 0..ops {
            let e: &[u8; WIDTH] = exps[op * stride..][..WIDTH].try_into().expect("a row");
            let m: &[i64; WIDTH] = sums[op * stride..][..WIDTH].try_into().expect("a row");
            for j in 0..WIDTH {
                let m = mant(m[j]);
                // Zero mantissas (whose exponent may be below the lowest) add nothing.
                if fits[j] && m != 0 {
                    let v = m << (i64::from(e[j]) - emin[j]);
                    total[j] += v;
                    magnitude[j] += v.abs();
                    ones[j] |= v.abs();
                }
            }
        }
    }
    std::array::from_fn(|j| {
        if nan[j] {
            None
        } else if emin[j] == 255 {
            Some(Fp48::default())
        } else if fits[j] {
            Fp48::from_exact(
                emin[j] as u8,
                i128::from(total[j]),
                u128::from(magnitude[j] as u64),
                u128::from(ones[j] as u64),
            )
        } else {
            let e: Vec<u8> = (0..ops).map(|op| exps[op * stride + j]).collect();
            let m: Vec<i64> = (0..ops).map(|op| sums[op * stride + j]).collect();
            Fp48::sum_exact(&e, &m)
        }
    })
}
