//! Quantization kernels.
//!
//! - [`qdq`][qdq]: [QuantizeLinear](https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html) and
//!   [DequantizeLinear](https://onnx.ai/onnx/operators/onnx__DequantizeLinear.html) (10–28):
//!   per-tensor, per-axis and blocked scales, every integer, sub-byte and small-float type.
//! - [`dynamic`][dynamic]:
//!   [DynamicQuantizeLinear](https://onnx.ai/onnx/operators/onnx__DynamicQuantizeLinear.html) (11).
//! - [`qmatmul`][qmatmul]: [QLinearMatMul](https://onnx.ai/onnx/operators/onnx__QLinearMatMul.html)
//!   (10, 21) and [MatMulInteger](https://onnx.ai/onnx/operators/onnx__MatMulInteger.html) (10).
//! - [`qconv`][qconv]:
//!   [ConvInteger](https://onnx.ai/onnx/operators/onnx__ConvInteger.html) and
//!   [QLinearConv](https://onnx.ai/onnx/operators/onnx__QLinearConv.html) (10).
//! - [`minifloat`][minifloat]: f32 ⇄ float8 / float6 / float4 conversion.

use vinort_ir::{DType, Error, Result, Tensor};

use crate::kernel::Registry;
use crate::numeric;

pub mod dynamic;
pub mod minifloat;
pub(crate) mod packed;
pub mod qconv;
pub(crate) mod qconv_nhwc;
mod qconv_prepared;
pub mod qdq;
pub mod qmatmul;
pub(crate) mod round;
#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    for family in [qdq::register, dynamic::register, qmatmul::register, qconv::register] {
        family(r);
    }
}

/// The family's old threshold name, kept for `qconv` until it moves to [`crate::par`].
pub(crate) use crate::par::ELEMENTS as PAR_MIN;

/// Inclusive range of an integer quantized type (8 bits or fewer, or 16 bits).
pub(crate) fn int_range(d: DType) -> Option<(i32, i32)> {
    Some(match d {
        DType::U8 => (0, 255),
        DType::I8 => (-128, 127),
        DType::U16 => (0, 65535),
        DType::I16 => (-32768, 32767),
        DType::U4 => (0, 15),
        DType::I4 => (-8, 7),
        DType::U2 => (0, 3),
        DType::I2 => (-2, 1),
        _ => return None,
    })
}

/// Elements of any numeric tensor as f32: floats converted, integers cast, small floats
/// decoded (E8M0 as a power of two).
pub(crate) fn load_f32(t: &Tensor) -> Result<Vec<f32>> {
    let d = t.dtype();
    if let Some(f) = minifloat::format_of(d) {
        return Ok(t.as_slice::<u8>()?.iter().map(|b| f.decode(*b)).collect());
    }
    Ok(match d {
        DType::F32 => t.to_vec::<f32>()?,
        DType::F16 | DType::BF16 => numeric::to_f32_vec(t)?,
        DType::F64 => t.as_slice::<f64>()?.iter().map(|v| *v as f32).collect(),
        DType::F8E8M0 => t.as_slice::<u8>()?.iter().map(|b| minifloat::decode_e8m0(*b)).collect(),
        DType::I32 => t.as_slice::<i32>()?.iter().map(|v| *v as f32).collect(),
        _ => load_i32(t)?.into_iter().map(|v| v as f32).collect(),
    })
}

/// The element of a one-element integer tensor of 32 bits or fewer (a zero point), read in
/// place: [`load_i32`] would allocate a `Vec` every run.
pub(crate) fn one_i32(t: &Tensor) -> Result<i32> {
    let b = t.as_bytes();
    if t.len() != 1 || b.len() != t.dtype().size() {
        return Err(Error::invalid(format!("expected one element, got shape {:?}", t.shape())));
    }
    Ok(match t.dtype() {
        DType::I8 | DType::I4 | DType::I2 => i32::from(b[0] as i8),
        DType::U8 | DType::U4 | DType::U2 => i32::from(b[0]),
        DType::I16 => i32::from(i16::from_ne_bytes([b[0], b[1]])),
        DType::U16 => i32::from(u16::from_ne_bytes([b[0], b[1]])),
        DType::I32 => i32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
        _ => load_i32(t)?.first().copied().unwrap_or(0),
    })
}

/// The element of a one-element float tensor (a scale) as f32, read in place for f32.
pub(crate) fn one_f32(t: &Tensor) -> Result<f32> {
    let b = t.as_bytes();
    if t.len() != 1 {
        return Err(Error::invalid(format!("expected one element, got shape {:?}", t.shape())));
    }
    match (t.dtype(), b) {
        (DType::F32, [a, b, c, d]) => Ok(f32::from_ne_bytes([*a, *b, *c, *d])),
        _ => Ok(load_f32(t)?.first().copied().unwrap_or(0.0)),
    }
}

/// Elements of an integer tensor of 32 bits or fewer as i32.
pub(crate) fn load_i32(t: &Tensor) -> Result<Vec<i32>> {
    Ok(match t.dtype() {
        DType::I8 | DType::I4 | DType::I2 => t.as_slice::<i8>()?.iter().map(|v| *v as i32).collect(),
        DType::U8 | DType::U4 | DType::U2 => t.as_slice::<u8>()?.iter().map(|v| *v as i32).collect(),
        DType::I16 => t.as_slice::<i16>()?.iter().map(|v| *v as i32).collect(),
        DType::U16 => t.as_slice::<u16>()?.iter().map(|v| *v as i32).collect(),
        DType::I32 => t.to_vec::<i32>()?,
        other => return Err(Error::invalid(format!("expected an integer tensor, got {other}"))),
    })
}

/// A tensor of integer type `d` (one of [`int_range`]'s types, or i32) from values already
/// within its range.
pub(crate) fn store_int(d: DType, shape: &[usize], v: &[i32]) -> Result<Tensor> {
    fn fill<T>(o: &mut [T], v: &[i32], f: impl Fn(i32) -> T) {
        for (o, v) in o.iter_mut().zip(v) {
            *o = f(*v);
        }
    }
    match d {
        DType::I8 | DType::I4 | DType::I2 => Tensor::build_as::<i8>(d, shape, |o| fill(o, v, |x| x as i8)),
        DType::U8 | DType::U4 | DType::U2 => Tensor::build_as::<u8>(d, shape, |o| fill(o, v, |x| x as u8)),
        DType::I16 => Ok(Tensor::build::<i16>(shape, |o| fill(o, v, |x| x as i16))),
        DType::U16 => Ok(Tensor::build::<u16>(shape, |o| fill(o, v, |x| x as u16))),
        DType::I32 => Tensor::from_slice(shape, v),
        other => Err(Error::unsupported(format!("integer output of type {other}"))),
    }
}

/// A float tensor of type `d` (f32, f16, bf16 or f64) from f32 values.
pub(crate) fn store_float(d: DType, shape: &[usize], v: &[f32]) -> Result<Tensor> {
    fn fill<T>(o: &mut [T], v: &[f32], f: impl Fn(f32) -> T) {
        for (o, v) in o.iter_mut().zip(v) {
            *o = f(*v);
        }
    }
    Ok(match d {
        DType::F32 | DType::F16 | DType::BF16 => numeric::from_f32_slice(d, shape, v)?,
        DType::F64 => Tensor::build::<f64>(shape, |o| fill(o, v, |x| x as f64)),
        other => return Err(Error::unsupported(format!("float output of type {other}"))),
    })
}

/// Rounds an f32 to the precision of a float type (identity for f32 and wider).
pub(crate) fn round_to(d: DType, x: f32) -> f32 {
    match d {
        DType::F16 => numeric::widen_elem(numeric::narrow_elem::<half::f16>(x)),
        DType::BF16 => numeric::widen_elem(numeric::narrow_elem::<half::bf16>(x)),
        _ => x,
    }
}

pub(crate) use crate::kernels::elementwise::broadcast::expand;
