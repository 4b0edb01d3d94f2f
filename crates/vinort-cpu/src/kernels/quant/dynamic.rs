//! [DynamicQuantizeLinear](https://onnx.ai/onnx/operators/onnx__DynamicQuantizeLinear.html)
//! (opset 11): uint8 quantization with a scale and zero point computed from the data's range
//! (widened to include 0), all in f32, rounding half to even.

use vinort_ir::{DType, Error, Result, Tensor, Value};

use crate::kernel::{FnKernel, Kernel, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "DynamicQuantizeLinear", factory);
}

fn factory(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(FnKernel(|inputs: &[Option<&Value>]| {
        let x = tensor_in(inputs, 0)?;
        if x.dtype() != DType::F32 {
            return Err(Error::unsupported(format!("DynamicQuantizeLinear of {} (only float)", x.dtype())));
        }
        let (y, scale, zp) = dynamic_quantize(x.as_slice::<f32>()?);
        Ok(vec![Tensor::from_slice(x.shape(), &y)?.into(), Tensor::scalar(scale).into(), Tensor::scalar(zp).into()])
    })))
}

/// Quantized data, scale and zero point of `x`.
pub(crate) fn dynamic_quantize(x: &[f32]) -> (Vec<u8>, f32, u8) {
    let (qmin, qmax) = (0f32, 255f32);
    // NaN propagates into the range as in a max/min reduction.
    let fold = |init: f32, pick: fn(f32, f32) -> f32| {
        x.iter().fold(init, |a, &v| if a.is_nan() || v.is_nan() { f32::NAN } else { pick(a, v) })
    };
    let hi = fold(0.0, f32::max);
    let lo = fold(0.0, f32::min);
    let scale = if hi == lo { 1.0 } else { hi - lo } / (qmax - qmin);
    let zp = (qmin - lo / scale).clamp(qmin, qmax).round_ties_even();
    let y = x.iter().map(|v| ((v / scale).round_ties_even() + zp).clamp(qmin, qmax) as u8).collect();
    (y, scale, zp as u8)
}
