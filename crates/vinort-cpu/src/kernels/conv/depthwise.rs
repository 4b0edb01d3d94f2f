//! The depthwise convolution of one (image, channel) plane, shared by Conv (f32, f64) and the
//! integer convolutions (which run it in f32, exactly, on windows small enough that every
//! partial sum is an integer below 2²⁴).
//!
//! One to two spatial axes (the usual case) go through [`shifted_2d`]: the input is copied once
//! into a zero-padded plane, split by stride phase, laid out so that every kernel tap is one
//! constant shift of it. Every tap is then a single multiply-add over one long contiguous run
//! covering all output rows at once (the few padding columns between rows are computed and
//! dropped), so a 7x7 plane costs as little per element as a 112x112 one: no per-row, per-tap
//! bounds work, and the innermost loop is as long as the plane, which the compiler vectorizes.
//! Three spatial axes walk output rows ([`depthwise_plane_portable`]'s row loop).

use smallvec::SmallVec;

use super::im2col::Geo3;
use crate::kernels::linalg::common::Real;
use crate::kernels::window::valid_range;

/// A depthwise conv of one plane, dispatched at run time: the same loops compiled for
/// AVX-512 or AVX2+FMA when the CPU has them, else the portable build. Adds to `y` (which
/// holds the bias, or zeros). `scratch` is working memory, reused across calls.
pub(crate) fn depthwise_plane<T: Real>(g: &Geo3, x: &[T], w: &[T], y: &mut [T], scratch: &mut Vec<T>) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::isa::avx512() {
            // SAFETY: the CPU running this code supports AVX-512F (checked just above).
            return unsafe { depthwise_plane_avx512(g, x, w, y, scratch) };
        }
        if crate::isa::avx2() {
            // SAFETY: the CPU running this code supports AVX2 and FMA (checked just above).
            return unsafe { depthwise_plane_avx2(g, x, w, y, scratch) };
        }
    }
    depthwise_plane_portable(g, x, w, y, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn depthwise_plane_avx512<T: Real>(g: &Geo3, x: &[T], w: &[T], y: &mut [T], scratch: &mut Vec<T>) {
    depthwise_plane_portable(g, x, w, y, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn depthwise_plane_avx2<T: Real>(g: &Geo3, x: &[T], w: &[T], y: &mut [T], scratch: &mut Vec<T>) {
    depthwise_plane_portable(g, x, w, y, scratch)
}

/// One depthwise tap: its weight, input offsets and the output range it reaches on a row.
type Tap<T> = (T, [isize; 3], (usize, usize));

/// Output row by output row (so the row stays in L1 while every tap adds to it), `y += w[k] *
/// shifted x` with the innermost loop a bounds-check-free multiply-add over contiguous memory
/// (written so the compiler vectorizes it). A stride `s` along the last axis is first undone by
/// splitting each input row into its `s` phases (elements `q, q+s, q+2s...`), so a tap reads
/// one phase contiguously.
#[inline(always)]
fn depthwise_plane_portable<T: Real>(g: &Geo3, x: &[T], w: &[T], y: &mut [T], scratch: &mut Vec<T>) {
    // A 3-D conv whose depth axis is one slice, unpadded at the front, is a 2-D conv writing
    // output slice 0 (later slices, from end padding, read only padding: they keep `y`).
    if g.i[0] == 1 && g.k[0] == 1 && g.p[0] == 0 && g.p.iter().all(|p| *p >= 0) {
        return shifted_2d(g, x, w, y, scratch);
    }
    let ([i0, i1, i2], [_, o1, o2], [s0, s1, s2]) = (g.i, g.o, g.s);
    // Phase q of row r starts at `phase_start[q] + r * phase_len[q]` of `src`. Small vectors on
    // the stack: this runs once per (image, channel), thousands of times per inference.
    let mut phase_len: SmallVec<[usize; 4]> = SmallVec::new();
    let src: &[T] = if s2 == 1 {
        phase_len.push(i2);
        x
    } else {
        phase_len.extend((0..s2).map(|q| (i2 + s2 - 1 - q) / s2));
        scratch.clear();
        for q in 0..s2 {
            for row in x.chunks_exact(i2) {
                scratch.extend(row.iter().skip(q).step_by(s2));
            }
        }
        scratch.as_slice()
    };
    let rows = i0 * i1;
    let phase_start: SmallVec<[usize; 4]> =
        phase_len.iter().scan(0, |acc, l| Some(std::mem::replace(acc, *acc + l * rows))).collect();
    let taps: SmallVec<[Tap<T>; 32]> = w
        .iter()
        .zip(g.tap_offsets())
        .map(|(&wv, off)| (wv, off, valid_range(o2, i2, s2, off[2])))
        .filter(|(_, _, (lo, hi))| lo < hi)
        .collect();
    for (r0, dst0) in y.chunks_mut(o1 * o2).enumerate() {
        for (r1, dst) in dst0.chunks_mut(o2).enumerate() {
            for &(wv, [off0, off1, off2], (lo, hi)) in &taps {
                let y0 = (r0 * s0) as isize + off0;
                let y1 = (r1 * s1) as isize + off1;
                if y0 < 0 || y0 >= i0 as isize || y1 < 0 || y1 >= i1 as isize {
                    continue;
                }
                // Input column of output lo: lo*s2 + off2 = q + s2*j.
                let col = lo as isize * s2 as isize + off2;
                let q = col.rem_euclid(s2 as isize) as usize;
                let j = ((col - q as isize) / s2 as isize) as usize;
                let row = y0 as usize * i1 + y1 as usize;
                let base = phase_start[q] + row * phase_len[q] + j;
                for (dv, sv) in dst[lo..hi].iter_mut().zip(&src[base..base + (hi - lo)]) {
                    *dv += wv * *sv;
                }
            }
        }
    }
}

/// Output elements per block of [`shifted_2d`]'s tap loop: every tap adds into the same 16 KiB
/// (f32) of accumulators, which stay in L1 while the taps stream through.
const BLOCK: usize = 4096;

/// The 2-D (or 1-D) depthwise plane by shifted runs. With `(sh, sw)` the strides, the zero-padded
/// input `P` (padded row `a`, column `b`) is stored as `sh × sw` phase planes of `hp × wp`
/// (element `P[a][b]` at phase `(a % sh, b % sw)`, position `(a / sh, b / sw)`), sized so that
/// output `(r, c)` of tap `(ky, kx)` reads phase `(ky·dh % sh, kx·dw % sw)` at `(r + ky·dh / sh,
/// c + kx·dw / sw)`. In a phase plane of row length `wp`, that is output index `r·wp + c` plus
/// a constant, for every output: one contiguous run per tap.
#[inline(always)]
fn shifted_2d<T: Real>(g: &Geo3, x: &[T], w: &[T], y: &mut [T], scratch: &mut Vec<T>) {
    let ([_, h, wd], [_, oh, ow], [_, kh, kw]) = (g.i, g.o, g.k);
    let ([_, sh, sw], [_, dh, dw], [_, ph, pw]) = (g.s, g.d, g.p);
    let (ph, pw) = (ph as usize, pw as usize);
    if oh == 0 || ow == 0 || kh == 0 || kw == 0 {
        // No output, or no taps: y keeps what it holds.
        return;
    }
    let hp = oh + (kh - 1) * dh / sh;
    let wp = ow + (kw - 1) * dw / sw;
    let plane = hp * wp;
    let len = (oh - 1) * wp + ow;
    scratch.clear();
    scratch.resize(sh * sw * plane + len.min(BLOCK), T::ZERO);
    let (phases, acc) = scratch.split_at_mut(sh * sw * plane);
    for qr in 0..sh {
        for qc in 0..sw {
            let p = &mut phases[(qr * sw + qc) * plane..][..plane];
            // Phase columns cc hold input column cc·sw + qc − pw when that is inside the input.
            let c_lo = pw.saturating_sub(qc).div_ceil(sw);
            let c_hi = (wd + pw).saturating_sub(qc).div_ceil(sw).min(wp);
            if c_lo >= c_hi {
                continue;
            }
            let ix0 = c_lo * sw + qc - pw;
            for (rr, dst) in p.chunks_exact_mut(wp).enumerate() {
                let Some(iy) = (rr * sh + qr).checked_sub(ph).filter(|iy| *iy < h) else { continue };
                let src = &x[iy * wd + ix0..(iy + 1) * wd];
                if sw == 1 {
                    dst[c_lo..c_hi].copy_from_slice(&src[..c_hi - c_lo]);
                } else {
                    dst[c_lo..c_hi].iter_mut().zip(src.iter().step_by(sw)).for_each(|(d, s)| *d = *s);
                }
            }
        }
    }
    // Each tap's phase plane and shift.
    let taps: SmallVec<[(T, usize); 32]> = (0..kh)
        .flat_map(|ky| (0..kw).map(move |kx| (ky * dh, kx * dw)))
        .zip(w)
        .map(|((a, b), &wv)| (wv, ((a % sh) * sw + b % sw) * plane + (a / sh) * wp + b / sw))
        .collect();
    for b0 in (0..len).step_by(BLOCK) {
        let n = (len - b0).min(BLOCK);
        let acc = &mut acc[..n];
        sum_taps(&taps, &phases[b0..], acc);
        // Output (r, c) is accumulator r·wp + c; columns ow.. of a row are padding.
        for r in b0 / wp..=(b0 + n - 1) / wp {
            let (s, e) = ((r * wp).max(b0), (r * wp + ow).min(b0 + n));
            if s < e {
                let dst = &mut y[r * ow + (s - r * wp)..][..e - s];
                dst.iter_mut().zip(&acc[s - b0..e - b0]).for_each(|(d, a)| *d += *a);
            }
        }
    }
}

/// Outputs per register block of [`sum_taps`]: four AVX-512 registers of f32.
const RUN: usize = 64;

/// `acc[i] = Σ w · src[base + i]` over the taps, in tap order from zero, a block of [`RUN`]
/// outputs at a time held in registers through every tap: one load per tap and one store per
/// output, where a pass per tap over the whole block loaded and stored the sums nine times
/// for a 3 × 3 kernel (the loop was bound by those loads and stores, 2.4× onnxruntime's
/// blocked depthwise kernel on a 56 × 56 plane).
#[inline(always)]
fn sum_taps<T: Real>(taps: &[(T, usize)], src: &[T], acc: &mut [T]) {
    let mut blocks = acc.chunks_exact_mut(RUN);
    let mut o = 0;
    for out in &mut blocks {
        let mut a = [T::ZERO; RUN];
        for &(wv, base) in taps {
            for (s, v) in a.iter_mut().zip(&src[base + o..][..RUN]) {
                *s += wv * *v;
            }
        }
        out.copy_from_slice(&a);
        o += RUN;
    }
    for (i, out) in blocks.into_remainder().iter_mut().enumerate() {
        *out = taps.iter().fold(T::ZERO, |s, &(wv, base)| s + wv * src[base + o + i]);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::test_support::config;

    /// The definition: `y[r][c] = Σ w[ky][kx] · x[r·sh + ky·dh − ph][c·sw + kx·dw − pw]` over
    /// the taps that land inside the input, in f64.
    fn naive(g: &Geo3, x: &[f32], w: &[f32]) -> Vec<f64> {
        let ([_, h, wd], [_, oh, ow], [_, kh, kw]) = (g.i, g.o, g.k);
        let ([_, sh, sw], [_, dh, dw], [_, ph, pw]) = (g.s, g.d, g.p);
        let mut y = vec![0.0; oh * ow];
        for r in 0..oh {
            for c in 0..ow {
                for ky in 0..kh {
                    for kx in 0..kw {
                        let iy = (r * sh + ky * dh) as isize - ph;
                        let ix = (c * sw + kx * dw) as isize - pw;
                        if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                            y[r * ow + c] += f64::from(w[ky * kw + kx]) * f64::from(x[iy as usize * wd + ix as usize]);
                        }
                    }
                }
            }
        }
        y
    }

    proptest! {
        #![proptest_config(config(96))]

        /// One depthwise plane (2-D, and 1-D as a plane of one row) equals the definition for
        /// any window, stride, dilation and padding, and adds to what `y` held.
        #[test]
        fn plane_matches_definition(h in 1usize..20, wd in 1usize..40, kh in 1usize..6, kw in 1usize..6,
                                    sh in 1usize..4, sw in 1usize..4, dh in 1usize..3, dw in 1usize..3,
                                    ph in 0usize..3, pw in 0usize..3, one_d in any::<bool>(), seed in any::<u64>()) {
            use rand::{Rng, SeedableRng};
            let (h, kh, dh, ph) = if one_d { (1, 1, 1, 0) } else { (h, kh, dh, ph) };
            let span = |i: usize, k: usize, d: usize, p: usize, s: usize| (i + 2 * p).checked_sub((k - 1) * d + 1).map(|v| v / s + 1);
            let (Some(oh), Some(ow)) = (span(h, kh, dh, ph, sh), span(wd, kw, dw, pw, sw)) else { return Ok(()) };
            let g = Geo3 { n: 1, c: 1, m: 1, group: 1, i: [1, h, wd], o: [1, oh, ow], k: [1, kh, kw],
                           s: [1, sh, sw], d: [1, dh, dw], p: [0, ph as isize, pw as isize] };
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let x: Vec<f32> = (0..h * wd).map(|_| rng.random_range(-1.0..1.0)).collect();
            let w: Vec<f32> = (0..kh * kw).map(|_| rng.random_range(-1.0..1.0)).collect();
            let mut y = vec![0.5f32; oh * ow];
            let mut scratch = Vec::new();
            depthwise_plane(&g, &x, &w, &mut y, &mut scratch);
            for (i, (got, want)) in y.iter().zip(naive(&g, &x, &w)).enumerate() {
                prop_assert!((f64::from(*got) - (want + 0.5)).abs() < 1e-5, "element {i}: {got} vs {}", want + 0.5);
            }
        }
    }

    /// A 3-D plane of depth 1 padded on the depth axis: only the output slice that reads input
    /// depth 0 gets the 2-D convolution; the others read only padding and keep `y`.
    #[test]
    fn depth_padded_plane_writes_only_the_slice_that_reads_the_input() {
        let (h, wd) = (4, 5);
        let x: Vec<f32> = (0..h * wd).map(|i| i as f32 - 7.0).collect();
        let w: Vec<f32> = (0..9).map(|i| 0.25 * i as f32 - 1.0).collect();
        let g = Geo3 {
            n: 1,
            c: 1,
            m: 1,
            group: 1,
            i: [1, h, wd],
            o: [3, h, wd],
            k: [1, 3, 3],
            s: [1, 1, 1],
            d: [1, 1, 1],
            p: [1, 1, 1],
        };
        let plane = Geo3 { i: [1, h, wd], o: [1, h, wd], p: [0, 1, 1], ..g };
        let mut y = vec![0.5f32; 3 * h * wd];
        depthwise_plane(&g, &x, &w, &mut y, &mut Vec::new());
        let want = naive(&plane, &x, &w);
        for (i, v) in y.iter().enumerate() {
            let expect = if i / (h * wd) == 1 { want[i % (h * wd)] + 0.5 } else { 0.5 };
            assert!((f64::from(*v) - expect).abs() < 1e-5, "element {i}: {v} vs {expect}");
        }
    }
}
