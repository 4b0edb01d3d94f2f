//! The optimizers of the `ai.onnx.preview.training` domain:
//! [Momentum](https://onnx.ai/onnx/operators/onnx_aionnxpreviewtraining_Momentum.html),
//! [Adagrad](https://onnx.ai/onnx/operators/onnx_aionnxpreviewtraining_Adagrad.html),
//! [Adam](https://onnx.ai/onnx/operators/onnx_aionnxpreviewtraining_Adam.html).
//!
//! Inputs are the learning rate `R`, the update count `T`, then `n` tensors of each group
//! (`X`, `G`, then the optimizer's state tensors); outputs are the new `X` and state groups.

use vinort_ir::Values;
use vinort_ir::{Error, Node, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};
use crate::kernels::support::{load_f64, store_f64};

const DOMAIN: &str = "ai.onnx.preview.training";

pub(crate) fn register(r: &mut Registry) {
    r.add(DOMAIN, "Momentum", 1..=1, momentum);
    r.add(DOMAIN, "Adagrad", 1..=1, adagrad);
    r.add(DOMAIN, "Adam", 1..=1, adam);
}

/// The update rule of one optimizer, with its attributes.
#[derive(Clone, Copy, Debug)]
enum Rule {
    Momentum { alpha: f64, beta: f64, norm: f64, nesterov: bool },
    Adagrad { decay: f64, eps: f64, norm: f64 },
    Adam { alpha: f64, beta: f64, eps: f64, norm: f64, norm_post: f64 },
}

impl Rule {
    /// Tensors per parameter: X, G and the state tensors.
    fn group(self) -> usize {
        match self {
            Rule::Momentum { .. } | Rule::Adagrad { .. } => 3,
            Rule::Adam { .. } => 4,
        }
    }
}

fn f(node: &Node, name: &str, default: Option<f32>) -> Result<f64> {
    Ok(match default {
        Some(d) => node.attr_or::<f32>(name, d)?,
        None => node.req_attr::<f32>(name)?,
    } as f64)
}

fn momentum(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let nesterov = n.choice_attr("mode", None, &[("standard", false), ("nesterov", true)])?;
    let rule = Rule::Momentum {
        alpha: f(n, "alpha", None)?,
        beta: f(n, "beta", None)?,
        norm: f(n, "norm_coefficient", None)?,
        nesterov,
    };
    Ok(Box::new(Optimizer { rule }))
}

fn adagrad(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let rule = Rule::Adagrad {
        decay: f(n, "decay_factor", Some(0.0))?,
        eps: f(n, "epsilon", Some(1e-6))?,
        norm: f(n, "norm_coefficient", Some(0.0))?,
    };
    Ok(Box::new(Optimizer { rule }))
}

fn adam(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let rule = Rule::Adam {
        alpha: f(n, "alpha", Some(0.9))?,
        beta: f(n, "beta", Some(0.999))?,
        eps: f(n, "epsilon", Some(1e-6))?,
        norm: f(n, "norm_coefficient", Some(0.0))?,
        norm_post: f(n, "norm_coefficient_post", Some(0.0))?,
    };
    Ok(Box::new(Optimizer { rule }))
}

struct Optimizer {
    rule: Rule,
}

fn scalar_f64(t: &Tensor) -> Result<f64> {
    match t.to_f64_vec()?.as_slice() {
        [v] => Ok(*v),
        _ => Err(Error::invalid(format!("expected a scalar, got shape {:?}", t.shape()))),
    }
}

impl Kernel for Optimizer {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let g = self.rule.group();
        if inputs.len() < 2 || !(inputs.len() - 2).is_multiple_of(g) {
            return Err(Error::invalid(format!("{} inputs do not form R, T and groups of {g}", inputs.len())));
        }
        let n = (inputs.len() - 2) / g;
        let r = scalar_f64(tensor_in(inputs, 0)?)?;
        let t = scalar_f64(tensor_in(inputs, 1)?)?;
        let mut outs: Vec<Vec<Value>> = vec![Vec::new(); g - 1];
        for i in 0..n {
            let ts = (0..g).map(|k| tensor_in(inputs, 2 + k * n + i)).collect::<Result<Vec<_>>>()?;
            let x = ts[0];
            let vals = ts.iter().map(|t| load_f64(t)).collect::<Result<Vec<_>>>()?;
            if let Some(bad) = ts.iter().find(|u| u.shape() != x.shape()) {
                return Err(Error::invalid(format!("shapes {:?} and {:?} differ", x.shape(), bad.shape())));
            }
            let new = update(self.rule, r, t, &vals);
            for (k, v) in new.iter().enumerate() {
                outs[k].push(Value::from(store_f64(ts[if k == 0 { 0 } else { k + 1 }].dtype(), x.shape(), v)?));
            }
        }
        Ok(outs.into_iter().flatten().collect())
    }
}

/// New X and state tensors from X, G and the old state.
fn update(rule: Rule, r: f64, t: f64, v: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let (x, g) = (&v[0], &v[1]);
    let len = x.len();
    match rule {
        Rule::Momentum { alpha, beta, norm, nesterov } => {
            let b = if t > 0.0 { beta } else { 1.0 };
            let mut xn = vec![0.0; len];
            let mut vn = vec![0.0; len];
            for i in 0..len {
                let gr = norm * x[i] + g[i];
                vn[i] = alpha * v[2][i] + b * gr;
                xn[i] = if nesterov { x[i] - r * (gr + alpha * vn[i]) } else { x[i] - r * vn[i] };
            }
            vec![xn, vn]
        }
        Rule::Adagrad { decay, eps, norm } => {
            let rr = r / (1.0 + t * decay);
            let mut xn = vec![0.0; len];
            let mut hn = vec![0.0; len];
            for i in 0..len {
                let gr = norm * x[i] + g[i];
                hn[i] = v[2][i] + gr * gr;
                xn[i] = x[i] - rr * gr / (hn[i].sqrt() + eps);
            }
            vec![xn, hn]
        }
        Rule::Adam { alpha, beta, eps, norm, norm_post } => {
            let rr = if t > 0.0 { r * (1.0 - beta.powf(t)).sqrt() / (1.0 - alpha.powf(t)) } else { r };
            let mut xn = vec![0.0; len];
            let mut vn = vec![0.0; len];
            let mut hn = vec![0.0; len];
            for i in 0..len {
                let gr = norm * x[i] + g[i];
                vn[i] = alpha * v[2][i] + (1.0 - alpha) * gr;
                hn[i] = beta * v[3][i] + (1.0 - beta) * gr * gr;
                xn[i] = (1.0 - norm_post) * (x[i] - rr * vn[i] / (hn[i].sqrt() + eps));
            }
            vec![xn, vn, hn]
        }
    }
}
