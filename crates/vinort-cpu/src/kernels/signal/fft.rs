//! The batch transform DFT and STFT share: one 1-D transform per line along an axis of a real
//! or complex signal, in f64 on `rustfft`, lines spread over rayon when there are enough.

use rayon::prelude::*;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;
use vinort_ir::{Error, Result};

use crate::par;

/// A signal of `[outer, n, inner]` samples, transformed along `n`; each sample is one value
/// (real) or two (real, imaginary), so the values are laid out `[outer, n, inner, 1 or 2]`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    pub(super) outer: usize,
    pub(super) n: usize,
    pub(super) inner: usize,
    pub(super) complex: bool,
}

/// What is computed along the axis. Each line is first cut or zero-padded to `len` samples
/// (ONNX's `dft_length`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Transform {
    /// `y[k] = Σₙ x[n]·e^(-2πi·kn/len)`; `onesided` keeps bins `0..=len/2` only.
    Forward { len: usize, onesided: bool },
    /// `x[n] = (1/len)·Σₖ y[k]·e^(2πi·kn/len)`, complex in and out.
    Inverse { len: usize },
    /// numpy's `irfft`: the input holds bins `0..=len/2` of a Hermitian spectrum (fewer are
    /// zero-padded, more are cut); the output is the real signal of `len` samples. As in numpy
    /// the imaginary parts of bin 0 and (for even `len`) bin `len/2` do not matter.
    InverseReal { len: usize },
}

impl Transform {
    fn len(self) -> usize {
        match self {
            Transform::Forward { len, .. } | Transform::Inverse { len } | Transform::InverseReal { len } => len,
        }
    }

    /// Samples along the axis in the output.
    pub(super) fn out_len(self) -> usize {
        match self {
            Transform::Forward { len, onesided: true } => len / 2 + 1,
            other => other.len(),
        }
    }

    /// Values per output sample: 1 for the real output of [`Transform::InverseReal`], else 2.
    pub(super) fn out_parts(self) -> usize {
        if matches!(self, Transform::InverseReal { .. }) { 1 } else { 2 }
    }
}

/// Runs `t` on every line of `x` (laid out as `layout` says) and returns the output values,
/// laid out `[outer, t.out_len(), inner, t.out_parts()]`.
pub(super) fn transform(x: &[f64], layout: Layout, t: Transform) -> Result<Vec<f64>> {
    let Layout { outer, n, inner, complex } = layout;
    let parts = if complex { 2 } else { 1 };
    let (len, bins, out_parts) = (t.len(), t.out_len(), t.out_parts());
    if len == 0 {
        return Err(Error::invalid("the transform length must be positive"));
    }
    let expected = [outer, n, inner, parts].iter().try_fold(1usize, |a, d| a.checked_mul(*d));
    if expected != Some(x.len()) {
        return Err(Error::invalid(format!("{} values do not fill [{outer}, {n}, {inner}, {parts}]", x.len())));
    }
    let too_large = || Error::invalid(format!("a DFT of length {len} over {outer}x{inner} lines is too large"));
    let lines = outer.checked_mul(inner).ok_or_else(too_large)?;
    let out_size = lines.checked_mul(bins).and_then(|v| v.checked_mul(out_parts)).ok_or_else(too_large)?;
    if out_size == 0 {
        return Ok(Vec::new());
    }
    let mut spectra: Vec<Complex<f64>> = Vec::new();
    spectra.try_reserve_exact(lines * bins).map_err(|_| too_large())?;
    spectra.resize(lines * bins, Complex::default());

    let mut planner = FftPlanner::<f64>::new();
    let fft = match t {
        Transform::Forward { .. } => planner.plan_fft_forward(len),
        Transform::Inverse { .. } | Transform::InverseReal { .. } => planner.plan_fft_inverse(len),
    };
    // rustfft's inverse is unnormalised; ONNX's divides by the length.
    let scale = if matches!(t, Transform::Forward { .. }) { 1.0 } else { 1.0 / len as f64 };
    let init = || (vec![Complex::default(); len], vec![Complex::default(); fft.get_inplace_scratch_len()]);
    let work = |(buf, scratch): &mut (Vec<Complex<f64>>, Vec<Complex<f64>>),
                (line, out): (usize, &mut [Complex<f64>])| {
        let (o, i) = (line / inner, line % inner);
        let at = |k: usize| ((o * n + k) * inner + i) * parts;
        buf.fill(Complex::default());
        let take = if matches!(t, Transform::InverseReal { .. }) { n.min(len / 2 + 1) } else { n.min(len) };
        for (k, b) in buf.iter_mut().enumerate().take(take) {
            let p = at(k);
            *b = Complex::new(x[p], if complex { x[p + 1] } else { 0.0 });
        }
        if matches!(t, Transform::InverseReal { .. }) {
            // The upper half of a Hermitian spectrum mirrors the lower: X[len-k] = conj(X[k]).
            for k in 1..=(len - 1) / 2 {
                buf[len - k] = buf[k].conj();
            }
        }
        fft.process_with_scratch(buf, scratch);
        for (o, v) in out.iter_mut().zip(buf.iter()) {
            *o = v * scale;
        }
    };
    if lines > 1 && par::worth(lines.saturating_mul(len), par::ELEMENTS) {
        spectra.par_chunks_mut(bins).enumerate().for_each_init(init, work);
    } else {
        let mut state = init();
        spectra.chunks_mut(bins).enumerate().for_each(|item| work(&mut state, item));
    }

    let mut y = Vec::new();
    y.try_reserve_exact(out_size).map_err(|_| too_large())?;
    y.resize(out_size, 0.0);
    for (line, spectrum) in spectra.chunks(bins).enumerate() {
        let (o, i) = (line / inner, line % inner);
        for (k, v) in spectrum.iter().enumerate() {
            let dst = ((o * bins + k) * inner + i) * out_parts;
            y[dst] = v.re;
            if out_parts == 2 {
                y[dst + 1] = v.im;
            }
        }
    }
    Ok(y)
}
