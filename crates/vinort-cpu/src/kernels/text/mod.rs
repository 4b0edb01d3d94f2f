//! String kernels.
//!
//! - [`strings`] holds [StringConcat](https://onnx.ai/onnx/operators/onnx__StringConcat.html) (20),
//!   [StringSplit](https://onnx.ai/onnx/operators/onnx__StringSplit.html) (20) and
//!   [StringNormalizer](https://onnx.ai/onnx/operators/onnx__StringNormalizer.html) (10).
//! - [`re2`] holds [RegexFullMatch](https://onnx.ai/onnx/operators/onnx__RegexFullMatch.html) (20),
//!   whose RE2 patterns are translated to the `regex` crate's dialect.
//! - [`tfidf`] holds [TfIdfVectorizer](https://onnx.ai/onnx/operators/onnx__TfIdfVectorizer.html) (9)
//!   over int32, int64 and string input.
//!
//! Strings are Unicode text (the loader has already decoded them as UTF-8); every case mapping
//! is Unicode's default, locale-independent one.

use vinort_ir::{Error, Result};

use crate::kernel::Registry;

pub mod re2;
pub mod strings;
#[cfg(test)]
mod tests;
pub mod tfidf;

pub(crate) fn register(r: &mut Registry) {
    strings::register(r);
    re2::register(r);
    tfidf::register(r);
}

/// The numpy-style broadcast of two shapes.
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| if i + s.len() < rank { 1 } else { s[i + s.len() - rank] };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => Err(Error::invalid(format!("shapes {a:?} and {b:?} cannot be broadcast together"))),
        })
        .collect()
}

/// For every element of `out` (row-major), the flat offset of the element of a tensor of
/// `shape` broadcast to it.
pub(crate) fn broadcast_offsets(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let n: usize = out.iter().product();
    let lead = out.len() - shape.len();
    // Stride of each output axis in the input; 0 where the input is broadcast.
    let mut strides = vec![0usize; out.len()];
    let mut s = 1;
    for (i, &d) in shape.iter().enumerate().rev() {
        if d != 1 {
            strides[lead + i] = s;
        }
        s *= d;
    }
    let mut offs = Vec::with_capacity(n);
    let mut idx = vec![0usize; out.len()];
    let mut off = 0usize;
    for _ in 0..n {
        offs.push(off);
        // Odometer increment over the output index, keeping `off` in step.
        for ax in (0..out.len()).rev() {
            idx[ax] += 1;
            off += strides[ax];
            if idx[ax] < out[ax] {
                break;
            }
            off -= strides[ax] * idx[ax];
            idx[ax] = 0;
        }
    }
    offs
}
