//! The element functions the kernels map over tensors, each with its own loop.
//!
//! [`super::map_into`] takes any closure, but LLVM inlines a call through a generic `F: Fn`
//! only when the callee is small: with `erf` or `tanh` inside, the closure stays an
//! out-of-line scalar call per element and the loop does not vectorize (measured: the Gelu of
//! a BERT layer ran at 4 ns per element). Here each function is called by name inside its own
//! loop, so the `#[inline(always)]` math is inlined and the loop compiled per instruction set
//! is vectorized.

use super::{erf, exp, sigmoid, tanh};

/// An element function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fun {
    /// `e^v`.
    Exp,
    /// `tanh(v)`.
    Tanh,
    /// `1 / (1 + e^-v)`.
    Sigmoid,
    /// `erf(v)`.
    Erf,
    /// Gelu-20 with `approximate="none"`: `0.5 v (1 + erf(v / √2))`.
    Gelu,
    /// `max(v, 0)` (NaN stays NaN).
    Relu,
    /// `v < 0 ? alpha v : v`.
    LeakyRelu(f32),
    /// `min(max(v, lo), hi)` (NaN stays NaN).
    Clip(f32, f32),
    /// `clamp(alpha v + beta, 0, 1)`.
    HardSigmoid(f32, f32),
    /// `v · clamp(v / 6 + 0.5, 0, 1)`.
    HardSwish,
}

/// Gelu-20 with `approximate="none"`, in f32 (`FMA` as in [`super::madd`]).
#[inline(always)]
pub(crate) fn gelu<const FMA: bool>(v: f32) -> f32 {
    0.5 * v * (1.0 + erf::<FMA>(v * std::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
fn relu(v: f32) -> f32 {
    if v < 0.0 { 0.0 } else { v }
}

#[inline(always)]
fn hard_swish(v: f32) -> f32 {
    v * (v / 6.0 + 0.5).clamp(0.0, 1.0)
}

#[cfg(test)]
impl Fun {
    /// The function at one value, written once more as a plain match: the tests hold every
    /// loop to it, bit for bit (`FMA` as the loop was compiled).
    pub(crate) fn eval<const FMA: bool>(self, v: f32) -> f32 {
        match self {
            Fun::Exp => exp::<FMA>(v),
            Fun::Tanh => tanh::<FMA>(v),
            Fun::Sigmoid => sigmoid::<FMA>(v),
            Fun::Erf => erf::<FMA>(v),
            Fun::Gelu => gelu::<FMA>(v),
            Fun::Relu => relu(v),
            Fun::LeakyRelu(a) => {
                if v < 0.0 {
                    a * v
                } else {
                    v
                }
            }
            Fun::Clip(lo, hi) => {
                let x = if v < lo { lo } else { v };
                if x > hi { hi } else { x }
            }
            Fun::HardSigmoid(a, b) => (a * v + b).clamp(0.0, 1.0),
            Fun::HardSwish => hard_swish(v),
        }
    }
}

/// One loop per function: `$each!(f)` expands to a loop applying `f`, which is a function
/// called by name (or a small closure), so it is inlined into the loop; `FMA` is the const
/// parameter of the function the macro expands in. The loops are `for`
/// loops, not `for_each`: an iterator's `fold` is a generic function of its own, which LLVM
/// kept out of line (so compiled for the baseline SSE2, not the caller's AVX-512).
macro_rules! loops {
    ($fun:expr, $each:ident) => {
        match $fun {
            Fun::Exp => $each!(exp::<FMA>),
            Fun::Tanh => $each!(tanh::<FMA>),
            Fun::Sigmoid => $each!(sigmoid::<FMA>),
            Fun::Erf => $each!(erf::<FMA>),
            Fun::Gelu => $each!(gelu::<FMA>),
            Fun::Relu => $each!(relu),
            Fun::HardSwish => $each!(hard_swish),
            Fun::LeakyRelu(a) => $each!(|v: f32| if v < 0.0 { a * v } else { v }),
            Fun::Clip(lo, hi) => $each!(|v: f32| {
                let x = if v < lo { lo } else { v };
                if x > hi { hi } else { x }
            }),
            Fun::HardSigmoid(a, b) => $each!(|v: f32| (a * v + b).clamp(0.0, 1.0)),
        }
    };
}

#[inline(always)]
pub(super) fn into_portable<const FMA: bool>(fun: Fun, x: &[f32], out: &mut [f32]) {
    macro_rules! each {
        ($f:expr) => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = ($f)(v);
            }
        };
    }
    loops!(fun, each)
}

#[inline(always)]
pub(super) fn in_place_portable<const FMA: bool>(fun: Fun, y: &mut [f32]) {
    macro_rules! each {
        ($f:expr) => {
            for o in y.iter_mut() {
                *o = ($f)(*o);
            }
        };
    }
    loops!(fun, each)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
pub(super) fn into_avx512(fun: Fun, x: &[f32], out: &mut [f32]) {
    into_portable::<true>(fun, x, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) fn into_avx2(fun: Fun, x: &[f32], out: &mut [f32]) {
    into_portable::<true>(fun, x, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
pub(super) fn in_place_avx512(fun: Fun, y: &mut [f32]) {
    in_place_portable::<true>(fun, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) fn in_place_avx2(fun: Fun, y: &mut [f32]) {
    in_place_portable::<true>(fun, y)
}

/// `out[i] = fun(x[i])`, compiled for AVX-512F, else AVX2+FMA (both with fused multiply-adds,
/// giving the same bits), else portable (runtime dispatch).
///
/// # Panics
/// If `x.len() != out.len()`.
pub(crate) fn apply_into(fun: Fun, x: &[f32], out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "apply_into: length mismatch");
    #[cfg(target_arch = "x86_64")]
    {
        if crate::isa::avx512() {
            // SAFETY: the running CPU supports AVX-512F, checked just above.
            return unsafe { into_avx512(fun, x, out) };
        }
        if crate::isa::avx2() {
            // SAFETY: the running CPU supports AVX2 and FMA, checked just above.
            return unsafe { into_avx2(fun, x, out) };
        }
    }
    into_portable::<false>(fun, x, out)
}

/// `y[i] = fun(y[i])`, dispatched like [`apply_into`].
pub(crate) fn apply_in_place(fun: Fun, y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::isa::avx512() {
            // SAFETY: the running CPU supports AVX-512F, checked just above.
            return unsafe { in_place_avx512(fun, y) };
        }
        if crate::isa::avx2() {
            // SAFETY: the running CPU supports AVX2 and FMA, checked just above.
            return unsafe { in_place_avx2(fun, y) };
        }
    }
    in_place_portable::<false>(fun, y)
}
