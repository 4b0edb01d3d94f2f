//! Helpers shared by kernel families that compute in f64 (Det, the losses, the training
//! optimizers), and the outer/extent/inner split around an axis that the axis-walking kernels
//! use.

use vinort_ir::{DType, Error, Result, Tensor};

/// `(outer, extent, inner)` of a shape around `axis`.
pub(crate) fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// A float tensor's elements as f64 (an error for non-float types).
pub(crate) fn load_f64(t: &Tensor) -> Result<Vec<f64>> {
    if !t.dtype().is_float() {
        return Err(Error::unsupported(format!("element type {} (expected a float type)", t.dtype())));
    }
    t.to_f64_vec()
}

/// A float tensor of `dtype` and `shape` holding `vals` rounded to that type.
pub(crate) fn store_f64(dtype: DType, shape: &[usize], vals: &[f64]) -> Result<Tensor> {
    fn fill<T: vinort_ir::Elem>(shape: &[usize], vals: &[f64], f: impl Fn(f64) -> T) -> Tensor {
        Tensor::build::<T>(shape, |o| o.iter_mut().zip(vals).for_each(|(o, v)| *o = f(*v)))
    }
    if vals.len() != vinort_ir::tensor::numel(shape) {
        return Err(Error::invalid(format!("{} values for shape {shape:?}", vals.len())));
    }
    Ok(match dtype {
        DType::F32 => fill::<f32>(shape, vals, |v| v as f32),
        DType::F64 => fill::<f64>(shape, vals, |v| v),
        DType::F16 => fill::<half::f16>(shape, vals, half::f16::from_f64),
        DType::BF16 => fill::<half::bf16>(shape, vals, half::bf16::from_f64),
        other => return Err(Error::unsupported(format!("element type {other} (expected a float type)"))),
    })
}
