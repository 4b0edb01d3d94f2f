//! The QDQ fusions, as ONNX Runtime's QDQ transformer makes them: `DequantizeLinear → Conv →
//! QuantizeLinear` into QLinearConv, `DequantizeLinear → Add → QuantizeLinear` into QLinearAdd,
//! and `DequantizeLinear → MatMul / Gemm` by constant int8 weights into an integer product with
//! a float tail. They run before constant folding, which would fold the weights'
//! DequantizeLinear to float; dequantizations left without readers are dropped.

use vinort_ir::{DType, Node, Tensor, ValueId};

use super::fuse::{const_f32, next_op, onnx, out1, replace};
use super::{Item, Work, const_scalar, is_f32};
use crate::kernels::epilogue::Epilogue;

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
// QDQ addition

/// `Add(DequantizeLinear(A), DequantizeLinear(B)) → QuantizeLinear` with A, B and the result of
/// one int8 type and every scale and zero point one value becomes com.microsoft QLinearAdd, as
/// ONNX Runtime's QDQ transformer makes it (a residual add of a quantized CNN: two float
/// tensors built, added and quantized again per run, where QLinearAdd is one pass over the
/// bytes). QLinearAdd computes `(a − za)·sa/sc + (b − zb)·sb/sc + zc` in f32 and rounds once:
/// it may differ from the float graph by one quantization step where the sum sat next to a
/// rounding boundary, as onnxruntime's fused kernel does.
pub(crate) fn qdq_add(w: &mut Work<'_>) {
    for i in 0..w.items.len() {
        if let Some((gone, at, node)) = qdq_add_at(w, i) {
            replace(w, &gone, at, Item { node, epi: Epilogue::default(), extra: vec![] });
        }
    }
    drop_dead(w);
}

fn qdq_add_at(w: &Work<'_>, i: usize) -> Option<(Vec<usize>, usize, Node)> {
    let add = &w.item(i)?.node;
    if !onnx(add, "Add") || !w.item(i)?.epi.is_empty() || add.inputs.len() != 2 {
        return None;
    }
    let y = out1(add)?;
    let (qi, q) = next_op(w, y, "QuantizeLinear")?;
    let (aq, a_s, az, _) = dequantized(w, (*add.inputs.first()?)?)?;
    let (bq, b_s, bz, _) = dequantized(w, (*add.inputs.get(1)?)?)?;
    let (ys, yz) = ((*q.inputs.get(1)?)?, q.inputs.get(2).copied().flatten());
    let yq = out1(q)?;
    let dtype = |v: ValueId| w.ty(v).tensor_dtype();
    let t = dtype(aq)?;
    // Without a zero point QuantizeLinear makes uint8: the output's type must be A's.
    if !is_int8(w, Some(aq)) || dtype(bq)? != t || dtype(yq)? != t || !is_f32(w, Some(y)) || yz.is_none() {
        return None;
    }
    let scalar =
        |v: Option<ValueId>| v.is_none_or(|v| w.ty(v).static_shape().is_some_and(|s| s.iter().product::<usize>() == 1));
    if ![Some(a_s), az, Some(b_s), bz, Some(ys), yz].into_iter().all(scalar) {
        return None;
    }
    if [az, bz, yz].into_iter().flatten().any(|z| dtype(z) != Some(t)) {
        return None;
    }
    if q.attr_or::<i64>("saturate", 1).ok()? != 1 || q.attr_or::<i64>("block_size", 0).ok()? != 0 {
        return None;
    }
    let mut node = add.clone();
    node.name = format!("{}/QLinearAdd", add.name);
    node.op_type = "QLinearAdd".into();
    node.domain = "com.microsoft".into();
    node.opset = 1;
    node.inputs = vec![Some(aq), Some(a_s), az, Some(bq), Some(b_s), bz, Some(ys), yz];
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
