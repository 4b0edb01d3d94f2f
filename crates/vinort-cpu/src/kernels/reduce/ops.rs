//! The ten reductions: [ReduceSum](https://onnx.ai/onnx/operators/onnx__ReduceSum.html),
//! [ReduceMean](https://onnx.ai/onnx/operators/onnx__ReduceMean.html),
//! [ReduceMax](https://onnx.ai/onnx/operators/onnx__ReduceMax.html),
//! [ReduceMin](https://onnx.ai/onnx/operators/onnx__ReduceMin.html),
//! [ReduceProd](https://onnx.ai/onnx/operators/onnx__ReduceProd.html),
//! [ReduceL1](https://onnx.ai/onnx/operators/onnx__ReduceL1.html),
//! [ReduceL2](https://onnx.ai/onnx/operators/onnx__ReduceL2.html),
//! [ReduceLogSum](https://onnx.ai/onnx/operators/onnx__ReduceLogSum.html),
//! [ReduceLogSumExp](https://onnx.ai/onnx/operators/onnx__ReduceLogSumExp.html) and
//! [ReduceSumSquare](https://onnx.ai/onnx/operators/onnx__ReduceSumSquare.html), opsets 1–latest
//! (`axes` an input from 13 for ReduceSum, from 18 for the others).
//!
//! Types: f32, f64, f16 and bf16 (computed in f32), i32, i64, u32, u64; ReduceMax/ReduceMin
//! also i8, u8 and bool. Integer sums and products wrap, as they would in the element type.
//! The folds themselves are in [`super::fold`].

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::elem::{Acc, RElem};
use super::fold::{Extreme, LogSumExp, ProdOf, SumOf, reduce_fold};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};

/// The reductions this file runs, each for the opsets its spec gives.
pub(crate) const OPS: [&str; 10] = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
];

pub(crate) fn register(r: &mut Registry) {
    for op in OPS {
        r.op("", op, reduce_factory);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    L1,
    L2,
    LogSum,
    LogSumExp,
    SumSquare,
}

/// What happens to a folded value before it is stored.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Post {
    None,
    Mean,
    Sqrt,
    Ln,
}

struct Reduce {
    op: Op,
    /// `axes` attribute (before opset 13 for ReduceSum, 18 for the others).
    axes_attr: Option<Vec<i64>>,
    /// Whether `axes` is input 1.
    axes_input: bool,
    keepdims: bool,
    noop_empty: bool,
}

fn reduce_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let op = match n.op_type.as_str() {
        "ReduceSum" => Op::Sum,
        "ReduceMean" => Op::Mean,
        "ReduceMax" => Op::Max,
        "ReduceMin" => Op::Min,
        "ReduceProd" => Op::Prod,
        "ReduceL1" => Op::L1,
        "ReduceL2" => Op::L2,
        "ReduceLogSum" => Op::LogSum,
        "ReduceLogSumExp" => Op::LogSumExp,
        _ => Op::SumSquare,
    };
    if let Some(d) = info.input_dtype(0)
        && !reduce_dtype_ok(op, d)
    {
        return Err(Error::unsupported(format!("{} is not implemented for {d}", n.op_type)));
    }
    // ReduceSum moved `axes` to an input in opset 13, the others in opset 18.
    let axes_input = n.opset >= if op == Op::Sum { 13 } else { 18 };
    let axes_attr = if axes_input { None } else { n.attr::<Vec<i64>>("axes")? };
    Ok(Box::new(Reduce {
        op,
        axes_attr,
        axes_input,
        keepdims: n.attr_or::<i64>("keepdims", 1)? != 0,
        noop_empty: n.attr_or::<i64>("noop_with_empty_axes", 0)? != 0,
    }))
}

fn reduce_dtype_ok(op: Op, d: DType) -> bool {
    use DType::*;
    match d {
        F32 | F64 | F16 | BF16 => true,
        I32 | I64 | U32 | U64 => !matches!(op, Op::LogSum | Op::LogSumExp),
        I8 | U8 | Bool => matches!(op, Op::Max | Op::Min),
        _ => false,
    }
}

/// Validated axes as a per-dimension mask; `None` means "reduce nothing" (the noop case).
fn axes_mask(axes: &[i64], rank: usize, noop_empty: bool) -> Result<Option<Vec<bool>>> {
    if axes.is_empty() {
        return Ok(if noop_empty { None } else { Some(vec![true; rank]) });
    }
    let mut mask = vec![false; rank];
    for &a in axes {
        let a = norm_axis(a, rank)?;
        if std::mem::replace(&mut mask[a], true) {
            return Err(Error::invalid(format!("axis {a} is listed twice in axes {axes:?}")));
        }
    }
    Ok(Some(mask))
}

fn reduced_shape(shape: &[usize], mask: &[bool], keepdims: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&d, &r)| {
            if !r {
                Some(d)
            } else if keepdims {
                Some(1)
            } else {
                None
            }
        })
        .collect()
}

impl Kernel for Reduce {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let axes = match (&self.axes_attr, self.axes_input) {
            (_, true) => opt_tensor_in(inputs, 1)?.map(Tensor::to_i64_vec).transpose()?.unwrap_or_default(),
            (Some(a), false) => a.clone(),
            (None, false) => vec![],
        };
        let Some(mask) = axes_mask(&axes, x.rank(), self.noop_empty)? else {
            return Ok(smallvec::smallvec![x.clone().into()]);
        };
        if !reduce_dtype_ok(self.op, x.dtype()) {
            return Err(Error::unsupported(format!("{:?} reduction of {}", self.op, x.dtype())));
        }
        let out_shape = reduced_shape(x.shape(), &mask, self.keepdims);
        let t = match x.dtype() {
            DType::Bool => self.run_t::<bool>(x, &mask, &out_shape),
            dt => crate::kernel::with_numeric!(dt, |T| self.run_t::<T>(x, &mask, &out_shape), d => {
                Err(Error::unsupported(format!("{:?} reduction of {d}", self.op)))
            }),
        }?;
        Ok(smallvec::smallvec![t.into()])
    }
}

impl Reduce {
    fn run_t<T: RElem>(&self, x: &Tensor, mask: &[bool], out_shape: &[usize]) -> Result<Tensor> {
        let xs = x.as_slice::<T>()?;
        let shape = x.shape();
        let n: usize = shape.iter().zip(mask).filter(|(_, r)| **r).map(|(d, _)| *d).product();
        let post = match self.op {
            Op::Mean => Post::Mean,
            Op::L2 => Post::Sqrt,
            Op::LogSum => Post::Ln,
            _ => Post::None,
        };
        let acc: Vec<T::A> = match self.op {
            Op::Sum | Op::Mean | Op::LogSum => reduce_fold(&SumOf(|v: T::A| v), xs, shape, mask),
            Op::SumSquare | Op::L2 => reduce_fold(&SumOf(|v: T::A| v.mul(v)), xs, shape, mask),
            Op::L1 => reduce_fold(&SumOf(<T::A as Acc>::abs), xs, shape, mask),
            Op::Prod => reduce_fold(&ProdOf, xs, shape, mask),
            Op::Max => reduce_fold(&Extreme::<_, true>(T::lowest()), xs, shape, mask),
            Op::Min => reduce_fold(&Extreme::<_, false>(T::highest()), xs, shape, mask),
            Op::LogSumExp => reduce_fold(&LogSumExp, xs, shape, mask),
        };
        Tensor::from_vec(out_shape, acc.into_iter().map(|a| T::store(finish(a, post, n))).collect())
    }
}

fn finish<A: Acc>(a: A, post: Post, n: usize) -> A {
    match post {
        Post::None => a,
        // Integer means truncate; an empty one is 0 (floats give 0/0 = NaN).
        Post::Mean => a.div_count(n),
        Post::Sqrt => A::from_f64(a.to_f64().sqrt()),
        Post::Ln => A::from_f64(a.to_f64().ln()),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use vinort_ir::{DType, Tensor};

    use crate::kernels::norm::testutil::*;

    use super::OPS;

    /// Reference in f64: each input element is sent to its output by explicit index math.
    /// Returns (values, error scale): the scale is the magnitude f32 rounding is relative to.
    fn reference(op: &str, x: &[f64], shape: &[usize], mask: &[bool]) -> (Vec<f64>, Vec<f64>) {
        let kept: Vec<usize> = shape.iter().zip(mask).filter(|(_, r)| !**r).map(|(d, _)| *d).collect();
        let ks = strides(&kept);
        let out_n: usize = kept.iter().product();
        let n: usize = shape.iter().zip(mask).filter(|(_, r)| **r).map(|(d, _)| *d).product();
        let mut groups: Vec<Vec<f64>> = vec![vec![]; out_n];
        for (i, v) in x.iter().enumerate() {
            let idx = unravel(i, shape);
            let o: usize =
                idx.iter().zip(mask).filter(|(_, r)| !**r).map(|(a, _)| *a).zip(&ks).map(|(a, s)| a * s).sum();
            groups[o].push(*v);
        }
        let mut want = vec![];
        let mut scale = vec![];
        for g in groups {
            assert_eq!(g.len(), n);
            let l1: f64 = g.iter().map(|v| v.abs()).sum();
            let ss: f64 = g.iter().map(|v| v * v).sum();
            let (w, s) = match op {
                "ReduceSum" => (g.iter().sum(), l1),
                "ReduceMean" => (g.iter().sum::<f64>() / n as f64, l1 / n as f64),
                "ReduceMax" => (g.iter().copied().fold(f64::NEG_INFINITY, f64::max), 0.0),
                "ReduceMin" => (g.iter().copied().fold(f64::INFINITY, f64::min), 0.0),
                "ReduceProd" => {
                    let p: f64 = g.iter().product();
                    // A product of n roundings is off by up to ~n ulps.
                    (p, p.abs() * (n as f64 / 160.0).max(1.0))
                }
                "ReduceL1" => (l1, l1),
                "ReduceL2" => (ss.sqrt(), ss.sqrt()),
                "ReduceLogSum" => (g.iter().sum::<f64>().ln(), 1.0),
                "ReduceLogSumExp" => (g.iter().map(|v| v.exp()).sum::<f64>().ln(), 1.0),
                _ => (ss, ss),
            };
            want.push(w);
            scale.push(s);
        }
        (want, scale)
    }

    fn out_shape(shape: &[usize], mask: &[bool], keep: bool) -> Vec<usize> {
        shape
            .iter()
            .zip(mask)
            .filter_map(|(d, r)| {
                if !r {
                    Some(*d)
                } else if keep {
                    Some(1)
                } else {
                    None
                }
            })
            .collect()
    }

    /// Runs `op` with `axes` given the way its opset wants them.
    fn reduce(
        op: &str,
        opset: i64,
        x: Tensor,
        axes: Option<&[i64]>,
        keep: bool,
        noop: bool,
    ) -> vinort_ir::Result<Tensor> {
        let as_input = opset >= if op == "ReduceSum" { 13 } else { 18 };
        let mut attrs = vec![("keepdims", int(keep as i64))];
        if noop {
            attrs.push(("noop_with_empty_axes", int(1)));
        }
        let mut inputs = vec![Some(x)];
        match axes {
            Some(a) if as_input => inputs.push(Some(Tensor::from_slice(&[a.len()], a).unwrap())),
            Some(a) => attrs.push(("axes", ints(a))),
            None => {}
        }
        let n = node(op, opset, attrs, inputs.len(), 1);
        Ok(run(&n, &inputs)?.remove(0))
    }

    /// A random subset of axes, each written as a positive or a negative index, and the mask of
    /// the axes reduced: all of them when the subset is empty (reduce over everything).
    fn pick_axes(seed: u64, rank: usize) -> (Vec<i64>, Vec<bool>) {
        let mut r = StdRng::seed_from_u64(seed);
        let mut mask = vec![false; rank];
        let mut axes = vec![];
        for (a, m) in mask.iter_mut().enumerate() {
            if r.random_bool(0.5) {
                *m = true;
                axes.push(if r.random_bool(0.5) { a as i64 - rank as i64 } else { a as i64 });
            }
        }
        if axes.is_empty() {
            mask = vec![true; rank];
        }
        (axes, mask)
    }

    fn data_for(op: &str, seed: u64, shape: &[usize], transpose: bool) -> Vec<f64> {
        let n = shape.iter().product();
        let x = match op {
            "ReduceProd" => rand_vec(seed, n, 0.9, 1.1),
            "ReduceLogSum" => rand_vec(seed, n, 0.1, 2.0),
            _ if transpose => transposed(seed, shape),
            _ => rand_vec(seed, n, -2.0, 2.0),
        };
        as_f32(&x)
    }

    fn check(op: &str, opset: i64, shape: &[usize], x: &[f64], axes: &[i64], mask: &[bool], keep: bool) {
        let (want, scale) = reference(op, x, shape, mask);
        let got = reduce(op, opset, f32_tensor(shape, x), Some(axes), keep, false).unwrap();
        assert_eq!(got.shape(), out_shape(shape, mask, keep).as_slice(), "{op} {shape:?} {axes:?}");
        assert_close(&got.to_f64_vec().unwrap(), &want, &scale, 1e-5, &format!("{op} {shape:?} axes {axes:?}"));
    }

    proptest! {
        #![proptest_config(crate::test_support::config(200))]
        #[test]
        fn f32_matches_reference(
            shape in prop::collection::vec(0usize..=6, 1..=5),
            op in prop::sample::select(OPS.to_vec()),
            opset in prop::sample::select(vec![11i64, 13, 18, 20]),
            axes_seed in any::<u64>(),
            seed in any::<u64>(),
            keep in any::<bool>(),
            transpose in any::<bool>(),
        ) {
            let (axes, mask) = pick_axes(axes_seed, shape.len());
            let x = data_for(op, seed, &shape, transpose);
            check(op, opset, &shape, &x, &axes, &mask, keep);
        }

        #[test]
        fn ints_match_reference(
            shape in prop::collection::vec(0usize..=5, 1..=4),
            op in prop::sample::select(vec!["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                "ReduceL1", "ReduceL2", "ReduceSumSquare"]),
            axes_seed in any::<u64>(),
            seed in any::<u64>(),
            keep in any::<bool>(),
        ) {
            let (axes, mask) = pick_axes(axes_seed, shape.len());
            let n: usize = shape.iter().product();
            let x: Vec<i64> = rand_vec(seed, n, -9.0, 9.0).iter().map(|v| v.round() as i64).collect();
            // Reference with explicit wrapping i32 arithmetic.
            let kept: Vec<usize> = shape.iter().zip(&mask).filter(|(_, r)| !**r).map(|(d, _)| *d).collect();
            let ks = strides(&kept);
            let cnt: usize = shape.iter().zip(&mask).filter(|(_, r)| **r).map(|(d, _)| *d).product();
            let mut groups: Vec<Vec<i32>> = vec![vec![]; kept.iter().product()];
            for (i, v) in x.iter().enumerate() {
                let idx = unravel(i, &shape);
                let o: usize = idx.iter().zip(&mask).filter(|(_, r)| !**r).map(|(a, _)| *a).zip(&ks).map(|(a, s)| a * s).sum();
                groups[o].push(*v as i32);
            }
            let want: Vec<i64> = groups.iter().map(|g| i64::from(match op {
                "ReduceSum" => g.iter().fold(0i32, |a, b| a.wrapping_add(*b)),
                "ReduceMean" => if cnt == 0 { 0 } else { g.iter().fold(0i32, |a, b| a.wrapping_add(*b)) / cnt as i32 },
                "ReduceMax" => g.iter().copied().fold(i32::MIN, i32::max),
                "ReduceMin" => g.iter().copied().fold(i32::MAX, i32::min),
                "ReduceProd" => g.iter().fold(1i32, |a, b| a.wrapping_mul(*b)),
                "ReduceL1" => g.iter().map(|v| v.abs()).sum(),
                "ReduceL2" => (g.iter().map(|v| f64::from(v * v)).sum::<f64>()).sqrt() as i32,
                _ => g.iter().map(|v| v * v).sum(),
            })).collect();
            let xi: Vec<i32> = x.iter().map(|v| *v as i32).collect();
            let got = reduce(op, 18, Tensor::from_vec(&shape, xi).unwrap(), Some(&axes), keep, false).unwrap();
            prop_assert_eq!(got.dtype(), DType::I32);
            prop_assert_eq!(got.to_i64_vec().unwrap(), want);
            // i64 and u64 run the same code with their own accumulators.
            let got = reduce(op, 18, Tensor::from_vec(&shape, x.clone()).unwrap(), Some(&axes), keep, false).unwrap();
            prop_assert_eq!(got.dtype(), DType::I64);
        }

        #[test]
        fn argmax_argmin_match_reference(
            shape in prop::collection::vec(1usize..=6, 1..=5),
            axis_pick in any::<u64>(),
            seed in any::<u64>(),
            keep in any::<bool>(),
            last in any::<bool>(),
            max in any::<bool>(),
        ) {
            let r = shape.len();
            let (axis, a) = pick_axis(axis_pick, r);
            let n: usize = shape.iter().product();
            // Few distinct values, so ties are common.
            let x: Vec<f64> = rand_vec(seed, n, -3.0, 3.0).iter().map(|v| v.round()).collect();
            let outer: usize = shape[..a].iter().product();
            let inner: usize = shape[a + 1..].iter().product();
            let mut want = vec![];
            for o in 0..outer {
                for i in 0..inner {
                    let vals: Vec<f64> = (0..shape[a]).map(|k| x[(o * shape[a] + k) * inner + i]).collect();
                    let best = vals.iter().copied().fold(if max { f64::NEG_INFINITY } else { f64::INFINITY },
                        |b, v| if max { b.max(v) } else { b.min(v) });
                    let hits: Vec<usize> = (0..vals.len()).filter(|k| vals[*k] == best).collect();
                    want.push(if last { hits[hits.len() - 1] } else { hits[0] } as i64);
                }
            }
            let op = if max { "ArgMax" } else { "ArgMin" };
            let nd = node(op, 13, vec![("axis", int(axis)), ("keepdims", int(keep as i64)),
                ("select_last_index", int(last as i64))], 1, 1);
            let got = run(&nd, &[Some(f32_tensor(&shape, &x))]).unwrap().remove(0);
            let mut ws = shape.clone();
            if keep { ws[a] = 1 } else { ws.remove(a); }
            prop_assert_eq!(got.shape(), ws.as_slice());
            prop_assert_eq!(got.to_i64_vec().unwrap(), want.clone());
            let xi: Vec<i16> = x.iter().map(|v| *v as i16).collect();
            let got = run(&nd, &[Some(Tensor::from_vec(&shape, xi).unwrap())]).unwrap().remove(0);
            prop_assert_eq!(got.to_i64_vec().unwrap(), want);
        }
    }

    #[test]
    fn large_inputs_take_the_parallel_paths() {
        let cases: [(&[usize], &[i64]); 6] = [
            (&[300, 200], &[1]),
            (&[300, 200], &[0]),
            (&[300, 200], &[0, 1]),
            (&[4, 50, 300], &[0, 2]),
            (&[40, 30, 70], &[1]),
            (&[2, 3, 70, 90], &[-4, -2]),
        ];
        for (shape, axes) in cases {
            let mask: Vec<bool> = (0..shape.len() as i64)
                .map(|a| axes.contains(&a) || axes.contains(&(a - shape.len() as i64)))
                .collect();
            for op in OPS {
                let x = data_for(op, 5, shape, false);
                check(op, 18, shape, &x, axes, &mask, true);
            }
        }
    }

    #[test]
    fn empty_reductions_give_identities() {
        let x = f32_tensor(&[2, 0, 3], &[]);
        let expect = [
            ("ReduceSum", 0.0),
            ("ReduceProd", 1.0),
            ("ReduceMax", f64::NEG_INFINITY),
            ("ReduceMin", f64::INFINITY),
            ("ReduceL1", 0.0),
            ("ReduceL2", 0.0),
            ("ReduceSumSquare", 0.0),
            ("ReduceLogSum", f64::NEG_INFINITY),
            ("ReduceLogSumExp", f64::NEG_INFINITY),
            ("ReduceMean", f64::NAN),
        ];
        for (op, v) in expect {
            let got = reduce(op, 18, x.clone(), Some(&[1]), false, false).unwrap();
            assert_eq!(got.shape(), &[2, 3]);
            assert_close(&got.to_f64_vec().unwrap(), &[v; 6], &[], 0.0, op);
            // Reducing a kept empty axis gives an empty output.
            let got = reduce(op, 18, x.clone(), Some(&[0]), true, false).unwrap();
            assert_eq!(got.shape(), &[1, 0, 3]);
        }
        let xi = Tensor::from_vec(&[0, 2], Vec::<i32>::new()).unwrap();
        let got = reduce("ReduceMax", 18, xi, Some(&[0]), false, false).unwrap();
        assert_eq!(got.to_i64_vec().unwrap(), vec![i32::MIN as i64; 2]);
        let xu = Tensor::from_vec(&[0], Vec::<u8>::new()).unwrap();
        let got = reduce("ReduceMin", 18, xu, None, false, false).unwrap();
        assert_eq!(got.to_i64_vec().unwrap(), vec![255]);
    }

    #[test]
    fn axes_forms_and_noop() {
        let shape = [2, 3, 4];
        let x = data_for("ReduceSum", 3, &shape, false);
        let t = f32_tensor(&shape, &x);
        // No axes: everything, unless noop_with_empty_axes.
        let all = reduce("ReduceSum", 13, t.clone(), None, false, false).unwrap();
        assert_eq!(all.shape(), &[] as &[usize]);
        let same = reduce("ReduceSum", 13, t.clone(), None, true, true).unwrap();
        assert_eq!(same.to_f64_vec().unwrap(), t.to_f64_vec().unwrap());
        let same = reduce("ReduceMax", 18, t.clone(), Some(&[]), true, true).unwrap();
        assert_eq!(same.shape(), &shape);
        // ReduceSum opset 11 and ReduceMean opset 13 take the attribute; 13 / 18 the input.
        for (op, opset) in [("ReduceSum", 11), ("ReduceSum", 13), ("ReduceMean", 13), ("ReduceMean", 18)] {
            let m = [false, true, false];
            check(op, opset, &shape, &x, &[-2], &m, false);
        }
        // An attribute on an input-axes opset is ignored, like the spec's removed attribute.
        let n = node("ReduceSum", 13, vec![("axes", ints(&[0]))], 1, 1);
        assert_eq!(run(&n, &[Some(t.clone())]).unwrap()[0].shape(), &[1, 1, 1]);
        // Rank-0 input reduces to itself.
        let s = reduce("ReduceSumSquare", 18, Tensor::scalar(3.0f32), None, true, false).unwrap();
        assert_eq!(s.to_f64_vec().unwrap(), vec![9.0]);
    }

    #[test]
    fn other_types() {
        let shape = [3, 17];
        let x = as_f32(&rand_vec(4, 51, -2.0, 2.0));
        let mask = [false, true];
        for op in OPS {
            let (want, scale) = reference(op, &x, &shape, &mask);
            let t = Tensor::from_vec(&shape, x.clone()).unwrap();
            let got = reduce(op, 18, t, Some(&[1]), true, false).unwrap();
            assert_eq!(got.dtype(), DType::F64);
            assert_close(&got.to_f64_vec().unwrap(), &want, &scale, 1e-12, op);
            let xh: Vec<half::f16> = x.iter().map(|v| half::f16::from_f64(*v)).collect();
            let (want, scale) = reference(op, &xh.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), &shape, &mask);
            let got = reduce(op, 18, Tensor::from_vec(&shape, xh).unwrap(), Some(&[1]), true, false).unwrap();
            assert_eq!(got.dtype(), DType::F16);
            assert_close(&got.to_f64_vec().unwrap(), &want, &scale, 2e-3, op);
        }
        let b = Tensor::from_vec(&[2, 2], vec![true, false, false, false]).unwrap();
        let got = reduce("ReduceMax", 20, b.clone(), Some(&[1]), false, false).unwrap();
        assert_eq!(got.as_slice::<bool>().unwrap(), &[true, false]);
        let got = reduce("ReduceMin", 20, b, Some(&[0]), false, false).unwrap();
        assert_eq!(got.as_slice::<bool>().unwrap(), &[false, false]);
        let u = Tensor::from_vec(&[2, 2], vec![5u64, 7, 1, 2]).unwrap();
        let got = reduce("ReduceProd", 18, u, Some(&[0]), false, false).unwrap();
        assert_eq!(got.as_slice::<u64>().unwrap(), &[5, 14]);
        let nan = f32_tensor(&[3], &[1.0, f64::NAN, 2.0]);
        let got = reduce("ReduceMax", 18, nan, None, false, false).unwrap();
        assert!(got.to_f64_vec().unwrap()[0].is_nan());
        let inf = f32_tensor(&[3], &[f64::INFINITY, 1.0, f64::INFINITY]);
        let got = reduce("ReduceLogSumExp", 18, inf, None, false, false).unwrap();
        assert_eq!(got.to_f64_vec().unwrap(), vec![f64::INFINITY]);
        let big = f32_tensor(&[2], &[100.0, 100.0]);
        let got = reduce("ReduceLogSumExp", 18, big, None, false, false).unwrap();
        assert_close(&got.to_f64_vec().unwrap(), &[100.0 + 2f64.ln()], &[], 1e-6, "lse overflow");
    }

    #[test]
    fn bad_inputs_are_errors() {
        let t = f32_tensor(&[2, 3], &[0.0; 6]);
        assert!(reduce("ReduceSum", 18, t.clone(), Some(&[2]), true, false).is_err());
        assert!(reduce("ReduceSum", 18, t.clone(), Some(&[-3]), true, false).is_err());
        assert!(reduce("ReduceMax", 18, t.clone(), Some(&[1, -1]), true, false).is_err());
        assert!(reduce("ReduceMax", 11, t.clone(), Some(&[0, 0]), true, false).is_err());
        assert!(compile(&node("ReduceLogSum", 18, vec![], 1, 1), &[DType::I32]).is_err());
        assert!(compile(&node("ReduceSum", 18, vec![], 1, 1), &[DType::I8]).is_err());
        assert!(compile(&node("ReduceSum", 18, vec![], 1, 1), &[DType::String]).is_err());
        assert!(compile(&node("ArgMax", 13, vec![], 1, 1), &[DType::Bool]).is_err());
        let i = Tensor::from_vec(&[2], vec![1i32, 2]).unwrap();
        assert!(reduce("ReduceLogSumExp", 18, i, None, true, false).is_err());
        let am = node("ArgMax", 13, vec![("axis", int(1))], 1, 1);
        assert!(run(&am, &[Some(f32_tensor(&[2, 0], &[]))]).is_err());
        assert!(run(&am, &[Some(f32_tensor(&[2], &[1.0, 2.0]))]).is_err());
        // An empty argmax output is fine.
        assert_eq!(run(&am, &[Some(f32_tensor(&[0, 0], &[]))]).unwrap()[0].shape(), &[0, 1]);
    }
}
