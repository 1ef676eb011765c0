//! The weight rows' kernels on AVX2 (CPUs without AVX-512): the same arithmetic as the
//! AVX-512 kernels of `arith_rows` (whose documentation gives it and its bounds), a row
//! of sixteen kernels taken as two registers of eight.
//!
//! What AVX-512 does with mask registers is done with vector masks here: the lanes to
//! defer are picked from the compare results with `movemask` and packed to the front of
//! a register by a permutation from a table ([`COMPRESS`]), so that the deferred lanes
//! are stored side by side as `vpcompressd` stores them. The deferred lanes are resolved
//! with the Booth multiplier's carries in 16-bit lanes, as the AVX-512 kernel does, and
//! CACC's exact sum four kernels to a register. AVX2 lacks a variable 16-bit shift, an
//! unsigned 16-bit compare and a 64-bit arithmetic shift; each has its substitute
//! below.

use super::arith_rows::{DataLane, Pending, Row, INACTIVE_SHIFT, WIDTH};
use super::{booth_product, Fp48};
use core::arch::x86_64::*;

/// Kernels per register.
const HALF: usize = WIDTH / 2;

/// For each 8-bit mask, the indices of its set bits in order (the rest zero): the
/// permutation that packs those lanes to the front of a register. Aligned for loads.
#[repr(C, align(32))]
struct Compress([[u32; 8]; 256]);

static COMPRESS: Compress = {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut n, mut i) = (0, 0);
        while i < 8 {
            if m & (1 << i) != 0 {
                t[m][n] = i as u32;
                n += 1;
            }
            i += 1;
        }
        m += 1;
    }
    Compress(t)
};

/// The permutation of [`COMPRESS`] for `bits` (below 256).
#[inline]
#[target_feature(enable = "avx2")]
fn compress_perm(bits: u32) -> __m256i {
    let p = &COMPRESS.0[bits as usize & 0xff];
    // SAFETY: `p` is 32 readable bytes aligned to 32.
    #[allow(unsafe_code)]
    unsafe {
        _mm256_load_si256(p.as_ptr().cast())
    }
}

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
    let bound = _mm256_set1_epi32(8 * 256 + 247);
    let low_byte = _mm256_set1_epi32(0xff);
    let inactive = _mm256_set1_epi32(INACTIVE_SHIFT);
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
            // Added now: lanes aligned by 0 or 4 bits, and by 8 when the product's low
            // byte is above 8; that is `s · 256 + (255 - low byte)` below `8 · 256 + 247`.
            let key = _mm256_or_si256(_mm256_slli_epi32::<8>(s), _mm256_andnot_si256(p, low_byte));
            let now = _mm256_cmpgt_epi32(bound, key);
            acc[h] = _mm256_add_epi32(acc[h], _mm256_and_si256(now, q));
            // The other active lanes (aligned by 12 bits or more, or by 8 with a low byte
            // of 8 or less), packed to the front and stored side by side (the stores
            // past them are overwritten by the next).
            let later = _mm256_andnot_si256(now, _mm256_cmpgt_epi32(inactive, s));
            let bits = _mm256_movemask_ps(_mm256_castsi256_ps(later)) as u32;
            let perm = compress_perm(bits);
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

/// `Pending::resolve` on AVX2: the first `n` entries, sixteen at a time, their carries
/// in 16-bit lanes as `arith_rows::carries` computes them (`operands` and `keys` hold at
/// least `n` rounded up to 8, whatever is past `n`).
#[target_feature(enable = "avx2")]
pub(super) fn resolve(operands: &[i32], keys: &[i32], n: usize, sums: &mut [i64]) {
    const N: usize = 2 * HALF;
    let (mut v, mut key) = ([0i32; N], [0i32; N]);
    let (low_byte, sixteen) = (_mm256_set1_epi32(0xff), _mm256_set1_epi32(16));
    for at in (0..n).step_by(N) {
        let m = N.min(n - at);
        let o = [load_at(operands, at), load_at(operands, at + HALF)];
        let k = [load_at(keys, at), load_at(keys, at + HALF)];
        let d = o.map(|o| _mm256_srai_epi32::<16>(o));
        let w = o.map(|o| _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(o)));
        let s = k.map(|k| _mm256_and_si256(k, low_byte));
        let s16 = s.map(|s| _mm256_min_epi32(s, sixteen));
        // The sixteen entries' words: per 128-bit half, the first register's four, then
        // the second's; `unpacklo`/`unpackhi` below take them back apart.
        let carry = carries(
            _mm256_packs_epi32(d[0], d[1]),
            _mm256_packs_epi32(w[0], w[1]),
            _mm256_packs_epi32(s16[0], s16[1]),
        );
        let c = [
            _mm256_srai_epi32::<16>(_mm256_unpacklo_epi16(carry, carry)),
            _mm256_srai_epi32::<16>(_mm256_unpackhi_epi16(carry, carry)),
        ];
        let mut far = 0u32;
        for h in 0..2 {
            // The floor of the aligned product less the carry (right up to 16 bits).
            let p = _mm256_srav_epi32(_mm256_mullo_epi32(d[h], w[h]), s[h]);
            store(&mut v, h * HALF, _mm256_add_epi32(p, c[h]));
            store(&mut key, h * HALF, k[h]);
            let beyond = _mm256_cmpgt_epi32(s[h], sixteen);
            far |= (_mm256_movemask_ps(_mm256_castsi256_ps(beyond)) as u32) << (h * HALF);
        }
        // Beyond 16 bits, the whole multiplier.
        far &= (1 << m) - 1;
        while far != 0 {
            let j = far.trailing_zeros() as usize;
            far &= far - 1;
            let o = operands[at + j];
            let (dv, wv) = (o >> 16, i32::from(o as i16));
            let neg = (dv ^ wv) < 0;
            let shift = (key[j] & 0xff) as u32;
            v[j] = booth_product(neg, wv.unsigned_abs(), dv.unsigned_abs(), shift);
        }
        for j in 0..m {
            sums[(key[j] as u32 >> 8) as usize] += i64::from(v[j]);
        }
    }
}

/// Eight entries of `v` from `at` (which has them) as a register.
#[inline]
#[target_feature(enable = "avx2")]
fn load_at(v: &[i32], at: usize) -> __m256i {
    let src: &[i32; HALF] = v[at..at + HALF].try_into().expect("reserved");
    // SAFETY: `src` is 32 readable bytes.
    #[allow(unsafe_code)]
    unsafe {
        _mm256_loadu_si256(src.as_ptr().cast())
    }
}

/// `arith_rows::carries` on sixteen 16-bit lanes (signed mantissas `d`, `w`, shifts `s`
/// of 16 bits at most): -1 where the Booth multiplier loses the carry out of the lane's
/// low `s` bits, else 0. The same bit operations with vector masks (test
/// `carries_match_the_arrays`).
#[inline]
#[target_feature(enable = "avx2")]
fn carries(d: __m256i, w: __m256i, s: __m256i) -> __m256i {
    let one = _mm256_set1_epi16(1);
    let (two, four) = (_mm256_set1_epi16(2), _mm256_set1_epi16(4));
    let neg = _mm256_srai_epi16::<15>(_mm256_xor_si256(d, w));
    let da = _mm256_abs_epi16(d);
    let da2 = _mm256_slli_epi16::<1>(da);
    // The multiplier's bits, shifted left once, complemented for a negative product.
    let wm = _mm256_xor_si256(_mm256_slli_epi16::<1>(_mm256_abs_epi16(w)), neg);
    let bit = |t: __m256i, b: __m256i| _mm256_cmpeq_epi16(_mm256_and_si256(t, b), b);
    let mut rows = [_mm256_setzero_si256(); 8];
    let mut inv = [_mm256_setzero_si256(); 8];
    for i in 0..8 {
        let t = _mm256_sra_epi16(wm, _mm_cvtsi32_si128(2 * i as i32));
        let (b0, b1, b2) = (bit(t, one), bit(t, two), bit(t, four));
        let mag1 = _mm256_xor_si256(b1, b0);
        let mag2 = _mm256_andnot_si256(mag1, _mm256_xor_si256(b2, b1));
        let negative = _mm256_andnot_si256(_mm256_and_si256(b1, b0), b2);
        let v = _mm256_or_si256(_mm256_and_si256(mag1, da), _mm256_and_si256(mag2, da2));
        rows[i] = _mm256_xor_si256(v, negative);
        inv[i] = _mm256_and_si256(negative, one);
    }
    let or = |a, b| _mm256_or_si256(a, b);
    let (a0, a1) = csa5([
        rows[0],
        or(_mm256_slli_epi16::<2>(rows[1]), inv[0]),
        or(
            _mm256_slli_epi16::<4>(rows[2]),
            _mm256_slli_epi16::<2>(inv[1]),
        ),
        or(
            _mm256_slli_epi16::<6>(rows[3]),
            _mm256_slli_epi16::<4>(inv[2]),
        ),
        _mm256_slli_epi16::<6>(inv[3]),
    ]);
    let (b0, b1) = csa5([
        _mm256_slli_epi16::<8>(rows[4]),
        or(
            _mm256_slli_epi16::<10>(rows[5]),
            _mm256_slli_epi16::<8>(inv[4]),
        ),
        or(
            _mm256_slli_epi16::<12>(rows[6]),
            _mm256_slli_epi16::<10>(inv[5]),
        ),
        or(
            _mm256_slli_epi16::<14>(rows[7]),
            _mm256_slli_epi16::<12>(inv[6]),
        ),
        _mm256_slli_epi16::<14>(inv[7]),
    ]);
    let (x, c) = csa(a0, a1, b0);
    let (p0, p1) = csa(x, c, b1);
    // 2^s - 1 per lane: no variable 16-bit shift in AVX2, so a table of the 17 masks
    // in two byte shuffles (the shifts are 0 to 16; 16 takes index 0 with its own fix).
    let m = low_mask(s);
    let (a, b) = (_mm256_and_si256(p0, m), _mm256_and_si256(p1, m));
    // a > m - b, unsigned: not (max(a, m - b) == m - b).
    let x = _mm256_sub_epi16(m, b);
    _mm256_xor_si256(
        _mm256_cmpeq_epi16(_mm256_max_epu16(a, x), x),
        _mm256_set1_epi16(-1),
    )
}

/// `2^s - 1` in each 16-bit lane of `s` (0 to 16).
#[inline]
#[target_feature(enable = "avx2")]
fn low_mask(s: __m256i) -> __m256i {
    let sixteen = _mm256_cmpeq_epi16(s, _mm256_set1_epi16(16));
    // Byte 2j of lane j's index picks the low byte, byte 2j + 1 the high byte.
    let idx = _mm256_and_si256(s, _mm256_set1_epi16(15));
    let idx = _mm256_or_si256(idx, _mm256_slli_epi16::<8>(idx));
    let lo = _mm256_setr_epi8(
        0, 1, 3, 7, 15, 31, 63, 127, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 3, 7, 15, 31, 63, 127,
        -1, -1, -1, -1, -1, -1, -1, -1,
    );
    let hi = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 7, 15, 31, 63, 127, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 7,
        15, 31, 63, 127,
    );
    let bytes = _mm256_blendv_epi8(
        _mm256_shuffle_epi8(lo, idx),
        _mm256_shuffle_epi8(hi, idx),
        _mm256_set1_epi16(0xff00u16 as i16),
    );
    _mm256_or_si256(bytes, sixteen)
}

/// One carry-save adder on 16-bit lanes: (sum, carry << 1).
#[inline]
#[target_feature(enable = "avx2")]
fn csa(a: __m256i, b: __m256i, c: __m256i) -> (__m256i, __m256i) {
    let sum = _mm256_xor_si256(_mm256_xor_si256(a, b), c);
    let majority = _mm256_or_si256(
        _mm256_and_si256(a, b),
        _mm256_and_si256(c, _mm256_or_si256(a, b)),
    );
    (sum, _mm256_slli_epi16::<1>(majority))
}

/// Five rows reduced as the MAC cell's adder tree does.
#[inline]
#[target_feature(enable = "avx2")]
fn csa5(v: [__m256i; 5]) -> (__m256i, __m256i) {
    let (s, c) = csa(v[0], v[1], v[2]);
    let (s, c) = csa(s, c, v[3]);
    csa(s, c, v[4])
}

/// Four 64-bit lanes of kernels `4q..4q + 4` of a row of results from `at`: exponents
/// and mantissas (sign-extended from 38 bits, as CACC takes them).
#[inline]
#[target_feature(enable = "avx2")]
fn load_results(exps: &[u8], sums: &[i64], at: usize, q: usize) -> (__m256i, __m256i) {
    let e: &[u8; 4] = exps[at + 4 * q..][..4].try_into().expect("a row");
    let m: &[i64; 4] = sums[at + 4 * q..][..4].try_into().expect("a row");
    let e = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(i32::from_le_bytes(*e)));
    // SAFETY: `m` is 32 readable bytes.
    #[allow(unsafe_code)]
    let m = unsafe { _mm256_loadu_si256(m.as_ptr().cast()) };
    // No 64-bit arithmetic shift in AVX2: the logical one, with the sign put back.
    let up = _mm256_slli_epi64::<26>(m);
    let sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), up);
    let m = _mm256_or_si256(_mm256_srli_epi64::<26>(up), _mm256_slli_epi64::<38>(sign));
    (e, m)
}

/// `WeightRows::sum_exact` on AVX2, four kernels to a register: the lowest exponent of
/// each kernel's nonzero results, then their sum in 64-bit lanes when the exponents'
/// spread leaves room for it (else the scalar sum).
#[target_feature(enable = "avx2")]
pub(super) fn sum_exact(
    exps: &[u8],
    sums: &[i64],
    ops: usize,
    stride: usize,
) -> [Option<Fp48>; WIDTH] {
    const Q: usize = WIDTH / 4;
    // Spreads of exponents for which every shifted 38-bit mantissa and the sum of `ops`
    // magnitudes stay below 2^63.
    let limit = 63 - 38 - i64::from(usize::BITS - ops.leading_zeros());
    let zero = _mm256_setzero_si256();
    let (mut emin, mut emax, mut nan) = ([_mm256_set1_epi64x(255); Q], [zero; Q], [zero; Q]);
    let nan_exp = _mm256_set1_epi64x(0x3f);
    for op in 0..ops {
        for q in 0..Q {
            let (e, m) = load_results(exps, sums, op * stride, q);
            let zero_m = _mm256_cmpeq_epi64(m, zero);
            nan[q] = _mm256_or_si256(
                nan[q],
                _mm256_andnot_si256(zero_m, _mm256_cmpeq_epi64(e, nan_exp)),
            );
            let lower = _mm256_andnot_si256(zero_m, _mm256_cmpgt_epi64(emin[q], e));
            emin[q] = _mm256_blendv_epi8(emin[q], e, lower);
            let higher = _mm256_andnot_si256(zero_m, _mm256_cmpgt_epi64(e, emax[q]));
            emax[q] = _mm256_blendv_epi8(emax[q], e, higher);
        }
    }
    let limit_v = _mm256_set1_epi64x(limit);
    let fits: [__m256i; Q] = std::array::from_fn(|q| {
        let over = _mm256_cmpgt_epi64(_mm256_sub_epi64(emax[q], emin[q]), limit_v);
        _mm256_andnot_si256(_mm256_or_si256(nan[q], over), _mm256_set1_epi64x(-1))
    });
    let any_fits = fits.iter().any(|&f| _mm256_movemask_epi8(f) != 0);
    let (mut total, mut magnitude, mut ones) = ([zero; Q], [zero; Q], [zero; Q]);
    if any_fits {
        for op in 0..ops {
            for q in 0..Q {
                let (e, m) = load_results(exps, sums, op * stride, q);
                // Zero mantissas (whose exponent may be below the lowest: a shift count
                // above 63, which gives 0) add nothing.
                let v = _mm256_sllv_epi64(m, _mm256_sub_epi64(e, emin[q]));
                total[q] = _mm256_add_epi64(total[q], v);
                let sign = _mm256_cmpgt_epi64(zero, v);
                let a = _mm256_sub_epi64(_mm256_xor_si256(v, sign), sign);
                magnitude[q] = _mm256_add_epi64(magnitude[q], a);
                ones[q] = _mm256_or_si256(ones[q], a);
            }
        }
    }
    let lanes = |v: &[__m256i; Q]| -> [i64; WIDTH] {
        let l = v.map(|v| lanes64(v));
        std::array::from_fn(|j| l[j / 4][j % 4])
    };
    let (emin, nan, fits) = (lanes(&emin), lanes(&nan), lanes(&fits));
    let (total, magnitude, ones) = (lanes(&total), lanes(&magnitude), lanes(&ones));
    std::array::from_fn(|j| {
        if nan[j] != 0 {
            None
        } else if emin[j] == 255 {
            Some(Fp48::default())
        } else if fits[j] != 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_match_the_arrays() {
        // The register form against `booth_carries` (checked exhaustively against the
        // Booth multiplier) on random and extreme operands at every shift they take, in
        // the lane order `resolve` gives them.
        if !super::super::arith_avx2::available() {
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
            let s: [u16; 32] = std::array::from_fn(|_| [0, 4, 8, 12, 16][next() as usize % 5]);
            let want = super::super::arith_avx2::booth_carries(&d, &w, &s);
            for half in 0..2 {
                let r = half * 16;
                // SAFETY: `available()` found AVX2.
                #[allow(unsafe_code)]
                let got: [i16; 16] = unsafe {
                    let reg = |a: &[i16]| _mm256_loadu_si256(a.as_ptr().cast());
                    safe_arch::m256i(carries(
                        reg(&d[r..r + 16]),
                        reg(&w[r..r + 16]),
                        reg(&s.map(|v| v as i16)[r..r + 16]),
                    ))
                    .into()
                };
                for j in 0..16 {
                    assert_eq!(
                        u16::from(got[j] == -1),
                        want[r + j],
                        "{} x {} >> {}",
                        d[r + j],
                        w[r + j],
                        s[r + j]
                    );
                    assert!(got[j] == 0 || got[j] == -1);
                }
            }
        }
    }
}
