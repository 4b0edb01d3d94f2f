//! [DynamicQuantizeLinear](https://onnx.ai/onnx/operators/onnx__DynamicQuantizeLinear.html)
//! (opset 11): uint8 quantization with a scale and zero point computed from the data's range
//! (widened to include 0), all in f32, rounding half to even.

use rayon::prelude::*;
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
        let y = Tensor::build_full::<u8>(x.shape(), |y| quantize_into(x32, scale, zp, y));
        Ok(smallvec::smallvec![y.into(), Tensor::scalar(scale).into(), Tensor::scalar(zp).into()])
    })))
}

/// Quantized data, scale and zero point of `x`.
pub(crate) fn dynamic_quantize(x: &[f32]) -> (Vec<u8>, f32, u8) {
    let (scale, zp) = scale_and_zero_point(x);
    let mut y = vec![0u8; x.len()];
    quantize_into(x, scale, zp, &mut y);
    (y, scale, zp)
}

/// Elements per parallel task of both passes (a pass does about one flop per element).
const CHUNK: usize = crate::par::ELEMENTWISE_CHUNK * 4;

/// The scale and zero point of `x`'s range widened to include 0; NaN anywhere makes the range
/// NaN, as in a max/min reduction.
fn scale_and_zero_point(x: &[f32]) -> (f32, u8) {
    let (qmin, qmax) = (0f32, 255f32);
    let (hi, lo, nan) = if crate::par::worth(x.len(), crate::par::ELEMENTWISE) {
        x.par_chunks(CHUNK).map(range).reduce(|| (0.0, 0.0, false), |a, b| (a.0.max(b.0), a.1.min(b.1), a.2 | b.2))
    } else {
        range(x)
    };
    let (hi, lo) = if nan { (f32::NAN, f32::NAN) } else { (hi, lo) };
    let scale = if hi == lo { 1.0 } else { hi - lo } / (qmax - qmin);
    let zp = (qmin - lo / scale).clamp(qmin, qmax).round_ties_even();
    (scale, zp as u8)
}

/// `(max(0, x…), min(0, x…), any NaN)`, compiled for AVX-512 when the CPU has it.
fn range(x: &[f32]) -> (f32, f32, bool) {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn avx512(x: &[f32]) -> (f32, f32, bool) {
        range_portable(x)
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx512() {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { avx512(x) };
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2(x: &[f32]) -> (f32, f32, bool) {
        range_portable(x)
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx2() {
        // SAFETY: the CPU running this code supports AVX2 (checked just above).
        return unsafe { avx2(x) };
    }
    range_portable(x)
}

#[inline(always)]
fn range_portable(x: &[f32]) -> (f32, f32, bool) {
    // Sixteen independent lanes so the reduction vectorizes; NaN is tracked apart, because
    // f32::max and f32::min ignore it.
    let (mut hi, mut lo, mut nan) = ([0f32; 16], [0f32; 16], [false; 16]);
    let mut chunks = x.chunks_exact(16);
    for c in &mut chunks {
        for j in 0..16 {
            hi[j] = hi[j].max(c[j]);
            lo[j] = lo[j].min(c[j]);
            nan[j] |= c[j].is_nan();
        }
    }
    for &v in chunks.remainder() {
        hi[0] = hi[0].max(v);
        lo[0] = lo[0].min(v);
        nan[0] |= v.is_nan();
    }
    let mut r = (0f32, 0f32, false);
    for j in 0..16 {
        r = (r.0.max(hi[j]), r.1.min(lo[j]), r.2 | nan[j]);
    }
    r
}

/// `y = saturate(round_half_even(x / scale) + zp)` (NaN to 0), in parallel chunks for a large
/// tensor, each through [`super::round::quantize`] (vectorized).
fn quantize_into(x: &[f32], scale: f32, zp: u8, y: &mut [u8]) {
    let one =
        |(x, y): (&[f32], &mut [u8])| super::round::quantize(x, scale, f32::from(zp), (0.0, 255.0), y, |v| v as u8);
    if crate::par::worth(x.len(), crate::par::ELEMENTWISE) {
        x.par_chunks(CHUNK).zip(y.par_chunks_mut(CHUNK)).for_each(one);
    } else {
        one((x, y));
    }
}
