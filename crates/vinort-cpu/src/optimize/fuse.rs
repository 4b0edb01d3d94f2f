//! The fusions: Conv + BatchNormalization, the five-op GELU, and product epilogues (the QDQ
//! ones are in [`super::qdq`]).
//!
//! Each pattern is matched only where every value inside it has exactly one reader and is not a
//! partition output, so the values the fusion removes were used by nothing else; and only on
//! f32, the type the fused kernels compute in.

use vinort_ir::{DType, Dim, Node, Tensor, ValueId};

use super::tail::{activation, clamp_after};
use super::{Item, Work, const_scalar, is_f32};
use crate::kernels::epilogue::Epilogue;

/// True for a node of the default domain with this op type.
pub(super) fn onnx(n: &Node, op: &str) -> bool {
    n.is(op) && (n.domain.is_empty() || n.domain == "ai.onnx")
}

/// The f32 elements of a constant.
pub(super) fn const_f32(w: &Work<'_>, v: Option<ValueId>) -> Option<Vec<f32>> {
    let t = w.constant(v?)?;
    (t.dtype() == DType::F32).then(|| t.to_aligned().as_slice::<f32>().ok().map(<[f32]>::to_vec))?
}

/// Removes items `gone` and puts `item` at position `at`.
pub(super) fn replace(w: &mut Work<'_>, gone: &[usize], at: usize, item: Item) {
    for g in gone {
        w.items[*g] = None;
    }
    w.items[at] = Some(item);
    w.touch();
}

// ---------------------------------------------------------------------------------------------
// Conv + BatchNormalization

/// Folds an inference BatchNormalization into the Conv before it:
/// `W' = W·s`, `B' = (B − mean)·s + β` per output channel, with `s = γ / √(var + ε)` (in f64,
/// rounded once to f32).
pub(crate) fn conv_bn(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        if let Some((ci, mut node, wt, bt)) = conv_bn_at(w, i) {
            let (wid, bid) = (w.new_const(wt), w.new_const(bt));
            node.inputs.truncate(1);
            node.inputs.extend([Some(wid), Some(bid)]);
            replace(w, &[ci], i, Item { node, epi: Epilogue::default(), extra: vec![] });
        }
    }
}

/// The Conv at the position returned, to be replaced by `node` reading the new weights and bias.
fn conv_bn_at(w: &Work<'_>, i: usize) -> Option<(usize, Node, Tensor, Tensor)> {
    let bn = &w.item(i)?.node;
    if !onnx(bn, "BatchNormalization")
        || bn.outputs.iter().skip(1).any(Option::is_some)
        || bn.attr_or::<i64>("training_mode", 0).ok()? != 0
        || bn.attr_or::<i64>("spatial", 1).ok()? != 1
    {
        return None;
    }
    let x = (*bn.inputs.first()?)?;
    let ci = w.producer(x)?;
    let conv = w.item(ci)?;
    if !onnx(&conv.node, "Conv") || !conv.epi.is_empty() || w.sole_reader(x)? != i || !is_f32(w, Some(x)) {
        return None;
    }
    let wt = w.constant((*conv.node.inputs.get(1)?)?)?;
    if wt.dtype() != DType::F32 || wt.rank() < 3 {
        return None;
    }
    let m = wt.shape()[0];
    let params: Vec<Vec<f32>> = (1..5).map(|k| const_f32(w, *bn.inputs.get(k)?)).collect::<Option<_>>()?;
    if params.iter().any(|p| p.len() != m) {
        return None;
    }
    let bias = match conv.node.inputs.get(2).copied().flatten() {
        Some(b) => const_f32(w, Some(b)).filter(|b| b.len() == m)?,
        None => vec![0.0; m],
    };
    let eps = f64::from(bn.attr_or::<f32>("epsilon", 1e-5).ok()?);
    let (gamma, beta, mean, var) = (&params[0], &params[1], &params[2], &params[3]);
    let s: Vec<f64> = (0..m).map(|c| f64::from(gamma[c]) / (f64::from(var[c]) + eps).sqrt()).collect();
    let wv = wt.to_aligned();
    let wv = wv.as_slice::<f32>().ok()?;
    let per = wv.len() / m.max(1);
    let w2: Vec<f32> = wv.iter().enumerate().map(|(j, v)| (f64::from(*v) * s[j / per.max(1)]) as f32).collect();
    let b2: Vec<f32> =
        (0..m).map(|c| ((f64::from(bias[c]) - f64::from(mean[c])) * s[c] + f64::from(beta[c])) as f32).collect();
    let mut node = conv.node.clone();
    node.name = format!("{}+{}", node.name, bn.name);
    node.outputs = vec![*bn.outputs.first()?];
    Some((ci, node, Tensor::from_vec(wt.shape(), w2).ok()?, Tensor::from_vec(&[m], b2).ok()?))
}

// ---------------------------------------------------------------------------------------------
// GELU

/// The other input of a two-input node, given one of them.
pub(super) fn other(n: &Node, v: ValueId) -> Option<Option<ValueId>> {
    match n.inputs.as_slice() {
        [a, b] if *a == Some(v) => Some(*b),
        [a, b] if *b == Some(v) => Some(*a),
        _ => None,
    }
}

/// The single output of a node.
pub(super) fn out1(n: &Node) -> Option<ValueId> {
    match n.outputs.as_slice() {
        [Some(v)] => Some(*v),
        _ => None,
    }
}

/// The sole reader of `v`, when it is a default-domain `op`.
pub(super) fn next_op<'a>(w: &'a Work<'_>, v: ValueId, op: &str) -> Option<(usize, &'a Node)> {
    let r = w.sole_reader(v)?;
    let n = &w.item(r)?.node;
    (onnx(n, op) && w.item(r)?.epi.is_empty()).then_some((r, n))
}

fn near(v: Option<f32>, want: f64) -> bool {
    v.is_some_and(|v| (f64::from(v) - want).abs() <= 1e-4 * want.abs())
}

/// Replaces `0.5·x·(1 + erf(x/√2))`, written as Div (or Mul by 1/√2), Erf, Add 1 and two Muls
/// (the ½ on either side), by one Gelu-20 node.
pub(crate) fn gelu(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        if let Some((gone, at, node)) = gelu_at(w, i) {
            replace(w, &gone, at, Item { node, epi: Epilogue::default(), extra: vec![] });
        }
    }
}

fn gelu_at(w: &Work<'_>, i: usize) -> Option<(Vec<usize>, usize, Node)> {
    let erf = &w.item(i)?.node;
    if !onnx(erf, "Erf") {
        return None;
    }
    let d = (*erf.inputs.first()?)?;
    let di = w.producer(d)?;
    let div = &w.item(di)?.node;
    if w.sole_reader(d)? != i || !w.item(di)?.epi.is_empty() {
        return None;
    }
    let x = match div.inputs.as_slice() {
        [Some(x), c] if onnx(div, "Div") && near(const_scalar(w, *c), std::f64::consts::SQRT_2) => *x,
        [Some(a), Some(b)] if onnx(div, "Mul") => {
            if near(const_scalar(w, Some(*b)), std::f64::consts::FRAC_1_SQRT_2) {
                *a
            } else if near(const_scalar(w, Some(*a)), std::f64::consts::FRAC_1_SQRT_2) {
                *b
            } else {
                return None;
            }
        }
        _ => return None,
    };
    if !is_f32(w, Some(x)) {
        return None;
    }
    let (ai, add) = next_op(w, out1(erf)?, "Add")?;
    if !near(const_scalar(w, other(add, out1(erf)?)?), 1.0) {
        return None;
    }
    let (mi, mul) = next_op(w, out1(add)?, "Mul")?;
    let p = other(mul, out1(add)?)??;
    let half = |n: &Node, v: ValueId| near(const_scalar(w, other(n, v).flatten()), 0.5);
    if p == x {
        // (x · (1 + erf)) · ½
        let (hi, h) = next_op(w, out1(mul)?, "Mul")?;
        if !half(h, out1(mul)?) {
            return None;
        }
        Some((vec![di, i, ai, mi], hi, gelu_node(erf, x, out1(h)?)))
    } else {
        // (x · ½) · (1 + erf)
        let pi = w.producer(p)?;
        let h = &w.item(pi)?.node;
        if !onnx(h, "Mul") || w.sole_reader(p)? != mi || other(h, x)?.is_none() || !half(h, x) {
            return None;
        }
        Some((vec![di, i, ai, pi], mi, gelu_node(erf, x, out1(mul)?)))
    }
}

fn gelu_node(erf: &Node, x: ValueId, y: ValueId) -> Node {
    let mut n = erf.clone();
    n.name = format!("{}/Gelu", erf.name);
    n.op_type = "Gelu".into();
    n.domain = String::new();
    n.opset = 20;
    n.inputs = vec![Some(x)];
    n.outputs = vec![Some(y)];
    n.attrs = vec![];
    n.proto = None;
    n
}

// ---------------------------------------------------------------------------------------------
// Product epilogues

/// Known dims equal one by one (fixed extents, or the same symbol).
fn same_shape(a: Option<&[Dim]>, b: Option<&[Dim]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter().zip(b).all(|(x, y)| match (x, y) {
                    (Dim::Fixed(p), Dim::Fixed(q)) => p == q,
                    (Dim::Symbol(p), Dim::Symbol(q)) => p == q,
                    _ => false,
                })
        }
        _ => false,
    }
}

/// Fuses what follows each f32 Conv, Gemm and MatMul into it: for MatMul an Add of a
/// constant `[N]` bias, then an Add of a residual of the output's shape, then one activation,
/// then a clamp by constants ([`tail::clamp_after`](super::tail::clamp_after)). A MatMulInteger by a constant B takes its Cast to float and Mul by the scales first, then
/// the same chain.
pub(crate) fn epilogues(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        if let Some((gone, at, item)) = epilogue_at(w, i) {
            replace(w, &gone, at, item);
        }
    }
}

fn epilogue_at(w: &Work<'_>, i: usize) -> Option<(Vec<usize>, usize, Item)> {
    let it = w.item(i)?;
    let n = &it.node;
    let op = ["Conv", "Gemm", "MatMul", "MatMulInteger"].into_iter().find(|op| onnx(n, op))?;
    let y = out1(n)?;
    let int = op == "MatMulInteger";
    // A MatMulInteger the QDQ pass scaled already takes the rest of the chain.
    let scaled =
        int && it.epi.scale.is_some() && it.epi.residual.is_none() && it.epi.act.is_none() && it.epi.clamp.is_none();
    if (!it.epi.is_empty() && !scaled) || !n.implicit_inputs.is_empty() {
        return None;
    }
    if !int && (!is_f32(w, n.inputs.first().copied().flatten()) || !is_f32(w, Some(y))) {
        return None;
    }
    let shape = w.ty(y).tensor_shape().map(<[Dim]>::to_vec);
    let cols = shape.as_ref().and_then(|s| s.last()).and_then(Dim::fixed);
    let (mut cur, mut last, mut gone) = (y, i, vec![i]);
    let mut epi = if scaled { it.epi.clone() } else { Epilogue::default() };
    let mut extra = if scaled { it.extra.clone() } else { vec![] };
    let mut node = n.clone();
    // Run-time operands of the tail go after the product's own input slots (an absent optional
    // input keeps its slot: Conv's and Gemm's third, MatMulInteger's zero points).
    let slots = match op {
        "MatMul" => 2,
        "MatMulInteger" => 4,
        _ => 3,
    };
    node.inputs.resize(slots.max(node.inputs.len()), None);
    let base = node.inputs.len();
    if int && !scaled {
        // The integer product becomes float through Cast and a Mul by its scales: the packed
        // kernel needs a constant 2-D B.
        let b = w.constant((*n.inputs.get(1)?)?)?;
        if b.rank() != 2 || !matches!(b.dtype(), DType::U8 | DType::I8) {
            return None;
        }
        let (ci, cast) = next_op(w, y, "Cast")?;
        if cast.attr_or::<i64>("to", 0).ok()? != 1 {
            return None;
        }
        let c = out1(cast)?;
        let (mi, mul) = next_op(w, c, "Mul")?;
        let s = other(mul, c)??;
        let s_len = w.ty(s).static_shape()?.iter().product::<usize>();
        if s == c || !is_f32(w, Some(s)) || (s_len != 1 && Some(s_len) != cols) || w.ty(s).tensor_shape()?.len() > 1 {
            return None;
        }
        if !same_shape(w.ty(out1(mul)?).tensor_shape(), shape.as_deref()) {
            return None;
        }
        epi.scale = Some(base + extra.len());
        extra.push(s);
        (cur, last) = (out1(mul)?, mi);
        gone.extend([ci, mi]);
    }
    if matches!(op, "MatMul" | "MatMulInteger")
        && epi.bias.is_none()
        && let Some((r, add)) = next_op(w, cur, "Add")
        && let Some(b) = other(add, cur).flatten()
        && let Some(bias) = w.constant(b).filter(|t| t.dtype() == DType::F32 && t.rank() == 1)
        && cols == Some(bias.len())
        && same_shape(w.ty(out1(add)?).tensor_shape(), shape.as_deref())
    {
        epi.bias = Some(bias.to_aligned());
        (cur, last) = (out1(add)?, r);
        gone.push(r);
    }
    if let Some((r, add)) = next_op(w, cur, "Add")
        && let Some(z) = other(add, cur).flatten()
        && z != cur
        && is_f32(w, Some(z))
        && same_shape(w.ty(z).tensor_shape(), shape.as_deref())
        && same_shape(w.ty(out1(add)?).tensor_shape(), shape.as_deref())
    {
        epi.residual = Some(base + extra.len());
        extra.push(z);
        (cur, last) = (out1(add)?, r);
        gone.push(r);
    }
    if let Some(r) = w.sole_reader(cur)
        && let Some(next) = w.item(r)
        && next.epi.is_empty()
        && out1(&next.node).is_some()
        && next.node.inputs.first() == Some(&Some(cur))
        && let Some(act) = activation(w, &next.node)
    {
        epi.act = Some(act);
        (cur, last) = (out1(&next.node)?, r);
        gone.push(r);
    }
    if let Some(r) = w.sole_reader(cur)
        && let Some(next) = w.item(r)
        && next.epi.is_empty()
        && let Some(clamp) = clamp_after(w, &next.node, cur, epi.act.is_some())
    {
        epi.clamp = Some(clamp);
        (cur, last) = (out1(&next.node)?, r);
        gone.push(r);
    }
    if epi.is_empty() || (scaled && last == i) {
        return None;
    }
    node.outputs = vec![Some(cur)];
    gone.retain(|g| *g != last);
    Some((gone, last, Item { node, epi, extra }))
}
