//! Rules of the quantization ops: [QuantizeLinear], [DequantizeLinear],
//! [DynamicQuantizeLinear], the integer convolutions and matrix products, and their
//! `com.microsoft` variants.
//!
//! [QuantizeLinear]: https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html
//! [DequantizeLinear]: https://onnx.ai/onnx/operators/onnx__DequantizeLinear.html
//! [DynamicQuantizeLinear]: https://onnx.ai/onnx/operators/onnx__DynamicQuantizeLinear.html

use super::InferCtx;
use super::rules::{Out, matmul_shape, tensor, window_of};
use crate::dtype::DType;
use crate::value::{Dim, ValueType};

/// An `output_dtype` attribute: `None` when absent or 0 (ONNX's "not set").
fn output_dtype(c: &InferCtx<'_>) -> crate::error::Result<Option<DType>> {
    match c.node.attr_or::<i64>("output_dtype", 0)? {
        0 => Ok(None),
        code => DType::from_onnx(code as i32)
            .map(Some)
            .ok_or_else(|| c.node.error(format!("output_dtype {code} is no ONNX data type"))),
    }
}

/// QuantizeLinear: y has `y_zero_point`'s type; without a zero point, `output_dtype`
/// (opset 21+), else uint8. Same shape as x.
pub(crate) fn quantize_linear(c: &InferCtx<'_>) -> Out {
    let attr = if c.node.opset >= 21 { output_dtype(c)? } else { None };
    let d = if c.has(2) { c.dtype(2).or(attr) } else { Some(attr.unwrap_or(DType::U8)) };
    Ok(vec![tensor(d, c.shape(0).map(<[Dim]>::to_vec))])
}

/// DequantizeLinear: float up to opset 18; from 19 on, `x_scale`'s type, overridden by
/// `output_dtype` from opset 23. Same shape as x.
pub(crate) fn dequantize_linear(c: &InferCtx<'_>) -> Out {
    let d = match c.node.opset {
        ..19 => Some(DType::F32),
        19..23 => c.dtype(1),
        _ => output_dtype(c)?.or(c.dtype(1)),
    };
    Ok(vec![tensor(d, c.shape(0).map(<[Dim]>::to_vec))])
}

/// DynamicQuantizeLinear: `y` uint8 of x's shape, `y_scale` a float scalar, `y_zero_point` a
/// uint8 scalar.
pub(crate) fn dynamic_quantize_linear(c: &InferCtx<'_>) -> Out {
    Ok(vec![
        ValueType::Tensor(DType::U8, c.shape(0).map(<[Dim]>::to_vec)),
        ValueType::tensor(DType::F32, &[]),
        ValueType::tensor(DType::U8, &[]),
    ])
}

/// ConvInteger: int32 with Conv's geometry.
pub(crate) fn conv_integer(c: &InferCtx<'_>) -> Out {
    window_of(c, Some(1), Some(DType::I32))
}

/// QLinearConv (both domains): x at 0, w at 3, y has `y_zero_point`'s (input 7) type. The
/// zero point is optional; its default is uint8-like x's type.
pub(crate) fn qlinear_conv(c: &InferCtx<'_>) -> Out {
    let d = if c.has(7) { c.dtype(7) } else { c.dtype(0) };
    window_of(c, Some(3), d)
}

/// MatMulInteger: int32 with MatMul's shape.
pub(crate) fn matmul_integer(c: &InferCtx<'_>) -> Out {
    Ok(vec![ValueType::Tensor(DType::I32, matmul_shape(c, 0, 1)?)])
}

/// QLinearMatMul: a at 0, b at 3, y has `y_zero_point`'s (input 7) type.
pub(crate) fn qlinear_matmul(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(7), matmul_shape(c, 0, 3)?)])
}

/// com.microsoft MatMulNBits: A's type, A's shape with the last extent `N`.
pub(crate) fn matmul_nbits(c: &InferCtx<'_>) -> Out {
    let n = c.node.req_attr::<i64>("N")?;
    let n = usize::try_from(n).map_err(|_| c.node.error(format!("N must not be negative, got {n}")))?;
    let shape = c.shape(0).filter(|s| !s.is_empty()).map(|s| {
        let mut s = s.to_vec();
        s.pop();
        s.push(Dim::Fixed(n));
        s
    });
    Ok(vec![tensor(c.dtype(0), shape)])
}

/// com.microsoft DynamicQuantizeMatMul (A's float type) and MatMulIntegerToFloat (`a_scale`'s
/// type): numpy.matmul's shape of inputs 0 and 1.
pub(crate) fn matmul_to_float(c: &InferCtx<'_>) -> Out {
    let d = if c.node.op_type == "MatMulIntegerToFloat" { c.dtype(2) } else { c.dtype(0) };
    Ok(vec![tensor(d, matmul_shape(c, 0, 1)?)])
}

/// com.microsoft QGemm: `[M, N]` from A (input 0) and B (input 3) after `transA`/`transB`;
/// `y_zero_point`'s type, else float (ONNX Runtime's kernel writes float without a zero point,
/// even with `y_scale`).
pub(crate) fn qgemm(c: &InferCtx<'_>) -> Out {
    let ta = c.node.attr_or::<i64>("transA", 0)? != 0;
    let tb = c.node.attr_or::<i64>("transB", 0)? != 0;
    let shape = match (c.shape(0), c.shape(3)) {
        (Some(a), Some(b)) if a.len() == 2 && b.len() == 2 => {
            Some(vec![a[usize::from(ta)].clone(), b[usize::from(!tb)].clone()])
        }
        _ => None,
    };
    let d = if c.has(8) { c.dtype(8) } else { Some(DType::F32) };
    Ok(vec![tensor(d, shape)])
}

/// com.microsoft QuantizeLinear: `y_zero_point`'s type, uint8 without it; x's shape.
pub(crate) fn ms_quantize_linear(c: &InferCtx<'_>) -> Out {
    let d = if c.has(2) { c.dtype(2) } else { Some(DType::U8) };
    Ok(vec![tensor(d, c.shape(0).map(<[Dim]>::to_vec))])
}

/// com.microsoft DequantizeLinear: `x_scale`'s type, x's shape.
pub(crate) fn ms_dequantize_linear(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(1), c.shape(0).map(<[Dim]>::to_vec))])
}

/// com.microsoft QEmbedLayerNormalization: `[batch, seq, hidden]` in the scales' float type
/// (hidden from the word embedding table) and the int32 `[batch]` mask index.
pub(crate) fn qembed_layer_norm(c: &InferCtx<'_>) -> Out {
    let ids = c.shape(0);
    let hidden = c.shape(2).and_then(|s| s.get(1)).cloned().unwrap_or(Dim::Unknown);
    let d = |i: usize| ids.and_then(|s| s.get(i)).cloned().unwrap_or(Dim::Unknown);
    Ok(vec![
        tensor(c.dtype(8), ids.map(|_| vec![d(0), d(1), hidden])),
        ValueType::Tensor(DType::I32, ids.map(|_| vec![d(0)])),
    ])
}

// ONNX Runtime's com.microsoft QOperator family (ContribOperators.md): each takes a quantized
// tensor with its scale and zero point and gives a tensor of the output zero point's type.

/// Runs `rule` with input 0 seen as NCHW when the node's `channels_last` is set (input NHWC),
/// and gives its first output back as NHWC. Without the attribute this is `rule` itself.
fn channels_last(c: &InferCtx<'_>, rule: impl Fn(&InferCtx<'_>) -> Out) -> Out {
    if c.node.attr_or::<i64>("channels_last", 0)? == 0 {
        return rule(c);
    }
    let Some(x) = c.shape(0) else {
        return rule(c);
    };
    if x.len() < 3 {
        return Err(c.node.error("channels_last input must have rank >= 3 (N, spatial..., C)"));
    }
    let mut nchw = x.to_vec();
    let ch = nchw.remove(x.len() - 1);
    nchw.insert(1, ch);
    let mut inputs = c.inputs.clone();
    inputs[0] = ValueType::Tensor(c.dtype(0).unwrap_or(DType::U8), Some(nchw));
    let inner = InferCtx { node: c.node, inputs, consts: c.consts.clone() };
    let mut out = rule(&inner)?;
    if let Some(ValueType::Tensor(_, Some(s))) = out.first_mut()
        && s.len() >= 3
    {
        let ch = s.remove(1);
        s.push(ch);
    }
    Ok(out)
}

/// com.microsoft QLinearConv: the ONNX rule, with an NHWC input and output when
/// `channels_last` is set.
pub(crate) fn ms_qlinear_conv(c: &InferCtx<'_>) -> Out {
    channels_last(c, qlinear_conv)
}

/// QLinearAdd, QLinearMul: numpy broadcast of A (0) and B (3), A's type.
pub(crate) fn qlinear_binary(c: &InferCtx<'_>) -> Out {
    let shape = match (c.shape(0), c.shape(3)) {
        (Some(a), Some(b)) => Some(super::rules::broadcast_dims(a, b).map_err(|e| c.node.error(e.to_string()))?),
        _ => None,
    };
    Ok(vec![tensor(c.dtype(0), shape)])
}

/// QLinearWhere: numpy broadcast of the condition (0), X (1) and Y (4), X's type.
pub(crate) fn qlinear_where(c: &InferCtx<'_>) -> Out {
    let broadcast = |a: &[Dim], b: &[Dim]| super::rules::broadcast_dims(a, b).map_err(|e| c.node.error(e.to_string()));
    let shape = match (c.shape(0), c.shape(1), c.shape(4)) {
        (Some(k), Some(x), Some(y)) => Some(broadcast(&broadcast(k, x)?, y)?),
        _ => None,
    };
    Ok(vec![tensor(c.dtype(1), shape)])
}

/// QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) triplets joined along
/// `axis`; Y_zero_point's type (X's when it is not known).
pub(crate) fn qlinear_concat(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let axis = n.req_attr::<i64>("axis")?;
    let count = n.inputs.len().saturating_sub(2);
    if count == 0 || !count.is_multiple_of(3) {
        return Err(n.error(format!("QLinearConcat needs 2 + 3k inputs, got {}", n.inputs.len())));
    }
    let d = c.dtype(1).or(c.dtype(2));
    let mut out: Option<Vec<Dim>> = None;
    let mut total = Some(0usize);
    for i in (2..n.inputs.len()).step_by(3) {
        let Some(s) = c.shape(i) else {
            return Ok(vec![tensor(d, None)]);
        };
        let ax = super::rules::norm_axis(n, axis, s.len())?;
        total = total.zip(s[ax].fixed()).map(|(a, b)| a + b);
        out.get_or_insert_with(|| s.to_vec());
    }
    let mut out = out.unwrap_or_default();
    let ax = super::rules::norm_axis(n, axis, out.len())?;
    out[ax] = total.map(Dim::Fixed).unwrap_or(Dim::Unknown);
    Ok(vec![tensor(d, Some(out))])
}

/// QLinearAveragePool: AveragePool's geometry (NHWC with `channels_last`), x's type.
pub(crate) fn qlinear_average_pool(c: &InferCtx<'_>) -> Out {
    channels_last(c, |c| window_of(c, None, c.dtype(0)))
}

/// QLinearGlobalAveragePool: spatial axes become 1 (NHWC with `channels_last`), x's type.
pub(crate) fn qlinear_global_average_pool(c: &InferCtx<'_>) -> Out {
    channels_last(c, super::rules::global_pool)
}
