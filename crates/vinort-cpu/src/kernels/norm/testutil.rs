//! The norm family's test vocabulary (used by the tests inside `normalization.rs`, `reduce.rs`
//! and `softmax.rs`): the crate's shared test support under the names those tests use, plus
//! what only they need (scale-aware comparison, non-row-major data).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vinort_ir::{Attr, Node};

use crate::test_support as ts;

pub(crate) use crate::test_support::{compile, f32_tensor, run_node as run, strides, unravel};

pub(crate) fn node(op: &str, opset: i64, attrs: Vec<(&str, Attr)>, n_in: usize, n_out: usize) -> Node {
    ts::op(op, opset).inputs(n_in).outputs(n_out).attrs(attrs).build()
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

/// An axis of a rank-`rank` tensor drawn from `pick`, as a model may write it (`-rank..rank`),
/// and the same axis normalised (`0..rank`).
pub(crate) fn pick_axis(pick: u64, rank: usize) -> (i64, usize) {
    let axis = (pick % (2 * rank as u64)) as i64 - rank as i64;
    (axis, if axis < 0 { (axis + rank as i64) as usize } else { axis as usize })
}

/// `n` uniform values in `lo..hi`, from a seed.
pub(crate) fn rand_vec(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random_range(lo..hi)).collect()
}

/// The data as f64, after rounding to f32 (what the kernel actually sees).
pub(crate) fn as_f32(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| *x as f32 as f64).collect()
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
