//! The element types the reductions, ArgMax/ArgMin, CumProd and Einsum read ([`RElem`]: every
//! numeric type and bool) and the types they accumulate in ([`Acc`]): f16 and bf16 accumulate
//! in f32, integers in i64/u64 (sums and products wrap as they would in the element type, since
//! narrowing a wrapped 64-bit result is the element type's own wrapping result).

use vinort_ir::Elem;

use crate::numeric::Numeric;

/// The integer or float type a reduction accumulates in.
pub trait Acc: Copy + Send + Sync + PartialOrd + 'static {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// a + b (wrapping for integers).
    fn add(self, o: Self) -> Self;
    /// a - b (wrapping for integers).
    fn sub(self, o: Self) -> Self;
    /// a * b (wrapping for integers).
    fn mul(self, o: Self) -> Self;
    /// |a|.
    fn abs(self) -> Self;
    /// Through f64, for the finishing steps (sqrt, log, exp, mean).
    fn to_f64(self) -> f64;
    /// From f64 (truncating for integers).
    fn from_f64(v: f64) -> Self;
    /// e^a (floats only; integers go through f64).
    fn exp(self) -> Self;
    /// a / n for a count n > 0 (truncating for integers).
    fn div_count(self, n: usize) -> Self;
    /// A NaN test (never true for integers).
    #[allow(clippy::eq_op)]
    fn is_nan(self) -> bool {
        self != self
    }
}

/// The accumulator impls: the arithmetic is `Numeric`'s (wrapping for integers); only the
/// constants and `exp` (native for floats, through f64 for integers) differ per type.
macro_rules! acc {
    ($($t:ty: $zero:literal, $one:literal, $exp:expr);*) => {$(
        impl Acc for $t {
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrap_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrap_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrap_mul(o)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.wrap_abs()
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.as_f64()
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t as Numeric>::from_f64_as(v)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn div_count(self, n: usize) -> Self {
                // Integers truncate and give 0 for n = 0; floats give 0/0 = NaN.
                self.wrap_div(<$t as Numeric>::from_f64_as(n as f64))
            }
        }
    )*};
}
acc!(f32: 0.0, 1.0, f32::exp; f64: 0.0, 1.0, f64::exp;
    i64: 0, 1, |v: i64| (v as f64).exp() as i64; u64: 0, 1, |v: u64| (v as f64).exp() as u64);

/// An element type a reduction reads, with its accumulator.
pub trait RElem: Elem {
    /// The accumulator.
    type A: Acc;
    /// Whether the type is a float (log and exp reductions need one).
    const FLOAT: bool;
    /// Widens.
    fn load(self) -> Self::A;
    /// Narrows back (wrapping for integers).
    fn store(a: Self::A) -> Self;
    /// What the max of nothing is: -inf, or the type's minimum.
    fn lowest() -> Self::A;
    /// What the min of nothing is.
    fn highest() -> Self::A;
}

macro_rules! relem {
    ($t:ty, $a:ty, $float:expr, $lo:expr, $hi:expr, $load:expr, $store:expr) => {
        impl RElem for $t {
            type A = $a;
            const FLOAT: bool = $float;
            #[inline(always)]
            fn load(self) -> $a {
                $load(self)
            }
            #[inline(always)]
            fn store(a: $a) -> Self {
                $store(a)
            }
            fn lowest() -> $a {
                $lo
            }
            fn highest() -> $a {
                $hi
            }
        }
    };
}
relem!(f32, f32, true, f32::NEG_INFINITY, f32::INFINITY, |v| v, |a| a);
relem!(f64, f64, true, f64::NEG_INFINITY, f64::INFINITY, |v| v, |a| a);
relem!(half::f16, f32, true, f32::NEG_INFINITY, f32::INFINITY, half::f16::to_f32, half::f16::from_f32);
relem!(half::bf16, f32, true, f32::NEG_INFINITY, f32::INFINITY, half::bf16::to_f32, half::bf16::from_f32);
relem!(i8, i64, false, i8::MIN as i64, i8::MAX as i64, |v| v as i64, |a| a as i8);
relem!(i16, i64, false, i16::MIN as i64, i16::MAX as i64, |v| v as i64, |a| a as i16);
relem!(i32, i64, false, i32::MIN as i64, i32::MAX as i64, |v| v as i64, |a| a as i32);
relem!(i64, i64, false, i64::MIN, i64::MAX, |v| v, |a| a);
relem!(u8, u64, false, 0, u8::MAX as u64, |v| v as u64, |a| a as u8);
relem!(u16, u64, false, 0, u16::MAX as u64, |v| v as u64, |a| a as u16);
relem!(u32, u64, false, 0, u32::MAX as u64, |v| v as u64, |a| a as u32);
relem!(u64, u64, false, 0, u64::MAX, |v| v, |a| a);
relem!(bool, u64, false, 0, 1, |v| v as u64, |a| a != 0);
