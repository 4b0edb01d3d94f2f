//! Sub-tensor selection and assembly, every element type:
//! [Slice](https://onnx.ai/onnx/operators/onnx__Slice.html) 1– (attributes before 10; steps,
//! negative steps and INT_MIN/INT_MAX ends from 10),
//! [Concat](https://onnx.ai/onnx/operators/onnx__Concat.html) 1– (negative axis from 11),
//! [Split](https://onnx.ai/onnx/operators/onnx__Split.html) 1– (`split` attribute before 13,
//! input from 13, `num_outputs` from 18),
//! [Pad](https://onnx.ai/onnx/operators/onnx__Pad.html) 1– (attributes before 11, inputs from
//! 11, `axes` from 18; constant, reflect, edge and wrap modes; negative pads crop).

use smallvec::SmallVec;
use vinort_ir::ops::slice_range;
use vinort_ir::{Error, Result, Tensor, Value};

use super::copy::{Step, Strided, broadcast_scalar, checked_numel, dense_strides, run_plan};
use super::{kernel, norm_axes, scalar_of};
use crate::kernel::{Kernel, MAX_OPSET, NodeInfo, Registry, norm_axis, opt_tensor_in, tensor_in};

pub(super) fn register(r: &mut Registry) {
    r.add("", "Slice", 1..=9, slice_v1);
    r.add("", "Slice", 10..=MAX_OPSET, slice);
    r.op("", "Concat", concat);
    r.op("", "Split", split);
    r.op("", "Pad", pad);
}

pub(super) fn slice_tensor(
    x: &Tensor,
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Result<Tensor> {
    let r = x.rank();
    let n = starts.len();
    let default_axes: SmallVec<[i64; 6]> = (0..n as i64).collect();
    let axes = axes.unwrap_or(&default_axes);
    let ones: SmallVec<[i64; 6]> = smallvec::smallvec![1; n];
    let steps = steps.unwrap_or(&ones);
    if ends.len() != n || axes.len() != n || steps.len() != n {
        return Err(Error::invalid(format!(
            "Slice starts/ends/axes/steps lengths differ: {n}, {}, {}, {}",
            ends.len(),
            axes.len(),
            steps.len()
        )));
    }
    let axes = norm_axes(axes, r)?;
    let xs = dense_strides(x.shape());
    let mut shape: vinort_ir::Shape = x.shape().into();
    let mut strides = xs.clone();
    let mut off = 0usize;
    for (i, &a) in axes.iter().enumerate() {
        let (s, len) = slice_range(starts[i], ends[i], steps[i], x.shape()[a])?;
        shape[a] = len;
        // Saturating: a huge step only ever takes one element, so its stride is never walked.
        strides[a] = xs[a].saturating_mul(steps[i].clamp(isize::MIN as i64, isize::MAX as i64) as isize);
        off += s * xs[a] as usize;
    }
    if shape.contains(&0) {
        off = 0;
    }
    run_plan(x.dtype(), &[x], &shape, &[Step::Strided(Strided::dense(0, off, strides, &shape))])
}

fn slice_v1(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let starts: Vec<i64> = n.req_attr("starts")?;
    let ends: Vec<i64> = n.req_attr("ends")?;
    let axes: Option<Vec<i64>> = n.attr("axes")?;
    Ok(kernel(move |inputs| {
        Ok(smallvec::smallvec![slice_tensor(tensor_in(inputs, 0)?, &starts, &ends, axes.as_deref(), None)?.into()])
    }))
}

fn slice(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| {
        // Read in place when int64 (no copy, no allocation).
        let ints = |i| opt_tensor_in(inputs, i)?.map(Tensor::i64s).transpose();
        let starts = tensor_in(inputs, 1)?.i64s()?;
        let ends = tensor_in(inputs, 2)?.i64s()?;
        let (axes, steps) = (ints(3)?, ints(4)?);
        Ok(smallvec::smallvec![
            slice_tensor(tensor_in(inputs, 0)?, &starts, &ends, axes.as_deref(), steps.as_deref())?.into()
        ])
    }))
}

pub(crate) fn concat_tensors(xs: &[&Tensor], axis: i64) -> Result<Tensor> {
    let first = xs.first().ok_or_else(|| Error::invalid("Concat needs at least one input"))?;
    let r = first.rank();
    let a = norm_axis(axis, r)?;
    let mut shape = first.shape().to_vec();
    shape[a] = 0;
    for x in xs {
        let ok = x.rank() == r && x.shape().iter().zip(first.shape()).enumerate().all(|(i, (p, q))| i == a || p == q);
        if !ok {
            return Err(Error::invalid(format!(
                "Concat inputs {:?} and {:?} differ off axis {a}",
                first.shape(),
                x.shape()
            )));
        }
        shape[a] += x.shape()[a];
    }
    let os = dense_strides(&shape);
    let mut steps = Vec::with_capacity(xs.len());
    let mut at = 0usize;
    for (k, x) in xs.iter().enumerate() {
        steps.push(Step::Strided(Strided {
            src: k,
            src_off: 0,
            src_strides: dense_strides(x.shape()),
            dst_off: at * os[a] as usize,
            dst_strides: os.clone(),
            shape: x.shape().into(),
        }));
        at += x.shape()[a];
    }
    run_plan(first.dtype(), xs, &shape, &steps)
}

fn concat(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis: i64 = info.node.req_attr("axis")?;
    Ok(kernel(move |inputs| {
        let xs = (0..inputs.len()).map(|i| tensor_in(inputs, i)).collect::<Result<Vec<_>>>()?;
        Ok(smallvec::smallvec![concat_tensors(&xs, axis)?.into()])
    }))
}

/// Chunk sizes when no `split` is given: equal parts; from opset 18 an uneven axis gives
/// `ceil(dim / n)`-sized chunks and a smaller last one.
pub(super) fn even_split(dim: usize, n: usize, allow_uneven: bool) -> Result<Vec<usize>> {
    if n == 0 {
        return Err(Error::invalid("Split needs at least one output"));
    }
    if dim.is_multiple_of(n) {
        return Ok(vec![dim / n; n]);
    }
    let chunk = dim.div_ceil(n);
    match dim.checked_sub(chunk * (n - 1)) {
        Some(last) if allow_uneven => {
            let mut v = vec![chunk; n];
            v[n - 1] = last;
            Ok(v)
        }
        _ => Err(Error::invalid(format!("an axis of {dim} cannot be split into {n} parts"))),
    }
}

pub(super) fn split_tensor(x: &Tensor, axis: i64, sizes: &[usize]) -> Result<Vec<Tensor>> {
    let a = norm_axis(axis, x.rank())?;
    if sizes.iter().sum::<usize>() != x.shape()[a] {
        return Err(Error::invalid(format!("split {sizes:?} does not sum to the axis extent {}", x.shape()[a])));
    }
    let xs = dense_strides(x.shape());
    let mut at = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes {
        let mut shape = x.shape().to_vec();
        shape[a] = s;
        let off = if checked_numel(&shape)? == 0 { 0 } else { at * xs[a] as usize };
        let step = Step::Strided(Strided::dense(0, off, xs.clone(), &shape));
        out.push(run_plan(x.dtype(), &[x], &shape, &[step])?);
        at += s;
    }
    Ok(out)
}

fn split(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let axis: i64 = n.attr_or("axis", 0)?;
    let opset = n.opset;
    let attr_split: Option<Vec<i64>> = if opset < 13 { n.attr("split")? } else { None };
    let num_outputs: Option<i64> = if opset >= 18 { n.attr("num_outputs")? } else { None };
    let n_out = n.outputs.len();
    if let Some(k) = num_outputs
        && k != n_out as i64
    {
        return Err(n.error(format!("num_outputs is {k} but the node has {n_out} outputs")));
    }
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let dim = x.shape()[norm_axis(axis, x.rank())?];
        // Opset 1 took `split` as an attribute or a second input; 13 made it an input only.
        let given = match &attr_split {
            Some(s) => Some(s.clone()),
            None if opset == 1 || opset >= 13 => opt_tensor_in(inputs, 1)?.map(Tensor::to_i64_vec).transpose()?,
            None => None,
        };
        let sizes = match given {
            Some(s) => {
                if s.len() != n_out {
                    return Err(Error::invalid(format!("split has {} sizes for {n_out} outputs", s.len())));
                }
                s.into_iter().map(|v| super::to_dim(v, "a split size")).collect::<Result<Vec<_>>>()?
            }
            None => even_split(dim, n_out, opset >= 18)?,
        };
        Ok(split_tensor(x, axis, &sizes)?.into_iter().map(Value::from).collect())
    }))
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum PadMode {
    Constant,
    Reflect,
    Edge,
    Wrap,
}

/// Source coordinate of output coordinate `o` along an axis of extent `d` padded by `before`;
/// None where the constant goes.
fn pad_source(o: usize, before: i64, d: usize, mode: PadMode) -> Option<usize> {
    // i128: `before` comes from the model and may be anywhere in i64.
    let i = o as i128 - before as i128;
    let di = d as i128;
    if (0..di).contains(&i) {
        return Some(i as usize);
    }
    match mode {
        PadMode::Constant => None,
        PadMode::Edge => Some(i.clamp(0, di - 1) as usize),
        PadMode::Wrap => Some(i.rem_euclid(di) as usize),
        // Mirror without repeating the edge; the period is 2(d-1), as numpy's `reflect`.
        PadMode::Reflect if d == 1 => Some(0),
        PadMode::Reflect => {
            let p = 2 * (di - 1);
            let m = i.rem_euclid(p);
            Some(if m >= di { p - m } else { m } as usize)
        }
    }
}

/// Pads `x` by `pads` (`[begin_0.., end_0..]` over all axes); `value` fills in constant mode
/// (zero/empty when None).
pub(super) fn pad_tensor(x: &Tensor, pads: &[i64], mode: PadMode, value: Option<&Tensor>) -> Result<Tensor> {
    let r = x.rank();
    if pads.len() != 2 * r {
        return Err(Error::invalid(format!("Pad needs {} pads for rank {r}, got {}", 2 * r, pads.len())));
    }
    let mut shape = Vec::with_capacity(r);
    for (a, &d) in x.shape().iter().enumerate() {
        let o = d as i128 + pads[a] as i128 + pads[a + r] as i128;
        shape.push(usize::try_from(o).map_err(|_| Error::invalid(format!("Pad gives axis {a} extent {o}")))?);
    }
    let total = checked_numel(&shape)?;
    let xs = dense_strides(x.shape());
    if mode == PadMode::Constant {
        let mut srcs = vec![x];
        let mut steps = vec![];
        if let Some(v) = value {
            if v.len() != 1 {
                return Err(Error::invalid(format!("Pad constant_value must hold one element, it holds {}", v.len())));
            }
            srcs.push(v);
            steps.push(broadcast_scalar(1, &shape));
        }
        let os = dense_strides(&shape);
        // The kept part of the input: [lo, hi) on each axis, after negative pads crop.
        let kept: Vec<(usize, usize)> = (0..r)
            .map(|a| {
                let d = x.shape()[a] as i128;
                let lo = (-(pads[a] as i128)).clamp(0, d);
                let hi = (d + (pads[a + r] as i128).min(0)).max(lo);
                (lo as usize, (hi - lo) as usize)
            })
            .collect();
        let inner: Vec<usize> = kept.iter().map(|k| k.1).collect();
        if !inner.contains(&0) {
            // Offsets are only formed for a non-empty copy, where they lie inside both tensors.
            let soff: usize = kept.iter().zip(&xs).map(|(k, s)| k.0 * *s as usize).sum();
            let doff: usize = (0..r).map(|a| pads[a].max(0) as usize * os[a] as usize).sum();
            steps.push(Step::Strided(Strided {
                src: 0,
                src_off: soff,
                src_strides: xs,
                dst_off: doff,
                dst_strides: os,
                shape: inner.into(),
            }));
        }
        return run_plan(x.dtype(), &srcs, &shape, &steps);
    }
    if total == 0 {
        return run_plan(x.dtype(), &[x], &shape, &[]);
    }
    if x.is_empty() {
        return Err(Error::invalid(format!("Pad mode {mode:?} cannot fill from an empty input {:?}", x.shape())));
    }
    let mut map = vec![0usize];
    for (a, &d) in x.shape().iter().enumerate() {
        let coords: Vec<usize> = (0..shape[a])
            .map(|o| pad_source(o, pads[a], d, mode).map(|i| i * xs[a] as usize))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::invalid("Pad source outside the input"))?;
        map = map.iter().flat_map(|m| coords.iter().map(move |c| m + c)).collect();
    }
    run_plan(x.dtype(), &[x], &shape, &[Step::Gather { src: 0, dst_off: 0, map }])
}

fn pad(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let mode = match n.attr_or("mode", "constant".to_owned())?.as_str() {
        "constant" => PadMode::Constant,
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        "wrap" => PadMode::Wrap,
        m => return Err(n.error(format!("unknown Pad mode '{m}'"))),
    };
    if n.opset < 11 {
        let pads: Vec<i64> = n.req_attr(if n.opset == 1 { "paddings" } else { "pads" })?;
        let value: f32 = n.attr_or("value", 0.0)?;
        return Ok(kernel(move |inputs| {
            let x = tensor_in(inputs, 0)?;
            // The legacy float `value` is cast to the data type; zero is the default fill.
            let v = if value != 0.0 { Some(scalar_of(x.dtype(), value as f64)?) } else { None };
            Ok(smallvec::smallvec![pad_tensor(x, &pads, mode, v.as_ref())?.into()])
        }));
    }
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        let r = x.rank();
        let given = tensor_in(inputs, 1)?.to_i64_vec()?;
        // An empty constant_value tensor counts as omitted.
        let value = opt_tensor_in(inputs, 2)?.filter(|v| !v.is_empty());
        let pads = match opt_tensor_in(inputs, 3)? {
            None => given,
            Some(axes) => {
                let axes = norm_axes(&axes.to_i64_vec()?, r)?;
                if given.len() != 2 * axes.len() {
                    return Err(Error::invalid(format!("{} pads for {} axes", given.len(), axes.len())));
                }
                let mut all = vec![0; 2 * r];
                for (i, &a) in axes.iter().enumerate() {
                    all[a] = given[i];
                    all[a + r] = given[i + axes.len()];
                }
                all
            }
        };
        Ok(smallvec::smallvec![pad_tensor(x, &pads, mode, value)?.into()])
    }))
}
