//! Fixed-point helpers matching the hardware's integer datapath.
//!
//! The C model builds its integer units from `ac_fixed<..., AC_RND_INF, AC_SAT>`
//! (`cmod/hls/include/nvdla_common.h`, `nvdla_int.h`): a right shift rounds to nearest
//! with ties away from zero, and every narrowing saturates to the destination width.

/// Saturates `v` to a signed `bits`-wide integer.
#[inline]
pub fn sat(v: i64, bits: u32) -> i64 {
    let max = (1i64 << (bits - 1)) - 1;
    let min = -(1i64 << (bits - 1));
    v.clamp(min, max)
}

/// Saturates `v` (i128) to a signed `bits`-wide integer.
#[inline]
pub fn sat128(v: i128, bits: u32) -> i64 {
    let max = (1i128 << (bits - 1)) - 1;
    let min = -(1i128 << (bits - 1));
    v.clamp(min, max) as i64
}

/// Arithmetic right shift rounding to nearest, ties away from zero (`AC_RND_INF`),
/// then saturating to `bits` (`IntShiftRight<iW, sW, oW>` of the C model).
#[inline]
pub fn shr_round_sat(v: i64, shift: u32, bits: u32) -> i64 {
    sat(shr_round(v, shift), bits)
}

/// Arithmetic right shift rounding to nearest, ties away from zero.
#[inline]
pub fn shr_round(v: i64, shift: u32) -> i64 {
    if shift == 0 {
        return v;
    }
    if shift >= 63 {
        return 0;
    }
    // Half up on the magnitude: (|v| / 2^(shift-1) + 1) / 2, without branches on the
    // value so that loops over elements vectorise.
    let mag = v.unsigned_abs();
    let q = (((mag >> (shift - 1)) + 1) >> 1) as i64;
    let neg = v >> 63; // 0 or -1
    (q ^ neg) - neg
}

/// Left shift saturating to `bits` (`IntShiftLeft<iW, sW, oW>`).
#[inline]
pub fn shl_sat(v: i64, shift: u32, bits: u32) -> i64 {
    sat128(i128::from(v) << shift.min(64), bits)
}

/// Sign-extends the low `bits` of `v`.
#[inline]
pub fn sext(v: u32, bits: u32) -> i64 {
    let s = 64 - bits;
    (i64::from(v) << s) >> s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(shr_round(5, 1), 3);
        assert_eq!(shr_round(-5, 1), -3);
        assert_eq!(shr_round(4, 1), 2);
        assert_eq!(shr_round(-7, 2), -2);
        assert_eq!(shr_round(-6, 2), -2);
        assert_eq!(shr_round(-5, 2), -1);
        assert_eq!(shr_round_sat(1 << 40, 0, 32), i32::MAX as i64);
    }

    #[test]
    fn saturation() {
        assert_eq!(sat(200, 8), 127);
        assert_eq!(sat(-200, 8), -128);
        assert_eq!(shl_sat(0x7fff, 20, 32), i32::MAX as i64);
        assert_eq!(shl_sat(-1, 63, 32), i32::MIN as i64);
        assert_eq!(sext(0xffff, 16), -1);
        assert_eq!(sext(0x7fff, 16), 0x7fff);
    }
}
