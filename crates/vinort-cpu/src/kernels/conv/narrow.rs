//! A Conv with few output pixels per image (an STFT written as a strided 1-D Conv, which
//! gives a handful of frames for hundreds of channels) as the transposed product
//! `Yᵀ = colᵀ · Wᵀ` with `Wᵀ` packed once ([`PackedB`]).
//!
//! im2col + GEMM computes `Y = W · col`, `[M × K] · [K × P]`: with P (the output pixels) under
//! a vector's width, the GEMM's tiles run mostly empty. Transposed, the pixels are the rows
//! and the M channels the packed columns, which is the shape the packed micro-kernel fills
//! (up to 12 rows × 32 columns in registers over all of K). The column matrix is transposed on
//! the way in and the `[P × M]` result on the way out: `K·P + P·M` copies against `M·K·P`
//! multiply-adds. Each output is one sum over the taps in order, as in the kernel it replaces
//! up to the order of that sum.

use std::cell::Cell;

use vinort_ir::{DType, Result};

use super::im2col::{Geo3, im2col, prod3};
use crate::kernel::NodeInfo;
use crate::kernels::linalg::packed::PackedB;

/// The most output pixels per image this path takes; from there on the GEMM's own tiles fill.
pub(crate) const MAX_PIXELS: usize = 16;

/// The fewest output channels worth packing (a column block is 16 wide).
const MIN_CHANNELS: usize = 16;

/// A regular (group 1) f32 Conv's constant weights, transposed and packed.
pub(crate) struct Narrow {
    b: PackedB,
}

thread_local! {
    /// This thread's column matrix, its transpose and the transposed output, kept across runs.
    static BUFS: Cell<[Vec<f32>; 3]> = const { Cell::new([Vec::new(), Vec::new(), Vec::new()]) };
}

impl Narrow {
    /// The packed weights, for a group-1 Conv with constant f32 weights of at least
    /// [`MIN_CHANNELS`] outputs on a CPU that runs the packed micro-kernel.
    pub(crate) fn new(info: &NodeInfo<'_>, group: i64) -> Option<Narrow> {
        let w = info.const_input(1)?;
        if group != 1 || w.dtype() != DType::F32 || w.rank() < 3 {
            return None;
        }
        let (m, kdim) = (w.shape()[0], w.shape()[1..].iter().product());
        Narrow::from_weights(w.to_aligned().as_slice::<f32>().ok()?, m, kdim)
    }

    /// From W as `M` rows of `kdim` (input channels × taps).
    fn from_weights(wv: &[f32], m: usize, kdim: usize) -> Option<Narrow> {
        if m < MIN_CHANNELS || kdim == 0 || wv.len() != m * kdim {
            return None;
        }
        let mut t = vec![0f32; kdim * m];
        for (mi, row) in wv.chunks_exact(kdim).enumerate() {
            for (k, v) in row.iter().enumerate() {
                t[k * m + mi] = *v;
            }
        }
        Some(Narrow { b: PackedB::new(&t, kdim, m)? })
    }

    /// True when the geometry is one this path computes: group 1, the packed shape, and at
    /// most [`MAX_PIXELS`] output pixels per image.
    pub(crate) fn takes(&self, g: &Geo3) -> bool {
        let po = prod3(&g.o);
        g.group == 1 && po > 0 && po <= MAX_PIXELS && self.b.shape() == [g.c * prod3(&g.k), g.m]
    }

    /// One image: `y` (`M × P`) from its input planes `x`, plus `bias` (M values).
    pub(crate) fn image(&self, g: &Geo3, x: &[f32], bias: Option<&[f32]>, y: &mut [f32]) -> Result<()> {
        let ([k, m], po) = (self.b.shape(), prod3(&g.o));
        let [mut col, mut rows, mut yt] = BUFS.take();
        col.resize(k * po, 0.0);
        rows.resize(po * k, 0.0);
        yt.resize(po * m, 0.0);
        im2col(g, g.c, x, &mut col);
        for (ki, taps) in col.chunks_exact(po).enumerate() {
            for (p, v) in taps.iter().enumerate() {
                rows[p * k + ki] = *v;
            }
        }
        let done = self.b.product(&rows, &mut yt, bias, None, None);
        if done.is_ok() {
            for (p, px) in yt.chunks_exact(m).enumerate() {
                for (mi, v) in px.iter().enumerate() {
                    y[mi * po + p] = *v;
                }
            }
        }
        BUFS.set([col, rows, yt]);
        done
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::test_support::config;

    /// The definition, in f64: `y[o][r][c] = b[o] + Σ w[o][ci][ky][kx] · x[ci][r·sh + ky·dh − ph][c·sw + kx·dw − pw]`
    /// over the taps inside the input.
    fn naive(g: &Geo3, x: &[f32], w: &[f32], b: &[f32]) -> Vec<f64> {
        let ([_, h, wd], [_, oh, ow], [_, kh, kw]) = (g.i, g.o, g.k);
        let ([_, sh, sw], [_, dh, dw], [_, ph, pw]) = (g.s, g.d, g.p);
        let mut y = vec![0.0; g.m * oh * ow];
        for o in 0..g.m {
            for r in 0..oh {
                for c in 0..ow {
                    let mut acc = f64::from(b[o]);
                    for ci in 0..g.c {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (r * sh + ky * dh) as isize - ph;
                                let ix = (c * sw + kx * dw) as isize - pw;
                                if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                                    let wv = w[((o * g.c + ci) * kh + ky) * kw + kx];
                                    acc += f64::from(wv) * f64::from(x[(ci * h + iy as usize) * wd + ix as usize]);
                                }
                            }
                        }
                    }
                    y[(o * oh + r) * ow + c] = acc;
                }
            }
        }
        y
    }

    proptest! {
        #![proptest_config(config(64))]

        /// An image of few output pixels (1-D or 2-D, any window, stride, dilation and padding)
        /// equals the definition; a geometry of more pixels is left to the GEMM path.
        #[test]
        fn few_pixels_match_definition(c in 1usize..5, m in 16usize..40, h in 1usize..12, wd in 1usize..40,
                                       kh in 1usize..4, kw in 1usize..6, sh in 1usize..4, sw in 1usize..9,
                                       dh in 1usize..3, dw in 1usize..3, ph in 0usize..2, pw in 0usize..3,
                                       one_d in any::<bool>(), seed in any::<u64>()) {
            let (h, kh, dh, ph) = if one_d { (1, 1, 1, 0) } else { (h, kh, dh, ph) };
            let span = |i: usize, k: usize, d: usize, p: usize, s: usize| (i + 2 * p).checked_sub((k - 1) * d + 1).map(|v| v / s + 1);
            let (Some(oh), Some(ow)) = (span(h, kh, dh, ph, sh), span(wd, kw, dw, pw, sw)) else { return Ok(()) };
            let g = Geo3 { n: 1, c, m, group: 1, i: [1, h, wd], o: [1, oh, ow], k: [1, kh, kw],
                           s: [1, sh, sw], d: [1, dh, dw], p: [0, ph as isize, pw as isize] };
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut draw = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0..1.0)).collect() };
            let (x, w, b) = (draw(c * h * wd), draw(m * c * kh * kw), draw(m));
            // The packed micro-kernel needs AVX2 or better; below, the GEMM path keeps every conv.
            let narrow = Narrow::from_weights(&w, m, c * kh * kw);
            prop_assert_eq!(narrow.is_some(), crate::kernels::conv::nchwc::available());
            let Some(narrow) = narrow else { return Ok(()) };
            prop_assert_eq!(narrow.takes(&g), oh * ow <= MAX_PIXELS);
            if !narrow.takes(&g) {
                return Ok(());
            }
            let mut y = vec![f32::NAN; m * oh * ow];
            narrow.image(&g, &x, Some(&b), &mut y).unwrap_or_else(|e| panic!("{e}"));
            for (i, (got, want)) in y.iter().zip(naive(&g, &x, &w, &b)).enumerate() {
                prop_assert!((f64::from(*got) - want).abs() < 1e-5 * (1.0 + want.abs()) * (c * kh * kw) as f64, "element {i}: {got} vs {want}");
            }
        }
    }
}
