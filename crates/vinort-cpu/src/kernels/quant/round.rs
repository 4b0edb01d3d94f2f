//! The rounding loops of the int8 kernels, compiled for AVX-512 when the CPU has it: rounding
//! half to even is one instruction there, while the baseline x86-64 build calls libm's `rint`
//! for every element, which took most of a quantized CNN's time. Each loop is the kernel's own
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
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { quantize_avx512(x, scale, zp, (lo, hi), out, cast) };
    }
    quantize_portable(x, scale, zp, (lo, hi), out, cast)
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

/// QLinearConv's and QLinearMatMul's requantization of one block sharing a multiplier:
/// `saturate(round_half_even((acc + bias) · mult + zp))` in f64, handed to `cast` as an i32
/// already inside `(lo, hi)` (both integers in i32's range).
pub(crate) fn requantize<T: Copy>(
    acc: &[i32],
    bias: i32,
    mult: f64,
    zp: f64,
    (lo, hi): (f64, f64),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { requantize_avx512(acc, bias, mult, zp, (lo, hi), out, cast) };
    }
    requantize_portable(acc, bias, mult, zp, (lo, hi), out, cast)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn requantize_avx512<T: Copy>(
    acc: &[i32],
    bias: i32,
    mult: f64,
    zp: f64,
    lohi: (f64, f64),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    requantize_portable(acc, bias, mult, zp, lohi, out, cast)
}

#[inline(always)]
fn requantize_portable<T: Copy>(
    acc: &[i32],
    bias: i32,
    mult: f64,
    zp: f64,
    (lo, hi): (f64, f64),
    out: &mut [T],
    cast: impl Fn(i32) -> T + Copy,
) {
    if mult.is_finite() && zp.is_finite() && lo >= f64::from(i32::MIN) && hi <= f64::from(i32::MAX) {
        // No NaN can arise, and max/min (which vectorize) saturate exactly as clamp would, so
        // the value is an integer inside i32: the unchecked conversion (one vector
        // instruction, where `as` adds a saturating sequence per element) is exact.
        for (o, a) in out.iter_mut().zip(acc) {
            let v = (f64::from(a.wrapping_add(bias)) * mult + zp).round_ties_even().max(lo).min(hi);
            // SAFETY: v is finite and within [lo, hi] ⊆ i32's range (checked above).
            *o = cast(unsafe { v.to_int_unchecked::<i32>() });
        }
    } else {
        for (o, a) in out.iter_mut().zip(acc) {
            *o = cast((f64::from(a.wrapping_add(bias)) * mult + zp).round_ties_even().clamp(lo, hi) as i32);
        }
    }
}
