//! RandomUniform(Like) and RandomNormal(Like): a shape from the `shape` attribute or from the
//! input, a float type from `dtype` (default float; the input's type for the Like ops) and
//! the distribution's parameters.

use rand::Rng;
use rand_distr::{Distribution, Normal};
use vinort_ir::Values;
use vinort_ir::{DType, Error, Node, Result, RunContext, Value};

use super::{Seed, draw, dtype_of, float_dtype};
use crate::kernel::{Kernel, NodeInfo, tensor_in};
use crate::kernels::support::store_f64;

/// What the values are drawn from.
#[derive(Clone, Copy, Debug)]
enum Dist {
    /// Uniform on `[low, high)` (rounding to the output type may reach `high`).
    Uniform { low: f64, high: f64 },
    /// Normal with this mean and standard deviation.
    Normal(Normal<f64>),
}

/// Where the output's shape and type come from.
#[derive(Clone, Debug)]
enum Like {
    /// The `shape` and `dtype` attributes.
    Attrs { shape: Vec<usize>, dtype: DType },
    /// Input 0's shape; `dtype` or input 0's type.
    Input { dtype: Option<DType> },
}

struct Random {
    dist: Dist,
    like: Like,
    seed: Seed,
}

fn finite(node: &Node, name: &str, default: f32) -> Result<f64> {
    let v = node.attr_or::<f32>(name, default)?;
    if v.is_finite() { Ok(f64::from(v)) } else { Err(node.error(format!("{name} must be finite, got {v}"))) }
}

fn uniform(node: &Node) -> Result<Dist> {
    Ok(Dist::Uniform { low: finite(node, "low", 0.0)?, high: finite(node, "high", 1.0)? })
}

fn normal(node: &Node) -> Result<Dist> {
    let (mean, scale) = (finite(node, "mean", 0.0)?, finite(node, "scale", 1.0)?);
    if scale < 0.0 {
        return Err(node.error(format!("scale must not be negative, got {scale}")));
    }
    Normal::new(mean, scale).map(Dist::Normal).map_err(|e| node.error(format!("bad normal distribution: {e}")))
}

/// The `shape` and `dtype` attributes of RandomUniform/RandomNormal.
fn from_attrs(node: &Node) -> Result<Like> {
    let dims: Vec<i64> = node.req_attr("shape")?;
    let shape = dims
        .iter()
        .map(|d| usize::try_from(*d).map_err(|_| node.error(format!("shape {dims:?} has a negative dim"))))
        .collect::<Result<Vec<_>>>()?;
    if shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d)).is_none() {
        return Err(node.error(format!("shape {dims:?} has too many elements")));
    }
    let dtype = float_dtype(node, dtype_of(node, node.attr_or("dtype", DType::F32.onnx_code() as i64)?)?)?;
    Ok(Like::Attrs { shape, dtype })
}

/// The optional `dtype` attribute of the Like ops.
fn from_input(node: &Node) -> Result<Like> {
    let dtype = node.attr::<i64>("dtype")?.map(|c| dtype_of(node, c).and_then(|d| float_dtype(node, d))).transpose()?;
    Ok(Like::Input { dtype })
}

fn kernel(node: &Node, dist: Dist, like: Like) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(Random { dist, like, seed: Seed::float_attr(node)? }))
}

pub(super) fn random_uniform(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    kernel(info.node, uniform(info.node)?, from_attrs(info.node)?)
}

pub(super) fn random_uniform_like(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    kernel(info.node, uniform(info.node)?, from_input(info.node)?)
}

pub(super) fn random_normal(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    kernel(info.node, normal(info.node)?, from_attrs(info.node)?)
}

pub(super) fn random_normal_like(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    kernel(info.node, normal(info.node)?, from_input(info.node)?)
}

impl Kernel for Random {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (shape, dtype) = match &self.like {
            Like::Attrs { shape, dtype } => (shape.as_slice(), *dtype),
            Like::Input { dtype } => {
                let x = tensor_in(inputs, 0)?;
                let dtype = match dtype {
                    Some(d) => *d,
                    None if x.dtype().is_float() => x.dtype(),
                    None => {
                        return Err(Error::invalid(format!(
                            "a {} input needs a float dtype attribute (the output is float)",
                            x.dtype()
                        )));
                    }
                };
                (x.shape(), dtype)
            }
        };
        let n = shape.iter().product();
        let values = match self.dist {
            Dist::Uniform { low, high } => draw(n, self.seed, |rng, _| low + (high - low) * rng.random::<f64>())?,
            Dist::Normal(d) => draw(n, self.seed, |rng, _| d.sample(rng))?,
        };
        Ok(smallvec::smallvec![store_f64(dtype, shape, &values)?.into()])
    }
}
