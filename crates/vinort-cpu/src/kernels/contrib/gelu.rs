//! ONNX Runtime's GELU family and bias fusions (`com.microsoft`):
//!
//! - Gelu: `0.5·x·(1 + erf(x/√2))`; BiasGelu: Gelu of `A + B` with B 1-D over the last axis.
//! - FastGelu: the tanh approximation `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` of
//!   `X (+ bias)`, bias 1-D over the last axis.
//! - BiasAdd: `X + bias + skip`, X and skip `(N, S, C)`, bias `(C)`.
//! - BiasSplitGelu: `s = X + bias` (`X (N, S, D)`, bias `(D)`), split in halves over the last
//!   axis: `left · Gelu(right)`, `(N, S, D/2)`.
//! - BiasSoftmax: softmax of `data + bias` (bias broadcast numpy-style to data) over the
//!   elements of dimensions `axis` and higher together (`axis` default 1; the
//!   `is_inner_broadcast` attribute describes which of two broadcast layouts bias has, both of
//!   which numpy broadcasting covers).
//!
//! ONNX Runtime's CPU provider has Gelu, BiasGelu and FastGelu (f32; f16 through f32);
//! BiasAdd, BiasSplitGelu and BiasSoftmax exist only on its GPU providers, so these follow
//! the documentation.

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::{FLOATS, check_types, fast_gelu, floats, gelu, same_type, store};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};
use crate::kernels::elementwise::broadcast::expand;

pub(crate) fn register(r: &mut Registry) {
    for op in ["Gelu", "BiasGelu", "FastGelu", "BiasAdd", "BiasSplitGelu"] {
        r.op("com.microsoft", op, factory);
    }
    r.op("com.microsoft", "BiasSoftmax", softmax_factory);
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Gelu,
    BiasGelu,
    FastGelu,
    BiasAdd,
    BiasSplitGelu,
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 1, 2], &FLOATS)?;
    let op = match n.op_type.as_str() {
        "Gelu" => Op::Gelu,
        "BiasGelu" => Op::BiasGelu,
        "FastGelu" => Op::FastGelu,
        "BiasAdd" => Op::BiasAdd,
        _ => Op::BiasSplitGelu,
    };
    Ok(Box::new(op))
}

/// A bias over the last axis of `x`: 1-D of the last dimension's size.
fn last_axis_bias(x: &Tensor, b: &Tensor) -> Result<Vec<f64>> {
    same_type(x, b, "bias")?;
    let last = x.shape().last().copied().unwrap_or(1);
    if b.shape() != [last] {
        return Err(Error::invalid(format!("bias {:?} must be [{last}] for input {:?}", b.shape(), x.shape())));
    }
    floats(b, "bias")
}

impl Kernel for Op {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let mut v = floats(x, "input")?;
        let bias = match self {
            Op::Gelu => None,
            Op::FastGelu => opt_tensor_in(inputs, 1)?,
            _ => Some(tensor_in(inputs, 1)?),
        };
        if let Some(b) = bias {
            let b = last_axis_bias(x, b)?;
            let n = b.len().max(1);
            v.iter_mut().enumerate().for_each(|(i, x)| *x += b[i % n]);
        }
        let shape = x.shape();
        let out: Vec<f64> = match self {
            Op::Gelu | Op::BiasGelu => v.into_iter().map(gelu).collect(),
            Op::FastGelu => v.into_iter().map(fast_gelu).collect(),
            Op::BiasAdd => {
                let skip = tensor_in(inputs, 2)?;
                same_type(x, skip, "skip")?;
                if shape.len() != 3 || skip.shape() != shape {
                    return Err(Error::invalid(format!(
                        "BiasAdd needs 3-D X and skip of one shape, got {shape:?} and {:?}",
                        skip.shape()
                    )));
                }
                let s = floats(skip, "skip")?;
                v.iter().zip(&s).map(|(a, b)| a + b).collect()
            }
            Op::BiasSplitGelu => {
                let d = shape.last().copied().unwrap_or(0);
                if shape.len() != 3 || d % 2 != 0 {
                    return Err(Error::invalid(format!("input must be 3-D with an even last dim, got {shape:?}")));
                }
                let half = d / 2;
                let mut o = Vec::with_capacity(v.len() / 2);
                for row in v.chunks(d.max(1)) {
                    o.extend(row[..half].iter().zip(&row[half..]).map(|(l, r)| l * gelu(*r)));
                }
                let out_shape = [shape[0], shape[1], half];
                return Ok(smallvec::smallvec![store(x.dtype(), &out_shape, &o)?.into()]);
            }
        };
        Ok(smallvec::smallvec![store(x.dtype(), shape, &out)?.into()])
    }
}

struct BiasSoftmax {
    axis: i64,
}

fn softmax_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 1], &FLOATS)?;
    // Required by the schema, though numpy broadcasting covers both of its layouts.
    n.req_attr::<i64>("is_inner_broadcast")?;
    Ok(Box::new(BiasSoftmax { axis: n.attr_or::<i64>("axis", 1)? }))
}

impl Kernel for BiasSoftmax {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let b = tensor_in(inputs, 1)?;
        same_type(x, b, "bias")?;
        let shape = x.shape();
        let axis = norm_axis(self.axis, shape.len())?;
        let bv = expand(&floats(b, "bias")?, b.shape(), shape)
            .map_err(|_| Error::invalid(format!("bias {:?} does not broadcast to {shape:?}", b.shape())))?;
        let mut v = floats(x, "input")?;
        v.iter_mut().zip(&bv).for_each(|(x, b)| *x += b);
        let inner = numel(&shape[axis..]);
        for row in v.chunks_mut(inner.max(1)) {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut s = 0.0;
            for x in row.iter_mut() {
                *x = (*x - m).exp();
                s += *x;
            }
            row.iter_mut().for_each(|x| *x /= s);
        }
        Ok(smallvec::smallvec![store(x.dtype(), shape, &v)?.into()])
    }
}
