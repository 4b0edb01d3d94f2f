//! QLinearConv in the channels-last layout (`[N, H, W, C]` in and out), with constant
//! weights, scales, zero points and bias: the kernel behind com.microsoft QLinearConv with
//! `channels_last = 1`, which the Cpu optimizer's int8 layout pass
//! ([`crate::optimize::nhwc`]) puts in place of QLinearConvs, as ONNX Runtime's NHWC
//! transformer does.
//!
//! Channels-last suits 8-bit convolution. Every pixel's channels are contiguous, so:
//!
//! * a regular (group 1) convolution is one product `Y[P × M] = A[P × K] · W[K × M]` whose rows
//!   are pixels: the weights are packed once, at build time, as qgemm's right operand (K in
//!   (ky, kx, c) order, to match A's rows), and nothing is repacked per run. A 1x1 stride-1
//!   unpadded convolution reads its input in place as A; any other gathers each output
//!   pixel's patch (one run of `kw · C` bytes per kernel row where the window is inside the
//!   image, X's zero point where it is padding) into a reused buffer, a block of pixels per
//!   task. Each block's i32 rows are requantized straight into the output, one multiplier per
//!   channel along the row;
//! * a depthwise convolution sums, for each output pixel and block of 16 channels, the taps'
//!   `(x − zx) · (w − zw)` in 16 i32 lanes (weights shifted and laid out `[tap][channel]` at
//!   build time), then requantizes the 16 lanes at once: no widening to float planes, no
//!   pass per channel. On AVX-512 VNNI, when the shifted weights fit in i8, [`dw_vnni`] adds
//!   64 channels of a tap per input load with `vpdpbusd` instead.
//!
//! The arithmetic is the NCHW kernel's ([`super::qconv_prepared`], hence
//! [`super::qconv::qlinear_conv`]'s): the same exact i32 sums and the same requantization
//! (ONNX Runtime's: [`super::round::requantize`]), so the outputs are bit-identical to the
//! NCHW ones and the layout pass changes no value (tested). The AVX-512 loops are in [`x86`];
//! the portable loops are plain Rust, compiled once more with AVX2 enabled and chosen at run
//! time; no crate offers a channels-last int8 convolution with ONNX Runtime's rounding.

use rayon::prelude::*;
use std::cell::Cell;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value, Values};

use super::qconv::{ConvAttrs, geometry};
use super::qconv_prepared::{Form, Out, Q8, Zx, prepare_qlinear, with_buf};
use super::round::requant_bounds;
use crate::kernel::{Kernel, NodeInfo, tensor_in};
use crate::kernels::conv::im2col::Geo3;
use crate::kernels::window::valid_range;
use crate::per_shape::PerShape;
use crate::qgemm::{self, Int8, PackedB, qgemm};

thread_local! {
    static ACC: Cell<Vec<i32>> = const { Cell::new(Vec::new()) };
}

/// Multiply-adds below which a convolution runs on the calling thread.
const PAR_WORK: usize = 1 << 18;

/// i32 sums one gemm task keeps (its rows × M): 128 KiB, well inside L2 with the packed
/// weights.
const TASK_SUMS: usize = 1 << 15;

/// Channels summed together by the depthwise kernel: one AVX-512 register of i32.
const LANES: usize = 16;

/// A channels-last QLinearConv, prepared at build time.
pub(crate) struct NhwcConv {
    attrs: ConvAttrs,
    /// W's shape as ONNX gives it: `[M, C/group, kh, kw]`.
    w_shape: [usize; 4],
    x_dtype: DType,
    y_dtype: DType,
    zx: i32,
    /// Per output channel: the requantization multiplier and the bias.
    mult: Vec<f32>,
    bias: Vec<i32>,
    zy: i32,
    /// The output type's range.
    range: (i32, i32),
    form: NForm,
    avx512: bool,
    avx2: bool,
    /// The depthwise filter laid out for the VNNI loop, where it applies.
    #[cfg(target_arch = "x86_64")]
    vnni: Option<DwVnni>,
    /// The (NCHW) geometry and the NHWC output shape of the last input shape.
    geometry: PerShape<(Geo3, [usize; 4])>,
}

enum NForm {
    /// `w − zw` as `[tap][channel]`.
    Depthwise(Vec<i32>),
    /// The weights packed as qgemm's right operand, K × M with K in (ky, kx, c) order.
    Gemm(PackedB),
}

impl NhwcConv {
    /// The kernel when the node is a 2-D QLinearConv (ONNX inputs) whose parameters are all
    /// constants of a form it takes, and which is regular (group 1) or depthwise; `None`
    /// otherwise.
    pub(crate) fn new(info: &NodeInfo<'_>) -> Result<Option<NhwcConv>> {
        let Some(p) = prepare_qlinear(info)? else { return Ok(None) };
        let (Out::Requant(q), Zx::Const(zx)) = (p.out, p.zx) else { return Ok(None) };
        let Ok(w_shape) = <[usize; 4]>::try_from(p.w_shape.as_slice()) else { return Ok(None) };
        // The fast requantization assumes finite multipliers (the generic kernel defines the rest).
        if q.mult.iter().any(|m| !m.is_finite()) {
            return Ok(None);
        }
        let [m, cg, kh, kw] = w_shape;
        let taps = kh * kw;
        #[cfg(target_arch = "x86_64")]
        let mut vnni = None;
        let form = match p.form {
            Form::Depthwise(wf) => {
                // [channel][tap] → [tap][channel]; the values are integers below 2⁹.
                let mut w = vec![0i32; taps * m];
                for (c, row) in wf.chunks_exact(taps).enumerate() {
                    for (t, v) in row.iter().enumerate() {
                        w[t * m + c] = *v as i32;
                    }
                }
                #[cfg(target_arch = "x86_64")]
                {
                    vnni = DwVnni::new(&w, m, (kh, kw), zx, p.x_dtype == DType::I8, &q.mult, &q.bias);
                }
                NForm::Depthwise(w)
            }
            Form::Gemm(_, _) if p.attrs.group != 1 => return Ok(None),
            Form::Gemm(w, zw) => {
                // [M][C][kh][kw] → [M][kh][kw][C]: row o of Wᵀ in A's patch order.
                let k = taps * cg;
                let bytes = w.as_bytes();
                let mut r = vec![0u8; m * k];
                for o in 0..m {
                    for c in 0..cg {
                        for t in 0..taps {
                            let v = bytes[(o * cg + c) * taps + t];
                            r[o * k + t * cg + c] = v;
                        }
                    }
                }
                let b = match w.dtype() {
                    DType::U8 => Int8::U8(&r),
                    // SAFETY: i8 and u8 have the same size and alignment; every bit pattern is valid.
                    _ => Int8::I8(unsafe { std::slice::from_raw_parts(r.as_ptr().cast::<i8>(), r.len()) }),
                };
                NForm::Gemm(PackedB::new(b, k, m, true, &zw).map_err(Error::invalid)?)
            }
        };
        Ok(Some(NhwcConv {
            attrs: p.attrs,
            w_shape,
            x_dtype: p.x_dtype,
            y_dtype: q.dtype,
            zx,
            mult: q.mult,
            bias: q.bias,
            zy: q.zy,
            range: q.range,
            form,
            avx512: avx512(),
            avx2: avx2(),
            #[cfg(target_arch = "x86_64")]
            vnni,
            geometry: PerShape::default(),
        }))
    }

    fn conv<X: Q8, Y: Q8>(&self, g: &Geo3, x: &[X], shape: &[usize; 4]) -> Result<Tensor> {
        Tensor::try_build_full::<Y, Error>(shape, |y| {
            if y.is_empty() {
                return Ok(());
            }
            match &self.form {
                NForm::Depthwise(w) => {
                    self.depthwise(g, x, w, y);
                    Ok(())
                }
                NForm::Gemm(b) => self.gemm(g, x, b, y),
            }
        })
    }

    fn requant(&self) -> Requant<'_> {
        Requant { mult: &self.mult, bias: &self.bias, zy: self.zy, range: self.range }
    }

    fn depthwise<X: Q8, Y: Q8>(&self, g: &Geo3, x: &[X], w: &[i32], y: &mut [Y]) {
        let (c, oh, ow) = (g.c, g.o[1], g.o[2]);
        let image = g.i[1] * g.i[2] * c;
        let row = ow * c;
        let taps = g.k[1] * g.k[2];
        let dw = Dw { g, w, zx: self.zx, q: self.requant() };
        // About 32k multiply-adds per task, so late small layers do not pay a fork per row.
        let min = ((1 << 15) / (row * taps).max(1)).max(1);
        let task = |(r, yr): (usize, &mut [Y])| {
            let (ni, oy) = (r / oh, r % oh);
            let xi = &x[ni * image..][..image];
            #[cfg(target_arch = "x86_64")]
            if let Some(v) = &self.vnni {
                // SAFETY: `DwVnni::new` found the features `row` enables.
                return unsafe { v.row(g, xi, oy, yr, &self.requant()) };
            }
            #[cfg(target_arch = "x86_64")]
            if self.avx512 {
                // SAFETY: `avx512()` found the features this build enables.
                return unsafe { dw_row_avx512(&dw, xi, oy, yr) };
            }
            #[cfg(target_arch = "x86_64")]
            if self.avx2 {
                // SAFETY: `avx2()` found the feature this build enables.
                return unsafe { dw_row_avx2(&dw, xi, oy, yr) };
            }
            dw_row(&dw, xi, oy, yr)
        };
        if !crate::par::worth(y.len() * taps, PAR_WORK) {
            y.chunks_mut(row).enumerate().for_each(task);
        } else {
            y.par_chunks_mut(row).enumerate().with_min_len(min).for_each(task);
        }
    }

    fn gemm<X: Q8, Y: Q8>(&self, g: &Geo3, x: &[X], b: &PackedB, y: &mut [Y]) -> Result<()> {
        let (c, m, k) = (g.c, g.m, b.k());
        let rows = y.len() / m;
        let pointwise = g.k == [1; 3] && g.s == [1; 3] && g.p == [0; 3] && g.o == g.i;
        let work = rows.saturating_mul(k).saturating_mul(m);
        let cap = (TASK_SUMS / m).clamp(8, 512);
        let threads = rayon::current_num_threads().max(1);
        let mut tasks = rows.div_ceil(cap);
        if work >= PAR_WORK {
            tasks = tasks.max(threads);
        }
        // Whole tiles of 8 rows per task, as even as they come.
        let per = rows.div_ceil(tasks.max(1)).next_multiple_of(8).max(8);
        let task = |(t, yc): (usize, &mut [Y])| -> Result<()> {
            let (r0, np) = (t * per, yc.len() / m);
            if pointwise {
                self.product(X::int8(&x[r0 * c..]), c, b, yc)
            } else {
                with_buf(X::cols(), np * k, |cols| {
                    patches(g, x, X::from_i32(self.zx), r0, cols);
                    self.product(X::int8(cols), k, b, yc)
                })
            }
        };
        if !crate::par::worth(work, PAR_WORK) || rows <= per {
            y.chunks_mut(per * m).enumerate().try_for_each(task)
        } else {
            y.par_chunks_mut(per * m).enumerate().try_for_each(task)
        }
    }
}

impl NhwcConv {
    /// `y` (whole rows of M channels) = the requantized product of its rows of `a` (K bytes at
    /// stride `lda`) and the packed weights: fused into qgemm's store where the CPU has that
    /// kernel, else through an i32 block and the requantization loops.
    fn product<Y: Q8>(&self, a: Int8<'_>, lda: usize, b: &PackedB, y: &mut [Y]) -> Result<()> {
        let m = b.n();
        let np = y.len() / m;
        let zx = [self.zx];
        let rq = qgemm::Requant { bias: &self.bias, mult: &self.mult, zy: self.zy, range: self.range };
        const { assert!(size_of::<Y>() == 1) };
        // SAFETY: Y is u8 or i8 (Q8's two types), one byte with every bit pattern valid; the
        // byte slice borrows the same memory for the same lifetime.
        let bytes = unsafe { std::slice::from_raw_parts_mut(y.as_mut_ptr().cast::<u8>(), y.len()) };
        if qgemm::qgemm_requant(np, a, lda, &zx, b, &rq, bytes, m, Y::SIGNED).map_err(Error::invalid)? {
            return Ok(());
        }
        let q = self.requant();
        with_buf(&ACC, np * m, |acc| {
            qgemm(np, a, lda, &zx, b, acc, m, false).map_err(Error::invalid)?;
            #[cfg(target_arch = "x86_64")]
            if self.avx512 {
                // SAFETY: `avx512()` found the features this build enables.
                unsafe { requant_avx512(&q, acc, y) };
                return Ok(());
            }
            for (a, out) in acc.chunks_exact(m).zip(y.chunks_exact_mut(m)) {
                #[cfg(target_arch = "x86_64")]
                if self.avx2 {
                    // SAFETY: `avx2()` found the feature this build enables.
                    unsafe { requant_avx2(&q, a, out) };
                    continue;
                }
                requant(&q, a, out)
            }
            Ok(())
        })
    }
}

impl Kernel for NhwcConv {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let xs = x.shape();
        if x.dtype() != self.x_dtype || xs.len() != 4 {
            return Err(Error::invalid(format!(
                "channels-last QLinearConv takes a 4-D {} input [N, H, W, C], got {} {xs:?}",
                self.x_dtype,
                x.dtype()
            )));
        }
        let geo = self.geometry.get(xs, || {
            let (g, s) = geometry(&self.attrs, &[xs[0], xs[3], xs[1], xs[2]], &self.w_shape)?;
            Ok((g, [s[0], s[2], s[3], s[1]]))
        })?;
        let (g, shape) = (&geo.0, &geo.1);
        let x = x.to_aligned();
        let y = match (self.x_dtype, self.y_dtype) {
            (DType::U8, DType::U8) => self.conv::<u8, u8>(g, x.as_slice()?, shape),
            (DType::U8, _) => self.conv::<u8, i8>(g, x.as_slice()?, shape),
            (_, DType::U8) => self.conv::<i8, u8>(g, x.as_slice()?, shape),
            _ => self.conv::<i8, i8>(g, x.as_slice()?, shape),
        }?;
        Ok(smallvec::smallvec![y.into()])
    }
}

/// True when this CPU runs the AVX-512 builds of the loops.
fn avx512() -> bool {
    crate::isa::avx512()
}

/// True when this CPU runs the AVX2 builds of the loops (rounding is one instruction there).
fn avx2() -> bool {
    crate::isa::avx2()
}

/// The portable loops compiled for AVX2: the compiler vectorizes them (the baseline build
/// calls libm's `rint` per element).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn requant_avx2<Y: Q8>(q: &Requant<'_>, acc: &[i32], out: &mut [Y]) {
    requant_body(q, acc, out)
}

/// [`dw_row_body`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dw_row_avx2<X: Q8, Y: Q8>(d: &Dw<'_>, x: &[X], oy: usize, y: &mut [Y]) {
    dw_row_body(d, x, oy, y)
}

/// Per-channel requantization, the NCHW kernel's ([`super::round::requantize`]) with a
/// multiplier and bias per channel.
struct Requant<'a> {
    /// Finite (checked at build).
    mult: &'a [f32],
    bias: &'a [i32],
    zy: i32,
    /// The output type's range.
    range: (i32, i32),
}

/// One pixel's channels (or a block of them, `q`'s slices starting at the same channel).
#[inline(always)]
fn requant_body<Y: Q8>(q: &Requant<'_>, acc: &[i32], out: &mut [Y]) {
    let (lo, hi) = requant_bounds(q.zy, q.range);
    for (((o, a), b), m) in out.iter_mut().zip(acc).zip(q.bias).zip(q.mult) {
        let v = (a.wrapping_add(*b) as f32 * m).max(lo).min(hi).round_ties_even();
        // SAFETY: v is finite (a finite multiplier, checked at build) and an integer within
        // the bounds, an 8-bit type's range less its zero point: inside i32's.
        *o = Y::from_i32(unsafe { v.to_int_unchecked::<i32>() } + q.zy);
    }
}

fn requant<Y: Q8>(q: &Requant<'_>, acc: &[i32], out: &mut [Y]) {
    requant_body(q, acc, out)
}

/// Fills `cols` (whole rows of K = kh·kw·C) with the patches of the output pixels from `r0`
/// on (counted over all images), in (ky, kx, c) order; padding is `zx`.
fn patches<X: Q8>(g: &Geo3, x: &[X], zx: X, r0: usize, cols: &mut [X]) {
    let (c, ih, iw, oh, ow) = (g.c, g.i[1], g.i[2], g.o[1], g.o[2]);
    let (kh, kw, sy, sx, dy, dx) = (g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2]);
    let (py, px) = (g.p[1], g.p[2]);
    let k = kh * kw * c;
    for (i, row) in cols.chunks_exact_mut(k).enumerate() {
        let r = r0 + i;
        let (ni, pix) = (r / (oh * ow), r % (oh * ow));
        let (oy, ox) = (pix / ow, pix % ow);
        let img = &x[ni * ih * iw * c..][..ih * iw * c];
        let x0 = (ox * sx) as isize - px;
        // Kernel columns whose input column is inside the image: kx in a..b.
        let (a, b) = valid_range(kw, iw, dx, x0);
        for ky in 0..kh {
            let dst = &mut row[ky * kw * c..][..kw * c];
            let iy = (oy * sy) as isize - py + (ky * dy) as isize;
            if iy < 0 || iy as usize >= ih || a >= b {
                dst.fill(zx);
                continue;
            }
            let line = &img[iy as usize * iw * c..][..iw * c];
            dst[..a * c].fill(zx);
            dst[b * c..].fill(zx);
            let ix0 = (x0 + (a * dx) as isize) as usize;
            if dx == 1 {
                dst[a * c..b * c].copy_from_slice(&line[ix0 * c..(ix0 + b - a) * c]);
            } else {
                for (j, kx) in (a..b).enumerate() {
                    let ix = ix0 + j * dx;
                    dst[kx * c..(kx + 1) * c].copy_from_slice(&line[ix * c..(ix + 1) * c]);
                }
            }
        }
    }
}

/// A depthwise convolution's run-time parameters.
struct Dw<'a> {
    g: &'a Geo3,
    /// `w − zw`, `[tap][channel]`.
    w: &'a [i32],
    zx: i32,
    q: Requant<'a>,
}

/// Output row `oy` of one image (`x`, `[H][W][C]`) into `y` (`[OW][C]`).
#[inline(always)]
fn dw_row_body<X: Q8, Y: Q8>(d: &Dw<'_>, x: &[X], oy: usize, y: &mut [Y]) {
    let g = d.g;
    let (c, ih, iw, ow) = (g.c, g.i[1], g.i[2], g.o[2]);
    let (kh, kw, sy, sx, dy, dx) = (g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2]);
    let y0 = (oy * sy) as isize - g.p[1];
    let (ky0, ky1) = valid_range(kh, ih, dy, y0);
    let full = c - c % LANES;
    for ox in 0..ow {
        let x0 = (ox * sx) as isize - g.p[2];
        let (kx0, kx1) = valid_range(kw, iw, dx, x0);
        let out = &mut y[ox * c..][..c];
        // Input offset of tap (ky, kx), in elements.
        let at = |ky: usize, kx: usize| {
            let iy = (y0 + (ky * dy) as isize) as usize;
            let ix = (x0 + (kx * dx) as isize) as usize;
            (iy * iw + ix) * c
        };
        for cb in (0..full).step_by(LANES) {
            let mut acc = [0i32; LANES];
            for ky in ky0..ky1 {
                for kx in kx0..kx1 {
                    let xs: &[X; LANES] = x[at(ky, kx) + cb..][..LANES].try_into().unwrap_or_else(|_| unreachable!());
                    let ws: &[i32; LANES] =
                        d.w[(ky * kw + kx) * c + cb..][..LANES].try_into().unwrap_or_else(|_| unreachable!());
                    for l in 0..LANES {
                        acc[l] += (xs[l].to_i32() - d.zx) * ws[l];
                    }
                }
            }
            let q = Requant { mult: &d.q.mult[cb..cb + LANES], bias: &d.q.bias[cb..cb + LANES], ..d.q };
            requant_body(&q, &acc, &mut out[cb..cb + LANES]);
        }
        if full < c {
            let n = c - full;
            let mut acc = [0i32; LANES];
            for ky in ky0..ky1 {
                for kx in kx0..kx1 {
                    let xs = &x[at(ky, kx) + full..][..n];
                    let ws = &d.w[(ky * kw + kx) * c + full..][..n];
                    for ((a, xv), wv) in acc.iter_mut().zip(xs).zip(ws) {
                        *a += (xv.to_i32() - d.zx) * wv;
                    }
                }
            }
            let q = Requant { mult: &d.q.mult[full..], bias: &d.q.bias[full..], ..d.q };
            requant_body(&q, &acc[..n], &mut out[full..]);
        }
    }
}

fn dw_row<X: Q8, Y: Q8>(d: &Dw<'_>, x: &[X], oy: usize, y: &mut [Y]) {
    dw_row_body(d, x, oy, y)
}

#[cfg(target_arch = "x86_64")]
mod dw_vnni;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
use dw_vnni::DwVnni;
#[cfg(target_arch = "x86_64")]
use x86::{dw_row_avx512, requant_avx512};

#[cfg(test)]
mod tests;
