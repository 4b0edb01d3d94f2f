//! What a product's epilogue can take after it: an activation its kernel would compute the
//! same way, and a clamp by constants after that ([`crate::kernels::epilogue`]).

use vinort_ir::{Node, ValueId};

use super::fuse::{onnx, other, out1};
use super::{Work, const_scalar};
use crate::kernels::epilogue::Act;

/// The activation a node computes, when the epilogue can apply it exactly as its kernel would.
pub(super) fn activation(w: &Work<'_>, n: &Node) -> Option<Act> {
    if !n.domain.is_empty() && n.domain != "ai.onnx" {
        return None;
    }
    let f = |name: &str, default: f32| n.attr_or::<f32>(name, default).ok();
    Some(match n.op_type.as_str() {
        "Relu" => Act::Relu,
        "LeakyRelu" => Act::LeakyRelu(f("alpha", 0.01)?),
        "Sigmoid" => Act::Sigmoid,
        "HardSigmoid" => Act::HardSigmoid(f("alpha", 0.2)?, f("beta", 0.5)?),
        "HardSwish" => Act::HardSwish,
        "Tanh" => Act::Tanh,
        "Gelu" if n.attr_or::<String>("approximate", "none".into()).ok()? == "none" => Act::Gelu,
        "Clip" if n.opset < 11 => Act::Clip(f("min", f32::MIN)?, f("max", f32::MAX)?),
        "Clip" => {
            let bound = |k: usize, default: f32| match n.inputs.get(k).copied().flatten() {
                None => Some(default),
                Some(v) => const_scalar(w, Some(v)),
            };
            Act::Clip(bound(1, f32::MIN)?, bound(2, f32::MAX)?)
        }
        _ => return None,
    })
}

/// `[lo, hi]` when `n` clamps `v` by constants and keeps its shape: a Max (lower bound) or Min
/// (upper bound) of `v` and a scalar that is not NaN (of rank at most `v`'s, so nothing
/// broadcasts), or, after an activation, a Clip. For a non-NaN bound Max and Min give what
/// Clip's comparisons give (NaN passes either way; they differ only in the sign of a zero
/// equal to the bound).
pub(super) fn clamp_after(w: &Work<'_>, n: &Node, v: ValueId, after_act: bool) -> Option<[f32; 2]> {
    out1(n)?;
    let rank = w.ty(v).tensor_shape()?.len();
    if let Some(b) = other(n, v).flatten().filter(|b| *b != v)
        && (onnx(n, "Max") || onnx(n, "Min"))
        && w.constant(b)?.rank() <= rank
        && let Some(c) = const_scalar(w, Some(b)).filter(|c| !c.is_nan())
    {
        return Some(if n.is("Max") { [c, f32::INFINITY] } else { [f32::NEG_INFINITY, c] });
    }
    match activation(w, n) {
        Some(Act::Clip(lo, hi)) if after_act && n.inputs.first() == Some(&Some(v)) => Some([lo, hi]),
        _ => None,
    }
}
