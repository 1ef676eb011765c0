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

use super::{sext, sign_comp, MacF16};
use core::arch::x86_64::{
    __m128i, __m256i, _mm256_abs_epi32, _mm256_add_epi16, _mm256_add_epi32, _mm256_and_si256,
    _mm256_andnot_si256, _mm256_castsi256_si128, _mm256_cmpeq_epi16, _mm256_cmpeq_epi32,
    _mm256_cmpgt_epi16, _mm256_cmpgt_epi32, _mm256_extracti128_si256, _mm256_madd_epi16,
    _mm256_max_epi16, _mm256_movemask_epi8, _mm256_mullo_epi16, _mm256_or_si256,
    _mm256_permutevar8x32_epi32, _mm256_set1_epi16, _mm256_set1_epi32, _mm256_setzero_si256,
    _mm256_slli_epi16, _mm256_slli_epi32, _mm256_srai_epi32, _mm256_srli_epi32, _mm256_srlv_epi32,
    _mm256_sub_epi32, _mm256_xor_si256, _mm_add_epi32, _mm_cvtsi128_si32, _mm_extract_epi16,
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
    let Some(max) = block_max(d, w) else {
        return MacF16 { exp: 0, mant: 0 };
    };
    let t8 = super::booth8_errors();
    let sum = mac(d, w, max, |base, slow| {
        slow_lanes(lanes, base, max, slow, t8)
    });
    MacF16 {
        exp: (max * 4) as u8,
        mant: sext(sum as u64, 38),
    }
}

/// [`mac_block`], leaving the lanes that need the Booth multiplier in `deferred` with
/// `owner`: returns the block exponent and the sum without them ([`Deferred::resolve`]
/// adds them).
#[target_feature(enable = "avx2")]
pub(super) fn mac_block_deferred(
    d: &[[__m256i; 5]],
    w: &[[__m256i; 2]],
    lanes: [&[i16]; 4],
    owner: u32,
    deferred: &mut Deferred,
) -> (u8, i64) {
    let Some(max) = block_max(d, w) else {
        return (0, 0);
    };
    let sum = mac(d, w, max, |base, slow| {
        deferred.push_lanes(lanes, base, max, slow, owner);
        0
    });
    ((max * 4) as u8, sum)
}

/// The block exponent (the largest coarse sum), or `None` when no lane is active.
#[inline]
#[target_feature(enable = "avx2")]
fn block_max(d: &[[__m256i; 5]], w: &[[__m256i; 2]]) -> Option<i16> {
    let mut m = _mm256_set1_epi16(i16::MIN);
    for (a, b) in d.iter().zip(w) {
        m = _mm256_max_epi16(m, _mm256_add_epi16(a[0], b[0]));
    }
    let max = max_i16(m);
    (max >= 0).then_some(max)
}

/// The sum of the aligned products of all lanes, for block exponent `max`: the SSE2
/// kernel's `mac`, sixteen lanes per register, and the lanes shifted by 8 in the vector
/// too. `flagged(base, slow)` gives the sum of the lanes flagged in `slow` (two bits per
/// lane, lane `base` first): those that need the Booth multiplier itself.
///
/// Shift 8: the Booth multiplier gives the floor `(d·w) >> 8`, or one less, and only
/// when the low byte of `d·w` is at most 8 ([`super::booth8_errors`]). The floors of the
/// other lanes of a group sum as `(Σ d·w − Σ (d·w mod 256)) / 256`, with
/// `d = 128·hi + lo` as for shift 0: two multiply-adds of the weights with the masked
/// `hi` and `lo` (pair sums below 2^22, four registers to a group: below 2^24 per 32-bit
/// lane) and the low bytes from `pmullw` (at most 4·255 per 16-bit lane). The lanes whose
/// low byte is at most 8 are flagged, and so are the lanes shifted by 12 or more.
#[inline]
#[target_feature(enable = "avx2")]
fn mac(
    dv: &[[__m256i; 5]],
    wv: &[[__m256i; 2]],
    max: i16,
    mut flagged: impl FnMut(usize, [u64; 2]) -> i64,
) -> i64 {
    let n = dv.len().min(wv.len());
    let (dv, wv) = (&dv[..n], &wv[..n]);
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
            // Shift 8 (an inactive lane's coarse sum is below -56, never max - 2), less
            // the lanes whose low product byte is at most 8.
            let k2 = _mm256_cmpeq_epi16(c, max2);
            let d2 = _mm256_and_si256(_mm256_add_epi16(_mm256_slli_epi16::<7>(h), l), k2);
            let low = _mm256_and_si256(_mm256_mullo_epi16(w, d2), byte);
            let fix = _mm256_and_si256(_mm256_cmpgt_epi16(nine, low), k2);
            let k2 = _mm256_andnot_si256(fix, k2);
            ah8 = _mm256_add_epi32(ah8, _mm256_madd_epi16(_mm256_and_si256(h, k2), w));
            al8 = _mm256_add_epi32(al8, _mm256_madd_epi16(_mm256_and_si256(l, k2), w));
            rem8 = _mm256_add_epi16(rem8, _mm256_and_si256(low, k2));
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
            total += flagged(g * GROUP * 16, slow);
        }
    }
    total
}

/// Calls `f(i)` for the lane index of every lane flagged in `slow` (two bits per lane,
/// lane `base` first).
#[inline]
fn each_flagged(base: usize, slow: [u64; 2], mut f: impl FnMut(usize)) {
    for (word, mut bits) in slow.into_iter().enumerate() {
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= !(3u64 << b);
            f(base + word * 32 + b / 2);
        }
    }
}

/// The Booth products of the lanes flagged in `slow`, one at a time.
#[inline(never)]
fn slow_lanes(lanes: [&[i16]; 4], base: usize, max: i16, slow: [u64; 2], t8: &[u64; 40]) -> i64 {
    let [dc, dv, wc, wv] = lanes;
    let mut total = 0;
    each_flagged(base, slow, |i| {
        let c = i32::from(dc[i] + wc[i]);
        let p = super::lane_product(max.into(), c, dv[i].into(), wv[i].into(), t8);
        total += i64::from(p);
    });
    total
}

/// Lanes whose aligned products are left for the Booth multiplier: each with its signed
/// mantissas, its shift and the block it belongs to. Those aligned by 16 bits or fewer
/// (`near`) take the floor of the exact product less the carry [`booth_carries`] finds,
/// thirty-two at a time; the others (`far`) the whole multiplier, eight at a time
/// ([`booth8`]).
#[derive(Debug, Default, Clone)]
pub struct Deferred {
    near: Vec<DeferredLane>,
    far: Vec<DeferredLane>,
}

/// One deferred lane: signed mantissas, shift and owning block.
#[derive(Debug, Default, Clone, Copy)]
struct DeferredLane {
    owner: u32,
    d: i16,
    w: i16,
    shift: i16,
}

impl Deferred {
    /// Forgets every lane.
    pub fn clear(&mut self) {
        self.near.clear();
        self.far.clear();
    }

    /// Defers one lane: signed mantissas `d`, `w`, shifted by `shift` bits, of block
    /// `owner`.
    #[inline]
    pub(super) fn push_lane(&mut self, owner: u32, d: i16, w: i16, shift: i16) {
        let lane = DeferredLane { owner, d, w, shift };
        if shift <= 16 {
            self.near.push(lane);
        } else {
            self.far.push(lane);
        }
    }

    fn push_lanes(
        &mut self,
        lanes: [&[i16]; 4],
        base: usize,
        max: i16,
        slow: [u64; 2],
        owner: u32,
    ) {
        let [dc, dv, wc, wv] = lanes;
        each_flagged(base, slow, |i| {
            self.push_lane(owner, dv[i], wv[i], 4 * (max - dc[i] - wc[i]));
        });
    }

    /// Adds each lane's aligned product to `sums[owner]`, then forgets the lanes.
    pub fn resolve(&mut self, sums: &mut [i64]) {
        let wide = super::arith_avx512::available();
        for chunk in self.near.chunks(CARRY_LANES) {
            // Padding lanes: zero products.
            let (mut d, mut w, mut s) = ([0i16; CARRY_LANES], [0i16; CARRY_LANES], [16u16; 32]);
            for (j, l) in chunk.iter().enumerate() {
                (d[j], w[j], s[j]) = (l.d, l.w, l.shift as u16);
            }
            // SAFETY: lanes are deferred only by the AVX2 and AVX-512 kernels'
            // `mac_block_deferred`, which run only on CPUs with AVX2 (`Blocks::new`); the
            // AVX-512 version runs where `arith_avx512::available()` found AVX-512 F and BW.
            #[allow(unsafe_code)]
            let carry = unsafe {
                if wide {
                    carries_avx512(&d, &w, &s)
                } else {
                    carries_avx2(&d, &w, &s)
                }
            };
            for (j, l) in chunk.iter().enumerate() {
                let floor = (i32::from(l.d) * i32::from(l.w)) >> l.shift;
                sums[l.owner as usize] += i64::from(floor - i32::from(carry[j]));
            }
        }
        for chunk in self.far.chunks(8) {
            // Padding lanes: shifted out entirely (product 0).
            let (mut d, mut w, mut s) = ([0i32; 8], [0i32; 8], [32i32; 8]);
            for (j, l) in chunk.iter().enumerate() {
                (d[j], w[j], s[j]) = (l.d.into(), l.w.into(), l.shift.into());
            }
            // SAFETY: lanes are deferred only by the AVX2 and AVX-512 kernels'
            // `mac_block_deferred`, which run only on CPUs with AVX2 (`Blocks::new`).
            #[allow(unsafe_code)]
            let p = unsafe { booth8(&d, &w, &s) };
            for (l, p) in chunk.iter().zip(p) {
                sums[l.owner as usize] += i64::from(p);
            }
        }
        self.clear();
    }
}

/// Lanes of [`booth_carries`].
pub(super) const CARRY_LANES: usize = 32;

/// [`booth_carries`] compiled for AVX2.
#[target_feature(enable = "avx2")]
fn carries_avx2(d: &[i16; 32], w: &[i16; 32], s: &[u16; 32]) -> [u16; 32] {
    booth_carries(d, w, s)
}

/// [`booth_carries`] compiled for AVX-512.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn carries_avx512(d: &[i16; 32], w: &[i16; 32], s: &[u16; 32]) -> [u16; 32] {
    booth_carries(d, w, s)
}

/// For lanes of signed mantissas `d`, `w` (|v| < 2^14) aligned by `s` bits (at most 16):
/// 1 where the Booth multiplier gives one less than the floor of the aligned product.
///
/// The multiplier adds its partial products in carry-save form and shifts the two
/// resulting vectors right separately ([`super::booth_product`]); up to 16 bits that
/// loses exactly the carry out of their low `s` bits: the result is
/// `(d·w >> s) − [(p0 mod 2^s) + (p1 mod 2^s) ≥ 2^s]` (checked over every 14-bit
/// magnitude pair, both signs, shifts 4 to 16, `booth_shift_carries_exhaustive`; not so
/// from 20 bits, where the sign
/// compensation reaches the kept bits). The low 16 bits of the vectors depend only on
/// the low 16 bits of the partial products, so the tree runs in 16-bit lanes (written
/// as array loops that vectorise).
#[inline(always)]
pub(super) fn booth_carries(d: &[i16; 32], w: &[i16; 32], s: &[u16; 32]) -> [u16; 32] {
    const N: usize = CARRY_LANES;
    let (mut da, mut wm) = ([0u16; N], [0i16; N]);
    for j in 0..N {
        let neg = ((d[j] ^ w[j]) >> 15) as u16;
        da[j] = d[j].unsigned_abs();
        // The multiplier's bits, shifted left once, complemented for a negative product;
        // bit 16 (row 7's top bit) equals bit 15, which the arithmetic shift repeats.
        wm[j] = ((w[j].unsigned_abs() << 1) ^ neg) as i16;
    }
    let (mut rows, mut inv) = ([[0u16; N]; 8], [[0u16; N]; 8]);
    for i in 0..8 {
        for j in 0..N {
            let t = (wm[j] >> (2 * i)) as u16;
            let (b0, b1, b2) = (t & 1, (t >> 1) & 1, (t >> 2) & 1);
            let mag1 = b1 ^ b0;
            let mag2 = (mag1 ^ 1) & (b2 ^ b1);
            let neg = b2 & !(b1 & b0);
            let v = (da[j] & mag1.wrapping_neg()) | ((da[j] << 1) & mag2.wrapping_neg());
            rows[i][j] = v ^ neg.wrapping_neg();
            inv[i][j] = neg;
        }
    }
    let csa = |a: u16, b: u16, c: u16| (a ^ b ^ c, ((a & b) | (b & c) | (a & c)) << 1);
    let csa5 = |v: [u16; 5]| {
        let (s, c) = csa(v[0], v[1], v[2]);
        let (s, c) = csa(s, c, v[3]);
        csa(s, c, v[4])
    };
    let mut out = [0u16; N];
    for j in 0..N {
        let (r, v) = (|i: usize| rows[i][j], |i: usize| inv[i][j]);
        let (a0, a1) = csa5([
            r(0),
            (r(1) << 2) | v(0),
            (r(2) << 4) | (v(1) << 2),
            (r(3) << 6) | (v(2) << 4),
            v(3) << 6,
        ]);
        let (b0, b1) = csa5([
            r(4) << 8,
            (r(5) << 10) | (v(4) << 8),
            (r(6) << 12) | (v(5) << 10),
            (r(7) << 14) | (v(6) << 12),
            v(7) << 14,
        ]);
        let (x, c) = csa(a0, a1, b0);
        let (p0, p1) = csa(x, c, b1);
        let m = ((1u32 << s[j]) - 1) as u16;
        let (a, b) = (p0 & m, p1 & m);
        out[j] = u16::from(a > m - b);
    }
    out
}

/// Eight 32-bit lanes from a slice of eight.
#[inline]
#[target_feature(enable = "avx2")]
fn load8(x: &[i32]) -> __m256i {
    let a: [i32; 8] = x.try_into().expect("eight lanes");
    m256i::from(a).0
}

/// [`super::booth_product`] on eight lanes: signed data and weight mantissas `d`, `w`
/// (|v| < 2^14) and shifts `shift` (multiples of 4 from 8 to 28; 32 or more gives 0).
#[target_feature(enable = "avx2")]
fn booth8(d: &[i32], w: &[i32], shift: &[i32]) -> [i32; 8] {
    let (d, w, shift) = (load8(d), load8(w), load8(shift));
    // sign_comp by shift / 4 (shifts 8 to 28; the lanes beyond are masked out).
    let comp = m256i::from([0u32, 0, 8, 12, 16, 20, 24, 28].map(|s| sign_comp(s) as i32)).0;
    let keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(32), shift);
    let negative = _mm256_srai_epi32::<31>(_mm256_xor_si256(d, w));
    let (da, wa) = (_mm256_abs_epi32(d), _mm256_abs_epi32(w));
    // The multiplier's bits, shifted left once, complemented for a negative product: each
    // row's Booth code is three of them (`code ^ 7` when negative).
    let wm = _mm256_xor_si256(_mm256_slli_epi32::<1>(wa), negative);
    let da2 = _mm256_slli_epi32::<1>(da);
    let one = _mm256_set1_epi32(1);
    let low16 = _mm256_set1_epi32(0xffff);
    let bit16 = _mm256_set1_epi32(0x1_0000);
    let mut pp = [_mm256_setzero_si256(); 8];
    let mut inv = [_mm256_setzero_si256(); 8];
    let mut t = wm;
    for i in 0..8 {
        let m0 = _mm256_cmpeq_epi32(_mm256_and_si256(t, one), one);
        let m1 = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_srli_epi32::<1>(t), one), one);
        let m2 = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_srli_epi32::<2>(t), one), one);
        // Magnitude 1: b1 != b0; magnitude 2 (codes 3 and 4): b1 == b0 and b2 != b1;
        // negated (codes 4, 5 and 6): b2 and not both of b1 and b0.
        let mag1 = _mm256_xor_si256(m1, m0);
        let mag2 = _mm256_andnot_si256(mag1, _mm256_xor_si256(m2, m1));
        let neg = _mm256_andnot_si256(_mm256_and_si256(m1, m0), m2);
        let v = _mm256_or_si256(_mm256_and_si256(da, mag1), _mm256_and_si256(da2, mag2));
        pp[i] = _mm256_or_si256(
            _mm256_xor_si256(v, _mm256_and_si256(neg, low16)),
            _mm256_andnot_si256(neg, bit16),
        );
        inv[i] = _mm256_and_si256(neg, one);
        t = _mm256_srli_epi32::<2>(t);
    }
    let (a0, a1) = csa5([
        pp[0],
        _mm256_or_si256(_mm256_slli_epi32::<2>(pp[1]), inv[0]),
        _mm256_or_si256(
            _mm256_slli_epi32::<4>(pp[2]),
            _mm256_slli_epi32::<2>(inv[1]),
        ),
        _mm256_or_si256(
            _mm256_slli_epi32::<6>(pp[3]),
            _mm256_slli_epi32::<4>(inv[2]),
        ),
        _mm256_slli_epi32::<6>(inv[3]),
    ]);
    let (b0, b1) = csa5([
        _mm256_slli_epi32::<8>(pp[4]),
        _mm256_or_si256(
            _mm256_slli_epi32::<10>(pp[5]),
            _mm256_slli_epi32::<8>(inv[4]),
        ),
        _mm256_or_si256(
            _mm256_slli_epi32::<12>(pp[6]),
            _mm256_slli_epi32::<10>(inv[5]),
        ),
        _mm256_or_si256(
            _mm256_slli_epi32::<14>(pp[7]),
            _mm256_slli_epi32::<12>(inv[6]),
        ),
        _mm256_slli_epi32::<14>(inv[7]),
    ]);
    let (s, cy) = csa(a0, a1, b0);
    let (p0, p1) = csa(s, cy, b1);
    let r = _mm256_add_epi32(
        _mm256_add_epi32(_mm256_srlv_epi32(p0, shift), _mm256_srlv_epi32(p1, shift)),
        _mm256_permutevar8x32_epi32(comp, _mm256_srli_epi32::<2>(shift)),
    );
    m256i(_mm256_and_si256(r, keep)).into()
}

/// One carry-save adder on eight lanes: (sum, carry << 1).
#[inline]
#[target_feature(enable = "avx2")]
fn csa(a: __m256i, b: __m256i, c: __m256i) -> (__m256i, __m256i) {
    let sum = _mm256_xor_si256(_mm256_xor_si256(a, b), c);
    let maj = _mm256_or_si256(
        _mm256_and_si256(a, b),
        _mm256_and_si256(c, _mm256_or_si256(a, b)),
    );
    (sum, _mm256_slli_epi32::<1>(maj))
}

/// [`super::csa5`] on eight lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn csa5(v: [__m256i; 5]) -> (__m256i, __m256i) {
    let (s, c) = csa(v[0], v[1], v[2]);
    let (s, c) = csa(s, c, v[3]);
    csa(s, c, v[4])
}
