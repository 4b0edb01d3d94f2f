//! Element-type-generic data movement shared by the sequence and control-flow kernels:
//! taking one index along an axis, slicing a range along an axis, concatenating and stacking.
//!
//! Every operation is described as runs of consecutive elements copied from source tensors,
//! so it works for every element type, strings included.

use vinort_ir::{DType, Error, Result, Tensor, tensor::numel};

/// One run: `len` elements starting at element `start` of source `src`.
struct Run {
    src: usize,
    start: usize,
    len: usize,
}

/// Builds a tensor of `dtype` and `shape` from runs copied, in order, out of `srcs`.
fn assemble(dtype: DType, shape: &[usize], srcs: &[&Tensor], runs: &[Run]) -> Result<Tensor> {
    let n = numel(shape);
    if runs.iter().map(|r| r.len).sum::<usize>() != n {
        return Err(Error::invalid("internal: copy runs do not cover the output"));
    }
    for s in srcs {
        if s.dtype() != dtype {
            return Err(Error::invalid(format!("element types differ: {} and {dtype}", s.dtype())));
        }
    }
    let out_of_range = || Error::invalid("internal: copy run out of range");
    if dtype == DType::String {
        let mut out = Vec::with_capacity(n);
        for r in runs {
            let src = srcs.get(r.src).ok_or_else(out_of_range)?.as_strings()?;
            out.extend_from_slice(src.get(r.start..r.start + r.len).ok_or_else(out_of_range)?);
        }
        return Tensor::from_strings(shape, out);
    }
    let es = dtype.size();
    let mut err = None;
    let t = Tensor::build_raw(dtype, shape, |out| {
        let mut at = 0;
        for r in runs {
            let bytes = srcs.get(r.src).map(|s| s.as_bytes()).and_then(|b| b.get(r.start * es..(r.start + r.len) * es));
            match (bytes, out.get_mut(at..at + r.len * es)) {
                (Some(b), Some(o)) => o.copy_from_slice(b),
                _ => {
                    err = Some(out_of_range());
                    return;
                }
            }
            at += r.len * es;
        }
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(t),
    }
}

/// `(outer, dim, inner)` element counts of a shape around `axis`.
fn split_shape(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (numel(&shape[..axis]), shape[axis], numel(&shape[axis + 1..]))
}

/// Elements `start..start + len` of `t` along `axis` (rank kept).
pub(super) fn slice_axis(t: &Tensor, axis: usize, start: usize, len: usize) -> Result<Tensor> {
    if axis >= t.rank() || start + len > t.shape()[axis] {
        return Err(Error::invalid(format!(
            "cannot take {start}..{} along axis {axis} of shape {:?}",
            start + len,
            t.shape()
        )));
    }
    let (outer, dim, inner) = split_shape(t.shape(), axis);
    let mut shape = t.shape().to_vec();
    shape[axis] = len;
    if len == dim {
        return Ok(t.clone());
    }
    let runs: Vec<Run> =
        (0..outer).map(|o| Run { src: 0, start: (o * dim + start) * inner, len: len * inner }).collect();
    assemble(t.dtype(), &shape, &[t], &runs)
}

/// The sub-tensor at `index` along `axis`, with that axis removed.
pub(super) fn take(t: &Tensor, axis: usize, index: usize) -> Result<Tensor> {
    let s = slice_axis(t, axis, index, 1)?;
    let mut shape = t.shape().to_vec();
    shape.remove(axis);
    s.reshaped(&shape)
}

/// Concatenates tensors of equal rank and dtype along `axis`; the other extents must agree.
pub(super) fn concat(parts: &[&Tensor], axis: usize) -> Result<Tensor> {
    let first = parts.first().ok_or_else(|| Error::invalid("nothing to concatenate"))?;
    let rank = first.rank();
    if axis >= rank {
        return Err(Error::invalid(format!("axis {axis} is out of range for rank {rank}")));
    }
    let mut shape = first.shape().to_vec();
    shape[axis] = 0;
    for p in parts {
        let same_other =
            p.rank() == rank && p.shape().iter().zip(first.shape()).enumerate().all(|(i, (a, b))| i == axis || a == b);
        if !same_other {
            return Err(Error::invalid(format!(
                "cannot concatenate shapes {:?} and {:?} along axis {axis}",
                first.shape(),
                p.shape()
            )));
        }
        if p.dtype() != first.dtype() {
            return Err(Error::invalid(format!("cannot concatenate {} and {}", first.dtype(), p.dtype())));
        }
        shape[axis] += p.shape()[axis];
    }
    if parts.len() == 1 {
        return Ok((*first).clone());
    }
    let outer = numel(&first.shape()[..axis]);
    let mut runs = Vec::with_capacity(outer * parts.len());
    for o in 0..outer {
        for (i, p) in parts.iter().enumerate() {
            let chunk = numel(&p.shape()[axis..]);
            if chunk > 0 {
                runs.push(Run { src: i, start: o * chunk, len: chunk });
            }
        }
    }
    assemble(first.dtype(), &shape, parts, &runs)
}

/// Stacks tensors of one shape and dtype along a new axis `axis` (`0..=rank`).
pub(super) fn stack(items: &[&Tensor], axis: usize) -> Result<Tensor> {
    let first = items.first().ok_or_else(|| Error::invalid("nothing to stack"))?;
    if axis > first.rank() {
        return Err(Error::invalid(format!("axis {axis} is out of range for stacking rank {} tensors", first.rank())));
    }
    let mut shape = first.shape().to_vec();
    shape.insert(axis, 1);
    let mut expanded = Vec::with_capacity(items.len());
    for t in items {
        if t.shape() != first.shape() {
            return Err(Error::invalid(format!(
                "cannot stack tensors of shapes {:?} and {:?}",
                first.shape(),
                t.shape()
            )));
        }
        expanded.push(t.reshaped(&shape)?);
    }
    let refs: Vec<&Tensor> = expanded.iter().collect();
    concat(&refs, axis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_elements() {
        let t = Tensor::from_slice(&[2, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!(take(&t, 1, 2).unwrap().to_vec::<i32>().unwrap(), vec![3, 6]);
        assert_eq!(take(&t, 0, 1).unwrap().to_vec::<i32>().unwrap(), vec![4, 5, 6]);
        let s = slice_axis(&t, 1, 1, 2).unwrap();
        assert_eq!(s.shape(), &[2, 2]);
        assert_eq!(s.to_vec::<i32>().unwrap(), vec![2, 3, 5, 6]);
        let c = concat(&[&t, &s], 1).unwrap();
        assert_eq!(c.shape(), &[2, 5]);
        assert_eq!(c.to_vec::<i32>().unwrap(), vec![1, 2, 3, 2, 3, 4, 5, 6, 5, 6]);
        let st = stack(&[&t, &t], 2).unwrap();
        assert_eq!(st.shape(), &[2, 3, 2]);
        assert_eq!(st.to_vec::<i32>().unwrap(), vec![1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
        let strs = Tensor::from_strings(&[2], vec!["a".into(), "b".into()]).unwrap();
        let ss = stack(&[&strs, &strs], 0).unwrap();
        assert_eq!(ss.as_strings().unwrap(), &["a", "b", "a", "b"]);
        assert!(slice_axis(&t, 1, 2, 2).is_err());
        assert!(concat(&[&t, &strs], 0).is_err());
    }
}
