//! ONNX Runtime's quantized activations (`com.microsoft`, opset 1; see
//! [ContribOperators.md](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)),
//! u8 and i8, inputs `X, X_scale, X_zero_point, Y_scale, Y_zero_point`:
//!
//! - QLinearSigmoid, QLinearLeakyRelu (`alpha`, default 0.01): ONNX Runtime's 256-entry lookup
//!   table — every possible input dequantized in f32, mapped, quantized (round half to even,
//!   saturate). ONNX Runtime's logistic is MLAS's polynomial; a value within an ulp of a half
//!   step can round the other way, one quantization step.
//! - QLinearSoftmax (`axis`, `opset`): before opset 13 the input is seen as 2-D at `axis`
//!   (default 1); from 13 on, softmax runs over `axis` alone (default -1). As ONNX Runtime
//!   computes it: `e(x) = exp((x − max + shift)·x_scale)` from a table in f64 stored as f32
//!   (`shift` keeps the row sum in f32 range), summed in f32 in order, and
//!   `y = round(e(x) · ⌊1 / y_scale⌋ / Σe) + y_zero_point`. `x_zero_point` cancels out. The
//!   saturation is ONNX Runtime's too: u8 results above 255 become 255; i8 results are
//!   truncated to 8 bits (above 255 giving -1), so an i8 output whose zero point is not -128
//!   can wrap exactly as ONNX Runtime's does.

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{Attr, DType, Error, Result, RunContext, Value};

use super::qlinear::{Q8, apply_table, lookup_table, qrange, scale, zero_point};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};
use crate::kernels::quant::{load_i32, store_int};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "QLinearSigmoid", |i| table_factory(i, Act::Sigmoid));
    r.op("com.microsoft", "QLinearLeakyRelu", |i| table_factory(i, Act::LeakyRelu(0.01)));
    r.op("com.microsoft", "QLinearSoftmax", softmax_factory);
}

/// Checks the quantized inputs' known types (X and both zero points).
fn check_q8(info: &NodeInfo<'_>) -> Result<()> {
    for i in [0, 2, 4] {
        if let Some(d) = info.input_dtype(i) {
            qrange(d, &Q8, &format!("input {i}")).map_err(|e| info.node.error(e.to_string()))?;
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Act {
    Sigmoid,
    LeakyRelu(f32),
}

fn table_factory(info: &NodeInfo<'_>, act: Act) -> Result<Box<dyn Kernel>> {
    check_q8(info)?;
    Ok(Box::new(match act {
        Act::LeakyRelu(default) => Act::LeakyRelu(match info.node.attr_raw("alpha") {
            None => default,
            Some(Attr::Float(a)) => *a,
            Some(other) => {
                return Err(info.node.error(format!("attribute 'alpha' must be a float, found {}", other.kind())));
            }
        }),
        a => a,
    }))
}

impl Kernel for Act {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let d = x.dtype();
        let range = qrange(d, &Q8, "X")?;
        let xs = scale(tensor_in(inputs, 1)?, "X_scale")?;
        let xz = zero_point(opt_tensor_in(inputs, 2)?, d, "X_zero_point")?;
        let ys = scale(tensor_in(inputs, 3)?, "Y_scale")?;
        let yz = zero_point(opt_tensor_in(inputs, 4)?, d, "Y_zero_point")?;
        let table = match *self {
            Act::Sigmoid => lookup_table(range, (xs, xz), (ys, yz), range, |v| 1.0 / (1.0 + (-v).exp())),
            Act::LeakyRelu(alpha) => {
                lookup_table(range, (xs, xz), (ys, yz), range, |v| if v >= 0.0 { v } else { v * alpha })
            }
        };
        Ok(smallvec::smallvec![apply_table(x, range.0, &table, d)?.into()])
    }
}

struct Softmax {
    axis: Option<i64>,
    opset: i64,
}

fn softmax_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_q8(info)?;
    let n = info.node;
    Ok(Box::new(Softmax { axis: n.attr::<i64>("axis")?, opset: n.req_attr::<i64>("opset")? }))
}

/// ONNX Runtime's exp table for rows of `len`: entry `i` is `e(x)` for `x − max = i − 255`.
fn exp_table(x_scale: f32, len: usize) -> Vec<f32> {
    // Leaves 5 e-folds of headroom so a row's sum stays finite in f32.
    let shift = ((f32::MAX / len as f32) as f64).ln();
    let shift = (shift - 5.0).max(0.0) / x_scale as f64;
    (0..256).map(|i| ((i as f64 - 255.0 + shift) * x_scale as f64).exp() as f32).collect()
}

impl Kernel for Softmax {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let d = x.dtype();
        qrange(d, &Q8, "X")?;
        let xs = scale(tensor_in(inputs, 1)?, "X_scale")?;
        // X_zero_point is read only for its type: it cancels in x − max.
        zero_point(opt_tensor_in(inputs, 2)?, d, "X_zero_point")?;
        let ys = scale(tensor_in(inputs, 3)?, "Y_scale")?;
        let yz = zero_point(opt_tensor_in(inputs, 4)?, d, "Y_zero_point")?;
        let shape = x.shape();
        if shape.is_empty() {
            return Err(Error::invalid("QLinearSoftmax input must have rank >= 1"));
        }
        let legacy = self.opset < 13;
        let axis = norm_axis(self.axis.unwrap_or(if legacy { 1 } else { -1 }), shape.len())?;
        // Rows of `len` elements `inner` apart: the flattened tail before 13, one axis after.
        let (len, inner) = if legacy { (numel(&shape[axis..]), 1) } else { (shape[axis], numel(&shape[axis + 1..])) };
        let xv = load_i32(x)?;
        let mut out = vec![0i32; xv.len()];
        if !xv.is_empty() {
            let table = exp_table(xs, len);
            let y_mult = (1.0f32 / ys).floor();
            let signed = d == DType::I8;
            let mut row = Vec::with_capacity(len);
            for o in 0..xv.len() / (len * inner) {
                for i in 0..inner {
                    let at = |k: usize| (o * len + k) * inner + i;
                    row.clear();
                    row.extend((0..len).map(|k| xv[at(k)]));
                    let max = row.iter().copied().max().unwrap_or(0);
                    let e = |v: i32| table[(v - max + 255) as usize];
                    let sum: f32 = row.iter().fold(0.0, |s, v| s + e(*v));
                    for (k, v) in row.iter().enumerate() {
                        let q = (e(*v) * y_mult / sum).round_ties_even();
                        out[at(k)] = if signed {
                            // ONNX Runtime converts to int32, maps above 255 to 255 and keeps
                            // the low 8 bits.
                            let q = (q as i32).saturating_add(yz);
                            (if q > 255 { 255 } else { q }) as u8 as i8 as i32
                        } else {
                            // u8: converted to uint32 (negative wraps high), above 255 → 255.
                            let q = (q as i64 as u32).wrapping_add(yz as u32);
                            q.min(255) as i32
                        };
                    }
                }
            }
        }
        Ok(smallvec::smallvec![store_int(d, shape, &out)?.into()])
    }
}
