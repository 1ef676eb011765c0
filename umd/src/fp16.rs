//! IEEE binary16 conversions exactly as the upstream runtime performs them.
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
