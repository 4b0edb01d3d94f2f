//! Spectral ops of the default domain:
//! [DFT](https://onnx.ai/onnx/operators/onnx__DFT.html) 17 and 20 (opset 20 moved `axis` from an
//! attribute to an optional input) and
//! [STFT](https://onnx.ai/onnx/operators/onnx__STFT.html) 17, for float, double, float16 and
//! bfloat16. (The window functions and the mel filter bank that usually feed them are in
//! `kernels/ml/signal.rs`.)
//!
//! Transforms run on [`rustfft`], a pure-Rust FFT with AVX/SSE/NEON paths chosen at run time that
//! plans any length (mixed radix, Rader and Bluestein for primes) in O(n log n): writing and
//! tuning that is a project of its own, and an O(n²) loop would make a 4096-point STFT frame
//! thousands of times slower.
//!
//! Every type computes in f64 and rounds once into the output type: ONNX's reference (numpy)
//! transforms in double, and a bin that is exactly 0 there comes out of an f32 FFT of a few
//! hundred terms as ~1e-5, which is wrong by the node tests' absolute tolerance (1e-7).

use vinort_ir::Result;

use crate::kernel::Registry;

mod dft;
mod fft;
mod stft;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "DFT", dft::factory);
    r.op("", "STFT", stft::factory);
}

/// A dim from an integer input that must be positive (`dft_length`, `frame_step`...).
pub(crate) fn positive(v: i64, what: &str) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| vinort_ir::Error::invalid(format!("{what} must be positive, got {v}")))
}
