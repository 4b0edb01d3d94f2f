//! Per-channel normalisations of `N x C x ...` inputs, for f32, f64, f16 and bf16 (statistics
//! in f32, or f64 for f64 data):
//! [BatchNormalization](https://onnx.ai/onnx/operators/onnx__BatchNormalization.html) (6–15,
//! inference, and `training_mode=1` from 14),
//! [InstanceNormalization](https://onnx.ai/onnx/operators/onnx__InstanceNormalization.html) (1–22) and
//! [GroupNormalization](https://onnx.ai/onnx/operators/onnx__GroupNormalization.html) (18, 21).

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{Error, Result, Tensor, Value};

use super::normalization::{mean_inv, store_real};
use super::{Float, FloatKernel, GemmElem, Real, float_factory, for_rows, load_real, positive_attr};
use crate::kernel::{MAX_OPSET, NodeInfo, Registry, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.add("", "BatchNormalization", 6..=MAX_OPSET, float_factory::<BatchNorm>);
    r.op("", "InstanceNormalization", float_factory::<InstanceNorm>);
    r.op("", "GroupNormalization", float_factory::<GroupNorm>);
}

/// `(N, C, spatial)` of an `N x C x D1 x ...` input.
pub(super) fn ncs(shape: &[usize], op: &str) -> Result<(usize, usize, usize)> {
    match shape {
        [n, c, rest @ ..] => Ok((*n, *c, numel(rest))),
        _ => Err(Error::invalid(format!("{op} needs an input of rank 2 or more (N x C x ...), got {shape:?}"))),
    }
}

/// A per-channel parameter: exactly `c` values.
fn per_channel<R: Real>(t: &Tensor, c: usize, what: &str) -> Result<Vec<R>> {
    if t.rank() != 1 || t.len() != c {
        return Err(Error::invalid(format!("{what} must have shape [{c}], got {:?}", t.shape())));
    }
    load_real(t)
}

struct BatchNorm {
    eps: f32,
    momentum: f32,
    training: bool,
}

impl FloatKernel for BatchNorm {
    fn new(info: &NodeInfo<'_>) -> Result<Self> {
        let n = info.node;
        if n.opset < 9 && n.attr_or::<i64>("spatial", 1)? == 0 {
            return Err(Error::unsupported("BatchNormalization with spatial=0 (per-activation statistics)"));
        }
        let training = n.opset >= 14 && n.attr_or::<i64>("training_mode", 0)? != 0;
        // Before opset 14 the extra outputs were training-only statistics this kernel does not
        // produce; refuse rather than leave them unset.
        if !training && n.outputs.iter().skip(1).any(Option::is_some) {
            return Err(Error::unsupported("BatchNormalization training outputs (mean, var, saved statistics)"));
        }
        Ok(BatchNorm {
            eps: n.attr_or::<f32>("epsilon", 1e-5)?,
            momentum: n.attr_or::<f32>("momentum", 0.9)?,
            training,
        })
    }

    fn run_t<T: Float>(&self, x: &Tensor, inputs: &[Option<&Value>]) -> Result<Values> {
        let (n, c, s) = ncs(x.shape(), "BatchNormalization")?;
        let scale = per_channel::<T::R>(tensor_in(inputs, 1)?, c, "scale")?;
        let b = per_channel::<T::R>(tensor_in(inputs, 2)?, c, "B")?;
        let mean_t = tensor_in(inputs, 3)?;
        let var_t = tensor_in(inputs, 4)?;
        let in_mean = per_channel::<T::R>(mean_t, c, "input_mean")?;
        let in_var = per_channel::<T::R>(var_t, c, "input_var")?;
        let xs = x.as_slice::<T>()?;
        let eps = T::R::from_f64(self.eps as f64);
        let (mean, var) = if self.training { channel_stats(xs, n, c, s) } else { (in_mean.clone(), in_var.clone()) };
        // y = x * k + (B - mean * k), k = scale / sqrt(var + eps): one fused multiply-add.
        let k: Vec<T::R> = scale.iter().zip(&var).map(|(g, v)| *g / (*v + eps).sqrt()).collect();
        let off: Vec<T::R> = b.iter().zip(&mean).zip(&k).map(|((b, m), k)| *b - *m * *k).collect();
        let y = Tensor::build::<T>(x.shape(), |y| {
            for_rows(xs, s, y, s, |r, xr, yr| {
                let ch = r % c.max(1);
                let (k, o) = (k.get(ch).copied().unwrap_or(T::R::ZERO), off.get(ch).copied().unwrap_or(T::R::ZERO));
                for (y, v) in yr.iter_mut().zip(xr) {
                    *y = T::store(v.load() * k + o);
                }
            });
        });
        if !self.training {
            return Ok(smallvec::smallvec![y.into()]);
        }
        let mo = T::R::from_f64(self.momentum as f64);
        let run_mean: Vec<T::R> = in_mean.iter().zip(&mean).map(|(i, m)| *i * mo + *m * (T::R::ONE - mo)).collect();
        let run_var: Vec<T::R> = in_var.iter().zip(&var).map(|(i, v)| *i * mo + *v * (T::R::ONE - mo)).collect();
        Ok(smallvec::smallvec![
            y.into(),
            store_real(mean_t.dtype(), &[c], &run_mean)?.into(),
            store_real(var_t.dtype(), &[c], &run_var)?.into(),
        ])
    }
}

/// Per-channel mean and population variance of an `N x C x S` tensor.
fn channel_stats<T: Float>(x: &[T], n: usize, c: usize, s: usize) -> (Vec<T::R>, Vec<T::R>) {
    let cnt = T::R::from_f64((n * s) as f64);
    let mut sum = vec![T::R::ZERO; c];
    let blocks = || x.chunks_exact(s.max(1)).enumerate().map(move |(r, xr)| (r % c.max(1), xr));
    for (ch, xr) in blocks() {
        for v in xr {
            sum[ch] += v.load();
        }
    }
    let mean: Vec<T::R> = sum.iter().map(|v| *v / cnt).collect();
    let mut sq = vec![T::R::ZERO; c];
    for (ch, xr) in blocks() {
        for v in xr {
            let d = v.load() - mean[ch];
            sq[ch] += d * d;
        }
    }
    (mean, sq.iter().map(|v| *v / cnt).collect())
}

struct InstanceNorm {
    eps: f32,
}

impl FloatKernel for InstanceNorm {
    fn new(info: &NodeInfo<'_>) -> Result<Self> {
        Ok(InstanceNorm { eps: info.node.attr_or::<f32>("epsilon", 1e-5)? })
    }

    fn run_t<T: Float>(&self, x: &Tensor, inputs: &[Option<&Value>]) -> Result<Values> {
        let (scale, bias) = (tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        let (_, c, s) = ncs(x.shape(), "InstanceNormalization")?;
        let scale = per_channel::<T::R>(scale, c, "scale")?;
        let bias = per_channel::<T::R>(bias, c, "B")?;
        let xs = x.as_slice::<T>()?;
        let eps = T::R::from_f64(self.eps as f64);
        let y = Tensor::build::<T>(x.shape(), |y| {
            for_rows(xs, s, y, s, |r, xr, yr| {
                let ch = r % c.max(1);
                let (m, inv) = mean_inv(xr, eps);
                let (g, b) =
                    (scale.get(ch).copied().unwrap_or(T::R::ZERO), bias.get(ch).copied().unwrap_or(T::R::ZERO));
                for (y, v) in yr.iter_mut().zip(xr) {
                    *y = T::store((v.load() - m) * inv * g + b);
                }
            });
        });
        Ok(smallvec::smallvec![y.into()])
    }
}

struct GroupNorm {
    eps: f32,
    groups: usize,
    /// Opset 18 has one scale and bias per group; opset 21 one per channel.
    per_group: bool,
}

impl FloatKernel for GroupNorm {
    fn new(info: &NodeInfo<'_>) -> Result<Self> {
        let n = info.node;
        let groups = positive_attr(n, "num_groups")?;
        Ok(GroupNorm { eps: n.attr_or::<f32>("epsilon", 1e-5)?, groups, per_group: n.opset < 21 })
    }

    fn run_t<T: Float>(&self, x: &Tensor, inputs: &[Option<&Value>]) -> Result<Values> {
        let (scale, bias) = (tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        let (_, c, s) = ncs(x.shape(), "GroupNormalization")?;
        let g = self.groups;
        if !c.is_multiple_of(g) {
            return Err(Error::invalid(format!("{c} channels do not split into {g} groups")));
        }
        let cpg = c / g;
        let params = if self.per_group { g } else { c };
        let scale = per_channel::<T::R>(scale, params, "scale")?;
        let bias = per_channel::<T::R>(bias, params, "bias")?;
        let xs = x.as_slice::<T>()?;
        let eps = T::R::from_f64(self.eps as f64);
        let per_group = self.per_group;
        let row = cpg * s;
        let y = Tensor::build::<T>(x.shape(), |y| {
            for_rows(xs, row, y, row, |r, xr, yr| {
                let grp = r % g;
                let (m, inv) = mean_inv(xr, eps);
                for (k, (xc, yc)) in xr.chunks(s.max(1)).zip(yr.chunks_mut(s.max(1))).enumerate() {
                    let p = if per_group { grp } else { grp * cpg + k };
                    let (sc, b) =
                        (scale.get(p).copied().unwrap_or(T::R::ZERO), bias.get(p).copied().unwrap_or(T::R::ZERO));
                    for (y, v) in yc.iter_mut().zip(xc) {
                        *y = T::store((v.load() - m) * inv * sc + b);
                    }
                }
            });
        });
        Ok(smallvec::smallvec![y.into()])
    }
}
