//! com.microsoft Attention and QAttention: BERT-style self-attention whose Q, K and V come
//! from one packed projection of the input (`input · weights + bias`, split by
//! `qkv_hidden_sizes`; QAttention's is an integer product dequantized as
//! `(A − a_zero)(W − w_zero) · a_scale · w_scale + bias`, per tensor or per weight column).
//!
//! `mask_index` is read as ONNX Runtime's CPU kernel does: 1-D `[B]` key lengths (keys at or
//! after the end are masked), 1-D `[2B]` end then start positions, 2-D `[B, T]` and 3-D
//! `[B, S, T]` 0/1 masks; masked keys get `mask_filter_value` (default −10000) added, not
//! removed. A 4-D `[B, 1, M, M]` mask (Megatron, which ONNX Runtime runs only on GPUs) is read
//! as rows `P..P+S`, columns `0..T` of the per-batch `M x M` 0/1 mask. `unidirectional` hides
//! keys after `P + i` from query `i` entirely. `past (2, B, N, P, H)` is prepended to K and V,
//! and `present` is `(2, B, N, P + S, H)`; with `past_present_share_buffer` past and present
//! are `(2, B, N, M, H)` buffers holding `past_sequence_length` valid keys, and the new keys
//! are written after them. `do_rotary` is refused: ONNX Runtime's CPU kernel refuses it too.

use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::{Bias, Dims, Span, add32, attend, concat_seq, heads_attr, per_head, split_heads};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, opt_tensors_in, tensor_in};
use crate::kernels::contrib::{FLOATS, check_types, floats, store};
use crate::kernels::dense::{View, matmul_into};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "Attention", attention);
    r.op("com.microsoft", "QAttention", qattention);
}

/// What Attention and QAttention share after the projection.
struct Core {
    heads: usize,
    causal: bool,
    filter: f64,
    scale: Option<f64>,
    share_buffer: bool,
    want_present: bool,
}

impl Core {
    fn new(info: &NodeInfo<'_>, present_output: usize) -> Result<Core> {
        let n = info.node;
        if n.attr_or::<i64>("do_rotary", 0)? != 0 {
            return Err(n.error("do_rotary is not supported (ONNX Runtime's CPU kernel has no rotary path either)"));
        }
        Ok(Core {
            heads: heads_attr(n, "num_heads")?,
            causal: n.attr_or::<i64>("unidirectional", 0)? != 0,
            filter: n.attr_or::<f32>("mask_filter_value", -10000.0)? as f64,
            scale: n.attr::<f32>("scale")?.filter(|s| *s != 0.0).map(f64::from),
            share_buffer: n.attr_or::<i64>("past_present_share_buffer", 0)? != 0,
            want_present: n.outputs.get(present_output).is_some_and(Option::is_some),
        })
    }

    /// Runs attention on the projected `qkv [B·S, dq + dk + dv]`.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        qkv: &[f64],
        (b, s): (usize, usize),
        (dq, dk, dv): (usize, usize, usize),
        mask: Option<&Tensor>,
        past: Option<&Tensor>,
        attn_bias: Option<&Tensor>,
        past_len: Option<&Tensor>,
        out_type: DType,
    ) -> Result<Values> {
        let n = self.heads;
        if dq != dk {
            return Err(Error::invalid(format!("Q hidden size {dq} differs from K hidden size {dk}")));
        }
        let hq = per_head(dq, n, "Q")?;
        let hv = per_head(dv, n, "V")?;
        let width = dq + dk + dv;
        let q = split_heads(qkv, (b, s, n, hq), width, 0);
        let k = split_heads(qkv, (b, s, n, hq), width, dq);
        let v = split_heads(qkv, (b, s, n, hv), width, dq + dk);
        // Past keys: P valid ones out of a buffer of `cap`.
        let (p, cap, past_vals) = match past {
            None => (0, 0, None),
            Some(t) => {
                let sh = t.shape();
                if sh.len() != 5 || sh[0] != 2 || sh[1] != b || sh[2] != n || sh[4] != hq || hq != hv {
                    return Err(Error::invalid(format!(
                        "past {sh:?} must be [2, {b}, {n}, past_length, {hq}] (and K, V head sizes equal)"
                    )));
                }
                let cap = sh[3];
                let p = match (self.share_buffer, past_len) {
                    (true, Some(l)) => {
                        let l = l.to_i64_vec()?;
                        match l.as_slice() {
                            [l] if usize::try_from(*l)
                                .ok()
                                .and_then(|l| l.checked_add(s))
                                .is_some_and(|e| e <= cap) =>
                            {
                                *l as usize
                            }
                            _ => {
                                return Err(Error::invalid(format!(
                                    "past_sequence_length {l:?} must be one value with it + {s} <= {cap}"
                                )));
                            }
                        }
                    }
                    (true, None) => return Err(Error::invalid("past_present_share_buffer needs past_sequence_length")),
                    (false, _) => cap,
                };
                (p, cap, Some(floats(t, "past")?))
            }
        };
        let tot = p + s;
        let (kall, vall) = match &past_vals {
            None => (k, v),
            Some(pv) => {
                let half = b * n * cap * hq;
                let trim = |x: &[f64]| -> Vec<f64> {
                    (0..b * n).flat_map(|bh| x[bh * cap * hq..(bh * cap + p) * hq].iter().copied()).collect()
                };
                let (pk, pvv) = (trim(&pv[..half]), trim(&pv[half..]));
                (concat_seq(&pk, &k, (b, n, p, s, hq)), concat_seq(&pvv, &v, (b, n, p, s, hq)))
            }
        };
        let mask = mask.map(|m| MaskRows::new(m, b, s, p, tot, self.filter)).transpose()?;
        let bias = attn_bias.map(|t| Bias::new(t, b, n, s, tot)).transpose()?;
        let causal = self.causal;
        let row = |bi: usize, h: usize, i: usize, r: &mut [f64]| {
            if let Some(m) = &mask {
                for (x, mv) in r.iter_mut().zip(m.row(bi, i)) {
                    *x = add32(*x, *mv);
                }
            }
            if let Some(bias) = &bias {
                for (x, bv) in r.iter_mut().zip(bias.row(bi, h, i)) {
                    *x = add32(*x, *bv);
                }
            }
            let mut span = Span::all(tot);
            if causal {
                span.hi = span.v_end.min(p + i + 1);
                span.v_end = span.hi;
            }
            span
        };
        let dims = Dims { b, n, kvn: n, sq: s, tot, dk: hq, dv: hv };
        let scale = self.scale.unwrap_or(1.0 / (hq as f64).sqrt());
        let y = attend(&dims, &q, &kall, &vall, scale, &row)?;
        let mut outs: Values = smallvec::smallvec![store(out_type, &[b, s, dv], &y)?.into()];
        if self.want_present {
            if past.is_none() && hq != hv {
                return Err(Error::invalid("present needs equal K and V head sizes"));
            }
            let len = if self.share_buffer { cap } else { tot };
            let mut pres = vec![0.0; 2 * b * n * len * hq];
            for (which, src) in [&kall, &vall].into_iter().enumerate() {
                for bh in 0..b * n {
                    let dst = (which * b * n + bh) * len * hq;
                    pres[dst..dst + tot * hq].copy_from_slice(&src[bh * tot * hq..(bh + 1) * tot * hq]);
                    if self.share_buffer
                        && let Some(pv) = &past_vals
                    {
                        // The buffer past the valid keys keeps what the past buffer held.
                        let o = (which * b * n + bh) * cap * hq;
                        pres[dst + tot * hq..dst + cap * hq].copy_from_slice(&pv[o + tot * hq..o + cap * hq]);
                    }
                }
            }
            outs.push(store(out_type, &[2, b, n, len, hq], &pres)?.into());
        }
        Ok(outs)
    }
}

/// `mask_index` turned into additive rows `[B, S, T]` (0 or `mask_filter_value`).
pub(super) struct MaskRows {
    vals: Vec<f64>,
    per_query: bool,
    s: usize,
    t: usize,
}

impl MaskRows {
    pub(super) fn new(m: &Tensor, b: usize, s: usize, p: usize, t: usize, filter: f64) -> Result<MaskRows> {
        if !matches!(m.dtype(), DType::I32 | DType::I64) {
            return Err(Error::invalid(format!("mask_index must be int32, got {}", m.dtype())));
        }
        let raw = m.to_i64_vec()?;
        let sh = m.shape().to_vec();
        let bad = || {
            Error::invalid(format!(
                "mask_index {sh:?} fits none of [{b}], [{}], [{b}, {t}], [{b}, {s}, {t}], [{b}, 1, M, M]",
                2 * b
            ))
        };
        let keep = |x: i64| if x > 0 { 0.0 } else { filter };
        let (vals, per_query) = match sh.as_slice() {
            [l] if *l == b || *l == 2 * b => {
                let mut vals = vec![0.0; b * t];
                for bi in 0..b {
                    let row = &mut vals[bi * t..(bi + 1) * t];
                    let end = raw[bi].clamp(0, t as i64) as usize;
                    row[end..].fill(filter);
                    if *l == 2 * b {
                        let start = raw[bi + b].clamp(0, t as i64) as usize;
                        row[..start].fill(filter);
                    }
                }
                (vals, false)
            }
            [b2, t2] if *b2 == b && *t2 == t => (raw.into_iter().map(keep).collect(), false),
            [b2, s2, t2] if *b2 == b && *s2 == s && *t2 == t => (raw.into_iter().map(keep).collect(), true),
            [b2, 1, m1, m2] if *b2 == b && m1 == m2 && *m1 >= t => {
                let mut vals = Vec::with_capacity(b * s * t);
                for bi in 0..b {
                    for i in 0..s {
                        let o = (bi * m1 + p + i) * m1;
                        vals.extend(raw[o..o + t].iter().map(|x| keep(*x)));
                    }
                }
                (vals, true)
            }
            _ => return Err(bad()),
        };
        Ok(MaskRows { vals, per_query, s, t })
    }

    pub(super) fn row(&self, b: usize, i: usize) -> &[f64] {
        let o = if self.per_query { (b * self.s + i) * self.t } else { b * self.t };
        &self.vals[o..o + self.t]
    }
}

/// Splits the projection width into (q, k, v) hidden sizes.
fn hidden_sizes(node: &vinort_ir::Node, width: usize) -> Result<(usize, usize, usize)> {
    match node.attr::<Vec<i64>>("qkv_hidden_sizes")? {
        Some(h) => match h.as_slice() {
            // Checked: the sizes come from the model and may be anything.
            [q, k, v]
                if *q > 0
                    && *k > 0
                    && *v > 0
                    && q.checked_add(*k).and_then(|s| s.checked_add(*v)) == i64::try_from(width).ok() =>
            {
                Ok((*q as usize, *k as usize, *v as usize))
            }
            _ => {
                Err(Error::invalid(format!("qkv_hidden_sizes {h:?} must be three positive sizes adding up to {width}")))
            }
        },
        None if width.is_multiple_of(3) => Ok((width / 3, width / 3, width / 3)),
        None => Err(Error::invalid(format!("weights width {width} is not divisible by 3"))),
    }
}

/// `[B, S, D]` input and `[D, W]` weights sizes.
fn proj_dims(x: &Tensor, w: &Tensor) -> Result<(usize, usize, usize, usize)> {
    match (x.shape(), w.shape()) {
        ([b, s, d], [d2, width]) if d == d2 => Ok((*b, *s, *d, *width)),
        (a, c) => Err(Error::invalid(format!("input {a:?} and weights {c:?} must be [B, S, D] and [D, W]"))),
    }
}

/// Adds the `[W]` bias to each row of `y [rows, W]`.
fn add_bias(y: &mut [f64], bias: Option<&Tensor>, width: usize) -> Result<()> {
    let Some(bias) = bias else { return Ok(()) };
    let bv = floats(bias, "bias")?;
    if bv.len() != width || bias.rank() != 1 {
        return Err(Error::invalid(format!("bias {:?} must be [{width}]", bias.shape())));
    }
    for row in y.chunks_mut(width) {
        row.iter_mut().zip(&bv).for_each(|(y, b)| *y += b);
    }
    Ok(())
}

struct Attention {
    core: Core,
    node: vinort_ir::Node,
}

fn attention(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 1, 2, 4, 5], &FLOATS)?;
    check_types(info, &[3, 6], &[DType::I32])?;
    Ok(Box::new(Attention { core: Core::new(info, 1)?, node: info.node.clone() }))
}

impl Kernel for Attention {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, w) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?);
        let (b, s, d, width) = proj_dims(x, w)?;
        let sizes = hidden_sizes(&self.node, width)?;
        let mut y = vec![0.0; b * s * width];
        let (xv, wv) = (floats(x, "input")?, floats(w, "weights")?);
        matmul_into((b * s, width, d), View::rows(&xv, d), View::rows(&wv, width), &mut y, width, false, 1.0, true)?;
        add_bias(&mut y, opt_tensor_in(inputs, 2)?, width)?;
        let [mask, past, bias, plen] = opt_tensors_in::<4>(inputs, 3)?;
        self.core.run(&y, (b, s), sizes, mask, past, bias, plen, x.dtype())
    }
}

struct QAttention {
    core: Core,
}

fn qattention(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    check_types(info, &[0, 6], &[DType::U8, DType::I8])?;
    check_types(info, &[1, 7], &[DType::U8, DType::I8])?;
    check_types(info, &[2, 3, 4, 8], &FLOATS)?;
    check_types(info, &[5], &[DType::I32])?;
    Ok(Box::new(QAttention { core: Core::new(info, 1)? }))
}

/// A scale or zero point: one value, or one per weight column when `cols` allows it.
fn per_column(t: Option<&Tensor>, cols: usize, what: &str, default: f64) -> Result<Vec<f64>> {
    let Some(t) = t else { return Ok(vec![default]) };
    let v = t.to_f64_vec()?;
    if v.len() == 1 || (cols > 0 && v.len() == cols && t.rank() == 1) {
        Ok(v)
    } else {
        Err(Error::invalid(format!(
            "{what} {:?} must be a scalar{}",
            t.shape(),
            if cols > 0 { format!(" or [{cols}]") } else { String::new() }
        )))
    }
}

impl Kernel for QAttention {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, w) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?);
        let bias = tensor_in(inputs, 2)?;
        let (b, s, d, width) = proj_dims(x, w)?;
        if width % 3 != 0 {
            return Err(Error::invalid(format!("weight width {width} is not divisible by 3")));
        }
        let h = width / 3;
        if x.dtype().is_float() || w.dtype().is_float() {
            return Err(Error::invalid("QAttention input and weight must be 8-bit integers"));
        }
        let sa = per_column(Some(tensor_in(inputs, 3)?), 0, "input_scale", 1.0)?[0];
        let sw = per_column(Some(tensor_in(inputs, 4)?), width, "weight_scale", 1.0)?;
        let za = per_column(opt_tensor_in(inputs, 6)?, 0, "input_zero_point", 0.0)?[0];
        let zw = per_column(opt_tensor_in(inputs, 7)?, width, "weight_zero_point", 0.0)?;
        let xv: Vec<f64> = x.to_f64_vec()?.into_iter().map(|a| a - za).collect();
        let wv: Vec<f64> = w
            .to_f64_vec()?
            .into_iter()
            .enumerate()
            .map(|(i, q)| q - zw[if zw.len() == 1 { 0 } else { i % width }])
            .collect();
        // Integer products are exact in f64 (|sum| < 2^53 for any realistic D).
        let mut y = vec![0.0; b * s * width];
        matmul_into((b * s, width, d), View::rows(&xv, d), View::rows(&wv, width), &mut y, width, false, 1.0, true)?;
        for row in y.chunks_mut(width) {
            for (c, v) in row.iter_mut().enumerate() {
                let scale = (sa as f32 * sw[if sw.len() == 1 { 0 } else { c }] as f32) as f64;
                *v = (*v as f32 as f64) * scale;
            }
        }
        add_bias(&mut y, Some(bias), width)?;
        let mask = opt_tensor_in(inputs, 5)?;
        let past = opt_tensor_in(inputs, 8)?;
        self.core.run(&y, (b, s), (h, h, h), mask, past, None, None, bias.dtype())
    }
}
