//! Rules of the attention family, the fused sequence-model ops, losses and detection ops.
//!
//! Attention layouts follow the [Attention] spec: Q/K/V are either 4-D `(batch, heads, seq,
//! head_size)` or 3-D `(batch, seq, heads * head_size)` with `q_num_heads`/`kv_num_heads`
//! giving the head counts.
//!
//! [Attention]: https://onnx.ai/onnx/operators/onnx__Attention.html

use super::InferCtx;
use super::rules::{Out, norm_axis, tensor};
use crate::dtype::DType;
use crate::value::{Dim, ValueType};

fn dim(s: Option<&[Dim]>, i: usize) -> Dim {
    s.and_then(|s| s.get(i)).cloned().unwrap_or(Dim::Unknown)
}

fn div(d: &Dim, k: Option<i64>) -> Dim {
    match (d.fixed(), k) {
        (Some(v), Some(k)) if k > 0 && v % k as usize == 0 => Dim::Fixed(v / k as usize),
        _ => Dim::Unknown,
    }
}

fn mul(d: &Dim, k: Option<i64>) -> Dim {
    match (d.fixed(), k) {
        (Some(v), Some(k)) if k > 0 => {
            usize::try_from(k).ok().and_then(|k| v.checked_mul(k)).map_or(Dim::Unknown, Dim::Fixed)
        }
        _ => Dim::Unknown,
    }
}

fn add(a: &Dim, b: &Dim) -> Dim {
    match (a.fixed(), b.fixed()) {
        (Some(x), Some(y)) => Dim::Fixed(x + y),
        _ => Dim::Unknown,
    }
}

/// Attention (opset 23+): Y and qk_matmul_output of Q's type, present_key of K's and
/// present_value of V's.
pub(crate) fn attention(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let (qh, kvh) = (n.attr::<i64>("q_num_heads")?, n.attr::<i64>("kv_num_heads")?);
    let (q, k, v) = (c.shape(0), c.shape(1), c.shape(2));
    // (heads, seq, head_size) of a 4-D or 3-D input.
    let split = |s: Option<&[Dim]>, heads: Option<i64>| match s {
        Some(s) if s.len() == 4 => (s[1].clone(), s[2].clone(), s[3].clone()),
        Some(s) if s.len() == 3 => {
            (heads.map_or(Dim::Unknown, |h| Dim::Fixed(h.max(0) as usize)), s[1].clone(), div(&s[2], heads))
        }
        _ => (Dim::Unknown, Dim::Unknown, Dim::Unknown),
    };
    let batch = dim(q, 0);
    let (q_heads, q_seq, _) = split(q, qh);
    let (kv_heads, kv_seq, k_size) = split(k, kvh);
    let (_, _, v_size) = split(v, kvh);
    let past = if c.has(4) { dim(c.shape(4), 2) } else { Dim::Fixed(0) };
    let total = add(&past, &kv_seq);
    let y = match q.map(<[Dim]>::len) {
        Some(4) => Some(vec![batch.clone(), q_heads.clone(), q_seq.clone(), v_size.clone()]),
        Some(3) => Some(vec![batch.clone(), q_seq.clone(), mul(&v_size, qh)]),
        _ => None,
    };
    Ok(vec![
        tensor(c.dtype(0), y),
        tensor(c.dtype(1), Some(vec![batch.clone(), kv_heads.clone(), total.clone(), k_size])),
        tensor(c.dtype(2), Some(vec![batch.clone(), kv_heads, total.clone(), v_size])),
        tensor(c.dtype(0), Some(vec![batch, q_heads, q_seq, total])),
    ])
}

/// com.microsoft Attention: output `(batch, seq, v_hidden)` of the input's type, present
/// `(2, batch, heads, total_seq, head_size)`, both of the input's type.
pub(crate) fn ms_attention(c: &InferCtx<'_>) -> Out {
    let x = c.shape(0);
    let v_hidden = match c.node.attr::<Vec<i64>>("qkv_hidden_sizes")? {
        Some(s) if s.len() == 3 && s[2] > 0 => Dim::Fixed(s[2] as usize),
        _ => div(&dim(c.shape(1), 1), Some(3)),
    };
    let out = x.map(|_| vec![dim(x, 0), dim(x, 1), v_hidden]);
    let present = Some(vec![Dim::Fixed(2), dim(x, 0), Dim::Unknown, Dim::Unknown, Dim::Unknown]);
    Ok(vec![tensor(c.dtype(0), out), tensor(c.dtype(0), present)])
}

/// FlexAttention: Y `(batch, q_heads, q_seq, v_head_size)` of Q's type.
pub(crate) fn flex_attention(c: &InferCtx<'_>) -> Out {
    let (q, v) = (c.shape(0), c.shape(2));
    let y = q.map(|_| vec![dim(q, 0), dim(q, 1), dim(q, 2), dim(v, 3)]);
    Ok(vec![tensor(c.dtype(0), y)])
}

/// CausalConvWithState: output like the input `(batch, channels, length)`, present_state
/// `(batch, channels, kernel - 1)` with the kernel from weight `(channels, 1, k)`.
pub(crate) fn causal_conv_with_state(c: &InferCtx<'_>) -> Out {
    let x = c.shape(0);
    let k = dim(c.shape(1), 2).fixed();
    let state = x.map(|_| vec![dim(x, 0), dim(x, 1), k.map_or(Dim::Unknown, |k| Dim::Fixed(k.saturating_sub(1)))]);
    Ok(vec![c.ty(0).clone(), tensor(c.dtype(0), state)])
}

/// LinearAttention: output `(B, T, q_num_heads * d_v)` of the query's type, present_state
/// `(B, kv_num_heads, d_k, d_v)` of past_state's type (the query's when there is none).
pub(crate) fn linear_attention(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let (qh, kvh) = (n.attr::<i64>("q_num_heads")?, n.attr::<i64>("kv_num_heads")?);
    let (q, k, v) = (c.shape(0), c.shape(1), c.shape(2));
    let d_v = div(&dim(v, 2), kvh);
    let d_k = div(&dim(k, 2), kvh);
    let out = q.map(|_| vec![dim(q, 0), dim(q, 1), mul(&d_v, qh)]);
    let heads = kvh.map_or(Dim::Unknown, |h| Dim::Fixed(h.max(0) as usize));
    let state_type = if c.has(3) { c.dtype(3) } else { c.dtype(0) };
    Ok(vec![tensor(c.dtype(0), out), tensor(state_type, Some(vec![dim(q, 0), heads, d_k, d_v]))])
}

/// AffineGrid: theta's type; `size` `(N, C, H, W)` gives `(N, H, W, 2)`, `(N, C, D, H, W)`
/// gives `(N, D, H, W, 3)`.
pub(crate) fn affine_grid(c: &InferCtx<'_>) -> Out {
    let shape = match c.const_ints(1) {
        Some(s) if s.len() >= 3 => {
            let mut out: Vec<Dim> =
                std::iter::once(s[0]).chain(s[2..].iter().copied()).map(|v| Dim::Fixed(v.max(0) as usize)).collect();
            out.push(Dim::Fixed(s.len() - 2));
            Some(out)
        }
        // A rank read from a declared dim: past MAX_RANK it is the model's word gone wrong.
        _ => match c.shape(1).and_then(|s| s.first()).and_then(Dim::fixed).filter(|r| *r <= super::MAX_RANK) {
            Some(r) if r >= 3 => {
                let mut out = vec![dim(c.shape(0), 0)];
                out.extend(std::iter::repeat_n(Dim::Unknown, r - 2));
                out.push(Dim::Fixed(r - 2));
                Some(out)
            }
            _ => None,
        },
    };
    Ok(vec![tensor(c.dtype(0), shape)])
}

/// MaxRoiPool: X's type, `(num_rois, C, pooled_h, pooled_w)`.
pub(crate) fn max_roi_pool(c: &InferCtx<'_>) -> Out {
    let pooled = c.node.req_attr::<Vec<i64>>("pooled_shape")?;
    let mut out = vec![dim(c.shape(1), 0), dim(c.shape(0), 1)];
    out.extend(pooled.iter().map(|v| Dim::Fixed((*v).max(0) as usize)));
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

/// The loss shape: the target's with `reduction = none`, a scalar otherwise (default mean).
fn loss_shape(c: &InferCtx<'_>) -> crate::error::Result<Option<Vec<Dim>>> {
    Ok(match c.node.attr::<String>("reduction")?.as_deref() {
        Some("none") => c.shape(1).map(<[Dim]>::to_vec),
        _ => Some(vec![]),
    })
}

/// NegativeLogLikelihoodLoss: the input's type, shaped by `reduction`.
pub(crate) fn nll_loss(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(0), loss_shape(c)?)])
}

/// SoftmaxCrossEntropyLoss: the loss of the scores' type shaped by `reduction`, and the
/// optional log_prob of the scores' type and shape.
pub(crate) fn softmax_cross_entropy_loss(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(0), loss_shape(c)?), c.ty(0).clone()])
}

/// NonMaxSuppression: int64 `(num_selected, 3)`.
pub(crate) fn non_max_suppression(_: &InferCtx<'_>) -> Out {
    Ok(vec![ValueType::Tensor(DType::I64, Some(vec![Dim::Unknown, Dim::Fixed(3)]))])
}

/// Dropout: the data keeps input 0's type; the mask is bool from opset 10 on (Dropout-1/6/7's
/// mask has the data's type).
pub(crate) fn dropout(c: &InferCtx<'_>) -> Out {
    let mask = if c.node.opset >= 10 { c.ty(0).tensor_dtype().map(|_| DType::Bool) } else { c.dtype(0) };
    Ok(vec![c.ty(0).clone(), tensor(mask, c.shape(0).map(<[Dim]>::to_vec))])
}

/// BatchNormalization: Y has X's type; the optional statistics outputs (running mean/var from
/// opset 14, also saved mean/var before opset 9... all of shape [C]) have the mean input's type
/// (`T2`/`U` from opset 14, `T` before).
pub(crate) fn batch_norm(c: &InferCtx<'_>) -> Out {
    let mut v = vec![c.ty(0).clone()];
    let stat = tensor(
        c.dtype(3).or(c.dtype(0)),
        Some(vec![c.shape(0).and_then(|x| x.get(1)).cloned().unwrap_or(Dim::Unknown)]),
    );
    v.extend(std::iter::repeat_n(stat, c.node.outputs.len().saturating_sub(1)));
    Ok(v)
}

/// LayerNormalization: Y has X's type; Mean and InvStdDev have the `stash_type` (default
/// float) and X's shape with the normalized axes set to 1.
pub(crate) fn layer_norm(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let stash = n.attr_or::<i64>("stash_type", 1)?;
    let stash =
        DType::from_onnx(stash as i32).ok_or_else(|| n.error(format!("stash_type {stash} is no ONNX data type")))?;
    let stat_shape = match c.shape(0) {
        Some(x) => {
            let ax = norm_axis(n, n.attr_or::<i64>("axis", -1)?, x.len())?;
            Some(x.iter().enumerate().map(|(i, d)| if i < ax { d.clone() } else { Dim::Fixed(1) }).collect())
        }
        None => None,
    };
    let stat = ValueType::Tensor(stash, stat_shape);
    Ok(vec![c.ty(0).clone(), stat.clone(), stat])
}

/// Col2Im: `[N, C, image_shape...]` with `C = input dim 1 / prod(block_shape)`.
pub(crate) fn col2im(c: &InferCtx<'_>) -> Out {
    let image = c.const_ints(1);
    let rank = match (&image, c.shape(1).and_then(|s| s.first()).and_then(Dim::fixed)) {
        (Some(i), _) => Some(i.len()),
        (None, r) => r.filter(|r| *r <= super::MAX_RANK),
    };
    let Some(rank) = rank else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let x = c.shape(0);
    let block: Option<usize> =
        c.const_ints(2).and_then(|b| b.iter().try_fold(1usize, |a, v| a.checked_mul(usize::try_from(*v).ok()?)));
    let channels = match (x.and_then(|x| x.get(1)).and_then(Dim::fixed), block) {
        (Some(cb), Some(b)) if b > 0 => Dim::Fixed(cb / b),
        _ => Dim::Unknown,
    };
    let mut out = vec![x.and_then(|x| x.first()).cloned().unwrap_or(Dim::Unknown), channels];
    match image {
        Some(i) => out.extend(i.iter().map(|v| Dim::Fixed((*v).max(0) as usize))),
        None => out.extend(std::iter::repeat_n(Dim::Unknown, rank)),
    }
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

/// CenterCropPad: the input's type and rank; the cropped/padded axes take the `shape` input.
pub(crate) fn center_crop_pad(c: &InferCtx<'_>) -> Out {
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let mut out = x.to_vec();
    match c.const_ints(1) {
        Some(target) => {
            let axes = c.node.attr::<Vec<i64>>("axes")?.unwrap_or_else(|| (0..x.len() as i64).collect());
            if axes.len() != target.len() {
                return Err(c.node.error("'shape' must give one size per axis"));
            }
            for (a, t) in axes.iter().zip(&target) {
                out[norm_axis(c.node, *a, x.len())?] = Dim::Fixed((*t).max(0) as usize);
            }
        }
        None => out = vec![Dim::Unknown; x.len()],
    }
    Ok(vec![tensor(c.dtype(0), Some(out))])
}
