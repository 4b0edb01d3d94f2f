//! Checks of the linalg kernels against naive references written from the ONNX definitions.
//!
//! References compute in f64 with nested loops over N-d indices; they share no code with the
//! kernels (not even the output-shape rule, which is re-derived here from the spec text).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, Node, Result, Tensor};

use crate::kernel::Registry;
use crate::test_support::{self as ts, Known};
pub(super) use crate::test_support::{config, f32_tensor as t32, tensor};

mod conv;
mod matmul;
mod pool;

/// An attribute list entry.
pub(super) fn ints(name: &str, v: &[i64]) -> (String, Attr) {
    (name.to_string(), Attr::Ints(v.to_vec()))
}
pub(super) fn int(name: &str, v: i64) -> (String, Attr) {
    (name.to_string(), Attr::Int(v))
}
pub(super) fn float(name: &str, v: f32) -> (String, Attr) {
    (name.to_string(), Attr::Float(v))
}
pub(super) fn string(name: &str, v: &str) -> (String, Attr) {
    (name.to_string(), Attr::String(v.to_string()))
}

pub(super) fn node(op: &str, opset: i64, n_in: usize, n_out: usize, attrs: Vec<(String, Attr)>) -> Node {
    ts::op(op, opset).inputs(n_in).outputs(n_out).attrs(attrs).build()
}

/// Compiles `node` with the inputs marked in `consts` known ahead, then runs it.
pub(super) fn run_node(node: &Node, inputs: &[Option<Tensor>], consts: &[usize]) -> Result<Vec<Tensor>> {
    ts::run_with(node, inputs, Known::TypesAndConsts(consts))
}

/// Runs a node and returns its first output.
pub(super) fn run1(node: &Node, inputs: &[Option<Tensor>]) -> Result<Tensor> {
    run_node(node, inputs, &[])?.into_iter().next().ok_or_else(|| vinort_ir::Error::invalid("no output"))
}

pub(super) fn rand_vec(rng: &mut StdRng, n: usize) -> Vec<f64> {
    // Values on a 1/64 grid keep f32 products exact, so only summation order differs.
    (0..n).map(|_| (rng.random_range(-64i32..=64) as f64) / 64.0).collect()
}

pub(super) fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Asserts `got` matches `want` within `rel` relative error (absolute below magnitude 1).
pub(super) fn assert_close(got: &Tensor, want_shape: &[usize], want: &[f64], rel: f64) {
    assert_eq!(got.shape(), want_shape, "shape");
    let g = got.to_f64_vec().unwrap();
    assert_eq!(g.len(), want.len());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        let ok = (a - b).abs() <= rel * b.abs().max(1.0) || (a.is_nan() && b.is_nan()) || a == b;
        assert!(ok, "element {i}: got {a}, want {b} (shape {want_shape:?})");
    }
}

/// Every index of `shape` in row-major order.
pub(super) fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0; shape.len()];
    for _ in 0..n {
        out.push(idx.clone());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Row-major flat offset.
pub(super) fn flat(shape: &[usize], idx: &[usize]) -> usize {
    ts::ravel(idx, shape)
}

/// Transposes a row-major tensor's data by a permutation of its axes; returns the new shape.
pub(super) fn permute(shape: &[usize], data: &[f64], perm: &[usize]) -> (Vec<usize>, Vec<f64>) {
    let out_shape: Vec<usize> = perm.iter().map(|p| shape[*p]).collect();
    let mut out = vec![0.0; data.len()];
    for idx in indices(&out_shape) {
        let mut src = vec![0; shape.len()];
        for (a, p) in perm.iter().enumerate() {
            src[*p] = idx[a];
        }
        out[flat(&out_shape, &idx)] = data[flat(shape, &src)];
    }
    (out_shape, out)
}

pub(super) fn auto_pad_name(i: usize) -> &'static str {
    ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"][i % 4]
}

/// The window of a Conv, ConvTranspose or pool case as its attributes state it.
#[derive(Clone, Debug)]
pub(super) struct Window {
    /// X's spatial extents.
    pub(super) input: Vec<usize>,
    pub(super) kernel: Vec<usize>,
    pub(super) strides: Vec<usize>,
    pub(super) dilations: Vec<usize>,
    /// The begins, then the ends, as the attribute holds them.
    pub(super) pads: Vec<usize>,
    pub(super) auto_pad: &'static str,
}

impl Window {
    /// A window with explicit pads (`auto_pad` NOTSET).
    pub(super) fn explicit(
        input: &[usize],
        kernel: &[usize],
        strides: &[usize],
        dilations: &[usize],
        pads: &[usize],
    ) -> Window {
        Window {
            input: input.to_vec(),
            kernel: kernel.to_vec(),
            strides: strides.to_vec(),
            dilations: dilations.to_vec(),
            pads: pads.to_vec(),
            auto_pad: "NOTSET",
        }
    }

    /// The `strides`, `dilations` and `auto_pad` attributes, and `pads` unless auto_pad
    /// chooses them.
    pub(super) fn attrs(&self) -> Vec<(String, Attr)> {
        let v = |x: &[usize]| x.iter().map(|v| *v as i64).collect::<Vec<_>>();
        let mut a = vec![
            ints("strides", &v(&self.strides)),
            ints("dilations", &v(&self.dilations)),
            string("auto_pad", self.auto_pad),
        ];
        if self.auto_pad == "NOTSET" {
            a.push(ints("pads", &v(&self.pads)));
        }
        a
    }

    /// X's shape for `n` images of `c` channels.
    pub(super) fn x_shape(&self, n: usize, c: usize) -> Vec<usize> {
        [n, c].iter().chain(&self.input).copied().collect()
    }

    /// [`spec_axis`] over every spatial axis: output extents, begin pads and end pads.
    pub(super) fn axes(&self, ceil: bool) -> Option<(Vec<usize>, Vec<i64>, Vec<i64>)> {
        let r = self.input.len();
        let (mut out, mut begin, mut end) = (vec![], vec![], vec![]);
        for i in 0..r {
            let (o, b, e) = spec_axis(
                self.auto_pad,
                self.input[i],
                self.kernel[i],
                self.strides[i],
                self.dilations[i],
                (self.pads[i], self.pads[i + r]),
                ceil,
            )?;
            out.push(o);
            begin.push(b as i64);
            end.push(e as i64);
        }
        Some((out, begin, end))
    }
}

/// Output extent and (begin, end) pads of one axis from the spec's formulas (Conv and pools).
pub(super) fn spec_axis(
    auto_pad: &str,
    inp: usize,
    k: usize,
    s: usize,
    d: usize,
    pads: (usize, usize),
    ceil: bool,
) -> Option<(usize, usize, usize)> {
    let ek = (k - 1) * d + 1;
    match auto_pad {
        "SAME_UPPER" | "SAME_LOWER" => {
            let out = (inp as f64 / s as f64).ceil() as usize;
            let total = ((out as i64 - 1) * s as i64 + ek as i64 - inp as i64).max(0) as usize;
            let begin = if auto_pad == "SAME_UPPER" { total / 2 } else { total - total / 2 };
            Some((out, begin, total - begin))
        }
        "VALID" => {
            if inp < ek {
                return None;
            }
            Some((((inp - ek) as f64 / s as f64).floor() as usize + 1, 0, 0))
        }
        _ => {
            let num = inp as f64 + (pads.0 + pads.1) as f64 - ek as f64;
            if num < 0.0 {
                return None;
            }
            let mut out = if ceil { (num / s as f64 + 1.0).ceil() } else { (num / s as f64 + 1.0).floor() } as usize;
            if ceil && (out - 1) * s >= inp + pads.0 {
                out -= 1;
            }
            Some((out, pads.0, pads.1))
        }
    }
}

#[test]
fn every_op_is_registered() {
    let mut r = Registry::default();
    super::matmul::register(&mut r);
    crate::kernels::conv::standard::register(&mut r);
    crate::kernels::pool::pooling::register(&mut r);
    let mut ops: Vec<_> = r.ops().map(|(_, o)| o).collect();
    ops.sort();
    assert_eq!(
        ops,
        [
            "AveragePool",
            "Conv",
            "ConvTranspose",
            "Gemm",
            "GlobalAveragePool",
            "GlobalLpPool",
            "GlobalMaxPool",
            "LpPool",
            "MatMul",
            "MaxPool"
        ]
    );
}
