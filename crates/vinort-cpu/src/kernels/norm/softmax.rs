//! [Softmax](https://onnx.ai/onnx/operators/onnx__Softmax.html),
//! [LogSoftmax](https://onnx.ai/onnx/operators/onnx__LogSoftmax.html) and
//! [Hardmax](https://onnx.ai/onnx/operators/onnx__Hardmax.html), opsets 1–latest, for f32, f64,
//! f16 and bf16.
//!
//! Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each row of the
//! flattened tail is normalised; from opset 13 only the one `axis` (default -1) is. Both are
//! numerically stable: the row maximum is subtracted before exponentiating. An f32 Softmax over
//! the last axis runs [`crate::vmath::softmax_row`] (vectorized exp and sums).

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{DType, Result, Tensor, Value};

use super::{Float, FloatKernel, GemmElem, Real, float_factory, for_rows};
use crate::kernel::{NodeInfo, Registry, norm_axis};

pub(crate) fn register(r: &mut Registry) {
    for op in ["Softmax", "LogSoftmax", "Hardmax"] {
        r.op("", op, float_factory::<Softmax>);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Soft,
    LogSoft,
    Hard,
}

struct Softmax {
    kind: Kind,
    axis: i64,
    /// Opset < 13: normalise over the flattened `shape[axis..]`.
    flatten: bool,
}

impl FloatKernel for Softmax {
    fn new(info: &NodeInfo<'_>) -> Result<Self> {
        let n = info.node;
        let kind = match n.op_type.as_str() {
            "Softmax" => Kind::Soft,
            "LogSoftmax" => Kind::LogSoft,
            _ => Kind::Hard,
        };
        let flatten = n.opset < 13;
        // Opset 13 changed both the meaning of `axis` and its default.
        let axis = n.attr_or::<i64>("axis", if flatten { 1 } else { -1 })?;
        Ok(Softmax { kind, axis, flatten })
    }

    fn run_t<T: Float>(&self, x: &Tensor, _: &[Option<&Value>]) -> Result<Values> {
        let shape = x.shape();
        let a = norm_axis(self.axis, shape.len())?;
        let (n, inner) = if self.flatten { (numel(&shape[a..]), 1) } else { (shape[a], numel(&shape[a + 1..])) };
        let kind = self.kind;
        if kind == Kind::Soft && inner == 1 && x.dtype() == DType::F32 {
            let xs = x.as_slice::<f32>()?;
            // Every element is written by its row: no zeroing first.
            let y = Tensor::build_full::<f32>(shape, |out| {
                for_rows(xs, n, out, n, |_, xr, yr| crate::vmath::softmax_row(xr, yr))
            });
            return Ok(smallvec::smallvec![y.into()]);
        }
        let xs = x.as_slice::<T>()?;
        let y = Tensor::build::<T>(shape, |out| {
            if inner == 1 {
                for_rows(xs, n, out, n, |_, xr, yr| row(kind, xr, yr));
            } else {
                let block = n * inner;
                for_rows(xs, block, out, block, |_, xb, yb| strided(kind, xb, yb, inner));
            }
        });
        Ok(smallvec::smallvec![y.into()])
    }
}

/// Normalises one contiguous row.
fn row<T: Float>(kind: Kind, x: &[T], y: &mut [T]) {
    let mut m = <T::R as Real>::neg_inf();
    let mut arg = 0usize;
    for (i, v) in x.iter().enumerate() {
        let v = v.load();
        if v > m {
            m = v;
            arg = i;
        }
    }
    match kind {
        Kind::Hard => {
            // The first maximum wins; a row of NaN or -inf marks index 0, like ORT.
            for (i, o) in y.iter_mut().enumerate() {
                *o = T::store(if i == arg { <T::R as GemmElem>::ONE } else { <T::R as GemmElem>::ZERO });
            }
        }
        Kind::Soft if !T::EXACT => {
            // Half types round where the ONNX reference computes in the element type (numpy
            // f16): x - max, its exponential and the row sum each round to T, then the
            // quotient does. Rounding once at the end instead differs from the reference by an
            // ulp on about one element in ten (test_attention_4d_causal_fp16_expanded).
            let mut s = <T::R as GemmElem>::ZERO;
            for (o, v) in y.iter_mut().zip(x) {
                let e = T::store(T::store(v.load() - m).load().exp());
                *o = e;
                s += e.load();
            }
            let s = T::store(s).load();
            for o in y.iter_mut() {
                *o = T::store(o.load() / s);
            }
        }
        Kind::Soft => {
            let mut s = <T::R as GemmElem>::ZERO;
            for (o, v) in y.iter_mut().zip(x) {
                let e = (v.load() - m).exp();
                *o = T::store(e);
                s += e;
            }
            let inv = <T::R as GemmElem>::ONE / s;
            for o in y.iter_mut() {
                *o = T::store(o.load() * inv);
            }
        }
        Kind::LogSoft => {
            let mut s = <T::R as GemmElem>::ZERO;
            for v in x {
                s += (v.load() - m).exp();
            }
            // (x - m) - ln s, not x - (m + ln s): the sum would round at the scale of m.
            let ls = s.ln();
            for (o, v) in y.iter_mut().zip(x) {
                *o = T::store((v.load() - m) - ls);
            }
        }
    }
}

/// Normalises a `[n, inner]` block along `n`, a whole row of `inner` lanes at a time so the
/// loops run over contiguous memory.
fn strided<T: Float>(kind: Kind, x: &[T], y: &mut [T], inner: usize) {
    let mut m = vec![<T::R as Real>::neg_inf(); inner];
    let mut arg = vec![0usize; inner];
    for (r, xr) in x.chunks_exact(inner).enumerate() {
        for ((m, a), v) in m.iter_mut().zip(arg.iter_mut()).zip(xr) {
            let v = v.load();
            if v > *m {
                *m = v;
                *a = r;
            }
        }
    }
    let rows = x.chunks_exact(inner).zip(y.chunks_exact_mut(inner));
    match kind {
        Kind::Hard => {
            for (r, (_, yr)) in rows.enumerate() {
                for (o, a) in yr.iter_mut().zip(&arg) {
                    *o = T::store(if *a == r { <T::R as GemmElem>::ONE } else { <T::R as GemmElem>::ZERO });
                }
            }
        }
        Kind::Soft => {
            // Rounding points as in `row`: half types round x - max, the exponential, the sum
            // and the quotient to T, like the reference.
            let half = !T::EXACT;
            let mut s = vec![<T::R as GemmElem>::ZERO; inner];
            for (xr, yr) in rows {
                for (((o, v), m), s) in yr.iter_mut().zip(xr).zip(&m).zip(s.iter_mut()) {
                    let d = v.load() - *m;
                    let e = T::store(if half { T::store(d).load().exp() } else { d.exp() });
                    *o = e;
                    *s += e.load();
                }
            }
            for s in s.iter_mut() {
                *s = if half { T::store(*s).load() } else { <T::R as GemmElem>::ONE / *s };
            }
            for yr in y.chunks_exact_mut(inner) {
                for (o, s) in yr.iter_mut().zip(&s) {
                    *o = T::store(if half { o.load() / *s } else { o.load() * *s });
                }
            }
        }
        Kind::LogSoft => {
            let mut s = vec![<T::R as GemmElem>::ZERO; inner];
            for xr in x.chunks_exact(inner) {
                for ((v, m), s) in xr.iter().zip(&m).zip(s.iter_mut()) {
                    *s += (v.load() - *m).exp();
                }
            }
            for s in s.iter_mut() {
                *s = s.ln();
            }
            for (xr, yr) in rows {
                for (((o, v), m), ls) in yr.iter_mut().zip(xr).zip(&m).zip(&s) {
                    *o = T::store((v.load() - *m) - *ls);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use vinort_ir::{DType, Tensor};

    use super::super::testutil::*;

    /// Straight from the spec, in f64: every output element indexes its own slice.
    fn reference(kind: &str, x: &[f64], shape: &[usize], axis: i64, opset: i64) -> Vec<f64> {
        let rank = shape.len() as i64;
        let a = if axis < 0 { axis + rank } else { axis } as usize;
        let outer: usize = shape[..a].iter().product();
        let (n, inner): (usize, usize) =
            if opset < 13 { (shape[a..].iter().product(), 1) } else { (shape[a], shape[a + 1..].iter().product()) };
        let mut y = vec![0.0; x.len()];
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| o * n * inner + k * inner + i;
                let m = (0..n).map(|k| x[at(k)]).fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = (0..n).map(|k| (x[at(k)] - m).exp()).sum();
                let first = (0..n).find(|&k| x[at(k)] == m);
                for k in 0..n {
                    y[at(k)] = match kind {
                        "Softmax" => (x[at(k)] - m).exp() / s,
                        "LogSoftmax" => x[at(k)] - m - s.ln(),
                        _ => f64::from(Some(k) == first),
                    };
                }
            }
        }
        y
    }

    fn check(kind: &str, shape: &[usize], axis: i64, opset: i64, x: &[f64]) {
        let x = as_f32(x);
        let node = node(kind, opset, vec![("axis", int(axis))], 1, 1);
        let got = run(&node, &[Some(f32_tensor(shape, &x))]).unwrap();
        assert_eq!(got[0].shape(), shape);
        let want = reference(kind, &x, shape, axis, opset);
        let scale = vec![1.0; want.len()];
        assert_close(&got[0].to_f64_vec().unwrap(), &want, &scale, 1e-5, &format!("{kind} {shape:?} axis {axis}"));
    }

    proptest! {
        #![proptest_config(crate::test_support::config(96))]
        #[test]
        fn matches_reference(
            shape in prop::collection::vec(0usize..=6, 1..=5),
            axis_pick in any::<u64>(),
            kind in prop::sample::select(vec!["Softmax", "LogSoftmax", "Hardmax"]),
            opset in prop::sample::select(vec![1i64, 11, 13, 21]),
            seed in any::<u64>(),
            transpose in any::<bool>(),
        ) {
            let (axis, _) = pick_axis(axis_pick, shape.len());
            let n: usize = shape.iter().product();
            // Rounding to a coarse grid makes ties, which Hardmax must break to the first.
            let x: Vec<f64> = if transpose { transposed(seed, &shape) } else {
                rand_vec(seed, n, -4.0, 4.0).iter().map(|v| (v * 4.0).round() / 4.0).collect()
            };
            check(kind, &shape, axis, opset, &x);
        }
    }

    #[test]
    fn opset_11_and_13_differ_on_rank_3() {
        let shape = [2, 3, 4];
        let x = rand_vec(7, 24, -3.0, 3.0);
        let t = f32_tensor(&shape, &x);
        let y11 = run(&node("Softmax", 11, vec![("axis", int(1))], 1, 1), &[Some(t.clone())]).unwrap();
        let y13 = run(&node("Softmax", 13, vec![("axis", int(1))], 1, 1), &[Some(t)]).unwrap();
        let (a, b) = (y11[0].to_f64_vec().unwrap(), y13[0].to_f64_vec().unwrap());
        assert!(a.iter().zip(&b).any(|(a, b)| (a - b).abs() > 1e-3));
        // Opset 11 rows of 12 sum to 1; opset 13 columns of 3 do.
        assert!((a[..12].iter().sum::<f64>() - 1.0).abs() < 1e-5);
        assert!(((b[0] + b[4] + b[8]) - 1.0).abs() < 1e-5);
        check("Softmax", &shape, 1, 11, &x);
        check("Softmax", &shape, 1, 13, &x);
        // Default axes differ too: 1 before opset 13, -1 from it.
        let d11 = run(&node("Softmax", 11, vec![], 1, 1), &[Some(f32_tensor(&shape, &x))]).unwrap();
        assert_eq!(d11[0].to_f64_vec().unwrap(), a);
    }

    #[test]
    fn large_inputs_take_the_parallel_paths() {
        for kind in ["Softmax", "LogSoftmax", "Hardmax"] {
            check(kind, &[64, 1001], -1, 13, &rand_vec(1, 64 * 1001, -5.0, 5.0));
            check(kind, &[8, 301, 21], 1, 13, &rand_vec(2, 8 * 301 * 21, -5.0, 5.0));
            check(kind, &[33, 40, 50], 1, 11, &rand_vec(3, 33 * 2000, -5.0, 5.0));
        }
    }

    #[test]
    fn stable_for_large_magnitudes() {
        let x = [1000.0, 1001.0, -1000.0, 999.0];
        check("Softmax", &[4], 0, 13, &x);
        check("LogSoftmax", &[4], 0, 13, &x);
    }

    #[test]
    fn other_float_types() {
        let shape = [3, 5, 7];
        let x = rand_vec(9, 105, -3.0, 3.0);
        for kind in ["Softmax", "LogSoftmax", "Hardmax"] {
            let want = reference(kind, &x, &shape, 1, 13);
            let n = node(kind, 13, vec![("axis", int(1))], 1, 1);
            let t = Tensor::from_vec(&shape, x.clone()).unwrap();
            let got = run(&n, &[Some(t)]).unwrap()[0].to_f64_vec().unwrap();
            assert_close(&got, &want, &[1.0; 105], 1e-12, "f64");
            let xh: Vec<half::f16> = x.iter().map(|v| half::f16::from_f64(*v)).collect();
            let xr: Vec<f64> = xh.iter().map(|v| v.to_f64()).collect();
            let want = reference(kind, &xr, &shape, 1, 13);
            let got = run(&n, &[Some(Tensor::from_vec(&shape, xh).unwrap())]).unwrap();
            assert_eq!(got[0].dtype(), DType::F16);
            assert_close(&got[0].to_f64_vec().unwrap(), &want, &[1.0; 105], 2e-3, "f16");
            let xb: Vec<half::bf16> = x.iter().map(|v| half::bf16::from_f64(*v)).collect();
            let xr: Vec<f64> = xb.iter().map(|v| v.to_f64()).collect();
            let want = reference(kind, &xr, &shape, 1, 13);
            let got = run(&n, &[Some(Tensor::from_vec(&shape, xb).unwrap())]).unwrap();
            assert_close(&got[0].to_f64_vec().unwrap(), &want, &[1.0; 105], 1e-2, "bf16");
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let t = f32_tensor(&[2, 3], &[0.0; 6]);
        assert!(run(&node("Softmax", 13, vec![("axis", int(2))], 1, 1), &[Some(t.clone())]).is_err());
        assert!(run(&node("Softmax", 13, vec![("axis", int(-3))], 1, 1), &[Some(t)]).is_err());
        assert!(run(&node("Softmax", 13, vec![], 1, 1), &[Some(Tensor::scalar(1.0f32))]).is_err());
        assert!(compile(&node("Softmax", 13, vec![], 1, 1), &[DType::I32]).is_err());
        assert!(
            run(&node("Hardmax", 13, vec![], 1, 1), &[Some(Tensor::from_vec(&[2], vec![1i64, 2]).unwrap())]).is_err()
        );
        assert!(run(&node("Softmax", 13, vec![], 1, 1), &[None]).is_err());
    }
}
