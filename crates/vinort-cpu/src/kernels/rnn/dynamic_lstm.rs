//! com.microsoft [DynamicQuantizeLSTM](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#com.microsoft.DynamicQuantizeLSTM):
//! the LSTM `onnxruntime.quantization.quantize_dynamic` writes, with 8-bit weights.
//!
//! Inputs: `X, W, R, B, sequence_lens, initial_h, initial_c, P` as ONNX's LSTM, except that
//! `W` (`[num_directions, input_size, 4*hidden_size]`) and `R` (`[num_directions, hidden_size,
//! 4*hidden_size]`) are int8 or uint8 and stored transposed; then `W_scale, W_zero_point,
//! R_scale, R_zero_point`, each `[num_directions]` (per tensor) or `[num_directions,
//! 4*hidden_size]` (per output channel). Gate order and attributes are LSTM's.
//!
//! The weights are dequantized to f32 (`(q - zero_point) * scale`, transposed back to LSTM's
//! layout) and the float LSTM of [`super::recurrent`] runs. ONNX Runtime also quantizes the
//! activations to uint8 step by step; computing them in f32 differs from it by at most its own
//! activation quantization error, the same contract as OpenVINO's conversion of this op
//! (which also dequantizes the weights). The integer path is the Cpu speed issue's.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::recurrent::{Cell, Recurrent};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.add("com.microsoft", "DynamicQuantizeLSTM", 1..=1, |info: &NodeInfo<'_>| {
        let input_forget = info.node.attr_or("input_forget", 0i64)?;
        if !(0..=1).contains(&input_forget) {
            return Err(info.node.error(format!("attribute 'input_forget' must be 0 or 1, got {input_forget}")));
        }
        let lstm = Recurrent::from_node(info, Cell::Lstm { input_forget: input_forget == 1 })?;
        Ok(Box::new(DynamicQuantizeLstm { lstm }))
    });
}

#[derive(Debug)]
struct DynamicQuantizeLstm {
    lstm: Recurrent,
}

impl Kernel for DynamicQuantizeLstm {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let w = Value::Tensor(dequantize(inputs, "W", 1, 8)?);
        let r = Value::Tensor(dequantize(inputs, "R", 2, 10)?);
        let mut lstm_inputs: Vec<Option<&Value>> = (0..8).map(|i| inputs.get(i).copied().flatten()).collect();
        lstm_inputs[1] = Some(&w);
        lstm_inputs[2] = Some(&r);
        self.lstm.run(&lstm_inputs, ctx)
    }
}

/// Quantized weight `q` of input `at` (`[dirs, k, gates]`) with its scale and zero point at
/// `params` and `params + 1`, as f32 `[dirs, gates, k]`.
fn dequantize(inputs: &[Option<&Value>], name: &str, at: usize, params: usize) -> Result<Tensor> {
    let bad = |what: String| Error::invalid(format!("DynamicQuantizeLSTM {name}: {what}"));
    let q = tensor_in(inputs, at)?;
    if !matches!(q.dtype(), DType::I8 | DType::U8) {
        return Err(bad(format!("must be int8 or uint8, got {}", q.dtype())));
    }
    let &[dirs, k, gates] = q.shape() else {
        return Err(bad(format!("must have rank 3 [num_directions, rows, 4*hidden_size], got {:?}", q.shape())));
    };
    let scale = tensor_in(inputs, params)?.to_aligned().to_f64_vec()?;
    let zero = match opt_tensor_in(inputs, params + 1)? {
        Some(z) => z.to_f64_vec()?,
        None => vec![0.0; scale.len()],
    };
    let per_channel = match scale.len() {
        n if n == dirs => false,
        n if n == dirs * gates => true,
        n => return Err(bad(format!("scale has {n} values; {dirs} (per tensor) or {} (per channel)", dirs * gates))),
    };
    if zero.len() != scale.len() {
        return Err(bad(format!("zero point has {} values, scale {}", zero.len(), scale.len())));
    }
    let q = q.to_f64_vec()?;
    let mut out = vec![0f32; q.len()];
    for d in 0..dirs {
        for row in 0..k {
            for g in 0..gates {
                let p = if per_channel { d * gates + g } else { d };
                out[(d * gates + g) * k + row] = ((q[(d * k + row) * gates + g] - zero[p]) * scale[p]) as f32;
            }
        }
    }
    Tensor::from_vec(&[dirs, gates, k], out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-channel dequantization transposes `[dirs, k, gates]` to `[dirs, gates, k]` and
    /// applies channel `g`'s scale and zero point (values worked out by hand).
    #[test]
    fn weights_dequantize_per_channel_and_transpose() {
        let q = Value::Tensor(Tensor::from_vec(&[1, 2, 3], vec![1i8, 2, 3, 4, 5, 6]).unwrap());
        let scale = Value::Tensor(Tensor::from_vec(&[1, 3], vec![1.0f32, 0.5, 2.0]).unwrap());
        let zero = Value::Tensor(Tensor::from_vec(&[1, 3], vec![0i8, 1, -1]).unwrap());
        let inputs = [Some(&q), Some(&scale), Some(&zero)];
        let w = dequantize(&inputs, "W", 0, 1).unwrap();
        assert_eq!(w.shape(), [1, 3, 2]);
        // Row-major [g][k]: channel 0 (scale 1, zp 0): 1, 4; channel 1 (0.5, 1): 0.5, 2;
        // channel 2 (2, -1): 8, 14.
        assert_eq!(w.to_vec::<f32>().unwrap(), [1.0, 4.0, 0.5, 2.0, 8.0, 14.0]);
    }

    #[test]
    fn a_scale_of_the_wrong_size_is_an_error_naming_the_weight() {
        let q = Value::Tensor(Tensor::from_vec(&[1, 2, 3], vec![0u8; 6]).unwrap());
        let scale = Value::Tensor(Tensor::from_vec(&[2], vec![1.0f32, 1.0]).unwrap());
        let e = dequantize(&[Some(&q), Some(&scale), None], "R", 0, 1).unwrap_err().to_string();
        assert!(e.contains("DynamicQuantizeLSTM R: scale has 2 values"), "{e}");
    }
}
