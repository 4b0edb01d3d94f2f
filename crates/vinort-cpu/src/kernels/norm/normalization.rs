//! [LayerNormalization](https://onnx.ai/onnx/operators/onnx__LayerNormalization.html) (17; ONNX
//! Runtime's identical contrib schema in the default domain for 1-16), ONNX Runtime's
//! SimplifiedLayerNormalization (default domain; an RMS norm that also outputs inv_std_var) and
//! [RMSNormalization](https://onnx.ai/onnx/operators/onnx__RMSNormalization.html) (23), for f32,
//! f64, f16 and bf16 (statistics in f32, or f64 for f64 data), and the pieces the other
//! normalisations share (row statistics, float stores).

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{DType, Result, Tensor, Value};

use super::{Float, FloatKernel, GemmElem, Real, broadcast_to, float_factory, for_rows, load_real, not_float};
use crate::kernel::{NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in, with_numeric};

pub(crate) fn register(r: &mut Registry) {
    for op in ["LayerNormalization", "RMSNormalization"] {
        r.op("", op, float_factory::<LayerNorm>);
    }
}

/// A float tensor of `dtype` (f32 or bf16 for statistics outputs, or any float) from `R`s.
pub(super) fn store_real<R: Real>(dtype: DType, shape: &[usize], v: &[R]) -> Result<Tensor> {
    with_numeric!(float dtype, |T| Ok(Tensor::build::<T>(shape, |o| {
        for (o, v) in o.iter_mut().zip(v) {
            *o = T::store(<T as Float>::R::from_f64(v.to_f64()));
        }
    })), other => Err(not_float(other)))
}

/// Mean and 1/sqrt(var + eps) of a row, two-pass so a large mean does not cancel the variance.
pub(super) fn mean_inv<T: Float>(x: &[T], eps: T::R) -> (T::R, T::R) {
    let n = T::R::from_f64(x.len() as f64);
    let m = sum_by(x, |v| v) / n;
    let q = sum_by(x, |v| {
        let d = v - m;
        d * d
    });
    (m, T::R::ONE / (q / n + eps).sqrt())
}

/// `Σ f(x[i])` in 8 interleaved partial sums, added pairwise at the end: no serial dependency
/// from one element to the next (a single running sum is one, which LLVM may not reorder), so
/// the loop vectorizes; the rounding error also grows more slowly than a running sum's.
#[inline(always)]
pub(super) fn sum_by<T: Float>(x: &[T], f: impl Fn(T::R) -> T::R) -> T::R {
    let mut lanes = [T::R::ZERO; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += f(v.load());
        }
    }
    let mut tail = T::R::ZERO;
    for v in chunks.remainder() {
        tail += f(v.load());
    }
    let [a, b, c, d, e, g, h, i] = lanes;
    ((a + e) + (b + g)) + ((c + h) + (d + i)) + tail
}

/// Scale or bias of LayerNormalization / RMSNormalization after unidirectional broadcasting
/// to X: one row shared by every normalised row (the usual case), or the full tensor.
/// A row already of the compute type and of the normalised extent is read in place.
enum Affine<'a, R: Clone> {
    Row(std::borrow::Cow<'a, [R]>),
    Full(Vec<R>),
}

impl<'a, R: Real + Clone> Affine<'a, R> {
    fn new(t: &'a Tensor, shape: &[usize], axis: usize) -> Result<Affine<'a, R>> {
        let mut from = t.shape();
        let tail = shape.len() - axis;
        while from.len() > tail && from.first() == Some(&1) {
            from = &from[1..];
        }
        if from == &shape[axis..]
            && let Ok(row) = t.as_slice::<R>()
        {
            return Ok(Affine::Row(std::borrow::Cow::Borrowed(row)));
        }
        let v = load_real::<R>(t)?;
        if from.len() <= tail {
            Ok(Affine::Row(std::borrow::Cow::Owned(broadcast_to(&v, from, &shape[axis..])?)))
        } else {
            Ok(Affine::Full(broadcast_to(&v, t.shape(), shape)?))
        }
    }

    fn row(&self, r: usize, len: usize) -> &[R] {
        match self {
            Affine::Row(v) => v,
            Affine::Full(v) => v.get(r * len..(r + 1) * len).unwrap_or(&[]),
        }
    }
}

/// LayerNorm's factory, for the contrib op that runs on it (SimplifiedLayerNormalization).
pub(crate) fn layer_factory(info: &NodeInfo<'_>) -> Result<Box<dyn crate::kernel::Kernel>> {
    float_factory::<LayerNorm>(info)
}

struct LayerNorm {
    axis: i64,
    eps: f32,
    rms: bool,
    /// ONNX Runtime's SimplifiedLayerNormalization (an RMS norm) also outputs inv_std_var.
    inv_out: bool,
    /// Element type of the Mean / InvStdDev outputs (`U`: float or bfloat16).
    stat_dtype: DType,
    /// The node asks for more than Y (Mean and InvStdDev, or inv_std_var).
    want_stats: bool,
}

impl FloatKernel for LayerNorm {
    fn new(info: &NodeInfo<'_>) -> Result<Self> {
        let n = info.node;
        let stat_dtype = match info.outputs.get(1).and_then(|t| t.tensor_dtype()) {
            Some(DType::BF16) => DType::BF16,
            _ => DType::F32,
        };
        // stash_type only asks for at least f32 statistics; this kernel always computes them in f32
        // or f64, so every stash_type is honoured.
        Ok(LayerNorm {
            axis: n.attr_or::<i64>("axis", -1)?,
            eps: n.attr_or::<f32>("epsilon", 1e-5)?,
            rms: matches!(n.op_type.as_str(), "RMSNormalization" | "SimplifiedLayerNormalization"),
            inv_out: n.op_type == "SimplifiedLayerNormalization",
            stat_dtype,
            want_stats: n.outputs.iter().skip(1).any(Option::is_some),
        })
    }

    fn run_t<T: Float>(&self, x: &Tensor, inputs: &[Option<&Value>]) -> Result<Values> {
        let scale = tensor_in(inputs, 1)?;
        let bias = if self.rms { None } else { opt_tensor_in(inputs, 2)? };
        let shape = x.shape();
        let a = norm_axis(self.axis, shape.len())?;
        let inner = numel(&shape[a..]);
        let xs = x.as_slice::<T>()?;
        let scale = Affine::<T::R>::new(scale, shape, a)?;
        let bias = bias.map(|b| Affine::<T::R>::new(b, shape, a)).transpose()?;
        let eps = T::R::from_f64(self.eps as f64);
        let outer = numel(&shape[..a]);
        let rms = self.rms;
        let row_stats = |xr: &[T]| {
            if rms {
                let n = T::R::from_f64(xr.len() as f64);
                let q = sum_by(xr, |v| v * v);
                (T::R::ZERO, T::R::ONE / (q / n + eps).sqrt())
            } else {
                mean_inv(xr, eps)
            }
        };
        let normalise = |r: usize, xr: &[T], yr: &mut [T], (m, inv): (T::R, T::R)| {
            let sc = scale.row(r, inner);
            match &bias {
                Some(b) => {
                    for (((o, v), s), b) in yr.iter_mut().zip(xr).zip(sc).zip(b.row(r, inner)) {
                        *o = T::store((v.load() - m) * inv * *s + *b);
                    }
                }
                None => {
                    for ((o, v), s) in yr.iter_mut().zip(xr).zip(sc) {
                        *o = T::store((v.load() - m) * inv * *s);
                    }
                }
            }
        };
        if !self.want_stats {
            // Y alone: each row's statistics are used where they are computed, nothing kept.
            let y = Tensor::build_full::<T>(shape, |y| {
                for_rows(xs, inner, y, inner, |r, xr, yr| normalise(r, xr, yr, row_stats(xr)));
            });
            return Ok(smallvec::smallvec![y.into()]);
        }
        let mut stats = vec![T::R::ZERO; outer * 2];
        for_rows(xs, inner, &mut stats, 2, |_, xr, st| {
            let (m, inv) = row_stats(xr);
            st.copy_from_slice(&[m, inv]);
        });
        let y = Tensor::build::<T>(shape, |y| {
            for_rows(xs, inner, y, inner, |r, xr, yr| {
                if let Some([m, i]) = stats.get(2 * r..2 * r + 2) {
                    normalise(r, xr, yr, (*m, *i));
                }
            });
        });
        if rms && !self.inv_out {
            return Ok(smallvec::smallvec![y.into()]);
        }
        let stat_shape: Vec<usize> = shape.iter().enumerate().map(|(i, d)| if i < a { *d } else { 1 }).collect();
        let mean: Vec<T::R> = stats.iter().step_by(2).copied().collect();
        let inv: Vec<T::R> = stats.iter().skip(1).step_by(2).copied().collect();
        if rms {
            return Ok(smallvec::smallvec![y.into(), store_real(self.stat_dtype, &stat_shape, &inv)?.into()]);
        }
        Ok(smallvec::smallvec![
            y.into(),
            store_real(self.stat_dtype, &stat_shape, &mean)?.into(),
            store_real(self.stat_dtype, &stat_shape, &inv)?.into(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use vinort_ir::{DType, Tensor};

    use super::super::testutil::*;

    fn y_of(node: &vinort_ir::Node, inputs: &[Option<Tensor>]) -> Vec<f64> {
        run(node, inputs).unwrap()[0].to_f64_vec().unwrap()
    }

    /// Mean and population variance of a list.
    fn stats(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64)
    }

    proptest! {
        #![proptest_config(crate::test_support::config(64))]
        #[test]
        fn layer_and_rms_norm_match_reference(
            shape in prop::collection::vec(0usize..=5, 1..=4),
            axis_pick in any::<u64>(),
            seed in any::<u64>(),
            with_bias in any::<bool>(),
            squeeze_scale in any::<bool>(),
            rms in any::<bool>(),
            transpose in any::<bool>(),
        ) {
            let r = shape.len();
            let (axis, a) = pick_axis(axis_pick, r);
            let tail = &shape[a..];
            // Scale either has the normalised shape or broadcasts to it (first tail dim 1,
            // plus a leading 1).
            let sshape: Vec<usize> = if squeeze_scale && !tail.is_empty() {
                std::iter::once(1).chain(std::iter::once(1)).chain(tail[1..].iter().copied()).collect()
            } else { tail.to_vec() };
            let x = as_f32(&if transpose { transposed(seed, &shape) } else { rand_vec(seed, shape.iter().product(), -2.0, 2.0) });
            let sc = as_f32(&rand_vec(seed ^ 1, sshape.iter().product(), 0.5, 1.5));
            let bshape = tail.to_vec();
            let b = as_f32(&rand_vec(seed ^ 2, bshape.iter().product(), -1.0, 1.0));
            let (outer, inner) = (shape[..a].iter().product::<usize>(), tail.iter().product::<usize>());
            let sval = |i: usize| {
                // Scale index from the tail multi-index, with stride 0 on its size-1 dims.
                let idx = unravel(i, tail);
                let st = strides(&sshape[sshape.len() - tail.len()..]);
                let s = &sshape[sshape.len() - tail.len()..];
                sc[idx.iter().zip(s).zip(&st).map(|((i, d), st)| if *d == 1 { 0 } else { i * st }).sum::<usize>()]
            };
            let eps = 1e-5;
            let mut want = vec![0.0; x.len()];
            let mut scale = vec![0.0; x.len()];
            let mut mean = vec![];
            let mut inv = vec![];
            for o in 0..outer {
                let row = &x[o * inner..(o + 1) * inner];
                let (m, var) = if rms { (0.0, row.iter().map(|v| v * v).sum::<f64>() / inner as f64) } else { stats(row) };
                let is = 1.0 / (var + eps).sqrt();
                mean.push(m);
                inv.push(is);
                for i in 0..inner {
                    let bias = if with_bias && !rms { b[i] } else { 0.0 };
                    want[o * inner + i] = (row[i] - m) * is * sval(i) + bias;
                    scale[o * inner + i] = (row[i].abs() + m.abs() + 1.0) * is * sval(i) + bias.abs();
                }
            }
            let op = if rms { "RMSNormalization" } else { "LayerNormalization" };
            let mut inputs = vec![Some(f32_tensor(&shape, &x)), Some(f32_tensor(&sshape, &sc))];
            if with_bias && !rms {
                inputs.push(Some(f32_tensor(&bshape, &b)));
            }
            let n = node(op, if rms { 23 } else { 17 }, vec![("axis", int(axis))], inputs.len(), if rms { 1 } else { 3 });
            let got = run(&n, &inputs).unwrap();
            assert_close(&got[0].to_f64_vec().unwrap(), &want, &scale, 1e-5, op);
            if !rms {
                let ss: Vec<usize> = shape.iter().enumerate().map(|(i, d)| if i < a { *d } else { 1 }).collect();
                prop_assert_eq!(got[1].shape(), ss.as_slice());
                prop_assert_eq!(got[2].dtype(), DType::F32);
                if inner > 0 {
                    assert_close(&got[1].to_f64_vec().unwrap(), &mean, &vec![2.0; outer], 1e-5, "Mean");
                    assert_close(&got[2].to_f64_vec().unwrap(), &inv, &[], 1e-5, "InvStdDev");
                }
            }
        }

        #[test]
        fn channel_norms_match_reference(
            n in 0usize..=3,
            c in 1usize..=6,
            spatial in prop::collection::vec(0usize..=5, 0..=3),
            seed in any::<u64>(),
            op in prop::sample::select(vec!["Batch", "BatchTrain", "Instance", "Group18", "Group21", "LRN"]),
            pick in any::<u64>(),
        ) {
            let shape: Vec<usize> = [n, c].into_iter().chain(spatial.iter().copied()).collect();
            let s: usize = spatial.iter().product();
            let x = as_f32(&rand_vec(seed, n * c * s, -2.0, 2.0));
            let p = |k: u64, lo: f64, hi: f64, len: usize| as_f32(&rand_vec(seed ^ k, len, lo, hi));
            let at = |ni: usize, ci: usize, si: usize| (ni * c + ci) * s + si;
            let eps = 1e-5;
            let mut want = vec![0.0; x.len()];
            let mut scale = vec![0.0; x.len()];
            let mut extra: Vec<(Vec<f64>, Vec<f64>)> = vec![];
            let (nd, inputs) = match op {
                "Batch" | "BatchTrain" => {
                    let (g, b, mu, var) = (p(1, 0.5, 1.5, c), p(2, -1.0, 1.0, c), p(3, -1.0, 1.0, c), p(4, 0.1, 2.0, c));
                    let train = op == "BatchTrain";
                    let mom = 0.8;
                    let mut rm = vec![];
                    let mut rv = vec![];
                    for ci in 0..c {
                        let vals: Vec<f64> = (0..n).flat_map(|ni| (0..s).map(move |si| (ni, si))).map(|(ni, si)| x[at(ni, ci, si)]).collect();
                        let (m, v) = if train { stats(&vals) } else { (mu[ci], var[ci]) };
                        rm.push(mu[ci] * mom + m * (1.0 - mom));
                        rv.push(var[ci] * mom + v * (1.0 - mom));
                        for ni in 0..n { for si in 0..s {
                            let xv = x[at(ni, ci, si)];
                            want[at(ni, ci, si)] = (xv - m) / (v + eps).sqrt() * g[ci] + b[ci];
                            scale[at(ni, ci, si)] = (xv.abs() + m.abs()) / (v + eps).sqrt() * g[ci] + b[ci].abs();
                        }}
                    }
                    if train && n * s > 0 {
                        extra.push((rm, vec![1.0; c]));
                        extra.push((rv, vec![1.0; c]));
                    }
                    let mut attrs = vec![("momentum", float(mom as f32))];
                    if train { attrs.push(("training_mode", int(1))); }
                    let t = |v: &[f64]| Some(f32_tensor(&[c], v));
                    (node("BatchNormalization", 15, attrs, 5, if train { 3 } else { 1 }),
                        vec![Some(f32_tensor(&shape, &x)), t(&g), t(&b), t(&mu), t(&var)])
                }
                "Instance" | "Group18" | "Group21" => {
                    let divisors: Vec<usize> = (1..=c).filter(|d| c.is_multiple_of(*d)).collect();
                    let groups = if op == "Instance" { c } else { divisors[(pick % divisors.len() as u64) as usize] };
                    let cpg = c / groups;
                    let plen = if op == "Group18" { groups } else { c };
                    let (g, b) = (p(1, 0.5, 1.5, plen), p(2, -1.0, 1.0, plen));
                    for ni in 0..n { for gi in 0..groups {
                        let vals: Vec<f64> = (gi * cpg..(gi + 1) * cpg).flat_map(|ci| (0..s).map(move |si| (ci, si))).map(|(ci, si)| x[at(ni, ci, si)]).collect();
                        let (m, v) = stats(&vals);
                        for ci in gi * cpg..(gi + 1) * cpg { for si in 0..s {
                            let pi = if op == "Group18" { gi } else { ci };
                            let xv = x[at(ni, ci, si)];
                            want[at(ni, ci, si)] = (xv - m) / (v + eps).sqrt() * g[pi] + b[pi];
                            scale[at(ni, ci, si)] = (xv.abs() + m.abs() + 1.0) / (v + eps).sqrt() * g[pi] + b[pi].abs();
                        }}
                    }}
                    let nd = match op {
                        "Instance" => node("InstanceNormalization", 22, vec![], 3, 1),
                        "Group18" => node("GroupNormalization", 18, vec![("num_groups", int(groups as i64))], 3, 1),
                        _ => node("GroupNormalization", 21, vec![("num_groups", int(groups as i64))], 3, 1),
                    };
                    (nd, vec![Some(f32_tensor(&shape, &x)), Some(f32_tensor(&[plen], &g)), Some(f32_tensor(&[plen], &b))])
                }
                _ => {
                    let size = (pick % 5 + 1) as usize;
                    let (alpha, beta, bias) = (0.3, 0.6, 1.5);
                    for ni in 0..n { for ci in 0..c { for si in 0..s {
                        let lo = ci.saturating_sub((size - 1) / 2);
                        let hi = (ci + size / 2).min(c - 1);
                        let sq: f64 = (lo..=hi).map(|k| x[at(ni, k, si)].powi(2)).sum();
                        want[at(ni, ci, si)] = x[at(ni, ci, si)] / (bias + alpha / size as f64 * sq).powf(beta);
                    }}}
                    let attrs = vec![("size", int(size as i64)), ("alpha", float(alpha as f32)), ("beta", float(beta as f32)), ("bias", float(bias as f32))];
                    (node("LRN", 13, attrs, 1, 1), vec![Some(f32_tensor(&shape, &x))])
                }
            };
            let got = run(&nd, &inputs).unwrap();
            assert_close(&got[0].to_f64_vec().unwrap(), &want, &scale, 1e-5, op);
            for (k, (w, s)) in extra.iter().enumerate() {
                assert_close(&got[k + 1].to_f64_vec().unwrap(), w, s, 1e-5, "running stats");
            }
        }

        #[test]
        fn lp_and_mvn_match_reference(
            shape in prop::collection::vec(0usize..=5, 1..=5),
            axis_pick in any::<u64>(),
            seed in any::<u64>(),
            p in 1i64..=2,
            mvn in any::<bool>(),
        ) {
            let r = shape.len();
            let x = as_f32(&rand_vec(seed, shape.iter().product(), -2.0, 2.0));
            let mut want = vec![0.0; x.len()];
            let mut scale = vec![1.0; x.len()];
            // Groups of flat indices normalised together, by explicit index math.
            let (mask, nd) = if mvn {
                let mask: Vec<bool> = (0..r).map(|a| axis_pick >> a & 1 == 1).collect();
                let axes: Vec<i64> = (0..r).filter(|a| mask[*a]).map(|a| if seed & 1 == 1 { a as i64 - r as i64 } else { a as i64 }).collect();
                (mask, node("MeanVarianceNormalization", 13, vec![("axes", ints(&axes))], 1, 1))
            } else {
                let (axis, a) = pick_axis(axis_pick, r);
                ((0..r).map(|d| d == a).collect(), node("LpNormalization", 22, vec![("axis", int(axis)), ("p", int(p))], 1, 1))
            };
            let mut groups: std::collections::BTreeMap<Vec<usize>, Vec<usize>> = Default::default();
            for i in 0..x.len() {
                let key: Vec<usize> = unravel(i, &shape).iter().zip(&mask).map(|(ix, m)| if *m { 0 } else { *ix }).collect();
                groups.entry(key).or_default().push(i);
            }
            for idx in groups.values() {
                let vals: Vec<f64> = idx.iter().map(|i| x[*i]).collect();
                if mvn {
                    let (m, v) = stats(&vals);
                    for i in idx {
                        want[*i] = (x[*i] - m) / (v.sqrt() + 1e-9);
                        scale[*i] = (x[*i].abs() + m.abs()) / (v.sqrt() + 1e-9) * 4.0;
                    }
                } else {
                    let norm = if p == 1 { vals.iter().map(|v| v.abs()).sum::<f64>() } else { vals.iter().map(|v| v * v).sum::<f64>().sqrt() };
                    for i in idx { want[*i] = if norm == 0.0 { 0.0 } else { x[*i] / norm }; }
                }
            }
            let got = run(&nd, &[Some(f32_tensor(&shape, &x))]).unwrap();
            assert_close(&got[0].to_f64_vec().unwrap(), &want, &scale, 1e-5, if mvn { "MVN" } else { "Lp" });
        }
    }

    #[test]
    fn large_inputs_take_the_parallel_paths() {
        let shape = [64, 1000];
        let x = as_f32(&rand_vec(1, 64_000, -2.0, 2.0));
        let sc = vec![1.0; 1000];
        let got = y_of(
            &node("LayerNormalization", 17, vec![], 2, 1),
            &[Some(f32_tensor(&shape, &x)), Some(f32_tensor(&[1000], &sc))],
        );
        for (o, row) in x.chunks(1000).enumerate() {
            let (m, v) = stats(row);
            let want: Vec<f64> = row.iter().map(|x| (x - m) / (v + 1e-5).sqrt()).collect();
            assert_close(&got[o * 1000..(o + 1) * 1000], &want, &[4.0; 1000], 1e-5, "large LayerNorm");
        }
        let shape = [2, 4, 100, 100];
        let x = as_f32(&rand_vec(2, 80_000, -2.0, 2.0));
        let ones = f32_tensor(&[4], &[1.0; 4]);
        let zeros = f32_tensor(&[4], &[0.0; 4]);
        let got = y_of(
            &node("InstanceNormalization", 6, vec![], 3, 1),
            &[Some(f32_tensor(&shape, &x)), Some(ones), Some(zeros)],
        );
        for (r, row) in x.chunks(10_000).enumerate() {
            let (m, v) = stats(row);
            let want: Vec<f64> = row.iter().map(|x| (x - m) / (v + 1e-5).sqrt()).collect();
            assert_close(&got[r * 10_000..(r + 1) * 10_000], &want, &[4.0; 10_000], 1e-5, "large Instance");
        }
    }

    #[test]
    fn half_and_double() {
        let shape = [3, 8];
        let x = rand_vec(3, 24, -2.0, 2.0);
        let sc = rand_vec(4, 8, 0.5, 1.5);
        let want: Vec<f64> = x
            .chunks(8)
            .flat_map(|row| {
                let (m, v) = stats(row);
                row.iter().zip(&sc).map(move |(x, s)| (x - m) / (v + 1e-5).sqrt() * s).collect::<Vec<_>>()
            })
            .collect();
        let n = node("LayerNormalization", 17, vec![], 2, 1);
        let got = y_of(
            &n,
            &[Some(Tensor::from_vec(&shape, x.clone()).unwrap()), Some(Tensor::from_vec(&[8], sc.clone()).unwrap())],
        );
        assert_close(&got, &want, &[], 1e-9, "f64");
        let xh: Vec<half::f16> = x.iter().map(|v| half::f16::from_f64(*v)).collect();
        let sh: Vec<half::f16> = sc.iter().map(|v| half::f16::from_f64(*v)).collect();
        let got =
            run(&n, &[Some(Tensor::from_vec(&shape, xh).unwrap()), Some(Tensor::from_vec(&[8], sh).unwrap())]).unwrap();
        assert_eq!(got[0].dtype(), DType::F16);
        assert_close(&got[0].to_f64_vec().unwrap(), &want, &[4.0; 24], 5e-3, "f16");
    }

    #[test]
    fn bad_inputs_are_errors() {
        let x = f32_tensor(&[2, 4, 3], &[0.5; 24]);
        let c4 = f32_tensor(&[4], &[1.0; 4]);
        let c3 = f32_tensor(&[3], &[1.0; 3]);
        let ln = node("LayerNormalization", 17, vec![("axis", int(1))], 2, 1);
        assert!(run(&ln, &[Some(x.clone()), Some(c4.clone())]).is_err());
        assert!(run(&ln, &[Some(x.clone()), Some(f32_tensor(&[2, 4, 3], &[1.0; 24]))]).is_ok());
        assert!(
            run(&node("LayerNormalization", 17, vec![("axis", int(3))], 2, 1), &[Some(x.clone()), Some(c3.clone())])
                .is_err()
        );
        assert!(run(&ln, &[Some(x.clone()), None]).is_err());
        let bn = node("BatchNormalization", 15, vec![], 5, 1);
        let ins =
            |s: &Tensor| vec![Some(x.clone()), Some(s.clone()), Some(c4.clone()), Some(c4.clone()), Some(c4.clone())];
        assert!(run(&bn, &ins(&c4)).is_ok());
        assert!(run(&bn, &ins(&c3)).is_err());
        assert!(
            run(
                &bn,
                &[
                    Some(f32_tensor(&[4], &[0.0; 4])),
                    Some(c4.clone()),
                    Some(c4.clone()),
                    Some(c4.clone()),
                    Some(c4.clone())
                ]
            )
            .is_err()
        );
        assert!(compile(&node("BatchNormalization", 9, vec![], 5, 3), &[DType::F32]).is_err());
        let gn = node("GroupNormalization", 21, vec![("num_groups", int(3))], 3, 1);
        assert!(run(&gn, &[Some(x.clone()), Some(c4.clone()), Some(c4.clone())]).is_err());
        assert!(compile(&node("GroupNormalization", 21, vec![], 3, 1), &[DType::F32]).is_err());
        let gn18 = node("GroupNormalization", 18, vec![("num_groups", int(2))], 3, 1);
        assert!(run(&gn18, &[Some(x.clone()), Some(c4.clone()), Some(c4.clone())]).is_err());
        assert!(compile(&node("LRN", 13, vec![], 1, 1), &[DType::F32]).is_err());
        assert!(compile(&node("LpNormalization", 22, vec![("p", int(3))], 1, 1), &[DType::F32]).is_err());
        assert!(run(&node("MeanVarianceNormalization", 13, vec![], 1, 1), &[Some(x.clone())]).is_err());
        assert!(
            run(&node("InstanceNormalization", 6, vec![], 3, 1), &[Some(x.clone()), Some(c3.clone()), Some(c4)])
                .is_err()
        );
        assert!(compile(&node("InstanceNormalization", 6, vec![], 3, 1), &[DType::I64]).is_err());
        assert!(run(&node("LRN", 13, vec![("size", int(3))], 1, 1), &[Some(f32_tensor(&[3], &[1.0; 3]))]).is_err());
    }
}
