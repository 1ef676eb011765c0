//! C-compatible number formatting for text dumps.
//!
//! Upstream prints tensors with iostreams (`os << float`, i.e. `printf("%g")` with the
//! default precision 6) and with `snprintf("%6.3f")`. Rust's formatter has no `%g` and spells
//! NaN and infinity differently, so these helpers rebuild the C output from Rust's correctly
//! rounded decimal conversions (both round exact ties to even, as glibc does).

use std::fmt::Write as _;

/// The text glibc prints for non-finite values; `None` for finite ones.
fn non_finite(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some(if v.is_sign_negative() { "-nan" } else { "nan" })
    } else if v.is_infinite() {
        Some(if v < 0.0 { "-inf" } else { "inf" })
    } else {
        None
    }
}

/// Removes trailing zeros of a fractional part, and the point if nothing is left after it.
fn strip_fraction_zeros(s: &mut String) {
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
}

/// `printf("%g", v)`: 6 significant digits, fixed or exponential notation by the C rule,
/// trailing zeros removed.
pub(crate) fn fmt_g(v: f64) -> String {
    const P: i32 = 6;
    if let Some(s) = non_finite(v) {
        return s.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // The exponent X that "%.5e" would print, after rounding to P digits.
    let e = format!("{:.*e}", (P - 1) as usize, v);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    if (-4..P).contains(&x) {
        let mut s = format!("{:.*}", (P - 1 - x) as usize, v);
        strip_fraction_zeros(&mut s);
        s
    } else {
        let mut m = mant.to_string();
        strip_fraction_zeros(&mut m);
        let sign = if x < 0 { '-' } else { '+' };
        let _ = write!(m, "e{sign}{:02}", x.unsigned_abs());
        m
    }
}

/// `printf("%6.3f", v)`.
pub(crate) fn fmt_f6_3(v: f64) -> String {
    match non_finite(v) {
        Some(s) => format!("{s:>6}"),
        None => format!("{v:6.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_matches_c() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (1e6, "1e+06"),
            (999_999.0, "999999"),
            (999_999.5, "1e+06"),
            (123_456.7, "123457"),
            (0.0001, "0.0001"),
            (0.000_099_999_99, "0.0001"),
            (0.000_099_999_9, "9.99999e-05"),
            (0.000_012_345, "1.2345e-05"),
            (1.401_298_464_324_817e-45, "1.4013e-45"),
            (3.402_823_466_385_288_6e38, "3.40282e+38"),
            (2_143_289_344.0, "2.14329e+09"),
            (-1842.01, "-1842.01"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e100, "1e+100"),
        ];
        for &(v, want) in cases {
            assert_eq!(fmt_g(v), want, "{v:e}");
        }
    }

    #[test]
    fn f6_3_matches_c() {
        assert_eq!(fmt_f6_3(1.0), " 1.000");
        assert_eq!(fmt_f6_3(-0.0), "-0.000");
        assert_eq!(fmt_f6_3(-12.3456), "-12.346");
        assert_eq!(fmt_f6_3(f64::NAN), "   nan");
        assert_eq!(fmt_f6_3(-f64::INFINITY), "  -inf");
    }
}
