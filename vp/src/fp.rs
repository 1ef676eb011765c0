//! Floating-point formats of the datapaths: fp16 (1-5-10), fp17 (1-6-10) and fp32
//! (1-8-23), as bit patterns.
//!
//! The C model implements them in `cmod/hls/include/nvdla_float.h`; the rules below were
//! checked against it bit for bit on random operands:
//!
//! - no infinities are produced: overflow saturates to the largest finite value
//!   (`SetToInf` sets exponent max-1, mantissa all ones); infinite inputs of the
//!   conversions also become the largest finite value;
//! - the adders and multipliers treat a zero exponent with a non-zero mantissa as
//!   `1.m * 2^-bias` (the implied one is only dropped for exact zero) and an infinite
//!   input as the finite `2^(emax - bias)`; results below the smallest normal flush to
//!   zero; rounding is to nearest-even over the exact result;
//! - a zero sum takes the sign of the operand of larger magnitude (`a` when equal);
//! - NaN operands propagate unchanged; conversions keep a NaN's low mantissa bits;
//! - conversions to fp16 (`DENORM_YES`) produce subnormals, to fp17/fp32 flush them;
//!   fp17 inputs with a zero exponent read as `1.m * 2^-31` like in the arithmetic.

/// A binary floating-point format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// Exponent bits.
    pub exp: u32,
    /// Mantissa (fraction) bits.
    pub mant: u32,
}

/// IEEE half precision.
pub const FP16: Format = Format { exp: 5, mant: 10 };
/// NVDLA's 17-bit float (6-bit exponent, bias 31).
pub const FP17: Format = Format { exp: 6, mant: 10 };
/// IEEE single precision.
pub const FP32: Format = Format { exp: 8, mant: 23 };

impl Format {
    fn bias(self) -> i32 {
        (1 << (self.exp - 1)) - 1
    }

    fn emax_field(self) -> u64 {
        (1 << self.exp) - 1
    }

    /// Splits bits into (sign, exponent field, mantissa field).
    pub fn fields(self, bits: u64) -> (u64, u64, u64) {
        let m = bits & ((1 << self.mant) - 1);
        let e = (bits >> self.mant) & self.emax_field();
        let s = (bits >> (self.mant + self.exp)) & 1;
        (s, e, m)
    }

    /// True for NaN.
    pub fn is_nan(self, bits: u64) -> bool {
        let (_, e, m) = self.fields(bits);
        e == self.emax_field() && m != 0
    }

    /// Value as the C model's adders and multipliers see it (see the module notes).
    fn arith_value(self, bits: u64) -> f64 {
        let (s, e, m) = self.fields(bits);
        let sign = if s == 1 { -1.0 } else { 1.0 };
        if e == 0 && m == 0 {
            return sign * 0.0;
        }
        let frac = m as f64 / (1u64 << self.mant) as f64;
        sign * (1.0 + frac) * pow2(e as i32 - self.bias())
    }

    fn is_inf(self, bits: u64) -> bool {
        let (_, e, m) = self.fields(bits);
        e == self.emax_field() && m == 0
    }

    /// Largest finite value with the given sign bit.
    pub fn max_finite(self, sign: u64) -> u64 {
        (sign << (self.exp + self.mant))
            | ((self.emax_field() - 1) << self.mant)
            | ((1 << self.mant) - 1)
    }

    /// Value of a bit pattern (subnormals as IEEE; NaN and infinities mapped to f64's).
    pub fn to_f64(self, bits: u64) -> f64 {
        let (s, e, m) = self.fields(bits);
        let sign = if s == 1 { -1.0 } else { 1.0 };
        if e == self.emax_field() {
            return if m == 0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        let frac = m as f64 / (1u64 << self.mant) as f64;
        if e == 0 {
            sign * frac * pow2(1 - self.bias())
        } else {
            sign * (1.0 + frac) * pow2(e as i32 - self.bias())
        }
    }

    /// Canonical quiet NaN of the format.
    pub fn nan(self) -> u64 {
        (self.emax_field() << self.mant) | (1 << (self.mant - 1))
    }

    /// Rounds an f64 (which must hold the exact result, or one whose rounding cannot
    /// create a tie) to nearest-even in this format. Overflow gives infinity; values
    /// below the smallest normal become subnormals when `denorm`, else signed zero.
    pub fn round(self, v: f64, denorm: bool) -> u64 {
        self.round_ext(v, denorm, false, false)
    }

    /// [`Format::round`]; with `keep_emax`, a result whose exponent lands exactly on the
    /// all-ones field without a rounding carry (an infinite operand in the adder) keeps
    /// that exponent instead of saturating; with `flush_first`, values below the
    /// smallest normal flush before rounding (the adder normalises first), otherwise
    /// they are rounded and flushed only if still below it (multiplier, conversions).
    fn round_ext(self, v: f64, denorm: bool, keep_emax: bool, flush_first: bool) -> u64 {
        let sign: u64 = if v.is_sign_negative() { 1 } else { 0 };
        let sbit = sign << (self.exp + self.mant);
        if v.is_nan() {
            return self.nan();
        }
        let a = v.abs();
        if a.is_infinite() {
            return self.max_finite(sign);
        }
        if a == 0.0 {
            return sbit;
        }
        let min_normal = pow2(1 - self.bias());
        if self == FP32 && a >= min_normal {
            // A normal binary32 result: the conversion rounds to nearest-even the same
            // way; an overflow to infinity takes the general path (saturation, keep_emax).
            let f = v as f32;
            if f.is_finite() {
                return u64::from(f.to_bits());
            }
        }
        if a < min_normal && (denorm || flush_first) {
            if !denorm {
                return sbit;
            }
            // Subnormal: units of 2^(1 - bias - mant).
            let q = a / pow2(1 - self.bias() - self.mant as i32);
            let r = round_half_even(q) as u64;
            // r may reach 2^mant, which is exactly the smallest normal: bits line up.
            return sbit | r;
        }
        let mut e = floor_log2(a);
        let scaled = a / pow2(e - self.mant as i32); // in [2^mant, 2^(mant+1))
        let mut r = round_half_even(scaled) as u64;
        let mut carry = false;
        if r >= (2u64 << self.mant) {
            r >>= 1;
            e += 1;
            carry = true;
        }
        let ef = e + self.bias();
        if ef < 1 {
            return sbit; // still below the smallest normal after rounding
        }
        if ef == self.emax_field() as i32 && keep_emax && !carry {
            return sbit | ((ef as u64) << self.mant) | (r & ((1 << self.mant) - 1));
        }
        if ef >= self.emax_field() as i32 {
            return self.max_finite(sign);
        }
        sbit | ((ef as u64) << self.mant) | (r & ((1 << self.mant) - 1))
    }

    /// Two binary32 operands that are each normal or zero, as `f32`: the arithmetic's
    /// common case, where the host's IEEE operation gives the same bits whenever its
    /// result is normal (see [`Format::add`], [`Format::mul`]).
    #[inline(always)]
    fn normal_f32s(self, a: u64, b: u64) -> Option<(f32, f32)> {
        if self != FP32 {
            return None;
        }
        let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        let ok = |v: f32| v.is_normal() || v == 0.0;
        (ok(x) && ok(y)).then_some((x, y))
    }

    /// Adds two values of this format (see the module notes).
    ///
    /// Two binary32 operands, normal or zero, whose IEEE sum is normal give that sum:
    /// both round the exact sum to nearest-even, and a sum below the smallest normal
    /// (which the adder flushes) is a multiple of 2^-149, exact and subnormal in IEEE, so
    /// it takes the general path, as does a zero sum (whose sign differs).
    #[inline]
    pub fn add(self, a: u64, b: u64) -> u64 {
        if let Some((x, y)) = self.normal_f32s(a, b) {
            let s = x + y;
            if s.is_normal() {
                return u64::from(s.to_bits());
            }
        }
        self.add_general(a, b)
    }

    fn add_general(self, a: u64, b: u64) -> u64 {
        if self.is_nan(a) {
            return a;
        }
        if self.is_nan(b) {
            return b;
        }
        let (x, y) = (self.arith_value(a), self.arith_value(b));
        let s = x + y;
        if s == 0.0 {
            let larger = if x.abs() >= y.abs() { a } else { b };
            let (sl, _, _) = self.fields(larger);
            return sl << (self.exp + self.mant);
        }
        self.round_ext(s, false, self.is_inf(a) || self.is_inf(b), true)
    }

    /// Multiplies two values of this format.
    ///
    /// Two binary32 operands, normal or zero, whose IEEE product is normal give that
    /// product: both round the exact product to nearest-even (24 bits at the same
    /// exponent); an exact product just below the smallest normal that IEEE rounds up to
    /// it rounds up here too (the multiplier rounds before it flushes). A zero operand
    /// gives zero with the sign of the product in both. Any other result takes the
    /// general path.
    #[inline]
    pub fn mul(self, a: u64, b: u64) -> u64 {
        if let Some((x, y)) = self.normal_f32s(a, b) {
            let p = x * y;
            if p.is_normal() || (p == 0.0 && (x == 0.0 || y == 0.0)) {
                return u64::from(p.to_bits());
            }
        }
        self.mul_general(a, b)
    }

    fn mul_general(self, a: u64, b: u64) -> u64 {
        if self.is_nan(a) {
            return a;
        }
        if self.is_nan(b) {
            return b;
        }
        self.round(self.arith_value(a) * self.arith_value(b), false)
    }

    /// `FpCmp` of the C model: the larger (or smaller) by sign and magnitude bits; for
    /// equal values MAX returns `b` and MIN returns `a`; a NaN operand wins.
    pub fn cmp_select(self, a: u64, b: u64, max: bool) -> u64 {
        let (sa, ea, ma) = self.fields(a);
        let (sb, eb, mb) = self.fields(b);
        let abs_a_greater = ea > eb || (ea == eb && ma > mb);
        let a_greater = match (sa == 0, sb == 0) {
            (true, true) => abs_a_greater,
            (true, false) => true,
            (false, true) => false,
            (false, false) => !abs_a_greater,
        };
        let o = if max == a_greater { a } else { b };
        if self.is_nan(a) {
            a
        } else if self.is_nan(b) {
            b
        } else {
            o
        }
    }

    /// Converts to another format, rounding to nearest-even (see the module notes).
    pub fn convert(self, bits: u64, to: Format, denorm: bool) -> u64 {
        let (s, e, m) = self.fields(bits);
        if self.is_nan(bits) {
            let keep = m & ((1 << to.mant.min(self.mant)) - 1);
            return (s << (to.exp + to.mant)) | (to.emax_field() << to.mant) | keep;
        }
        if self.is_inf(bits) {
            return to.max_finite(s);
        }
        let v = if self == FP17 && e == 0 {
            self.arith_value(bits)
        } else {
            self.to_f64(bits)
        };
        to.round(v, denorm)
    }
}

/// `2^k`, exactly (a power of two is exact in f64 from 2^-1074 to 2^1023).
fn pow2(k: i32) -> f64 {
    match k {
        -1022..=1023 => f64::from_bits(((k + 1023) as u64) << 52),
        -1074..=-1023 => f64::from_bits(1 << (k + 1074)),
        ..=-1075 => 0.0,
        _ => f64::INFINITY,
    }
}

/// `floor(log2(a))` of a finite `a > 0`, exactly: read from the bits.
fn floor_log2(a: f64) -> i32 {
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: the top set bit of the fraction.
        let frac = bits & ((1 << 52) - 1);
        -1074 + (63 - frac.leading_zeros() as i32)
    } else {
        biased - 1023
    }
}

fn round_half_even(q: f64) -> f64 {
    // Non-negative and below 2^52 (every caller's case): truncation is the floor, and
    // cheaper than libm's floor on baseline x86_64.
    let f = if (0.0..4_503_599_627_370_496.0).contains(&q) {
        (q as u64) as f64
    } else {
        q.floor()
    };
    let d = q - f;
    if d > 0.5 || (d == 0.5 && (f as u64) & 1 == 1) {
        f + 1.0
    } else {
        f
    }
}

/// fp16 bits to fp32 bits (exact).
pub fn f16_to_f32(h: u16) -> u32 {
    let (sign, e, m) = (
        u32::from(h & 0x8000) << 16,
        u32::from(h >> 10 & 0x1f),
        u32::from(h & 0x3ff),
    );
    match e {
        // Normal: the exponent rebiased, the mantissa widened (exact).
        1..=30 => sign | (e + 112) << 23 | m << 13,
        // Subnormal: m · 2^-24, a normal binary32 (exact).
        0 if m != 0 => sign | (m as f32 * (1.0 / 16_777_216.0)).to_bits(),
        0 => sign,
        _ => FP16.convert(u64::from(h), FP32, true) as u32,
    }
}

/// fp32 bits to fp16 bits (round to nearest-even, subnormals kept).
pub fn f32_to_f16(f: u32) -> u16 {
    // A value in fp16's normal range whose rounding stays there: the mantissa rounded to
    // 10 bits, nearest-even (a carry moves into the exponent). Subnormal and overflowing
    // results, NaN and infinity take the general conversion.
    let (sign, e, m) = (f >> 16 & 0x8000, f >> 23 & 0xff, f & 0x7f_ffff);
    if (113..=142).contains(&e) {
        let h = (e - 112) << 10 | m >> 13;
        let rest = m & 0x1fff;
        let h = h + u32::from(rest > 0x1000 || (rest == 0x1000 && h & 1 == 1));
        if h < 0x7c00 {
            return (sign | h) as u16;
        }
    }
    FP32.convert(u64::from(f), FP16, true) as u16
}

/// `FpFloatToInt<16,5,10>`: fp16 to int16, rounding half away from zero, saturating;
/// NaN gives the minimum.
pub fn f16_to_i16(h: u16) -> i16 {
    if FP16.is_nan(u64::from(h)) {
        return i16::MIN;
    }
    let v = FP16.to_f64(u64::from(h));
    let r = if v >= 0.0 {
        (v + 0.5).floor()
    } else {
        -((-v + 0.5).floor())
    };
    r.clamp(i16::MIN as f64, i16::MAX as f64) as i16
}

/// `FpIntToFloat<W,5,10>`: integer to fp16, round to nearest-even.
pub fn int_to_f16(v: i64) -> u16 {
    FP16.round(v as f64, true) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp32_rounding_of_normal_values_is_nearest_even() {
        // Against integer rounding of the f64's 52-bit fraction to 23 bits: ties (low 29
        // bits exactly half) go to the even mantissa, carries move to the exponent, and
        // overflow saturates to the largest finite value.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Exponents around the binary32 range, low bits often exactly a tie.
            let e = 1023 - 126 + (x >> 52) % 256;
            let frac = if i % 3 == 0 {
                (x & !((1 << 29) - 1)) | (1 << 28)
            } else {
                x
            };
            let bits = ((x >> 63) << 63) | (e << 52) | (frac & ((1 << 52) - 1));
            let v = f64::from_bits(bits);
            let (m, low) = ((bits & ((1 << 52) - 1)) >> 29, bits & ((1 << 29) - 1));
            let up = low > 1 << 28 || (low == 1 << 28 && m & 1 == 1);
            let mut r = (1 << 23 | m) + u64::from(up);
            let mut ef = e as i64 - 1023 + 127;
            if r == 1 << 24 {
                r >>= 1;
                ef += 1;
            }
            let sign = (bits >> 63) << 31;
            let want = if ef >= 255 {
                FP32.max_finite(bits >> 63)
            } else {
                sign | (ef as u64) << 23 | (r & ((1 << 23) - 1))
            };
            assert_eq!(FP32.round(v, false), want, "{v:e}");
        }
    }

    #[test]
    fn pow2_and_floor_log2_are_exact() {
        for k in -1074..=1023 {
            let p = pow2(k);
            // (powi underflows before the subnormal range; a power-of-two division is exact.)
            let s = if k < 0 { 100 } else { -100 };
            assert_eq!(p, 2f64.powi(k + s) / 2f64.powi(s), "2^{k}");
            assert_eq!(floor_log2(p), k, "log2 2^{k}");
            if k > -1074 {
                // The largest value below 2^k has floor(log2) = k - 1.
                assert_eq!(
                    floor_log2(f64::from_bits(p.to_bits() - 1)),
                    k - 1,
                    "below 2^{k}"
                );
            }
        }
        assert_eq!(floor_log2(f64::MAX), 1023);
        assert_eq!(floor_log2(3.0), 1);
        assert_eq!(floor_log2(0.75), -1);
    }

    #[test]
    fn round_half_even_ties() {
        for (q, r) in [
            (0.5, 0.0),
            (1.5, 2.0),
            (2.5, 2.0),
            (2.4999, 2.0),
            (3.5, 4.0),
            (7.0, 7.0),
        ] {
            assert_eq!(round_half_even(q), r, "{q}");
        }
        assert_eq!(round_half_even(1e300), 1e300);
    }

    #[test]
    fn conversions_match_the_c_model() {
        for h in [
            0x0000u16, 0x8000, 0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400,
        ] {
            let f = f16_to_f32(h);
            assert_eq!(
                f32::from_bits(f) as f64,
                FP16.to_f64(u64::from(h)),
                "{h:#x}"
            );
            assert_eq!(f32_to_f16(f), h, "{h:#x}");
        }
        // ties to even: 1 + 2^-11 -> 1.0; 1 + 3*2^-11 -> 1 + 2^-9
        assert_eq!(f32_to_f16((1.0f32 + 2f32.powi(-11)).to_bits()), 0x3c00);
        assert_eq!(
            f32_to_f16((1.0f32 + 3.0 * 2f32.powi(-11)).to_bits()),
            0x3c02
        );
        // no infinities: overflow and infinite inputs saturate
        assert_eq!(f32_to_f16(70000.0f32.to_bits()), 0x7bff);
        assert_eq!(f32_to_f16(f32::INFINITY.to_bits()), 0x7bff);
        assert_eq!(f16_to_f32(0xfc00), 0xff7f_ffff);
        // NaN keeps its low mantissa bits
        assert_eq!(f32_to_f16(0x7f80_0123), 0x7d23);
        assert_eq!(f16_to_f32(0x7e00), 0x7f80_0200);
    }

    #[test]
    fn fp32_arith_matches_ieee_for_normals() {
        let vals = [1.5f32, -2.25, 3.0e-5, 1.0e7, -7.125, 0.1, 1.0e-30];
        for &a in &vals {
            for &b in &vals {
                let s = FP32.add(u64::from(a.to_bits()), u64::from(b.to_bits())) as u32;
                assert_eq!(f32::from_bits(s), a + b, "{a} + {b}");
                let p = FP32.mul(u64::from(a.to_bits()), u64::from(b.to_bits())) as u32;
                let want = a * b;
                let want = if want.is_subnormal() {
                    0.0 * want.signum()
                } else {
                    want
                };
                assert_eq!(f32::from_bits(p), want, "{a} * {b}");
            }
        }
    }

    #[test]
    fn fp32_fast_paths_equal_the_general_arithmetic() {
        // Operands with exponents at the edges (near the smallest normal, near overflow,
        // zero/subnormal/infinite/NaN fields) and in the middle, random mantissas.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let operand = |r: u64| -> u64 {
            let e = match r % 9 {
                8 => return (r >> 63) << 31, // signed zero
                0 => r >> 8 & 3,
                1 => 254 - (r >> 8 & 3),
                2 => 255,
                3 => 0,
                4 => 60 + (r >> 8 & 7),
                _ => (r >> 8) % 256,
            };
            (r >> 63) << 31 | e << 23 | (r >> 16 & 0x7f_ffff)
        };
        for _ in 0..1_000_000 {
            let (a, b) = (operand(next()), operand(next()));
            assert_eq!(FP32.add(a, b), FP32.add_general(a, b), "{a:#x} + {b:#x}");
            assert_eq!(FP32.mul(a, b), FP32.mul_general(a, b), "{a:#x} * {b:#x}");
            // Products near the smallest normal (biased exponents summing to 127 or 128).
            let c = (next() >> 63) << 31 | (63 + (a >> 23 & 1)) << 23 | (a & 0x7f_ffff);
            let d = (b & 0x807f_ffff) | 64 << 23;
            assert_eq!(FP32.mul(c, d), FP32.mul_general(c, d), "{c:#x} * {d:#x}");
        }
    }

    #[test]
    fn fp16_fp32_conversion_fast_paths_equal_the_general_conversion() {
        for h in 0..=u16::MAX {
            let want = FP16.convert(u64::from(h), FP32, true) as u32;
            assert_eq!(f16_to_f32(h), want, "{h:#06x}");
        }
        // Every fp16 value's neighbourhood in binary32 (ties, the rounding carry into the
        // exponent and into overflow) and random patterns.
        let mut x = 0x9e37_79b9u32;
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            for v in [
                f,
                f.wrapping_add(0x1000),
                f.wrapping_sub(0x1000),
                f ^ 0xfff,
                x,
            ] {
                let want = FP32.convert(u64::from(v), FP16, true) as u16;
                assert_eq!(f32_to_f16(v), want, "{v:#010x}");
            }
        }
    }

    #[test]
    fn compare_and_int_conversions() {
        let one = 0x3c00u64;
        let mone = 0xbc00u64;
        assert_eq!(FP16.cmp_select(one, mone, true), one);
        assert_eq!(FP16.cmp_select(one, mone, false), mone);
        assert_eq!(FP16.cmp_select(0x8000, 0x0000, true), 0x0000);
        assert_eq!(f16_to_i16(0x3e00), 2); // 1.5 -> 2
        assert_eq!(f16_to_i16(0xbe00), -2);
        assert_eq!(f16_to_i16(0x7bff), i16::MAX);
        assert_eq!(int_to_f16(2049), 0x6800); // 2049 -> 2048 (tie to even)
        assert_eq!(int_to_f16(65520), 0x7bff);
        // fp17 keeps values fp16 would overflow
        let big = FP17.round(131072.0, false);
        assert_eq!(FP17.to_f64(big), 131072.0);
    }
}
