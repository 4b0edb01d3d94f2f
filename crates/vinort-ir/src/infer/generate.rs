//! Rules of ops that generate data: the random ops, EyeLike, the window functions,
//! MelWeightMatrix, and the spectral ops DFT and STFT.
//!
//! The random ops' element type is the `dtype` attribute; its default differs: float for
//! [RandomNormal]/[RandomUniform], the input's type for the `Like` variants and [Bernoulli],
//! int32 for [Multinomial].
//!
//! [RandomNormal]: https://onnx.ai/onnx/operators/onnx__RandomNormal.html
//! [RandomUniform]: https://onnx.ai/onnx/operators/onnx__RandomUniform.html
//! [Bernoulli]: https://onnx.ai/onnx/operators/onnx__Bernoulli.html
//! [Multinomial]: https://onnx.ai/onnx/operators/onnx__Multinomial.html

use super::InferCtx;
use super::rules::{Out, norm_axis, tensor};
use crate::dtype::DType;
use crate::error::Result;
use crate::value::{Dim, ValueType};

/// An element-type attribute (`dtype`, `output_datatype`), `None` when absent.
fn dtype_attr(c: &InferCtx<'_>, name: &str) -> Result<Option<DType>> {
    match c.node.attr::<i64>(name)? {
        None => Ok(None),
        Some(code) => DType::from_onnx(code as i32)
            .map(Some)
            .ok_or_else(|| c.node.error(format!("{name} {code} is no ONNX data type"))),
    }
}

/// A constant scalar (or one-element) integer input as a dim.
fn const_dim(c: &InferCtx<'_>, i: usize) -> Dim {
    match c.const_ints(i).as_deref() {
        Some([v]) if *v >= 0 => Dim::Fixed(*v as usize),
        _ => Dim::Unknown,
    }
}

/// RandomNormal, RandomUniform: `dtype` (default float) of the `shape` attribute.
pub(crate) fn random(c: &InferCtx<'_>) -> Out {
    let d = dtype_attr(c, "dtype")?.unwrap_or(DType::F32);
    let shape = c.node.req_attr::<Vec<i64>>("shape")?;
    Ok(vec![ValueType::Tensor(d, Some(shape.iter().map(|v| Dim::Fixed((*v).max(0) as usize)).collect()))])
}

/// RandomNormalLike, RandomUniformLike, Bernoulli, EyeLike: `dtype`, else the input's type;
/// the input's shape.
pub(crate) fn like_input(c: &InferCtx<'_>) -> Out {
    let d = dtype_attr(c, "dtype")?.or(c.dtype(0));
    Ok(vec![tensor(d, c.shape(0).map(<[Dim]>::to_vec))])
}

/// Multinomial: `dtype` (default int32), `[batch_size, sample_size]`.
pub(crate) fn multinomial(c: &InferCtx<'_>) -> Out {
    let d = dtype_attr(c, "dtype")?.unwrap_or(DType::I32);
    let batch = c.shape(0).and_then(|s| s.first()).cloned().unwrap_or(Dim::Unknown);
    let samples = c.node.attr_or::<i64>("sample_size", 1)?;
    Ok(vec![ValueType::Tensor(d, Some(vec![batch, Dim::Fixed(samples.max(0) as usize)]))])
}

/// HannWindow, HammingWindow, BlackmanWindow: `output_datatype` (default float), `[size]`.
pub(crate) fn window_function(c: &InferCtx<'_>) -> Out {
    let d = dtype_attr(c, "output_datatype")?.unwrap_or(DType::F32);
    Ok(vec![ValueType::Tensor(d, Some(vec![const_dim(c, 0)]))])
}

/// MelWeightMatrix: `output_datatype` (default float), `[dft_length / 2 + 1, num_mel_bins]`.
pub(crate) fn mel_weight_matrix(c: &InferCtx<'_>) -> Out {
    let d = dtype_attr(c, "output_datatype")?.unwrap_or(DType::F32);
    let bins = match const_dim(c, 1) {
        Dim::Fixed(n) => Dim::Fixed(n / 2 + 1),
        other => other,
    };
    Ok(vec![ValueType::Tensor(d, Some(vec![bins, const_dim(c, 0)]))])
}

/// DFT: the input's type; the last axis becomes 2 (complex), the transformed axis takes
/// `dft_length` (or keeps its size), halved plus one when `onesided`. With `onesided` and
/// `inverse` (IRFFT) the output is real (last axis 1) and `dft_length` defaults to
/// `2 * (n - 1)`. The axis is an attribute (default 1) up to opset 19, an input (default -2)
/// from 20.
pub(crate) fn dft(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let axis = if n.opset >= 20 {
        if c.has(2) {
            match c.const_ints(2).as_deref() {
                Some([a]) => Some(*a),
                _ => None,
            }
        } else {
            Some(-2)
        }
    } else {
        Some(n.attr_or::<i64>("axis", 1)?)
    };
    let onesided = n.attr_or::<i64>("onesided", 0)? != 0;
    let irfft = onesided && n.attr_or::<i64>("inverse", 0)? != 0;
    let mut out = x.to_vec();
    if let Some(last) = out.last_mut() {
        *last = Dim::Fixed(if irfft { 1 } else { 2 });
    }
    match axis {
        Some(a) if !x.is_empty() => {
            let a = norm_axis(n, a, x.len())?;
            out[a] = match (c.has(1), x[a].fixed()) {
                (true, _) => const_dim(c, 1),
                (false, Some(len)) if irfft => Dim::Fixed(2 * len.saturating_sub(1)),
                (false, _) => x[a].clone(),
            };
            if onesided && !irfft {
                out[a] = out[a].fixed().map_or(Dim::Unknown, |l| Dim::Fixed(l / 2 + 1));
            }
        }
        _ => out.iter_mut().take(x.len().saturating_sub(1)).for_each(|d| *d = Dim::Unknown),
    }
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

/// STFT: the signal's type, `[batch, frames, bins, 2]` with `frames = (signal_length -
/// frame_length) / frame_step + 1` and `bins = frame_length / 2 + 1` when `onesided` (the
/// default), else `frame_length`.
pub(crate) fn stft(c: &InferCtx<'_>) -> Out {
    let x = c.shape(0);
    let batch = x.and_then(|s| s.first()).cloned().unwrap_or(Dim::Unknown);
    let signal = x.and_then(|s| s.get(1)).and_then(Dim::fixed);
    let step = const_dim(c, 1).fixed();
    let frame = match (c.has(3), c.shape(2).and_then(|w| w.first())) {
        (true, _) => const_dim(c, 3).fixed(),
        (false, Some(w)) => w.fixed(),
        _ => None,
    };
    let frames = match (signal, frame, step) {
        (Some(s), Some(f), Some(st)) if st > 0 && s >= f => Dim::Fixed((s - f) / st + 1),
        _ => Dim::Unknown,
    };
    let onesided = c.node.attr_or::<i64>("onesided", 1)? != 0;
    let bins = frame.map_or(Dim::Unknown, |f| Dim::Fixed(if onesided { f / 2 + 1 } else { f }));
    Ok(vec![tensor(c.dtype(0), Some(vec![batch, frames, bins, Dim::Fixed(2)]))])
}
