//! com.microsoft GroupQueryAttention: causal attention of `num_heads` query heads over
//! `kv_num_heads` key/value heads with a right-padded KV cache, as ONNX Runtime's CPU kernel
//! (gqa_attention_base.h) computes it.
//!
//! `query [B, S, N·H]` with `key`/`value [B, S, KV·H]`, or packed `[B, S, (N + 2·KV)·H]`
//! with key and value absent. `seqlens_k [B]` holds each sequence's total length − 1 and
//! `total_sequence_length` the longest; a prompt (`S == total_sequence_length`) has no past,
//! otherwise batch `b` has `seqlens_k[b] + 1 − S` past keys taken from the front of
//! `past_key`/`past_value [B, KV, P, H]`. `present_key`/`present_value` are
//! `[B, KV, max(P, total_sequence_length), H]`: past, then the new keys, then zeros. Query
//! `i` of batch `b` sees keys `..min(past_b + i + 1, seqlens_k[b] + 1)`, and with `local_window_size` W only the last
//! W of them (ONNX Runtime 1.31; earlier releases kept W + 1). Scores are `scale · q·k`, softcapped (`softcap · tanh(x / softcap)`),
//! plus `attention_bias [1|B, 1|N, S, T]`; `smooth_softmax` adds a zero logit to the softmax
//! denominator and `head_sink [N]` a per-head one. `do_rotary` rotates the new Q and K with
//! `cos_cache`/`sin_cache [max_pos, R/2]` at `position_ids [B, S]` (default: the token's
//! position in its sequence), halves or interleaved pairs per `rotary_interleaved`.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Value};

use super::{Bias, Dims, Span, attend, heads_attr, split_heads};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::attention::Rnd;
use crate::kernels::contrib::{FLOATS, check_types, floats, same_type, store};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "GroupQueryAttention", factory);
}

struct Gqa {
    n: usize,
    kvn: usize,
    scale: Option<f64>,
    softcap: f64,
    window: i64,
    rotary: bool,
    interleaved: bool,
    smooth: bool,
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let node = info.node;
    check_types(info, &[0, 1, 2, 3, 4, 7, 8, 10], &FLOATS[..3])?;
    check_types(info, &[5, 6], &[DType::I32])?;
    check_types(info, &[9], &[DType::I64])?;
    let (n, kvn) = (heads_attr(node, "num_heads")?, heads_attr(node, "kv_num_heads")?);
    if n % kvn != 0 {
        return Err(node.error(format!("num_heads {n} is not a multiple of kv_num_heads {kvn}")));
    }
    if node.outputs.get(3).is_some_and(Option::is_some) || node.attr_or::<i64>("qk_output", 0)? != 0 {
        return Err(node.error("the output_qk output is not supported"));
    }
    Ok(Box::new(Gqa {
        n,
        kvn,
        scale: node.attr::<f32>("scale")?.filter(|s| *s != 0.0).map(f64::from),
        softcap: node.attr_or::<f32>("softcap", 0.0)? as f64,
        window: node.attr_or::<i64>("local_window_size", -1)?,
        rotary: node.attr_or::<i64>("do_rotary", 0)? != 0,
        interleaved: node.attr_or::<i64>("rotary_interleaved", 0)? != 0,
        smooth: node.attr_or::<i64>("smooth_softmax", 0)? != 0,
    }))
}

/// Rotates `x [B, S, heads, H]` (rows `stride` apart from `off`) in place.
#[allow(clippy::too_many_arguments)]
fn rotate(
    x: &mut [f64],
    (b, s, heads, h): (usize, usize, usize, usize),
    (stride, off): (usize, usize),
    pos: &[usize],
    cos: &[f64],
    sin: &[f64],
    half: usize,
    interleaved: bool,
    rt: Rnd,
) {
    for bi in 0..b {
        for si in 0..s {
            let p = pos[bi * s + si];
            let (c, sn) = (&cos[p * half..(p + 1) * half], &sin[p * half..(p + 1) * half]);
            for hi in 0..heads {
                let o = (bi * s + si) * stride + off + hi * h;
                let v = &mut x[o..o + h];
                for i in 0..half {
                    let (a, bidx) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
                    let (x1, x2) = (v[a], v[bidx]);
                    v[a] = rt.r(x1 * c[i] - x2 * sn[i]);
                    v[bidx] = rt.r(x2 * c[i] + x1 * sn[i]);
                }
            }
        }
    }
}

impl Kernel for Gqa {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let q = tensor_in(inputs, 0)?;
        let [k, v, pk, pv] = [1, 2, 3, 4].map(|i| opt_tensor_in(inputs, i));
        let (k, v, pk, pv) = (k?, v?, pk?, pv?);
        let (seqlens, total) = (tensor_in(inputs, 5)?, tensor_in(inputs, 6)?);
        let [cos, sin, pos_ids, attn_bias, sink] = [7, 8, 9, 10, 11].map(|i| opt_tensor_in(inputs, i));
        let (cos, sin, pos_ids, attn_bias, sink) = (cos?, sin?, pos_ids?, attn_bias?, sink?);
        let dt = q.dtype();
        let rt = Rnd::of(dt)?;
        for (t, what) in [(k, "key"), (v, "value"), (pk, "past_key"), (pv, "past_value")] {
            if let Some(t) = t {
                same_type(q, t, what)?;
            }
        }
        let (n, kvn) = (self.n, self.kvn);
        let [b, s, dq] = *q.shape() else {
            return Err(Error::invalid(format!("query {:?} must be [B, S, D]", q.shape())));
        };
        // Packed rows are [Q | K | V]; separate inputs are copied into the same layout.
        let (mut x, h) = match (k, v) {
            (None, None) => {
                let h = dq / (n + 2 * kvn);
                if h == 0 || dq % (n + 2 * kvn) != 0 {
                    return Err(Error::invalid(format!(
                        "packed query width {dq} is not (num_heads + 2·kv_num_heads)·H"
                    )));
                }
                (floats(q, "query")?, h)
            }
            (Some(k), Some(v)) => {
                let h = dq / n;
                if h == 0 || dq % n != 0 || k.shape() != [b, s, kvn * h] || v.shape() != k.shape() {
                    return Err(Error::invalid(format!(
                        "query {:?}, key {:?}, value {:?} must be [B, S, {n}·H], [B, S, {kvn}·H] twice",
                        q.shape(),
                        k.shape(),
                        v.shape()
                    )));
                }
                let (qv, kv, vv) = (floats(q, "query")?, floats(k, "key")?, floats(v, "value")?);
                let kw = kvn * h;
                let mut x = Vec::with_capacity(b * s * (dq + 2 * kw));
                for r in 0..b * s {
                    x.extend_from_slice(&qv[r * dq..(r + 1) * dq]);
                    x.extend_from_slice(&kv[r * kw..(r + 1) * kw]);
                    x.extend_from_slice(&vv[r * kw..(r + 1) * kw]);
                }
                (x, h)
            }
            _ => return Err(Error::invalid("key and value go together (both absent means packed QKV)")),
        };
        let width = (n + 2 * kvn) * h;

        // Past buffer, lengths and the present buffer size.
        let pbuf = match (pk, pv) {
            (None, None) => 0,
            (Some(pk), Some(pv)) => match (pk.shape(), pv.shape()) {
                ([b2, k2, p, h2], c) if *b2 == b && *k2 == kvn && *h2 == h && c == pk.shape() => *p,
                (a, c) => {
                    return Err(Error::invalid(format!(
                        "past_key {a:?} / past_value {c:?} must be [{b}, {kvn}, P, {h}]"
                    )));
                }
            },
            _ => return Err(Error::invalid("past_key and past_value go together")),
        };
        let seq = seqlens.to_i64_vec()?;
        if seq.len() != b {
            return Err(Error::invalid(format!("seqlens_k has {} values for batch {b}", seq.len())));
        }
        let total = match total.to_i64_vec()?.as_slice() {
            [t] if *t > 0 => *t as usize,
            t => return Err(Error::invalid(format!("total_sequence_length {t:?} must be one positive value"))),
        };
        let first_prompt = s == total;
        if !first_prompt && s != 1 && b != 1 {
            return Err(Error::invalid("with past context, several new tokens need batch size 1"));
        }
        let plen = pbuf.max(total);
        let mut past_len = vec![0usize; b];
        let mut tot_len = vec![0usize; b];
        for bi in 0..b {
            let t = seq[bi].saturating_add(1);
            let past = if first_prompt { 0 } else { t - s as i64 };
            if t < 1 || t as usize > plen || past < 0 || past as usize > pbuf || past as usize + s > plen {
                return Err(Error::invalid(format!(
                    "seqlens_k[{bi}] = {} does not fit {s} new tokens, a past of {pbuf} and total_sequence_length {total}",
                    seq[bi]
                )));
            }
            (past_len[bi], tot_len[bi]) = (past as usize, t as usize);
        }

        if self.rotary {
            let (cos, sin) = match (cos, sin) {
                (Some(c), Some(s)) if c.rank() == 2 && c.shape() == s.shape() => (c, s),
                _ => {
                    return Err(Error::invalid(
                        "do_rotary needs cos_cache and sin_cache of one [max_position, R/2] shape",
                    ));
                }
            };
            let half = cos.shape()[1];
            if half == 0 || 2 * half > h {
                return Err(Error::invalid(format!("cos_cache {:?} does not fit head size {h}", cos.shape())));
            }
            let pos: Vec<i64> = match pos_ids {
                Some(p) if p.shape().len() == 2 && p.shape()[0] == b && p.shape()[1] >= s => {
                    let all = p.to_i64_vec()?;
                    let w = p.shape()[1];
                    (0..b * s).map(|i| all[(i / s) * w + i % s]).collect()
                }
                Some(p) => return Err(Error::invalid(format!("position_ids {:?} must be [{b}, >= {s}]", p.shape()))),
                None => (0..b * s)
                    .map(|i| {
                        let (bi, si) = (i / s, i % s);
                        let p = past_len[bi] + si;
                        if first_prompt || p < tot_len[bi] { p as i64 } else { 1 }
                    })
                    .collect(),
            };
            let rows = cos.shape()[0];
            let pos: Vec<usize> =
                pos.into_iter()
                    .map(|p| {
                        usize::try_from(p).ok().filter(|p| *p < rows).ok_or_else(|| {
                            Error::invalid(format!("position {p} is outside the {rows} rotary cache rows"))
                        })
                    })
                    .collect::<Result<_>>()?;
            let (cv, sv) = (floats(cos, "cos_cache")?, floats(sin, "sin_cache")?);
            rotate(&mut x, (b, s, n, h), (width, 0), &pos, &cv, &sv, half, self.interleaved, rt);
            rotate(&mut x, (b, s, kvn, h), (width, n * h), &pos, &cv, &sv, half, self.interleaved, rt);
        }

        let qh = split_heads(&x, (b, s, n, h), width, 0);
        let kn = split_heads(&x, (b, s, kvn, h), width, n * h);
        let vn = split_heads(&x, (b, s, kvn, h), width, (n + kvn) * h);
        let (pkv, pvv) = match (pk, pv) {
            (Some(a), Some(c)) => (floats(a, "past_key")?, floats(c, "past_value")?),
            _ => (vec![], vec![]),
        };
        let present = |past: &[f64], new: &[f64]| -> Vec<f64> {
            let mut out = vec![0.0; b * kvn * plen * h];
            for (bi, &pl) in past_len.iter().enumerate() {
                for hi in 0..kvn {
                    let bh = bi * kvn + hi;
                    let dst = bh * plen * h;
                    out[dst..dst + pl * h].copy_from_slice(&past[bh * pbuf * h..(bh * pbuf + pl) * h]);
                    out[dst + pl * h..dst + (pl + s) * h].copy_from_slice(&new[bh * s * h..(bh + 1) * s * h]);
                }
            }
            out
        };
        let (kall, vall) = (present(&pkv, &kn), present(&pvv, &vn));

        let attn_bias = attn_bias.map(|t| Bias::new(t, b, n, s, total)).transpose()?;
        let sinks = match sink {
            Some(t) if t.shape() == [n] => {
                if self.smooth {
                    return Err(Error::invalid("head_sink cannot go with smooth_softmax"));
                }
                Some(floats(t, "head_sink")?)
            }
            Some(t) => return Err(Error::invalid(format!("head_sink {:?} must be [{n}]", t.shape()))),
            None => None,
        };
        let (cap, window, smooth) = (self.softcap, self.window, self.smooth);
        let row = |bi: usize, hi: usize, i: usize, r: &mut [f64]| {
            // Padding queries of a prompt (past its sequence length) see the whole sequence.
            let causal = (past_len[bi] + i + 1).min(tot_len[bi]);
            let lo = if window > 0 && causal > window as usize { causal - window as usize } else { 0 };
            for x in &mut r[lo..causal] {
                if cap > 0.0 {
                    *x = cap * (*x / cap).tanh();
                }
            }
            if let Some(ab) = &attn_bias {
                let row = ab.row(bi, hi, i);
                for (x, a) in r[lo..causal.min(total)].iter_mut().zip(&row[lo.min(total)..]) {
                    *x += a;
                }
            }
            let sink = match &sinks {
                Some(v) => Some(v[hi]),
                None => smooth.then_some(0.0),
            };
            Span { lo, hi: causal, v_end: causal, sink }
        };
        let dims = Dims { b, n, kvn, sq: s, tot: plen, dk: h, dv: h };
        let scale = self.scale.unwrap_or(1.0 / (h as f64).sqrt());
        let y = attend(&dims, &qh, &kall, &vall, scale, &row)?;
        Ok(smallvec::smallvec![
            store(dt, &[b, s, n * h], &y)?.into(),
            store(dt, &[b, kvn, plen, h], &kall)?.into(),
            store(dt, &[b, kvn, plen, h], &vall)?.into(),
        ])
    }
}
