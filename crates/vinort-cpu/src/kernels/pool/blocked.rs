//! MaxPool (values only, 2-D, f32) in the blocked NCHWc layout `[N, ⌈C/16⌉, H, W, 16]`, placed
//! by the optimizer's layout pass after a blocked Conv, so a CNN's stem pool neither leaves the
//! layout (two reorders) nor runs the NCHW walk, which compares one element at a time along
//! strided rows (ResNet's 3x3/2 stem pool took 1.4 ms there; here 16 channels are one vector).
//!
//! Windows are clipped to the input per axis; each output lane is the first tap's value, then
//! replaced by any later tap's greater value, which is the NCHW kernel's rule, so the two agree
//! bit for bit (NaN included: a NaN first tap stays, a later NaN is never greater). An empty
//! window (pads at least the kernel; the layout pass takes none) gives −∞ like the NCHW kernel.

use rayon::prelude::*;
use smallvec::SmallVec;
use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo};
use crate::kernels::conv::nchwc::{BLOCK, input_f32};
use crate::kernels::window::WindowAttrs;
use crate::per_shape::PerShape;

/// A blocked MaxPool.
pub(crate) struct BlockedMaxPool {
    win: WindowAttrs,
    kernel: [usize; 2],
    /// For the last input extents: the output extents and each output row's and column's
    /// input taps.
    windows: PerShape<Windows>,
}

/// Output extents and the taps of every output row and column.
struct Windows {
    out: [usize; 2],
    rows: Vec<SmallVec<[usize; 4]>>,
    cols: Vec<SmallVec<[usize; 4]>>,
}

impl BlockedMaxPool {
    pub(crate) fn new(info: &NodeInfo<'_>) -> Result<BlockedMaxPool> {
        let node = info.node;
        if node.outputs.get(1).is_some_and(Option::is_some) {
            return Err(Error::invalid("an NCHWc MaxPool computes values only, not Indices"));
        }
        let win = WindowAttrs::parse(node)?;
        let kernel = match win.kernel.as_deref() {
            Some(&[kh, kw]) if kh > 0 && kw > 0 => [kh, kw],
            other => return Err(Error::invalid(format!("an NCHWc MaxPool needs a 2-D kernel_shape, got {other:?}"))),
        };
        Ok(BlockedMaxPool { win, kernel, windows: PerShape::default() })
    }
}

/// The input positions each output position's window covers inside an input of `len`.
fn taps(len: usize, out: usize, k: usize, s: usize, d: usize, pad: usize) -> Vec<SmallVec<[usize; 4]>> {
    (0..out).map(|o| (0..k).filter_map(|t| (o * s + t * d).checked_sub(pad).filter(|p| *p < len)).collect()).collect()
}

impl Kernel for BlockedMaxPool {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, s) = input_f32(inputs, 0)?;
        let &[n, cb, h, w, BLOCK] = s.as_slice() else {
            return Err(Error::invalid(format!("an NCHWc MaxPool takes [N, C/16, H, W, 16], got {s:?}")));
        };
        let windows = self.windows.get(&[h, w], || {
            let win = self.win.resolve(&self.kernel)?;
            let g = win.geometry(&[h, w])?;
            let [oh, ow] = [g.out[0], g.out[1]];
            Ok(Windows {
                out: [oh, ow],
                rows: taps(h, oh, self.kernel[0], win.strides[0], win.dilations[0], g.pad_begin[0]),
                cols: taps(w, ow, self.kernel[1], win.strides[1], win.dilations[1], g.pad_begin[1]),
            })
        })?;
        let ([oh, ow], rows, cols) = (windows.out, &windows.rows, &windows.cols);
        let x = x.as_slice::<f32>()?;
        let y = Tensor::try_build_full::<f32, Error>(&[n, cb, oh, ow, BLOCK], |y| {
            if y.is_empty() {
                return Ok(());
            }
            let (row_in, row_out) = (w * BLOCK, ow * BLOCK);
            // One task per output row of a plane: (plane, output row).
            let task = |(t, yr): (usize, &mut [f32])| {
                let (plane, oy) = (t / oh, t % oh);
                let xp = &x[plane * h * row_in..][..h * row_in];
                #[cfg(target_arch = "x86_64")]
                if crate::isa::avx512() {
                    // SAFETY: the CPU running this code has AVX-512F (checked just above).
                    return unsafe { row_avx512(xp, row_in, &rows[oy], cols, yr) };
                }
                #[cfg(target_arch = "x86_64")]
                if crate::isa::avx2() {
                    // SAFETY: the CPU running this code has AVX2 (checked just above).
                    return unsafe { row_avx2(xp, row_in, &rows[oy], cols, yr) };
                }
                row(xp, row_in, &rows[oy], cols, yr)
            };
            if crate::par::worth(y.len() * self.kernel[0] * self.kernel[1], crate::par::ELEMENTS) {
                y.par_chunks_mut(row_out).enumerate().for_each(task);
            } else {
                y.chunks_mut(row_out).enumerate().for_each(task);
            }
            Ok(())
        })?;
        Ok(smallvec::smallvec![y.into()])
    }
}

/// [`row`] compiled for AVX-512, so a pixel's 16 lanes are one vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn row_avx512(xp: &[f32], row_in: usize, rows: &[usize], cols: &[SmallVec<[usize; 4]>], y: &mut [f32]) {
    row(xp, row_in, rows, cols, y)
}

/// [`row`] compiled for AVX2: a pixel's 16 lanes are two vectors.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn row_avx2(xp: &[f32], row_in: usize, rows: &[usize], cols: &[SmallVec<[usize; 4]>], y: &mut [f32]) {
    row(xp, row_in, rows, cols, y)
}

/// One output row: for each pixel, the lane-wise max over the input rows `rows` × its columns.
#[inline(always)]
fn row(xp: &[f32], row_in: usize, rows: &[usize], cols: &[SmallVec<[usize; 4]>], y: &mut [f32]) {
    for (yp, cs) in y.chunks_exact_mut(BLOCK).zip(cols) {
        let mut best = [f32::NEG_INFINITY; BLOCK];
        let mut first = true;
        for &r in rows {
            for &c in cs {
                let v: &[f32; BLOCK] = xp[r * row_in + c * BLOCK..][..BLOCK].try_into().unwrap_or(&[0.0; BLOCK]);
                if first {
                    best = *v;
                    first = false;
                } else {
                    for l in 0..BLOCK {
                        best[l] = if v[l] > best[l] { v[l] } else { best[l] };
                    }
                }
            }
        }
        yp.copy_from_slice(&best);
    }
}
