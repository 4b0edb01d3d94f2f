//! Random ops of the default domain:
//! [RandomUniform](https://onnx.ai/onnx/operators/onnx__RandomUniform.html) 1–,
//! [RandomUniformLike](https://onnx.ai/onnx/operators/onnx__RandomUniformLike.html) 1–,
//! [RandomNormal](https://onnx.ai/onnx/operators/onnx__RandomNormal.html) 1–,
//! [RandomNormalLike](https://onnx.ai/onnx/operators/onnx__RandomNormalLike.html) 1–
//! (float, double, float16, bfloat16 outputs),
//! [Bernoulli](https://onnx.ai/onnx/operators/onnx__Bernoulli.html) 15– (float, double,
//! float16 probabilities; every numeric type and bool out) and
//! [Multinomial](https://onnx.ai/onnx/operators/onnx__Multinomial.html) 7– (int32/int64
//! class indices), plus the mask of
//! [Dropout](https://onnx.ai/onnx/operators/onnx__Dropout.html) in training mode (its kernel is
//! the shape family's Dropout, which calls [`dropout::train`]).
//!
//! **Seeds.** A `seed` attribute makes a node deterministic: every run draws the same values (the
//! generator is seeded afresh at the start of each run, so concurrent runs of one session agree
//! and share no state). Without one, each run seeds from the thread's OS-seeded generator, so
//! runs differ. ONNX leaves the stream to the implementation ("may not produce the same values
//! in different implementations (even if a seed is specified)"): values differ from numpy's and
//! ONNX Runtime's.
//!
//! **Generators.** [`rand`]'s `StdRng` (ChaCha12: fast, and no visible patterns between
//! neighbouring seeds) and [`rand_distr`]'s `Normal` (a ziggurat sampler): the Rust
//! ecosystem's standard, well-tested implementations, so no sampler is hand-written here. A large
//! output is drawn in chunks of [`CHUNK`] values, each chunk from its own generator seeded from
//! the run's seed and the chunk's index, so the values are the same whether rayon spreads the
//! chunks over threads or not. Floats are sampled in f64 and rounded once into the output type.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use vinort_ir::{DType, Error, Node, Result};

use crate::kernel::Registry;
use crate::par;

mod discrete;
pub(crate) mod dropout;
mod sample;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "RandomUniform", sample::random_uniform);
    r.op("", "RandomUniformLike", sample::random_uniform_like);
    r.op("", "RandomNormal", sample::random_normal);
    r.op("", "RandomNormalLike", sample::random_normal_like);
    r.op("", "Bernoulli", discrete::bernoulli);
    r.op("", "Multinomial", discrete::multinomial);
}

/// Values drawn by one generator before the next chunk's generator takes over.
const CHUNK: usize = par::ELEMENTWISE_CHUNK;

/// A node's seed: fixed by its `seed` attribute, or fresh for every run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seed(Option<u64>);

impl Seed {
    /// The float `seed` attribute of the random ops (absent or NaN: a fresh seed per run, as in
    /// ONNX's reference). Its bits are the seed, so distinct values give distinct streams.
    pub(crate) fn float_attr(node: &Node) -> Result<Seed> {
        Ok(Seed(node.attr::<f32>("seed")?.filter(|s| !s.is_nan()).map(|s| u64::from(s.to_bits()))))
    }

    /// A fixed seed (Dropout's integer `seed` attribute).
    pub(crate) fn fixed(seed: u64) -> Seed {
        Seed(Some(seed))
    }

    /// A seed that differs on every run.
    pub(crate) fn fresh() -> Seed {
        Seed(None)
    }

    /// The seed of one run.
    fn for_run(self) -> u64 {
        self.0.unwrap_or_else(|| rand::rng().random())
    }
}

/// `n` values of `sample(generator, index)`, drawn [`CHUNK`] at a time as the module doc says.
/// An output too large to allocate is an error, not an abort.
fn draw<T: Clone + Default + Send>(
    n: usize,
    seed: Seed,
    sample: impl Fn(&mut StdRng, usize) -> T + Sync,
) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::invalid(format!("{n} random values do not fit in memory")))?;
    v.resize(n, T::default());
    let base = seed.for_run();
    let chunk = |(c, out): (usize, &mut [T])| {
        // seed_from_u64 scrambles its argument, so neighbouring chunk seeds give unrelated streams.
        let mut rng = StdRng::seed_from_u64(base ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for (j, o) in out.iter_mut().enumerate() {
            *o = sample(&mut rng, c * CHUNK + j);
        }
    };
    if par::worth(n, par::ELEMENTWISE) {
        v.par_chunks_mut(CHUNK).enumerate().for_each(chunk);
    } else {
        v.chunks_mut(CHUNK).enumerate().for_each(chunk);
    }
    Ok(v)
}

/// The element type named by a `dtype` attribute code.
fn dtype_of(node: &Node, code: i64) -> Result<DType> {
    i32::try_from(code).ok().and_then(DType::from_onnx).ok_or_else(|| node.error(format!("unknown dtype {code}")))
}

/// The output type of the float-valued random ops: `dtype` must be a float type.
fn float_dtype(node: &Node, dtype: DType) -> Result<DType> {
    if dtype.is_float() {
        Ok(dtype)
    } else {
        Err(node.error(format!("{} outputs float, double, float16 or bfloat16, not {dtype}", node.op_type)))
    }
}
