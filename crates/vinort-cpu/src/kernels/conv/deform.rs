//! [DeformConv](https://onnx.ai/onnx/operators/onnx__DeformConv.html), opsets 19 and 22 (22
//! added bfloat16), for 2-D inputs (`X` of rank 4), the only rank the ONNX reference
//! implementation defines.
//!
//! Each kernel tap of each output pixel reads the input at its regular convolution position
//! moved by that pixel's `offset` (`(dy, dx)` pairs, channel `2 * tap` and `2 * tap + 1` of
//! the offset group), bilinearly interpolated with zeros outside the image (GridSample with
//! `align_corners = 1` in pixel units), and scaled by `mask` when given. Channels split into
//! `offset_group` groups sharing offsets, and into `group` convolution groups as in Conv.
//!
//! The sampled values of one image form a column matrix `[C * kH * kW, oH * oW]`; each
//! convolution group is then one matrix product with its slice of W.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{Error, Node, Result, RunContext, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in, with_numeric};
use crate::kernels::rnn::math::{Float, Mat, matmul};
use crate::kernels::window::WindowAttrs;

pub(crate) fn register(r: &mut Registry) {
    r.op("", "DeformConv", factory);
}

/// A compiled DeformConv node.
#[derive(Debug)]
pub(crate) struct DeformConv {
    /// `kernel_shape`, `strides`, `dilations` and `pads` (DeformConv has no `auto_pad`).
    window: WindowAttrs,
    group: usize,
    offset_group: usize,
}

fn positive(node: &Node, name: &str) -> Result<usize> {
    let v = node.attr_or(name, 1i64)?;
    usize::try_from(v)
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| node.error(format!("attribute '{name}' must be a positive integer, got {v}")))
}

fn factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    Ok(Box::new(DeformConv::from_node(info)?))
}

impl DeformConv {
    pub(crate) fn from_node(info: &NodeInfo<'_>) -> Result<DeformConv> {
        let n = info.node;
        for i in 0..5 {
            if let Some(d) = info.input_dtype(i)
                && !d.is_float()
            {
                return Err(Error::unsupported(format!("DeformConv does not support {d} inputs")));
            }
        }
        if let Some(r) = info.inputs.first().and_then(|t| t.tensor_shape()).map(<[_]>::len)
            && r != 4
        {
            return Err(Error::unsupported(format!("DeformConv runs 2-D inputs (rank 4) only, X has rank {r}")));
        }
        let window = WindowAttrs::parse(n)?;
        // Two spatial axes: every per-axis attribute must say so, before the weights are seen.
        if window.kernel.as_ref().is_some_and(|k| k.len() != 2) {
            return Err(n.error(format!("kernel_shape must hold 2 values, got {:?}", window.kernel)));
        }
        window.resolve(&[1, 1])?;
        Ok(DeformConv { window, group: positive(n, "group")?, offset_group: positive(n, "offset_group")? })
    }
}

impl Kernel for DeformConv {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let y = with_numeric!(compute x.dtype(), |T| self.run_typed::<T>(inputs)?,
            d => return Err(Error::unsupported(format!("DeformConv does not support {d} inputs"))));
        Ok(smallvec::smallvec![y.into()])
    }
}

/// Where one tap of one output pixel reads: four input pixels and their bilinear weights
/// (mask folded in; zero for corners outside the image).
#[derive(Clone, Copy, Default)]
struct Sample<T> {
    idx: [usize; 4],
    w: [T; 4],
}

/// Sizes of one image's sampling problem.
struct Geometry {
    channels: usize,
    in_hw: [usize; 2],
    out_hw: [usize; 2],
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    /// Begin (top, left) pads.
    pad: [usize; 2],
}

impl DeformConv {
    pub(crate) fn run_typed<T: Float>(&self, inputs: &[Option<&Value>]) -> Result<Tensor> {
        let (x_t, w_t, off_t) = (tensor_in(inputs, 0)?, tensor_in(inputs, 1)?, tensor_in(inputs, 2)?);
        let (b_t, mask_t) = (opt_tensor_in(inputs, 3)?, opt_tensor_in(inputs, 4)?);
        let dtype = x_t.dtype();
        for (name, t) in [("W", Some(w_t)), ("offset", Some(off_t)), ("B", b_t), ("mask", mask_t)] {
            if let Some(t) = t
                && t.dtype() != dtype
            {
                return Err(Error::invalid(format!("DeformConv input {name} is {} but X is {dtype}", t.dtype())));
            }
        }
        let &[batch, channels, ih, iw] = x_t.shape() else {
            return Err(Error::unsupported(format!(
                "DeformConv runs 2-D inputs (X of rank 4) only, got shape {:?}",
                x_t.shape()
            )));
        };
        let &[oc, cpg, kh, kw] = w_t.shape() else {
            return Err(Error::invalid(format!("DeformConv W must have rank 4, got shape {:?}", w_t.shape())));
        };
        if let Some(k) = &self.window.kernel
            && k[..] != [kh, kw]
        {
            return Err(Error::invalid(format!(
                "DeformConv kernel_shape {k:?} differs from W's spatial shape {:?}",
                [kh, kw]
            )));
        }
        let (group, og) = (self.group, self.offset_group);
        if cpg * group != channels || oc % group != 0 {
            return Err(Error::invalid(format!(
                "DeformConv W of shape {:?} does not fit X with {channels} channels in {group} group(s)",
                w_t.shape()
            )));
        }
        if channels % og != 0 {
            return Err(Error::invalid(format!(
                "DeformConv: {channels} channels do not split into {og} offset groups"
            )));
        }
        let win = self.window.resolve(&[kh, kw])?;
        let geo = win.geometry(&[ih, iw])?;
        let ([oh, ow], [dh, dw], [sh, sw]) = (to2(&geo.out), to2(&win.dilations), to2(&win.strides));
        let [pt, pl] = to2(&geo.pad_begin);
        let taps = kh * kw;
        let want_off = [batch, og * taps * 2, oh, ow];
        if off_t.shape() != want_off {
            return Err(Error::invalid(format!(
                "DeformConv offset has shape {:?}; expected {want_off:?} (N, offset_group * kH * kW * 2, oH, oW)",
                off_t.shape()
            )));
        }
        let want_mask = [batch, og * taps, oh, ow];
        if let Some(m) = mask_t
            && m.shape() != want_mask
        {
            return Err(Error::invalid(format!(
                "DeformConv mask has shape {:?}; expected {want_mask:?} (N, offset_group * kH * kW, oH, oW)",
                m.shape()
            )));
        }
        if let Some(b) = b_t
            && b.shape() != [oc]
        {
            return Err(Error::invalid(format!("DeformConv B has shape {:?}; expected [{oc}]", b.shape())));
        }

        let x = T::load(x_t)?;
        let w = T::load(w_t)?;
        let off = T::load(off_t)?;
        let mask = mask_t.map(T::load).transpose()?;
        let bias = b_t.map(T::load).transpose()?;
        let geo = Geometry {
            channels,
            in_hw: [ih, iw],
            out_hw: [oh, ow],
            kernel: [kh, kw],
            strides: [sh, sw],
            dilations: [dh, dw],
            pad: [pt, pl],
        };
        let (plane, cols_per_img) = (oh * ow, channels * taps * oh * ow);
        let (ocg, depth) = (oc / group, cpg * taps);
        let mut cols = vec![T::ZERO; cols_per_img];
        let mut fill = |y: &mut [T]| -> Result<()> {
            for n in 0..batch {
                let off_n = &off[n * og * taps * 2 * plane..(n + 1) * og * taps * 2 * plane];
                let mask_n = mask.as_ref().map(|m| &m[n * og * taps * plane..(n + 1) * og * taps * plane]);
                let x_n = &x[n * channels * ih * iw..(n + 1) * channels * ih * iw];
                self.columns(&geo, x_n, off_n, mask_n, &mut cols);
                let y_n = &mut y[n * oc * plane..(n + 1) * oc * plane];
                for g in 0..group {
                    matmul(
                        (ocg, plane, depth),
                        Mat::rows(&w[g * ocg * depth..(g + 1) * ocg * depth], depth),
                        Mat::rows(&cols[g * depth * plane..(g + 1) * depth * plane], plane),
                        &mut y_n[g * ocg * plane..(g + 1) * ocg * plane],
                        false,
                    )?;
                }
                if let Some(bias) = &bias {
                    for (row, b) in y_n.chunks_exact_mut(plane.max(1)).zip(bias.iter()) {
                        for v in row {
                            *v += *b;
                        }
                    }
                }
            }
            Ok(())
        };
        let shape = [batch, oc, oh, ow];
        if dtype == T::DTYPE {
            // Computing in the output's own type: straight into the output tensor, no staging copy.
            Tensor::try_build::<T, Error>(&shape, fill)
        } else {
            let mut y = vec![T::ZERO; batch * oc * plane];
            fill(&mut y)?;
            T::store(dtype, &shape, &y)
        }
    }

    /// Fills `cols` (`[C * kH * kW, oH * oW]`) with one image's deformed samples.
    fn columns<T: Float>(&self, geo: &Geometry, x: &[T], off: &[T], mask: Option<&[T]>, cols: &mut [T]) {
        let [ih, iw] = geo.in_hw;
        let [oh, ow] = geo.out_hw;
        let [kh, kw] = geo.kernel;
        let (taps, plane) = (kh * kw, oh * ow);
        let og = self.offset_group;
        let per_og = geo.channels / og;
        // Sampling positions depend only on (offset group, tap, output pixel), not on the channel.
        let mut samples = vec![Sample::<T>::default(); og * taps * plane];
        for (gi, s_g) in samples.chunks_exact_mut(taps * plane).enumerate() {
            for (tap, s_t) in s_g.chunks_exact_mut(plane).enumerate() {
                let (ki, kj) = (tap / kw, tap % kw);
                let dy = &off[(gi * taps + tap) * 2 * plane..][..plane];
                let dx = &off[((gi * taps + tap) * 2 + 1) * plane..][..plane];
                let m = mask.map(|m| &m[(gi * taps + tap) * plane..][..plane]);
                for (p, s) in s_t.iter_mut().enumerate() {
                    let (oy, ox) = (p / ow, p % ow);
                    let base_y = (oy * geo.strides[0] + ki * geo.dilations[0]) as f64 - geo.pad[0] as f64;
                    let base_x = (ox * geo.strides[1] + kj * geo.dilations[1]) as f64 - geo.pad[1] as f64;
                    let py = T::from_f64(base_y) + dy[p];
                    let px = T::from_f64(base_x) + dx[p];
                    *s = bilinear(py, px, ih, iw, m.map_or(T::ONE, |m| m[p]));
                }
            }
        }
        let fill = |(row, dst): (usize, &mut [T])| {
            let (c, tap) = (row / taps, row % taps);
            let src = &x[c * ih * iw..(c + 1) * ih * iw];
            if src.is_empty() {
                // An empty image: every sample lies outside it.
                dst.fill(T::ZERO);
                return;
            }
            let ss = &samples[((c / per_og) * taps + tap) * plane..][..plane];
            for (d, s) in dst.iter_mut().zip(ss) {
                *d = s.w[0] * src[s.idx[0]] + s.w[1] * src[s.idx[1]] + s.w[2] * src[s.idx[2]] + s.w[3] * src[s.idx[3]];
            }
        };
        if plane == 0 {
            return;
        }
        if crate::par::worth(cols.len(), crate::par::ELEMENTS) {
            cols.par_chunks_mut(plane).enumerate().for_each(fill);
        } else {
            cols.chunks_mut(plane).enumerate().for_each(fill);
        }
    }
}

/// The bilinear sample of an `h x w` image at `(y, x)` in pixel units, zero outside, times
/// `scale`.
fn bilinear<T: Float>(y: T, x: T, h: usize, w: usize, scale: T) -> Sample<T> {
    let (y0, x0) = (y.floor(), x.floor());
    let (ly, lx) = (y - y0, x - x0);
    let (hy, hx) = (T::ONE - ly, T::ONE - lx);
    // `as` saturates and turns NaN into 0, which lands outside or on the border as ONNX wants.
    let (y0, x0) = (y0.to_f64() as i64, x0.to_f64() as i64);
    let mut s = Sample::default();
    let corners = [
        (y0, x0, hy * hx),
        (y0, x0.saturating_add(1), hy * lx),
        (y0.saturating_add(1), x0, ly * hx),
        (y0.saturating_add(1), x0.saturating_add(1), ly * lx),
    ];
    for (k, (cy, cx, wt)) in corners.into_iter().enumerate() {
        if (0..h as i64).contains(&cy) && (0..w as i64).contains(&cx) {
            s.idx[k] = cy as usize * w + cx as usize;
            s.w[k] = wt * scale;
        }
    }
    s
}

/// The two values of a per-axis list resolved for two spatial axes.
fn to2(v: &[usize]) -> [usize; 2] {
    [v[0], v[1]]
}
