//! The reorders into and out of the blocked layout.

use vinort_ir::{Error, Result, RunContext, Tensor, Value, Values};

use super::{BLOCK, blocks, input_f32};
use crate::kernel::Kernel;

/// `[N, C, H, W]` → `[N, ⌈C/16⌉, H, W, 16]`, padding lanes zero. C must be the count the
/// layout pass planned for (the blocked value cannot say how many lanes are channels).
pub(super) struct ReorderInput {
    pub channels: usize,
}

impl Kernel for ReorderInput {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, s) = input_f32(inputs, 0)?;
        let &[n, c, h, w] = s.as_slice() else {
            return Err(Error::invalid(format!("ReorderInput takes [N, C, H, W], got {s:?}")));
        };
        if c != self.channels {
            return Err(Error::invalid(format!("X has {c} channels where the Conv's weights take {}", self.channels)));
        }
        let x = x.as_slice::<f32>()?;
        let (cb, plane) = (blocks(c), h * w);
        let y = Tensor::try_build_full::<f32, Error>(&[n, cb, h, w, BLOCK], |y| {
            for_each_plane(y, plane * BLOCK, |j, yb| {
                let (img, b) = (j / cb, j % cb);
                let lanes = (c - b * BLOCK).min(BLOCK);
                let src = &x[(img * c + b * BLOCK) * plane..][..lanes * plane];
                for (p, px) in yb.chunks_exact_mut(BLOCK).enumerate() {
                    for (l, v) in px[..lanes].iter_mut().enumerate() {
                        *v = src[l * plane + p];
                    }
                    px[lanes..].fill(0.0);
                }
            });
            Ok(())
        })?;
        Ok(smallvec::smallvec![y.into()])
    }
}

/// `[N, ⌈C/16⌉, H, W, 16]` → `[N, C, H, W]`, dropping the padding lanes.
pub(super) struct ReorderOutput {
    pub channels: usize,
}

impl Kernel for ReorderOutput {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (x, s) = input_f32(inputs, 0)?;
        let c = self.channels;
        let &[n, cb, h, w, BLOCK] = s.as_slice() else {
            return Err(Error::invalid(format!("ReorderOutput takes [N, Cb, H, W, {BLOCK}], got {s:?}")));
        };
        if cb != blocks(c) {
            return Err(Error::invalid(format!("ReorderOutput of {c} channels got {cb} blocks")));
        }
        let x = x.as_slice::<f32>()?;
        let plane = h * w;
        let y = Tensor::try_build_full::<f32, Error>(&[n, c, h, w], |y| {
            for_each_plane(y, plane, |j, yc| {
                let (img, ch) = (j / c.max(1), j % c.max(1));
                let src = &x[(img * cb + ch / BLOCK) * plane * BLOCK..][..plane * BLOCK];
                for (v, px) in yc.iter_mut().zip(src.chunks_exact(BLOCK)) {
                    *v = px[ch % BLOCK];
                }
            });
            Ok(())
        })?;
        Ok(smallvec::smallvec![y.into()])
    }
}

/// A copy of `rows` rows of `iw` pixels of `e` elements each, `pl` zero pixels before every
/// row and `pr` after: the input of a regular conv whose windows cross the left or right
/// edge, so that every output pixel of a row is read as one interior tile.
pub(super) fn pad_columns(x: &[f32], rows: usize, iw: usize, e: usize, pl: usize, pr: usize) -> Result<Tensor> {
    let (src, dst) = (iw * e, (pl + iw + pr) * e);
    if x.len() != rows * src {
        return Err(Error::invalid("NCHWc Conv input does not match its shape"));
    }
    let len = rows.checked_mul(dst).ok_or_else(|| Error::invalid("NCHWc Conv padded input too large"))?;
    Tensor::try_build_full::<f32, Error>(&[len], |y| {
        for_each_plane(y, dst, |row, out| {
            out[..pl * e].fill(0.0);
            out[pl * e..pl * e + src].copy_from_slice(&x[row * src..][..src]);
            out[pl * e + src..].fill(0.0);
        });
        Ok(())
    })
}

/// Runs `f(index, chunk)` over `y` in chunks of `len`, on rayon when `y` is large.
fn for_each_plane(y: &mut [f32], len: usize, f: impl Fn(usize, &mut [f32]) + Sync) {
    use rayon::prelude::*;
    if len == 0 {
        return;
    }
    if crate::par::worth(y.len(), crate::par::ELEMENTWISE) {
        y.par_chunks_mut(len).enumerate().for_each(|(j, c)| f(j, c));
    } else {
        y.chunks_mut(len).enumerate().for_each(|(j, c)| f(j, c));
    }
}
