//! Rules of the `ai.onnx.ml` ops and of the `ai.onnx.preview.training` ops.
//!
//! The ml ops' output types come from attributes more than from inputs: a classifier's label
//! is string when it has `classlabels_strings`, else int64; LabelEncoder's output type is that
//! of its `values_*` attribute.

use super::InferCtx;
use super::rules::{Out, tensor, with_dtype};
use crate::dtype::DType;
use crate::tensor::Tensor;
use crate::value::{Dim, ValueType};

fn batch(c: &InferCtx<'_>) -> Dim {
    match c.shape(0) {
        Some([]) | None => Dim::Unknown,
        Some([_]) => Dim::Fixed(1),
        Some(s) => s[0].clone(),
    }
}

/// Normalizer, Scaler: float of the input's shape.
pub(crate) fn float_like(c: &InferCtx<'_>) -> Out {
    Ok(vec![with_dtype(c.ty(0), DType::F32)])
}

/// ArrayFeatureExtractor: the input's type (the selected elements).
pub(crate) fn array_feature_extractor(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(0), c.shape(0).map(|s| vec![Dim::Unknown; s.len().max(2)]))])
}

/// CastMap: `cast_to` TO_FLOAT (default), TO_STRING or TO_INT64.
pub(crate) fn cast_map(c: &InferCtx<'_>) -> Out {
    let d = match c.node.attr::<String>("cast_to")?.as_deref() {
        None | Some("TO_FLOAT") => DType::F32,
        Some("TO_STRING") => DType::String,
        Some("TO_INT64") => DType::I64,
        Some(other) => return Err(c.node.error(format!("cast_to '{other}' is not TO_FLOAT, TO_STRING or TO_INT64"))),
    };
    Ok(vec![ValueType::Tensor(d, Some(vec![Dim::Fixed(1), Dim::Unknown]))])
}

/// CategoryMapper: strings become int64 and int64 become strings, same shape.
pub(crate) fn category_mapper(c: &InferCtx<'_>) -> Out {
    Ok(vec![match c.dtype(0) {
        Some(DType::String) => with_dtype(c.ty(0), DType::I64),
        Some(_) => with_dtype(c.ty(0), DType::String),
        None => ValueType::Unknown,
    }])
}

/// DictVectorizer: a tensor of the map's value type.
pub(crate) fn dict_vectorizer(c: &InferCtx<'_>) -> Out {
    Ok(vec![match c.ty(0) {
        ValueType::Map(_, v) => tensor(v.tensor_dtype(), None),
        _ => ValueType::Unknown,
    }])
}

/// FeatureVectorizer: float `[N, sum(inputdimensions)]`.
pub(crate) fn feature_vectorizer(c: &InferCtx<'_>) -> Out {
    let width = c
        .node
        .attr::<Vec<i64>>("inputdimensions")?
        .map_or(Dim::Unknown, |d| Dim::Fixed(d.iter().map(|v| (*v).max(0) as usize).sum()));
    Ok(vec![ValueType::Tensor(DType::F32, Some(vec![batch(c), width]))])
}

/// LabelEncoder: string <-> int64 by input type at opset 1; from opset 2 the type of the
/// `values_*` attribute (opset 4: `values_tensor`).
pub(crate) fn label_encoder(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let d = if n.opset < 2 {
        match c.dtype(0) {
            Some(DType::String) => Some(DType::I64),
            Some(_) => Some(DType::String),
            None => None,
        }
    } else if let Some(t) = n.attr::<Tensor>("values_tensor")? {
        Some(t.dtype())
    } else if n.attr_raw("values_strings").is_some() {
        Some(DType::String)
    } else if n.attr_raw("values_int64s").is_some() {
        Some(DType::I64)
    } else if n.attr_raw("values_floats").is_some() {
        Some(DType::F32)
    } else {
        return Err(n.error("no values_* attribute gives the output type"));
    };
    Ok(vec![tensor(d, c.shape(0).map(<[Dim]>::to_vec))])
}

/// Classifiers: label `[N]` (string with `classlabels_strings`, else int64) and float scores
/// `[N, classes]`.
pub(crate) fn classifier(c: &InferCtx<'_>) -> Out {
    let label = if c.node.attr_raw("classlabels_strings").is_some() { DType::String } else { DType::I64 };
    let b = batch(c);
    Ok(vec![
        ValueType::Tensor(label, Some(vec![b.clone()])),
        ValueType::Tensor(DType::F32, Some(vec![b, Dim::Unknown])),
    ])
}

/// Regressors: float `[N, targets]` (`targets`/`n_targets` when given).
pub(crate) fn regressor(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let targets = match n.op_type.as_str() {
        "LinearRegressor" => Some(n.attr_or::<i64>("targets", 1)?),
        "SVMRegressor" => None,
        _ => n.attr::<i64>("n_targets")?,
    };
    let width = targets.map_or(Dim::Unknown, |t| Dim::Fixed(t.max(0) as usize));
    let d = if n.op_type == "TreeEnsemble" { c.dtype(0) } else { Some(DType::F32) };
    Ok(vec![tensor(d, Some(vec![batch(c), width]))])
}

/// OneHotEncoder: float, the input's shape plus the category axis.
pub(crate) fn one_hot_encoder(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let cats = n
        .attr::<Vec<i64>>("cats_int64s")?
        .map(|v| v.len())
        .or(n.attr::<Vec<String>>("cats_strings")?.map(|v| v.len()))
        .map_or(Dim::Unknown, Dim::Fixed);
    let s = c.shape(0).map(|s| s.iter().cloned().chain([cats]).collect());
    Ok(vec![ValueType::Tensor(DType::F32, s)])
}

/// ZipMap: a sequence of maps from the class labels (string or int64) to float.
pub(crate) fn zip_map(c: &InferCtx<'_>) -> Out {
    let key = if c.node.attr_raw("classlabels_strings").is_some() { DType::String } else { DType::I64 };
    Ok(vec![ValueType::Sequence(Box::new(ValueType::Map(key, Box::new(ValueType::Tensor(DType::F32, None)))))])
}

/// Adagrad, Momentum, Adam: inputs are `(R, T, X..., G..., [V...,] [H...])` with `n` tensors
/// per group; each output group (new X, then the new state groups) has the type of its input
/// group.
pub(crate) fn optimizer(c: &InferCtx<'_>) -> Out {
    // Input groups after R and T, and which of them the output groups update.
    let (groups, updated): (usize, &[usize]) = match c.node.op_type.as_str() {
        "Adam" => (4, &[0, 2, 3]),
        _ => (3, &[0, 2]),
    };
    let n = c.node.inputs.len().saturating_sub(2) / groups;
    Ok((0..c.node.outputs.len())
        .map(|o| match (o.checked_div(n), o.checked_rem(n)) {
            (Some(g), Some(k)) => updated.get(g).map_or(ValueType::Unknown, |g| c.ty(2 + g * n + k).clone()),
            _ => ValueType::Unknown,
        })
        .collect())
}

/// Gradient: the gradient with respect to input `i` has input `i`'s type.
pub(crate) fn gradient(c: &InferCtx<'_>) -> Out {
    Ok((0..c.node.outputs.len()).map(|i| c.ty(i).clone()).collect())
}
