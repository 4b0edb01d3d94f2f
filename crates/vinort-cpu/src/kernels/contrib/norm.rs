//! The normalisations of ONNX Runtime's transformer fusions (`com.microsoft`):
//!
//! - SkipLayerNormalization / SkipSimplifiedLayerNormalization: `s = input + skip (+ bias)`
//!   normalised over the last axis (LayerNorm, or RMS for the simplified form) times gamma
//!   (plus beta). Input is 2-D or 3-D; skip is the input's shape or its trailing dims
//!   (`(S, H)`, `(1, S, H)`). Outputs: output, mean and inv_std_var (float `(..., 1)`; the
//!   simplified form's mean is zeros) and `input_skip_bias_sum`. Epsilon defaults to 1e-12.
//!   The simplified form's inputs are `input, skip, gamma, bias` (no beta).
//! - EmbedLayerNormalization: word + position (+ segment) embeddings, layer-normalised, with
//!   `mask_index` (ones per row of the int32 mask) and the optional `embedding_sum`.
//! - GroupNorm (diffusion models): group normalisation of NHWC (or NCHW with
//!   `channels_last = 0`) data, optionally followed by SiLU (`activation = 1`).
//!
//! SimplifiedLayerNormalization and the pre-17 LayerNormalization that ONNX Runtime registers
//! in the default ONNX domain run on [`crate::kernels::norm::normalization`]'s kernel.

use vinort_ir::Values;
use vinort_ir::tensor::numel;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::{FLOATS, check_types, floats, same_type, store};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "SkipLayerNormalization", skip_factory);
    r.op("com.microsoft", "SkipSimplifiedLayerNormalization", skip_factory);
    r.op("com.microsoft", "EmbedLayerNormalization", embed_factory);
    r.op("com.microsoft", "GroupNorm", group_factory);
    r.op("", "SimplifiedLayerNormalization", crate::kernels::norm::normalization::layer_factory);
}

/// Mean and 1/sqrt(var + eps) of a row (var is the mean square for RMS).
fn row_stats(row: &[f64], eps: f64, rms: bool) -> (f64, f64) {
    let n = row.len().max(1) as f64;
    if rms {
        let q: f64 = row.iter().map(|v| v * v).sum();
        return (0.0, 1.0 / (q / n + eps).sqrt());
    }
    let m = row.iter().sum::<f64>() / n;
    let q: f64 = row.iter().map(|v| (v - m) * (v - m)).sum();
    (m, 1.0 / (q / n + eps).sqrt())
}

/// A 1-D parameter of `len` values.
fn param(t: &Tensor, len: usize, what: &str) -> Result<Vec<f64>> {
    if t.shape() != [len] {
        return Err(Error::invalid(format!("{what} must have shape [{len}], got {:?}", t.shape())));
    }
    floats(t, what)
}

struct SkipNorm {
    eps: f64,
    simplified: bool,
}

fn skip_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 1, 2, 3, 4], &FLOATS)?;
    let eps = n.attr_or::<f32>("epsilon", 1e-12)?;
    if eps < 0.0 {
        return Err(n.error(format!("epsilon {eps} must not be negative")));
    }
    Ok(Box::new(SkipNorm { eps: eps as f64, simplified: n.op_type == "SkipSimplifiedLayerNormalization" }))
}

impl Kernel for SkipNorm {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let skip = tensor_in(inputs, 1)?;
        let gamma = tensor_in(inputs, 2)?;
        let (beta, bias) = if self.simplified {
            (None, opt_tensor_in(inputs, 3)?)
        } else {
            (opt_tensor_in(inputs, 3)?, opt_tensor_in(inputs, 4)?)
        };
        let shape = x.shape();
        if !(2..=3).contains(&shape.len()) {
            return Err(Error::invalid(format!("input must be 2-D or 3-D, got {shape:?}")));
        }
        let h = shape[shape.len() - 1];
        // skip is the input's shape or its trailing dims, with leading 1s.
        let mut ss = skip.shape();
        while ss.len() > 1 && ss[0] == 1 {
            ss = &ss[1..];
        }
        if !(2..=3).contains(&skip.shape().len()) || !shape.ends_with(ss) || ss.last() != Some(&h) {
            return Err(Error::invalid(format!("skip {:?} does not fit input {shape:?}", skip.shape())));
        }
        for (t, what) in [(Some(skip), "skip"), (Some(gamma), "gamma"), (beta, "beta"), (bias, "bias")] {
            if let Some(t) = t {
                same_type(x, t, what)?;
            }
        }
        let xv = floats(x, "input")?;
        let sv = floats(skip, "skip")?;
        let g = param(gamma, h, "gamma")?;
        let b = beta.map(|t| param(t, h, "beta")).transpose()?;
        let bias = bias.map(|t| param(t, h, "bias")).transpose()?;
        let rows = xv.len().checked_div(h).unwrap_or(0);
        let mut sum = xv;
        for (i, v) in sum.iter_mut().enumerate() {
            *v += sv[i % sv.len().max(1)] + bias.as_ref().map_or(0.0, |b| b[i % h]);
        }
        let mut y = vec![0.0; sum.len()];
        let (mut means, mut invs) = (vec![0.0; rows], vec![0.0; rows]);
        for r in 0..rows {
            let row = &sum[r * h..(r + 1) * h];
            let (m, inv) = row_stats(row, self.eps, self.simplified);
            (means[r], invs[r]) = (m, inv);
            for (k, o) in y[r * h..(r + 1) * h].iter_mut().enumerate() {
                *o = (row[k] - m) * inv * g[k] + b.as_ref().map_or(0.0, |b| b[k]);
            }
        }
        let mut stat_shape = shape.to_vec();
        stat_shape[shape.len() - 1] = 1;
        Ok(smallvec::smallvec![
            store(x.dtype(), shape, &y)?.into(),
            store(DType::F32, &stat_shape, &means)?.into(),
            store(DType::F32, &stat_shape, &invs)?.into(),
            store(x.dtype(), shape, &sum)?.into(),
        ])
    }
}

pub(crate) struct Embed {
    pub(crate) eps: f64,
}

fn embed_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 1, 7], &[DType::I32])?;
    check_types(info, &[2, 3, 4, 5, 6], &FLOATS)?;
    Ok(Box::new(Embed { eps: info.node.attr_or::<f32>("epsilon", 1e-12)? as f64 }))
}

/// Rows of an embedding table picked by ids, each checked against the table's size.
fn lookup(table: &Tensor, what: &str, h: usize) -> Result<(Vec<f64>, usize)> {
    match table.shape() {
        [rows, w] if *w == h => Ok((floats(table, what)?, *rows)),
        s => Err(Error::invalid(format!("{what} must be [rows, {h}], got {s:?}"))),
    }
}

impl Kernel for Embed {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let ids = tensor_in(inputs, 0)?;
        let seg_ids = opt_tensor_in(inputs, 1)?;
        let word = tensor_in(inputs, 2)?;
        let pos = tensor_in(inputs, 3)?;
        let seg = opt_tensor_in(inputs, 4)?;
        let gamma = tensor_in(inputs, 5)?;
        let beta = tensor_in(inputs, 6)?;
        let mask = opt_tensor_in(inputs, 7)?;
        let pos_ids = opt_tensor_in(inputs, 8)?;
        let &[b, s] = ids.shape() else {
            return Err(Error::invalid(format!("input_ids must be [batch, sequence], got {:?}", ids.shape())));
        };
        let h = word.shape().get(1).copied().unwrap_or(0);
        let (wv, wn) = lookup(word, "word_embedding", h)?;
        let (pv, pn) = lookup(pos, "position_embedding", h)?;
        let g = param(gamma, h, "gamma")?;
        let bt = param(beta, h, "beta")?;
        for (t, what) in [(pos, "position_embedding"), (gamma, "gamma"), (beta, "beta")] {
            same_type(word, t, what)?;
        }
        let ints = |t: &Tensor, what: &str| -> Result<Vec<i64>> {
            if t.dtype() != DType::I32 {
                return Err(Error::invalid(format!("{what} must be int32, got {}", t.dtype())));
            }
            t.to_i64_vec()
        };
        let idv = ints(ids, "input_ids")?;
        let segs = match (seg_ids, seg) {
            (Some(i), Some(t)) => {
                if i.shape() != ids.shape() {
                    return Err(Error::invalid(format!("segment_ids {:?} must match input_ids", i.shape())));
                }
                same_type(word, t, "segment_embedding")?;
                Some((ints(i, "segment_ids")?, lookup(t, "segment_embedding", h)?))
            }
            (None, None) => None,
            _ => return Err(Error::invalid("segment_ids and segment_embedding come together")),
        };
        // position_ids is [batch, seq] or [1, seq] (shared by the batch); by default 0..seq.
        let pids = match pos_ids {
            Some(p) => {
                let v = p.to_i64_vec()?;
                if v.len() != s && v.len() != b * s {
                    return Err(Error::invalid(format!("position_ids {:?} must be [batch or 1, {s}]", p.shape())));
                }
                Some(v)
            }
            None => None,
        };
        let row = |n: usize, id: i64, what: &str| -> Result<usize> {
            let i = usize::try_from(id)
                .ok()
                .filter(|i| *i < n)
                .ok_or_else(|| Error::invalid(format!("{what} {id} is outside [0, {n})")))?;
            Ok(i * h)
        };
        let mut sum = vec![0.0; b * s * h];
        let mut y = vec![0.0; b * s * h];
        for t in 0..b * s {
            let p = match &pids {
                Some(v) => v[t % v.len()],
                None => (t % s) as i64,
            };
            let (wr, pr) = (row(wn, idv[t], "input id")?, row(pn, p, "position id")?);
            let out = &mut sum[t * h..(t + 1) * h];
            for (k, o) in out.iter_mut().enumerate() {
                *o = wv[wr + k] + pv[pr + k];
            }
            if let Some((sid, (sv, sn))) = &segs {
                let sr = row(*sn, sid[t], "segment id")?;
                for (k, o) in out.iter_mut().enumerate() {
                    *o += sv[sr + k];
                }
            }
            let (m, inv) = row_stats(out, self.eps, false);
            for k in 0..h {
                y[t * h + k] = (out[k] - m) * inv * g[k] + bt[k];
            }
        }
        let mask_index: Vec<i32> = match mask {
            Some(mt) => {
                let mv = ints(mt, "mask")?;
                if mv.len() != b * s {
                    return Err(Error::invalid(format!("mask {:?} must be [{b}, {s}]", mt.shape())));
                }
                mv.chunks(s.max(1)).map(|r| r.iter().filter(|v| **v == 1).count() as i32).collect()
            }
            None => vec![0; b],
        };
        let dt = word.dtype();
        Ok(smallvec::smallvec![
            store(dt, &[b, s, h], &y)?.into(),
            Tensor::from_vec(&[b], mask_index)?.into(),
            store(dt, &[b, s, h], &sum)?.into(),
        ])
    }
}

struct GroupNorm {
    groups: usize,
    eps: f64,
    silu: bool,
    channels_last: bool,
}

fn group_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 1, 2], &FLOATS)?;
    let groups = n.req_attr::<i64>("groups")?;
    let act = n.req_attr::<i64>("activation")?;
    if groups <= 0 || !(0..=1).contains(&act) {
        return Err(n.error(format!("groups {groups} must be positive and activation {act} 0 or 1")));
    }
    Ok(Box::new(GroupNorm {
        groups: groups as usize,
        eps: n.attr_or::<f32>("epsilon", 1e-5)? as f64,
        silu: act == 1,
        channels_last: n.attr_or::<i64>("channels_last", 1)? != 0,
    }))
}

impl Kernel for GroupNorm {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let gamma = tensor_in(inputs, 1)?;
        let beta = tensor_in(inputs, 2)?;
        let shape = x.shape();
        if shape.len() != 4 {
            return Err(Error::invalid(format!("input must be 4-D, got {shape:?}")));
        }
        let (n, c) = (shape[0], if self.channels_last { shape[3] } else { shape[1] });
        let hw = numel(shape) / (n * c).max(1);
        if c % self.groups != 0 {
            return Err(Error::invalid(format!("{} groups do not divide {c} channels", self.groups)));
        }
        same_type(x, gamma, "gamma")?;
        same_type(x, beta, "beta")?;
        let (g, b) = (param(gamma, c, "gamma")?, param(beta, c, "beta")?);
        let xv = floats(x, "input")?;
        let cpg = c / self.groups;
        // Flat offset of (image, channel, pixel) in either layout.
        let at = |ni: usize, ci: usize, p: usize| {
            if self.channels_last { (ni * hw + p) * c + ci } else { (ni * c + ci) * hw + p }
        };
        let mut y = vec![0.0; xv.len()];
        let mut vals = Vec::with_capacity(cpg * hw);
        for ni in 0..n {
            for gi in 0..self.groups {
                vals.clear();
                for ci in gi * cpg..(gi + 1) * cpg {
                    vals.extend((0..hw).map(|p| xv[at(ni, ci, p)]));
                }
                let (m, inv) = row_stats(&vals, self.eps, false);
                for ci in gi * cpg..(gi + 1) * cpg {
                    for p in 0..hw {
                        let i = at(ni, ci, p);
                        let v = (xv[i] - m) * inv * g[ci] + b[ci];
                        y[i] = if self.silu { v / (1.0 + (-v).exp()) } else { v };
                    }
                }
            }
        }
        Ok(smallvec::smallvec![store(x.dtype(), shape, &y)?.into()])
    }
}
