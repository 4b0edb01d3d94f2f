//! Loss kernels: [NegativeLogLikelihoodLoss](https://onnx.ai/onnx/operators/onnx__NegativeLogLikelihoodLoss.html)
//! and [SoftmaxCrossEntropyLoss](https://onnx.ai/onnx/operators/onnx__SoftmaxCrossEntropyLoss.html)
//! (opset 12–latest; f32, f64, f16, bf16) in [`nll`][nll].
//!
//! Losses compute in f64 and round to the input type once.

use crate::kernel::Registry;

pub mod nll;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    nll::register(r);
}
