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
//!   pass per channel.
//!
//! The arithmetic is the NCHW kernel's ([`super::qconv_prepared`], hence
//! [`super::qconv::qlinear_conv`]'s): the same exact i32 sums and the same requantization (the
//! f32 multiplier widened to f64, ties to even), so the outputs are bit-identical to the
//! NCHW ones and the layout pass changes no value (tested). The inner loops are plain Rust,
//! compiled once more with AVX-512 enabled and chosen at run time; no crate offers an
//! exact-rounding channels-last int8 convolution.

use rayon::prelude::*;
use std::cell::Cell;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value, Values};

use super::qconv::{ConvAttrs, geometry};
use super::qconv_prepared::{Form, Out, Q8, Zx, prepare_qlinear, with_buf};
use crate::kernel::{Kernel, NodeInfo, tensor_in};
use crate::kernels::conv::im2col::Geo3;
use crate::kernels::window::valid_range;
use crate::per_shape::PerShape;
use crate::qgemm::{Int8, PackedB, qgemm};

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
    mult: Vec<f64>,
    bias: Vec<i32>,
    zy: f64,
    range: (f64, f64),
    form: NForm,
    avx512: bool,
    avx2: bool,
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
        // The fast requantization assumes finite parameters (the generic kernel defines the rest).
        if !q.zy.is_finite() || q.mult.iter().any(|m| !m.is_finite()) {
            return Ok(None);
        }
        let [m, cg, kh, kw] = w_shape;
        let taps = kh * kw;
        let form = match p.form {
            Form::Depthwise(wf) => {
                // [channel][tap] → [tap][channel]; the values are integers below 2⁹.
                let mut w = vec![0i32; taps * m];
                for (c, row) in wf.chunks_exact(taps).enumerate() {
                    for (t, v) in row.iter().enumerate() {
                        w[t * m + c] = *v as i32;
                    }
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
                            r[o * k + t * cg + c] = bytes[(o * cg + c) * taps + t];
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
        let zx = [self.zx];
        let q = self.requant();
        let task = |(t, yc): (usize, &mut [Y])| -> Result<()> {
            let (r0, np) = (t * per, yc.len() / m);
            with_buf(&ACC, np * m, |acc| {
                let product = if pointwise {
                    qgemm(np, X::int8(&x[r0 * c..]), c, &zx, b, acc, m, false)
                } else {
                    with_buf(X::cols(), np * k, |cols| {
                        patches(g, x, X::from_i32(self.zx), r0, cols);
                        qgemm(np, X::int8(cols), k, &zx, b, acc, m, false)
                    })
                };
                product.map_err(Error::invalid)?;
                for (a, out) in acc.chunks_exact(m).zip(yc.chunks_exact_mut(m)) {
                    #[cfg(target_arch = "x86_64")]
                    if self.avx512 {
                        // SAFETY: `avx512()` found the features this build enables.
                        unsafe { requant_avx512(&q, a, out) };
                        continue;
                    }
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
        };
        if !crate::par::worth(work, PAR_WORK) || rows <= per {
            y.chunks_mut(per * m).enumerate().try_for_each(task)
        } else {
            y.par_chunks_mut(per * m).enumerate().try_for_each(task)
        }
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

/// Per-channel requantization: `saturate(round_half_even((acc + bias) · mult + zy))` in f64,
/// exactly the NCHW kernel's formula.
struct Requant<'a> {
    mult: &'a [f64],
    bias: &'a [i32],
    zy: f64,
    range: (f64, f64),
}

/// One pixel's channels (or a block of them, `q`'s slices starting at the same channel).
#[inline(always)]
fn requant_body<Y: Q8>(q: &Requant<'_>, acc: &[i32], out: &mut [Y]) {
    let (lo, hi) = q.range;
    for (((o, a), b), m) in out.iter_mut().zip(acc).zip(q.bias).zip(q.mult) {
        let v = (f64::from(a.wrapping_add(*b)) * m + q.zy).round_ties_even().max(lo).min(hi);
        // SAFETY: v is finite (finite multiplier and zero point, checked at build) and within
        // the output type's range, inside i32's.
        *o = Y::from_i32(unsafe { v.to_int_unchecked::<i32>() });
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
use x86::{dw_row_avx512, requant_avx512};

/// The AVX-512 forms of the depthwise row and of the requantization, written with intrinsics:
/// the compiler's own vectorization of the loops above stores each 8-bit result with a
/// memory-destination `vpmovdb` (slow on AMD cores) and keeps tap bookkeeping in the inner loop.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Dw, LANES, Q8, Requant, dw_row_body, requant_body};
    use crate::kernels::window::valid_range;

    /// Taps a pixel's offset table holds; larger kernels take the portable loop.
    const MAX_TAPS: usize = 64;

    /// 16 elements of `X` from `p`, widened to i32.
    #[inline(always)]
    unsafe fn widen16<X: Q8>(p: *const X) -> __m512i {
        // SAFETY: the caller guarantees 16 readable elements at p.
        unsafe {
            let v = _mm_loadu_si128(p.cast());
            if X::SIGNED { _mm512_cvtepi8_epi32(v) } else { _mm512_cvtepu8_epi32(v) }
        }
    }

    /// Requantizes 16 sums of channels `c0..c0 + 16` to 16 bytes of `Y`: the formula of
    /// `requant_body`, lane for lane (the product and the sum rounded separately, as there).
    /// The bytes are made with saturating packs (exact: the values are inside Y's range), not
    /// a truncating `vpmovdb`, which the compiler would fuse with the store into a form that
    /// is slow on AMD cores.
    #[inline(always)]
    unsafe fn rq16<Y: Q8>(q: &Requant<'_>, c0: usize, acc: __m512i) -> __m128i {
        // SAFETY: the caller guarantees channels c0..c0 + 16 exist in q's slices.
        unsafe {
            let a = _mm512_add_epi32(acc, _mm512_loadu_si512(q.bias.as_ptr().add(c0).cast()));
            let (zy, lo, hi) = (_mm512_set1_pd(q.zy), _mm512_set1_pd(q.range.0), _mm512_set1_pd(q.range.1));
            let half = |v: __m256i, m: *const f64| {
                let v = _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(v), _mm512_loadu_pd(m)), zy);
                let v = _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
                _mm512_cvttpd_epi32(_mm512_min_pd(_mm512_max_pd(v, lo), hi))
            };
            let m = q.mult.as_ptr().add(c0);
            let l = half(_mm512_castsi512_si256(a), m);
            let h = half(_mm512_extracti64x4_epi64::<1>(a), m.add(8));
            // Per 128-bit lane: [l0..l3, h0..h3] as i16, then as bytes (twice); the dwords
            // [0, 4, 1, 5] then hold l0..l7, h0..h7.
            let w = _mm256_packs_epi32(l, h);
            let b = if Y::SIGNED { _mm256_packs_epi16(w, w) } else { _mm256_packus_epi16(w, w) };
            _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5)))
        }
    }

    /// `requant_body` over one pixel's `acc.len()` channels.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
    pub(super) fn requant_avx512<Y: Q8>(q: &Requant<'_>, acc: &[i32], out: &mut [Y]) {
        let n = acc.len().min(out.len()).min(q.bias.len()).min(q.mult.len());
        let full = n - n % LANES;
        for c0 in (0..full).step_by(LANES) {
            // SAFETY: c0 + 16 <= n, within every slice.
            unsafe {
                let v = rq16::<Y>(q, c0, _mm512_loadu_si512(acc.as_ptr().add(c0).cast()));
                _mm_storeu_si128(out.as_mut_ptr().add(c0).cast(), v);
            }
        }
        let rest = Requant { mult: &q.mult[full..], bias: &q.bias[full..], ..*q };
        requant_body(&rest, &acc[full..n], &mut out[full..n]);
    }

    /// `dw_row_body` with the taps of each pixel listed once and 64 or 16 channels summed per
    /// pass over them.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
    pub(super) fn dw_row_avx512<X: Q8, Y: Q8>(d: &Dw<'_>, x: &[X], oy: usize, y: &mut [Y]) {
        let g = d.g;
        let (c, ih, iw, ow) = (g.c, g.i[1], g.i[2], g.o[2]);
        let (kh, kw, sy, sx, dy, dx) = (g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2]);
        if kh * kw > MAX_TAPS || y.len() < ow * c || d.w.len() < kh * kw * c || x.len() < ih * iw * c {
            return dw_row_body(d, x, oy, y);
        }
        let y0 = (oy * sy) as isize - g.p[1];
        let (ky0, ky1) = valid_range(kh, ih, dy, y0);
        let full = c - c % LANES;
        let zx = _mm512_set1_epi32(d.zx);
        let mut offs = [(0usize, 0usize); MAX_TAPS];
        // Pixels whose window lies inside the image across (ox in in0..in1) share this row's
        // taps, shifted: (offset at input column 0, filter offset).
        let span = (kw - 1) * dx + 1;
        let (in0, in1) = if iw >= span { valid_range(ow, iw - span + 1, sx, -g.p[2]) } else { (0, 0) };
        let mut rel = [(0usize, 0usize); MAX_TAPS];
        let mut nrel = 0;
        for ky in ky0..ky1 {
            let iy = (y0 + (ky * dy) as isize) as usize;
            for kx in 0..kw {
                rel[nrel] = ((iy * iw + kx * dx) * c, (ky * kw + kx) * c);
                nrel += 1;
            }
        }
        for ox in 0..ow {
            let x0 = (ox * sx) as isize - g.p[2];
            let mut n = 0;
            if (in0..in1).contains(&ox) {
                let shift = x0 as usize * c;
                for (o, r) in offs.iter_mut().zip(&rel[..nrel]) {
                    *o = (r.0 + shift, r.1);
                }
                n = nrel;
            } else {
                let (kx0, kx1) = valid_range(kw, iw, dx, x0);
                for ky in ky0..ky1 {
                    let iy = (y0 + (ky * dy) as isize) as usize;
                    for kx in kx0..kx1 {
                        let ix = (x0 + (kx * dx) as isize) as usize;
                        offs[n] = ((iy * iw + ix) * c, (ky * kw + kx) * c);
                        n += 1;
                    }
                }
            }
            let taps = &offs[..n];
            let out = &mut y[ox * c..][..c];
            let (xp, wp) = (x.as_ptr(), d.w.as_ptr());
            // SAFETY: every (iy, ix) is inside the image and every tap inside the filter (the
            // valid ranges), so x[xo + c0..][..16] and w[wo + c0..][..16] are in bounds for
            // c0 + 16 <= c (lengths checked above); out has c elements.
            unsafe {
                let mut c0 = 0;
                while c0 + 4 * LANES <= full {
                    let mut acc = [_mm512_setzero_si512(); 4];
                    for &(xo, wo) in taps {
                        for (j, a) in acc.iter_mut().enumerate() {
                            let at = c0 + j * LANES;
                            let xv = _mm512_sub_epi32(widen16(xp.add(xo + at)), zx);
                            let wv = _mm512_loadu_si512(wp.add(wo + at).cast());
                            *a = _mm512_add_epi32(*a, _mm512_mullo_epi32(xv, wv));
                        }
                    }
                    for (j, a) in acc.into_iter().enumerate() {
                        let at = c0 + j * LANES;
                        _mm_storeu_si128(out.as_mut_ptr().add(at).cast(), rq16::<Y>(&d.q, at, a));
                    }
                    c0 += 4 * LANES;
                }
                while c0 < full {
                    let mut a = _mm512_setzero_si512();
                    for &(xo, wo) in taps {
                        let xv = _mm512_sub_epi32(widen16(xp.add(xo + c0)), zx);
                        let wv = _mm512_loadu_si512(wp.add(wo + c0).cast());
                        a = _mm512_add_epi32(a, _mm512_mullo_epi32(xv, wv));
                    }
                    _mm_storeu_si128(out.as_mut_ptr().add(c0).cast(), rq16::<Y>(&d.q, c0, a));
                    c0 += LANES;
                }
            }
            if full < c {
                let mut acc = [0i32; LANES];
                for &(xo, wo) in taps {
                    for (l, a) in acc[..c - full].iter_mut().enumerate() {
                        *a += (x[xo + full + l].to_i32() - d.zx) * d.w[wo + full + l];
                    }
                }
                let q = Requant { mult: &d.q.mult[full..], bias: &d.q.bias[full..], ..d.q };
                requant_body(&q, &acc[..c - full], &mut out[full..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The channels-last kernel (both its AVX-512 and its portable loops) against ONNX's
    //! QLinearConv as the generic kernel computes it on the NCHW form of the same input: equal
    //! byte for byte, for any window, group form, element types and zero points.

    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use vinort_ir::{Attr, DType, RunContext, Tensor, Value, ValueType};

    use super::NhwcConv;
    use crate::kernel::{Kernel, NodeInfo};
    use crate::test_support::{self as ts, Known};

    /// `t` (4-D) with its axes permuted.
    fn permute(t: &Tensor, perm: [usize; 4]) -> Tensor {
        let s = t.shape().to_vec();
        let shape: Vec<usize> = perm.iter().map(|&a| s[a]).collect();
        let bytes = t.as_bytes();
        let mut out = vec![0u8; bytes.len()];
        let stride = [s[1] * s[2] * s[3], s[2] * s[3], s[3], 1];
        let mut i = 0;
        for a in 0..shape[0] {
            for b in 0..shape[1] {
                for c in 0..shape[2] {
                    for d in 0..shape[3] {
                        let idx = [a, b, c, d];
                        let src: usize = (0..4).map(|j| idx[j] * stride[perm[j]]).sum();
                        out[i] = bytes[src];
                        i += 1;
                    }
                }
            }
        }
        match t.dtype() {
            DType::U8 => Tensor::from_vec(&shape, out),
            _ => Tensor::from_vec(&shape, out.into_iter().map(|b| b as i8).collect::<Vec<_>>()),
        }
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn bytes(rng: &mut StdRng, dtype: DType, shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        match dtype {
            DType::U8 => Tensor::from_vec(shape, v),
            _ => Tensor::from_vec(shape, v.into_iter().map(|b| b as i8).collect::<Vec<_>>()),
        }
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn zero_point(rng: &mut StdRng, dtype: DType, n: usize) -> Tensor {
        bytes(rng, dtype, &[n])
    }

    fn dtype(signed: bool) -> DType {
        if signed { DType::I8 } else { DType::U8 }
    }

    proptest! {
        #![proptest_config(ts::config(96))]

        #[test]
        fn channels_last_equals_onnx_qlinearconv(
            seed in any::<u64>(), n in 1usize..3, c in 1usize..40, m in 1usize..24, depthwise in any::<bool>(),
            k in proptest::array::uniform2(1usize..4), s in proptest::array::uniform2(1usize..3),
            d in proptest::array::uniform2(1usize..3), pads in proptest::array::uniform4(0usize..4),
            h in 1usize..10, w in 1usize..10, types in proptest::array::uniform3(any::<bool>()),
            per_channel in any::<bool>(), bias in any::<bool>(),
        ) {
            let mut rng = StdRng::seed_from_u64(seed);
            let (xt, wt, yt) = (dtype(types[0]), dtype(types[1]), dtype(types[2]));
            let (m, group) = if depthwise { (c, c) } else { (m, 1) };
            let cg = c / group;
            let reach = |a: usize| d[a] * (k[a] - 1) + 1;
            let (h, w) = (h.max(reach(0).saturating_sub(pads[0] + pads[2])), w.max(reach(1).saturating_sub(pads[1] + pads[3])));
            let x = bytes(&mut rng, xt, &[n, c, h, w]);
            let wz_n = if per_channel { m } else { 1 };
            let ws: Vec<f32> = (0..wz_n).map(|_| rng.random_range(0.001f32..0.05)).collect();
            let inputs: Vec<Option<Tensor>> = vec![
                Some(x.clone()),
                Some(Tensor::scalar(rng.random_range(0.005f32..0.05))),
                Some(zero_point(&mut rng, xt, 1).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))),
                Some(bytes(&mut rng, wt, &[m, cg, k[0], k[1]])),
                Some(Tensor::from_vec(&[wz_n], ws).unwrap_or_else(|e| panic!("{e}"))),
                Some(zero_point(&mut rng, wt, wz_n)),
                Some(Tensor::scalar(rng.random_range(0.02f32..0.3))),
                Some(zero_point(&mut rng, yt, 1).reshaped(&[]).unwrap_or_else(|e| panic!("{e}"))),
                bias.then(|| Tensor::from_vec(&[m], (0..m).map(|_| rng.random_range(-20000i32..20000)).collect::<Vec<_>>())
                    .unwrap_or_else(|e| panic!("{e}"))),
            ];
            let attrs = vec![
                ("kernel_shape", Attr::Ints(k.iter().map(|v| *v as i64).collect())),
                ("strides", Attr::Ints(s.iter().map(|v| *v as i64).collect())),
                ("dilations", Attr::Ints(d.iter().map(|v| *v as i64).collect())),
                ("pads", Attr::Ints(pads.iter().map(|v| *v as i64).collect())),
                ("group", Attr::Int(group as i64)),
            ];
            let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
            let onnx = ts::op("QLinearConv", 10).input_mask(&present).attrs(attrs.clone()).build();
            let want = ts::run_with(&onnx, &inputs, Known::Types).unwrap_or_else(|e| panic!("{e}")).remove(0);
            let want = permute(&want, [0, 2, 3, 1]);

            // Through the registry: com.microsoft QLinearConv, channels_last, constants known.
            let mut nhwc_inputs = inputs.clone();
            nhwc_inputs[0] = Some(permute(&x, [0, 2, 3, 1]));
            let node = ts::op("QLinearConv", 1).domain("com.microsoft").input_mask(&present)
                .attrs(attrs).attrs([("channels_last", Attr::Int(1))]).build();
            let consts: Vec<usize> = (1..9).collect();
            let got = ts::run_with(&node, &nhwc_inputs, Known::TypesAndConsts(&consts)).unwrap_or_else(|e| panic!("{e}")).remove(0);
            prop_assert_eq!(got.shape(), want.shape());
            prop_assert_eq!(got.as_bytes(), want.as_bytes());

            // The prepared kernel itself, with the AVX-512 loops and with the portable ones.
            let info = NodeInfo {
                node: &node,
                inputs: nhwc_inputs.iter().map(|t| t.as_ref().map_or(ValueType::Unknown, |t| ValueType::tensor(t.dtype(), t.shape()))).collect(),
                consts: nhwc_inputs.iter().enumerate().map(|(i, t)| if i == 0 { None } else { t.clone() }).collect(),
                outputs: vec![ValueType::Unknown],
                scope: Default::default(),
            };
            let mut kernel = NhwcConv::new(&info).unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("not prepared"));
            let xv = Value::Tensor(nhwc_inputs[0].clone().unwrap_or_else(|| unreachable!()));
            for avx512 in [kernel.avx512, false] {
                kernel.avx512 = avx512;
                let y = kernel.run(&[Some(&xv)], &RunContext::default()).unwrap_or_else(|e| panic!("{e}"));
                let y = y[0].as_tensor().unwrap_or_else(|e| panic!("{e}"));
                prop_assert_eq!(y.as_bytes(), want.as_bytes(), "avx512 {}", avx512);
            }
        }
    }

    /// A wrong input (rank, type) is a clear error, not a panic.
    #[test]
    fn wrong_input_is_an_error() {
        let mut rng = StdRng::seed_from_u64(1);
        let inputs: Vec<Option<Tensor>> = vec![
            Some(bytes(&mut rng, DType::U8, &[1, 4, 4, 3])),
            Some(Tensor::scalar(0.02f32)),
            Some(Tensor::scalar(128u8)),
            Some(bytes(&mut rng, DType::I8, &[2, 3, 1, 1])),
            Some(Tensor::scalar(0.01f32)),
            Some(Tensor::scalar(0i8)),
            Some(Tensor::scalar(0.1f32)),
            Some(Tensor::scalar(128u8)),
        ];
        let node =
            ts::op("QLinearConv", 1).domain("com.microsoft").inputs(8).attrs([("channels_last", Attr::Int(1))]).build();
        let consts: Vec<usize> = (1..8).collect();
        let ok = ts::run_with(&node, &inputs, Known::TypesAndConsts(&consts)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok[0].shape(), &[1, 4, 4, 2]);
        let mut bad = inputs.clone();
        bad[0] = Some(bytes(&mut rng, DType::U8, &[4, 4, 3]));
        ts::expect_err(ts::run_with(&node, &bad, Known::TypesAndConsts(&consts)), "4-D");
        bad[0] = Some(bytes(&mut rng, DType::U8, &[1, 4, 4, 5]));
        ts::expect_err(ts::run_with(&node, &bad, Known::TypesAndConsts(&consts)), "groups");
    }
}
