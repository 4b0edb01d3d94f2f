//! Shape-only and broadcasting ops, every element type:
//! [Reshape](https://onnx.ai/onnx/operators/onnx__Reshape.html) 1–,
//! [Flatten](https://onnx.ai/onnx/operators/onnx__Flatten.html) 1–,
//! [Squeeze](https://onnx.ai/onnx/operators/onnx__Squeeze.html) 1–,
//! [Unsqueeze](https://onnx.ai/onnx/operators/onnx__Unsqueeze.html) 1–,
//! [Identity](https://onnx.ai/onnx/operators/onnx__Identity.html) 1– (tensors, sequences,
//! optionals), [Shape](https://onnx.ai/onnx/operators/onnx__Shape.html) 1–,
//! [Size](https://onnx.ai/onnx/operators/onnx__Size.html) 1–,
//! [Constant](https://onnx.ai/onnx/operators/onnx__Constant.html) 1–,
//! [ConstantOfShape](https://onnx.ai/onnx/operators/onnx__ConstantOfShape.html) 9–,
//! [Dropout](https://onnx.ai/onnx/operators/onnx__Dropout.html) 1– (training mode, opset 12 on,
//! draws its mask in `kernels::random::dropout`),
//! [Expand](https://onnx.ai/onnx/operators/onnx__Expand.html) 8–,
//! [Tile](https://onnx.ai/onnx/operators/onnx__Tile.html) 6–.
//!
//! Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference Dropout share their input's
//! storage; Constant hands out the same stored tensor on every run.

use vinort_ir::{DType, Error, Result, Tensor, Value, Values};

use super::copy::{Step, Strided, broadcast_scalar, dense_strides, run_plan};
use super::{kernel, norm_axes, scalar_of, to_dim};
use crate::kernel::{Kernel, MAX_OPSET, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::random::{self, Seed};

pub(super) fn register(r: &mut Registry) {
    r.add("", "Reshape", 1..=4, reshape_v1);
    r.add("", "Reshape", 5..=MAX_OPSET, reshape);
    r.op("", "Flatten", flatten);
    r.op("", "Squeeze", squeeze);
    r.op("", "Unsqueeze", unsqueeze);
    r.op("", "Identity", identity);
    r.op("", "Shape", shape);
    r.op("", "Size", size);
    r.op("", "Constant", constant);
    r.op("", "ConstantOfShape", constant_of_shape);
    r.op("", "Dropout", dropout);
    r.op("", "Expand", expand);
    r.add("", "Tile", 6..=MAX_OPSET, tile);
}

/// The output shape of Reshape: `0` copies the input dim (unless `allowzero`), one `-1` is
/// inferred from the element count.
pub(super) fn reshape_dims(input: &[usize], spec: &[i64], allowzero: bool) -> Result<vinort_ir::Shape> {
    let mut out = vinort_ir::Shape::new();
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            -1 => return Err(Error::invalid(format!("shape {spec:?} has more than one -1"))),
            0 if !allowzero => out.push(*input.get(i).ok_or_else(|| {
                Error::invalid(format!("shape {spec:?} copies dim {i} of a rank-{} input", input.len()))
            })?),
            d => out.push(to_dim(d, "a Reshape dim")?),
        }
    }
    let total: usize = input.iter().product();
    if let Some(i) = infer {
        let known = out.iter().try_fold(1usize, |a, d| a.checked_mul(*d));
        match known {
            Some(k) if k != 0 && total.is_multiple_of(k) => out[i] = total / k,
            _ => return Err(Error::invalid(format!("cannot infer the -1 of {spec:?} for input shape {input:?}"))),
        }
    }
    if out.iter().try_fold(1usize, |a, d| a.checked_mul(*d)) != Some(total) {
        return Err(Error::invalid(format!("cannot reshape {input:?} ({total} elements) to {spec:?}")));
    }
    Ok(out)
}

fn reshape_v1(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let spec: Vec<i64> = info.node.req_attr("shape")?;
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        Ok(smallvec::smallvec![x.reshaped(&reshape_dims(x.shape(), &spec, false)?)?.into()])
    }))
}

fn reshape(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let allowzero = info.node.attr_or("allowzero", false)?;
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let spec = tensor_in(inputs, 1)?.i64s()?;
        Ok(smallvec::smallvec![x.reshaped(&reshape_dims(x.shape(), &spec, allowzero)?)?.into()])
    }))
}

fn flatten(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis: i64 = info.node.attr_or("axis", 1)?;
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let r = x.rank() as i64;
        // The axis may equal the rank (everything goes to the outer dim), unlike most axes.
        let a = if axis < 0 { axis + r } else { axis };
        if !(0..=r).contains(&a) {
            return Err(Error::invalid(format!("Flatten axis {axis} is out of range for rank {r}")));
        }
        let a = a as usize;
        let outer: usize = x.shape()[..a].iter().product();
        let inner: usize = x.shape()[a..].iter().product();
        Ok(smallvec::smallvec![x.reshaped(&[outer, inner])?.into()])
    }))
}

fn squeeze(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let attr: Option<Vec<i64>> = info.node.attr("axes")?;
    let from_input = info.node.opset >= 13;
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let axes = if from_input {
            opt_tensor_in(inputs, 1)?.map(Tensor::i64s).transpose()?
        } else {
            attr.as_deref().map(std::borrow::Cow::Borrowed)
        };
        let shape: vinort_ir::Shape = match axes {
            None => x.shape().iter().copied().filter(|d| *d != 1).collect(),
            Some(axes) => {
                let axes = norm_axes(&axes, x.rank())?;
                if let Some(a) = axes.iter().find(|a| x.shape()[**a] != 1) {
                    return Err(Error::invalid(format!("cannot squeeze axis {a} of extent {}", x.shape()[*a])));
                }
                x.shape().iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, d)| *d).collect()
            }
        };
        Ok(smallvec::smallvec![x.reshaped(&shape)?.into()])
    }))
}

fn unsqueeze(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let attr: Option<Vec<i64>> = info.node.attr("axes")?;
    if info.node.opset < 13 && attr.is_none() {
        return Err(info.node.error("Unsqueeze before opset 13 needs the 'axes' attribute"));
    }
    let opset = info.node.opset;
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let axes = match &attr {
            Some(a) if opset < 13 => std::borrow::Cow::Borrowed(a.as_slice()),
            _ if opset < 13 => std::borrow::Cow::Borrowed(&[][..]),
            _ => tensor_in(inputs, 1)?.i64s()?,
        };
        let rank = x.rank() + axes.len();
        // Axes count in the output's rank.
        let axes = norm_axes(&axes, rank)?;
        let mut dims = x.shape().iter();
        let shape: vinort_ir::Shape =
            (0..rank).map(|i| if axes.contains(&i) { 1 } else { dims.next().copied().unwrap_or(1) }).collect();
        Ok(smallvec::smallvec![x.reshaped(&shape)?.into()])
    }))
}

fn identity(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| match inputs.first().copied().flatten() {
        Some(v) => Ok(smallvec::smallvec![v.clone()]),
        None => Err(Error::invalid("Identity needs its input")),
    }))
}

/// Shape's `start`/`end`: negative values count from the back, then both clamp to `[0, r]`.
pub(super) fn shape_range(rank: usize, start: i64, end: Option<i64>) -> (usize, usize) {
    let r = rank as i64;
    let clamp = |v: i64| (if v < 0 { v.saturating_add(r) } else { v }).clamp(0, r) as usize;
    let (s, e) = (clamp(start), clamp(end.unwrap_or(r)));
    (s, e.max(s))
}

fn shape(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let (start, end) = if info.node.opset >= 15 {
        (info.node.attr_or("start", 0i64)?, info.node.attr::<i64>("end")?)
    } else {
        (0, None)
    };
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let (s, e) = shape_range(x.rank(), start, end);
        let dims: Vec<i64> = x.shape()[s..e].iter().map(|d| *d as i64).collect();
        Ok(smallvec::smallvec![Tensor::from_slice(&[dims.len()], &dims)?.into()])
    }))
}

fn size(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| Ok(smallvec::smallvec![Tensor::scalar(tensor_in(inputs, 0)?.len() as i64).into()])))
}

fn constant(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    // Aligned once here, so every run hands out the same storage without copying.
    let value = Value::Tensor(vinort_ir::infer::constant_node_value(info.node)?.to_aligned());
    Ok(kernel(move |_| Ok(smallvec::smallvec![value.clone()])))
}

fn constant_of_shape(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let value = match info.node.attr::<Tensor>("value")? {
        Some(v) if v.len() == 1 => v.to_aligned(),
        Some(v) => return Err(info.node.error(format!("'value' must hold one element, it holds {}", v.len()))),
        None => Tensor::scalar(0f32),
    };
    // A zero fill is the zeroed buffer itself: a large one is then fresh zero pages, not a
    // write over every byte.
    let zero = value.dtype() != DType::String && value.as_bytes().iter().all(|b| *b == 0);
    Ok(kernel(move |inputs| {
        let dims =
            tensor_in(inputs, 0)?.to_i64_vec()?.into_iter().map(|d| to_dim(d, "a dim")).collect::<Result<Vec<_>>>()?;
        if zero {
            return Ok(smallvec::smallvec![Tensor::zeros(value.dtype(), &dims).into()]);
        }
        Ok(smallvec::smallvec![run_plan(value.dtype(), &[&value], &dims, &[broadcast_scalar(0, &dims)])?.into()])
    }))
}

fn dropout(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let want_mask = n.outputs.get(1).is_some_and(Option::is_some);
    let opset = n.opset;
    if opset < 7 && n.attr_or("is_test", 0i64)? == 0 && n.attr_or("ratio", 0.5f32)? != 0.0 {
        // Before opset 7 the default was training; runtimes run these models for inference.
        tracing::debug!(node = %n.name, "Dropout with is_test=0 run as inference");
    }
    // Opset 12 made training a run-time input; a `seed` makes its mask the same on every run.
    let seed = match n.attr::<i64>("seed")? {
        Some(s) => Seed::fixed(s as u64),
        None => Seed::fresh(),
    };
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        if opset >= 12
            && let Some(t) = opt_tensor_in(inputs, 2)?
            && t.as_slice::<bool>()?.first().copied().unwrap_or(false)
        {
            let ratio = match opt_tensor_in(inputs, 1)? {
                Some(r) => r.to_f64_vec()?.first().copied().unwrap_or(0.5),
                None => 0.5,
            };
            if ratio != 0.0 {
                let (y, mask) = random::dropout::train(x, ratio, seed)?;
                return Ok(if want_mask {
                    smallvec::smallvec![y.into(), mask.into()]
                } else {
                    smallvec::smallvec![y.into()]
                });
            }
        }
        let mut out: Values = smallvec::smallvec![x.clone().into()];
        if want_mask {
            // Opset 10 made the mask bool; before it had the input's type.
            let one = if opset >= 10 { Tensor::scalar(true) } else { scalar_of(x.dtype(), 1.0)? };
            out.push(run_plan(one.dtype(), &[&one], x.shape(), &[broadcast_scalar(0, x.shape())])?.into());
        }
        Ok(out)
    }))
}

/// Numpy broadcasting of two shapes (Expand is bidirectional: either side may be 1).
pub(super) fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|i| {
            let da = if i + a.len() >= r { a[i + a.len() - r] } else { 1 };
            let db = if i + b.len() >= r { b[i + b.len() - r] } else { 1 };
            match (da, db) {
                (x, y) if x == y => Ok(x),
                (1, y) => Ok(y),
                (x, 1) => Ok(x),
                _ => Err(Error::invalid(format!("shapes {a:?} and {b:?} do not broadcast"))),
            }
        })
        .collect()
}

/// A copy of `x` broadcast to `shape` (which `x` must broadcast to): stride 0 on expanded axes.
pub(super) fn broadcast_to(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let off = shape.len().checked_sub(x.rank()).ok_or_else(|| Error::invalid("broadcast to a lower rank"))?;
    let xs = dense_strides(x.shape());
    let strides = (0..shape.len())
        .map(|i| if i < off || x.shape()[i - off] == 1 && shape[i] != 1 { 0 } else { xs[i - off] })
        .collect();
    run_plan(x.dtype(), &[x], shape, &[Step::Strided(Strided::dense(0, 0, strides, shape))])
}

fn expand(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        let x = tensor_in(inputs, 0)?;
        let spec = tensor_in(inputs, 1)?.to_i64_vec()?;
        let spec = spec.into_iter().map(|d| to_dim(d, "an Expand dim")).collect::<Result<Vec<_>>>()?;
        let shape = broadcast_shapes(x.shape(), &spec)?;
        Ok(smallvec::smallvec![broadcast_to(x, &shape)?.into()])
    }))
}

fn tile(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        let x = tensor_in(inputs, 0)?;
        let reps = tensor_in(inputs, 1)?.to_i64_vec()?;
        if reps.len() != x.rank() {
            return Err(Error::invalid(format!("Tile needs {} repeats, got {}", x.rank(), reps.len())));
        }
        // The output seen as [r0, d0, r1, d1, ...] reads the input with stride 0 on each r.
        let xs = dense_strides(x.shape());
        let mut view_shape = Vec::with_capacity(2 * x.rank());
        let mut strides = super::copy::Dims::<isize>::new();
        let mut out_shape = Vec::with_capacity(x.rank());
        for ((&d, &s), &r) in x.shape().iter().zip(&xs).zip(&reps) {
            let r = to_dim(r, "a Tile repeat")?;
            view_shape.extend([r, d]);
            strides.extend([0, s]);
            out_shape.push(r.checked_mul(d).ok_or_else(|| Error::invalid("Tile output is too large"))?);
        }
        let step = Step::Strided(Strided::dense(0, 0, strides, &view_shape));
        Ok(smallvec::smallvec![run_plan(x.dtype(), &[x], &out_shape, &[step])?.into()])
    }))
}
