//! The fp16 block kernel on AVX-512 registers of thirty-two 16-bit lanes, with mask
//! registers for the alignment classes: the AVX2 kernel (`arith_avx2`, whose
//! documentation gives the arithmetic) at twice the width, used when the CPU has
//! AVX-512 F and BW ([`available`]) and the blocks are a multiple of 32 lanes.
//!
//! Bounds at this width: a group of 64 lanes is two registers. A product is below 2^25
//! in magnitude and a 32-bit lane of the multiply-add sums gets two per register, so
//! below 2^27 over a group; the sums of a group's 64 products stay below 2^31. The
//! 16-bit remainder lanes get at most 2·15 (shift 4) and 2·255 (shift 8).
//!
//! The kernel functions carry `#[target_feature(enable = "avx512f,avx512bw")]`;
//! [`super::Blocks`] builds these registers only when [`available`] says the CPU runs
//! them, and calls the kernel only on such blocks.

use super::arith_avx2::Deferred;
use super::{sext, MacF16};
use core::arch::x86_64::{
    __m256i, __m512i, _mm256_max_epi16, _mm512_add_epi16, _mm512_add_epi32, _mm512_and_si512,
    _mm512_castsi256_si512, _mm512_castsi512_si256, _mm512_cmpeq_epi16_mask,
    _mm512_cmpgt_epi16_mask, _mm512_cmplt_epi16_mask, _mm512_extracti64x4_epi64,
    _mm512_inserti64x4, _mm512_madd_epi16, _mm512_mask_mov_epi16, _mm512_maskz_mov_epi16,
    _mm512_max_epi16, _mm512_mullo_epi16, _mm512_reduce_add_epi32, _mm512_set1_epi16,
    _mm512_setzero_si512, _mm512_slli_epi16, _mm512_sub_epi32,
};
use safe_arch::m256i;

/// Registers per group of 64 lanes.
const GROUP: usize = 2;

/// Whether the CPU runs the AVX-512 kernel. `NVDLA_VP_NO_AVX512=1` turns it off (to
/// compare with the AVX2 kernel).
pub(super) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::env::var_os("NVDLA_VP_NO_AVX512").is_none_or(|v| v.is_empty() || v == "0")
    })
}

/// Lanes thirty-two to a register: data `[c, hi, 16·hi, lo, 16·lo]`, weights `[c, val]`.
#[derive(Debug, Default, Clone)]
pub(super) struct Regs {
    pub(super) data: Vec<[__m512i; 5]>,
    pub(super) weight: Vec<[__m512i; 2]>,
}

/// Thirty-two lanes `x` (padded with zeros) times `scale`.
fn reg(x: &[i16], scale: i16) -> __m512i {
    let mut a = [0i16; 32];
    for (o, &v) in a.iter_mut().zip(x) {
        *o = v * scale;
    }
    let lo: [i16; 16] = a[..16].try_into().expect("16 lanes");
    let hi: [i16; 16] = a[16..].try_into().expect("16 lanes");
    // SAFETY: `Regs` is filled only when `available()` found AVX-512 F on this CPU.
    #[allow(unsafe_code)]
    unsafe {
        join(m256i::from(lo).0, m256i::from(hi).0)
    }
}

#[target_feature(enable = "avx512f")]
fn join(lo: __m256i, hi: __m256i) -> __m512i {
    _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
}

impl Regs {
    pub(super) fn clear(&mut self) {
        self.data.clear();
        self.weight.clear();
    }

    /// Appends thirty-two lanes given as arrays.
    pub(super) fn push(&mut self, c: &[i16], hi: &[i16], lo: &[i16], val: &[i16]) {
        let cr = reg(c, 1);
        self.data
            .push([cr, reg(hi, 1), reg(hi, 16), reg(lo, 1), reg(lo, 16)]);
        self.weight.push([cr, reg(val, 1)]);
    }
}

/// The block exponent (the largest coarse sum), or `None` when no lane is active.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn block_max(d: &[[__m512i; 5]], w: &[[__m512i; 2]]) -> Option<i16> {
    let mut m = _mm512_set1_epi16(i16::MIN);
    for (a, b) in d.iter().zip(w) {
        m = _mm512_max_epi16(m, _mm512_add_epi16(a[0], b[0]));
    }
    let m = _mm256_max_epi16(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64::<1>(m));
    let a: [i16; 16] = m256i(m).into();
    let max = a.into_iter().max().unwrap_or(i16::MIN);
    (max >= 0).then_some(max)
}

/// The MAC cell on one block given as data and weight registers; `lanes` holds the same
/// lanes as arrays (data coarse and value, weight coarse and value).
#[target_feature(enable = "avx512f,avx512bw,avx2")]
pub(super) fn mac_block(d: &[[__m512i; 5]], w: &[[__m512i; 2]], lanes: [&[i16]; 4]) -> MacF16 {
    let Some(max) = block_max(d, w) else {
        return MacF16 { exp: 0, mant: 0 };
    };
    let t8 = super::booth8_errors();
    let [dc, dv, wc, wv] = lanes;
    let sum = mac(d, w, max, |base, mut bits| {
        let mut total = 0i64;
        while bits != 0 {
            let i = base + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let c = i32::from(dc[i] + wc[i]);
            let p = super::lane_product(max.into(), c, dv[i].into(), wv[i].into(), t8);
            total += i64::from(p);
        }
        total
    });
    MacF16 {
        exp: (max * 4) as u8,
        mant: sext(sum as u64, 38),
    }
}

/// [`mac_block`], leaving the lanes that need the Booth multiplier in `deferred` with
/// `owner`: returns the block exponent and the sum without them.
#[target_feature(enable = "avx512f,avx512bw,avx2")]
pub(super) fn mac_block_deferred(
    d: &[[__m512i; 5]],
    w: &[[__m512i; 2]],
    lanes: [&[i16]; 4],
    owner: u32,
    deferred: &mut Deferred,
) -> (u8, i64) {
    let Some(max) = block_max(d, w) else {
        return (0, 0);
    };
    let [dc, dv, wc, wv] = lanes;
    let sum = mac(d, w, max, |base, mut bits| {
        while bits != 0 {
            let i = base + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            deferred.push_lane(owner, dv[i], wv[i], 4 * (max - dc[i] - wc[i]));
        }
        0
    });
    ((max * 4) as u8, sum)
}

/// The sum of the aligned products of all lanes for block exponent `max`, as the AVX2
/// kernel's `mac` computes it, with the alignment classes as mask registers.
/// `flagged(base, bits)` gives the sum of the lanes flagged in `bits` (one bit per lane,
/// lane `base` first): those that need the Booth multiplier itself.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn mac(
    dv: &[[__m512i; 5]],
    wv: &[[__m512i; 2]],
    max: i16,
    mut flagged: impl FnMut(usize, u64) -> i64,
) -> i64 {
    let n = dv.len().min(wv.len());
    let (dv, wv) = (&dv[..n], &wv[..n]);
    let max0 = _mm512_set1_epi16(max);
    let max1 = _mm512_set1_epi16(max - 1);
    let max2 = _mm512_set1_epi16(max - 2);
    let minus1 = _mm512_set1_epi16(-1);
    let fifteen = _mm512_set1_epi16(15);
    let byte = _mm512_set1_epi16(0xff);
    let nine = _mm512_set1_epi16(9);
    let ones = _mm512_set1_epi16(1);
    let mut total: i64 = 0;
    for (g, (dg, wg)) in dv.chunks(GROUP).zip(wv.chunks(GROUP)).enumerate() {
        let zero = _mm512_setzero_si512();
        let (mut ah, mut al, mut rem) = (zero, zero, zero);
        let (mut ah8, mut al8, mut rem8) = (zero, zero, zero);
        let mut slow = 0u64;
        for (j, (dr, wr)) in dg.iter().zip(wg).enumerate() {
            let [dc, h, h16, l, l16] = *dr;
            let [wc, w] = *wr;
            let c = _mm512_add_epi16(dc, wc);
            let k0 = _mm512_cmpeq_epi16_mask(c, max0);
            let k1 = _mm512_cmpeq_epi16_mask(c, max1);
            // Shifts 0 and 4: `16·hi`, `16·lo` (k0) or `hi`, `lo` (k1).
            let lo1 = _mm512_maskz_mov_epi16(k1, l);
            let a_h = _mm512_mask_mov_epi16(_mm512_maskz_mov_epi16(k1, h), k0, h16);
            let a_l = _mm512_mask_mov_epi16(lo1, k0, l16);
            ah = _mm512_add_epi32(ah, _mm512_madd_epi16(a_h, w));
            al = _mm512_add_epi32(al, _mm512_madd_epi16(a_l, w));
            rem = _mm512_add_epi16(rem, _mm512_and_si512(_mm512_mullo_epi16(w, lo1), fifteen));
            // Shift 8 (an inactive lane's coarse sum is below -56, never max - 2), less
            // the lanes whose low product byte is at most 8.
            let k2 = _mm512_cmpeq_epi16_mask(c, max2);
            let d2 = _mm512_maskz_mov_epi16(k2, _mm512_add_epi16(_mm512_slli_epi16::<7>(h), l));
            let low = _mm512_and_si512(_mm512_mullo_epi16(w, d2), byte);
            let fix = _mm512_cmplt_epi16_mask(low, nine) & k2;
            let k2 = k2 & !fix;
            ah8 = _mm512_add_epi32(ah8, _mm512_madd_epi16(_mm512_maskz_mov_epi16(k2, h), w));
            al8 = _mm512_add_epi32(al8, _mm512_madd_epi16(_mm512_maskz_mov_epi16(k2, l), w));
            rem8 = _mm512_add_epi16(rem8, _mm512_maskz_mov_epi16(k2, low));
            // Active (c >= 0) and shifted by 12 or more (c < max - 2).
            let s = _mm512_cmpgt_epi16_mask(c, minus1) & _mm512_cmpgt_epi16_mask(max2, c);
            slow |= u64::from(s | fix) << (32 * j);
        }
        let al = _mm512_sub_epi32(al, _mm512_madd_epi16(rem, ones));
        let sixteen =
            128 * i64::from(_mm512_reduce_add_epi32(ah)) + i64::from(_mm512_reduce_add_epi32(al));
        debug_assert_eq!(sixteen % 16, 0);
        let al8 = _mm512_sub_epi32(al8, _mm512_madd_epi16(rem8, ones));
        let exact8 =
            128 * i64::from(_mm512_reduce_add_epi32(ah8)) + i64::from(_mm512_reduce_add_epi32(al8));
        debug_assert_eq!(exact8 % 256, 0);
        total += (sixteen >> 4) + (exact8 >> 8);
        if slow != 0 {
            total += flagged(g * GROUP * 32, slow);
        }
    }
    total
}
