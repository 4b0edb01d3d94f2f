//! ONNX Runtime's transformer-fusion contrib ops (`com.microsoft`, opset 1), as its
//! [ContribOperators](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)
//! documentation defines them and its CPU kernels (onnxruntime/contrib_ops/cpu) behave:
//!
//! - [`norm`][norm]: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
//!   EmbedLayerNormalization, GroupNorm; SimplifiedLayerNormalization and the pre-17
//!   LayerNormalization (which ONNX Runtime registers in the default ONNX domain) run on the
//!   norm family's LayerNormalization kernel.
//! - [`gelu`][gelu]: Gelu, BiasGelu, FastGelu, BiasAdd, BiasSplitGelu, BiasSoftmax.
//! - [`fused`][fused]: FusedMatMul, FusedGemm, FusedConv, GemmFastGelu, built on the linalg
//!   and conv kernels.
//! - [`rotary`][rotary]: com.microsoft RotaryEmbedding.
//! - [`attention`][attention]: Attention, QAttention, MultiHeadAttention, GroupQueryAttention.
//! - [`nbits`][nbits], [`qmatmul`][qmatmul], [`qdq`][qdq]: MatMulNBits, DynamicQuantizeMatMul,
//!   MatMulIntegerToFloat, QGemm, com.microsoft QuantizeLinear/DequantizeLinear and
//!   QEmbedLayerNormalization.
//! - [`qlinear`][qlinear], [`qlinear_act`][qlinear_act], [`qlinear_pool`][qlinear_pool]: the
//!   QOperator family (QLinearAdd/Mul/Concat, channels-last QLinearConv, QLinearSigmoid,
//!   QLinearLeakyRelu, QLinearSoftmax, QLinearGlobalAveragePool, QLinearAveragePool).
//!
//! Element types are f32, f16 and bf16 (and f64 where it costs nothing); values are computed
//! in f64 and rounded once to the element type, as the attention family does, so a half type
//! rounds where ONNX Runtime's f32 computation rounds (once, at the output).

use vinort_ir::{DType, Error, Result, Tensor};

use crate::kernel::Registry;

pub mod attention;
pub mod fused;
pub mod gelu;
pub mod nbits;
pub mod norm;
pub mod qdq;
pub mod qlinear;
pub mod qlinear_act;
pub mod qlinear_pool;
pub mod qmatmul;
pub mod rotary;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_qlinear;
#[cfg(test)]
mod tests_quant;

pub(crate) fn register(r: &mut Registry) {
    for family in [
        norm::register,
        gelu::register,
        fused::register,
        rotary::register,
        nbits::register,
        qmatmul::register,
        qdq::register,
        attention::register,
        qlinear::register,
        qlinear_act::register,
        qlinear_pool::register,
    ] {
        family(r);
    }
}

pub(crate) use crate::kernels::attention::store;

/// A float tensor's values as f64, or an error naming what it is.
pub(crate) fn floats(t: &Tensor, what: &str) -> Result<Vec<f64>> {
    if !t.dtype().is_float() {
        return Err(Error::invalid(format!("{what} must be a float tensor, got {}", t.dtype())));
    }
    t.to_f64_vec()
}

/// Refuses at compile time a known input type outside `ok`.
pub(crate) fn check_types(info: &crate::kernel::NodeInfo<'_>, inputs: &[usize], ok: &[DType]) -> Result<()> {
    for &i in inputs {
        if let Some(d) = info.input_dtype(i)
            && !ok.contains(&d)
        {
            return Err(info.node.error(format!("input {i} of type {d} is not supported (expected one of {ok:?})")));
        }
    }
    Ok(())
}

/// The float element types of these kernels.
pub(crate) const FLOATS: [DType; 4] = [DType::F32, DType::F16, DType::BF16, DType::F64];

/// `a` and `b` must share one element type.
pub(crate) fn same_type(a: &Tensor, b: &Tensor, what: &str) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::invalid(format!("{what} has type {}, the input {}", b.dtype(), a.dtype())));
    }
    Ok(())
}

/// The tanh approximation of GELU (FastGelu, GemmFastGelu).
pub(crate) fn fast_gelu(x: f64) -> f64 {
    const C: f64 = 0.797_884_560_802_865_4; // sqrt(2 / pi)
    0.5 * x * (1.0 + (C * (x + 0.044715 * x * x * x)).tanh())
}

/// The exact (erf) GELU.
pub(crate) fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + crate::kernels::elementwise::num::erf_f64(x * std::f64::consts::FRAC_1_SQRT_2))
}
