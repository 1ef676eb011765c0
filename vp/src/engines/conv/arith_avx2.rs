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

use super::{sext, sse2::slow_lanes, MacF16};
use core::arch::x86_64::{
    __m128i, __m256i, _mm256_add_epi16, _mm256_add_epi32, _mm256_and_si256, _mm256_castsi256_si128,
    _mm256_cmpeq_epi16, _mm256_cmpgt_epi16, _mm256_extracti128_si256, _mm256_madd_epi16,
    _mm256_max_epi16, _mm256_movemask_epi8, _mm256_mullo_epi16, _mm256_or_si256, _mm256_set1_epi16,
    _mm256_setzero_si256, _mm256_sub_epi32, _mm_add_epi32, _mm_cvtsi128_si32, _mm_extract_epi16,
    _mm_max_epi16, _mm_shuffle_epi32, _mm_shufflelo_epi16,
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

/// The sum of the aligned products of all lanes, for block exponent `max` (the SSE2
/// kernel's `mac`, sixteen lanes per register).
#[inline]
#[target_feature(enable = "avx2")]
fn mac(dv: &[[__m256i; 5]], wv: &[[__m256i; 2]], max: i16, lanes: [&[i16]; 4]) -> i64 {
    let max0 = _mm256_set1_epi16(max);
    let max1 = _mm256_set1_epi16(max - 1);
    let minus1 = _mm256_set1_epi16(-1);
    let fifteen = _mm256_set1_epi16(15);
    let ones = _mm256_set1_epi16(1);
    let mut total: i64 = 0;
    for (g, (dg, wg)) in dv.chunks(GROUP).zip(wv.chunks(GROUP)).enumerate() {
        let (mut ah, mut al, mut rem) = (
            _mm256_setzero_si256(),
            _mm256_setzero_si256(),
            _mm256_setzero_si256(),
        );
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
            // Active (c >= 0) and shifted by 8 or more (c < max - 1).
            let s = _mm256_and_si256(_mm256_cmpgt_epi16(c, minus1), _mm256_cmpgt_epi16(max1, c));
            slow[j / 2] |= u64::from(_mm256_movemask_epi8(s) as u32) << (32 * (j % 2));
        }
        let al = _mm256_sub_epi32(al, _mm256_madd_epi16(rem, ones));
        let sixteen = 128 * sum_i32(ah) + sum_i32(al);
        debug_assert_eq!(sixteen % 16, 0);
        total += sixteen >> 4;
        if slow != [0; 2] {
            total += slow_lanes(lanes, g * GROUP * 16, max, slow);
        }
    }
    total
}
