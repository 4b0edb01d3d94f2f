//! Branch-free, auto-vectorizable `f32` approximations of `exp`, `erf`,
//! `tanh` and `sigmoid`, plus slice helpers that run them under runtime
//! CPU-feature dispatch.
//!
//! # Why these are hand-written
//!
//! `f32::exp`, `f32::tanh` (and any `erf` from libm) call libm once per
//! element. LLVM cannot vectorize a loop that contains an opaque library
//! call, so an element-wise activation over a tensor runs one value at a time
//! (plus call overhead). Everything here is plain `+ - * /`, comparisons used
//! as value selects (`if c { a } else { b }` on already-computed values, which
//! LLVM turns into blends), `min`/`max`/`clamp`/`abs`/`copysign`, and
//! `to_bits`/`from_bits` integer tricks. There are no branches, no early
//! returns, no table lookups indexed by data (gathers vectorize badly) and no
//! libm calls, so a loop over a slice vectorizes: 16 lanes with AVX-512F,
//! 8 lanes with AVX2, 4 lanes with the baseline SSE2 of `x86_64`.
//!
//! [`apply_in_place`] and [`apply_into`] (over a [`Fun`]) are the intended
//! entry points: they compile each function's loop three times (`avx512f`,
//! `avx2,fma`, portable) and pick the best one at run time
//! ([`crate::isa`]: detected once, capped by `VINORT_CPU_ISA`).
//!
//! Each function takes `const FMA: bool`. The AVX-512 and AVX2 loops pass `true`: every
//! `a·b + c` of a polynomial step or a reduction is then one fused multiply-add ([`madd`]),
//! half the instructions and one rounding instead of two (measured on a Zen 4 with AVX-512:
//! Gelu 1.03 → 0.76 ns per element, exp 0.40 → 0.27–0.37). The portable loop passes `false`,
//! a multiply and an add: `mul_add` without FMA hardware is a libm call, and Rust never
//! contracts `a * b + c` on its own. So the two AVX paths return bit-identical results (tested
//! below; NaN payloads aside) and the portable path may differ from them in the last bit;
//! the accuracy below is measured for both forms.
//!
//! # Algorithms
//!
//! * [`exp`]: Cody–Waite reduction `x = n·ln2 + r`, `|r| ≲ ln2/2`, with ln2
//!   split in a 9-bit head (so `n·LN2_HI` and `x - n·LN2_HI` are exact) and a
//!   tail; `n` comes from the `1.5·2^23` rounding trick (no float→int
//!   conversion). `e^r = 1 + r + r²·Q(r)` with a degree-6 minimax polynomial
//!   (fit error 3.3e-9 relative). The result is scaled by `2^n` as two
//!   exponent-bit factors `2^(n/2)·2^(n - n/2)`: the first product is exact,
//!   the second rounds once, so results in the subnormal range
//!   (`-103.97 < x < -87.34`) are the correctly rounded value of `p·2^n` (as
//!   accurate as the normal range, in units of the subnormal spacing), `x`
//!   above `ln(f32::MAX) ≈ 88.7228` overflows to `+inf` exactly where the true
//!   value rounds to infinity, and `x < -103.97` gives `+0`. The input is first
//!   clamped to `[-104, 89]` (NaN passes through the clamp), so `±inf` need no
//!   special case.
//! * [`erf`]: `|x| < 1`: `x + x·Q(x²)` (degree-6 minimax in `x²`, fit error
//!   1.2e-9 relative). `|x| ≥ 1`: `1 - exp(-x²)·R(t)`, `t = 1/(1 + |x|/2)`,
//!   `R` a degree-6 minimax fit of `erfc(x)·e^{x²}` on `[1, 4]` (2.7e-8
//!   relative), `|x|` clamped to 4 (beyond ≈3.92 `erf` rounds to ±1), sign
//!   restored with `copysign`. Both are computed and selected on `|x|`.
//! * [`tanh`]: `|x| < 0.625`: `x + x·x²·P(x²)` (degree-4 minimax in `x²`,
//!   fit error 7.9e-9 relative); otherwise `1 - 2/(exp(2|x|) + 1)` with the
//!   sign of `x`. `exp` overflowing to `+inf` gives exactly `±1`.
//! * [`sigmoid`]: exactly `1.0 / (1.0 + exp(-x))` with the [`exp`] above.
//!
//! # Measured accuracy
//!
//! Against `f64` references (`f64::exp`, `f64::tanh`, `1/(1 + f64::exp(-x))`
//! and an independent `f64` `erf` checked against literature values to
//! 1e-15), by `cargo test --release`: a 1e-4 grid over `[-10, 10]` (exp:
//! over `[-87, 88]`), a 1e-6 grid over `[-1, 1]` (erf, tanh), 4 million
//! random points, every 61st `f32` bit pattern (exp: every 31st in
//! `[-87, 88]`), and every `f32` in `[-104, -87]` and `[88, 89]` for exp.
//! "ulp" is the error divided by the `f32` spacing at the exact value.
//!
//! | function  | max error measured                                                     |
//! |-----------|------------------------------------------------------------------------|
//! | `exp`     | 0.96 ulp on `[-87, 88]`; 0.85 ulp on `[88, 89]`; 0.75 ulp (of 2^-149) where the result is subnormal, monotone there |
//! | `erf`     | 9.2e-8 abs (1.55 ulp, just above x = ±1); for -1 < x < 1: 9.3e-8 relative, 7.9e-8 abs, 1.32 ulp |
//! | `tanh`    | 1.31 ulp (1.4e-7 relative), just above the x = ±0.625 switch; `tanh(x) = x` for tiny `x` |
//! | `sigmoid` | 2.48 ulp, 8.9e-8 abs for `x ≥ -87`; below, 2.9e-39 abs (0 instead of `e^x` once `exp(-x)` overflows, `x < -88.72`) |
//!
//! The fused forms (the AVX loops) measure the same or better on the same points: `exp`
//! 0.96 ulp (0.87 on `[88, 89]`, 0.75 subnormal), `erf` 1.28 ulp / 7.6e-8 abs (0.96 ulp
//! for `|x| < 1`), `tanh` 1.29 ulp, `sigmoid` 2.31 ulp.
//!
//! Special values: `exp(NaN) = NaN`, `exp(+inf) = +inf`, `exp(-inf) = +0`;
//! `erf(±0) = ±0`, `erf(±inf) = ±1` (`±1` exactly from `|x| = 3.9192` on,
//! where the true value rounds to 1); `tanh(±0) = ±0`, `tanh(±inf) = ±1`
//! (`±1` exactly from `|x| = 9.0109` on, likewise); `sigmoid(+inf) = 1`,
//! `sigmoid(-inf) = 0`; NaN in gives NaN out everywhere.

use std::f32::consts::LOG2_E;

/// `a·b + c`: one fused multiply-add (a single rounding) when `FMA`, for loops compiled with
/// the FMA instructions; else a multiply and an add.
#[inline(always)]
pub(crate) fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// The polynomial with coefficients `c` (highest degree first) at `x`, by Horner's rule with
/// [`madd`].
#[inline(always)]
fn horner<const FMA: bool>(x: f32, c: &[f32]) -> f32 {
    c[1..].iter().fold(c[0], |acc, &k| madd::<FMA>(acc, x, k))
}

// ---------------------------------------------------------------------------
// exp
// ---------------------------------------------------------------------------

/// Inputs are clamped to this range first: `exp(89) = +inf` and
/// `exp(-104) = 0` in `f32`, and it keeps `n` in `[-150, 128]` so both scale
/// factors `2^(n/2)`, `2^(n - n/2)` are normal floats.
const EXP_MIN_ARG: f32 = -104.0;
const EXP_MAX_ARG: f32 = 89.0;
/// `1.5·2^23`: adding it rounds a float with `|v| < 2^22` to an integer and
/// leaves that integer in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;
/// ln2 = LN2_HI + LN2_LO; LN2_HI has 9 significant bits, so `n·LN2_HI` is
/// exact for `|n| ≤ 2^15`.
const LN2_HI: f32 = 355.0 / 512.0; // 0.693359375
const LN2_LO: f32 = -0.000_212_194_44;
/// Minimax coefficients: `e^r ≈ 1 + r + r²·(E2 + r·(E3 + …))` on
/// `|r| ≤ 1.01·ln2/2` (relative error 3.3e-9 before rounding).
const E2: f32 = 0.499_999_94;
const E3: f32 = 0.166_665_15;
const E4: f32 = 0.041_668_456;
const E5: f32 = 0.008_369_419;
const E6: f32 = 0.001_381_314_5;

/// `e^x`: max error 0.96 ulp measured, overflows to `+inf` exactly where the
/// true value rounds to infinity, underflows gradually through the
/// subnormals to `+0`; `exp(±0) = 1`, `exp(-inf) = 0`, NaN gives NaN.
#[inline(always)]
pub(crate) fn exp<const FMA: bool>(x: f32) -> f32 {
    // `clamp` is two compare+selects and keeps NaN.
    let x = x.clamp(EXP_MIN_ARG, EXP_MAX_ARG);
    // n = round(x / ln2), both as a float and (below) as an integer.
    let t = madd::<FMA>(x, LOG2_E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    // Cody–Waite: the first subtraction is exact (fused or not).
    let r = madd::<FMA>(-n, LN2_LO, madd::<FMA>(-n, LN2_HI, x));
    let q = horner::<FMA>(r, &[E6, E5, E4, E3, E2]);
    let p = madd::<FMA>(r * r, q, r) + 1.0;
    // The integer n sits in the low mantissa bits of t. Wrapping ops keep
    // debug builds from panicking on the NaN bit pattern (p is NaN then
    // anyway, so the scale value does not matter).
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) << 23) as u32);
    let s2 = f32::from_bits((n2.wrapping_add(127) << 23) as u32);
    // p·s1 is exact (a normal number); ·s2 rounds once, also into subnormals
    // or to +inf.
    (p * s1) * s2
}

// ---------------------------------------------------------------------------
// erf
// ---------------------------------------------------------------------------

/// `erf(x) ≈ x + x·Q(x²)` for `|x| < 1` (relative error 1.2e-9 before
/// rounding).
const ERF_Q0: f32 = 0.128_379_17;
const ERF_Q1: f32 = -0.376_126_26;
const ERF_Q2: f32 = 0.112_835_854;
const ERF_Q3: f32 = -0.026_853_813;
const ERF_Q4: f32 = 0.005_188_327_7;
const ERF_Q5: f32 = -0.000_801_019_37;
const ERF_Q6: f32 = 7.853_861e-5;
/// `erfc(x) ≈ exp(-x²)·R(t)`, `t = 1/(1 + x/2)`, for `1 ≤ x ≤ 4` (relative
/// error of `erfc` 2.7e-8 before rounding).
const ERFC_R0: f32 = 0.000_536_602_34;
const ERFC_R1: f32 = 0.274_512_62;
const ERFC_R2: f32 = 0.326_122_52;
const ERFC_R3: f32 = 0.114_382_42;
const ERFC_R4: f32 = 0.383_576_93;
const ERFC_R5: f32 = -0.040_836_446;
const ERFC_R6: f32 = -0.059_077_922;
/// `erf(x)` rounds to 1 in `f32` from about 3.92 on; clamping `|x|` here keeps
/// `R(t)` inside its fitted range and `exp(-x²)` normal.
const ERF_CLAMP: f32 = 4.0;

/// The error function `erf(x) = 2/√π ∫₀ˣ e^{-t²} dt`: max abs error 9.2e-8
/// measured, max relative error 9.3e-8 for `|x| < 1` (normal results);
/// `erf(±0) = ±0`, `erf(±inf) = ±1`, NaN gives NaN.
#[inline(always)]
pub(crate) fn erf<const FMA: bool>(x: f32) -> f32 {
    // Both branches work on |x|; erf is odd, so the sign is put back at the
    // end with `copysign` (which also turns erf(-0) into -0).
    let a = x.abs();
    // |x| < 1: odd polynomial.
    let s = a * a;
    let q = horner::<FMA>(s, &[ERF_Q6, ERF_Q5, ERF_Q4, ERF_Q3, ERF_Q2, ERF_Q1, ERF_Q0]);
    let small = madd::<FMA>(a, q, a);
    // |x| ≥ 1: 1 - erfc(|x|). `min` maps NaN to 4, but NaN selects `small`
    // below, which is NaN.
    let b = a.min(ERF_CLAMP);
    let t = 1.0 / (1.0 + 0.5 * b);
    let r = horner::<FMA>(t, &[ERFC_R6, ERFC_R5, ERFC_R4, ERFC_R3, ERFC_R2, ERFC_R1, ERFC_R0]);
    let large = madd::<FMA>(-exp::<FMA>(-(b * b)), r, 1.0);
    // Written as `a >= 1` so that NaN (comparison false) takes `small`.
    let y = if a >= 1.0 { large } else { small };
    y.copysign(x)
}

// ---------------------------------------------------------------------------
// tanh
// ---------------------------------------------------------------------------

/// `tanh(x) ≈ x + x·x²·P(x²)` for `|x| < 0.625` (relative error 7.9e-9
/// before rounding).
const TANH_P1: f32 = -0.333_332_93;
const TANH_P2: f32 = 0.133_315_41;
const TANH_P3: f32 = -0.053_738_624;
const TANH_P4: f32 = 0.020_615_997;
const TANH_P5: f32 = -0.005_664_775;
const TANH_SMALL: f32 = 0.625;

/// Hyperbolic tangent: max error 1.31 ulp measured, everywhere (also for tiny
/// `|x|`, where it returns `x`); exactly `±1` from `|x| = 9.0109` on,
/// `tanh(±0) = ±0`, NaN gives NaN.
#[inline(always)]
pub(crate) fn tanh<const FMA: bool>(x: f32) -> f32 {
    // Both branches work on |x|; tanh is odd, so the sign is put back at the
    // end with `copysign` (which also turns tanh(-0) into -0).
    let a = x.abs();
    let s = a * a;
    let p = horner::<FMA>(s, &[TANH_P5, TANH_P4, TANH_P3, TANH_P2, TANH_P1]);
    let small = madd::<FMA>(a * s, p, a);
    // exp(2|x|) = +inf for |x| > 44.4 gives 2/inf = 0 and exactly 1.
    let e = exp::<FMA>(a + a);
    let large = 1.0 - 2.0 / (e + 1.0);
    // NaN fails the comparison and takes `large`, which is NaN (exp(NaN)).
    let y = if a < TANH_SMALL { small } else { large };
    y.copysign(x)
}

// ---------------------------------------------------------------------------
// sigmoid
// ---------------------------------------------------------------------------

/// Logistic function `1 / (1 + e^{-x})`, exactly that formula with [`exp`].
/// Large positive `x` gives 1, large negative `x` gives 0 (via
/// `1/inf`), never NaN for non-NaN input.
#[inline(always)]
pub(crate) fn sigmoid<const FMA: bool>(x: f32) -> f32 {
    1.0 / (1.0 + exp::<FMA>(-x))
}

// ---------------------------------------------------------------------------
// Slice helpers with runtime dispatch
// ---------------------------------------------------------------------------

mod fun;
mod rows;
#[cfg(test)]
mod tests;

pub(crate) use fun::{Fun, apply_in_place, apply_into, gelu};
pub(crate) use rows::softmax_row;
