//! The element type this family computes in, tensor widening and narrowing, and the matrix
//! product of the gate projections and DeformConv's column product (`kernels::dense`).

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use vinort_ir::{DType, Error, Result, Tensor};

pub(crate) use crate::kernels::dense::View as Mat;
use crate::kernels::linalg::common::Real;

/// f32 or f64: the types the kernels compute in. Builds on the float kernels' [`Real`]
/// (arithmetic, `from_f64`, `exp`, `abs`, and `GemmElem`'s `ZERO`/`ONE`) with what the gate
/// activations and tensor loading add.
pub(crate) trait Float: Real {
    fn from_f32(v: f32) -> Self;
    fn tanh(self) -> Self;
    fn ln_1p(self) -> Self;
    fn floor(self) -> Self;
    /// The value truncated toward zero as an integer (saturating; NaN gives 0).
    fn to_i64(self) -> i64;
    /// The elements of a float tensor in this type: f32 takes f32, f16 and bf16 (widened),
    /// f64 takes f64.
    fn load(t: &Tensor) -> Result<Vec<Self>>;
    /// A tensor of `dtype` (one [`Float::load`] accepts) holding `v`, narrowed if need be.
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor>;
}

fn wrong_type(d: DType, want: &str) -> Error {
    Error::invalid(format!("expected a {want} tensor, got {d}"))
}

impl Float for f32 {
    fn from_f32(v: f32) -> Self {
        v
    }
    fn tanh(self) -> Self {
        f32::tanh(self)
    }
    fn ln_1p(self) -> Self {
        f32::ln_1p(self)
    }
    fn floor(self) -> Self {
        f32::floor(self)
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn load(t: &Tensor) -> Result<Vec<Self>> {
        let t = t.to_aligned();
        Ok(match t.dtype() {
            DType::F32 => t.to_vec::<f32>()?,
            DType::F16 => {
                let src = t.as_slice::<f16>()?;
                let mut v = vec![0.0; src.len()];
                src.convert_to_f32_slice(&mut v);
                v
            }
            DType::BF16 => {
                let src = t.as_slice::<bf16>()?;
                let mut v = vec![0.0; src.len()];
                src.convert_to_f32_slice(&mut v);
                v
            }
            d => return Err(wrong_type(d, "f32, f16 or bf16")),
        })
    }
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor> {
        let check = |n: usize| {
            if n == v.len() {
                Ok(())
            } else {
                Err(Error::invalid(format!("{} values cannot fill shape {shape:?}", v.len())))
            }
        };
        check(shape.iter().product())?;
        Ok(match dtype {
            DType::F32 => Tensor::from_slice(shape, v)?,
            DType::F16 => Tensor::build::<f16>(shape, |o| o.convert_from_f32_slice(v)),
            DType::BF16 => Tensor::build::<bf16>(shape, |o| o.convert_from_f32_slice(v)),
            d => return Err(wrong_type(d, "f32, f16 or bf16")),
        })
    }
}

impl Float for f64 {
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    fn ln_1p(self) -> Self {
        f64::ln_1p(self)
    }
    fn floor(self) -> Self {
        f64::floor(self)
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn load(t: &Tensor) -> Result<Vec<Self>> {
        match t.dtype() {
            DType::F64 => t.to_aligned().to_vec::<f64>(),
            d => Err(wrong_type(d, "f64")),
        }
    }
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor> {
        match dtype {
            DType::F64 => Tensor::from_slice(shape, v),
            d => Err(wrong_type(d, "f64")),
        }
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
