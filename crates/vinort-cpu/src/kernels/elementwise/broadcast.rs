//! Multidirectional (numpy-style) broadcasting, shared by every kernel family that combines
//! tensors element by element.
//!
//! Rules: <https://onnx.ai/onnx/repo-docs/Broadcasting.html>. Shapes are aligned on their
//! trailing axes; each pair of extents must be equal or one of them 1 (a 1 also stretches to 0).
//!
//! [`Broadcast`] turns the input shapes into a walk over the output in *segments*: runs of output
//! elements along which every input either advances by one element or stays put. Output axes of
//! extent 1 are dropped and neighbouring axes that every input reads contiguously are merged, so
//! equal shapes become one segment, a scalar operand becomes a stride-0 operand of one segment,
//! and a bias over the last axes becomes a contiguous inner loop under an outer odometer. Kernels
//! then write plain zipped loops over slices, which the compiler vectorises.

use rayon::prelude::*;
use smallvec::SmallVec;
use vinort_ir::tensor::{numel, strides_of};
use vinort_ir::{Elem, Error, Result, Shape, Tensor};

use crate::par;

/// The elementwise threshold under its old name (the family's tests use it).
#[cfg(test)]
pub(crate) use crate::par::ELEMENTWISE as PAR_THRESHOLD;

/// The broadcast of two shapes, or an error naming both.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Shape> {
    broadcast_shapes(&[a, b])
}

/// The broadcast of any number of shapes (the scalar shape for none).
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Shape> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out: Shape = smallvec::smallvec![1; rank];
    for s in shapes {
        let pad = rank - s.len();
        for (o, &e) in out[pad..].iter_mut().zip(s.iter()) {
            if *o == 1 {
                *o = e;
            } else if e != 1 && e != *o {
                let list: Vec<String> = shapes.iter().map(|s| format!("{s:?}")).collect();
                return Err(Error::invalid(format!("shapes {} cannot be broadcast together", list.join(" and "))));
            }
        }
    }
    Ok(out)
}

/// `vals` (of shape `from`) repeated out to shape `to` by numpy broadcasting of one operand to
/// a given shape (Expand's rule; quantization scales and zero points broadcast this way); an
/// error when `from` does not broadcast to `to`.
pub fn expand<T: Copy>(vals: &[T], from: &[usize], to: &[usize]) -> Result<Vec<T>> {
    let bad = || Error::invalid(format!("shape {from:?} does not broadcast to {to:?}"));
    if vals.len() != numel(from) {
        return Err(bad());
    }
    let bc = Broadcast::new([from, to]).map_err(|_| bad())?;
    if bc.shape() != to {
        return Err(bad());
    }
    let step = bc.inner_strides()[0];
    let mut out = Vec::with_capacity(bc.len());
    bc.for_segments(0, bc.len(), |_, [at, _], n| out.extend((0..n).map(|i| vals[at + i * step])));
    Ok(out)
}

/// A plan for walking the broadcast of `N` input shapes in contiguous segments.
#[derive(Clone, Debug)]
pub struct Broadcast<const N: usize> {
    shape: Shape,
    len: usize,
    /// Merged outer axes, outermost first: extent and per-input element stride.
    outer: SmallVec<[(usize, [usize; N]); 6]>,
    /// Length of the merged innermost axis (0 for an empty output).
    inner: usize,
    /// Per-input stride along the innermost axis: 1 (reads contiguously) or 0 (repeats).
    inner_strides: [usize; N],
}

impl<const N: usize> Broadcast<N> {
    /// Plans the broadcast of `shapes`; an error when they are incompatible.
    pub fn new(shapes: [&[usize]; N]) -> Result<Broadcast<N>> {
        let shape = broadcast_shapes(&shapes)?;
        let len = numel(&shape);
        let rank = shape.len();
        if len == 0 {
            return Ok(Broadcast { shape, len, outer: SmallVec::new(), inner: 0, inner_strides: [0; N] });
        }
        let in_strides: [Shape; N] = shapes.map(strides_of);
        let mut dims: SmallVec<[(usize, [usize; N]); 6]> = SmallVec::new();
        for (d, &extent) in shape.iter().enumerate() {
            if extent == 1 {
                continue;
            }
            let st: [usize; N] = std::array::from_fn(|i| {
                let pad = rank - shapes[i].len();
                match d.checked_sub(pad) {
                    Some(k) if shapes[i][k] != 1 => in_strides[i][k],
                    _ => 0,
                }
            });
            // An outer axis folds into the next one when, for every input, stepping it once is
            // the same as stepping the inner axis `extent` times.
            match dims.last_mut() {
                Some(last) if (0..N).all(|i| last.1[i] == st[i] * extent) => {
                    last.0 *= extent;
                    last.1 = st;
                }
                _ => dims.push((extent, st)),
            }
        }
        // Every output extent is 1: a single element read at offset 0 of each input.
        let (inner, inner_strides) = dims.pop().unwrap_or((1, [0; N]));
        Ok(Broadcast { shape, len, outer: dims, inner, inner_strides })
    }

    /// The output shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of output elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the output has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Length of the innermost (merged) run of the walk.
    pub fn inner(&self) -> usize {
        self.inner
    }

    /// Per-input stride along the innermost run: 1 when the input advances with the output,
    /// 0 when one of its elements repeats along the run.
    pub fn inner_strides(&self) -> [usize; N] {
        self.inner_strides
    }

    /// Calls `f(out_pos, offsets, n)` for consecutive segments covering output positions
    /// `start..end`: output elements `out_pos..out_pos + n` read input `i` from `offsets[i]`
    /// onwards with stride `inner_strides()[i]`.
    pub fn for_segments(&self, start: usize, end: usize, mut f: impl FnMut(usize, [usize; N], usize)) {
        let end = end.min(self.len);
        if start >= end || self.inner == 0 {
            return;
        }
        let inner = self.inner;
        let mut col = start % inner;
        let mut row = start / inner;
        let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, self.outer.len());
        let mut base = [0usize; N];
        for (d, (extent, st)) in self.outer.iter().enumerate().rev() {
            let k = row % extent;
            row /= extent;
            idx[d] = k;
            for i in 0..N {
                base[i] += k * st[i];
            }
        }
        let mut pos = start;
        while pos < end {
            let n = (inner - col).min(end - pos);
            let offs: [usize; N] = std::array::from_fn(|i| base[i] + col * self.inner_strides[i]);
            f(pos, offs, n);
            pos += n;
            col = 0;
            for (d, (extent, st)) in self.outer.iter().enumerate().rev() {
                idx[d] += 1;
                if idx[d] < *extent {
                    for i in 0..N {
                        base[i] += st[i];
                    }
                    break;
                }
                for i in 0..N {
                    base[i] -= st[i] * (extent - 1);
                }
                idx[d] = 0;
            }
        }
    }

    /// Runs `fill(start, out_chunk)` over `out` (the output buffer, `len()` long), in parallel
    /// chunks when the output is large enough to pay for it.
    pub fn fill_par<O: Send>(&self, out: &mut [O], fill: impl Fn(usize, &mut [O]) + Sync) {
        if out.len() >= par::ELEMENTWISE && !par::serial() {
            out.par_chunks_mut(par::ELEMENTWISE_CHUNK)
                .enumerate()
                .for_each(|(i, c)| fill(i * par::ELEMENTWISE_CHUNK, c));
        } else {
            fill(0, out);
        }
    }
}

/// Writes `f(a, b)` over the broadcast of `a` and `b` into `out` (which is `bc.len()` long).
/// The inner loops are plain slice zips, one per stride pattern.
pub fn binary_slices<A, B, O, F>(bc: &Broadcast<2>, a: &[A], b: &[B], out: &mut [O], f: F)
where
    A: Copy + Sync,
    B: Copy + Sync,
    O: Copy + Send,
    F: Fn(A, B) -> O + Sync,
{
    let [sa, sb] = bc.inner_strides();
    bc.fill_par(out, |start, chunk| {
        bc.for_segments(start, start + chunk.len(), |pos, [oa, ob], n| {
            let o = &mut chunk[pos - start..pos - start + n];
            // Offsets and lengths come from the plan, which only produces in-bounds runs for
            // inputs whose lengths match their shapes (as every Tensor's do).
            match (sa, sb) {
                (1, 1) => {
                    for ((o, x), y) in o.iter_mut().zip(&a[oa..oa + n]).zip(&b[ob..ob + n]) {
                        *o = f(*x, *y);
                    }
                }
                (1, _) => {
                    let y = b[ob];
                    for (o, x) in o.iter_mut().zip(&a[oa..oa + n]) {
                        *o = f(*x, y);
                    }
                }
                (_, 1) => {
                    let x = a[oa];
                    for (o, y) in o.iter_mut().zip(&b[ob..ob + n]) {
                        *o = f(x, *y);
                    }
                }
                _ => o.fill(f(a[oa], b[ob])),
            }
        })
    });
}

/// `f(a, b)` over the broadcast of two tensors, as a new tensor.
pub fn binary_map<A: Elem, B: Elem, O: Elem>(a: &Tensor, b: &Tensor, f: impl Fn(A, B) -> O + Sync) -> Result<Tensor> {
    let bc = Broadcast::new([a.shape(), b.shape()])?;
    // Initializers mapped from a model file may sit at any address; copy only those.
    let (a, b) = (a.to_aligned(), b.to_aligned());
    let (xa, xb) = (a.as_slice::<A>()?, b.as_slice::<B>()?);
    Ok(Tensor::build_full::<O>(bc.shape(), |out| binary_slices(&bc, xa, xb, out, f)))
}

/// Writes `f(&a, &b, &c)` over the broadcast of three inputs into `out`. Element types need
/// not be `Copy` (strings), so this indexes instead of zipping; it serves `Where`.
pub fn ternary_slices<A, B, C, O, F>(bc: &Broadcast<3>, a: &[A], b: &[B], c: &[C], out: &mut [O], f: F)
where
    A: Sync,
    B: Sync,
    C: Sync,
    O: Send,
    F: Fn(&A, &B, &C) -> O + Sync,
{
    let [sa, sb, sc] = bc.inner_strides();
    bc.fill_par(out, |start, chunk| {
        bc.for_segments(start, start + chunk.len(), |pos, [oa, ob, oc], n| {
            let o = &mut chunk[pos - start..pos - start + n];
            for (k, o) in o.iter_mut().enumerate() {
                *o = f(&a[oa + k * sa], &b[ob + k * sb], &c[oc + k * sc]);
            }
        })
    });
}

/// `f(x)` over every element of a tensor, as a new tensor of the same shape.
pub fn unary_map<I: Elem, O: Elem>(x: &Tensor, f: impl Fn(I) -> O + Sync) -> Result<Tensor> {
    let x = x.to_aligned();
    let xs = x.as_slice::<I>()?;
    Ok(Tensor::build_full::<O>(x.shape(), |out| unary_slices(xs, out, f)))
}

/// Writes `f(x)` for every element of `x` into `out` (of equal length), in parallel chunks above
/// [`par::ELEMENTWISE`].
pub fn unary_slices<I: Copy + Sync, O: Send>(x: &[I], out: &mut [O], f: impl Fn(I) -> O + Sync) {
    let run = |x: &[I], out: &mut [O]| {
        for (o, v) in out.iter_mut().zip(x) {
            *o = f(*v);
        }
    };
    if out.len() >= par::ELEMENTWISE && !par::serial() {
        out.par_chunks_mut(par::ELEMENTWISE_CHUNK)
            .zip(x.par_chunks(par::ELEMENTWISE_CHUNK))
            .for_each(|(o, x)| run(x, o));
    } else {
        run(x, out);
    }
}
