//! Image and geometry kernels.
//!
//! - [`resize`] holds [Resize](https://onnx.ai/onnx/operators/onnx__Resize.html) (10, 11, 13, 18, 19)
//!   and the deprecated [Upsample](https://onnx.ai/onnx/operators/onnx__Upsample.html) (7, 9);
//!   [`resample`] runs their per-axis passes.
//! - [`grid`] holds [GridSample](https://onnx.ai/onnx/operators/onnx__GridSample.html) (16, 20, 22)
//!   and [AffineGrid](https://onnx.ai/onnx/operators/onnx__AffineGrid.html) (20).
//! - [`regions`] holds [Col2Im](https://onnx.ai/onnx/operators/onnx__Col2Im.html) (18),
//!   [CenterCropPad](https://onnx.ai/onnx/operators/onnx__CenterCropPad.html) (18),
//!   [RoiAlign](https://onnx.ai/onnx/operators/onnx__RoiAlign.html) (10, 16, 22) and
//!   [NonMaxSuppression](https://onnx.ai/onnx/operators/onnx__NonMaxSuppression.html) (10, 11).
//! - [`decode`] holds [ImageDecoder](https://onnx.ai/onnx/operators/onnx__ImageDecoder.html) (20).
//!
//! Resize interpolates in f32 (f64 for f64 data); the other float kernels compute in f64 and
//! round once into the output type.

use vinort_ir::{DType, Error, Result, Tensor};

use crate::kernel::{Registry, with_numeric};
use crate::numeric::Numeric;
#[cfg(test)]
use vinort_ir::tensor::strides_of as strides;

pub mod decode;
pub mod grid;
pub mod regions;
pub(crate) mod resample;
pub mod resize;
#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    for family in [resize::register, grid::register, regions::register, decode::register] {
        family(r);
    }
}

/// Work (in output elements) below which a kernel stays on the calling thread.
pub(crate) use crate::par::ELEMENTS as PAR_MIN;

/// The type a Resize pass accumulates in: f32, or f64 for f64 data.
pub(crate) use crate::kernels::linalg::common::Real as Acc;

/// A numeric tensor's elements converted to `A`.
pub(crate) fn load_acc<A: Acc>(t: &Tensor) -> Result<Vec<A>> {
    with_numeric!(t.dtype(), |T| Ok(t.as_slice::<T>()?.iter().map(|v| A::from_f64(v.as_f64())).collect()),
        other => Err(Error::unsupported(format!("element type {other} is not numeric"))))
}

/// A tensor of `dtype` made from computed values: floats are rounded, integers rounded half to
/// even and saturated (NaN gives 0), as ONNX's casts to integers do.
pub(crate) fn store_acc<A: Acc>(dtype: DType, shape: &[usize], v: &[A]) -> Result<Tensor> {
    with_numeric!(dtype, |T| {
        let round = !T::IS_FLOAT;
        Ok(Tensor::build::<T>(shape, |o| {
            o.iter_mut().zip(v).for_each(|(o, v)| {
                let x = v.to_f64();
                *o = T::from_f64_as(if round { x.round_ties_even() } else { x })
            })
        }))
    }, other => Err(Error::unsupported(format!("element type {other} is not numeric"))))
}

/// The bytes of one element of `dtype` holding `v` (for fill values), if `dtype` is numeric.
pub(crate) fn scalar_bytes(dtype: DType, v: f64) -> Result<Vec<u8>> {
    if dtype == DType::Bool {
        return Ok(vec![(v != 0.0) as u8]);
    }
    let t = store_acc::<f64>(dtype, &[1], &[v])?;
    Ok(t.as_bytes().to_vec())
}

/// True for the element types the float kernels accept.
pub(crate) fn is_float(d: DType) -> bool {
    d.is_float()
}

/// Refuses a non-float tensor for a float-only kernel.
pub(crate) fn need_float(t: &Tensor, what: &str) -> Result<()> {
    if is_float(t.dtype()) {
        Ok(())
    } else {
        Err(Error::unsupported(format!("{what} of type {}: only float types are implemented", t.dtype())))
    }
}

/// Converts a non-negative i64 extent to usize.
pub(crate) fn extent(v: i64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::invalid(format!("{what} must be non-negative, got {v}")))
}
