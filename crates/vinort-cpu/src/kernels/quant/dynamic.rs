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
        let x32 = x.as_slice::<f32>()?;
        let (scale, zp) = scale_and_zero_point(x32);
        let y = Tensor::build::<u8>(x.shape(), |y| quantize_into(x32, scale, zp, y));
        Ok(vec![y.into(), Tensor::scalar(scale).into(), Tensor::scalar(zp).into()])
    })))
}

/// Quantized data, scale and zero point of `x`.
pub(crate) fn dynamic_quantize(x: &[f32]) -> (Vec<u8>, f32, u8) {
    let (scale, zp) = scale_and_zero_point(x);
    let mut y = vec![0u8; x.len()];
    quantize_into(x, scale, zp, &mut y);
    (y, scale, zp)
}

/// The scale and zero point of `x`'s range widened to include 0; NaN anywhere makes the range
/// NaN, as in a max/min reduction.
fn scale_and_zero_point(x: &[f32]) -> (f32, u8) {
    let (qmin, qmax) = (0f32, 255f32);
    // Eight independent lanes so the reduction vectorizes; NaN is tracked apart, because
    // f32::max and f32::min ignore it.
    let (mut hi, mut lo, mut nan) = ([0f32; 8], [0f32; 8], false);
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for j in 0..8 {
            hi[j] = hi[j].max(c[j]);
            lo[j] = lo[j].min(c[j]);
            nan |= c[j].is_nan();
        }
    }
    for &v in chunks.remainder() {
        hi[0] = hi[0].max(v);
        lo[0] = lo[0].min(v);
        nan |= v.is_nan();
    }
    let (hi, lo) = if nan {
        (f32::NAN, f32::NAN)
    } else {
        (hi.iter().copied().fold(0.0, f32::max), lo.iter().copied().fold(0.0, f32::min))
    };
    let scale = if hi == lo { 1.0 } else { hi - lo } / (qmax - qmin);
    let zp = (qmin - lo / scale).clamp(qmin, qmax).round_ties_even();
    (scale, zp as u8)
}

/// `y = saturate(round_half_even(x / scale) + zp)`, compiled for AVX-512 when the CPU has it
/// (where rounding is one instruction; the baseline build calls libm's rintf per element).
fn quantize_into(x: &[f32], scale: f32, zp: u8, y: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { quantize_avx512(x, scale, zp, y) };
    }
    quantize_portable(x, scale, zp, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn quantize_avx512(x: &[f32], scale: f32, zp: u8, y: &mut [u8]) {
    quantize_portable(x, scale, zp, y)
}

#[inline(always)]
fn quantize_portable(x: &[f32], scale: f32, zp: u8, y: &mut [u8]) {
    let zp = f32::from(zp);
    for (y, v) in y.iter_mut().zip(x) {
        *y = ((v / scale).round_ties_even() + zp).clamp(0.0, 255.0) as u8;
    }
}
