//! The separable resampling passes behind [Resize](https://onnx.ai/onnx/operators/onnx__Resize.html)
//! and [Upsample](https://onnx.ai/onnx/operators/onnx__Upsample.html): a weighted pass per
//! resized axis for `linear` and `cubic` (in f32, or f64 for f64 data), and one gather for
//! `nearest` (every element type, strings included).

use rayon::prelude::*;
use vinort_ir::tensor::{numel, strides_of};
use vinort_ir::{DType, Error, Result, Tensor};

use super::resize::{Plan, Resize};
use super::{Acc, PAR_MIN, load_acc, scalar_bytes, store_acc};

/// The weighted input positions of every output position of one axis.
pub(crate) struct Taps<A> {
    /// Taps per output position.
    pub n: usize,
    /// Input index of each tap (clamped into range).
    pub idx: Vec<usize>,
    /// Weight of each tap.
    pub w: Vec<A>,
    /// Output positions that take the extrapolation value instead.
    pub skip: Vec<bool>,
}

/// Resamples axis `a` of `src` (shape `shape`) to `taps.skip.len()` positions.
fn pass<A: Acc>(src: &[A], shape: &[usize], a: usize, taps: &Taps<A>, fill: A) -> Vec<A> {
    let (li, lo) = (shape[a], taps.skip.len());
    let outer = numel(&shape[..a]);
    let inner = numel(&shape[a + 1..]);
    let mut out = vec![A::default(); outer * lo * inner];
    if out.is_empty() {
        return out;
    }
    let block = |ob: usize, dst: &mut [A]| {
        let srcb = &src[ob * li * inner..(ob + 1) * li * inner];
        for (o, row) in dst.chunks_exact_mut(inner).enumerate() {
            if taps.skip[o] {
                row.fill(fill);
                continue;
            }
            for t in 0..taps.n {
                let w = taps.w[o * taps.n + t];
                if w == A::default() {
                    continue;
                }
                let s = &srcb[taps.idx[o * taps.n + t] * inner..][..inner];
                for (d, s) in row.iter_mut().zip(s) {
                    *d += w * *s;
                }
            }
        }
    };
    if !crate::par::worth(out.len() * taps.n, PAR_MIN) || outer < 2 {
        for (ob, dst) in out.chunks_exact_mut(lo * inner).enumerate() {
            block(ob, dst);
        }
    } else {
        out.par_chunks_mut(lo * inner).enumerate().for_each(|(ob, dst)| block(ob, dst));
    }
    out
}

/// Gathers `src` (elements of `T`, shape `in_shape`) into `out` of shape `out_shape`: output
/// index `o` along axis `a` reads input index `maps[a][o]` (None writes `fill`).
fn gather<T: Copy + Send + Sync>(
    src: &[T],
    in_shape: &[usize],
    out: &mut [T],
    out_shape: &[usize],
    maps: &[Vec<Option<usize>>],
    fill: T,
) {
    let r = out_shape.len();
    if out.is_empty() {
        return;
    }
    if r == 0 {
        out[0] = src[0];
        return;
    }
    let ist = strides_of(in_shape);
    let row = out_shape[r - 1];
    let last = &maps[r - 1];
    let fill_row = |ri: usize, dst: &mut [T]| {
        let mut rem = ri;
        let mut base = Some(0usize);
        for a in (0..r - 1).rev() {
            let i = rem % out_shape[a];
            rem /= out_shape[a];
            base = match (base, maps[a][i]) {
                (Some(b), Some(m)) => Some(b + m * ist[a]),
                _ => None,
            };
        }
        match base {
            None => dst.fill(fill),
            Some(b) => {
                for (d, m) in dst.iter_mut().zip(last) {
                    *d = match m {
                        Some(m) => src[b + m],
                        None => fill,
                    };
                }
            }
        }
    };
    if row == 0 {
        return;
    }
    if !crate::par::worth(out.len(), PAR_MIN) {
        out.chunks_exact_mut(row).enumerate().for_each(|(i, d)| fill_row(i, d));
    } else {
        let per = (PAR_MIN / 4 / row).max(1);
        out.par_chunks_mut(per * row).enumerate().for_each(|(c, block)| {
            for (k, d) in block.chunks_exact_mut(row).enumerate() {
                fill_row(c * per + k, d);
            }
        });
    }
}

impl Resize {
    pub(crate) fn run_nearest(&self, x: &Tensor, p: &Plan) -> Result<Tensor> {
        let r = p.in_shape.len();
        let maps: Vec<Vec<Option<usize>>> = (0..r)
            .map(|a| if p.axes.contains(&a) { self.nearest_map(p, a) } else { (0..p.in_shape[a]).map(Some).collect() })
            .collect();
        let dtype = x.dtype();
        if dtype == DType::String {
            let s = x.as_strings()?;
            let mut out = vec![String::new(); numel(&p.out_shape)];
            gather_strings(s, &p.in_shape, &mut out, &p.out_shape, &maps);
            return Tensor::from_strings(&p.out_shape, out);
        }
        let fill = scalar_bytes(dtype, self.extrapolation).unwrap_or_else(|_| vec![0; dtype.size()]);
        let src = x.as_bytes();
        match dtype.size() {
            1 => gather_pod::<u8>(src, &fill, dtype, p, &maps),
            2 => gather_pod::<u16>(src, &fill, dtype, p, &maps),
            4 => gather_pod::<u32>(src, &fill, dtype, p, &maps),
            8 => gather_pod::<u64>(src, &fill, dtype, p, &maps),
            16 => gather_pod::<u128>(src, &fill, dtype, p, &maps),
            _ => Err(Error::unsupported(format!("Resize of {dtype}"))),
        }
    }

    pub(crate) fn run_interp<A: Acc>(&self, x: &Tensor, p: &Plan) -> Result<Tensor> {
        let mut cur = load_acc::<A>(x)?;
        let mut shape = p.in_shape.clone();
        let fill = A::from_f64(self.extrapolation);
        for &a in &p.axes {
            let taps = self.taps::<A>(p, a);
            cur = pass(&cur, &shape, a, &taps, fill);
            shape[a] = p.out_shape[a];
        }
        store_acc(x.dtype(), &p.out_shape, &cur)
    }
}

fn gather_strings(
    src: &[String],
    in_shape: &[usize],
    out: &mut [String],
    out_shape: &[usize],
    maps: &[Vec<Option<usize>>],
) {
    let ist = strides_of(in_shape);
    for (i, o) in out.iter_mut().enumerate() {
        let mut rem = i;
        let mut off = Some(0usize);
        for a in (0..out_shape.len()).rev() {
            let k = rem % out_shape[a];
            rem /= out_shape[a];
            off = match (off, maps[a][k]) {
                (Some(b), Some(m)) => Some(b + m * ist[a]),
                _ => None,
            };
        }
        if let Some(s) = off.and_then(|o| src.get(o)) {
            o.clone_from(s);
        }
    }
}

/// The nearest-mode gather on the raw elements of a fixed-size type, viewed as the unsigned
/// integer `T` of the same width (the gather only moves elements).
fn gather_pod<T: bytemuck::Pod + Default + Send + Sync>(
    src: &[u8],
    fill: &[u8],
    dtype: DType,
    p: &Plan,
    maps: &[Vec<Option<usize>>],
) -> Result<Tensor> {
    let s: &[T] = bytemuck::try_cast_slice(src).map_err(|_| Error::Misaligned { dtype })?;
    let f: T = bytemuck::try_pod_read_unaligned(fill).unwrap_or_default();
    Tensor::build_raw(dtype, &p.out_shape, |o| {
        if let Ok(o) = bytemuck::try_cast_slice_mut::<u8, T>(o) {
            gather(s, &p.in_shape, o, &p.out_shape, maps, f);
        }
    })
}
