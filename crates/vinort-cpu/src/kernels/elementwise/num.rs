//! Numeric element traits the elementwise kernels are generic over, the error function, and the
//! f16/bf16 widening every float kernel of this family goes through.
//!
//! Integer arithmetic wraps on overflow (as ONNX Runtime's C++ kernels do in practice) instead
//! of panicking; integer division by zero is ruled out by the kernels before they divide.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use vinort_ir::{DType, Elem, Result, Tensor};

/// Arithmetic shared by the float and integer element types.
pub(crate) trait Num: Elem + PartialOrd {
    const ZERO: Self;
    const IS_FLOAT: bool;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Division; integers truncate toward zero and must not be given a zero divisor.
    fn div(self, o: Self) -> Self;
    /// Remainder with the sign of the dividend (C `fmod`).
    fn rem_trunc(self, o: Self) -> Self;
    /// Remainder with the sign of the divisor (Python `%`).
    fn rem_floor(self, o: Self) -> Self;
    /// Maximum; NaN wins, like numpy's `maximum`.
    fn max_(self, o: Self) -> Self;
    /// Minimum; NaN wins.
    fn min_(self, o: Self) -> Self;
    fn abs_(self) -> Self;
    fn neg_(self) -> Self;
    /// -1, 0 or 1 (NaN stays NaN).
    fn sign_(self) -> Self;
    fn to_f64(self) -> f64;
    /// Rust `as` conversion: floats round, integers truncate toward zero and saturate.
    fn from_f64(v: f64) -> Self;
    fn is_zero(self) -> bool {
        self == Self::ZERO
    }
}

/// Bit operations of the integer element types.
pub(crate) trait Int: Num {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn not(self) -> Self;
    /// Shift left; amounts that are negative or not below the bit width give 0.
    fn shl_(self, amount: Self) -> Self;
    /// Shift right (arithmetic for signed types); out-of-range amounts give the sign fill.
    fn shr_(self, amount: Self) -> Self;
}

macro_rules! int_common {
    ($t:ty) => {
        const ZERO: Self = 0;
        const IS_FLOAT: bool = false;
        fn add(self, o: Self) -> Self {
            self.wrapping_add(o)
        }
        fn sub(self, o: Self) -> Self {
            self.wrapping_sub(o)
        }
        fn mul(self, o: Self) -> Self {
            self.wrapping_mul(o)
        }
        fn div(self, o: Self) -> Self {
            // MIN / -1 overflows; wrapping gives MIN like two's-complement hardware would.
            if o == 0 { 0 } else { self.wrapping_div(o) }
        }
        fn rem_trunc(self, o: Self) -> Self {
            if o == 0 { 0 } else { self.wrapping_rem(o) }
        }
        fn max_(self, o: Self) -> Self {
            Ord::max(self, o)
        }
        fn min_(self, o: Self) -> Self {
            Ord::min(self, o)
        }
        fn to_f64(self) -> f64 {
            self as f64
        }
        fn from_f64(v: f64) -> Self {
            v as $t
        }
    };
}

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl Num for $t {
            int_common!($t);
            fn rem_floor(self, o: Self) -> Self {
                let r = self.rem_trunc(o);
                if r != 0 && ((r < 0) != (o < 0)) { r.wrapping_add(o) } else { r }
            }
            fn abs_(self) -> Self {
                self.wrapping_abs()
            }
            fn neg_(self) -> Self {
                self.wrapping_neg()
            }
            fn sign_(self) -> Self {
                self.signum()
            }
        }
        impl Int for $t {
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
            fn not(self) -> Self { !self }
            fn shl_(self, amount: Self) -> Self {
                if amount < 0 || amount as u64 >= <$t>::BITS as u64 { 0 } else { self.wrapping_shl(amount as u32) }
            }
            fn shr_(self, amount: Self) -> Self {
                if amount < 0 || amount as u64 >= <$t>::BITS as u64 {
                    if self < 0 { -1 } else { 0 }
                } else {
                    self >> amount
                }
            }
        }
    )*};
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Num for $t {
            int_common!($t);
            fn rem_floor(self, o: Self) -> Self {
                self.rem_trunc(o)
            }
            fn abs_(self) -> Self {
                self
            }
            fn neg_(self) -> Self {
                self.wrapping_neg()
            }
            fn sign_(self) -> Self {
                (self != 0) as $t
            }
        }
        impl Int for $t {
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
            fn not(self) -> Self { !self }
            fn shl_(self, amount: Self) -> Self {
                if amount as u64 >= <$t>::BITS as u64 { 0 } else { self << amount }
            }
            fn shr_(self, amount: Self) -> Self {
                if amount as u64 >= <$t>::BITS as u64 { 0 } else { self >> amount }
            }
        }
    )*};
}

signed!(i8, i16, i32, i64);
unsigned!(u8, u16, u32, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const IS_FLOAT: bool = true;
            fn add(self, o: Self) -> Self { self + o }
            fn sub(self, o: Self) -> Self { self - o }
            fn mul(self, o: Self) -> Self { self * o }
            fn div(self, o: Self) -> Self { self / o }
            fn rem_trunc(self, o: Self) -> Self { self % o }
            fn rem_floor(self, o: Self) -> Self {
                // Rust's `%` is C fmod (NaN for an infinite dividend or a zero divisor, the
                // dividend for an infinite divisor); shifting by the divisor when the signs
                // differ gives the floored remainder, and a zero takes the divisor's sign, as
                // Mod-28 spells out.
                let r = self % o;
                if r == 0.0 {
                    (0.0 as $t).copysign(o)
                } else if (r < 0.0) != (o < 0.0) && !r.is_nan() {
                    r + o
                } else {
                    r
                }
            }
            fn max_(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() { <$t>::NAN } else if self >= o { self } else { o }
            }
            fn min_(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() { <$t>::NAN } else if self <= o { self } else { o }
            }
            fn abs_(self) -> Self { self.abs() }
            fn neg_(self) -> Self { -self }
            fn sign_(self) -> Self {
                if self > 0.0 { 1.0 } else if self < 0.0 { -1.0 } else { self }
            }
            fn to_f64(self) -> f64 { self as f64 }
            fn from_f64(v: f64) -> Self { v as $t }
        }
    )*};
}

float!(f32, f64);

/// Calls `$f::<T>(args)` with `T` the Rust type of an integer or f32/f64 dtype, or evaluates
/// `$other` for any other dtype.
macro_rules! num_dispatch {
    ($dt:expr, $f:ident ( $($a:expr),* ), $other:expr) => {
        match $dt {
            DType::F32 => $f::<f32>($($a),*),
            DType::F64 => $f::<f64>($($a),*),
            DType::I8 => $f::<i8>($($a),*),
            DType::I16 => $f::<i16>($($a),*),
            DType::I32 => $f::<i32>($($a),*),
            DType::I64 => $f::<i64>($($a),*),
            DType::U8 => $f::<u8>($($a),*),
            DType::U16 => $f::<u16>($($a),*),
            DType::U32 => $f::<u32>($($a),*),
            DType::U64 => $f::<u64>($($a),*),
            _ => $other,
        }
    };
}

/// Like `num_dispatch` for the integer dtypes only.
macro_rules! int_dispatch {
    ($dt:expr, $f:ident ( $($a:expr),* ), $other:expr) => {
        match $dt {
            DType::I8 => $f::<i8>($($a),*),
            DType::I16 => $f::<i16>($($a),*),
            DType::I32 => $f::<i32>($($a),*),
            DType::I64 => $f::<i64>($($a),*),
            DType::U8 => $f::<u8>($($a),*),
            DType::U16 => $f::<u16>($($a),*),
            DType::U32 => $f::<u32>($($a),*),
            DType::U64 => $f::<u64>($($a),*),
            _ => $other,
        }
    };
}

pub(crate) use {int_dispatch, num_dispatch};

pub(crate) use crate::numeric::{bad_dtype, is_half};

/// An f16/bf16 tensor widened to f32 (other tensors are returned as they are).
pub(crate) fn widen(t: &Tensor) -> Result<Tensor> {
    Ok(match t.dtype() {
        DType::F16 => {
            let xs = t.as_slice::<f16>()?;
            Tensor::build::<f32>(t.shape(), |o| xs.convert_to_f32_slice(o))
        }
        DType::BF16 => {
            let xs = t.as_slice::<bf16>()?;
            Tensor::build::<f32>(t.shape(), |o| xs.convert_to_f32_slice(o))
        }
        _ => t.clone(),
    })
}

/// An f32 tensor rounded to `dt` when `dt` is f16/bf16 (other tensors are returned as they are).
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

/// Like `num_dispatch` over every fixed-size element type: the numbers, f16, bf16 and bool.
macro_rules! elem_dispatch {
    ($dt:expr, $f:ident ( $($a:expr),* ), $other:expr) => {
        match $dt {
            DType::F16 => $f::<half::f16>($($a),*),
            DType::BF16 => $f::<half::bf16>($($a),*),
            DType::Bool => $f::<bool>($($a),*),
            dt => $crate::kernels::elementwise::num::num_dispatch!(dt, $f($($a),*), $other),
        }
    };
}

pub(crate) use elem_dispatch;
