//! The one numeric trait set of the Cpu kernels, built on `num-traits`, and the one set of
//! f16/bf16 ⇄ f32 widening helpers.
//!
//! - [`Numeric`]: every numeric element type (f32, f64, f16, bf16, i8..i64, u8..u64). The
//!   `num-traits` supertraits give `zero`/`one`, `min_value`/`max_value`, `NumCast` and the
//!   operators; the methods added here are the ones whose ONNX meaning differs between integers
//!   and floats (wrapping integer arithmetic, NaN-propagating min/max, floored remainder).
//! - [`Float`]: the float element types, with `num_traits::Float`'s math (f16/bf16 included:
//!   `half` implements it by rounding through f32).
//! - [`Int`]: the integer element types, with bit operations and ONNX's shift rules.
//! - [`widen`]/[`narrow`] (tensors), [`widen_slice`]/[`narrow_slice`] (slices) and
//!   [`widen_elem`]/[`narrow_elem`] (elements): kernels that compute 16-bit floats in f32 go
//!   through these, so no kernel accumulates in a 16-bit type and every kernel rounds the same
//!   way (round to nearest even, once).
//!
//! Integer arithmetic wraps on overflow (as ONNX Runtime's C++ kernels do in practice) instead
//! of panicking in debug builds; integer division by zero gives 0 (kernels that must refuse it
//! check before they divide).
//!
//! The dtype dispatch over these types is [`crate::kernel::with_numeric!`].

// The families move onto this module one by one (issue 10); until the last one has, some
// helpers have no caller outside the tests below.
#![allow(dead_code)]

use std::borrow::Cow;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
/// The `num-traits` vocabulary kernels use on dispatched types (`T::zero()`, `T::max_value()`,
/// `NumCast::from`), so a family imports it from here with the traits above.
#[allow(unused_imports)]
pub(crate) use num_traits::{Bounded, NumCast, One, ToPrimitive, Zero};
use num_traits::{FromPrimitive, PrimInt, WrappingNeg};
use vinort_ir::{DType, Elem, Error, Result, Tensor};

/// A numeric element type. Method names avoid those of the `num-traits` and `std::ops` traits
/// (`add`, `abs`, `max`, `is_nan`, ...) so generic code never has to disambiguate.
pub(crate) trait Numeric: Elem + PartialOrd + num_traits::Num + NumCast + FromPrimitive + Bounded {
    /// True for f32, f64, f16 and bf16.
    const IS_FLOAT: bool;

    /// `self + o`, wrapping for integers.
    fn wrap_add(self, o: Self) -> Self;
    /// `self - o`, wrapping for integers.
    fn wrap_sub(self, o: Self) -> Self;
    /// `self * o`, wrapping for integers.
    fn wrap_mul(self, o: Self) -> Self;
    /// `self / o`; integers truncate toward zero, give 0 for a zero divisor and `MIN` for
    /// `MIN / -1` (as two's-complement hardware would).
    fn wrap_div(self, o: Self) -> Self;
    /// Remainder with the sign of the dividend (C `fmod`); 0 for an integer zero divisor.
    fn rem_trunc(self, o: Self) -> Self;
    /// Remainder with the sign of the divisor (Python `%`); a float zero takes the divisor's
    /// sign, as Mod-28 spells out.
    fn rem_floor(self, o: Self) -> Self;
    /// Maximum; NaN wins, like numpy's `maximum`.
    fn nan_max(self, o: Self) -> Self;
    /// Minimum; NaN wins.
    fn nan_min(self, o: Self) -> Self;
    /// Absolute value (integers wrap: `|MIN|` is `MIN`).
    fn wrap_abs(self) -> Self;
    /// Negation (integers wrap).
    fn wrap_neg(self) -> Self;
    /// -1, 0 or 1 (NaN and ±0 stay as they are).
    fn sign(self) -> Self;
    /// NaN test; never true for integers.
    fn is_nan_num(self) -> bool;

    /// `v` converted as Rust's `as` does: floats round to nearest, integers truncate toward
    /// zero and saturate, NaN becomes 0. f16/bf16 round from f64 directly (no double rounding
    /// through f32).
    #[inline]
    fn from_f64_as(v: f64) -> Self {
        <Self as FromPrimitive>::from_f64(v).unwrap_or_else(|| {
            if v.is_nan() {
                Self::zero()
            } else if v > 0.0 {
                Self::max_value()
            } else {
                Self::min_value()
            }
        })
    }

    /// The value as f64 (exact for every type but 64-bit integers beyond 2^53, which round).
    #[inline]
    fn as_f64(self) -> f64 {
        num_traits::ToPrimitive::to_f64(&self).unwrap_or(f64::NAN)
    }
}

/// A floating-point element type: f32, f64, f16 or bf16.
pub(crate) trait Float: Numeric + num_traits::Float {}

impl<T: Numeric + num_traits::Float> Float for T {}

/// An integer element type: i8..i64, u8..u64.
pub(crate) trait Int: Numeric + PrimInt + WrappingNeg {
    /// Shift left; amounts that are negative or not below the bit width give 0.
    #[inline]
    fn shl_or_zero(self, amount: Self) -> Self {
        match shift_amount(amount) {
            Some(n) => self << n,
            None => Self::zero(),
        }
    }

    /// Shift right (arithmetic for signed types); amounts that are negative or not below the
    /// bit width give the sign fill (-1 or 0).
    #[inline]
    fn shr_or_fill(self, amount: Self) -> Self {
        match shift_amount(amount) {
            Some(n) => self >> n,
            None if self < Self::zero() => !Self::zero(),
            None => Self::zero(),
        }
    }
}

impl<T: Numeric + PrimInt + WrappingNeg> Int for T {}

/// A shift amount below the bit width of `T`, or None.
fn shift_amount<T: Numeric + PrimInt>(amount: T) -> Option<usize> {
    let bits = std::mem::size_of::<T>() * 8;
    amount.to_usize().filter(|n| *n < bits)
}

macro_rules! numeric_int {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            const IS_FLOAT: bool = false;
            #[inline(always)]
            fn wrap_add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn wrap_sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)]
            fn wrap_mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline]
            fn wrap_div(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            #[inline]
            fn rem_trunc(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_rem(o) } }
            #[inline]
            fn rem_floor(self, o: Self) -> Self {
                let r = self.rem_trunc(o);
                // Only signed types can disagree in sign; for unsigned ones both tests are false.
                #[allow(unused_comparisons)]
                let differ = (r < 0) != (o < 0);
                if r != 0 && differ { r.wrapping_add(o) } else { r }
            }
            #[inline(always)]
            fn nan_max(self, o: Self) -> Self { Ord::max(self, o) }
            #[inline(always)]
            fn nan_min(self, o: Self) -> Self { Ord::min(self, o) }
            #[inline]
            #[allow(unused_comparisons)]
            fn wrap_abs(self) -> Self { if self < 0 { self.wrapping_neg() } else { self } }
            #[inline(always)]
            fn wrap_neg(self) -> Self { self.wrapping_neg() }
            #[inline]
            #[allow(unused_comparisons)]
            fn sign(self) -> Self {
                if self > 0 { 1 } else if self < 0 { (0 as $t).wrapping_sub(1) } else { 0 }
            }
            #[inline(always)]
            fn is_nan_num(self) -> bool { false }
        }
    )*};
}
numeric_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! numeric_float {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            const IS_FLOAT: bool = true;
            #[inline(always)]
            fn wrap_add(self, o: Self) -> Self { self + o }
            #[inline(always)]
            fn wrap_sub(self, o: Self) -> Self { self - o }
            #[inline(always)]
            fn wrap_mul(self, o: Self) -> Self { self * o }
            #[inline(always)]
            fn wrap_div(self, o: Self) -> Self { self / o }
            #[inline(always)]
            fn rem_trunc(self, o: Self) -> Self { self % o }
            #[inline]
            fn rem_floor(self, o: Self) -> Self {
                // Rust's `%` is C fmod (NaN for an infinite dividend or a zero divisor, the
                // dividend for an infinite divisor); shifting by the divisor when the signs
                // differ gives the floored remainder.
                let zero = <$t as num_traits::Zero>::zero();
                let r = self % o;
                if r == zero {
                    num_traits::Float::copysign(zero, o)
                } else if (r < zero) != (o < zero) && !num_traits::Float::is_nan(r) {
                    r + o
                } else {
                    r
                }
            }
            #[inline]
            fn nan_max(self, o: Self) -> Self {
                if self.is_nan_num() || o.is_nan_num() { <$t>::NAN } else if self >= o { self } else { o }
            }
            #[inline]
            fn nan_min(self, o: Self) -> Self {
                if self.is_nan_num() || o.is_nan_num() { <$t>::NAN } else if self <= o { self } else { o }
            }
            #[inline(always)]
            fn wrap_abs(self) -> Self { num_traits::Float::abs(self) }
            #[inline(always)]
            fn wrap_neg(self) -> Self { -self }
            #[inline]
            fn sign(self) -> Self {
                let zero = <$t as num_traits::Zero>::zero();
                let one = <$t as num_traits::One>::one();
                if self > zero { one } else if self < zero { -one } else { self }
            }
            #[inline(always)]
            fn is_nan_num(self) -> bool { num_traits::Float::is_nan(self) }
        }
    )*};
}
numeric_float!(f32, f64, f16, bf16);

/// True for the 16-bit float types, which kernels compute through f32.
pub(crate) fn is_half(dt: DType) -> bool {
    matches!(dt, DType::F16 | DType::BF16)
}

/// An f16/bf16 tensor widened to f32; any other tensor is borrowed as it is.
pub(crate) fn widen(t: &Tensor) -> Result<Cow<'_, Tensor>> {
    Ok(match t.dtype() {
        DType::F16 => Cow::Owned(widen_tensor(t.shape(), t.as_slice::<f16>()?)),
        DType::BF16 => Cow::Owned(widen_tensor(t.shape(), t.as_slice::<bf16>()?)),
        _ => Cow::Borrowed(t),
    })
}

/// An f32 tensor rounded to `dt` when `dt` is f16/bf16; any other tensor is returned as it is.
pub(crate) fn narrow(t: Tensor, dt: DType) -> Result<Tensor> {
    Ok(match (t.dtype(), dt) {
        (DType::F32, DType::F16) => {
            let xs = t.as_slice::<f32>()?;
            Tensor::build::<f16>(t.shape(), |o| o.convert_from_f32_slice(xs))
        }
        (DType::F32, DType::BF16) => {
            let xs = t.as_slice::<f32>()?;
            Tensor::build::<bf16>(t.shape(), |o| o.convert_from_f32_slice(xs))
        }
        _ => t,
    })
}

/// The elements of an f32, f16 or bf16 tensor as f32 (16-bit floats widened).
pub(crate) fn to_f32_vec(t: &Tensor) -> Result<Vec<f32>> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>(),
        DType::F16 => Ok(widen_slice(t.as_slice::<f16>()?)),
        DType::BF16 => Ok(widen_slice(t.as_slice::<bf16>()?)),
        d => Err(Error::invalid(format!("expected an f32, f16 or bf16 tensor, got {d}"))),
    }
}

/// A tensor of `dtype` (f32, f16 or bf16) holding f32 values, rounded when `dtype` is 16-bit.
pub(crate) fn from_f32_slice(dtype: DType, shape: &[usize], v: &[f32]) -> Result<Tensor> {
    if v.len() != vinort_ir::tensor::numel(shape) {
        return Err(Error::invalid(format!("{} values cannot fill shape {shape:?}", v.len())));
    }
    Ok(match dtype {
        DType::F32 => Tensor::from_slice(shape, v)?,
        DType::F16 => Tensor::build::<f16>(shape, |o| o.convert_from_f32_slice(v)),
        DType::BF16 => Tensor::build::<bf16>(shape, |o| o.convert_from_f32_slice(v)),
        d => return Err(Error::invalid(format!("expected f32, f16 or bf16 as the output type, got {d}"))),
    })
}

/// A slice of 16-bit floats widened to f32 (the `half` crate's vectorised conversion).
pub(crate) fn widen_slice<H: HalfSlice>(src: &[H]) -> Vec<f32> {
    let mut v = vec![0.0; src.len()];
    H::widen(src, &mut v);
    v
}

/// f32 values rounded into a slice of 16-bit floats of the same length.
pub(crate) fn narrow_slice<H: HalfSlice>(src: &[f32], dst: &mut [H]) {
    H::narrow(src, dst);
}

/// One float element as f32 (exact for f16/bf16, rounding for f64).
#[inline(always)]
pub(crate) fn widen_elem<T: Float>(v: T) -> f32 {
    v.to_f32().unwrap_or(f32::NAN)
}

/// An f32 rounded to the float type `T` (round to nearest even).
#[inline(always)]
pub(crate) fn narrow_elem<T: Float>(v: f32) -> T {
    <T as FromPrimitive>::from_f32(v).unwrap_or_else(T::nan)
}

fn widen_tensor<H: HalfSlice>(shape: &[usize], src: &[H]) -> Tensor {
    Tensor::build::<f32>(shape, |o| H::widen(src, o))
}

/// The 16-bit float types, whose slices `half` converts in bulk. Sealed by being crate-private.
pub(crate) trait HalfSlice: Float {
    /// Widens `src` into `dst` (same length).
    fn widen(src: &[Self], dst: &mut [f32]);
    /// Rounds `src` into `dst` (same length).
    fn narrow(src: &[f32], dst: &mut [Self]);
}

impl HalfSlice for f16 {
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

impl HalfSlice for bf16 {
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

/// The error a kernel gives at run time for an element type it does not handle.
pub(crate) fn bad_dtype(op: &str, dt: DType) -> Error {
    Error::invalid(format!("{op} does not support {dt} tensors"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_wraps_and_never_panics() {
        assert_eq!(i8::MAX.wrap_add(1), i8::MIN);
        assert_eq!(i32::MIN.wrap_div(-1), i32::MIN);
        assert_eq!(7i32.wrap_div(0), 0);
        assert_eq!((-7i32).rem_floor(3), 2);
        assert_eq!(7u8.rem_floor(3), 1);
        assert_eq!(i8::MIN.wrap_abs(), i8::MIN);
        assert_eq!((-5i16).sign(), -1);
        assert_eq!(5u16.sign(), 1);
    }

    #[test]
    fn shifts_outside_the_width_fill() {
        assert_eq!(1u8.shl_or_zero(8), 0);
        assert_eq!((-8i32).shr_or_fill(40), -1);
        assert_eq!(8i32.shr_or_fill(-1), 0);
        assert_eq!(1i64.shl_or_zero(63), i64::MIN);
    }

    #[test]
    fn floats_propagate_nan_and_floor_remainders() {
        assert!(1.0f32.nan_max(f32::NAN).is_nan());
        assert_eq!((-7.0f64).rem_floor(3.0), 2.0);
        assert!(0.0f32.rem_floor(-3.0).is_sign_negative());
        assert_eq!(f16::from_f32(-2.0).sign(), f16::from_f32(-1.0));
    }

    #[test]
    fn from_f64_as_matches_rust_as() {
        for v in [f64::NAN, 1e30, -1e30, 2.9, -2.9, 255.5, -0.5] {
            assert_eq!(u8::from_f64_as(v), v as u8);
            assert_eq!(i16::from_f64_as(v), v as i16);
            assert_eq!(i64::from_f64_as(v), v as i64);
            assert_eq!(f32::from_f64_as(v).to_bits(), (v as f32).to_bits());
        }
        assert_eq!(f16::from_f64_as(1.0 + 1e-9), f16::from_f64(1.0 + 1e-9));
    }

    /// Every arm of the dispatch binds a type with the traits its set promises.
    #[test]
    fn dispatch_arms_bind_the_promised_types() {
        use crate::kernel::with_numeric;
        fn all(dt: DType) -> Option<(bool, usize)> {
            with_numeric!(dt, |T| Some((T::IS_FLOAT, std::mem::size_of::<T>())), _ => None)
        }
        fn float(dt: DType) -> Option<f64> {
            with_numeric!(float dt, |T| Some(<T as num_traits::Float>::sqrt(T::from_f64_as(4.0)).as_f64()), _ => None)
        }
        fn int(dt: DType) -> Option<f64> {
            with_numeric!(int dt, |T| Some(T::one().shl_or_zero(T::one()).as_f64()), _ => None)
        }
        fn compute(dt: DType) -> Option<usize> {
            with_numeric!(compute dt, |T| Some(std::mem::size_of::<T>()), _ => None)
        }
        assert_eq!(all(DType::BF16), Some((true, 2)));
        assert_eq!(all(DType::U64), Some((false, 8)));
        assert_eq!(all(DType::Bool), None);
        assert_eq!(float(DType::F16), Some(2.0));
        assert_eq!(float(DType::I32), None);
        assert_eq!(int(DType::I8), Some(2.0));
        assert_eq!(int(DType::F32), None);
        assert_eq!(compute(DType::BF16), Some(4));
        assert_eq!(compute(DType::F64), Some(8));
        assert_eq!(compute(DType::U8), None);
    }

    #[test]
    fn widen_and_narrow_round_trip_halves() {
        let t = Tensor::from_slice(&[3], &[f16::from_f32(1.5), f16::from_f32(-2.0), f16::NAN]).unwrap();
        let w = widen(&t).unwrap();
        assert_eq!(w.dtype(), DType::F32);
        let back = narrow(w.into_owned(), DType::F16).unwrap();
        assert_eq!(back.as_bytes(), t.as_bytes());
        assert_eq!(to_f32_vec(&from_f32_slice(DType::BF16, &[2], &[1.0, 3.0]).unwrap()).unwrap(), [1.0, 3.0]);
        assert_eq!(narrow_elem::<bf16>(widen_elem(bf16::from_f32(0.25))), bf16::from_f32(0.25));
    }
}
