//! Rules of the ops with subgraphs ([If], [Loop], [Scan], [SequenceMap]), of the sequence ops
//! and of the optional ops.
//!
//! Subgraphs are inferred before their node (see [`super::infer_graph`]), so these rules read
//! the bodies' output types; [`body_input_types`] says what a node feeds its body, for body
//! inputs the file leaves untyped.
//!
//! [If]: https://onnx.ai/onnx/operators/onnx__If.html
//! [Loop]: https://onnx.ai/onnx/operators/onnx__Loop.html
//! [Scan]: https://onnx.ai/onnx/operators/onnx__Scan.html
//! [SequenceMap]: https://onnx.ai/onnx/operators/onnx__SequenceMap.html

use std::sync::Arc;

use super::InferCtx;
use super::rules::{Out, norm_axis, tensor};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{Graph, Node};
use crate::value::{Dim, ValueType};

/// Output types of a (sub)graph, in order.
fn outputs_of(g: &Graph) -> Vec<ValueType> {
    g.outputs().iter().map(|v| g.value(*v).ty.clone()).collect()
}

/// Output types of the subgraph attribute `name`.
fn body(c: &InferCtx<'_>, name: &str) -> Result<Vec<ValueType>> {
    let g: Arc<Graph> = c.node.req_attr(name)?;
    Ok(outputs_of(&g))
}

/// The common type of two values that may each be either (If's branches, a loop-carried value
/// before and after an iteration): equal dims stay, others become unknown.
pub(crate) fn unify(a: &ValueType, b: &ValueType) -> ValueType {
    match (a, b) {
        (ValueType::Unknown, x) | (x, ValueType::Unknown) => x.clone(),
        (ValueType::Tensor(da, sa), ValueType::Tensor(_, sb)) => {
            let shape = match (sa, sb) {
                (Some(x), Some(y)) if x.len() == y.len() => {
                    Some(x.iter().zip(y).map(|(p, q)| if p == q { p.clone() } else { Dim::Unknown }).collect())
                }
                _ => None,
            };
            ValueType::Tensor(*da, shape)
        }
        (ValueType::Sequence(x), ValueType::Sequence(y)) => ValueType::Sequence(Box::new(unify(x, y))),
        (ValueType::Optional(x), ValueType::Optional(y)) => ValueType::Optional(Box::new(unify(x, y))),
        (x, _) => x.clone(),
    }
}

/// A type whose extents may change (loop-carried values): the rank stays, dims become unknown.
fn relaxed(t: &ValueType) -> ValueType {
    match t {
        ValueType::Tensor(d, s) => ValueType::Tensor(*d, s.as_ref().map(|s| vec![Dim::Unknown; s.len()])),
        ValueType::Sequence(e) => ValueType::Sequence(Box::new(relaxed(e))),
        ValueType::Optional(e) => ValueType::Optional(Box::new(relaxed(e))),
        other => other.clone(),
    }
}

/// `t` without axis `axis` (a Scan input's element per iteration).
fn without_axis(t: &ValueType, axis: usize) -> ValueType {
    match t {
        ValueType::Tensor(d, Some(s)) if axis < s.len() => {
            let mut s = s.clone();
            s.remove(axis);
            ValueType::Tensor(*d, Some(s))
        }
        ValueType::Tensor(d, _) => ValueType::Tensor(*d, None),
        _ => ValueType::Unknown,
    }
}

/// `t` with `dim` inserted at `axis` (negative: from the back of the new rank).
fn with_axis(t: &ValueType, axis: i64, dim: Dim) -> ValueType {
    match t {
        ValueType::Tensor(d, Some(s)) => {
            let r = s.len() as i64 + 1;
            let a = if axis < 0 { axis + r } else { axis };
            if !(0..r).contains(&a) {
                return ValueType::Tensor(*d, None);
            }
            let mut s = s.clone();
            s.insert(a as usize, dim);
            ValueType::Tensor(*d, Some(s))
        }
        ValueType::Tensor(d, None) => ValueType::Tensor(*d, None),
        _ => ValueType::Unknown,
    }
}

/// What a node feeds the inputs of its `body` subgraph, given the types of its own inputs
/// (`None` for a node without a `body`).
pub(crate) fn body_input_types(n: &Node, fed: &[ValueType]) -> Option<Vec<ValueType>> {
    let n_fed = fed.len();
    match n.op_type.as_str() {
        // (iteration_num, condition, loop-carried...)
        "Loop" => Some(
            [ValueType::tensor(DType::I64, &[]), ValueType::tensor(DType::Bool, &[])]
                .into_iter()
                .chain(fed.iter().skip(2).map(relaxed))
                .collect(),
        ),
        "Scan" => {
            let m = usize::try_from(n.attr::<i64>("num_scan_inputs").ok()??).ok()?;
            if n.opset < 9 {
                // Scan-8: (sequence_lens, states..., scans...), all with a leading batch axis.
                let states = n_fed.checked_sub(1 + m)?;
                let st = fed[1..1 + states].iter().map(|t| without_axis(t, 0));
                let sc = fed[1 + states..].iter().map(|t| without_axis(&without_axis(t, 0), 0));
                return Some(st.chain(sc).collect());
            }
            let states = n_fed.checked_sub(m)?;
            let axes = n.attr::<Vec<i64>>("scan_input_axes").ok()?.unwrap_or_else(|| vec![0; m]);
            let sc = fed[states..].iter().zip(axes.iter().chain(std::iter::repeat(&0))).map(|(t, a)| {
                match t.tensor_shape().map(|s| norm_axis(n, *a, s.len())) {
                    Some(Ok(a)) => without_axis(t, a),
                    _ => without_axis(t, usize::MAX),
                }
            });
            Some(fed[..states].iter().cloned().chain(sc).collect())
        }
        // Sequences give their elements, tensors themselves.
        "SequenceMap" => Some(
            fed.iter()
                .map(|t| match t {
                    ValueType::Sequence(e) => (**e).clone(),
                    other => other.clone(),
                })
                .collect(),
        ),
        _ => None,
    }
}

/// If: each output unifies the two branches' outputs.
pub(crate) fn if_(c: &InferCtx<'_>) -> Out {
    let (a, b) = (body(c, "then_branch")?, body(c, "else_branch")?);
    Ok((0..c.node.outputs.len())
        .map(|i| unify(a.get(i).unwrap_or(&ValueType::Unknown), b.get(i).unwrap_or(&ValueType::Unknown)))
        .collect())
}

/// Loop: body outputs are (condition, loop-carried..., scan outputs...); the node gives the
/// final loop-carried values, then each scan output stacked along a new first axis.
pub(crate) fn loop_(c: &InferCtx<'_>) -> Out {
    let b = body(c, "body")?;
    let carried = c.node.inputs.len().saturating_sub(2);
    let mut out = Vec::with_capacity(c.node.outputs.len());
    for i in 0..c.node.outputs.len() {
        out.push(if i < carried {
            // Zero iterations return the initial value: both are possible.
            unify(b.get(1 + i).unwrap_or(&ValueType::Unknown), c.ty(2 + i))
        } else {
            with_axis(b.get(1 + i).unwrap_or(&ValueType::Unknown), 0, Dim::Unknown)
        });
    }
    Ok(out)
}

/// Scan: the final states (body outputs 0..N), then the scan outputs stacked along
/// `scan_output_axes` (default 0) with the sequence length.
pub(crate) fn scan(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let b = body(c, "body")?;
    let m = usize::try_from(n.req_attr::<i64>("num_scan_inputs")?).map_err(|_| n.error("negative num_scan_inputs"))?;
    let first = if n.opset < 9 { 1 } else { 0 };
    let states = n.inputs.len().checked_sub(first + m).ok_or_else(|| n.error("fewer inputs than num_scan_inputs"))?;
    let get = |i: usize| b.get(i).cloned().unwrap_or(ValueType::Unknown);
    let initial = |i: usize| if first == 1 { without_axis(c.ty(first + i), 0) } else { c.ty(first + i).clone() };
    let mut out: Vec<ValueType> = (0..states.min(n.outputs.len())).map(|i| unify(&get(i), &initial(i))).collect();
    if n.opset < 9 {
        // Scan-8: states keep the batch axis; scan outputs are [batch, seq, ...].
        let x = c.shape(first + states);
        let (batch, seq) = (
            x.and_then(|s| s.first()).cloned().unwrap_or(Dim::Unknown),
            x.and_then(|s| s.get(1)).cloned().unwrap_or(Dim::Unknown),
        );
        for o in out.iter_mut() {
            *o = with_axis(o, 0, batch.clone());
        }
        for k in states..n.outputs.len() {
            out.push(with_axis(&with_axis(&get(k), 0, seq.clone()), 0, batch.clone()));
        }
        return Ok(out);
    }
    let in_axes = n.attr::<Vec<i64>>("scan_input_axes")?.unwrap_or_default();
    let seq = match c.shape(states) {
        Some(s) => s[norm_axis(n, in_axes.first().copied().unwrap_or(0), s.len())?].clone(),
        None => Dim::Unknown,
    };
    let out_axes = n.attr::<Vec<i64>>("scan_output_axes")?.unwrap_or_default();
    for k in states..n.outputs.len() {
        let axis = out_axes.get(k - states).copied().unwrap_or(0);
        out.push(with_axis(&get(k), axis, seq.clone()));
    }
    Ok(out)
}

/// SequenceMap: each output is a sequence of the body's output.
pub(crate) fn sequence_map(c: &InferCtx<'_>) -> Out {
    let b = body(c, "body")?;
    Ok((0..c.node.outputs.len())
        .map(|i| match b.get(i) {
            Some(ValueType::Unknown) | None => ValueType::Unknown,
            Some(t) => ValueType::Sequence(Box::new(relaxed(t))),
        })
        .collect())
}

fn seq_of(t: ValueType) -> ValueType {
    match t {
        ValueType::Unknown => ValueType::Unknown,
        t => ValueType::Sequence(Box::new(t)),
    }
}

/// The element type of a sequence input.
fn element(t: &ValueType) -> ValueType {
    match t {
        ValueType::Sequence(e) => (**e).clone(),
        _ => ValueType::Unknown,
    }
}

/// SequenceConstruct: a sequence of the inputs' common type.
pub(crate) fn sequence_construct(c: &InferCtx<'_>) -> Out {
    let mut e = c.ty(0).clone();
    for i in 1..c.node.inputs.len() {
        e = unify(&e, c.ty(i));
    }
    Ok(vec![seq_of(e)])
}

/// SequenceEmpty: a sequence of `dtype` (default float).
pub(crate) fn sequence_empty(c: &InferCtx<'_>) -> Out {
    let code = c.node.attr_or::<i64>("dtype", 1)?;
    let d = DType::from_onnx(code as i32).ok_or_else(|| c.node.error(format!("dtype {code} is no ONNX data type")))?;
    Ok(vec![seq_of(ValueType::Tensor(d, None))])
}

/// SequenceAt: the element type.
pub(crate) fn sequence_at(c: &InferCtx<'_>) -> Out {
    Ok(vec![element(c.ty(0))])
}

/// SequenceInsert, SequenceErase: the input sequence's type (an inserted tensor may widen the
/// element shape).
pub(crate) fn sequence_same(c: &InferCtx<'_>) -> Out {
    let e = element(c.ty(0));
    let e = if c.node.op_type == "SequenceInsert" { unify(&e, &relaxed_if_differs(&e, c.ty(1))) } else { e };
    Ok(vec![seq_of(e)])
}

/// `b` when `a` is unknown or equal, else the rank-only type of `b`.
fn relaxed_if_differs(a: &ValueType, b: &ValueType) -> ValueType {
    if *a == ValueType::Unknown || a == b { b.clone() } else { relaxed(b) }
}

/// SequenceLength: an int64 scalar.
pub(crate) fn sequence_length(_: &InferCtx<'_>) -> Out {
    Ok(vec![ValueType::tensor(DType::I64, &[])])
}

/// SplitToSequence: a sequence of the input's type; without `split` and with `keepdims = 0`
/// the elements lose the split axis.
pub(crate) fn split_to_sequence(c: &InferCtx<'_>) -> Out {
    let keep = c.has(1) || c.node.attr_or::<i64>("keepdims", 1)? != 0;
    let shape = c.shape(0).map(|s| vec![Dim::Unknown; if keep { s.len() } else { s.len().saturating_sub(1) }]);
    Ok(vec![seq_of(tensor(c.dtype(0), shape))])
}

/// ConcatFromSequence: a tensor of the element type, one rank more with `new_axis = 1`.
pub(crate) fn concat_from_sequence(c: &InferCtx<'_>) -> Out {
    let new_axis = c.node.attr_or::<i64>("new_axis", 0)? != 0;
    Ok(vec![match element(c.ty(0)) {
        ValueType::Tensor(d, s) => ValueType::Tensor(d, s.map(|s| vec![Dim::Unknown; s.len() + usize::from(new_axis)])),
        _ => ValueType::Unknown,
    }])
}

/// Optional: of the input's type, or of the `type` attribute when empty.
pub(crate) fn optional(c: &InferCtx<'_>) -> Out {
    let t = if c.has(0) { c.ty(0).clone() } else { c.node.attr::<ValueType>("type")?.unwrap_or(ValueType::Unknown) };
    Ok(vec![match t {
        ValueType::Unknown => ValueType::Unknown,
        t => ValueType::Optional(Box::new(t)),
    }])
}

/// OptionalGetElement: the optional's element (opset 18 also passes a tensor or sequence
/// through).
pub(crate) fn optional_get_element(c: &InferCtx<'_>) -> Out {
    Ok(vec![match c.ty(0) {
        ValueType::Optional(e) => (**e).clone(),
        other => other.clone(),
    }])
}

/// OptionalHasElement: a bool scalar.
pub(crate) fn optional_has_element(_: &InferCtx<'_>) -> Out {
    Ok(vec![ValueType::tensor(DType::Bool, &[])])
}
