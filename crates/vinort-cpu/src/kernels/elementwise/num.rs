//! The error function, in f64 and f32, for Erf and Gelu.
//!
//! The element traits, the dtype dispatch and the f16/bf16 widening this family used to define
//! here are the crate's shared ones now: [`crate::numeric`] and `crate::kernel::with_numeric!`.

const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// The error function in f64, accurate to a few ulp.
///
/// Below 2.5 the everywhere-positive series erf(x) = 2/√π·e^(−x²)·Σ 2ⁿx^(2n+1)/(1·3·…·(2n+1))
/// (no cancellation, under 40 terms); above, the continued fraction
/// erfc(x) = e^(−x²)/√π · 1/(x + ½/(x + 1/(x + 3⁄2/(x + …)))) evaluated bottom-up; from 6 on
/// erfc is below half an ulp of 1.
pub fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    let r = if a.is_nan() {
        return x;
    } else if a < 2.5 {
        let x2 = a * a;
        let (mut term, mut sum, mut n) = (a, a, 0.0);
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * x2 / (2.0 * n + 1.0);
            sum += term;
        }
        FRAC_2_SQRT_PI * (-x2).exp() * sum
    } else if a < 6.0 {
        let mut f = a;
        for n in (1..=50).rev() {
            f = a + (n as f64 * 0.5) / f;
        }
        1.0 - (-a * a).exp() / (std::f64::consts::PI.sqrt() * f)
    } else {
        1.0
    };
    r.copysign(x)
}

/// Maclaurin coefficients (−1)ⁿ/(n!·(2n+1)) of erf(x)·√π/2 in powers of x², n = 0..=12; at
/// |x| < 1 the next term is below 1e-10.
const ERF_SERIES: [f32; 13] = [
    1.0,
    -1.0 / 3.0,
    1.0 / 10.0,
    -1.0 / 42.0,
    1.0 / 216.0,
    -1.0 / 1320.0,
    1.0 / 9360.0,
    -1.0 / 75600.0,
    1.0 / 685440.0,
    -1.0 / 6894720.0,
    1.0 / 76204800.0,
    -1.0 / 918086400.0,
    1.0 / 11975040000.0,
];

/// The error function in f32 (relative error about 2e-7).
///
/// Below 1 the Maclaurin series, where a rational fit would lose relative accuracy near 0; above,
/// the 5-term rational approximation of Abramowitz & Stegun 7.1.26 (absolute error 1.5e-7). For
/// very negative Gelu inputs that absolute error is what remains of 1 + erf.
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let r = if a < 1.0 {
        let x2 = a * a;
        let s = ERF_SERIES.iter().rev().fold(0.0f32, |s, c| s * x2 + c);
        std::f32::consts::FRAC_2_SQRT_PI * a * s
    } else if a < 9.0 {
        let t = 1.0 / (1.0 + 0.327_591_1 * a);
        let poly = t * (0.254_829_6 + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152 + t * 1.061_405_4))));
        1.0 - poly * (-a * a).exp()
    } else if a.is_nan() {
        return x;
    } else {
        1.0
    };
    r.copysign(x)
}
