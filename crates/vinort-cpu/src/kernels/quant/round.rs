//! The rounding loops of the int8 kernels, compiled for AVX-512 when the CPU has it, else for
//! AVX2: rounding half to even is one instruction with either (`vrndscale`, `vround`), while
//! the baseline x86-64 build calls libm's `rint` for every element, which took most of a
//! quantized CNN's time (38% of QDQ MobileNetV2 on an AVX2-only CPU). Each loop is the kernel's own
//! formula, unchanged; only where it is compiled differs.

/// QuantizeLinear's common case: `saturate(round_half_even(x / scale) + zp)` into `out`, all in
/// f32 (exact: a rounded quotient of 2²⁴ or more saturates either way), NaN to 0; `cast` gets
/// the result as an i32 inside `(lo, hi)` (integers of an 8- or 16-bit type).
pub(crate) fn quantize<T: Copy>(
    x: &[f32],
    scale: f32,
    zp: f32,
    (lo, hi): (f32, f32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx512() {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { quantize_avx512(x, scale, zp, (lo, hi), out, cast) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx2() {
        // SAFETY: the CPU running this code supports AVX2 (checked just above).
        return unsafe { quantize_avx2(x, scale, zp, (lo, hi), out, cast) };
    }
    quantize_portable(x, scale, zp, (lo, hi), out, cast)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn quantize_avx2<T: Copy>(
    x: &[f32],
    scale: f32,
    zp: f32,
    lohi: (f32, f32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    quantize_portable(x, scale, zp, lohi, out, cast)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn quantize_avx512<T: Copy>(
    x: &[f32],
    scale: f32,
    zp: f32,
    lohi: (f32, f32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    quantize_portable(x, scale, zp, lohi, out, cast)
}

#[inline(always)]
fn quantize_portable<T: Copy>(
    x: &[f32],
    scale: f32,
    zp: f32,
    (lo, hi): (f32, f32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    for (o, v) in out.iter_mut().zip(x) {
        let r = (v / scale).round_ties_even() + zp;
        // max/min and a select vectorize where clamp's NaN propagation and `as`'s saturation
        // do not; the value is then an integer inside (lo, hi), so the unchecked conversion
        // is exact.
        let c = if r.is_nan() { 0.0 } else { r.max(lo).min(hi) };
        // SAFETY: c is 0 or within [lo, hi], a small-integer range (see the doc).
        *o = cast(unsafe { c.to_int_unchecked::<i32>() });
    }
}

/// QLinearConv's requantization of one block sharing a multiplier, as ONNX Runtime's MLAS
/// computes it (`MlasRequantizeOutput`): the sum plus bias converted to f32, times the f32
/// multiplier (one f32 rounding), rounded half to even, plus the zero point, saturated to
/// `(lo, hi)`; handed to `cast` as an i32 inside that range. A NaN product (a NaN or infinite
/// multiplier) gives `lo`, as MLAS's `max(v, lo − zp)` does.
pub(crate) fn requantize<T: Copy>(
    acc: &[i32],
    bias: i32,
    mult: f32,
    zp: i32,
    (lo, hi): (i32, i32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx512() {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { requantize_avx512(acc, bias, mult, zp, (lo, hi), out, cast) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx2() {
        // SAFETY: the CPU running this code supports AVX2 (checked just above).
        return unsafe { requantize_avx2(acc, bias, mult, zp, (lo, hi), out, cast) };
    }
    requantize_portable(acc, bias, mult, zp, (lo, hi), out, cast)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn requantize_avx2<T: Copy>(
    acc: &[i32],
    bias: i32,
    mult: f32,
    zp: i32,
    lohi: (i32, i32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    requantize_portable(acc, bias, mult, zp, lohi, out, cast)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn requantize_avx512<T: Copy>(
    acc: &[i32],
    bias: i32,
    mult: f32,
    zp: i32,
    lohi: (i32, i32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    requantize_portable(acc, bias, mult, zp, lohi, out, cast)
}

#[inline(always)]
fn requantize_portable<T: Copy>(
    acc: &[i32],
    bias: i32,
    mult: f32,
    zp: i32,
    (lo, hi): (i32, i32),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    let (lo_v, hi_v) = requant_bounds(zp, (lo, hi));
    for (o, a) in out.iter_mut().zip(acc) {
        *o = cast(requant_one(*a, bias, mult, zp, (lo_v, hi_v)));
    }
}

/// The bounds the product is clamped to before rounding, `lo − zp` and `hi − zp` (integers, so
/// clamping before or after rounding is the same).
#[inline(always)]
pub(crate) fn requant_bounds(zp: i32, (lo, hi): (i32, i32)) -> (f32, f32) {
    ((i64::from(lo) - i64::from(zp)) as f32, (i64::from(hi) - i64::from(zp)) as f32)
}

/// One requantized value (see [`requantize`]), with `bounds` from [`requant_bounds`].
#[inline(always)]
pub(crate) fn requant_one(acc: i32, bias: i32, mult: f32, zp: i32, (lo, hi): (f32, f32)) -> i32 {
    // `max` returns `lo` for a NaN product, like MLAS's maxps; the clamped, rounded value is an
    // integer between the bounds, so `as` converts it exactly.
    let v = (acc.wrapping_add(bias) as f32 * mult).max(lo).min(hi).round_ties_even();
    (v as i32).wrapping_add(zp)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{quantize, quantize_portable};
    use crate::test_support as ts;

    /// The formula, one element at a time, with a true division.
    fn spec(v: f32, scale: f32, zp: f32) -> u8 {
        let r = (v / scale).round_ties_even() + zp;
        if r.is_nan() { 0 } else { r.clamp(0.0, 255.0) as u8 }
    }

    proptest! {
        #![proptest_config(ts::config(256))]

        /// Values on, beside and between the half-integers of `x / scale`, NaN and
        /// infinities quantize as the formula says, on both builds of the loop (the AVX-512
        /// build must not round ties another way, nor turn NaN into a bound).
        #[test]
        fn quantize_rounds_half_to_even_and_maps_nan_to_zero(scale in 1e-4f32..10.0, zp in 0u8..=255, seed in any::<u64>()) {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let zp = f32::from(zp);
            let mut x: Vec<f32> = (0..200)
                .map(|i| {
                    let half = (rng.random_range(-300i32..300) as f32 + 0.5) * scale;
                    match i % 5 {
                        0 => half,
                        1 => f32::from_bits(half.to_bits() + 1),
                        2 => f32::from_bits(half.to_bits().saturating_sub(1)),
                        3 => rng.random_range(-300.0f32..300.0) * scale,
                        _ => rng.random_range(-1e6f32..1e6),
                    }
                })
                .collect();
            x.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0]);
            let want: Vec<u8> = x.iter().map(|v| spec(*v, scale, zp)).collect();
            let (mut a, mut b) = (vec![0u8; x.len()], vec![0u8; x.len()]);
            quantize(&x, scale, zp, (0.0, 255.0), &mut a, |v| v as u8);
            quantize_portable(&x, scale, zp, (0.0, 255.0), &mut b, |v| v as u8);
            prop_assert_eq!(&a, &want);
            prop_assert_eq!(&b, &want);
        }
    }
}
