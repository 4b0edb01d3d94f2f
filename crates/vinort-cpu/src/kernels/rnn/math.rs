//! The element type this family computes in, tensor widening and narrowing, and the matrix
//! product of the gate projections and DeformConv's column product (`kernels::dense`).

use vinort_ir::{DType, Error, Result, Tensor};

use super::activation::{Activation, Kind};
use crate::kernels::linalg::packed::PackedB;
use crate::vmath::{self, Fun};

pub(crate) use crate::kernels::dense::View as Mat;
use crate::kernels::linalg::common::Real;

/// f32 or f64: the types the kernels compute in. Builds on the float kernels' [`Real`]
/// (arithmetic, `from_f64`, `exp`, `abs`, and `GemmElem`'s `ZERO`/`ONE`) with what the gate
/// activations and tensor loading add.
pub(crate) trait Float: Real {
    /// The elements of a float tensor in this type: f32 takes f32, f16 and bf16 (widened),
    /// f64 takes f64.
    fn load(t: &Tensor) -> Result<std::borrow::Cow<'_, [Self]>>;
    /// A tensor of `dtype` (one [`Float::load`] accepts) holding `v`, narrowed if need be.
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor>;
    /// `a.eval(x)` for every `x` of `v`, in place.
    fn activate(a: Activation, v: &mut [Self]) {
        for x in v {
            *x = a.eval(*x);
        }
    }
    /// `y = a · B` by weights packed once; None for a type they are not packed for (f32 only).
    fn packed(p: &PackedB, a: &[Self], y: &mut [Self]) -> Option<Result<()>>;
}

fn wrong_type(d: DType, want: &str) -> Error {
    Error::invalid(format!("expected a {want} tensor, got {d}"))
}

impl Float for f32 {
    fn load(t: &Tensor) -> Result<std::borrow::Cow<'_, [Self]>> {
        match t.as_slice::<f32>() {
            // Read in place: the weights of an RNN are not copied every run.
            Ok(v) if t.dtype() == DType::F32 => Ok(std::borrow::Cow::Borrowed(v)),
            _ => crate::numeric::to_f32_vec(&t.to_aligned()).map(std::borrow::Cow::Owned),
        }
    }
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor> {
        crate::numeric::from_f32_slice(dtype, shape, v)
    }
    /// Sigmoid, Tanh, LeakyRelu and HardSigmoid through the vector math (within an ulp or two
    /// of the scalar functions, NaN passing alike); the rest element by element.
    fn activate(a: Activation, v: &mut [f32]) {
        let fun = match a.kind {
            Kind::Sigmoid => Fun::Sigmoid,
            Kind::Tanh => Fun::Tanh,
            Kind::LeakyRelu => Fun::LeakyRelu(a.alpha),
            Kind::HardSigmoid => Fun::HardSigmoid(a.alpha, a.beta),
            _ => {
                for x in v {
                    *x = a.eval(*x);
                }
                return;
            }
        };
        vmath::apply_in_place(fun, v);
    }
    fn packed(p: &PackedB, a: &[f32], y: &mut [f32]) -> Option<Result<()>> {
        Some(p.product(a, y, None, None, None))
    }
}

impl Float for f64 {
    fn load(t: &Tensor) -> Result<std::borrow::Cow<'_, [Self]>> {
        match t.dtype() {
            DType::F64 => match t.as_slice::<f64>() {
                Ok(v) => Ok(std::borrow::Cow::Borrowed(v)),
                Err(_) => t.to_aligned().to_vec::<f64>().map(std::borrow::Cow::Owned),
            },
            d => Err(wrong_type(d, "f64")),
        }
    }
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor> {
        match dtype {
            DType::F64 => Tensor::from_slice(shape, v),
            d => Err(wrong_type(d, "f64")),
        }
    }
    fn packed(_: &PackedB, _: &[f64], _: &mut [f64]) -> Option<Result<()>> {
        None
    }
}

/// `c = a @ b` (or `c += a @ b` when `accumulate`) with `a` m x k, `b` k x n and `c` the
/// first m * n elements of a row-major m x n buffer; split across rayon's pool when large.
pub(crate) fn matmul<T: Float>(
    (m, n, k): (usize, usize, usize),
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    c: &mut [T],
    accumulate: bool,
) -> Result<()> {
    let parallel = m.saturating_mul(n).saturating_mul(k) >= crate::par::MACS;
    crate::kernels::dense::matmul_into((m, n, k), a, b, c, n, accumulate, T::ONE, parallel)
}
