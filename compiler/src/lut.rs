//! Lookup tables for the SDP (sigmoid, tanh) and the CDP (LRN), fp16 and int8.
//!
//! A `dla_lut_param` holds two tables: the 65-entry "LE" table (linear or exponential
//! index) and the 257-entry "LO" table (linear index). In fp16 the range registers hold
//! fp32 bit patterns; a linear index is `(x - start) / 2^select`, an exponential one
//! `floor(log2(x - start)) - offset`, and entries are interpolated linearly (programming
//! guide, "LUT programming"; `nvdla/doc` lut.rst). Out-of-range inputs take the end entry
//! plus a slope, which we leave at 0 (the functions here are flat at their ends).

use nvdla_loadable::dla::{LutMethod, LutOffset, LutParam, LutPriority, Slope};

fn f16_bits(v: f64) -> i16 {
    half::f16::from_f64(v).to_bits() as i16
}

/// A table over `[start, start + 256 * 2^select]` in the LO table, LE table unused.
fn linear_lo(start: f32, select: i8, f: impl Fn(f64) -> f64) -> LutParam {
    let mut p = LutParam::default();
    let step = 2f64.powi(i32::from(select));
    for (i, e) in p.linear_only_table.iter_mut().enumerate() {
        *e = f16_bits(f(f64::from(start) + i as f64 * step));
    }
    p.method = LutMethod::Linear.raw();
    // The LE table is never chosen: its index select puts every input out of range.
    p.linear_exp_offset = LutOffset::from_frac_bits(-128);
    p.linear_only_offset = LutOffset::from_frac_bits(select);
    p.linear_only_start = u64::from(start.to_bits());
    p.linear_only_end = u64::from((start + 256.0 * step as f32).to_bits());
    p.linear_exp_underflow_slope = Slope::from_data_f(0);
    p.linear_exp_overflow_slope = Slope::from_data_f(0);
    p.linear_only_underflow_slope = Slope::from_data_f(0);
    p.linear_only_overflow_slope = Slope::from_data_f(0);
    p.hybrid_priority = LutPriority::LinearOnly.raw();
    p.underflow_priority = LutPriority::LinearOnly.raw();
    p.overflow_priority = LutPriority::LinearOnly.raw();
    p
}

/// `1 / (1 + e^-x)` over [-16, 16] in steps of 1/8 (interpolation error below 3e-4).
pub fn sigmoid() -> LutParam {
    linear_lo(-16.0, -3, |x| 1.0 / (1.0 + (-x).exp()))
}

/// `tanh(x)` over [-8, 8] in steps of 1/16 (interpolation error below 5e-4).
pub fn tanh() -> LutParam {
    linear_lo(-8.0, -4, f64::tanh)
}

/// `erf(x)` over [-4, 4] in steps of 1/32 (interpolation error below 1.2e-4; beyond 4 it
/// is within 1.6e-8 of 1).
pub fn erf_table() -> LutParam {
    linear_lo(-4.0, -5, erf)
}

/// The error function, `2 / sqrt(pi)` times the integral of `e^(-t^2)` from 0 to `x`: its
/// Maclaurin series up to `|x| = 4.5` (to a term below `1e-17` of the sum; the terms grow to
/// about 1e6 there, so the sum is within 1e-9), and `±1` beyond (`erfc(4.5) = 2e-10`, below
/// half an f32 step of 1).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() > 4.5 {
        return x.signum();
    }
    // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
    let x2 = x * x;
    let (mut power, mut sum) = (x, x);
    for n in 1..200 {
        power *= -x2 / f64::from(n);
        let term = power / f64::from(2 * n + 1);
        sum += term;
        if term.abs() < 1e-17 * sum.abs().max(1e-300) {
            break;
        }
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI
}

/// First power of two the LRN table covers: sums of squares below `2^LRN_EXP_OFFSET`
/// take the first entry (the function is flat there: `k^-beta`).
pub const LRN_EXP_OFFSET: i8 = -20;

/// Where the linear LRN table ends, in units of the knee `k * n / alpha` (where
/// `alpha / n * s` equals `k`).
const LRN_LINEAR_KNEES: f64 = 16.0;

/// LRN's `(k + alpha / n * s)^-beta` of the sum of squares `s`, in two tables: the 257-entry
/// linear one over `[0, 16 * k * n / alpha]` (where the function bends: interpolation
/// error below 1e-3 of the value), and the 65-entry exponential one beyond, one entry
/// per power of two up to `2^44` (the tail is a power law, flatter per octave).
pub fn lrn(local_size: u32, alpha: f32, beta: f32, k: f32) -> LutParam {
    let mut p = LutParam::default();
    let (n, a, b, k) = (
        f64::from(local_size),
        f64::from(alpha),
        f64::from(beta),
        f64::from(k),
    );
    let f = |s: f64| (k + a / n * s).powf(-b);
    for (i, e) in p.linear_exp_table.iter_mut().enumerate() {
        *e = f16_bits(f(2f64.powi(i as i32 + i32::from(LRN_EXP_OFFSET))));
    }
    p.method = LutMethod::Exponential.raw();
    p.linear_exp_offset = LutOffset::from_exp_offset(LRN_EXP_OFFSET);
    p.linear_exp_start = 0;
    p.linear_exp_end = u64::from(2f32.powi(64 + i32::from(LRN_EXP_OFFSET)).to_bits());
    // The linear table: step 2^select covering LRN_LINEAR_KNEES knees.
    let knee = if a > 0.0 { k.max(1e-6) * n / a } else { 1.0 };
    let select = (LRN_LINEAR_KNEES * knee / 256.0)
        .log2()
        .ceil()
        .clamp(-100.0, 100.0) as i8;
    let step = 2f64.powi(i32::from(select));
    for (i, e) in p.linear_only_table.iter_mut().enumerate() {
        *e = f16_bits(f(i as f64 * step));
    }
    p.linear_only_offset = LutOffset::from_frac_bits(select);
    p.linear_only_start = 0;
    p.linear_only_end = u64::from(((256.0 * step) as f32).to_bits());
    // Both hit: the finer linear table; s = 0 (both under): its first entry, k^-beta;
    // both over: the exponential table's last.
    p.hybrid_priority = LutPriority::LinearOnly.raw();
    p.underflow_priority = LutPriority::LinearOnly.raw();
    p.overflow_priority = LutPriority::LinearExp.raw();
    p
}

/// An integer-precision table in the LO table: entry `i` is `f(x)` for the input
/// `x = (start + i * 2^select)` in the input's units, as `f` returns it (int16); inputs
/// below `start` take the first entry, above the last the last (slopes 0). `f` is called
/// with the entry's input value in real units divided by the input unit, i.e. with
/// `start + i * 2^select`.
pub fn int8_linear(start: i32, select: i8, f: impl Fn(f64) -> i16) -> LutParam {
    let mut p = LutParam::default();
    let step = 2f64.powi(i32::from(select));
    for (i, e) in p.linear_only_table.iter_mut().enumerate() {
        *e = f(f64::from(start) + i as f64 * step);
    }
    p.method = LutMethod::Linear.raw();
    p.linear_exp_offset = LutOffset::from_frac_bits(-128);
    p.linear_only_offset = LutOffset::from_frac_bits(select);
    // Sign-extended: the CDP's range registers have 6 more bits above the low 32 (the
    // SDP's have none).
    p.linear_only_start = i64::from(start) as u64;
    p.linear_only_end = (f64::from(start) + 256.0 * step) as i64 as u64;
    p.hybrid_priority = LutPriority::LinearOnly.raw();
    p.underflow_priority = LutPriority::LinearOnly.raw();
    p.overflow_priority = LutPriority::LinearOnly.raw();
    p
}

/// Largest square sum the int8 CDP sees: `n` channels of `v = q`, `|q| <= 128`.
fn lrn_int8_max_sum(local_size: u32) -> f64 {
    f64::from(local_size) * 128.0 * 128.0
}

/// LRN in int8, and the factor `R` of its entries.
///
/// The CDP's input converter passes the int8 values through (`v = q`, scale 1, no shift),
/// so the square sum `S = sum(q^2)` is an integer of at most `n * 128^2` whose real value
/// is `S * in_scale^2` (hwarch "Channel Data Processor"; the model's `cdp.rs`). The tables
/// hold `R * (k + alpha / n * in_scale^2 * S)^-beta` as int16, `R` putting the largest
/// entry at 32767; the CDP multiplies the entry by `v`, and the output converter takes
/// `R * f * q` to the output's scale (`in_scale / (R * out_scale)`, see
/// `lower`). As in fp16, the LO table is linear over the bend (16 knees, integer steps at
/// the finest) and the LE table exponential beyond it, one entry per power of two of `S`.
pub fn lrn_int8(local_size: u32, alpha: f32, beta: f32, k: f32, in_scale: f64) -> (LutParam, f64) {
    let (n, a, b, k) = (
        f64::from(local_size),
        f64::from(alpha),
        f64::from(beta),
        f64::from(k),
    );
    let c = a / n * in_scale * in_scale;
    let f = |s: f64| (k + c * s).powf(-b);
    let max_sum = lrn_int8_max_sum(local_size);
    let knee = if c > 0.0 { k.max(1e-6) / c } else { max_sum };
    let covered = (LRN_LINEAR_KNEES * knee).min(max_sum);
    let select = (covered / 256.0).log2().ceil().clamp(0.0, 20.0) as i8;
    let step = 2f64.powi(i32::from(select));
    let lo_at = |i: usize| i as f64 * step;
    let le_at = |i: usize| 2f64.powi(i as i32);
    // R from the largest finite value the tables hold (k = 0 makes f(0) infinite: that
    // entry only meets v = 0, whose product is 0 whatever it holds).
    let peak = (0..257)
        .map(|i| f(lo_at(i)))
        .chain((0..65).map(|i| f(le_at(i))))
        .filter(|v| v.is_finite())
        .fold(0f64, f64::max);
    let r = if peak > 0.0 { 32767.0 / peak } else { 1.0 };
    let entry = |s: f64| {
        let v = r * f(s);
        if v.is_nan() {
            0
        } else {
            v.round().clamp(-32768.0, 32767.0) as i16
        }
    };
    let mut p = LutParam::default();
    for (i, e) in p.linear_only_table.iter_mut().enumerate() {
        *e = entry(lo_at(i));
    }
    for (i, e) in p.linear_exp_table.iter_mut().enumerate() {
        *e = entry(le_at(i));
    }
    p.method = LutMethod::Exponential.raw();
    p.linear_exp_offset = LutOffset::from_exp_offset(0);
    p.linear_exp_start = 0;
    // Beyond every sum (the exponential index alone decides; no sum reaches 2^20).
    p.linear_exp_end = 1 << 20;
    p.linear_only_offset = LutOffset::from_frac_bits(select);
    p.linear_only_start = 0;
    p.linear_only_end = (256.0 * step) as u64;
    // Slopes stay 0 (flat ends). S = 0 (both under): the LO table's first entry, f(0);
    // both hit: the finer LO table; past the LO table: the LE table, which hits.
    p.hybrid_priority = LutPriority::LinearOnly.raw();
    p.underflow_priority = LutPriority::LinearOnly.raw();
    p.overflow_priority = LutPriority::LinearExp.raw();
    (p, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_its_tabulated_values() {
        // Abramowitz and Stegun, table 7.1, and erf(4.4) = 1 - 4.9e-10 (the series' sum
        // cancels terms near 1e6 there: within 1e-9, well inside f32's steps).
        for (x, want, tol) in [
            (0.0, 0.0, 1e-15),
            (0.5, 0.520_499_877_813_046_5, 1e-15),
            (1.0, 0.842_700_792_949_714_9, 1e-15),
            (-1.5, -0.966_105_146_475_310_8, 1e-14),
            (2.0, 0.995_322_265_018_952_7, 1e-13),
            (3.0, 0.999_977_909_503_001_4, 1e-12),
            (4.4, 0.999_999_999_510_829, 1e-9),
            (-7.0, -1.0, 0.0),
        ] {
            assert!(
                (erf(x) - want).abs() <= tol,
                "erf({x}) = {}, want {want}",
                erf(x)
            );
        }
        assert!(erf(f64::NAN).is_nan());
    }

    #[test]
    fn int8_lrn_table_peaks_at_32767_and_covers_every_sum() {
        // AlexNet's norm1 at an input scale of 0.05: the function is smooth over the range.
        let (p, r) = lrn_int8(5, 1e-4, 0.75, 1.0, 0.05);
        assert_eq!(p.linear_only_table[0], 32767);
        assert!((r - 32767.0).abs() < 1e-9, "{r}");
        // The LO table covers every sum the CDP can form: 5 * 128^2 = 81920.
        assert!(p.linear_only_end >= 81920, "{}", p.linear_only_end);
        assert!(p.linear_only_table.windows(2).all(|w| w[1] <= w[0]));
        // A strong normalisation bends early: the LO table ends at 16 knees and the LE
        // table (one entry per power of two) takes the rest.
        let (p, _) = lrn_int8(5, 1.0, 0.75, 1.0, 0.5);
        let knee = 1.0 / (1.0 / 5.0 * 0.25);
        assert!(
            p.linear_only_end as f64 >= 16.0 * knee && (p.linear_only_end as f64) < 64.0 * knee
        );
        let f = |s: f64| (32767.0 * (1.0 + 0.05 * s).powf(-0.75)).round() as i16;
        assert_eq!(p.linear_exp_table[10], f(1024.0));
        // k = 0: f(0) is infinite; R comes from the finite entries.
        let (p, r) = lrn_int8(3, 1e-4, 0.75, 0.0, 1.0);
        assert!(r.is_finite() && r > 0.0);
        assert_eq!(p.linear_only_table[0], 32767);
    }
}
