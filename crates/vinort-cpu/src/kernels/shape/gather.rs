//! Index-driven moves:
//! [Gather](https://onnx.ai/onnx/operators/onnx__Gather.html) 1–,
//! [GatherElements](https://onnx.ai/onnx/operators/onnx__GatherElements.html) 11–,
//! [GatherND](https://onnx.ai/onnx/operators/onnx__GatherND.html) 11– (`batch_dims` from 12),
//! [ScatterElements](https://onnx.ai/onnx/operators/onnx__ScatterElements.html) 11– (and the
//! deprecated [Scatter](https://onnx.ai/onnx/operators/onnx__Scatter.html) 9–10),
//! [ScatterND](https://onnx.ai/onnx/operators/onnx__ScatterND.html) 11– (`reduction` from 16,
//! max/min from 18), [Compress](https://onnx.ai/onnx/operators/onnx__Compress.html) 9–,
//! [ReverseSequence](https://onnx.ai/onnx/operators/onnx__ReverseSequence.html) 10–.
//!
//! Every element type for the moves; the Scatter reductions add/mul/max/min take the numeric
//! types. Indices may be negative (counting from the end); an index out of range is an error.

use vinort_ir::tensor::numel;
use vinort_ir::{DType, Error, Result, Tensor};

use super::copy::{Step, Strided, checked_numel, dense_strides, run_plan};
use super::{kernel, norm_index};
use crate::kernel::{Kernel, NodeInfo, Registry, norm_axis, tensor_in, with_numeric};
use crate::numeric::{Numeric, unsupported_dtype};

pub(super) fn register(r: &mut Registry) {
    r.op("", "Gather", gather);
    r.op("", "GatherElements", gather_elements);
    r.op("", "GatherND", gather_nd);
    r.add("", "Scatter", 9..=10, scatter_elements);
    r.op("", "ScatterElements", scatter_elements);
    r.op("", "ScatterND", scatter_nd);
    r.op("", "Compress", compress);
    r.op("", "ReverseSequence", reverse_sequence);
}

pub(super) fn gather_tensor(x: &Tensor, idx: &Tensor, axis: i64) -> Result<Tensor> {
    let a = norm_axis(axis, x.rank())?;
    let d = x.shape()[a];
    let ind = idx.i64s()?;
    for &i in ind.iter() {
        norm_index(i, d)?;
    }
    let (outer, inner) = (numel(&x.shape()[..a]), numel(&x.shape()[a + 1..]));
    let mut shape: vinort_ir::Shape = x.shape()[..a].into();
    shape.extend_from_slice(idx.shape());
    shape.extend_from_slice(&x.shape()[a + 1..]);
    let total = checked_numel(&shape)?;
    let n = ind.len();
    if total == 0 {
        return Ok(Tensor::zeros(x.dtype(), &shape));
    }
    if x.dtype() == DType::String {
        let map = (0..outer).flat_map(|o| ind.iter().map(move |&i| (o, i))).flat_map(|(o, i)| {
            let i = norm_index(i, d).unwrap_or(0);
            (0..inner).map(move |k| (o * d + i) * inner + k)
        });
        let step = Step::Gather { src: 0, dst_off: 0, map: map.collect() };
        return run_plan(x.dtype(), &[x], &shape, &[step]);
    }
    // Whole rows of `inner` elements, copied as bytes straight into the output (indices were
    // checked above): no index map or copy plan is built, so nothing is allocated but the
    // output.
    let row = inner * x.dtype().size();
    let src = x.as_bytes();
    let bytes = Tensor::try_build_full::<u8, Error>(&[total * x.dtype().size()], |out| {
        for (o, block) in out.chunks_exact_mut(n * row).enumerate().take(outer) {
            for (&i, dst) in ind.iter().zip(block.chunks_exact_mut(row)) {
                let i = norm_index(i, d)?;
                dst.copy_from_slice(&src[(o * d + i) * row..][..row]);
            }
        }
        Ok(())
    })?;
    bytes.reinterpret(x.dtype(), &shape)
}

fn gather(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis: i64 = info.node.attr_or("axis", 0)?;
    Ok(kernel(move |inputs| {
        Ok(smallvec::smallvec![gather_tensor(tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, axis)?.into()])
    }))
}

/// For each element of `idx` (row-major), the flat offset into `x` it addresses along axis `a`
/// (GatherElements reads there, ScatterElements writes there).
fn element_targets(x: &Tensor, idx: &Tensor, a: usize) -> Result<Vec<usize>> {
    if idx.rank() != x.rank() {
        return Err(Error::invalid(format!("indices rank {} differs from data rank {}", idx.rank(), x.rank())));
    }
    for (k, (i, d)) in idx.shape().iter().zip(x.shape()).enumerate() {
        if k != a && i > d {
            return Err(Error::invalid(format!("indices shape {:?} exceeds data shape {:?}", idx.shape(), x.shape())));
        }
    }
    let xs = dense_strides(x.shape());
    let values = idx.to_i64_vec()?;
    let shape = idx.shape();
    let mut coord = vec![0usize; shape.len()];
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        let mut off = norm_index(v, x.shape()[a])? * xs[a] as usize;
        for (k, c) in coord.iter().enumerate() {
            if k != a {
                off += c * xs[k] as usize;
            }
        }
        out.push(off);
        for k in (0..shape.len()).rev() {
            coord[k] += 1;
            if coord[k] < shape[k] {
                break;
            }
            coord[k] = 0;
        }
    }
    Ok(out)
}

pub(super) fn gather_elements_tensor(x: &Tensor, idx: &Tensor, axis: i64) -> Result<Tensor> {
    let a = norm_axis(axis, x.rank())?;
    let map = element_targets(x, idx, a)?;
    run_plan(x.dtype(), &[x], idx.shape(), &[Step::Gather { src: 0, dst_off: 0, map }])
}

fn gather_elements(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis: i64 = info.node.attr_or("axis", 0)?;
    Ok(kernel(move |inputs| {
        Ok(smallvec::smallvec![gather_elements_tensor(tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, axis)?.into()])
    }))
}

/// GatherND/ScatterND addressing: for each index tuple (row-major), the flat offset of the
/// slice it names in `x`, plus the slice length and the shape of the tuple grid.
fn nd_targets(x: &Tensor, idx: &Tensor, b: usize) -> Result<(Vec<usize>, usize, Vec<usize>)> {
    let (r, q) = (x.rank(), idx.rank());
    if q == 0 || r == 0 || b >= q.min(r) {
        return Err(Error::invalid(format!("ND indexing needs ranks above batch_dims {b}, got data {r}, indices {q}")));
    }
    let k = idx.shape()[q - 1];
    if k > r - b {
        return Err(Error::invalid(format!("index tuples of {k} exceed data rank {r} minus batch_dims {b}")));
    }
    if idx.shape()[..b] != x.shape()[..b] {
        return Err(Error::invalid(format!("batch dims of {:?} and {:?} differ", idx.shape(), x.shape())));
    }
    let xs = dense_strides(x.shape());
    let inner = numel(&x.shape()[b + k..]);
    let batch_size = numel(&x.shape()[b..]);
    let per_batch = numel(&idx.shape()[b..q - 1]);
    let values = idx.to_i64_vec()?;
    let mut offs = Vec::with_capacity(values.len() / k.max(1));
    let tuples = numel(&idx.shape()[..q - 1]);
    for t in 0..tuples {
        let mut off = (t / per_batch.max(1)) * batch_size;
        for (j, v) in values[t * k..(t + 1) * k].iter().enumerate() {
            off += norm_index(*v, x.shape()[b + j])? * xs[b + j] as usize;
        }
        offs.push(off);
    }
    Ok((offs, inner, idx.shape()[..q - 1].to_vec()))
}

pub(super) fn gather_nd_tensor(x: &Tensor, idx: &Tensor, b: usize) -> Result<Tensor> {
    let (offs, inner, mut shape) = nd_targets(x, idx, b)?;
    let k = idx.shape()[idx.rank() - 1];
    shape.extend_from_slice(&x.shape()[b + k..]);
    let runs = offs.iter().enumerate().map(|(j, o)| [*o, j * inner, inner]).collect();
    run_plan(x.dtype(), &[x], &shape, &[Step::Runs { src: 0, runs }])
}

fn gather_nd(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let b = super::to_dim(info.node.attr_or("batch_dims", 0i64)?, "batch_dims")?;
    Ok(kernel(move |inputs| {
        Ok(smallvec::smallvec![gather_nd_tensor(tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, b)?.into()])
    }))
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Reduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

fn reduction_attr(info: &NodeInfo<'_>) -> Result<Reduction> {
    Ok(match info.node.attr_or("reduction", "none".to_owned())?.as_str() {
        "none" => Reduction::None,
        "add" => Reduction::Add,
        "mul" => Reduction::Mul,
        "max" => Reduction::Max,
        "min" => Reduction::Min,
        other => return Err(info.node.error(format!("unknown reduction '{other}'"))),
    })
}

fn combine<T: Numeric>(r: Reduction, old: T, new: T) -> T {
    match r {
        Reduction::None => new,
        Reduction::Add => old.wrap_add(new),
        Reduction::Mul => old.wrap_mul(new),
        Reduction::Max => {
            if new > old {
                new
            } else {
                old
            }
        }
        Reduction::Min => {
            if new < old {
                new
            } else {
                old
            }
        }
    }
}

/// A copy of `x` with `upd` runs `(upd_off, x_off, len)` written or reduced in, in order.
fn scatter_runs(x: &Tensor, upd: &Tensor, runs: Vec<[usize; 3]>, r: Reduction) -> Result<Tensor> {
    if upd.dtype() != x.dtype() {
        return Err(Error::DTypeMismatch { expected: x.dtype(), found: upd.dtype() });
    }
    if r == Reduction::None {
        let copy = Step::Strided(Strided::dense(0, 0, dense_strides(x.shape()), x.shape()));
        let runs = Step::Runs { src: 1, runs };
        return run_plan(x.dtype(), &[x, upd], x.shape(), &[copy, runs]);
    }
    let dtype: DType = x.dtype();
    with_numeric!(dtype, |T| {
        let mut out = x.to_vec::<T>()?;
        let u = upd.as_slice::<T>()?;
        for [s, d, n] in runs {
            let src = u.get(s..s + n).ok_or_else(|| Error::invalid("updates are too short"))?;
            let dst = out.get_mut(d..d + n).ok_or_else(|| Error::invalid("scatter target out of range"))?;
            for (o, v) in dst.iter_mut().zip(src) {
                *o = combine(r, *o, *v);
            }
        }
        Tensor::from_vec(x.shape(), out)
    }, other => Err(unsupported_dtype("Scatter reduction", other)))
}

pub(super) fn scatter_elements_tensor(
    x: &Tensor,
    idx: &Tensor,
    upd: &Tensor,
    axis: i64,
    r: Reduction,
) -> Result<Tensor> {
    let a = norm_axis(axis, x.rank())?;
    if idx.shape() != upd.shape() {
        return Err(Error::invalid(format!("indices {:?} and updates {:?} differ", idx.shape(), upd.shape())));
    }
    let targets = element_targets(x, idx, a)?;
    scatter_runs(x, upd, targets.into_iter().enumerate().map(|(i, t)| [i, t, 1]).collect(), r)
}

fn scatter_elements(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis: i64 = info.node.attr_or("axis", 0)?;
    let r = reduction_attr(info)?;
    Ok(kernel(move |inputs| {
        let (x, idx, upd) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        Ok(smallvec::smallvec![scatter_elements_tensor(x, idx, upd, axis, r)?.into()])
    }))
}

pub(super) fn scatter_nd_tensor(x: &Tensor, idx: &Tensor, upd: &Tensor, r: Reduction) -> Result<Tensor> {
    let (offs, inner, mut want) = nd_targets(x, idx, 0)?;
    let k = idx.shape()[idx.rank() - 1];
    want.extend_from_slice(&x.shape()[k..]);
    if upd.shape() != want.as_slice() {
        return Err(Error::invalid(format!("updates shape {:?} should be {want:?}", upd.shape())));
    }
    scatter_runs(x, upd, offs.into_iter().enumerate().map(|(j, o)| [j * inner, o, inner]).collect(), r)
}

fn scatter_nd(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let r = reduction_attr(info)?;
    Ok(kernel(move |inputs| {
        let (x, idx, upd) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        Ok(smallvec::smallvec![scatter_nd_tensor(x, idx, upd, r)?.into()])
    }))
}

/// Positions `< extent` where `cond` is true; a true entry past the extent is an error
/// (entries past it that are false are ignored, as numpy does).
fn selected(cond: &Tensor, extent: usize) -> Result<Vec<usize>> {
    let c = cond.as_slice::<bool>()?;
    if cond.rank() != 1 {
        return Err(Error::invalid(format!("condition must be 1-D, got shape {:?}", cond.shape())));
    }
    if c.iter().skip(extent).any(|v| *v) {
        return Err(Error::invalid(format!("condition selects past the extent {extent}")));
    }
    Ok(c.iter().take(extent).enumerate().filter(|(_, v)| **v).map(|(i, _)| i).collect())
}

pub(super) fn compress_tensor(x: &Tensor, cond: &Tensor, axis: Option<i64>) -> Result<Tensor> {
    let Some(axis) = axis else {
        let map = selected(cond, x.len())?;
        return run_plan(x.dtype(), &[x], &[map.len()], &[Step::Gather { src: 0, dst_off: 0, map }]);
    };
    let a = norm_axis(axis, x.rank())?;
    let d = x.shape()[a];
    let sel = selected(cond, d)?;
    let (outer, inner) = (numel(&x.shape()[..a]), numel(&x.shape()[a + 1..]));
    let mut shape = x.shape().to_vec();
    shape[a] = sel.len();
    let n = sel.len();
    let runs = (0..outer)
        .flat_map(|o| sel.iter().enumerate().map(move |(j, p)| [(o * d + p) * inner, (o * n + j) * inner, inner]))
        .collect();
    run_plan(x.dtype(), &[x], &shape, &[Step::Runs { src: 0, runs }])
}

fn compress(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis: Option<i64> = info.node.attr("axis")?;
    Ok(kernel(move |inputs| {
        Ok(smallvec::smallvec![compress_tensor(tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, axis)?.into()])
    }))
}

pub(super) fn reverse_sequence_tensor(x: &Tensor, lens: &Tensor, batch_axis: i64, time_axis: i64) -> Result<Tensor> {
    let time_first = match (batch_axis, time_axis) {
        (1, 0) => true,
        (0, 1) => false,
        _ => return Err(Error::invalid(format!("batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1"))),
    };
    if x.rank() < 2 {
        return Err(Error::invalid(format!("ReverseSequence needs rank >= 2, got {:?}", x.shape())));
    }
    let (nb, nt) = if time_first { (x.shape()[1], x.shape()[0]) } else { (x.shape()[0], x.shape()[1]) };
    let lens = lens.to_i64_vec()?;
    if lens.len() != nb {
        return Err(Error::invalid(format!("{} sequence lengths for a batch of {nb}", lens.len())));
    }
    let inner = numel(&x.shape()[2..]);
    let at = |b: usize, t: usize| if time_first { (t * nb + b) * inner } else { (b * nt + t) * inner };
    let mut runs = Vec::with_capacity(nb * nt);
    for (b, &l) in lens.iter().enumerate() {
        let l = usize::try_from(l)
            .ok()
            .filter(|l| *l <= nt)
            .ok_or_else(|| Error::invalid(format!("sequence length {l} is outside [0, {nt}]")))?;
        for t in 0..nt {
            let src_t = if t < l { l - 1 - t } else { t };
            runs.push([at(b, src_t), at(b, t), inner]);
        }
    }
    run_plan(x.dtype(), &[x], x.shape(), &[Step::Runs { src: 0, runs }])
}

fn reverse_sequence(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let b: i64 = info.node.attr_or("batch_axis", 1)?;
    let t: i64 = info.node.attr_or("time_axis", 0)?;
    Ok(kernel(move |inputs| {
        Ok(smallvec::smallvec![reverse_sequence_tensor(tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, b, t)?.into()])
    }))
}
