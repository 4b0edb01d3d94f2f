//! Rules of the string and text ops, TfIdfVectorizer and ImageDecoder.

use super::InferCtx;
use super::rules::{Out, broadcast_all, with_dtype};
use crate::dtype::DType;
use crate::value::{Dim, ValueType};

/// StringConcat: strings, broadcast.
pub(crate) fn string_concat(c: &InferCtx<'_>) -> Out {
    broadcast_all(c, Some(DType::String))
}

/// StringNormalizer: strings of the input's rank (stop words may shorten the last axis).
pub(crate) fn string_normalizer(c: &InferCtx<'_>) -> Out {
    let s = c.shape(0).map(|s| {
        let mut s = s.to_vec();
        if let Some(last) = s.last_mut() {
            *last = Dim::Unknown;
        }
        s
    });
    Ok(vec![ValueType::Tensor(DType::String, s)])
}

/// StringSplit: Y strings with one more axis (the substrings), Z int64 counts of X's shape.
pub(crate) fn string_split(c: &InferCtx<'_>) -> Out {
    let y = c.shape(0).map(|s| s.iter().cloned().chain([Dim::Unknown]).collect());
    Ok(vec![ValueType::Tensor(DType::String, y), with_dtype(c.ty(0), DType::I64)])
}

/// RegexFullMatch: bool of the input's shape.
pub(crate) fn regex_full_match(c: &InferCtx<'_>) -> Out {
    Ok(vec![with_dtype(c.ty(0), DType::Bool)])
}

/// TfIdfVectorizer: float `[max(ngram_indexes) + 1]` or `[N, max(ngram_indexes) + 1]`.
pub(crate) fn tfidf_vectorizer(c: &InferCtx<'_>) -> Out {
    let width = c
        .node
        .attr::<Vec<i64>>("ngram_indexes")?
        .and_then(|v| v.into_iter().max())
        .map_or(Dim::Unknown, |m| Dim::Fixed((m.max(-1) + 1) as usize));
    let s = match c.shape(0) {
        Some([_]) => Some(vec![width]),
        Some([n, _]) => Some(vec![n.clone(), width]),
        _ => None,
    };
    Ok(vec![ValueType::Tensor(DType::F32, s)])
}

/// ImageDecoder: uint8 `(H, W, C)` with 3 channels for RGB (the default) and BGR, 1 for
/// Grayscale.
pub(crate) fn image_decoder(c: &InferCtx<'_>) -> Out {
    let channels = match c.node.attr::<String>("pixel_format")?.as_deref() {
        Some("Grayscale") => 1,
        _ => 3,
    };
    Ok(vec![ValueType::Tensor(DType::U8, Some(vec![Dim::Unknown, Dim::Unknown, Dim::Fixed(channels)]))])
}
