//! Bernoulli (1 with probability `p`, elementwise) and Multinomial (class indices drawn from
//! each row of unnormalised log-probabilities).

use rand::Rng;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::{Seed, draw, dtype_of};
use crate::kernel::{Kernel, NodeInfo, tensor_in, with_numeric};
use crate::kernels::support::load_f64;
use crate::numeric::{One, Zero, unsupported_dtype};

pub(super) fn bernoulli(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let dtype = n.attr::<i64>("dtype")?.map(|c| dtype_of(n, c)).transpose()?;
    if let Some(d) = dtype
        && !(d.is_float() || d.is_int() || d == DType::Bool)
    {
        return Err(n.error(format!("Bernoulli cannot output {d}")));
    }
    Ok(Box::new(Bernoulli { dtype, seed: Seed::float_attr(n)? }))
}

struct Bernoulli {
    /// The output type; the input's when None.
    dtype: Option<DType>,
    seed: Seed,
}

impl Kernel for Bernoulli {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let p = load_f64(x)?;
        if let Some(bad) = p.iter().find(|p| !(0.0..=1.0).contains(*p)) {
            return Err(Error::invalid(format!("Bernoulli probabilities must be in [0, 1], got {bad}")));
        }
        let ones = draw(p.len(), self.seed, |rng, i| rng.random::<f64>() < p[i])?;
        Ok(smallvec::smallvec![zeros_and_ones(self.dtype.unwrap_or(x.dtype()), x.shape(), &ones)?.into()])
    }
}

/// A tensor of `dtype` holding 1 where `ones` is true and 0 elsewhere.
fn zeros_and_ones(dtype: DType, shape: &[usize], ones: &[bool]) -> Result<Tensor> {
    if dtype == DType::Bool {
        return Tensor::from_slice(shape, ones);
    }
    with_numeric!(dtype, |T| Ok(Tensor::build::<T>(shape, |o| {
        for (o, one) in o.iter_mut().zip(ones) {
            *o = if *one { T::one() } else { T::zero() };
        }
    })), other => Err(unsupported_dtype("Bernoulli", other)))
}

pub(super) fn multinomial(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let dtype = dtype_of(n, n.attr_or("dtype", DType::I32.onnx_code() as i64)?)?;
    if !matches!(dtype, DType::I32 | DType::I64) {
        return Err(n.error(format!("Multinomial outputs int32 or int64, not {dtype}")));
    }
    let samples = n.attr_or("sample_size", 1i64)?;
    let samples =
        usize::try_from(samples).map_err(|_| n.error(format!("sample_size must not be negative, got {samples}")))?;
    Ok(Box::new(Multinomial { dtype, samples, seed: Seed::float_attr(n)? }))
}

struct Multinomial {
    dtype: DType,
    samples: usize,
    seed: Seed,
}

impl Kernel for Multinomial {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let &[batch, classes] = x.shape() else {
            return Err(Error::invalid(format!("Multinomial input must be [batch, classes], got {:?}", x.shape())));
        };
        let logits = load_f64(x)?;
        // Weights exp(x - max) are the row's probabilities up to a factor, and never overflow.
        let rows = (0..batch)
            .map(|b| {
                let row = &logits[b * classes..(b + 1) * classes];
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                WeightedIndex::new(row.iter().map(|v| (v - max).exp())).map_err(|e| {
                    Error::invalid(format!("row {b} of Multinomial's log-probabilities gives no distribution: {e}"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let samples = self.samples;
        let n = batch
            .checked_mul(samples)
            .ok_or_else(|| Error::invalid(format!("{batch} rows of {samples} samples are too many")))?;
        let picks = draw(n, self.seed, |rng, i| rows[i / samples].sample(rng))?;
        let shape = [batch, samples];
        Ok(smallvec::smallvec![
            match self.dtype {
                DType::I64 => Tensor::from_vec(&shape, picks.into_iter().map(|c| c as i64).collect())?,
                // Class indices below `classes`, which an int32 output must hold.
                _ => Tensor::from_vec(
                    &shape,
                    picks
                        .into_iter()
                        .map(|c| i32::try_from(c).map_err(|_| Error::invalid(format!("class {c} overflows int32"))))
                        .collect::<Result<Vec<_>>>()?,
                )?,
            }
            .into(),
        ])
    }
}
