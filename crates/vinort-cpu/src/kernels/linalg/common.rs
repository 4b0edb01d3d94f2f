//! Pieces shared by the linear-algebra, convolution and pooling kernels: the real element
//! trait, the `gemm` wrapper (re-exported from `kernels::dense`) and f16/bf16 widening.

use std::borrow::Cow;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use vinort_ir::{DType, Error, Node, Result, Tensor};

use crate::numeric::Numeric;

pub(crate) use crate::kernels::dense::{GemmElem, View, matmul_into};

/// The types the float kernels compute in: f32 and f64 (sealed through [`GemmElem`], whose
/// `ZERO` and `ONE` they use). Shared by linalg, conv, pool and norm. Its one impl is the
/// blanket one below over [`Numeric`] and `num_traits::Float`; the methods are restated here
/// (rather than making those traits supertraits) so generic code calls `T::from_f64(v)` and
/// `x.to_f64()` without the `FromPrimitive`/`ToPrimitive` methods of the same names making the
/// call ambiguous.
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
    fn neg_inf() -> Self;
    /// From f64 (rounding).
    fn from_f64(v: f64) -> Self;
    /// From a count.
    fn from_usize(v: usize) -> Self {
        Self::from_f64(v as f64)
    }
    /// To f64.
    fn to_f64(self) -> f64;
    fn abs(self) -> Self;
    fn powf(self, p: Self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn ln_1p(self) -> Self;
    fn floor(self) -> Self;
}

impl<T> Real for T
where
    T: GemmElem + Numeric + num_traits::Float + Default + std::fmt::Debug + std::ops::AddAssign,
{
    #[inline(always)]
    fn neg_inf() -> Self {
        <T as num_traits::Float>::neg_infinity()
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        T::from_f64_as(v)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.as_f64()
    }
    #[inline(always)]
    fn abs(self) -> Self {
        <T as num_traits::Float>::abs(self)
    }
    #[inline(always)]
    fn powf(self, p: Self) -> Self {
        <T as num_traits::Float>::powf(self, p)
    }
    #[inline(always)]
    fn exp(self) -> Self {
        <T as num_traits::Float>::exp(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        <T as num_traits::Float>::ln(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        <T as num_traits::Float>::sqrt(self)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        <T as num_traits::Float>::tanh(self)
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        <T as num_traits::Float>::ln_1p(self)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        <T as num_traits::Float>::floor(self)
    }
}

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
