//! Per-op shape rules for the default ONNX domain's tensor ops, and the helpers every rule
//! family shares.

use super::InferCtx;
use crate::attr::Attr;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::Node;
use crate::ops::window::WindowAttrs;
use crate::tensor::Tensor;
use crate::value::{Dim, ValueType};

pub(crate) type Out = Result<Vec<ValueType>>;

/// Output has input 0's element type and rank; extents depend on values we may not know.
pub(crate) fn same_rank(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(0), c.shape(0).map(|s| vec![Dim::Unknown; s.len()]))])
}

/// Outputs have input 0's element type; their ranks are not derived here.
pub(crate) fn same_dtype(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(0), None); c.node.outputs.len().max(1)])
}

/// Numpy broadcasting of every input, input 0's element type.
pub(crate) fn broadcast_same(c: &InferCtx<'_>) -> Out {
    broadcast_all(c, c.dtype(0))
}

/// Numpy broadcasting of every input, bool output (comparisons, logic).
pub(crate) fn broadcast_bool(c: &InferCtx<'_>) -> Out {
    broadcast_all(c, Some(DType::Bool))
}

/// ArgMax/ArgMin: int64 indices; the reduced axis becomes 1, or goes with `keepdims = 0`.
pub(crate) fn arg_index(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let shape = match c.shape(0) {
        Some(x) => {
            let ax = norm_axis(n, n.attr_or::<i64>("axis", 0)?, x.len())?;
            let keep = n.attr_or::<i64>("keepdims", 1)? != 0;
            let mut s = x.to_vec();
            if keep {
                s[ax] = Dim::Fixed(1);
            } else {
                s.remove(ax);
            }
            Some(s)
        }
        None => None,
    };
    Ok(vec![ValueType::Tensor(DType::I64, shape)])
}

/// NonZero: int64 `[rank, count]`.
pub(crate) fn non_zero(c: &InferCtx<'_>) -> Out {
    Ok(vec![ValueType::Tensor(DType::I64, Some(vec![Dim::Fixed(c.shape(0).map_or(0, <[Dim]>::len)), Dim::Unknown]))])
}

/// TopK: values of input 0's type, int64 indices, both of input 0's rank.
pub(crate) fn top_k(c: &InferCtx<'_>) -> Out {
    let s = c.shape(0).map(|s| vec![Dim::Unknown; s.len()]);
    Ok(vec![tensor(c.dtype(0), s.clone()), ValueType::Tensor(DType::I64, s)])
}

/// Not, IsNaN, IsInf: bool of input 0's shape.
pub(crate) fn bool_like(c: &InferCtx<'_>) -> Out {
    Ok(vec![with_dtype(c.ty(0), DType::Bool)])
}

/// CastLike: input 0's shape, input 1's element type.
pub(crate) fn cast_like(c: &InferCtx<'_>) -> Out {
    Ok(vec![match c.dtype(1) {
        Some(d) => with_dtype(c.ty(0), d),
        None => ValueType::Unknown,
    }])
}

/// Size: an int64 scalar.
pub(crate) fn size(_: &InferCtx<'_>) -> Out {
    Ok(vec![ValueType::tensor(DType::I64, &[])])
}

/// Constant: its value's type and shape.
pub(crate) fn constant(c: &InferCtx<'_>) -> Out {
    constant_value(c.node).map(|t| vec![ValueType::tensor(t.dtype(), t.shape())])
}

/// Range: a 1-D tensor of the start's type.
pub(crate) fn range(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(0), Some(vec![Dim::Unknown]))])
}

/// The output is input 0's type (unary elementwise ops, normalizations...).
pub(crate) fn same_as_first(c: &InferCtx<'_>) -> Out {
    Ok(vec![c.ty(0).clone()])
}

/// Input 0's shape with another element type.
pub(crate) fn with_dtype(t: &ValueType, d: DType) -> ValueType {
    match t {
        ValueType::Tensor(_, s) => ValueType::Tensor(d, s.clone()),
        _ => ValueType::Tensor(d, None),
    }
}

/// A tensor type when the element type is known, else `Unknown`.
pub(crate) fn tensor(d: Option<DType>, shape: Option<Vec<Dim>>) -> ValueType {
    match d {
        Some(d) => ValueType::Tensor(d, shape),
        None => ValueType::Unknown,
    }
}

#[cfg(test)]
fn fixed(s: &[usize]) -> Vec<Dim> {
    s.iter().map(|d| Dim::Fixed(*d)).collect()
}

/// Numpy broadcasting of symbolic shapes.
pub(crate) fn broadcast_dims(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>> {
    let r = a.len().max(b.len());
    let mut out = vec![Dim::Unknown; r];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if i + a.len() >= r { &a[i + a.len() - r] } else { &Dim::Fixed(1) };
        let y = if i + b.len() >= r { &b[i + b.len() - r] } else { &Dim::Fixed(1) };
        *o = match (x, y) {
            (Dim::Fixed(1), d) | (d, Dim::Fixed(1)) => d.clone(),
            (Dim::Fixed(p), Dim::Fixed(q)) if p != q => {
                return Err(Error::invalid(format!("shapes {a:?} and {b:?} do not broadcast")));
            }
            (Dim::Fixed(p), _) | (_, Dim::Fixed(p)) => Dim::Fixed(*p),
            (p, q) if p == q => p.clone(),
            _ => Dim::Unknown,
        };
    }
    Ok(out)
}

/// Numpy broadcasting of every input, with element type `d`.
pub(crate) fn broadcast_all(c: &InferCtx<'_>, d: Option<DType>) -> Out {
    let mut shape: Option<Vec<Dim>> = Some(vec![]);
    for i in 0..c.node.inputs.len() {
        shape = match (shape, c.shape(i)) {
            (Some(s), Some(t)) => Some(broadcast_dims(&s, t)?),
            _ => None,
        };
    }
    Ok(vec![tensor(d, shape)])
}

pub(crate) fn where_(c: &InferCtx<'_>) -> Out {
    let mut s = broadcast_all(c, c.dtype(1))?;
    if c.dtype(1).is_none() {
        s[0] = ValueType::Unknown;
    }
    Ok(s)
}

pub(crate) fn cast(c: &InferCtx<'_>) -> Out {
    let to = c.node.req_attr::<i64>("to")?;
    let d = DType::from_onnx(to as i32).ok_or_else(|| c.node.error(format!("'to' = {to} is no ONNX data type")))?;
    Ok(vec![with_dtype(c.ty(0), d)])
}

pub(crate) fn matmul(c: &InferCtx<'_>) -> Out {
    Ok(vec![tensor(c.dtype(0), matmul_shape(c, 0, 1)?)])
}

/// numpy.matmul's output shape of inputs `ia` and `ib` (MatMul, MatMulInteger, QLinearMatMul).
pub(crate) fn matmul_shape(c: &InferCtx<'_>, ia: usize, ib: usize) -> Result<Option<Vec<Dim>>> {
    let (Some(a), Some(b)) = (c.shape(ia), c.shape(ib)) else {
        return Ok(None);
    };
    matmul_dims(c.node, a, b).map(Some)
}

/// numpy.matmul's output shape of `a @ b`.
pub(crate) fn matmul_dims(node: &Node, a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>> {
    if a.is_empty() || b.is_empty() {
        return Err(node.error("MatMul inputs must have rank >= 1"));
    }
    let mut a2 = a.to_vec();
    let mut b2 = b.to_vec();
    if a.len() == 1 {
        a2.insert(0, Dim::Fixed(1));
    }
    if b.len() == 1 {
        b2.push(Dim::Fixed(1));
    }
    let (m, k1) = (&a2[a2.len() - 2], &a2[a2.len() - 1]);
    let (k2, n) = (&b2[b2.len() - 2], &b2[b2.len() - 1]);
    if let (Some(x), Some(y)) = (k1.fixed(), k2.fixed())
        && x != y
    {
        return Err(node.error(format!("inner dimensions differ: {x} vs {y}")));
    }
    let mut out = broadcast_dims(&a2[..a2.len() - 2], &b2[..b2.len() - 2])?;
    if a.len() > 1 {
        out.push(m.clone());
    }
    if b.len() > 1 {
        out.push(n.clone());
    }
    Ok(out)
}

pub(crate) fn gemm(c: &InferCtx<'_>) -> Out {
    let ta = c.node.attr_or::<i64>("transA", 0)? != 0;
    let tb = c.node.attr_or::<i64>("transB", 0)? != 0;
    let shape = match (c.shape(0), c.shape(1)) {
        (Some(a), Some(b)) if a.len() == 2 && b.len() == 2 => {
            Some(vec![if ta { a[1].clone() } else { a[0].clone() }, if tb { b[0].clone() } else { b[1].clone() }])
        }
        _ => None,
    };
    Ok(vec![tensor(c.dtype(0), shape)])
}

/// Conv, DeformConv and the pools: spatial output sizes by the shared window rule
/// ([`crate::ops::window`]).
pub(crate) fn window(c: &InferCtx<'_>) -> Out {
    let weight = matches!(c.node.op_type.as_str(), "Conv" | "DeformConv").then_some(1);
    let mut v = window_of(c, weight, c.dtype(0))?;
    if c.node.op_type == "MaxPool" && c.node.outputs.len() > 1 && v.len() < 2 {
        // Indices are int64 whatever the geometry.
        v.push(ValueType::Tensor(DType::I64, v.first().and_then(ValueType::tensor_shape).map(<[Dim]>::to_vec)));
    }
    Ok(v)
}

/// The window rule for a convolution with its weight at input `weight` (None for a pool) and
/// output element type `dtype` (ConvInteger and QLinearConv differ from their input's).
pub(crate) fn window_of(c: &InferCtx<'_>, weight: Option<usize>, dtype: Option<DType>) -> Out {
    let n = c.node;
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(dtype, None)]);
    };
    if x.len() < 3 {
        return Err(n.error("input must have rank >= 3 (N, C, spatial...)"));
    }
    let sp = x.len() - 2;
    let attrs = WindowAttrs::parse(n)?;
    let kernel: Vec<usize> = match (&attrs.kernel, weight) {
        (Some(k), _) => k.clone(),
        (None, Some(wi)) => match c.shape(wi) {
            Some(w) if w.len() == x.len() => match w[2..].iter().map(Dim::fixed).collect::<Option<Vec<_>>>() {
                Some(k) => k,
                None => return Ok(vec![tensor(dtype, Some(vec![Dim::Unknown; x.len()]))]),
            },
            _ => return Ok(vec![tensor(dtype, Some(vec![Dim::Unknown; x.len()]))]),
        },
        (None, None) => return Err(n.error("kernel_shape is required")),
    };
    if kernel.len() != sp {
        return Err(n.error(format!("kernel_shape has {} dims, input has {sp} spatial dims", kernel.len())));
    }
    let win = attrs.resolve(&kernel).map_err(|e| n.error(e.to_string()))?;
    let mut out = vec![x[0].clone()];
    out.push(match weight {
        Some(wi) => match c.shape(wi) {
            Some(w) if !w.is_empty() => w[0].clone(),
            _ => Dim::Unknown,
        },
        None => x[1].clone(),
    });
    for (i, d) in x[2..].iter().enumerate() {
        out.push(match d.fixed() {
            Some(len) => Dim::Fixed(win.axis(i, len).map_err(|e| n.error(e.to_string()))?.0),
            None => Dim::Unknown,
        });
    }
    let mut v = vec![tensor(dtype, Some(out.clone()))];
    if n.op_type == "MaxPool" && n.outputs.len() > 1 {
        v.push(ValueType::Tensor(DType::I64, Some(out)));
    }
    Ok(v)
}

/// MaxUnpool: the `output_shape` input when it is a constant, else each spatial size is
/// `(in - 1) * stride - pad_begin - pad_end + kernel` (what the ONNX spec gives when no
/// output_shape is given).
pub(crate) fn max_unpool(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    if c.has(2) {
        let shape = match c.const_ints(2) {
            Some(s) if s.len() == x.len() && s.iter().all(|d| *d >= 0) => {
                Some(s.iter().map(|d| Dim::Fixed(*d as usize)).collect())
            }
            Some(_) => return Err(n.error("output_shape must give one non-negative size per input axis")),
            None => Some(vec![Dim::Unknown; x.len()]),
        };
        return Ok(vec![tensor(c.dtype(0), shape)]);
    }
    if x.len() < 3 {
        return Err(n.error("input must have rank >= 3 (N, C, spatial...)"));
    }
    let sp = x.len() - 2;
    let kernel = n.attr::<Vec<i64>>("kernel_shape")?.ok_or_else(|| n.error("kernel_shape is required"))?;
    let strides = n.attr::<Vec<i64>>("strides")?.unwrap_or_else(|| vec![1; sp]);
    let pads = n.attr::<Vec<i64>>("pads")?.unwrap_or_else(|| vec![0; 2 * sp]);
    if kernel.len() != sp || strides.len() != sp || pads.len() != 2 * sp {
        return Err(n.error("kernel_shape, strides or pads do not match the spatial rank"));
    }
    let mut out = vec![x[0].clone(), x[1].clone()];
    for i in 0..sp {
        out.push(match x[2 + i].fixed() {
            Some(len) => {
                // Attributes are the model's word: checked arithmetic, an overflow is an error.
                let o = i64::try_from(len)
                    .ok()
                    .and_then(|l| (l - 1).checked_mul(strides[i]))
                    .and_then(|v| v.checked_sub(pads[i]))
                    .and_then(|v| v.checked_sub(pads[i + sp]))
                    .and_then(|v| v.checked_add(kernel[i]))
                    .ok_or_else(|| n.error(format!("spatial axis {i}'s size overflows")))?;
                if o < 0 {
                    return Err(n.error(format!("spatial axis {i} would have size {o}")));
                }
                Dim::Fixed(o as usize)
            }
            None => Dim::Unknown,
        });
    }
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

pub(crate) fn global_pool(c: &InferCtx<'_>) -> Out {
    let s =
        c.shape(0).map(|x| x.iter().enumerate().map(|(i, d)| if i < 2 { d.clone() } else { Dim::Fixed(1) }).collect());
    Ok(vec![tensor(c.dtype(0), s)])
}

/// `axis` in `[-rank, rank)` as an index.
pub(crate) fn norm_axis(n: &Node, axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r.max(1) {
        return Err(n.error(format!("axis {axis} is out of range for rank {rank}")));
    }
    Ok(if axis < 0 { (axis + r) as usize } else { axis as usize })
}

pub(crate) fn reduce(c: &InferCtx<'_>) -> Out {
    let n = c.node;
    let keep = n.attr_or::<i64>("keepdims", 1)? != 0;
    // ReduceSum moved axes to an input at opset 13, the others at opset 18.
    let axes_from_input = (n.op_type == "ReduceSum" && n.opset >= 13) || n.opset >= 18;
    let axes = if axes_from_input {
        if c.has(1) {
            match c.const_ints(1) {
                Some(a) => Some(a),
                // Run-time axes: with keepdims the rank stays; without, it drops by their count
                // (an empty list reduces everything, or nothing with noop_with_empty_axes).
                None => {
                    let rank = c.shape(0).map(<[Dim]>::len).and_then(|r| match c.len_1d(1) {
                        _ if keep => Some(r),
                        Some(k) if k > 0 => r.checked_sub(k),
                        _ => None,
                    });
                    return Ok(vec![tensor(c.dtype(0), rank.map(|r| vec![Dim::Unknown; r]))]);
                }
            }
        } else {
            None
        }
    } else {
        n.attr::<Vec<i64>>("axes")?
    };
    let Some(x) = c.shape(0) else {
        return Ok(vec![tensor(c.dtype(0), None)]);
    };
    let noop = n.attr_or::<i64>("noop_with_empty_axes", 0)? != 0;
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => a.iter().map(|a| norm_axis(n, *a, x.len())).collect::<Result<_>>()?,
        _ if noop => return Ok(vec![c.ty(0).clone()]),
        _ => (0..x.len()).collect(),
    };
    let out = x
        .iter()
        .enumerate()
        .filter_map(|(i, d)| if axes.contains(&i) { keep.then_some(Dim::Fixed(1)) } else { Some(d.clone()) })
        .collect();
    Ok(vec![tensor(c.dtype(0), Some(out))])
}

/// The value of a `Constant` node from whichever attribute holds it.
pub(crate) fn constant_value(n: &Node) -> Result<Tensor> {
    let (name, a) = n.attrs.first().ok_or_else(|| n.error("Constant has no value attribute"))?;
    Ok(match (name.as_str(), a) {
        ("value" | "sparse_value", Attr::Tensor(t)) => t.clone(),
        ("value_float", Attr::Float(v)) => Tensor::scalar(*v),
        ("value_floats", Attr::Floats(v)) => Tensor::from_slice(&[v.len()], v)?,
        ("value_int", Attr::Int(v)) => Tensor::scalar(*v),
        ("value_ints", Attr::Ints(v)) => Tensor::from_slice(&[v.len()], v)?,
        ("value_string", Attr::String(v)) => Tensor::from_strings(&[], vec![v.clone()])?,
        ("value_strings", Attr::Strings(v)) => Tensor::from_strings(&[v.len()], v.clone())?,
        _ => {
            return Err(n.error(format!("unsupported Constant attribute '{name}' ({})", a.kind())));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        let a = fixed(&[2, 1, 4]);
        let b = vec![Dim::Symbol("s".into()), Dim::Fixed(1)];
        assert_eq!(broadcast_dims(&a, &b).unwrap(), vec![Dim::Fixed(2), Dim::Symbol("s".into()), Dim::Fixed(4)]);
        assert!(broadcast_dims(&fixed(&[3]), &fixed(&[4])).is_err());
        assert_eq!(broadcast_dims(&fixed(&[0]), &fixed(&[1])).unwrap(), fixed(&[0]));
    }
}
