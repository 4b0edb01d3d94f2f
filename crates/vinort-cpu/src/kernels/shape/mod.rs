//! Shape and data-movement kernels of the default ONNX domain.
//!
//! Ops that only move elements ([Reshape](https://onnx.ai/onnx/operators/onnx__Reshape.html),
//! [Transpose](https://onnx.ai/onnx/operators/onnx__Transpose.html),
//! [Slice](https://onnx.ai/onnx/operators/onnx__Slice.html),
//! [Gather](https://onnx.ai/onnx/operators/onnx__Gather.html), ...) accept every element type,
//! strings included: they describe their moves as a `copy::Step` plan that runs once per
//! storage width. Ops that compute (Range, CumSum, TopK, Scatter reductions) take the numeric
//! types their spec lists. Each file's doc comment names its ops and opsets.
//!
//! Reshape, Flatten, Squeeze, Unsqueeze and Identity never copy: their outputs share storage
//! with their input, as do Slice/Split results that are one contiguous run of the input.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, Tensor, Value};

use crate::kernel::{FnKernel, Kernel, Registry, with_numeric};
use crate::numeric::{Numeric, unsupported_dtype};

pub(crate) mod copy;
mod gather;
mod generate;
mod numeric;
mod reshape;
pub(crate) mod slice;
pub(crate) mod transpose;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    for family in [
        reshape::register,
        transpose::register,
        slice::register,
        gather::register,
        generate::register,
        numeric::register,
    ] {
        family(r);
    }
}

/// Wraps a closure over the inputs as a kernel (the signature pins the closure's lifetimes).
fn kernel(f: impl Fn(&[Option<&Value>]) -> Result<Values> + Send + Sync + 'static) -> Box<dyn Kernel> {
    Box::new(FnKernel(f))
}

/// A single integer from a scalar or one-element tensor (axis, k, depth inputs).
fn scalar_int(t: &Tensor, what: &str) -> Result<i64> {
    match t.to_i64_vec()?.as_slice() {
        [v] => Ok(*v),
        other => Err(Error::invalid(format!("{what} must hold one integer, it holds {}", other.len()))),
    }
}

/// Integers from a 1-D tensor whose element type may also be floating point (OneHot casts).
fn ints_lossy(t: &Tensor) -> Result<Vec<i64>> {
    if t.dtype().is_float() { Ok(t.to_f64_vec()?.into_iter().map(|v| v as i64).collect()) } else { t.to_i64_vec() }
}

/// Normalises axes against a rank, rejecting repeats.
fn norm_axes(axes: &[i64], rank: usize) -> Result<vinort_ir::Shape> {
    let mut out = vinort_ir::Shape::new();
    for &a in axes {
        let a = crate::kernel::norm_axis(a, rank)?;
        if out.contains(&a) {
            return Err(Error::invalid(format!("axis {a} is repeated in {axes:?}")));
        }
        out.push(a);
    }
    Ok(out)
}

/// An index into an axis of extent `dim`, negative counting from the end; an error when out of
/// range (Gather, GatherElements, GatherND and the Scatters all say so).
fn norm_index(i: i64, dim: usize) -> Result<usize> {
    let d = dim as i64;
    if i < -d || i >= d {
        return Err(Error::invalid(format!("index {i} is out of range for an axis of {dim}")));
    }
    Ok(if i < 0 { (i + d) as usize } else { i as usize })
}

/// Converts a non-negative i64 to a dim.
fn to_dim(v: i64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::invalid(format!("{what} must be non-negative, got {v}")))
}

/// A one-element tensor of a numeric or bool type holding `v` (EyeLike's one, Pad's legacy
/// float `value`, Dropout's legacy mask).
fn scalar_of(dtype: DType, v: f64) -> Result<Tensor> {
    if dtype == DType::Bool {
        return Ok(Tensor::scalar(v != 0.0));
    }
    with_numeric!(dtype, |T| Ok(Tensor::scalar(T::from_f64_as(v))), other => Err(unsupported_dtype("this op", other)))
}
