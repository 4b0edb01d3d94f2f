//! Pieces shared by the linear-algebra, convolution and pooling kernels: the real element
//! trait, the `gemm` wrapper (re-exported from `kernels::dense`) and f16/bf16 widening.

use std::borrow::Cow;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use vinort_ir::{DType, Error, Node, Result, Tensor};

pub(crate) use crate::kernels::dense::{GemmElem, View, matmul_into};

/// The types the float kernels compute in: f32 and f64 (sealed through [`GemmElem`], whose
/// `ZERO` and `ONE` they use). Shared by linalg, conv, pool and norm, so one set of f32/f64
/// forwarding impls serves them all.
pub(crate) trait Real:
    GemmElem
    + PartialOrd
    + Default
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
{
    /// Negative infinity.
    const NEG_INF: Self;
    /// From f64 (rounding).
    fn from_f64(v: f64) -> Self;
    /// From a count.
    fn from_usize(v: usize) -> Self;
    /// To f64.
    fn to_f64(self) -> f64;
    fn abs(self) -> Self;
    fn powf(self, p: Self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
}

macro_rules! real {
    ($($t:ty),*) => {$(
        impl Real for $t {
            const NEG_INF: Self = <$t>::NEG_INFINITY;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_usize(v: usize) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn powf(self, p: Self) -> Self {
                <$t>::powf(self, p)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
        }
    )*};
}
real!(f32, f64);

/// The tensor in the type the kernels compute in: f16 and bf16 are widened to f32, f32 and
/// f64 pass through untouched.
pub(crate) fn to_compute(t: &Tensor) -> Result<Cow<'_, Tensor>> {
    Ok(match t.dtype() {
        DType::F16 => {
            let src = t.as_slice::<f16>()?;
            Cow::Owned(Tensor::build::<f32>(t.shape(), |o| src.convert_to_f32_slice(o)))
        }
        DType::BF16 => {
            let src = t.as_slice::<bf16>()?;
            Cow::Owned(Tensor::build::<f32>(t.shape(), |o| src.convert_to_f32_slice(o)))
        }
        DType::F32 | DType::F64 => Cow::Owned(t.to_aligned()),
        d => return Err(Error::unsupported(format!("{d} is not a floating-point type"))),
    })
}

/// A constant input prepared once at kernel build: widened to f32 when it is f16 or bf16.
/// f32 and f64 constants need nothing (None): the partition's plan hands them to the kernel
/// already aligned, so copying them here would only double their memory and make asking the
/// Cpu provider whether it *could* run a node (which builds the kernel) cost a weight copy.
pub(crate) fn widen_const(t: &Tensor) -> Result<Option<Tensor>> {
    Ok(match t.dtype() {
        DType::F16 | DType::BF16 => Some(to_compute(t)?.into_owned()),
        _ => None,
    })
}

/// Narrows a computed result back to the node's element type.
pub(crate) fn from_compute(t: Tensor, dtype: DType) -> Result<Tensor> {
    Ok(match dtype {
        DType::F16 => {
            let src = t.as_slice::<f32>()?;
            Tensor::build::<f16>(t.shape(), |o| o.convert_from_f32_slice(src))
        }
        DType::BF16 => {
            let src = t.as_slice::<f32>()?;
            Tensor::build::<bf16>(t.shape(), |o| o.convert_from_f32_slice(src))
        }
        _ => t,
    })
}

/// True for the element types that go through [`to_compute`].
pub(crate) fn is_real(d: DType) -> bool {
    d.is_float()
}

/// Refuses at compile time an input type known not to be among `ok`.
pub(crate) fn check_dtype(node: &Node, known: Option<DType>, ok: &[DType]) -> Result<()> {
    match known {
        Some(d) if !ok.contains(&d) => Err(Error::unsupported(format!("{} does not support {d} inputs", node.op_type))),
        _ => Ok(()),
    }
}
