//! Window functions and the mel filter bank of the default domain, opset 17:
//! [BlackmanWindow](https://onnx.ai/onnx/operators/onnx__BlackmanWindow.html),
//! [HammingWindow](https://onnx.ai/onnx/operators/onnx__HammingWindow.html),
//! [HannWindow](https://onnx.ai/onnx/operators/onnx__HannWindow.html) and
//! [MelWeightMatrix](https://onnx.ai/onnx/operators/onnx__MelWeightMatrix.html).
//!
//! Values are computed in f64 and converted once into `output_datatype` (default float; integer
//! types truncate, as the reference's `astype` does). A window of `size` samples uses
//! `N = size` when `periodic` (the default) and `N = size - 1` otherwise, with
//! - Hann: `0.5 - 0.5 cos(2πn/N)` (= `sin²(πn/N)`),
//! - Hamming: `α - β cos(2πn/N)` with ONNX's `α = 25/46`, `β = 21/46` (not 0.54 / 0.46),
//! - Blackman: `0.42 - 0.5 cos(2πn/N) + 0.08 cos(4πn/N)`.
//!
//! A symmetric window of one sample would divide by zero; it is `[1]`, as in numpy and PyTorch.

use std::f64::consts::{LN_10, PI};
use vinort_ir::Values;

use vinort_ir::{DType, Error, Result, RunContext, Value};

use super::{numeric_dtype, scalar_f64, scalar_i64, store_f64};
use crate::kernel::{Kernel, NodeInfo, Registry, index_below, tensor_in};
use crate::kernels::signal::positive;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "BlackmanWindow", |i| window_factory(i, Window::Blackman));
    r.op("", "HammingWindow", |i| window_factory(i, Window::Hamming));
    r.op("", "HannWindow", |i| window_factory(i, Window::Hann));
    r.op("", "MelWeightMatrix", mel_factory);
}

/// A window function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Blackman.
    Blackman,
    /// Hamming (ONNX's coefficients).
    Hamming,
    /// Hann.
    Hann,
}

impl Window {
    /// The window's `size` values.
    pub fn values(self, size: usize, periodic: bool) -> Vec<f64> {
        let denom = if periodic { size } else { size.saturating_sub(1) };
        if denom == 0 {
            return vec![1.0; size];
        }
        let step = 2.0 * PI / denom as f64;
        (0..size)
            .map(|n| {
                let t = step * n as f64;
                match self {
                    Window::Hann => 0.5 - 0.5 * t.cos(),
                    Window::Hamming => 25.0 / 46.0 - 21.0 / 46.0 * t.cos(),
                    Window::Blackman => 0.42 - 0.5 * t.cos() + 0.08 * (2.0 * t).cos(),
                }
            })
            .collect()
    }
}

struct WindowKernel {
    window: Window,
    periodic: bool,
    dtype: DType,
}

fn window_factory(info: &NodeInfo<'_>, window: Window) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let periodic = n.attr_or::<i64>("periodic", 1)? != 0;
    let dtype = numeric_dtype(n.attr_or::<i64>("output_datatype", 1)?).map_err(|e| n.error(e.to_string()))?;
    Ok(Box::new(WindowKernel { window, periodic, dtype }))
}

impl Kernel for WindowKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let size = scalar_i64(tensor_in(inputs, 0)?, "size")?;
        let size =
            usize::try_from(size).map_err(|_| Error::invalid(format!("size must be non-negative, got {size}")))?;
        let v = self.window.values(size, self.periodic);
        Ok(smallvec::smallvec![store_f64(self.dtype, &[size], &v)?.into()])
    }
}

/// Hertz to mel: `2595 log10(1 + f/700)`.
fn hz_to_mel(f: f64) -> f64 {
    2595.0 * (f / 700.0).ln_1p() / LN_10
}

/// Mel to hertz, the inverse of [`hz_to_mel`].
fn mel_to_hz(m: f64) -> f64 {
    700.0 * (m / 2595.0 * LN_10).exp_m1()
}

/// The `[dft_length / 2 + 1, num_mel_bins]` matrix of triangular mel filters, row-major.
///
/// As in the reference implementation (and onnxruntime), the mel range is cut into
/// `num_mel_bins + 2` equal steps and the band edges are the first `num_mel_bins + 2` points,
/// each mapped to spectrogram bin `floor((dft_length + 1) * hz / sample_rate)`. Filter `i`
/// rises linearly from edge `i` to 1 at edge `i + 1` and falls to edge `i + 2`.
pub fn mel_weight_matrix(
    num_mel_bins: i64,
    dft_length: i64,
    sample_rate: i64,
    lower_edge_hertz: f64,
    upper_edge_hertz: f64,
) -> Result<(Vec<usize>, Vec<f64>)> {
    let mels = positive(num_mel_bins, "num_mel_bins")?;
    let dft = positive(dft_length, "dft_length")?;
    positive(sample_rate, "sample_rate")?;
    let spec = dft / 2 + 1;
    let (lo, hi) = (hz_to_mel(lower_edge_hertz), hz_to_mel(upper_edge_hertz));
    let step = (hi - lo) / (mels + 2) as f64;
    let edges: Vec<i64> = (0..mels + 2)
        .map(|i| {
            let hz = mel_to_hz(lo + step * i as f64);
            let bin = ((dft as f64 + 1.0) * hz / sample_rate as f64).floor();
            if bin.is_finite() {
                Ok(bin as i64)
            } else {
                Err(Error::invalid(format!(
                    "mel band edge {i} is not finite (lower_edge_hertz {lower_edge_hertz}, upper_edge_hertz \
                     {upper_edge_hertz})"
                )))
            }
        })
        .collect::<Result<_>>()?;
    let len = spec.checked_mul(mels).ok_or_else(|| Error::invalid("MelWeightMatrix output is too large"))?;
    let mut out = vec![0.0f64; len];
    let mut set = |j: i64, i: usize, v: f64| -> Result<()> {
        let row = index_below(j, spec).ok_or_else(|| {
            Error::invalid(format!(
                "mel filter {i} reaches spectrogram bin {j}, outside 0..{spec}: the hertz range \
                 [{lower_edge_hertz}, {upper_edge_hertz}] must lie within [0, sample_rate / 2]"
            ))
        })?;
        out[row * mels + i] = v;
        Ok(())
    };
    for i in 0..mels {
        let (left, center, right) = (edges[i], edges[i + 1], edges[i + 2]);
        if center == left {
            set(center, i, 1.0)?;
        } else {
            for j in left..=center {
                set(j, i, (j - left) as f64 / (center - left) as f64)?;
            }
        }
        for j in center..right {
            set(j, i, (right - j) as f64 / (right - center) as f64)?;
        }
    }
    Ok((vec![spec, mels], out))
}

struct Mel {
    dtype: DType,
}

fn mel_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let dtype = numeric_dtype(n.attr_or::<i64>("output_datatype", 1)?).map_err(|e| n.error(e.to_string()))?;
    Ok(Box::new(Mel { dtype }))
}

impl Kernel for Mel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let int = |i: usize, what: &str| scalar_i64(tensor_in(inputs, i)?, what);
        let float = |i: usize, what: &str| -> Result<f64> {
            let t = tensor_in(inputs, i)?;
            if !t.dtype().is_float() {
                return Err(Error::invalid(format!("{what} must be a float tensor, got {}", t.dtype())));
            }
            scalar_f64(t, what)
        };
        let (shape, v) = mel_weight_matrix(
            int(0, "num_mel_bins")?,
            int(1, "dft_length")?,
            int(2, "sample_rate")?,
            float(3, "lower_edge_hertz")?,
            float(4, "upper_edge_hertz")?,
        )?;
        Ok(smallvec::smallvec![store_f64(self.dtype, &shape, &v)?.into()])
    }
}
