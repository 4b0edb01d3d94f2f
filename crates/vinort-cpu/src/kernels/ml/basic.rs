//! [ArrayFeatureExtractor](https://onnx.ai/onnx/operators/onnx_aionnxml_ArrayFeatureExtractor.html)
//! and [Binarizer](https://onnx.ai/onnx/operators/onnx_aionnxml_Binarizer.html), ai.onnx.ml 1.
//!
//! ArrayFeatureExtractor gathers along the last axis for any element type (strings included).
//! Like onnxruntime and the reference, a 1-D input yields a `[1, k]` output, and indices must
//! lie in `0..last_dim`. Binarizer maps `x > threshold` to 1 and everything else (NaN
//! included) to 0, for every numeric type; integers are compared exactly.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, Tensor, Value};

use super::{ML_DOMAIN, ML_MAX_OPSET, greater_than};
use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, index_below, tensor_in, with_numeric};
use crate::numeric::{One, Zero};

pub(crate) fn register(r: &mut Registry) {
    r.add(ML_DOMAIN, "ArrayFeatureExtractor", 1..=ML_MAX_OPSET, |_| {
        Ok(Box::new(FnKernel(|inputs: &[Option<&Value>]| {
            let x = tensor_in(inputs, 0)?;
            let y = tensor_in(inputs, 1)?;
            Ok(smallvec::smallvec![array_feature_extractor(x, y)?.into()])
        })))
    });
    r.add(ML_DOMAIN, "Binarizer", 1..=ML_MAX_OPSET, binarizer_factory);
}

/// Elements `indices` (any shape, flattened) of the last axis of `x`.
pub fn array_feature_extractor(x: &Tensor, indices: &Tensor) -> Result<Tensor> {
    let Some((&n, outer_dims)) = x.shape().split_last() else {
        return Err(Error::invalid("ArrayFeatureExtractor needs an input of rank 1 or more, got a scalar"));
    };
    let idx =
        indices.to_i64_vec().map_err(|_| Error::invalid(format!("indices must be int64, got {}", indices.dtype())))?;
    let idx: Vec<usize> = idx
        .iter()
        .map(|&i| {
            index_below(i, n).ok_or_else(|| Error::invalid(format!("index {i} is out of range for a last axis of {n}")))
        })
        .collect::<Result<_>>()?;
    let k = idx.len();
    let mut shape: Vec<usize> = if outer_dims.is_empty() { vec![1] } else { outer_dims.to_vec() };
    shape.push(k);
    let rows: usize = outer_dims.iter().product();
    if x.dtype() == DType::String {
        let s = x.as_strings()?;
        let mut out = Vec::with_capacity(rows * k);
        for r in 0..rows {
            out.extend(idx.iter().map(|&i| s[r * n + i].clone()));
        }
        return Tensor::from_strings(&shape, out);
    }
    let sz = x.dtype().size();
    let src = x.as_bytes();
    Tensor::build_raw(x.dtype(), &shape, |o| {
        for r in 0..rows {
            for (j, &i) in idx.iter().enumerate() {
                let (d, s) = ((r * k + j) * sz, (r * n + i) * sz);
                o[d..d + sz].copy_from_slice(&src[s..s + sz]);
            }
        }
    })
}

struct Binarizer {
    threshold: f64,
}

fn binarizer_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let threshold = info.node.attr_or::<f32>("threshold", 0.0)? as f64;
    Ok(Box::new(Binarizer { threshold }))
}

impl Kernel for Binarizer {
    fn run(&self, inputs: &[Option<&Value>], _: &vinort_ir::RunContext) -> Result<Values> {
        Ok(smallvec::smallvec![binarize(tensor_in(inputs, 0)?, self.threshold)?.into()])
    }
}

/// 1 where `x > threshold`, else 0, in `x`'s type.
pub fn binarize(x: &Tensor, threshold: f64) -> Result<Tensor> {
    with_numeric!(x.dtype(), |T| {
        let xs = x.as_slice::<T>()?;
        let (one, zero) = (T::one(), T::zero());
        Ok(Tensor::build::<T>(x.shape(), |o| {
            for (o, v) in o.iter_mut().zip(xs) {
                *o = if greater_than(*v, threshold) { one } else { zero };
            }
        }))
    }, other => Err(Error::unsupported(format!("Binarizer of {other}: only numeric types are supported"))))
}
