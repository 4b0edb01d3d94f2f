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
//!
//! Resize interpolates in f32 (f64 for f64 data); the other float kernels compute in f64 and
//! round once into the output type.

use vinort_ir::{DType, Error, Result, Tensor};

use crate::kernel::Registry;
#[cfg(test)]
use vinort_ir::tensor::strides_of as strides;

pub mod grid;
pub mod regions;
pub(crate) mod resample;
pub mod resize;
#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    resize::register(r);
    grid::register(r);
    regions::register(r);
}

/// Work (in output elements) below which a kernel stays on the calling thread.
pub(crate) use crate::par::ELEMENTS as PAR_MIN;

/// The type a Resize pass accumulates in: f32, or f64 for f64 data.
pub(crate) use crate::kernels::linalg::common::Real as Acc;

/// A numeric tensor's elements converted to `A` (f32 data is copied without conversion).
pub(crate) fn load_acc<A: Acc>(t: &Tensor) -> Result<Vec<A>> {
    Ok(match t.dtype() {
        DType::F32 => t.as_slice::<f32>()?.iter().map(|v| A::from_f64(*v as f64)).collect(),
        DType::F64 => t.as_slice::<f64>()?.iter().map(|v| A::from_f64(*v)).collect(),
        _ => t.to_f64_vec()?.into_iter().map(A::from_f64).collect(),
    })
}

/// Rounds `v` half to even and clamps it into `lo..=hi` (ONNX's saturating cast to integers).
fn sat(v: f64, lo: f64, hi: f64) -> f64 {
    if v.is_nan() { 0.0 } else { v.round_ties_even().clamp(lo, hi) }
}

/// A tensor of `dtype` made from computed values: floats are rounded, integers rounded half to
/// even and saturated.
pub(crate) fn store_acc<A: Acc>(dtype: DType, shape: &[usize], v: &[A]) -> Result<Tensor> {
    /// Integers: rounded half to even and saturated to `lo..=hi`, then converted by `cast`.
    fn ints<T: vinort_ir::Elem, A: Acc>(shape: &[usize], v: &[A], lo: f64, hi: f64, cast: fn(f64) -> T) -> Tensor {
        Tensor::build::<T>(shape, |o| o.iter_mut().zip(v).for_each(|(o, v)| *o = cast(sat(v.to_f64(), lo, hi))))
    }
    Ok(match dtype {
        DType::F32 => Tensor::build::<f32>(shape, |o| o.iter_mut().zip(v).for_each(|(o, v)| *o = v.to_f64() as f32)),
        DType::F64 => Tensor::build::<f64>(shape, |o| o.iter_mut().zip(v).for_each(|(o, v)| *o = v.to_f64())),
        DType::F16 => Tensor::build::<half::f16>(shape, |o| {
            o.iter_mut().zip(v).for_each(|(o, v)| *o = half::f16::from_f64(v.to_f64()))
        }),
        DType::BF16 => Tensor::build::<half::bf16>(shape, |o| {
            o.iter_mut().zip(v).for_each(|(o, v)| *o = half::bf16::from_f64(v.to_f64()))
        }),
        DType::I8 => ints(shape, v, i8::MIN as f64, i8::MAX as f64, |x| x as i8),
        DType::U8 => ints(shape, v, u8::MIN as f64, u8::MAX as f64, |x| x as u8),
        DType::I16 => ints(shape, v, i16::MIN as f64, i16::MAX as f64, |x| x as i16),
        DType::U16 => ints(shape, v, u16::MIN as f64, u16::MAX as f64, |x| x as u16),
        DType::I32 => ints(shape, v, i32::MIN as f64, i32::MAX as f64, |x| x as i32),
        DType::U32 => ints(shape, v, u32::MIN as f64, u32::MAX as f64, |x| x as u32),
        DType::I64 => ints(shape, v, i64::MIN as f64, i64::MAX as f64, |x| x as i64),
        DType::U64 => ints(shape, v, u64::MIN as f64, u64::MAX as f64, |x| x as u64),
        other => return Err(Error::unsupported(format!("element type {other} is not numeric"))),
    })
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
