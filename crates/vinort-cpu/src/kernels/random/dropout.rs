//! Dropout in training mode: each element is kept with probability `1 - ratio` and scaled by
//! `1 / (1 - ratio)`, dropped ones become 0, and the mask says which were kept. Float, double,
//! float16 and bfloat16 data (f16/bf16 scaled in f32 and rounded once).
//!
//! An element is kept when a uniform draw on `[0, 1)` is at least `ratio`, as in ONNX's
//! reference; the draws are this crate's (see the family doc), not numpy's.

use rand::Rng;
use vinort_ir::{Error, Result, Tensor};

use super::{Seed, draw};
use crate::kernel::with_numeric;
use crate::numeric::{Numeric, Zero, narrow, unsupported_dtype, widen};

/// The output and the bool mask of a training-mode Dropout of `x` with `ratio` in `[0, 1)`.
pub(crate) fn train(x: &Tensor, ratio: f64, seed: Seed) -> Result<(Tensor, Tensor)> {
    if !(0.0..1.0).contains(&ratio) {
        return Err(Error::invalid(format!("Dropout ratio must be in [0, 1), got {ratio}")));
    }
    let keep = draw(x.len(), seed, |rng, _| rng.random::<f64>() >= ratio)?;
    let scale = 1.0 / (1.0 - ratio);
    let wide = widen(x)?;
    let y = with_numeric!(compute x.dtype(), |T| {
        let xs = wide.as_slice::<T>()?;
        let s = T::from_f64_as(scale);
        Tensor::build::<T>(x.shape(), |o| {
            for ((o, v), k) in o.iter_mut().zip(xs).zip(&keep) {
                *o = if *k { *v * s } else { T::zero() };
            }
        })
    }, other => return Err(unsupported_dtype("training-mode Dropout", other)));
    Ok((narrow(y, x.dtype())?, Tensor::from_slice(x.shape(), &keep)?))
}
