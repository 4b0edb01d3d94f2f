//! com.microsoft MultiHeadAttention: attention over already-projected Q, K and V.
//!
//! Query is `[B, S, D]` with key/value `[B, L, D]` / `[B, L, Dv]` (bias `[D + D + Dv]` added
//! to each), or already split into heads as `[B, N, L, H]` (cross attention from a cache:
//! only the query bias applies, and they are the present key/value as they are); key may be
//! a packed `[B, L, N, 2, H]` K/V (value absent), and query a packed `[B, S, N, 3, H]` Q/K/V
//! (key and value absent). `key_padding_mask` is `[B]` key lengths or a 0/1 `[B, T]` or
//! `[B, S, T]` mask whose zeros add `mask_filter_value`; `attention_bias` is
//! `[1|B, 1|N, S, T]`; `past_key`/`past_value` `[B, N, P, H]` are prepended into
//! `present_key`/`present_value` `[B, N, P + L, H]`; `unidirectional` hides keys after `P + i`.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::bert::MaskRows;
use super::{Bias, Dims, Span, add32, attend, concat_seq, heads_attr, per_head, split_heads};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::contrib::{FLOATS, check_types, floats, same_type, store};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "MultiHeadAttention", factory);
}

struct Mha {
    heads: usize,
    causal: bool,
    filter: f64,
    scale: Option<f64>,
    want: [bool; 3],
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    check_types(info, &[0, 1, 2, 3, 5, 6, 7], &FLOATS)?;
    check_types(info, &[4], &[DType::I32])?;
    if n.outputs.get(3).is_some_and(Option::is_some) {
        return Err(n.error("the qk output is not supported"));
    }
    let mut want = [false; 3];
    for (w, o) in want.iter_mut().zip(&n.outputs) {
        *w = o.is_some();
    }
    Ok(Box::new(Mha {
        heads: heads_attr(n, "num_heads")?,
        causal: n.attr_or::<i64>("unidirectional", 0)? != 0,
        filter: n.attr_or::<f32>("mask_filter_value", -10000.0)? as f64,
        scale: n.attr::<f32>("scale")?.filter(|s| *s != 0.0).map(f64::from),
        want,
    }))
}

/// Q, K, V head-major (`[B, N, S|L, H]`), whether K/V came in as heads already, and sizes.
struct Qkv {
    q: Vec<f64>,
    k: Vec<f64>,
    v: Vec<f64>,
    s: usize,
    l: usize,
    h: usize,
    hv: usize,
    kv_bnsh: bool,
}

impl Mha {
    fn project(&self, q: &Tensor, k: Option<&Tensor>, v: Option<&Tensor>, bias: Option<&[f64]>) -> Result<Qkv> {
        let n = self.heads;
        let qv = floats(q, "query")?;
        let bias_at = |off: usize, len: usize| -> Result<Option<&[f64]>> {
            match bias {
                None => Ok(None),
                Some(bv) if off + len <= bv.len() => Ok(Some(&bv[off..off + len])),
                Some(bv) => Err(Error::invalid(format!("bias has {} values, needs {}", bv.len(), off + len))),
            }
        };
        let add = |x: &mut [f64], bv: Option<&[f64]>| {
            if let Some(bv) = bv {
                for row in x.chunks_mut(bv.len()) {
                    row.iter_mut().zip(bv).for_each(|(x, b)| *x += b);
                }
            }
        };
        match (q.shape(), k.map(Tensor::shape), v.map(Tensor::shape)) {
            // Packed Q/K/V [B, S, N, 3, H].
            ([b, s, n2, 3, h], None, None) if *n2 == n => {
                let (b, s, h) = (*b, *s, *h);
                let mut qkv = qv;
                if let Some(bv) = bias_at(0, 3 * n * h)? {
                    // Bias is [Dq | Dk | Dv]; the data interleaves (n, 3, h).
                    for row in qkv.chunks_mut(3 * n * h) {
                        for hi in 0..n {
                            for t in 0..3 {
                                for c in 0..h {
                                    row[(hi * 3 + t) * h + c] += bv[t * n * h + hi * h + c];
                                }
                            }
                        }
                    }
                }
                let part = |t: usize| -> Vec<f64> {
                    let mut out = vec![0.0; b * n * s * h];
                    for bi in 0..b {
                        for si in 0..s {
                            for hi in 0..n {
                                let src = (((bi * s + si) * n + hi) * 3 + t) * h;
                                let dst = ((bi * n + hi) * s + si) * h;
                                out[dst..dst + h].copy_from_slice(&qkv[src..src + h]);
                            }
                        }
                    }
                    out
                };
                Ok(Qkv { q: part(0), k: part(1), v: part(2), s, l: s, h, hv: h, kv_bnsh: false })
            }
            ([b, s, d], Some(ks), vs) => {
                let (b, s, d) = (*b, *s, *d);
                let h = per_head(d, n, "query")?;
                let mut qv = qv;
                add(&mut qv, bias_at(0, d)?);
                let q = split_heads(&qv, (b, s, n, h), d, 0);
                let kv = floats(k.ok_or_else(|| Error::invalid("key is missing"))?, "key")?;
                match (ks, vs) {
                    ([b2, l, dk], Some([b3, l2, dv])) if *b2 == b && *b3 == b && l == l2 && *dk == d => {
                        let (l, dv) = (*l, *dv);
                        let hv = per_head(dv, n, "value")?;
                        let (mut kv, mut vv) =
                            (kv, floats(v.ok_or_else(|| Error::invalid("value is missing"))?, "value")?);
                        add(&mut kv, bias_at(d, d)?);
                        add(&mut vv, bias_at(2 * d, dv)?);
                        let k = split_heads(&kv, (b, l, n, h), d, 0);
                        let v = split_heads(&vv, (b, l, n, hv), dv, 0);
                        Ok(Qkv { q, k, v, s, l, h, hv, kv_bnsh: false })
                    }
                    ([b2, n2, l, hk], Some([b3, n3, l2, hv]))
                        if *b2 == b && *b3 == b && *n2 == n && *n3 == n && l == l2 && *hk == h =>
                    {
                        let vv = floats(v.ok_or_else(|| Error::invalid("value is missing"))?, "value")?;
                        Ok(Qkv { q, k: kv, v: vv, s, l: *l, h, hv: *hv, kv_bnsh: true })
                    }
                    ([b2, l, n2, 2, hk], None) if *b2 == b && *n2 == n && *hk == h => {
                        let l = *l;
                        let mut kv = kv;
                        if let Some(bv) = bias_at(d, 2 * d)? {
                            for row in kv.chunks_mut(2 * d) {
                                for hi in 0..n {
                                    for t in 0..2 {
                                        for c in 0..h {
                                            row[(hi * 2 + t) * h + c] += bv[t * d + hi * h + c];
                                        }
                                    }
                                }
                            }
                        }
                        // [B, L, N, 2, H] → K and V halves, head-major.
                        let half = |t: usize| -> Vec<f64> {
                            let mut out = vec![0.0; b * n * l * h];
                            for bi in 0..b {
                                for li in 0..l {
                                    for hi in 0..n {
                                        let src = ((bi * l + li) * n + hi) * 2 * h + t * h;
                                        let dst = ((bi * n + hi) * l + li) * h;
                                        out[dst..dst + h].copy_from_slice(&kv[src..src + h]);
                                    }
                                }
                            }
                            out
                        };
                        Ok(Qkv { q, k: half(0), v: half(1), s, l, h, hv: h, kv_bnsh: false })
                    }
                    (ks, vs) => Err(Error::invalid(format!(
                        "key {ks:?} and value {vs:?} fit none of [B, L, D] / [B, L, Dv], [B, N, L, H] / [B, N, L, Hv] and packed [B, L, N, 2, H]"
                    ))),
                }
            }
            (qs, ks, vs) => Err(Error::invalid(format!(
                "query {qs:?} (key {ks:?}, value {vs:?}) must be [B, S, D] or packed [B, S, {n}, 3, H] without key and value"
            ))),
        }
    }
}

impl Kernel for Mha {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let q = tensor_in(inputs, 0)?;
        let [k, v, bias, mask, attn_bias, pk, pv] = [1, 2, 3, 4, 5, 6, 7].map(|i| opt_tensor_in(inputs, i));
        let (k, v, bias, mask, attn_bias, pk, pv) = (k?, v?, bias?, mask?, attn_bias?, pk?, pv?);
        for (t, what) in [(k, "key"), (v, "value"), (bias, "bias"), (pk, "past_key"), (pv, "past_value")] {
            if let Some(t) = t {
                same_type(q, t, what)?;
            }
        }
        let bias = bias.map(|t| floats(t, "bias")).transpose()?;
        let Qkv { q: qh, k: kh, v: vh, s, l, h, hv, kv_bnsh } = self.project(q, k, v, bias.as_deref())?;
        let (b, n) = (q.shape()[0], self.heads);
        let (p, kall, vall) = match (pk, pv) {
            (None, None) => (0, kh, vh),
            (Some(pk), Some(pv)) if !kv_bnsh => {
                let p = match (pk.shape(), pv.shape()) {
                    ([b2, n2, p, h2], [b3, n3, p2, h3])
                        if *b2 == b && *b3 == b && *n2 == n && *n3 == n && p == p2 && *h2 == h && *h3 == hv =>
                    {
                        *p
                    }
                    (a, c) => {
                        return Err(Error::invalid(format!(
                            "past_key {a:?} / past_value {c:?} must be [{b}, {n}, P, {h}] / [{b}, {n}, P, {hv}]"
                        )));
                    }
                };
                let (pk, pv) = (floats(pk, "past_key")?, floats(pv, "past_value")?);
                (p, concat_seq(&pk, &kh, (b, n, p, l, h)), concat_seq(&pv, &vh, (b, n, p, l, hv)))
            }
            (Some(_), Some(_)) => {
                return Err(Error::invalid("past_key/past_value cannot go with key/value given as [B, N, L, H]"));
            }
            _ => return Err(Error::invalid("past_key and past_value go together")),
        };
        let tot = p + l;
        let mask = mask.map(|m| MaskRows::new(m, b, s, p, tot, self.filter)).transpose()?;
        let attn_bias = attn_bias.map(|t| Bias::new(t, b, n, s, tot)).transpose()?;
        let causal = self.causal;
        let row = |bi: usize, hi: usize, i: usize, r: &mut [f64]| {
            if let Some(m) = &mask {
                r.iter_mut().zip(m.row(bi, i)).for_each(|(x, m)| *x = add32(*x, *m));
            }
            if let Some(ab) = &attn_bias {
                r.iter_mut().zip(ab.row(bi, hi, i)).for_each(|(x, m)| *x = add32(*x, *m));
            }
            let mut span = Span::all(tot);
            if causal {
                span.hi = tot.min(p + i + 1);
                span.v_end = span.hi;
            }
            span
        };
        let dims = Dims { b, n, kvn: n, sq: s, tot, dk: h, dv: hv };
        let scale = self.scale.unwrap_or(1.0 / (h as f64).sqrt());
        let y = attend(&dims, &qh, &kall, &vall, scale, &row)?;
        let dt = q.dtype();
        let mut outs: Values = smallvec::smallvec![store(dt, &[b, s, n * hv], &y)?.into()];
        if self.want[1] || self.want[2] {
            outs.push(store(dt, &[b, n, tot, h], &kall)?.into());
            outs.push(store(dt, &[b, n, tot, hv], &vall)?.into());
        }
        Ok(outs)
    }
}
