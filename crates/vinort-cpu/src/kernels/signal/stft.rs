//! [STFT](https://onnx.ai/onnx/operators/onnx__STFT.html), opset 17.
//!
//! `signal` is `[batch, signal_length, 1 or 2]` (real or complex). Frames of `frame_length`
//! samples start every `frame_step` samples, `frames = (signal_length - frame_length) /
//! frame_step + 1` of them; each frame is multiplied by `window` (all ones when omitted) and
//! transformed. `frame_length` defaults to the window's length, then to `signal_length`; when
//! both are given they must agree. The output is `[batch, frames, bins, 2]` with
//! `bins = frame_length/2 + 1` when `onesided` (the default, 1) and `frame_length` otherwise.
//! Like ONNX's reference, a one-sided transform of a complex signal keeps the low bins.

use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::fft::{Layout, Transform, transform};
use super::positive;
use crate::kernel::{Kernel, NodeInfo, opt_tensor_in, tensor_in};
use crate::kernels::ml::scalar_i64;
use crate::kernels::support::{load_f64, store_f64};

pub(super) fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let onesided = match n.attr_or("onesided", 1i64)? {
        0 => false,
        1 => true,
        v => return Err(n.error(format!("onesided must be 0 or 1, got {v}"))),
    };
    Ok(Box::new(Stft { onesided }))
}

struct Stft {
    onesided: bool,
}

impl Kernel for Stft {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let signal = tensor_in(inputs, 0)?;
        let step = scalar_i64(tensor_in(inputs, 1)?, "frame_step")?;
        let window = opt_tensor_in(inputs, 2)?;
        let frame_length = opt_tensor_in(inputs, 3)?.map(|t| scalar_i64(t, "frame_length")).transpose()?;
        Ok(smallvec::smallvec![stft(signal, step, window, frame_length, self.onesided)?.into()])
    }
}

/// The STFT as the module doc says.
pub(super) fn stft(
    signal: &Tensor,
    frame_step: i64,
    window: Option<&Tensor>,
    frame_length: Option<i64>,
    onesided: bool,
) -> Result<Tensor> {
    let (batch, length, complex) = match *signal.shape() {
        [b, l, 1] => (b, l, false),
        [b, l, 2] => (b, l, true),
        ref s => return Err(Error::invalid(format!("STFT signal must be [batch, length, 1 or 2], got {s:?}"))),
    };
    let step = positive(frame_step, "frame_step")?;
    let window = match window {
        Some(w) if w.rank() != 1 => {
            return Err(Error::invalid(format!("the STFT window must be 1-D, got shape {:?}", w.shape())));
        }
        Some(w) if w.dtype() != signal.dtype() => {
            return Err(Error::DTypeMismatch { expected: signal.dtype(), found: w.dtype() });
        }
        Some(w) => Some(load_f64(w)?),
        None => None,
    };
    let frame = match (frame_length, &window) {
        (Some(f), Some(w)) if usize::try_from(f).ok() != Some(w.len()) => {
            return Err(Error::invalid(format!("frame_length {f} differs from the window's length {}", w.len())));
        }
        (Some(f), _) => positive(f, "frame_length")?,
        (None, Some(w)) => positive(w.len() as i64, "the window's length")?,
        (None, None) => positive(length as i64, "the signal length")?,
    };
    if frame > length {
        return Err(Error::invalid(format!("frame_length {frame} is longer than the signal ({length})")));
    }
    let frames = (length - frame) / step + 1;
    let parts = if complex { 2 } else { 1 };
    let too_large = || Error::invalid(format!("{frames} frames of {frame} samples are too many"));
    let framed_len =
        [batch, frames, frame, parts].iter().try_fold(1usize, |a, d| a.checked_mul(*d)).ok_or_else(too_large)?;

    // The frames laid out [batch, frames, frame, parts], windowed, then transformed together.
    let x = load_f64(signal)?;
    let mut framed = Vec::new();
    framed.try_reserve_exact(framed_len).map_err(|_| too_large())?;
    for b in 0..batch {
        for f in 0..frames {
            let start = (b * length + f * step) * parts;
            let samples = &x[start..start + frame * parts];
            match &window {
                Some(w) => framed.extend(samples.chunks(parts).zip(w).flat_map(|(s, w)| s.iter().map(move |v| v * w))),
                None => framed.extend_from_slice(samples),
            }
        }
    }
    let t = Transform::Forward { len: frame, onesided };
    let y = transform(&framed, Layout { outer: batch * frames, n: frame, inner: 1, complex }, t)?;
    store_f64(signal.dtype(), &[batch, frames, t.out_len(), 2], &y)
}
