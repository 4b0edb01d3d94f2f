//! Rules of tensor ops whose outputs are not shaped like an input: Unique (data-dependent
//! length), OneHot (depth from a constant input), BitCast (element reinterpretation) and Det.

use super::InferCtx;
use super::rules::{Out, cast, norm_axis, tensor};
use crate::dtype::DType;
use crate::value::{Dim, ValueType};

/// Unique: Y of the input's type (1-D without `axis`, else the input's rank), then int64
/// `indices`, `inverse_indices` and `counts`, all 1-D.
pub(crate) fn unique(c: &InferCtx<'_>) -> Out {
    let y = match (c.node.attr::<i64>("axis")?, c.shape(0)) {
        (None, _) => Some(vec![Dim::Unknown]),
        (Some(_), Some(x)) => Some(vec![Dim::Unknown; x.len()]),
        (Some(_), None) => None,
    };
    let inverse = match (c.node.attr::<i64>("axis")?, c.shape(0)) {
        (None, Some(x)) => Dim::fixed_product(x).map_or(Dim::Unknown, Dim::Fixed),
        (Some(a), Some(x)) => x[norm_axis(c.node, a, x.len())?].clone(),
        _ => Dim::Unknown,
    };
    let idx = |d: Dim| ValueType::Tensor(DType::I64, Some(vec![d]));
    Ok(vec![tensor(c.dtype(0), y), idx(Dim::Unknown), idx(inverse), idx(Dim::Unknown)])
}

/// OneHot: the `values` input's type; the indices' shape with `depth` inserted at `axis`.
pub(crate) fn one_hot(c: &InferCtx<'_>) -> Out {
    let shape = match c.shape(0) {
        Some(x) => {
            let ax = norm_axis(c.node, c.node.attr_or::<i64>("axis", -1)?, x.len() + 1)?;
            let depth = c.consts.get(1).and_then(Option::as_ref).and_then(|t| t.to_f64_vec().ok());
            let depth = match depth.as_deref() {
                Some([d]) if *d >= 0.0 => Dim::Fixed(*d as usize),
                _ => Dim::Unknown,
            };
            let mut s = x.to_vec();
            s.insert(ax, depth);
            Some(s)
        }
        None => None,
    };
    Ok(vec![tensor(c.dtype(2), shape)])
}

/// BitCast: the `to` type, same shape (the spec requires equal bit widths).
pub(crate) fn bit_cast(c: &InferCtx<'_>) -> Out {
    cast(c)
}

/// Det: the batch dims of `[*, M, M]`.
pub(crate) fn det(c: &InferCtx<'_>) -> Out {
    let shape = c.shape(0).filter(|x| x.len() >= 2).map(|x| x[..x.len() - 2].to_vec());
    Ok(vec![tensor(c.dtype(0), shape)])
}
