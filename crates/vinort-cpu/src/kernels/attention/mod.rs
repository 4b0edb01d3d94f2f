//! Attention-family kernels.
//!
//! - [`sdpa`][sdpa]: [Attention](https://onnx.ai/onnx/operators/onnx__Attention.html),
//!   opsets 23–latest (3-D and 4-D inputs, grouped-query heads, boolean or additive masks,
//!   causal and sliding-window masking, softcap, KV cache, `nonpad_kv_seqlen`); the per-head
//!   loop is in [`heads`][heads].
//! - [`flex`][flex]: [FlexAttention](https://onnx.ai/onnx/operators/onnx_aionnxpreview_FlexAttention.html)
//!   (`ai.onnx.preview` 1): rank-4 attention with `score_mod`/`prob_mod` subgraphs.
//! - [`rotary`][rotary]: [RotaryEmbedding](https://onnx.ai/onnx/operators/onnx__RotaryEmbedding.html),
//!   opset 23–latest.
//! - [`linear`][linear]: [LinearAttention](https://onnx.ai/onnx/operators/onnx__LinearAttention.html)
//!   and [CausalConvWithState](https://onnx.ai/onnx/operators/onnx__CausalConvWithState.html),
//!   opset 27–latest.
//! - [`swish`][swish]: [Swish](https://onnx.ai/onnx/operators/onnx__Swish.html) (opset 24) and
//!   [SwiGLU](https://onnx.ai/onnx/operators/onnx__SwiGLU.html) (opset 28).
//!
//! All kernels compute in f64 and round to the element type (f32, f16, bf16) at the points
//! where the ONNX reference implementation computes in that type, so half-precision results
//! follow the reference's rounding order instead of drifting from it by an ulp or two.

use vinort_ir::{DType, Error, Result, Tensor};

use crate::kernel::Registry;

pub mod flex;
pub(crate) mod heads;
pub mod linear;
pub mod rotary;
pub mod sdpa;
pub mod swish;

#[cfg(test)]
mod node_tests;

pub(crate) fn register(r: &mut Registry) {
    for family in [sdpa::register, flex::register, linear::register, rotary::register, swish::register] {
        family(r);
    }
}

/// A floating-point element type whose rounding the kernels emulate on f64 values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rnd {
    F64,
    F32,
    F16,
    BF16,
}

impl Rnd {
    /// The rounding of a float element type; other types are unsupported.
    pub(crate) fn of(dt: DType) -> Result<Rnd> {
        Ok(match dt {
            DType::F64 => Rnd::F64,
            DType::F32 => Rnd::F32,
            DType::F16 => Rnd::F16,
            DType::BF16 => Rnd::BF16,
            other => return Err(Error::unsupported(format!("element type {other} (expected a float type)"))),
        })
    }

    /// The rounding of an ONNX `TensorProto` data type code (as in `softmax_precision`).
    pub(crate) fn of_code(code: i64) -> Result<Rnd> {
        Ok(match code {
            1 => Rnd::F32,
            10 => Rnd::F16,
            11 => Rnd::F64,
            16 => Rnd::BF16,
            other => return Err(Error::unsupported(format!("precision type code {other}"))),
        })
    }

    /// The element type whose rounding this is.
    pub(crate) fn dtype(self) -> DType {
        match self {
            Rnd::F64 => DType::F64,
            Rnd::F32 => DType::F32,
            Rnd::F16 => DType::F16,
            Rnd::BF16 => DType::BF16,
        }
    }

    /// Rounds `v` to the nearest value of this type.
    #[inline(always)]
    pub(crate) fn r(self, v: f64) -> f64 {
        match self {
            Rnd::F64 => v,
            Rnd::F32 => v as f32 as f64,
            Rnd::F16 => half::f16::from_f64(v).to_f64(),
            Rnd::BF16 => half::bf16::from_f64(v).to_f64(),
        }
    }

    /// Rounds every value.
    pub(crate) fn apply_all(self, mut v: Vec<f64>) -> Vec<f64> {
        v.iter_mut().for_each(|x| *x = self.r(*x));
        v
    }
}

/// Builds a tensor of a float type from f64 values (rounding each once).
pub(crate) fn store(dt: DType, shape: &[usize], vals: &[f64]) -> Result<Tensor> {
    if vals.len() != shape.iter().product::<usize>() {
        return Err(Error::invalid(format!("{} values for shape {shape:?}", vals.len())));
    }
    Ok(match dt {
        DType::F64 => Tensor::build::<f64>(shape, |o| o.copy_from_slice(vals)),
        DType::F32 => Tensor::build::<f32>(shape, |o| o.iter_mut().zip(vals).for_each(|(o, v)| *o = *v as f32)),
        DType::F16 => Tensor::build::<half::f16>(shape, |o| {
            o.iter_mut().zip(vals).for_each(|(o, v)| *o = half::f16::from_f64(*v))
        }),
        DType::BF16 => Tensor::build::<half::bf16>(shape, |o| {
            o.iter_mut().zip(vals).for_each(|(o, v)| *o = half::bf16::from_f64(*v))
        }),
        other => return Err(Error::unsupported(format!("element type {other} (expected a float type)"))),
    })
}
