//! Constant folding: a node whose every input is known at compile time runs once, now, with the
//! kernel it would have run with, and its outputs become constants. `Shape` of a value whose
//! shape is static is a constant too, so the shape arithmetic exporters emit around Reshape
//! folds away. Nodes that draw random numbers, control flow and nodes whose outputs would take
//! more than [`MAX_FOLDED_BYTES`] are left to run.

use vinort_ir::{DType, RunContext, Tensor, Value, limits};

use super::{Work, build_item};

/// Ops whose result differs run to run (or whose training mode may be fed): never folded.
const NONDETERMINISTIC: [&str; 7] =
    ["RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"];

/// Folded outputs of one node larger than this stay computed at run time, so folding never
/// makes a session hold much more memory than the model's own weights.
pub(crate) const MAX_FOLDED_BYTES: usize = 64 << 20;

/// Folds every foldable node, in order (so chains fold through).
pub(crate) fn constants(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        let Some(it) = w.item(i) else { continue };
        let node = &it.node;
        if !it.epi.is_empty()
            || !node.implicit_inputs.is_empty()
            || node.subgraphs().next().is_some()
            || NONDETERMINISTIC.contains(&node.op_type.as_str())
        {
            continue;
        }
        let folded = if node.is("Shape") { static_shape(w, i) } else { run_now(w, i) };
        let Some(outs) = folded else { continue };
        let node = &w.items[i].as_ref().map(|it| it.node.clone());
        let Some(node) = node else { continue };
        for (o, t) in node.outputs.iter().zip(outs) {
            if let Some(o) = o {
                w.consts.insert(*o, t);
            }
        }
        tracing::trace!(node = %node.name, op = %node.op_type, "folded");
        w.items[i] = None;
        w.touch();
    }
}

/// Runs item `i` when all its inputs are constants; None when it cannot or should not fold.
fn run_now(w: &Work<'_>, i: usize) -> Option<Vec<Tensor>> {
    let it = w.item(i)?;
    let mut values: Vec<Option<Value>> = Vec::with_capacity(it.node.inputs.len());
    for v in &it.node.inputs {
        values.push(match v {
            None => None,
            Some(v) => Some(Value::Tensor(w.constant(*v)?.to_aligned())),
        });
    }
    let kernel = build_item(w, it).ok()?;
    let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
    // A buffer over MAX_FOLDED_BYTES is refused as soon as the kernel asks for it: the node is
    // left to run time (where a size over the memory limits is an error).
    let ctx = RunContext::default();
    let outs = limits::guard(|| limits::with_session_limit(Some(MAX_FOLDED_BYTES), || kernel.run(&refs, &ctx))).ok()?;
    if outs.len() != it.node.outputs.len() {
        return None;
    }
    let tensors: Vec<Tensor> = outs.into_iter().map(|v| v.into_tensor().ok()).collect::<Option<_>>()?;
    let bytes: usize = tensors.iter().map(|t| t.as_bytes().len()).sum();
    (bytes <= MAX_FOLDED_BYTES).then_some(tensors)
}

/// `Shape` (with opset 15's `start`/`end`) of an input whose shape is static.
fn static_shape(w: &Work<'_>, i: usize) -> Option<Vec<Tensor>> {
    let node = &w.item(i)?.node;
    let dims = w.ty((*node.inputs.first()?)?).static_shape()?;
    let rank = dims.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(node.attr_or::<i64>("start", 0).ok()?);
    let end = clamp(node.attr_or::<i64>("end", rank).ok()?);
    let dims: Vec<i64> = dims.get(start..end.max(start))?.iter().map(|d| *d as i64).collect();
    let t = Tensor::from_vec(&[dims.len()], dims).ok()?;
    debug_assert_eq!(t.dtype(), DType::I64);
    Some(vec![t])
}
