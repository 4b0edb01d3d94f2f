//! `ai.onnx.ml` kernels and the default domain's signal helpers.
//!
//! - [`basic`][basic]: [ArrayFeatureExtractor](https://onnx.ai/onnx/operators/onnx_aionnxml_ArrayFeatureExtractor.html)
//!   and [Binarizer](https://onnx.ai/onnx/operators/onnx_aionnxml_Binarizer.html) (ai.onnx.ml 1).
//! - [`label_encoder`][label_encoder]: [LabelEncoder](https://onnx.ai/onnx/operators/onnx_aionnxml_LabelEncoder.html)
//!   (ai.onnx.ml 1, 2, 4): string, int64/int32/int16 and float/double keys and values, including
//!   opset 4's `keys_tensor` / `values_tensor` / `default_tensor`.
//! - [`tree`][tree]: [TreeEnsemble](https://onnx.ai/onnx/operators/onnx_aionnxml_TreeEnsemble.html)
//!   (ai.onnx.ml 5): every node mode including set membership, every aggregate function and post
//!   transform, float / double / float16 inputs.
//! - [`signal`][signal]: [BlackmanWindow](https://onnx.ai/onnx/operators/onnx__BlackmanWindow.html),
//!   [HammingWindow](https://onnx.ai/onnx/operators/onnx__HammingWindow.html),
//!   [HannWindow](https://onnx.ai/onnx/operators/onnx__HannWindow.html) and
//!   [MelWeightMatrix](https://onnx.ai/onnx/operators/onnx__MelWeightMatrix.html) (17), any numeric
//!   output type.
//!
//! The `ai.onnx.ml` ops are registered under that domain string as written in models; the
//! registry only folds `ai.onnx` into the default domain.

use vinort_ir::{DType, Error, Result, Tensor};

use crate::kernel::{Registry, with_numeric};
use crate::numeric::Numeric;

pub mod basic;
pub mod label_encoder;
pub mod signal;
#[cfg(test)]
mod tests;
pub mod tree;

/// The domain of the traditional-ML operators.
pub(crate) const ML_DOMAIN: &str = "ai.onnx.ml";

/// Highest `ai.onnx.ml` opset vinort knows (ONNX 1.23).
pub(crate) const ML_MAX_OPSET: i64 = 5;

pub(crate) fn register(r: &mut Registry) {
    for family in [basic::register, label_encoder::register, tree::register, signal::register] {
        family(r);
    }
}

/// `x > t`, exact for every type: integers are not rounded through f64 (Binarizer's threshold
/// is a float attribute, its input any numeric type).
pub(crate) fn greater_than<T: Numeric>(x: T, t: f64) -> bool {
    if T::IS_FLOAT {
        return x.as_f64() > t;
    }
    // For an integer x and a finite t, x > t exactly when x > floor(t); floor(t) is an
    // integer-valued f64 and converts to i128 exactly when within its range.
    if t.is_nan() {
        return false;
    }
    let f = t.floor();
    if f >= 1.8e19 {
        false
    } else if f < -1.8e19 {
        true
    } else {
        x.to_i128().unwrap_or_default() > (f as i128)
    }
}

/// True for the element types [`store_f64`] can write.
pub(crate) fn is_numeric(d: DType) -> bool {
    d.is_float() || d.is_int()
}

/// A tensor of a numeric `dtype` holding `v` converted as Rust's `as` does
/// ([`Numeric::from_f64_as`]: floats round, integers truncate toward zero and saturate).
pub(crate) fn store_f64(dtype: DType, shape: &[usize], v: &[f64]) -> Result<Tensor> {
    if v.len() != shape.iter().product::<usize>() {
        return Err(Error::invalid(format!("{} values cannot fill shape {shape:?}", v.len())));
    }
    with_numeric!(dtype, |T| Ok(Tensor::build::<T>(shape, |o| {
        for (o, v) in o.iter_mut().zip(v) {
            *o = T::from_f64_as(*v);
        }
    })), other => Err(Error::unsupported(format!("element type {other} is not numeric"))))
}

/// The element type named by an `output_datatype` attribute, which must be numeric.
pub(crate) fn numeric_dtype(code: i64) -> Result<DType> {
    i32::try_from(code)
        .ok()
        .and_then(DType::from_onnx)
        .filter(|d| is_numeric(*d))
        .ok_or_else(|| Error::invalid(format!("output_datatype {code} is not a numeric ONNX element type")))
}

/// The single integer held by a scalar (or one-element) tensor input.
pub(crate) fn scalar_i64(t: &Tensor, what: &str) -> Result<i64> {
    if t.len() != 1 {
        return Err(Error::invalid(format!("{what} must hold exactly one value, got shape {:?}", t.shape())));
    }
    let v =
        t.to_i64_vec().map_err(|_| Error::invalid(format!("{what} must be an integer tensor, got {}", t.dtype())))?;
    Ok(v[0])
}

/// The single float held by a scalar (or one-element) tensor input.
pub(crate) fn scalar_f64(t: &Tensor, what: &str) -> Result<f64> {
    if t.len() != 1 {
        return Err(Error::invalid(format!("{what} must hold exactly one value, got shape {:?}", t.shape())));
    }
    Ok(t.to_f64_vec()?[0])
}
