//! Masks and patterns:
//! [EyeLike](https://onnx.ai/onnx/operators/onnx__EyeLike.html) 9– (numeric and bool),
//! [Trilu](https://onnx.ai/onnx/operators/onnx__Trilu.html) 14– (every type),
//! [OneHot](https://onnx.ai/onnx/operators/onnx__OneHot.html) 9– (numeric indices and depth,
//! values of every type),
//! [NonZero](https://onnx.ai/onnx/operators/onnx__NonZero.html) 9– (every type; strings are
//! non-zero when non-empty).

use vinort_ir::{DType, Error, Result, Tensor};

use super::copy::{Step, Strided, checked_numel, run_plan};
use super::{ints_lossy, kernel, scalar_int, scalar_of};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};

pub(super) fn register(r: &mut Registry) {
    r.op("", "EyeLike", eye_like);
    r.op("", "Trilu", trilu);
    r.op("", "OneHot", one_hot);
    r.op("", "NonZero", non_zero);
}

pub(super) fn eye_like_tensor(shape: &[usize], dtype: DType, k: i64) -> Result<Tensor> {
    let [rows, cols] = *shape else {
        return Err(Error::invalid(format!("EyeLike needs a 2-D input, got shape {shape:?}")));
    };
    let one = scalar_of(dtype, 1.0)?;
    let (r0, c0) = if k >= 0 { (0, k as u64) } else { (k.unsigned_abs(), 0) };
    let count = (rows as u64).saturating_sub(r0).min((cols as u64).saturating_sub(c0)) as usize;
    let mut steps = vec![];
    if count > 0 {
        steps.push(Step::Strided(Strided {
            src: 0,
            src_off: 0,
            src_strides: smallvec::smallvec![0],
            dst_off: r0 as usize * cols + c0 as usize,
            dst_strides: smallvec::smallvec![cols as isize + 1],
            shape: smallvec::smallvec![count],
        }));
    }
    run_plan(dtype, &[&one], shape, &steps)
}

fn eye_like(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    let dtype = match n.attr::<i64>("dtype")? {
        Some(code) => Some(
            i32::try_from(code)
                .ok()
                .and_then(DType::from_onnx)
                .ok_or_else(|| n.error(format!("unknown dtype {code}")))?,
        ),
        None => None,
    };
    let k: i64 = n.attr_or("k", 0)?;
    Ok(kernel(move |inputs| {
        let x = tensor_in(inputs, 0)?;
        Ok(smallvec::smallvec![eye_like_tensor(x.shape(), dtype.unwrap_or(x.dtype()), k)?.into()])
    }))
}

pub(super) fn trilu_tensor(x: &Tensor, k: i64, upper: bool) -> Result<Tensor> {
    let r = x.rank();
    if r < 2 {
        return Err(Error::invalid(format!("Trilu needs rank >= 2, got shape {:?}", x.shape())));
    }
    let (n, m) = (x.shape()[r - 2], x.shape()[r - 1]);
    let batches: usize = x.shape()[..r - 2].iter().product();
    let mut runs = vec![];
    for b in 0..batches {
        for i in 0..n {
            // Columns kept on row i: j - i >= k (upper) or j - i <= k (lower).
            let edge = i as i128 + k as i128;
            let (lo, hi) =
                if upper { (edge.clamp(0, m as i128), m as i128) } else { (0, (edge + 1).clamp(0, m as i128)) };
            if hi > lo {
                let at = (b * n + i) * m + lo as usize;
                runs.push([at, at, (hi - lo) as usize]);
            }
        }
    }
    run_plan(x.dtype(), &[x], x.shape(), &[Step::Runs { src: 0, runs }])
}

fn trilu(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let upper: bool = info.node.attr_or("upper", true)?;
    Ok(kernel(move |inputs| {
        let k = match opt_tensor_in(inputs, 1)? {
            Some(t) => scalar_int(t, "Trilu k")?,
            None => 0,
        };
        Ok(smallvec::smallvec![trilu_tensor(tensor_in(inputs, 0)?, k, upper)?.into()])
    }))
}

pub(super) fn one_hot_tensor(indices: &Tensor, depth: &Tensor, values: &Tensor, axis: i64) -> Result<Tensor> {
    let depth = match ints_lossy(depth)?.as_slice() {
        [d] if *d > 0 => *d as usize,
        other => return Err(Error::invalid(format!("OneHot depth must be one positive number, got {other:?}"))),
    };
    if values.len() != 2 {
        return Err(Error::invalid(format!("OneHot values must hold [off, on], it holds {}", values.len())));
    }
    let r = indices.rank() as i64;
    let a = if axis < 0 { axis + r + 1 } else { axis };
    if !(0..=r).contains(&a) {
        return Err(Error::invalid(format!("OneHot axis {axis} is out of range for rank {r}")));
    }
    let a = a as usize;
    let ind = ints_lossy(indices)?;
    let outer: usize = indices.shape()[..a].iter().product();
    let inner: usize = indices.shape()[a..].iter().product();
    let mut shape = indices.shape().to_vec();
    shape.insert(a, depth);
    checked_numel(&shape)?;
    let d = depth as i64;
    let mut map = Vec::with_capacity(outer * depth * inner);
    for o in 0..outer {
        for p in 0..d {
            for i in 0..inner {
                let v = ind[o * inner + i];
                // Indices outside [-depth, depth-1] select nothing: the row stays off.
                let hit = (v == p) || (v < 0 && v + d == p);
                map.push(hit as usize);
            }
        }
    }
    run_plan(values.dtype(), &[values], &shape, &[Step::Gather { src: 0, dst_off: 0, map }])
}

fn one_hot(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let axis: i64 = info.node.attr_or("axis", -1)?;
    Ok(kernel(move |inputs| {
        let (i, d, v) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        Ok(smallvec::smallvec![one_hot_tensor(i, d, v, axis)?.into()])
    }))
}

/// Which elements are non-zero. Floats compare by value (so -0.0 is zero and NaN is not);
/// complex numbers when either part is non-zero; other types when any byte is set.
fn nonzero_mask(x: &Tensor) -> Result<Vec<bool>> {
    let by_parts = |parts: Vec<f64>, k: usize| parts.chunks(k).map(|c| c.iter().any(|v| *v != 0.0)).collect();
    Ok(match x.dtype() {
        DType::String => x.as_strings()?.iter().map(|s| !s.is_empty()).collect(),
        d if d.is_float() => x.to_f64_vec()?.into_iter().map(|v| v != 0.0).collect(),
        DType::Complex64 => {
            let parts = x.as_bytes().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64);
            by_parts(parts.collect(), 2)
        }
        DType::Complex128 => {
            let parts = x.as_bytes().chunks_exact(8).map(|b| {
                let mut w = [0u8; 8];
                w.copy_from_slice(b);
                f64::from_le_bytes(w)
            });
            by_parts(parts.collect(), 2)
        }
        d => x.as_bytes().chunks_exact(d.size().max(1)).map(|c| c.iter().any(|b| *b != 0)).collect(),
    })
}

pub(super) fn non_zero_tensor(x: &Tensor) -> Result<Tensor> {
    let mask = nonzero_mask(x)?;
    // A scalar counts as a one-element vector (as numpy's atleast_1d and ORT do).
    let shape: Vec<usize> = if x.rank() == 0 { vec![1] } else { x.shape().to_vec() };
    let hits: Vec<usize> = mask.iter().enumerate().filter(|(_, m)| **m).map(|(i, _)| i).collect();
    let nnz = hits.len();
    let r = shape.len();
    let mut out = vec![0i64; r * nnz];
    for (j, &flat) in hits.iter().enumerate() {
        let mut rem = flat;
        for a in (0..r).rev() {
            out[a * nnz + j] = (rem % shape[a]) as i64;
            rem /= shape[a];
        }
    }
    Tensor::from_vec(&[r, nnz], out)
}

fn non_zero(_: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(kernel(|inputs| Ok(smallvec::smallvec![non_zero_tensor(tensor_in(inputs, 0)?)?.into()])))
}
