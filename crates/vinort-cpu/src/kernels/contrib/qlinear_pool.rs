//! ONNX Runtime's quantized average pools (`com.microsoft`, opset 1; see
//! [ContribOperators.md](https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md)):
//! inputs `X, x_scale, x_zero_point, y_scale, y_zero_point`, u8 or i8, and `channels_last`
//! (NHWC input and output instead of NCHW).
//!
//! - QLinearGlobalAveragePool (any spatial rank): MLAS's integer form, the i32 sum of each
//!   channel requantized once with `x_scale / (y_scale · size)`; like MLAS it refuses images of
//!   2^24 elements or more and effective scales outside `[2^-32, 256)`.
//! - QLinearAveragePool (1 to 3 spatial axes; `kernel_shape`, `strides`, `pads`, `auto_pad`,
//!   `ceil_mode`, `count_include_pad`): ONNX Runtime dequantizes to f32, sums each window in
//!   row-major order, divides by the taps inside the input (or, with `count_include_pad`, by
//!   the whole kernel's size, also for a ceil-mode window that reaches past the end padding)
//!   and quantizes `round(avg / y_scale + y_zero_point)`. A window covering the whole
//!   unpadded input takes the global form, as ONNX Runtime's kernel does.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{Error, Result, RunContext, Tensor, Value};

use super::qlinear::{Q8, nhwc_perm, qrange, requantize, scale, zero_point};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::quant::{load_i32, store_int};
use crate::kernels::shape::transpose::transpose_tensor;
use crate::kernels::window::{WindowAttrs, to3};

pub(crate) fn register(r: &mut Registry) {
    r.op("com.microsoft", "QLinearGlobalAveragePool", |i| factory(i, true));
    r.op("com.microsoft", "QLinearAveragePool", |i| factory(i, false));
}

struct Pool {
    /// None for the global form.
    window: Option<WindowAttrs>,
    include_pad: bool,
    channels_last: bool,
}

fn factory(info: &NodeInfo<'_>, global: bool) -> Result<Box<dyn Kernel>> {
    let n = info.node;
    for i in [0, 2, 4] {
        if let Some(d) = info.input_dtype(i) {
            qrange(d, &Q8, &format!("input {i}")).map_err(|e| n.error(e.to_string()))?;
        }
    }
    let window = if global {
        None
    } else {
        let w = WindowAttrs::parse(n)?;
        match &w.kernel {
            None => return Err(n.error("required attribute 'kernel_shape' is missing")),
            Some(k) if k.is_empty() || k.len() > 3 => {
                return Err(n.error(format!("kernel_shape {k:?}: 1 to 3 spatial axes are supported")));
            }
            _ => {}
        }
        if w.dilations.as_ref().is_some_and(|d| d.iter().any(|d| *d != 1)) {
            return Err(n.error("QLinearAveragePool has no dilations"));
        }
        Some(w)
    };
    Ok(Box::new(Pool {
        window,
        include_pad: n.attr_or::<i64>("count_include_pad", 0)? != 0,
        channels_last: n.attr_or::<i64>("channels_last", 0)? != 0,
    }))
}

/// Quantization parameters of one pool call.
struct Q {
    xs: f32,
    xz: i32,
    ys: f32,
    yz: i32,
    range: (i32, i32),
}

/// MLAS's global average: per plane, `round((Σx − xz·size) · xs / (ys · size)) + yz`.
/// `x` is `planes × size` (`stride` 1 between a plane's elements, `size` between planes) or,
/// for NHWC, `size × channels` per image.
fn global_avg(x: &[i32], images: usize, channels: usize, size: usize, nhwc: bool, q: &Q) -> Result<Vec<i32>> {
    let mut out = vec![0i32; images * channels];
    if out.is_empty() {
        return Ok(out);
    }
    if size == 0 || size >= 1 << 24 {
        return Err(Error::unsupported(format!("global average over {size} elements (MLAS takes 1 to 2^24 - 1)")));
    }
    let s = q.xs / (q.ys * size as f32);
    if !(2f32.powi(-32)..256.0).contains(&s) {
        return Err(Error::unsupported(format!(
            "global average with x_scale / (y_scale * size) = {s} (MLAS takes [2^-32, 256))"
        )));
    }
    let bias = -(q.xz as i64) * size as i64;
    let finish = |sum: i64| requantize((sum + bias) as f32 * s, q.yz, q.range);
    if nhwc {
        for (img, o) in x.chunks_exact(size * channels).zip(out.chunks_exact_mut(channels)) {
            let mut acc = vec![0i64; channels];
            for px in img.chunks_exact(channels) {
                acc.iter_mut().zip(px).for_each(|(a, v)| *a += *v as i64);
            }
            o.iter_mut().zip(&acc).for_each(|(o, a)| *o = finish(*a));
        }
    } else {
        let plane = |(o, p): (&mut i32, &[i32])| *o = finish(p.iter().map(|v| *v as i64).sum());
        if crate::par::worth(x.len(), crate::par::ELEMENTS) {
            out.par_iter_mut().zip(x.par_chunks_exact(size)).for_each(plane);
        } else {
            out.iter_mut().zip(x.chunks_exact(size)).for_each(plane);
        }
    }
    Ok(out)
}

/// One spatial axis of a window: input extent, output extent, kernel, stride, begin padding.
#[derive(Clone, Copy)]
struct Ax {
    len: usize,
    out: usize,
    k: usize,
    s: usize,
    pb: usize,
}

impl Ax {
    /// The input range of output position `o`, clipped to the input.
    fn range(&self, o: usize) -> (usize, usize) {
        let start = (o * self.s) as isize - self.pb as isize;
        let end = (start + self.k as isize).min(self.len as isize);
        (start.max(0) as usize, end.max(0) as usize)
    }
}

/// ONNX Runtime's float average pool of NCHW planes `x` (dequantized), quantized per window.
fn avg_pool(x: &[f32], axes: [Ax; 3], include_pad: bool, q: &Q) -> Vec<i32> {
    let pi: usize = axes.iter().map(|a| a.len).product();
    let po: usize = axes.iter().map(|a| a.out).product();
    let planes = x.len().checked_div(pi).unwrap_or(0);
    let mut out = vec![0i32; planes * po];
    if out.is_empty() {
        return out;
    }
    let ksize: usize = axes.iter().map(|a| a.k).product();
    let [a0, a1, a2] = axes;
    let plane = |(y, xp): (&mut [i32], &[f32])| {
        let mut at = 0;
        for o0 in 0..a0.out {
            let (s0, e0) = a0.range(o0);
            for o1 in 0..a1.out {
                let (s1, e1) = a1.range(o1);
                for o2 in 0..a2.out {
                    let (s2, e2) = a2.range(o2);
                    let mut acc = 0f32;
                    for p0 in s0..e0 {
                        for p1 in s1..e1 {
                            let row = (p0 * a1.len + p1) * a2.len;
                            for v in &xp[row + s2..row + e2] {
                                acc += v;
                            }
                        }
                    }
                    let count = if include_pad { ksize } else { (e0 - s0) * (e1 - s1) * (e2 - s2) };
                    let avg = acc / count as f32;
                    let r = (avg / q.ys + q.yz as f32).round_ties_even();
                    y[at] = if r.is_nan() { q.yz } else { (r as i32).clamp(q.range.0, q.range.1) };
                    at += 1;
                }
            }
        }
    };
    if crate::par::worth(x.len().saturating_mul(ksize), crate::par::ELEMENTS) {
        out.par_chunks_mut(po).zip(x.par_chunks(pi.max(1))).for_each(plane);
    } else {
        out.chunks_mut(po).zip(x.chunks(pi.max(1))).for_each(plane);
    }
    out
}

impl Kernel for Pool {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let d = x.dtype();
        let range = qrange(d, &Q8, "X")?;
        let q = Q {
            xs: scale(tensor_in(inputs, 1)?, "x_scale")?,
            xz: zero_point(opt_tensor_in(inputs, 2)?, d, "x_zero_point")?,
            ys: scale(tensor_in(inputs, 3)?, "y_scale")?,
            yz: zero_point(opt_tensor_in(inputs, 4)?, d, "y_zero_point")?,
            range,
        };
        let xs = x.shape();
        if xs.len() < 3 {
            return Err(Error::invalid(format!("pool input must have rank >= 3, got {xs:?}")));
        }
        let r = xs.len();
        // The NCHW view of the shape: batch, channels, spatial.
        let (n, c) = (xs[0], if self.channels_last { xs[r - 1] } else { xs[1] });
        let spatial: Vec<usize> = if self.channels_last { xs[1..r - 1].to_vec() } else { xs[2..].to_vec() };
        let size: usize = spatial.iter().product();
        let out_nchw = |sp: &[usize]| -> Vec<usize> { [n, c].into_iter().chain(sp.iter().copied()).collect() };
        let global_out = |nchw: &[usize], v: Vec<i32>| -> Result<Tensor> {
            // Global outputs have 1-sized spatial axes, so NCHW and NHWC hold the same order.
            let mut shape = nchw.to_vec();
            if self.channels_last {
                shape = [n].into_iter().chain(nchw[2..].iter().copied()).chain([c]).collect();
            }
            store_int(d, &shape, &v)
        };
        let Some(w) = &self.window else {
            let v = global_avg(&load_i32(x)?, n, c, size, self.channels_last, &q)?;
            return Ok(smallvec::smallvec![global_out(&out_nchw(&vec![1; r - 2]), v)?.into()]);
        };
        let kernel = w.kernel.clone().unwrap_or_default();
        if kernel.len() != spatial.len() {
            return Err(Error::invalid(format!("kernel_shape {kernel:?} does not fit input {xs:?}")));
        }
        let win = w.resolve(&kernel)?;
        let g = win.geometry(&spatial)?;
        if spatial == kernel && g.pad_begin.iter().chain(&g.pad_end).all(|p| *p == 0) {
            let v = global_avg(&load_i32(x)?, n, c, size, self.channels_last, &q)?;
            return Ok(smallvec::smallvec![global_out(&out_nchw(&g.out), v)?.into()]);
        }
        let nchw = if self.channels_last { transpose_tensor(x, Some(&nhwc_perm(r, true)))? } else { x.clone() };
        let xf: Vec<f32> = load_i32(&nchw)?.into_iter().map(|v| q.xs * (v - q.xz) as f32).collect();
        let (len, out, k, s, pb) =
            (to3(&spatial, 1), to3(&g.out, 1), to3(&kernel, 1), to3(&win.strides, 1), to3(&g.pad_begin, 0));
        let axes = [0, 1, 2].map(|a| Ax { len: len[a], out: out[a], k: k[a], s: s[a], pb: pb[a] });
        let v = avg_pool(&xf, axes, self.include_pad, &q);
        let y = store_int(d, &out_nchw(&g.out), &v)?;
        let y = if self.channels_last { transpose_tensor(&y, Some(&nhwc_perm(r, false)))? } else { y };
        Ok(smallvec::smallvec![y.into()])
    }
}
