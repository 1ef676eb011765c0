//! Datapath arithmetic of the convolution core: the CMAC multiply-add of one atomic-C
//! block and the CACC accumulator, for int8/int16 and fp16.
//!
//! Integer MAC cells sum exact products (22-bit results for int8, 44-bit for int16, wide
//! enough that they never wrap); CACC adds block results into a 48-bit accumulator that
//! saturates, then rounds the sum right by `CLIP_TRUNCATE` (ties away from zero) and
//! saturates it to 32 bits for SDP (`ReshapeSequencerDirectConvCommon`,
//! `nvdlav1:cmod/cacc/NV_NVDLA_cacc.cpp`).
//!
//! fp16 is not IEEE arithmetic. A MAC cell (`calculation_fp16`,
//! `nvdlav1:cmod/cmac/NV_NVDLA_cmac.h`) works on a whole block of channels at once:
//! - a lane takes part only when both operands are non-zero (`+0` and `-0` are masked
//!   out by CSC);
//! - each 5-bit exponent splits into a coarse part (`exp >> 2`) and a fine part
//!   (`exp & 3`, or 1 for a zero exponent) that pre-shifts the 11-bit mantissa (implicit
//!   one unless the exponent is zero), so mantissas are 14-bit integers;
//! - the block exponent is the largest coarse sum `dexp>>2 + wexp>>2` over the active
//!   lanes; each product is aligned to it by a right shift of 4 bits per coarse step;
//! - products come from a radix-4 Booth multiplier whose partial products are reduced
//!   with carry-save adders into two vectors that are shifted separately, then added
//!   with a sign-compensation constant; so the truncation of an aligned product depends
//!   on that carry-save split, which [`booth_product`] reproduces;
//! - the 64 aligned products sum into a 38-bit mantissa; the result is
//!   `(block exponent * 4, mantissa)`, or a NaN marker when an operand is NaN
//!   (the first NaN weight lane wins over the first NaN data lane).
//!
//! CACC keeps an "fp48" accumulator: an 8-bit exponent and a normalised 40-bit two's
//! complement mantissa (`cacc_fp16_add`), and converts it to fp32 for SDP
//! (`cacc_fp48_to_fp32`) with round-half-up on the magnitude.

/// Saturation bounds of the 48-bit integer accumulator.
pub const ACC48_MAX: i64 = (1 << 47) - 1;
/// Lower saturation bound of the 48-bit integer accumulator.
pub const ACC48_MIN: i64 = -(1 << 47);

/// Adds a MAC block result to a 48-bit integer accumulator with saturation.
#[inline]
pub fn acc48_add(acc: i64, v: i64) -> i64 {
    (acc.saturating_add(v)).clamp(ACC48_MIN, ACC48_MAX)
}

/// CACC integer output: `acc / 2^truncate` rounded half away from zero, saturated to
/// 32 bits. Returns the value and whether it saturated.
#[inline]
pub fn cacc_int_out(acc: i64, truncate: u32) -> (i64, bool) {
    let r = crate::arith::shr_round(acc, truncate);
    let s = r.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    (s, s != r)
}

/// One decoded fp16 operand lane as the MAC cell sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct F16Lane {
    /// Operand is non-zero (CSC mask bit).
    pub active: bool,
    /// Sign bit.
    pub sign: bool,
    /// Coarse exponent `exp >> 2` (0..=7).
    pub coarse: u8,
    /// Mantissa with implicit one, pre-shifted by the fine exponent (up to 14 bits).
    pub mts: u16,
}

impl F16Lane {
    /// Decodes an fp16 bit pattern.
    #[inline]
    pub fn decode(h: u16) -> Self {
        let exp = (h >> 10) & 0x1f;
        let frac = h & 0x3ff;
        let active = h & 0x7fff != 0;
        if !active {
            return F16Lane::default();
        }
        let fine = if exp == 0 { 1 } else { exp & 3 };
        let mant = frac | if exp != 0 { 0x400 } else { 0 };
        F16Lane {
            active,
            sign: h & 0x8000 != 0,
            coarse: (exp >> 2) as u8,
            mts: mant << fine,
        }
    }
}

/// Whether an fp16 bit pattern is a NaN.
#[inline]
pub fn f16_is_nan(h: u16) -> bool {
    h & 0x7c00 == 0x7c00 && h & 0x3ff != 0
}

/// Result of one MAC cell on one block: exponent (6 bits) and 38-bit mantissa, as CMAC
/// hands it to CACC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacF16 {
    /// Block exponent (`0x3f` marks NaN).
    pub exp: u8,
    /// Two's complement mantissa (sign-extended from 38 bits).
    pub mant: i64,
}

/// The NaN marker a MAC cell emits for a NaN operand `h`.
pub fn mac_nan(h: u16) -> MacF16 {
    let sign = i64::from(h >> 15);
    let frac = i64::from(h & 0x3ff);
    let raw = (sign << 37) | (frac << 27);
    MacF16 {
        exp: 0x3f,
        mant: sext(raw as u64, 38),
    }
}

#[inline]
fn sext(v: u64, bits: u32) -> i64 {
    let s = 64 - bits;
    ((v << s) as i64) >> s
}

/// One carry-save adder: (sum, carry << 1).
#[inline(always)]
fn csa(a: u32, b: u32, c: u32) -> (u32, u32) {
    (a ^ b ^ c, ((a & b) | (b & c) | (a & c)) << 1)
}

/// Reduces five rows as the MAC cell's adder tree does: each pass compresses the first
/// three rows into (sum, carry) and keeps the rest after them.
#[inline(always)]
fn csa5(v: [u32; 5]) -> (u32, u32) {
    let (s, c) = csa(v[0], v[1], v[2]);
    let (s, c) = csa(s, c, v[3]);
    csa(s, c, v[4])
}

/// Sign-compensation constant added after shifting the two carry-save vectors right by
/// `shift` (a multiple of 4 up to 28; none beyond): `0xaaab_0000` shifted in ones from
/// the top, with the low bit of the shifted-out part kept for shifts past 16.
#[inline(always)]
fn sign_comp(shift: u32) -> u32 {
    match shift {
        0..=16 => ((0xaaab_0000u32 as i32) >> shift) as u32,
        20 => 0xffff_faab,
        24 => 0xffff_ffab,
        28 => 0xffff_fffb,
        _ => 0,
    }
}

/// Booth digit of code `0..8` (three overlapping multiplier bits): magnitude 0, 1 or 2
/// and whether the partial product is negated.
const BOOTH_MAG: [u32; 8] = [0, 1, 1, 2, 2, 1, 1, 0];
const BOOTH_NEG: [u32; 8] = [0, 0, 0, 0, 1, 1, 1, 0];

/// Aligned product of two pre-shifted mantissas as the MAC cell's radix-4 Booth
/// multiplier computes it: `±(w * d) >> shift`, where the two carry-save vectors are
/// truncated separately before the final add (so the result is the floor of the exact
/// aligned product or one less).
#[inline]
pub fn booth_product(negative: bool, w: u32, d: u32, shift: u32) -> i32 {
    if shift >= 32 {
        return 0;
    }
    let flip = if negative { 7 } else { 0 };
    let wm = w << 1;
    let mut pp = [0u32; 8];
    let mut inv = [0u32; 8];
    for i in 0..8 {
        let code = (((wm >> (2 * i)) & 7) ^ flip) as usize;
        let mag = BOOTH_MAG[code];
        let neg = BOOTH_NEG[code];
        // d, 2d or 0; a negated row is the 16-bit complement, a positive one carries
        // the sign-extension one at bit 16.
        let v = ((d << mag) >> 1) & 0u32.wrapping_sub(mag.min(1));
        pp[i] = (v ^ (neg.wrapping_neg() & 0xffff)) | ((1 - neg) << 16);
        inv[i] = neg;
    }
    let (a0, a1) = csa5([
        pp[0],
        (pp[1] << 2) | inv[0],
        (pp[2] << 4) | (inv[1] << 2),
        (pp[3] << 6) | (inv[2] << 4),
        inv[3] << 6,
    ]);
    let (b0, b1) = csa5([
        pp[4] << 8,
        (pp[5] << 10) | (inv[4] << 8),
        (pp[6] << 12) | (inv[5] << 10),
        (pp[7] << 14) | (inv[6] << 12),
        inv[7] << 14,
    ]);
    let (s, c) = csa(a0, a1, b0);
    let (p0, p1) = csa(s, c, b1);
    let r = (p0 >> shift)
        .wrapping_add(p1 >> shift)
        .wrapping_add(sign_comp(shift));
    r as i32
}

/// Decoded operand lanes of one MAC operation, as parallel arrays.
#[derive(Debug, Default, Clone)]
pub struct Lanes {
    /// Coarse exponents.
    pub coarse: Vec<u32>,
    /// Pre-shifted mantissas.
    pub mts: Vec<u32>,
    /// Sign bits.
    pub sign: Vec<u32>,
    /// 1 when the lane is non-zero.
    pub act: Vec<u32>,
}

impl Lanes {
    /// Removes every lane.
    pub fn clear(&mut self) {
        self.coarse.clear();
        self.mts.clear();
        self.sign.clear();
        self.act.clear();
    }

    /// Appends the lane of an fp16 bit pattern.
    #[inline]
    pub fn push(&mut self, h: u16) {
        let l = F16Lane::decode(h);
        self.coarse.push(u32::from(l.coarse));
        self.mts.push(u32::from(l.mts));
        self.sign.push(u32::from(l.sign));
        self.act.push(u32::from(l.active));
    }

    /// Number of lanes.
    pub fn len(&self) -> usize {
        self.act.len()
    }

    /// No lanes.
    pub fn is_empty(&self) -> bool {
        self.act.is_empty()
    }
}

/// One MAC cell on one block of lanes (data `d`, weights `w`).
#[inline]
pub fn mac_f16(d: &Lanes, w: &Lanes) -> MacF16 {
    let n = d.len().min(w.len());
    let (dc, wc) = (&d.coarse[..n], &w.coarse[..n]);
    let (da, wa) = (&d.act[..n], &w.act[..n]);
    let (dm, wm) = (&d.mts[..n], &w.mts[..n]);
    let (ds, ws) = (&d.sign[..n], &w.sign[..n]);
    let mut max = 0u32;
    for i in 0..n {
        max = max.max((dc[i] + wc[i]) & (da[i] & wa[i]).wrapping_neg());
    }
    let mut sum: i64 = 0;
    for i in 0..n {
        if da[i] & wa[i] == 0 {
            continue;
        }
        let shift = (max - dc[i] - wc[i]) * 4;
        let neg = ds[i] != ws[i];
        let v = if shift == 0 {
            // The Booth result is exact when nothing is shifted out.
            let p = (dm[i] * wm[i]) as i32;
            if neg {
                -p
            } else {
                p
            }
        } else {
            booth_product(neg, wm[i], dm[i], shift)
        };
        sum += i64::from(v);
    }
    MacF16 {
        exp: (max * 4) as u8,
        mant: sext(sum as u64, 38),
    }
}

/// [`mac_f16`] on fp16 bit patterns.
pub fn mac_f16_block(d: &[u16], w: &[u16]) -> MacF16 {
    let (mut a, mut b) = (Lanes::default(), Lanes::default());
    d.iter().for_each(|&h| a.push(h));
    w.iter().for_each(|&h| b.push(h));
    mac_f16(&a, &b)
}

/// The NaN marker of a block, if any operand is NaN: the first NaN weight lane, else
/// the first NaN data lane (masked lanes included).
pub fn block_nan(d: &[u16], w: &[u16]) -> Option<MacF16> {
    if let Some(&h) = w.iter().find(|&&h| f16_is_nan(h)) {
        return Some(mac_nan(h));
    }
    d.iter().find(|&&h| f16_is_nan(h)).map(|&h| mac_nan(h))
}

/// CACC fp48 accumulator: 8-bit exponent, 40-bit two's complement mantissa.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fp48 {
    /// Exponent (255 marks NaN).
    pub exp: u8,
    /// Mantissa, sign-extended from 40 bits.
    pub mant: i64,
}

const M40: u64 = (1 << 40) - 1;

#[inline]
fn bit(v: i64, n: u32) -> bool {
    (v >> n) & 1 != 0
}

impl Fp48 {
    /// Adds one MAC block result.
    pub fn accumulate(self, mac: MacF16) -> Fp48 {
        if mac.mant == 0 {
            return self;
        }
        if self.exp == 0xff {
            // NaN accumulator keeps its top 11 mantissa bits.
            return Fp48 {
                exp: 0xff,
                mant: sext(self.mant as u64 & (0x7ff << 29), 40),
            };
        }
        if mac.exp == 0x3f {
            let top = ((mac.mant as u64) >> 27) & 0x7ff;
            return Fp48 {
                exp: 0xff,
                mant: sext(top << 29, 40),
            };
        }
        // Normalise the 38-bit MAC mantissa so that bit 36 differs from the sign.
        let m = mac.mant;
        let s37 = bit(m, 37);
        let mut i: i32 = 36;
        if s37 == bit(m, 36) {
            while i >= 0 && bit(m, i as u32) == s37 {
                i -= 1;
            }
        }
        let sh0 = (36 - i) as u32;
        let m_reg = sext((m as u64) << sh0, 38);
        let mut mac_ext = sext((m_reg as u64) << 2, 40);
        let mac_exp = (i32::from(mac.exp) - sh0 as i32 + 49) & 0xff;

        let mut acc_ext = self.mant;
        let acc_exp = if self.mant == 0 {
            0
        } else {
            i32::from(self.exp)
        };

        // Align to the bigger exponent, keeping the bits shifted out (top-aligned).
        let mut out: u64 = 0;
        let mut bigger = mac_exp;
        let shift_out = |x: &mut i64, diff: i32, out: &mut u64| {
            if diff <= 40 {
                let d = diff as u32;
                let low = (*x as u64) & ((1u64 << d) - 1);
                *out = (low << (40 - d)) & M40;
                *x >>= d;
            } else {
                *x = 0;
            }
        };
        if mac_exp > acc_exp {
            shift_out(&mut acc_ext, mac_exp - acc_exp, &mut out);
        } else if mac_exp < acc_exp {
            bigger = acc_exp;
            shift_out(&mut mac_ext, acc_exp - mac_exp, &mut out);
        }

        let sum_tmp = sext((acc_ext.wrapping_add(mac_ext)) as u64, 40);
        let mut overflow = false;
        let mut high_bit1 = false;
        let sum: i64;
        let mut exp = bigger;
        if bit(mac_ext, 39) == bit(acc_ext, 39) && bit(mac_ext, 39) != bit(sum_tmp, 39) {
            high_bit1 = bit(sum_tmp, 0);
            overflow = true;
            let sign = u64::from(bit(mac_ext, 39)) << 39;
            sum = sext(sign | ((sum_tmp as u64 & M40) >> 1), 40);
            exp = bigger + 1;
        } else if bit(sum_tmp, 38) == bit(sum_tmp, 39) {
            let s39 = bit(sum_tmp, 39);
            let mut j: i32 = 38;
            while j >= 0 && bit(sum_tmp, j as u32) == s39 {
                j -= 1;
            }
            let n1 = (38 - j) as u32;
            let v = (((sum_tmp as u64) << n1) | (out >> (40 - n1))) & M40;
            sum = sext(v, 40);
            out = (out << n1) & M40;
            exp = bigger - n1 as i32;
        } else {
            sum = sum_tmp;
        }

        let guard0 = (out >> 39) & 1 != 0;
        let sticky0 = out & ((1 << 39) - 1) != 0;
        let sticky1 = out != 0;
        let neg = bit(sum, 39);
        let round = if overflow {
            if neg {
                high_bit1 && sticky1
            } else {
                high_bit1
            }
        } else if neg {
            guard0 && sticky0
        } else {
            guard0
        };
        let rounded = sext((sum as u64).wrapping_add(u64::from(round)), 40);
        let fin = if bit(rounded, 39) != neg {
            exp += 1;
            let sign = u64::from(neg) << 39;
            sext(sign | ((rounded as u64 & M40) >> 1), 40)
        } else {
            rounded
        };
        Fp48 {
            exp: if fin == 0 { 0 } else { (exp & 0xff) as u8 },
            mant: fin,
        }
    }

    /// Converts to the fp32 bit pattern CACC delivers to SDP.
    pub fn to_f32_bits(self) -> u32 {
        let m = self.mant;
        let sign = u32::from(bit(m, 39));
        if self.exp == 0xff {
            let payload = ((m as u64 >> 29) & 0x3ff) as u32;
            return (sign << 31) | (0xff << 23) | payload;
        }
        let low39 = (m as u64) & ((1 << 39) - 1);
        if sign == 1 && low39 == 0 {
            let e = u32::from(self.exp).wrapping_add(65) & 0xff;
            return (1 << 31) | (e << 23);
        }
        let mag = if sign == 1 {
            (!low39).wrapping_add(1) & ((1 << 39) - 1)
        } else {
            low39
        };
        let mut exp = if m == 0 {
            0
        } else {
            u32::from(self.exp).wrapping_add(64) & 0xff
        };
        let frac = if (mag >> 14) & 1 == 1 {
            // Round half up on the magnitude (25 bits: sign position + 24).
            let t = ((u64::from(sign) << 24) | (mag >> 15)) + 1;
            if ((t >> 24) & 1) as u32 != sign {
                exp = (exp + 1) & 0xff;
                ((t >> 1) & 0x7f_ffff) as u32
            } else {
                (t & 0x7f_ffff) as u32
            }
        } else {
            ((mag >> 15) & 0x7f_ffff) as u32
        };
        (sign << 31) | (exp << 23) | frac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32v(b: u32) -> f32 {
        f32::from_bits(b)
    }

    fn h(v: f32) -> u16 {
        // Exact for the small values used here.
        let b = v.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        if v == 0.0 {
            return sign;
        }
        let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
        let m = ((b >> 13) & 0x3ff) as u16;
        sign | ((e as u16) << 10) | m
    }

    // The MAC cell's multiplier written the way the C model spells it (match on the
    // Booth code, generic 3:2 reduction, the constant table), as an oracle for the
    // branch-free version.
    fn csa_reduce(v: &mut [u32], mut n: usize) {
        while n >= 3 {
            let groups = n / 3;
            for j in 0..groups {
                let (a, b, c) = (v[3 * j], v[3 * j + 1], v[3 * j + 2]);
                v[2 * j] = a ^ b ^ c;
                v[2 * j + 1] = ((a & b) | (b & c) | (a & c)) << 1;
            }
            for j in groups * 3..n {
                v[j - groups] = v[j];
            }
            n -= groups;
        }
    }
    fn sign_comp_table(shift: u32) -> u32 {
        match shift {
            0 => 0xaaab_0000,
            4 => 0xfaaa_b000,
            8 => 0xffaa_ab00,
            12 => 0xfffa_aab0,
            16 => 0xffff_aaab,
            20 => 0xffff_faab,
            24 => 0xffff_ffab,
            28 => 0xffff_fffb,
            _ => 0,
        }
    }
    fn booth_literal(negative: bool, w: u32, d: u32, shift: u32) -> i32 {
        if shift >= 32 {
            return 0;
        }
        let flip = if negative { 7 } else { 0 };
        let mut wm = w << 1;
        let mut pp = [0u32; 8];
        let mut inv = [0u32; 8];
        for i in 0..8 {
            let code = (wm & 7) ^ flip;
            wm >>= 2;
            let (p, n) = match code {
                1 | 2 => (d | 0x1_0000, 0),
                3 => ((d << 1) | 0x1_0000, 0),
                4 => (!(d << 1) & 0xffff, 1),
                5 | 6 => (!d & 0xffff, 1),
                _ => (0x1_0000, 0),
            };
            pp[i] = p;
            inv[i] = n;
        }
        // Ten rows: Booth rows with the inversion "+1" of the previous row tucked in.
        let mut v = [
            pp[0],
            (pp[1] << 2) | inv[0],
            (pp[2] << 4) | (inv[1] << 2),
            (pp[3] << 6) | (inv[2] << 4),
            inv[3] << 6,
            pp[4] << 8,
            (pp[5] << 10) | (inv[4] << 8),
            (pp[6] << 12) | (inv[5] << 10),
            (pp[7] << 14) | (inv[6] << 12),
            inv[7] << 14,
        ];
        csa_reduce(&mut v[0..5], 5);
        csa_reduce(&mut v[5..10], 5);
        v[2] = v[5];
        v[3] = v[6];
        csa_reduce(&mut v[0..4], 4);
        let s = (v[0] >> shift)
            .wrapping_add(v[1] >> shift)
            .wrapping_add(sign_comp_table(shift));
        s as i32
    }

    #[test]
    fn booth_matches_literal_form() {
        let mut s = 4242u32;
        for _ in 0..200_000 {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let w = (s >> 2) & 0x3fff;
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let d = (s >> 2) & 0x3fff;
            let neg = s & 1 == 1;
            let sh = ((s >> 1) % 9) * 4;
            assert_eq!(
                booth_product(neg, w, d, sh),
                booth_literal(neg, w, d, sh),
                "{w} {d} {sh}"
            );
        }
    }

    #[test]
    fn booth_is_exact_without_shift_random() {
        let mut s = 777u32;
        for _ in 0..50000 {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let w = (s >> 2) & 0x3fff;
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let d = (s >> 2) & 0x3fff;
            let p = (w * d) as i32;
            assert_eq!(booth_product(false, w, d, 0), p);
            assert_eq!(booth_product(true, w, d, 0), -p);
        }
    }

    #[test]
    fn booth_is_exact_without_shift() {
        for &(w, d) in &[
            (0x400u32, 0x400u32),
            (0x7ff, 0x3ff),
            (0x3fff, 0x3fff),
            (5, 7),
        ] {
            assert_eq!(booth_product(false, w, d, 0), (w * d) as i32);
            assert_eq!(booth_product(true, w, d, 0), -((w * d) as i32));
        }
    }

    #[test]
    fn booth_shift_is_within_one_of_exact() {
        let mut s = 12345u32;
        for _ in 0..20000 {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let w = (s >> 3) & 0x3fff;
            let d = (s >> 17) & 0x3fff;
            let neg = s & 1 == 1;
            let sh = ((s >> 1) % 8) * 4;
            let p = i64::from(w) * i64::from(d);
            let exact = (if neg { -p } else { p }) >> sh;
            let got = i64::from(booth_product(neg, w, d, sh));
            assert!(
                (got - exact).abs() <= 1,
                "w={w} d={d} sh={sh} {got} vs {exact}"
            );
        }
    }

    #[test]
    fn block_of_simple_values() {
        // 1.5 * 2 + (-0.5) * 4 = 1.0
        let d = [h(1.5), h(-0.5), 0, h(3.0)];
        let w = [h(2.0), h(4.0), h(7.0), 0];
        let r = mac_f16_block(&d, &w);
        let acc = Fp48::default().accumulate(r);
        assert_eq!(f32v(acc.to_f32_bits()), 1.0);
    }

    #[test]
    fn accumulation_matches_float_for_exact_values() {
        let mut acc = Fp48::default();
        let mut want = 0f32;
        for i in 0..50 {
            let a = (i as f32 - 20.0) * 0.25;
            let b = 3.0 - i as f32 * 0.125;
            let r = mac_f16_block(&[h(a)], &[h(b)]);
            acc = acc.accumulate(r);
            want += a * b;
        }
        assert_eq!(f32v(acc.to_f32_bits()), want);
    }

    #[test]
    fn nan_propagates() {
        let nan = 0x7e01u16;
        let m = block_nan(&[0x3c00, nan], &[0x3c00, 0x3c00]).unwrap();
        let acc = Fp48::default()
            .accumulate(MacF16 {
                exp: 1,
                mant: 4 << 20,
            })
            .accumulate(m);
        let f = acc.to_f32_bits();
        assert_eq!(f >> 23 & 0xff, 0xff);
        assert_ne!(f & 0x7f_ffff, 0);
    }

    #[test]
    fn int_truncation_rounds_half_away() {
        assert_eq!(cacc_int_out(5, 1), (3, false));
        assert_eq!(cacc_int_out(-5, 1), (-3, false));
        assert_eq!(cacc_int_out(1 << 40, 0), (i64::from(i32::MAX), true));
        assert_eq!(acc48_add(ACC48_MAX, 5), ACC48_MAX);
    }
}
