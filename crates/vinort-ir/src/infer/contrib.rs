//! Rules of ONNX Runtime's transformer-fusion contrib ops (`com.microsoft`), as its
//! [ContribOperators](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)
//! documentation and its CPU kernels define them. The element-preserving ones (FastGelu,
//! BiasGelu, BiasAdd, GroupNorm...) use [`super::rules::same_as_first`] from the table.

use super::InferCtx;
use super::rules::{Out, matmul_dims, tensor, window_of};
use crate::dtype::DType;
use crate::value::{Dim, ValueType};

/// SkipLayerNormalization and SkipSimplifiedLayerNormalization: output and
/// input_skip_bias_sum like the input; mean and inv_std_var float `(..., 1)`.
pub(crate) fn skip_layer_norm(c: &InferCtx<'_>) -> Out {
    let stat = c.shape(0).map(|s| {
        let mut s = s.to_vec();
        if let Some(last) = s.last_mut() {
            *last = Dim::Fixed(1);
        }
        s
    });
    let stat = ValueType::Tensor(DType::F32, stat);
    Ok(vec![c.ty(0).clone(), stat.clone(), stat, c.ty(0).clone()])
}

/// BiasSplitGelu: `(N, S, D)` gives `(N, S, D / 2)`.
pub(crate) fn bias_split_gelu(c: &InferCtx<'_>) -> Out {
    let shape = c.shape(0).map(|s| {
        let mut s = s.to_vec();
        if let Some(last) = s.last_mut() {
            *last = match last.fixed() {
                Some(d) if d % 2 == 0 => Dim::Fixed(d / 2),
                _ => Dim::Unknown,
            };
        }
        s
    });
    Ok(vec![tensor(c.dtype(0), shape)])
}

/// EmbedLayerNormalization: output and embedding_sum `(batch, seq, hidden)` of the word
/// embedding's type, mask_index int32 `(batch)`.
pub(crate) fn embed_layer_norm(c: &InferCtx<'_>) -> Out {
    let ids = c.shape(0);
    let hidden = c.shape(2).and_then(|s| s.get(1)).cloned().unwrap_or(Dim::Unknown);
    let d = |i: usize| ids.and_then(|s| s.get(i)).cloned().unwrap_or(Dim::Unknown);
    let out = ids.map(|_| vec![d(0), d(1), hidden]);
    let t = tensor(c.dtype(2), out);
    Ok(vec![t.clone(), ValueType::Tensor(DType::I32, ids.map(|_| vec![d(0)])), t])
}

/// FusedConv: Conv's window rule with the weight at input 1.
pub(crate) fn fused_conv(c: &InferCtx<'_>) -> Out {
    window_of(c, Some(1), c.dtype(0))
}

/// FusedMatMul: numpy matmul of A and B after `transBatch*` moved the first axis behind the
/// batch axes and `trans*` swapped the last two.
pub(crate) fn fused_matmul(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let (Some(a), Some(b)) = (c.shape(0), c.shape(1)) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let a = fused_matmul_dims(a, n.attr_or::<i64>("transBatchA", 0)? != 0, n.attr_or::<i64>("transA", 0)? != 0);
    let b = fused_matmul_dims(b, n.attr_or::<i64>("transBatchB", 0)? != 0, n.attr_or::<i64>("transB", 0)? != 0);
    Ok(vec![tensor(c.dtype(0), Some(matmul_dims(n, &a, &b)?))])
}

/// The dims FusedMatMul multiplies: with `trans_batch` (rank 3 or more) `[d0, d1.., m, k]`
/// becomes `[d1.., m, d0, k]`; `trans` then swaps the last two.
pub fn fused_matmul_dims<D: Clone>(s: &[D], trans_batch: bool, trans: bool) -> Vec<D> {
    let mut s = s.to_vec();
    let r = s.len();
    if trans_batch && r >= 3 {
        let first = s.remove(0);
        s.insert(r - 2, first);
    }
    if trans && r >= 2 {
        s.swap(r - 2, r - 1);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_matmul_moves_the_batch_axis() {
        assert_eq!(fused_matmul_dims(&[2, 3, 4, 5], true, false), vec![3, 4, 2, 5]);
        assert_eq!(fused_matmul_dims(&[2, 3, 4, 5], true, true), vec![3, 4, 5, 2]);
        assert_eq!(fused_matmul_dims(&[4, 5], true, true), vec![5, 4]);
        assert_eq!(fused_matmul_dims(&[5], false, true), vec![5]);
    }
}
