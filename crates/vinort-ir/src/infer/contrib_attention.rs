//! Rules of ONNX Runtime's attention-family contrib ops (`com.microsoft` MultiHeadAttention,
//! GroupQueryAttention, QAttention), as its
//! [ContribOperators](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)
//! documentation and CPU kernels define them (the kernels live in vinort-cpu's
//! `kernels/contrib/attention`). Attention itself is `nn::ms_attention`.

use super::InferCtx;
use super::rules::{Out, tensor};
use crate::value::Dim;

fn dim(s: Option<&[Dim]>, i: usize) -> Dim {
    s.and_then(|s| s.get(i)).cloned().unwrap_or(Dim::Unknown)
}

fn fixed(n: Option<i64>) -> Option<usize> {
    n.filter(|n| *n > 0).map(|n| n as usize)
}

fn div(d: &Dim, k: Option<usize>) -> Dim {
    match (d.fixed(), k) {
        (Some(v), Some(k)) if k > 0 && v % k == 0 => Dim::Fixed(v / k),
        _ => Dim::Unknown,
    }
}

fn mul(d: &Dim, k: Option<usize>) -> Dim {
    match (d.fixed(), k) {
        (Some(v), Some(k)) => v.checked_mul(k).map_or(Dim::Unknown, Dim::Fixed),
        _ => Dim::Unknown,
    }
}

fn add(a: &Dim, b: &Dim) -> Dim {
    match (a.fixed(), b.fixed()) {
        (Some(x), Some(y)) => Dim::Fixed(x + y),
        _ => Dim::Unknown,
    }
}

/// MultiHeadAttention: output `(B, S, N·Hv)`, present_key/present_value `(B, N, P + L, H)`
/// (the key/value as they are when given as `(B, N, L, H)`), all of the query's type.
pub(crate) fn multihead_attention(c: &InferCtx<'_>) -> Out {
    let n = fixed(c.node.attr::<i64>("num_heads")?);
    let (q, k, v) = (c.shape(0), c.shape(1), c.shape(2));
    let nd = n.map_or(Dim::Unknown, Dim::Fixed);
    let packed_qkv = q.is_some_and(|q| q.len() == 5);
    let (h, hv, l) = if packed_qkv {
        (dim(q, 4), dim(q, 4), dim(q, 1))
    } else {
        let h = div(&dim(q, 2), n);
        match (k.map(<[Dim]>::len), v.map(<[Dim]>::len)) {
            (Some(4), Some(4)) => (h, dim(v, 3), dim(k, 2)),
            (Some(5), _) => (h.clone(), h, dim(k, 1)),
            (Some(3), Some(3)) => (h, div(&dim(v, 2), n), dim(k, 1)),
            _ => (h, Dim::Unknown, Dim::Unknown),
        }
    };
    let kv_bnsh = k.is_some_and(|k| k.len() == 4);
    let tot = if c.has(6) && !kv_bnsh { add(&dim(c.shape(6), 2), &l) } else { l };
    let out = q.map(|_| vec![dim(q, 0), dim(q, 1), mul(&hv, n)]);
    let pk = Some(vec![dim(q, 0), nd.clone(), tot.clone(), h]);
    let pv = Some(vec![dim(q, 0), nd.clone(), tot.clone(), hv]);
    let qk = Some(vec![dim(q, 0), nd, dim(q, 1), tot]);
    let d = c.dtype(0);
    Ok(vec![tensor(d, out), tensor(d, pk), tensor(d, pv), tensor(d, qk)])
}

/// GroupQueryAttention: output `(B, S, N·H)`, present_key/present_value
/// `(B, KV, max(P, total_sequence_length), H)` (the length when `total_sequence_length` is a
/// constant), all of the query's type.
pub(crate) fn group_query_attention(c: &InferCtx<'_>) -> Out {
    let n = fixed(c.node.attr::<i64>("num_heads")?);
    let kv = fixed(c.node.attr::<i64>("kv_num_heads")?);
    let q = c.shape(0);
    let h = if c.has(1) {
        div(&dim(q, 2), n)
    } else {
        div(&dim(q, 2), n.zip(kv).and_then(|(n, kv)| n.checked_add(kv.checked_mul(2)?)))
    };
    let total = c.const_ints(6).and_then(|t| t.first().copied()).and_then(|t| usize::try_from(t).ok());
    let past = if c.has(3) { dim(c.shape(3), 2).fixed() } else { Some(0) };
    let plen = total.zip(past).map_or(Dim::Unknown, |(t, p)| Dim::Fixed(t.max(p)));
    let kvd = kv.map_or(Dim::Unknown, Dim::Fixed);
    let out = q.map(|_| vec![dim(q, 0), dim(q, 1), mul(&h, n)]);
    let present = Some(vec![dim(q, 0), kvd, plen, h]);
    let d = c.dtype(0);
    let qk = Some(vec![dim(q, 0), n.map_or(Dim::Unknown, Dim::Fixed), dim(q, 1), Dim::Unknown]);
    Ok(vec![tensor(d, out), tensor(d, present.clone()), tensor(d, present), tensor(d, qk)])
}

/// QAttention: output `(B, S, W / 3)` and present `(2, B, N, P + S, H)`, of the bias's
/// (float) type.
pub(crate) fn qattention(c: &InferCtx<'_>) -> Out {
    let n = fixed(c.node.attr::<i64>("num_heads")?);
    let (x, w) = (c.shape(0), c.shape(1));
    let hidden = div(&dim(w, 1), Some(3));
    let out = x.map(|_| vec![dim(x, 0), dim(x, 1), hidden.clone()]);
    let tot = if c.has(8) { add(&dim(c.shape(8), 3), &dim(x, 1)) } else { dim(x, 1) };
    let present = Some(vec![Dim::Fixed(2), dim(x, 0), n.map_or(Dim::Unknown, Dim::Fixed), tot, div(&hidden, n)]);
    let d = c.dtype(2);
    Ok(vec![tensor(d, out), tensor(d, present)])
}
