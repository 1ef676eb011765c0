//! IEEE binary16 conversions exactly as the upstream runtime performs them, and the IEEE
//! default rounding for tensors given as numbers ([`f64_to_f16_even`]).
//!
//! Upstream converts with the `half_float` library (`half.h`, v1.x) configured for
//! round-to-nearest with ties rounded *away from zero* (`HALF_ROUND_TIES_TO_EVEN` 0), not the
//! IEEE default of ties-to-even. Its float-to-half path is table driven (a base value and a
//! shift per float exponent) and has one more quirk: a float NaN whose payload lies only in
//! the low 13 mantissa bits becomes infinity, because the payload is shifted out and the
//! rounding step is suppressed for the infinity/NaN exponent. The outputs of the EMU tasks
//! and the fp16 input images depend on these rules, so they are reproduced bit for bit here
//! instead of using a general-purpose half crate.

/// The base value and mantissa shift for a float's 8-bit biased exponent, as the tables of
/// `half.h` hold them (without the sign).
const fn base_and_shift(biased_exp: u32) -> (u16, u32) {
    let e = biased_exp as i32 - 127;
    if e < -24 {
        // Too small even for a subnormal: zero (rounding may still give the smallest one).
        (0, 24)
    } else if e < -14 {
        // Subnormal half: the implicit bit lands at bit (e + 24).
        (0x0400 >> (-e - 14), (-e - 1) as u32)
    } else if e <= 15 {
        (((e + 15) as u16) << 10, 13)
    } else if e < 128 {
        // Overflow: infinity, mantissa shifted out completely.
        (0x7c00, 24)
    } else {
        // Infinity and NaN: keep the top 10 mantissa bits.
        (0x7c00, 13)
    }
}

/// `half(float)` of the upstream runtime: round to nearest, ties away from zero.
pub fn f32_to_f16(value: f32) -> u16 {
    let bits = value.to_bits();
    let exp = (bits >> 23) & 0xff;
    let sign = if bits & 0x8000_0000 != 0 { 0x8000 } else { 0 };
    let mant = bits & 0x007f_ffff;
    let (base, shift) = base_and_shift(exp);
    // The shifted mantissa is below 0x400 for every (exponent, shift) pair.
    let h = (sign | base) + (mant >> shift) as u16;
    if h & 0x7c00 == 0x7c00 {
        return h;
    }
    // The first bit shifted out decides (ties away); exponent 102 (values in
    // [2^-25, 2^-24)) always rounds up to the smallest subnormal.
    let round = ((mant >> (shift - 1)) | u32::from(exp == 102)) & 1;
    h + round as u16
}

/// IEEE round-to-nearest, ties-to-even conversion of `value` to binary16, as NumPy's
/// `astype(float16)` rounds (used for `--input` tensor files, not for images, which keep
/// upstream's [`f32_to_f16`]). One rounding step from the f64, so an f32 (exactly
/// representable as f64) is rounded once too. Magnitudes from 65520 up become infinity; NaN
/// stays a quiet NaN with the top of its payload.
pub fn f64_to_f16_even(value: f64) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let mant = bits & ((1u64 << 52) - 1);
    if exp == 0x7ff {
        return if mant == 0 {
            sign | 0x7c00
        } else {
            sign | 0x7e00 | ((mant >> 42) as u16 & 0x03ff)
        };
    }
    let e = exp - 1023;
    if exp == 0 || e < -25 {
        // Below 2^-25, half the smallest subnormal: zero.
        return sign;
    }
    if e > 15 {
        return sign | 0x7c00;
    }
    // The significand with its implicit bit, shifted down to 10 fraction bits (normal) or
    // to multiples of 2^-24 (subnormal).
    let m = (1u64 << 52) | mant;
    let (shift, biased) = if e >= -14 {
        (42, (e + 15) as u32)
    } else {
        (42 + (-14 - e) as u32, 0)
    };
    let mut q = m >> shift;
    let rem = m & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    // A carry out of the fraction bumps the exponent (up to infinity, 0x7c00).
    let h = if biased == 0 {
        q as u32
    } else {
        (biased << 10) + q as u32 - 0x400
    };
    sign | h as u16
}

/// [`f64_to_f16_even`] of an f32.
pub fn f32_to_f16_even(value: f32) -> u16 {
    f64_to_f16_even(f64::from(value))
}

/// Exact binary16 → binary32 (every half is representable; NaN payloads are kept).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x03ff);
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let lz = m.leading_zeros() - 22; // zeros above the top set bit within 10 bits
            let m = (m << (lz + 1)) & 0x03ff;
            let e = 127 - 15 - lz;
            sign | (e << 23) | (m << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_finite_half_round_trips() {
        for h in 0..=u16::MAX {
            if h & 0x7c00 == 0x7c00 && h & 0x03ff != 0 {
                continue; // NaN payloads: checked below
            }
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#06x}");
        }
    }

    #[test]
    fn half_to_float_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
    }

    /// Reference: the two neighbouring halves of `v` by exhaustive search, nearest wins,
    /// ties away from zero.
    fn reference(v: f32) -> u16 {
        let sign = if v.is_sign_negative() { 0x8000 } else { 0 };
        let a = f64::from(v.abs());
        if a >= 65520.0 {
            return sign | 0x7c00;
        }
        let mut best = 0u16;
        let mut best_d = f64::INFINITY;
        for h in 0..0x7c00u16 {
            let d = (f64::from(f16_to_f32(h)) - a).abs();
            if d < best_d || (d == best_d && h > best) {
                best = h;
                best_d = d;
            }
        }
        sign | best
    }

    #[test]
    fn rounding_is_nearest_ties_away() {
        let samples = [
            1.0f32 + 2f32.powi(-11), // tie between 1.0 and 1.0009766: away → up
            1.0 + 3.0 * 2f32.powi(-11),
            1.0 + 2f32.powi(-11) + 2f32.powi(-20),
            2f32.powi(-25),         // tie with zero → smallest subnormal
            2f32.powi(-25) * 0.999, // below the tie → zero
            2f32.powi(-24) * 1.5,   // subnormal tie → up
            65519.0,                // rounds to infinity
            65504.0 + 15.999,
            0.1,
            -0.1,
            3.140625,
            1e-5,
            -6.1e-5,
            0.33333334,
        ];
        for v in samples {
            assert_eq!(f32_to_f16(v), reference(v), "{v:e}");
        }
        // Ties-to-even would give 0x3c00 here.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c01);
    }

    #[test]
    fn even_rounding_matches_every_neighbour_pair() {
        // Every half round-trips; every midpoint between neighbours goes to the even one;
        // just above or below it goes to the nearer.
        for h in 0..0x7c00u16 {
            let v = f64::from(f16_to_f32(h));
            assert_eq!(f64_to_f16_even(v), h, "{h:#06x}");
            assert_eq!(f64_to_f16_even(-v), h | 0x8000, "-{h:#06x}");
            let next = if h == 0x7bff {
                65536.0
            } else {
                f64::from(f16_to_f32(h + 1))
            };
            let mid = (v + next) / 2.0;
            let even = if h & 1 == 0 { h } else { h + 1 };
            assert_eq!(f64_to_f16_even(mid), even, "mid of {h:#06x}");
            let eps = (next - v) / 1024.0;
            assert_eq!(f64_to_f16_even(mid - eps), h, "below mid of {h:#06x}");
            assert_eq!(f64_to_f16_even(mid + eps), h + 1, "above mid of {h:#06x}");
        }
        // Differs from upstream's ties-away rule exactly on ties with an odd lower neighbour.
        assert_eq!(f32_to_f16_even(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c01);
        for v in [
            0.1f32,
            -0.1,
            3.140625,
            1e-5,
            -6.1e-5,
            0.33333334,
            2f32.powi(-24) * 1.5,
        ] {
            let (a, b) = (f32_to_f16_even(v), reference(v));
            // Ties are measure zero among these samples: both rules agree.
            assert_eq!(a, b, "{v:e}");
        }
    }

    #[test]
    fn even_rounding_specials() {
        assert_eq!(f64_to_f16_even(f64::INFINITY), 0x7c00);
        assert_eq!(f64_to_f16_even(f64::NEG_INFINITY), 0xfc00);
        assert_eq!(f64_to_f16_even(f64::NAN) & 0x7e00, 0x7e00);
        assert_eq!(f64_to_f16_even(1e300), 0x7c00);
        assert_eq!(f64_to_f16_even(65519.99), 0x7bff);
        assert_eq!(f64_to_f16_even(65520.0), 0x7c00);
        assert_eq!(f64_to_f16_even(-0.0), 0x8000);
        assert_eq!(f64_to_f16_even(2f64.powi(-25)), 0);
        assert_eq!(f64_to_f16_even(2f64.powi(-25) * 1.0001), 1);
        assert_eq!(f64_to_f16_even(3.0 * 2f64.powi(-25)), 2);
        assert_eq!(f64_to_f16_even(1e-300), 0);
        assert_eq!(f64_to_f16_even(f64::from_bits(1)), 0);
    }

    #[test]
    fn special_values_follow_half_h() {
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
        assert_eq!(f32_to_f16(f32::NEG_INFINITY), 0xfc00);
        assert_eq!(f32_to_f16(f32::NAN), 0x7e00);
        // NaN with only low payload bits turns into infinity (upstream quirk).
        assert_eq!(f32_to_f16(f32::from_bits(0x7f80_0001)), 0x7c00);
        assert_eq!(f32_to_f16(1e6), 0x7c00);
        assert_eq!(f32_to_f16(-0.0), 0x8000);
        assert_eq!(f32_to_f16(1e-30), 0);
    }
}
