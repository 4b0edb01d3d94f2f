//! [NegativeLogLikelihoodLoss](https://onnx.ai/onnx/operators/onnx__NegativeLogLikelihoodLoss.html) and
//! [SoftmaxCrossEntropyLoss](https://onnx.ai/onnx/operators/onnx__SoftmaxCrossEntropyLoss.html).

use vinort_ir::Values;
use vinort_ir::{Error, Node, Result, RunContext, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensors_in};
use crate::kernels::support::{load_f64, store_f64};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "NegativeLogLikelihoodLoss", nll_factory);
    r.op("", "SoftmaxCrossEntropyLoss", sce_factory);
}

/// How per-element losses are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Keep the `(N, d1, ..., dk)` losses.
    None,
    /// Sum them.
    Sum,
    /// Divide the sum by the total weight of the targets that are not ignored.
    Mean,
}

/// The parsed attributes shared by both losses.
#[derive(Clone, Copy, Debug)]
pub struct LossAttrs {
    /// The reduction.
    pub reduction: Reduction,
    /// Target value that contributes nothing, if any.
    pub ignore_index: Option<i64>,
}

impl LossAttrs {
    fn parse(node: &Node) -> Result<LossAttrs> {
        let reduction = node.choice_attr(
            "reduction",
            Some("mean"),
            &[("none", Reduction::None), ("sum", Reduction::Sum), ("mean", Reduction::Mean)],
        )?;
        Ok(LossAttrs { reduction, ignore_index: node.attr::<i64>("ignore_index")? })
    }
}

fn check_float(info: &NodeInfo<'_>, i: usize) -> Result<()> {
    match info.input_dtype(i) {
        Some(d) if !d.is_float() => Err(Error::unsupported(format!(
            "{} input {i} of type {d}: only float types are implemented",
            info.node.qualified_op()
        ))),
        _ => Ok(()),
    }
}

fn nll_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_float(info, 0)?;
    Ok(Box::new(LossKernel { attrs: LossAttrs::parse(info.node)?, softmax: false, log_prob_out: false }))
}

fn sce_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_float(info, 0)?;
    let log_prob_out = info.node.outputs.get(1).is_some_and(Option::is_some);
    Ok(Box::new(LossKernel { attrs: LossAttrs::parse(info.node)?, softmax: true, log_prob_out }))
}

struct LossKernel {
    attrs: LossAttrs,
    softmax: bool,
    log_prob_out: bool,
}

impl Kernel for LossKernel {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let [x, target] = tensors_in(inputs)?;
        let weight = opt_tensor_in(inputs, 2)?;
        let shape = x.shape();
        if shape.len() < 2 {
            return Err(Error::invalid(format!("input of shape {shape:?} needs rank >= 2 (N, C, ...)")));
        }
        let mut vals = load_f64(x)?;
        if self.softmax {
            log_softmax_axis1(&mut vals, shape);
        }
        let t = target.to_i64_vec()?;
        let w = weight.map(load_f64).transpose()?;
        let (loss, loss_shape) = nll(&vals, shape, &t, target.shape(), w.as_deref(), self.attrs)?;
        let mut out: Values = smallvec::smallvec![Value::from(store_f64(x.dtype(), &loss_shape, &loss)?)];
        if self.log_prob_out {
            out.push(Value::from(store_f64(x.dtype(), shape, &vals)?));
        }
        Ok(out)
    }
}

/// Replaces `v` (shape `(N, C, d1, ..., dk)`) by its log-softmax over axis 1.
pub fn log_softmax_axis1(v: &mut [f64], shape: &[usize]) {
    let (n, c) = (shape[0], shape[1]);
    let d: usize = shape[2..].iter().product();
    for b in 0..n {
        for j in 0..d {
            let at = |k: usize| b * c * d + k * d + j;
            let mx = (0..c).map(|k| v[at(k)]).fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = (0..c).map(|k| (v[at(k)] - mx).exp()).sum();
            let lse = mx + s.ln();
            for k in 0..c {
                v[at(k)] -= lse;
            }
        }
    }
}

/// The negative log-likelihood of `x` (shape `(N, C, d1, ..., dk)`) at `target`
/// (shape `(N, d1, ..., dk)`), with its shape.
pub fn nll(
    x: &[f64],
    shape: &[usize],
    target: &[i64],
    target_shape: &[usize],
    weight: Option<&[f64]>,
    attrs: LossAttrs,
) -> Result<(Vec<f64>, Vec<usize>)> {
    let (n, c) = (shape[0], shape[1]);
    let want: Vec<usize> = std::iter::once(n).chain(shape[2..].iter().copied()).collect();
    if target_shape != want.as_slice() {
        return Err(Error::invalid(format!("target shape {target_shape:?} does not match input shape {shape:?}")));
    }
    if let Some(w) = weight
        && w.len() != c
    {
        return Err(Error::invalid(format!("weight has {} elements for {c} classes", w.len())));
    }
    let d: usize = shape[2..].iter().product();
    let mut loss = vec![0.0; n * d];
    let mut wsum = 0.0;
    for b in 0..n {
        for j in 0..d {
            let t = target[b * d + j];
            if attrs.ignore_index == Some(t) {
                continue;
            }
            if t < 0 || t as usize >= c {
                return Err(Error::invalid(format!("target {t} is out of range for {c} classes")));
            }
            let k = t as usize;
            let wt = weight.map_or(1.0, |w| w[k]);
            loss[b * d + j] = -x[b * c * d + k * d + j] * wt;
            wsum += wt;
        }
    }
    Ok(match attrs.reduction {
        Reduction::None => (loss, want),
        Reduction::Sum => (vec![loss.iter().sum()], vec![]),
        Reduction::Mean => (vec![loss.iter().sum::<f64>() / wsum], vec![]),
    })
}
