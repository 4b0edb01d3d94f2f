//! Shared test scaffolding: build a node, compile it through the registry, run it, and
//! compare against f64 references.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, DType, Node, Result, RunContext, Tensor, Value, ValueId, ValueType};

use crate::kernel::{NodeInfo, Registry};

pub(crate) fn node(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, n_in: usize, n_out: usize) -> Node {
    Node {
        name: format!("{op}_test"),
        op_type: op.into(),
        domain: String::new(),
        opset,
        inputs: (0..n_in).map(|i| Some(ValueId(i as u32))).collect(),
        outputs: (0..n_out).map(|i| Some(ValueId(100 + i as u32))).collect(),
        implicit_inputs: vec![],
        attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        proto: None,
    }
}

fn registry() -> Registry {
    let mut r = Registry::default();
    super::register(&mut r);
    crate::kernels::reduce::register(&mut r);
    r
}

/// Compiles `node` for inputs of these dtypes (None = unknown) and runs it on `inputs`.
pub(crate) fn run(node: &Node, inputs: &[Option<Tensor>]) -> Result<Vec<Tensor>> {
    let types =
        inputs.iter().map(|t| t.as_ref().map_or(ValueType::Unknown, |t| ValueType::tensor(t.dtype(), t.shape())));
    let info = NodeInfo {
        node,
        inputs: types.collect(),
        consts: vec![None; inputs.len()],
        outputs: vec![ValueType::Unknown; node.outputs.len()],
    };
    let f = registry().find(node).map_err(vinort_ir::Error::unsupported)?;
    let k = f(&info)?;
    let vals: Vec<Option<Value>> = inputs.iter().map(|t| t.clone().map(Value::from)).collect();
    let refs: Vec<Option<&Value>> = vals.iter().map(Option::as_ref).collect();
    k.run(&refs, &RunContext::default())?.into_iter().map(Value::into_tensor).collect()
}

/// Only compiles `node` for known input dtypes.
pub(crate) fn compile(node: &Node, dtypes: &[DType]) -> Result<()> {
    let info = NodeInfo {
        node,
        inputs: dtypes.iter().map(|d| ValueType::Tensor(*d, None)).collect(),
        consts: vec![None; dtypes.len()],
        outputs: vec![ValueType::Unknown; node.outputs.len()],
    };
    let f = registry().find(node).map_err(vinort_ir::Error::unsupported)?;
    f(&info).map(|_| ())
}

pub(crate) fn int(v: i64) -> Attr {
    Attr::Int(v)
}

pub(crate) fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

pub(crate) fn float(v: f32) -> Attr {
    Attr::Float(v)
}

/// `n` uniform values in `lo..hi`, from a seed.
pub(crate) fn rand_vec(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random_range(lo..hi)).collect()
}

pub(crate) fn f32_tensor(shape: &[usize], v: &[f64]) -> Tensor {
    Tensor::build::<f32>(shape, |o| o.iter_mut().zip(v).for_each(|(o, v)| *o = *v as f32))
}

/// The data as f64, after rounding to f32 (what the kernel actually sees).
pub(crate) fn as_f32(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| *x as f32 as f64).collect()
}

pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Multi-index of flat offset `i` in `shape`.
pub(crate) fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = i % shape[d];
            i /= shape[d];
        }
    }
    idx
}

/// Data of shape `shape` made by transposing a buffer laid out in the reversed axis order,
/// so the test feeds values that were not produced in row-major order of `shape`.
pub(crate) fn transposed(seed: u64, shape: &[usize]) -> Vec<f64> {
    let rev: Vec<usize> = shape.iter().rev().copied().collect();
    let src = rand_vec(seed, shape.iter().product(), -2.0, 2.0);
    let rs = strides(&rev);
    (0..src.len())
        .map(|i| {
            let idx = unravel(i, shape);
            let off: usize = idx.iter().rev().zip(&rs).map(|(a, s)| a * s).sum();
            src[off]
        })
        .collect()
}

/// Checks `got` against `want` elementwise: |g - w| <= rtol * max(|w|, scale[i]) + atol.
/// `scale` is the magnitude of the terms that formed `want` (for sums, their L1 norm), which
/// is what f32 rounding error is proportional to.
#[track_caller]
pub(crate) fn assert_close(got: &[f64], want: &[f64], scale: &[f64], rtol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let s = scale.get(i).copied().unwrap_or(0.0);
        if w.is_nan() {
            assert!(g.is_nan(), "{what}[{i}]: got {g}, want NaN");
            continue;
        }
        if w.is_infinite() {
            assert_eq!(g, w, "{what}[{i}]");
            continue;
        }
        let tol = rtol * w.abs().max(s) + 1e-30;
        assert!((g - w).abs() <= tol, "{what}[{i}]: got {g}, want {w} (tol {tol})");
    }
}
