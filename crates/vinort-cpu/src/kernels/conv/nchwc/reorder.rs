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
                // In tiles of pixels, lane by lane: each lane's run of the tile is read
                // contiguously into the tile's blocked pixels, which stay in L1.
                for p0 in (0..plane).step_by(TILE_PIXELS) {
                    let p1 = (p0 + TILE_PIXELS).min(plane);
                    let tile = &mut yb[p0 * BLOCK..p1 * BLOCK];
                    for (l, run) in src.chunks_exact(plane).enumerate() {
                        for (px, v) in tile.chunks_exact_mut(BLOCK).zip(&run[p0..p1]) {
                            px[l] = *v;
                        }
                    }
                    if lanes < BLOCK {
                        tile.chunks_exact_mut(BLOCK).for_each(|px| px[lanes..].fill(0.0));
                    }
                }
            });
            Ok(())
        })?;
        Ok(smallvec::smallvec![y.into()])
    }
}

/// Pixels per tile of the reorders: 4 KiB of blocked values.
const TILE_PIXELS: usize = 64;

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
            // Sixteen output planes at a time (channels j·16 .. of all images' channels in a
            // row), walked in tiles of pixels: a tile's blocked pixels stay in L1 while every
            // plane takes its lane of them. A plane at a time read each blocked pixel, a whole
            // cache line, for one of its lanes.
            for_each_plane(y, plane * BLOCK, |j, ys| {
                for p0 in (0..plane).step_by(TILE_PIXELS) {
                    let p1 = (p0 + TILE_PIXELS).min(plane);
                    for (i, yc) in ys.chunks_exact_mut(plane).enumerate() {
                        let at = j * BLOCK + i;
                        let (img, ch) = (at / c.max(1), at % c.max(1));
                        let src = &x[(img * cb + ch / BLOCK) * plane * BLOCK..][..plane * BLOCK];
                        let lane = ch % BLOCK;
                        for (v, px) in yc[p0..p1].iter_mut().zip(src[p0 * BLOCK..p1 * BLOCK].chunks_exact(BLOCK)) {
                            *v = px[lane];
                        }
                    }
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
