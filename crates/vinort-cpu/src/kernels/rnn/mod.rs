//! Recurrent kernels.
//!
//! - [`recurrent`][recurrent]: [RNN](https://onnx.ai/onnx/operators/onnx__RNN.html),
//!   [GRU](https://onnx.ai/onnx/operators/onnx__GRU.html) and
//!   [LSTM](https://onnx.ai/onnx/operators/onnx__LSTM.html) (opsets 7, 14, 22): every direction,
//!   both layouts, `sequence_lens`, initial states, peepholes, `clip`, `input_forget`,
//!   `linear_before_reset` and the spec's activation functions ([`activation`]).
//!
//! - [`dynamic_lstm`][dynamic_lstm]: com.microsoft DynamicQuantizeLSTM (8-bit weights,
//!   dequantized, then the LSTM above).
//!
//! Dtypes: f32, f64, f16 and bf16. f16 and bf16 are widened to f32 for the computation (so
//! gate sums accumulate in f32) and narrowed back once at the end; f64 computes in f64.
//! Constant f32 weights are packed once for the packed product kernels and the gate
//! activations run over whole vectors ([`step`]); other matrix products go through the `gemm`
//! crate ([`math::matmul`]).

use crate::kernel::Registry;

pub(crate) mod activation;
pub(crate) mod dynamic_lstm;
pub(crate) mod math;
pub(crate) mod recurrent;
mod step;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    recurrent::register(r);
    dynamic_lstm::register(r);
}
