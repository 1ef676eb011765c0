//! The fp16 block kernel on AVX2 registers of sixteen 16-bit lanes: the SSE2 kernel
//! (`arith::sse2`, whose documentation gives the arithmetic and the bounds) at twice the
//! width, used when the CPU has AVX2 ([`available`]).
//!
//! Bounds at this width: a group of 64 lanes is four registers. A product is below 2^25
//! in magnitude (|16·hi|, 16·lo <= 2048, |w| < 2^14) and a 32-bit lane of the
//! multiply-add sums gets two per register, so below 2^28 over a group; the lane sums
//! stay below 2^31. The 16-bit remainder lanes get at most 4·15.
//!
//! The kernel functions carry `#[target_feature(enable = "avx2")]`; [`super::Blocks`]
//! builds these registers only when [`available`] says the CPU runs them, and calls the
//! kernel only on such blocks.

use super::{sext, MacF16};
use core::arch::x86_64::{
    __m128i, __m256i, _mm256_add_epi16, _mm256_add_epi32, _mm256_and_si256, _mm256_castsi256_si128,
    _mm256_cmpeq_epi16, _mm256_cmpgt_epi16, _mm256_extracti128_si256, _mm256_madd_epi16,
    _mm256_max_epi16, _mm256_movemask_epi8, _mm256_mullo_epi16, _mm256_or_si256, _mm256_set1_epi16,
    _mm256_setzero_si256, _mm256_slli_epi16, _mm256_sub_epi32, _mm_add_epi32, _mm_cvtsi128_si32,
    _mm_extract_epi16, _mm_max_epi16, _mm_shuffle_epi32, _mm_shufflelo_epi16,
};
use safe_arch::m256i;

/// Registers per group of 64 lanes.
const GROUP: usize = 4;

/// Whether the CPU runs the AVX2 kernel. `NVDLA_VP_NO_AVX2=1` turns it off (to compare
/// with the SSE2 kernel).
pub(super) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2")
            && std::env::var_os("NVDLA_VP_NO_AVX2").is_none_or(|v| v.is_empty() || v == "0")
    })
}

/// Lanes sixteen to a register, as the SSE2 kernel's: data `[c, hi, 16·hi, lo, 16·lo]`,
/// weights `[c, val]`.
#[derive(Debug, Default, Clone)]
pub(super) struct Regs {
    pub(super) data: Vec<[__m256i; 5]>,
    pub(super) weight: Vec<[__m256i; 2]>,
}

fn reg(x: &[i16], scale: i16) -> __m256i {
    let mut a = [0i16; 16];
    for (o, &v) in a.iter_mut().zip(x) {
        *o = v * scale;
    }
    m256i::from(a).0
}

impl Regs {
    pub(super) fn clear(&mut self) {
        self.data.clear();
        self.weight.clear();
    }

    /// Appends sixteen lanes given as arrays.
    pub(super) fn push(&mut self, c: &[i16], hi: &[i16], lo: &[i16], val: &[i16]) {
        let cr = reg(c, 1);
        self.data
            .push([cr, reg(hi, 1), reg(hi, 16), reg(lo, 1), reg(lo, 16)]);
        self.weight.push([cr, reg(val, 1)]);
    }
}

/// The 128-bit halves of `v` combined by `f`.
#[inline]
#[target_feature(enable = "avx2")]
fn fold(v: __m256i, f: impl Fn(__m128i, __m128i) -> __m128i) -> __m128i {
    f(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v))
}

/// Sum of the eight 32-bit lanes, each below 2^28 in magnitude (so every partial sum
/// stays in 32 bits).
#[inline]
#[target_feature(enable = "avx2")]
fn sum_i32(v: __m256i) -> i64 {
    let t = fold(v, |a, b| _mm_add_epi32(a, b));
    let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0x4e>(t));
    let t = _mm_add_epi32(t, _mm_shuffle_epi32::<0xb1>(t));
    i64::from(_mm_cvtsi128_si32(t))
}

/// Largest of the sixteen 16-bit lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn max_i16(v: __m256i) -> i16 {
    let v = fold(v, |a, b| _mm_max_epi16(a, b));
    let v = _mm_max_epi16(v, _mm_shuffle_epi32::<0x4e>(v));
    let v = _mm_max_epi16(v, _mm_shuffle_epi32::<0xb1>(v));
    let v = _mm_max_epi16(v, _mm_shufflelo_epi16::<0xb1>(v));
    _mm_extract_epi16::<0>(v) as i16
}

/// The MAC cell on one block given as data and weight registers; `lanes` holds the same
/// lanes as arrays (data coarse and value, weight coarse and value) for the lanes
/// shifted by 8 or more.
#[target_feature(enable = "avx2")]
pub(super) fn mac_block(d: &[[__m256i; 5]], w: &[[__m256i; 2]], lanes: [&[i16]; 4]) -> MacF16 {
    let n = d.len().min(w.len());
    let (d, w) = (&d[..n], &w[..n]);
    let mut m = _mm256_set1_epi16(i16::MIN);
    for (a, b) in d.iter().zip(w) {
        m = _mm256_max_epi16(m, _mm256_add_epi16(a[0], b[0]));
    }
    let max = max_i16(m);
    if max < 0 {
        return MacF16 { exp: 0, mant: 0 };
    }
    MacF16 {
        exp: (max * 4) as u8,
        mant: sext(mac(d, w, max, lanes) as u64, 38),
    }
}

/// The sum of the aligned products of all lanes, for block exponent `max`: the SSE2
/// kernel's `mac`, sixteen lanes per register, and the lanes shifted by 8 in the vector
/// too.
///
/// Shift 8: the Booth multiplier gives the floor `(d·w) >> 8`, or one less, and only
/// when the low byte of `d·w` is at most 8 ([`super::booth8_errors`]). The floors of a
/// group sum as `(Σ d·w − Σ (d·w mod 256)) / 256`, with `d = 128·hi + lo` as for shift 0:
/// two multiply-adds of the weights with the masked `hi` and `lo` (pair sums below
/// 2^22, four registers to a group: below 2^24 per 32-bit lane) and the low bytes from
/// `pmullw` (at most 4·255 per 16-bit lane). The lanes whose low byte is at most 8 are
/// flagged, and their truncation errors taken from the table one at a time; so are the
/// lanes shifted by 12 or more (the Booth multiplier itself).
#[inline]
#[target_feature(enable = "avx2")]
fn mac(dv: &[[__m256i; 5]], wv: &[[__m256i; 2]], max: i16, lanes: [&[i16]; 4]) -> i64 {
    let max0 = _mm256_set1_epi16(max);
    let max1 = _mm256_set1_epi16(max - 1);
    let max2 = _mm256_set1_epi16(max - 2);
    let minus1 = _mm256_set1_epi16(-1);
    let fifteen = _mm256_set1_epi16(15);
    let byte = _mm256_set1_epi16(0xff);
    let nine = _mm256_set1_epi16(9);
    let ones = _mm256_set1_epi16(1);
    let mut total: i64 = 0;
    for (g, (dg, wg)) in dv.chunks(GROUP).zip(wv.chunks(GROUP)).enumerate() {
        let zero = _mm256_setzero_si256();
        let (mut ah, mut al, mut rem) = (zero, zero, zero);
        let (mut ah8, mut al8, mut rem8) = (zero, zero, zero);
        // Two mask bits per lane, two registers to a word.
        let mut slow = [0u64; 2];
        for (j, (dr, wr)) in dg.iter().zip(wg).enumerate() {
            let [dc, h, h16, l, l16] = *dr;
            let [wc, w] = *wr;
            let c = _mm256_add_epi16(dc, wc);
            let k0 = _mm256_cmpeq_epi16(c, max0);
            let k1 = _mm256_cmpeq_epi16(c, max1);
            let lo1 = _mm256_and_si256(l, k1);
            let a_h = _mm256_or_si256(_mm256_and_si256(h16, k0), _mm256_and_si256(h, k1));
            let a_l = _mm256_or_si256(_mm256_and_si256(l16, k0), lo1);
            ah = _mm256_add_epi32(ah, _mm256_madd_epi16(a_h, w));
            al = _mm256_add_epi32(al, _mm256_madd_epi16(a_l, w));
            let r = _mm256_and_si256(_mm256_mullo_epi16(w, lo1), fifteen);
            rem = _mm256_add_epi16(rem, r);
            // Shift 8 (an inactive lane's coarse sum is below -56, never max - 2).
            let k2 = _mm256_cmpeq_epi16(c, max2);
            let (h2, l2) = (_mm256_and_si256(h, k2), _mm256_and_si256(l, k2));
            ah8 = _mm256_add_epi32(ah8, _mm256_madd_epi16(h2, w));
            al8 = _mm256_add_epi32(al8, _mm256_madd_epi16(l2, w));
            let d2 = _mm256_add_epi16(_mm256_slli_epi16::<7>(h2), l2);
            let low = _mm256_and_si256(_mm256_mullo_epi16(w, d2), byte);
            rem8 = _mm256_add_epi16(rem8, low);
            let fix = _mm256_and_si256(_mm256_cmpgt_epi16(nine, low), k2);
            // Active (c >= 0) and shifted by 12 or more (c < max - 2).
            let s = _mm256_and_si256(_mm256_cmpgt_epi16(c, minus1), _mm256_cmpgt_epi16(max2, c));
            let s = _mm256_or_si256(s, fix);
            slow[j / 2] |= u64::from(_mm256_movemask_epi8(s) as u32) << (32 * (j % 2));
        }
        let al = _mm256_sub_epi32(al, _mm256_madd_epi16(rem, ones));
        let sixteen = 128 * sum_i32(ah) + sum_i32(al);
        debug_assert_eq!(sixteen % 16, 0);
        let al8 = _mm256_sub_epi32(al8, _mm256_madd_epi16(rem8, ones));
        let exact8 = 128 * sum_i32(ah8) + sum_i32(al8);
        debug_assert_eq!(exact8 % 256, 0);
        total += (sixteen >> 4) + (exact8 >> 8);
        if slow != [0; 2] {
            total += slow_lanes(lanes, g * GROUP * 16, max, slow);
        }
    }
    total
}

/// The lanes flagged in `slow` (two bits per lane; lane `base` first), one at a time:
/// the Booth product of a lane shifted by 12 or more, minus the truncation error of a
/// lane shifted by 8 (whose floor the vector summed).
#[inline(never)]
fn slow_lanes(lanes: [&[i16]; 4], base: usize, max: i16, slow: [u64; 2]) -> i64 {
    let [dc, dv, wc, wv] = lanes;
    let t8 = super::booth8_errors();
    let mut total = 0;
    for (word, mut bits) in slow.into_iter().enumerate() {
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= !(3u64 << b);
            let i = base + word * 32 + b / 2;
            let (c, d, w) = (dc[i] + wc[i], i32::from(dv[i]), i32::from(wv[i]));
            if c == max - 2 {
                let k = super::booth8_index((d ^ w) < 0, d * w, w.unsigned_abs(), d.unsigned_abs());
                total -= ((t8[k / 64] >> (k % 64)) & 1) as i64;
            } else {
                total += i64::from(super::lane_product(max.into(), c.into(), d, w, t8));
            }
        }
    }
    total
}
