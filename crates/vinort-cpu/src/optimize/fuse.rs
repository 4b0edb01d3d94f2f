//! The fusions: Conv + BatchNormalization, the five-op GELU, and product epilogues.
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
fn const_f32(w: &Work<'_>, v: Option<ValueId>) -> Option<Vec<f32>> {
    let t = w.constant(v?)?;
    (t.dtype() == DType::F32).then(|| t.to_aligned().as_slice::<f32>().ok().map(<[f32]>::to_vec))?
}

/// Removes items `gone` and puts `item` at position `at`.
fn replace(w: &mut Work<'_>, gone: &[usize], at: usize, item: Item) {
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
fn next_op<'a>(w: &'a Work<'_>, v: ValueId, op: &str) -> Option<(usize, &'a Node)> {
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

// ---------------------------------------------------------------------------------------------
// QDQ convolution

/// The inputs of a DequantizeLinear producing `v` (quantized data, scale, zero point), when a
/// live plain one does.
fn dequantized(w: &Work<'_>, v: ValueId) -> Option<(ValueId, ValueId, Option<ValueId>, usize)> {
    let di = w.producer(v)?;
    let dq = &w.item(di)?.node;
    if !onnx(dq, "DequantizeLinear") || dq.attr_or::<i64>("block_size", 0).ok()? != 0 {
        return None;
    }
    Some(((*dq.inputs.first()?)?, (*dq.inputs.get(1)?)?, dq.inputs.get(2).copied().flatten(), di))
}

fn is_int8(w: &Work<'_>, v: Option<ValueId>) -> bool {
    v.is_some_and(|v| matches!(w.ty(v).tensor_dtype(), Some(DType::U8 | DType::I8)))
}

/// `DequantizeLinear → Conv → QuantizeLinear` with int8 data, per-tensor activation scales and
/// per-tensor or per-output-channel weight scales becomes one QLinearConv, as ONNX Runtime's
/// QDQ transformer does: the integer product is exact and requantized once, instead of a float
/// convolution of dequantized values. An int32 bias is taken when its scale is the product of
/// the input's and the weights' (as quantizers write it). Dequantizations left without readers
/// are dropped. Runs before constant folding, which would fold the weights' DequantizeLinear.
pub(crate) fn qdq_conv(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        if let Some((gone, at, node)) = qdq_conv_at(w, i) {
            replace(w, &gone, at, Item { node, epi: Epilogue::default(), extra: vec![] });
        }
    }
    drop_dead(w);
}

fn qdq_conv_at(w: &Work<'_>, i: usize) -> Option<(Vec<usize>, usize, Node)> {
    let conv = &w.item(i)?.node;
    if !onnx(conv, "Conv") || !w.item(i)?.epi.is_empty() {
        return None;
    }
    let y = out1(conv)?;
    let (qi, q) = next_op(w, y, "QuantizeLinear")?;
    let (xq, xs, xz, _) = dequantized(w, (*conv.inputs.first()?)?)?;
    let (wq, ws, wz, _) = dequantized(w, (*conv.inputs.get(1)?)?)?;
    let (ys, yz) = ((*q.inputs.get(1)?)?, q.inputs.get(2).copied().flatten());
    let yq = out1(q)?;
    let scalar = |v: ValueId| w.ty(v).static_shape().is_some_and(|s| s.iter().product::<usize>() == 1);
    // Without a zero point QuantizeLinear makes uint8 while QLinearConv would make X's type.
    if !is_int8(w, Some(xq)) || !is_int8(w, Some(wq)) || !is_int8(w, Some(yq)) || !is_f32(w, Some(y)) || yz.is_none() {
        return None;
    }
    if !scalar(xs) || !scalar(ys) || xz.is_some_and(|z| !scalar(z)) || yz.is_some_and(|z| !scalar(z)) {
        return None;
    }
    if q.attr_or::<i64>("saturate", 1).ok()? != 1 || q.attr_or::<i64>("block_size", 0).ok()? != 0 {
        return None;
    }
    let wt = w.constant(wq)?;
    let m = *wt.shape().first()?;
    let w_scale = const_f32(w, Some(ws))?;
    if w_scale.len() != 1 && w_scale.len() != m {
        return None;
    }
    if w_scale.len() == m && m > 1 {
        let dq = &w.item(w.producer((*conv.inputs.get(1)?)?)?)?.node;
        if dq.attr_or::<i64>("axis", 1).ok()? != 0 {
            return None;
        }
    }
    if let Some(z) = wz {
        let z = w.constant(z)?;
        if z.len() != 1 && z.len() != m {
            return None;
        }
    }
    let mut inputs = vec![Some(xq), Some(xs), xz, Some(wq), Some(ws), wz, Some(ys), yz];
    if let Some(b) = conv.inputs.get(2).copied().flatten() {
        // The bias must be an int32 DequantizeLinear whose scale is x_scale · w_scale.
        let (bq, bs, bz, _) = dequantized(w, b)?;
        let bt = w.constant(bq)?;
        if bt.dtype() != DType::I32
            || bt.len() != m
            || bz.is_some_and(|z| {
                w.constant(z).is_none_or(|z| z.to_i64_vec().ok().is_none_or(|v| v.iter().any(|x| *x != 0)))
            })
        {
            return None;
        }
        let x_scale = const_scalar(w, Some(xs))?;
        let b_scale = const_f32(w, Some(bs))?;
        let ok = (0..m).all(|c| {
            let want = x_scale * w_scale[if w_scale.len() == 1 { 0 } else { c }];
            let got = b_scale[if b_scale.len() == 1 { 0 } else { c }];
            (b_scale.len() == 1 || b_scale.len() == m) && (got - want).abs() <= 1e-6 * want.abs()
        });
        if !ok {
            return None;
        }
        inputs.push(Some(bq));
    }
    let mut node = conv.clone();
    node.name = format!("{}/QLinearConv", conv.name);
    node.op_type = "QLinearConv".into();
    node.opset = 10;
    node.inputs = inputs;
    node.outputs = vec![Some(yq)];
    node.proto = None;
    Some((vec![i], qi, node))
}

// ---------------------------------------------------------------------------------------------
// QDQ matrix products

/// `DequantizeLinear(A) → MatMul / Gemm` by dequantized constant int8 weights becomes the
/// integer product with a float tail, as ONNX Runtime's QDQ transformer makes
/// MatMulIntegerToFloat: a MatMulInteger of the quantized operands (B packed once for the int8
/// kernels) whose i32 sums are scaled by `a_scale · b_scale` (formed in f32, one factor or one
/// per column) and, for Gemm, given its bias. A QuantizeLinear after it stays: it quantizes the
/// float result as before. A is per tensor (its scale does not factor out of the sum
/// otherwise); B per tensor or per column (output channel). Gemm takes `transA = 0`,
/// `alpha = beta = 1` and a bias of one value per column (a constant, or the dequantization of
/// one); `transB = 1` weights are transposed once here. The epilogue pass then adds a residual
/// or an activation as for any MatMulInteger. Runs before constant folding, which would fold
/// the weights' DequantizeLinear to float. The sums are exact; the result differs from the
/// unfused float product only by where f32 rounds.
pub(crate) fn qdq_matmul(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        let Some(f) = qdq_matmul_at(w, i) else { continue };
        let mut node = f.node;
        if let Some(t) = f.b {
            node.inputs[1] = Some(w.new_const(t));
        }
        let scale = w.new_const(f.scale);
        let epi = Epilogue { scale: Some(4), bias: f.bias, ..Epilogue::default() };
        replace(w, &[], i, Item { node, epi, extra: vec![scale] });
    }
    drop_dead(w);
}

/// What [`qdq_matmul`] puts in place of a product.
struct QdqMatMul {
    /// The MatMulInteger, reading `[A, B, a_zero_point, b_zero_point]`.
    node: Node,
    /// B transposed to `[K, N]`, when the product's was `[N, K]`.
    b: Option<Tensor>,
    /// `a_scale · b_scale`: one value or one per column.
    scale: Tensor,
    bias: Option<Tensor>,
}

fn qdq_matmul_at(w: &Work<'_>, i: usize) -> Option<QdqMatMul> {
    let it = w.item(i)?;
    let n = &it.node;
    let gemm = onnx(n, "Gemm");
    if !(gemm || onnx(n, "MatMul")) || !it.epi.is_empty() || !n.implicit_inputs.is_empty() {
        return None;
    }
    let y = out1(n)?;
    if !is_f32(w, Some(y)) {
        return None;
    }
    let trans_b = gemm && n.attr_or::<i64>("transB", 0).ok()? != 0;
    if gemm
        && (n.attr_or::<i64>("transA", 0).ok()? != 0
            || n.attr_or::<f32>("alpha", 1.0).ok()? != 1.0
            || n.attr_or::<f32>("beta", 1.0).ok()? != 1.0)
    {
        return None;
    }
    let a = (*n.inputs.first()?)?;
    let (aq, a_s, az, _) = dequantized(w, a)?;
    let (wq, ws, wz, wdi) = dequantized(w, (*n.inputs.get(1)?)?)?;
    if !is_int8(w, Some(aq)) || !is_int8(w, Some(wq)) || !is_f32(w, Some(a)) {
        return None;
    }
    // A per tensor: a constant scale and zero point of one element each.
    let a_scale = const_scalar(w, Some(a_s))?;
    if az.is_some_and(|z| w.constant(z).is_none_or(|t| t.len() != 1)) {
        return None;
    }
    let wt = w.constant(wq)?;
    let &[r, c] = wt.shape() else { return None };
    let (k, cols) = if trans_b { (c, r) } else { (r, c) };
    // The weights' per-channel axis is their output-column axis.
    let w_scale = const_f32(w, Some(ws))?;
    let wz_len = match wz {
        Some(z) => Some(w.constant(z)?.len()),
        None => None,
    };
    if w_scale.len() != 1 || wz_len.is_some_and(|l| l != 1) {
        let axis = w.item(wdi)?.node.attr_or::<i64>("axis", 1).ok()?;
        let col_axis = if trans_b { 0 } else { 1 };
        if (axis != col_axis && axis != col_axis - 2)
            || w_scale.len() != cols
            || wz_len.is_some_and(|l| l != cols && l != 1)
        {
            return None;
        }
    }
    if k == 0 || cols == 0 {
        return None;
    }
    let bias = match (gemm, n.inputs.get(2).copied().flatten()) {
        (true, Some(b)) => Some(gemm_bias(w, b, cols)?),
        _ => None,
    };
    let b = trans_b.then(|| transposed(&wt)).flatten();
    if trans_b && b.is_none() {
        return None;
    }
    let scale: Vec<f32> = w_scale.iter().map(|s| a_scale * s).collect();
    let scale = Tensor::from_vec(&[scale.len()], scale).ok()?;
    let mut node = n.clone();
    node.name = format!("{}/MatMulInteger", n.name);
    node.op_type = "MatMulInteger".into();
    node.domain = String::new();
    node.opset = 10;
    node.attrs.clear();
    node.inputs = vec![Some(aq), Some(wq), az, wz];
    node.proto = None;
    Some(QdqMatMul { node, b, scale, bias })
}

/// A Gemm's bias as one f32 per column: a constant of `[N]` or `[1, N]`, or the
/// dequantization of an int32 `[N]` (computed as DequantizeLinear does: `(q - zero point) · scale`).
fn gemm_bias(w: &Work<'_>, b: ValueId, cols: usize) -> Option<Tensor> {
    let t = match w.constant(b) {
        Some(t) if t.dtype() == DType::F32 => t.to_aligned(),
        Some(_) => return None,
        None => {
            // A 1-D int32 bias: its scale is per tensor or per element (the only axis).
            let (bq, bs, bz, _) = dequantized(w, b)?;
            let q = w.constant(bq)?;
            if q.dtype() != DType::I32 || q.rank() != 1 {
                return None;
            }
            let s = const_f32(w, Some(bs))?;
            let z = match bz {
                Some(z) => w.constant(z)?.to_i64_vec().ok()?,
                None => vec![0],
            };
            let qv = q.to_i64_vec().ok()?;
            if (s.len() != 1 && s.len() != qv.len()) || (z.len() != 1 && z.len() != qv.len()) {
                return None;
            }
            let v: Vec<f32> = qv
                .iter()
                .enumerate()
                .map(|(i, q)| (q - z[if z.len() == 1 { 0 } else { i }]) as f32 * s[if s.len() == 1 { 0 } else { i }])
                .collect();
            Tensor::from_vec(q.shape(), v).ok()?
        }
    };
    let shape_ok = matches!(t.shape(), [n] if *n == cols) || matches!(t.shape(), [1, n] if *n == cols);
    shape_ok.then(|| Tensor::from_vec(&[cols], t.as_slice::<f32>().ok()?.to_vec()).ok()).flatten()
}

/// A 2-D int8 tensor transposed.
fn transposed(t: &Tensor) -> Option<Tensor> {
    let &[r, c] = t.shape() else { return None };
    let bytes = t.as_bytes();
    let mut out = vec![0u8; bytes.len()];
    for i in 0..r {
        for j in 0..c {
            out[j * r + i] = bytes[i * c + j];
        }
    }
    Tensor::build_raw(t.dtype(), &[c, r], |o| o.copy_from_slice(&out)).ok()
}

/// Removes items none of whose outputs is read or kept (dequantizations a fusion left behind).
fn drop_dead(w: &mut Work<'_>) {
    loop {
        let dead: Vec<usize> = (0..w.items.len())
            .filter(|&i| {
                w.item(i).is_some_and(|it| {
                    onnx(&it.node, "DequantizeLinear")
                        && it.node.outputs.iter().flatten().all(|v| !w.keep.contains(v) && w.readers(*v).is_empty())
                })
            })
            .collect();
        if dead.is_empty() {
            return;
        }
        for d in dead {
            w.items[d] = None;
        }
        w.touch();
    }
}
