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

/// The error function in f32: [`crate::vmath::erf`] (absolute error below 1e-7, relative below
/// 1e-7 under 1), branch-free so loops over it vectorize; multiply and add unfused, as in the
/// portable vector loop.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    crate::vmath::erf::<false>(x)
}

/// Gelu-20 with `approximate="none"` in f32: `0.5 v (1 + erf(v / sqrt 2))`, with the multiply-adds
/// unfused as on the portable path. The f32 Gelu kernel and the epilogues run the vector loops
/// of `vmath::Fun::Gelu`, whose AVX paths fuse them (within an ulp or two of this form).
#[inline(always)]
pub fn gelu_f32(v: f32) -> f32 {
    crate::vmath::gelu::<false>(v)
}
