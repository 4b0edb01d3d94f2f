//! ONNX Runtime's attention-family contrib ops (`com.microsoft`, opset 1), as its
//! [ContribOperators](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)
//! documentation defines them and its CPU kernels (onnxruntime/contrib_ops/cpu/bert,
//! quantization/attention_quant.cc) compute them:
//!
//! - [`bert`][bert]: Attention (the packed input projection, every `mask_index` form, `past` /
//!   `present`, `attention_bias`, `qkv_hidden_sizes`, `past_present_share_buffer`) and
//!   QAttention (the same with an integer projection dequantized by input and weight scales
//!   and zero points, per tensor or per column).
//! - [`mha`][mha]: MultiHeadAttention (separate, cross-BNSH, packed-KV and packed-QKV inputs,
//!   bias, key padding masks, attention_bias, past/present key and value).
//! - [`gqa`][gqa]: GroupQueryAttention (grouped KV heads, right-padded KV cache with
//!   `seqlens_k`, rotary embedding, local window, softcap, smooth softmax / head sinks,
//!   attention_bias, packed QKV).
//!
//! All of them reduce to [`attend`]: per (batch, head, query) the scaled scores against the
//! whole key sequence, adjusted by an op-specific row function (masks, biases, causal spans),
//! a softmax and the weighted sum of values. Values are computed in f64 and rounded once to
//! the output type, like the other contrib kernels; where ONNX Runtime adds a large finite mask
//! value (`mask_filter_value`) in f32, the sum is rounded to f32 so that a fully masked row
//! spreads its weight the way ONNX Runtime's does.

use rayon::prelude::*;
use vinort_ir::{Error, Result, Tensor};

use crate::kernel::Registry;

pub mod bert;
pub mod gqa;
pub mod mha;

#[cfg(test)]
mod tests;

pub(crate) fn register(r: &mut Registry) {
    for family in [bert::register, mha::register, gqa::register] {
        family(r);
    }
}

/// Sizes of one attention call, head-major.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub b: usize,
    /// Query heads.
    pub n: usize,
    /// Key/value heads (query head `h` reads KV head `h / (n / kvn)`).
    pub kvn: usize,
    pub sq: usize,
    /// Keys in the K/V buffers (past + new, or the cache length).
    pub tot: usize,
    pub dk: usize,
    pub dv: usize,
}

/// What the softmax of one query row covers: keys `lo..hi`, of which `lo..v_end` weigh values
/// (ONNX Runtime's GQA multiplies only up to each batch's sequence length); `sink` is an extra
/// logit in the denominator (smooth softmax / head sinks).
pub(crate) struct Span {
    pub lo: usize,
    pub hi: usize,
    pub v_end: usize,
    pub sink: Option<f64>,
}

impl Span {
    pub fn all(tot: usize) -> Span {
        Span { lo: 0, hi: tot, v_end: tot, sink: None }
    }
}

/// The row function: given (batch, head, query index) and the scaled scores of that row,
/// adjusts them in place and says which keys take part.
pub(crate) type RowFn<'a> = dyn Fn(usize, usize, usize, &mut [f64]) -> Span + Sync + 'a;

/// `softmax(row(scale · q·kᵀ)) · v` for every (batch, head, query) of `q [b, n, sq, dk]`,
/// `k [b, kvn, tot, dk]`, `v [b, kvn, tot, dv]`; the result is `[b, sq, n · dv]`.
pub(crate) fn attend(d: &Dims, q: &[f64], k: &[f64], v: &[f64], scale: f64, row: &RowFn<'_>) -> Result<Vec<f64>> {
    let Dims { b, n, kvn, sq, tot, dk, dv } = *d;
    if kvn == 0 || n % kvn != 0 {
        return Err(Error::invalid(format!("{n} query heads do not divide into {kvn} key/value heads")));
    }
    if q.len() != b * n * sq * dk || k.len() != b * kvn * tot * dk || v.len() != b * kvn * tot * dv {
        return Err(Error::invalid("attention buffers do not match their shapes"));
    }
    let group = n / kvn;
    let head = |bh: usize| -> Vec<f64> {
        let (bi, h) = (bh / n, bh % n);
        let kv = bi * kvn + h / group;
        let kh = &k[kv * tot * dk..(kv + 1) * tot * dk];
        let vh = &v[kv * tot * dv..(kv + 1) * tot * dv];
        let mut out = vec![0.0; sq * dv];
        let mut s = vec![0.0; tot];
        for i in 0..sq {
            let qi = &q[(bh * sq + i) * dk..(bh * sq + i + 1) * dk];
            for (j, sj) in s.iter_mut().enumerate() {
                let kj = &kh[j * dk..(j + 1) * dk];
                *sj = scale * qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>();
            }
            let span = row(bi, h, i, &mut s);
            let (lo, hi) = (span.lo.min(tot), span.hi.min(tot));
            if lo >= hi {
                continue;
            }
            let w = &mut s[lo..hi];
            let m = w.iter().copied().chain(span.sink).fold(f64::NEG_INFINITY, f64::max);
            if m == f64::NEG_INFINITY {
                w.fill(0.0);
                continue;
            }
            w.iter_mut().for_each(|x| *x = (*x - m).exp());
            let z: f64 = w.iter().sum::<f64>() + span.sink.map_or(0.0, |s| (s - m).exp());
            let o = &mut out[i * dv..(i + 1) * dv];
            for (j, p) in (lo..span.v_end.min(hi)).zip(w.iter()) {
                let p = p / z;
                for (oc, vc) in o.iter_mut().zip(&vh[j * dv..(j + 1) * dv]) {
                    *oc += p * vc;
                }
            }
        }
        out
    };
    let work = b * n * sq * tot * (dk + dv);
    let heads: Vec<Vec<f64>> = if !crate::par::worth(work, 1 << 15) {
        (0..b * n).map(head).collect()
    } else {
        (0..b * n).into_par_iter().map(head).collect()
    };
    let mut y = vec![0.0; b * sq * n * dv];
    for (bh, yh) in heads.iter().enumerate() {
        let (bi, h) = (bh / n, bh % n);
        for i in 0..sq {
            let dst = ((bi * sq + i) * n + h) * dv;
            y[dst..dst + dv].copy_from_slice(&yh[i * dv..(i + 1) * dv]);
        }
    }
    Ok(y)
}

/// `x + m` as ONNX Runtime forms it in f32 (its mask buffer is the GEMM's accumulator).
#[inline]
pub(crate) fn add32(x: f64, m: f64) -> f64 {
    (x as f32 + m as f32) as f64
}

/// Reorders `[b, s, h · d]` (rows of `stride` values starting at `off`) into `[b, h, s, d]`.
pub(crate) fn split_heads(
    x: &[f64],
    (b, s, h, d): (usize, usize, usize, usize),
    stride: usize,
    off: usize,
) -> Vec<f64> {
    let mut out = vec![0.0; b * h * s * d];
    for bi in 0..b {
        for si in 0..s {
            let src = (bi * s + si) * stride + off;
            for hi in 0..h {
                let dst = ((bi * h + hi) * s + si) * d;
                out[dst..dst + d].copy_from_slice(&x[src + hi * d..src + (hi + 1) * d]);
            }
        }
    }
    out
}

/// Concatenates `past [b, h, sp, d]` and `new [b, h, s, d]` along the sequence axis.
pub(crate) fn concat_seq(past: &[f64], new: &[f64], (b, h, sp, s, d): (usize, usize, usize, usize, usize)) -> Vec<f64> {
    let mut out = Vec::with_capacity(b * h * (sp + s) * d);
    for bh in 0..b * h {
        out.extend_from_slice(&past[bh * sp * d..(bh + 1) * sp * d]);
        out.extend_from_slice(&new[bh * s * d..(bh + 1) * s * d]);
    }
    out
}

/// `attention_bias (1|B, 1|N, S, T)` as values with broadcast strides, checked against the
/// scores' shape.
pub(crate) struct Bias {
    vals: Vec<f64>,
    sb: usize,
    sh: usize,
    t: usize,
    sq: usize,
}

impl Bias {
    pub fn new(t: &Tensor, b: usize, n: usize, sq: usize, tot: usize) -> Result<Bias> {
        let sh = t.shape();
        let ok =
            sh.len() == 4 && (sh[0] == 1 || sh[0] == b) && (sh[1] == 1 || sh[1] == n) && sh[2] == sq && sh[3] == tot;
        if !ok {
            return Err(Error::invalid(format!("attention_bias {sh:?} must be [1 or {b}, 1 or {n}, {sq}, {tot}]")));
        }
        let vals = super::floats(t, "attention_bias")?;
        Ok(Bias {
            sb: if sh[0] == 1 { 0 } else { sh[1] * sq * tot },
            sh: if sh[1] == 1 { 0 } else { sq * tot },
            vals,
            t: tot,
            sq,
        })
    }

    /// The bias row of (batch, head, query).
    pub fn row(&self, b: usize, h: usize, i: usize) -> &[f64] {
        let o = b * self.sb + h * self.sh + i * self.t;
        debug_assert!(i < self.sq);
        &self.vals[o..o + self.t]
    }
}

/// A required positive head-count attribute.
pub(crate) fn heads_attr(n: &vinort_ir::Node, name: &str) -> Result<usize> {
    match n.attr::<i64>(name)? {
        Some(v) if v > 0 => Ok(v as usize),
        Some(v) => Err(n.error(format!("{name} must be positive, got {v}"))),
        None => Err(n.error(format!("attribute {name} is required"))),
    }
}

/// `hidden / heads`, or an error when it does not divide.
pub(crate) fn per_head(hidden: usize, heads: usize, what: &str) -> Result<usize> {
    if heads == 0 || !hidden.is_multiple_of(heads) || hidden == 0 {
        return Err(Error::invalid(format!("{what} hidden size {hidden} is not a positive multiple of {heads} heads")));
    }
    Ok(hidden / heads)
}
