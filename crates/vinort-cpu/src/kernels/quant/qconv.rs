//! [ConvInteger](https://onnx.ai/onnx/operators/onnx__ConvInteger.html) and
//! [QLinearConv](https://onnx.ai/onnx/operators/onnx__QLinearConv.html) (opset 10), for 1 to 3
//! spatial axes and int8/uint8 operands.
//!
//! Inputs are shifted by their zero points (x per tensor, w per tensor or per output channel)
//! and convolved with i32 accumulation through Conv's im2col walk (one column matrix per
//! image and group); padding contributes zero after the shift.
//! QLinearConv adds the int32 bias, multiplies by `x_scale * w_scale / y_scale`, rounds half to
//! even, adds the output zero point and saturates to the output type, in f32 as ONNX Runtime
//! does ([`round::requantize`]).

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::{PAR_MIN, int_range, load_f32, load_i32, round, store_int};
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensor_in};
use crate::kernels::conv::depthwise::depthwise_plane;
use crate::kernels::conv::im2col::{Geo3, im2col, im2col_pad};
use crate::kernels::window::WindowAttrs;
use crate::qgemm::{Int8, PackedB, qgemm};

pub(crate) fn register(r: &mut Registry) {
    r.op("", "ConvInteger", conv_integer_factory);
    r.op("", "QLinearConv", qlinear_conv_factory);
}

pub(crate) struct ConvAttrs {
    window: WindowAttrs,
    pub(crate) group: usize,
}

pub(crate) fn parse_conv(info: &NodeInfo<'_>, x: usize, w: usize) -> Result<ConvAttrs> {
    let n = info.node;
    for i in [x, w] {
        if let Some(d) = info.input_dtype(i)
            && !matches!(d, DType::I8 | DType::U8)
        {
            return Err(Error::unsupported(format!("{} input of type {d}", n.op_type)));
        }
    }
    let group = n.attr_or::<i64>("group", 1)?;
    let group = usize::try_from(group).ok().filter(|g| *g > 0).ok_or_else(|| n.error("group must be positive"))?;
    Ok(ConvAttrs { window: WindowAttrs::parse(n)?, group })
}

/// The geometry of an integer convolution of X (`xs`) by W (`ws`), checked, and its output
/// shape: shared by the int8 and the generic paths.
pub(crate) fn geometry(attrs: &ConvAttrs, xs: &[usize], ws: &[usize]) -> Result<(Geo3, Vec<usize>)> {
    let (n, c, m, cg) = (xs[0], xs[1], ws[0], ws[1]);
    let g = attrs.group;
    if cg * g != c || m % g != 0 {
        return Err(Error::invalid(format!("channels {c} and {m} do not split into {g} groups (w {ws:?})")));
    }
    let kernel = &ws[2..];
    if let Some(k) = &attrs.window.kernel
        && k.as_slice() != kernel
    {
        return Err(Error::invalid(format!("kernel_shape {k:?} differs from the weights' {kernel:?}")));
    }
    let win = attrs.window.resolve(kernel)?;
    let geo = win.geometry(&xs[2..])?;
    let mut shape = vec![n, m];
    shape.extend_from_slice(&geo.out);
    Ok((Geo3::forward((n, c, m, g), &xs[2..], &win, &geo), shape))
}

/// The integer convolution of raw int8 operands, exact: `Σ (x − zx)(w − zw)` in i32 (wrapping).
/// A depthwise window of at most 258 taps runs in f32, where every partial sum of products of
/// 9-bit values is an integer below 2²⁴ and so exact; any other convolution is one
/// [`crate::qgemm`] product per (image, group) of the weights (rows, zero point per output
/// channel) and the input columns (`im2col` padded with `zx`, so padding adds nothing; a 1x1
/// stride-1 unpadded conv reads the input itself), written straight into the NCHW output.
/// None when the operands are not 8-bit or a zero point is not per tensor / per channel.
fn conv_int8(
    attrs: &ConvAttrs,
    x: &Tensor,
    zx: Option<&Tensor>,
    w: &Tensor,
    zw: Option<&Tensor>,
) -> Result<Option<(Vec<usize>, Vec<i32>)>> {
    let (xs, ws) = (x.shape(), w.shape());
    if !matches!(x.dtype(), DType::U8 | DType::I8)
        || !matches!(w.dtype(), DType::U8 | DType::I8)
        || xs.len() < 3
        || xs.len() > 5
        || ws.len() != xs.len()
    {
        return Ok(None);
    }
    let (geo3, shape) = geometry(attrs, xs, ws)?;
    let (n, c, m, cg, g) = (xs[0], xs[1], ws[0], ws[1], attrs.group);
    let zx = match zx.map(load_i32).transpose()?.as_deref() {
        None => 0,
        Some([z]) => *z,
        Some(_) => return Ok(None),
    };
    let zw = match zw.map(load_i32).transpose()? {
        None => vec![0; m],
        Some(z) if z.len() == 1 => vec![z[0]; m],
        Some(z) if z.len() == m => z,
        Some(_) => return Ok(None),
    };
    let g3 = geo3;
    let ((_, mg), [pi, po, pk]) = g3.sizes();
    let kdim = cg * pk;
    let (x, w) = (x.to_aligned(), w.to_aligned());
    let mut out = vec![0i32; n * m * po];
    if out.is_empty() {
        return Ok(Some((shape, out)));
    }
    if cg == 1 && mg == 1 && pk <= 258 {
        let xf = load_i32(&x)?;
        let wf = load_i32(&w)?;
        let wf: Vec<f32> = wf.iter().enumerate().map(|(i, v)| (v - zw[i / pk]) as f32).collect();
        let task = |t: usize, y: &mut [i32], buf: &mut (Vec<f32>, Vec<f32>, Vec<f32>)| {
            let ci = t % c;
            let (xs, ys, scratch) = buf;
            xs.clear();
            xs.extend(xf[t * pi..][..pi].iter().map(|v| (v - zx) as f32));
            ys.clear();
            ys.resize(po, 0.0);
            depthwise_plane(&g3, xs, &wf[ci * pk..][..pk], ys, scratch);
            y.iter_mut().zip(ys.iter()).for_each(|(y, v)| *y = *v as i32);
        };
        if !crate::par::worth(out.len() * pk, PAR_MIN) {
            let mut buf = Default::default();
            out.chunks_mut(po).enumerate().for_each(|(t, y)| task(t, y, &mut buf));
        } else {
            out.par_chunks_mut(po).enumerate().for_each_init(Default::default, |buf, (t, y)| task(t, y, buf));
        }
        return Ok(Some((shape, out)));
    }
    let pointwise = pk == 1 && g3.s == [1; 3] && g3.p == [0; 3] && g3.o == g3.i;
    for ni in 0..n {
        for gi in 0..g {
            let wg = match w.dtype() {
                DType::U8 => Int8::U8(&w.as_slice::<u8>()?[gi * mg * kdim..][..mg * kdim]),
                _ => Int8::I8(&w.as_slice::<i8>()?[gi * mg * kdim..][..mg * kdim]),
            };
            let off = (ni * c + gi * cg) * pi;
            let packed = match x.dtype() {
                DType::U8 => pack_cols(
                    &g3,
                    cg,
                    &x.as_slice::<u8>()?[off..][..cg * pi],
                    (kdim, po),
                    pointwise,
                    (zx as u8, zx),
                    |s| Int8::U8(s),
                )?,
                _ => pack_cols(
                    &g3,
                    cg,
                    &x.as_slice::<i8>()?[off..][..cg * pi],
                    (kdim, po),
                    pointwise,
                    (zx as i8, zx),
                    |s| Int8::I8(s),
                )?,
            };
            let y = &mut out[(ni * m + gi * mg) * po..][..mg * po];
            qgemm(mg, wg, kdim, &zw[gi * mg..][..mg], &packed, y, po, true).map_err(Error::invalid)?;
        }
    }
    Ok(Some((shape, out)))
}

/// One (image, group)'s input columns (kdim x po) packed as qgemm's right operand.
fn pack_cols<T: Copy + Default>(
    g3: &Geo3,
    cg: usize,
    xg: &[T],
    (kdim, po): (usize, usize),
    pointwise: bool,
    (pad, zx): (T, i32),
    wrap: impl Fn(&[T]) -> Int8<'_>,
) -> Result<PackedB> {
    let col: Vec<T>;
    let cols: &[T] = if pointwise {
        xg
    } else {
        col = {
            let mut v = vec![T::default(); kdim * po];
            im2col_pad(g3, cg, xg, &mut v, pad);
            v
        };
        &col
    };
    PackedB::new(wrap(cols), kdim, po, false, &[zx]).map_err(Error::invalid)
}

/// The shifted integer convolution: output shape and i32 elements.
fn conv_i32(attrs: &ConvAttrs, x: &[i32], xs: &[usize], w: &[i32], ws: &[usize]) -> Result<(Vec<usize>, Vec<i32>)> {
    if xs.len() < 3 || xs.len() > 5 || ws.len() != xs.len() {
        return Err(Error::unsupported(format!("integer convolution of input {xs:?} with weights {ws:?}")));
    }
    let (g3, shape) = geometry(attrs, xs, ws)?;
    let (n, c, m, cg, g) = (xs[0], xs[1], ws[0], ws[1], attrs.group);
    let ((_, mg), [pi, po, pk]) = g3.sizes();
    let kdim = cg * pk;
    let mut out = vec![0i32; n * m * po];
    // One (image, group) task: its input patches as a kdim x po matrix, then the weights'
    // mg x kdim product with it, accumulated with wrapping i32 as the direct sum would be.
    let task = |t: usize, y: &mut [i32], col: &mut Vec<i32>| {
        let (ni, gi) = (t / g, t % g);
        let xg = &x[(ni * c + gi * cg) * pi..][..cg * pi];
        let wg = &w[gi * mg * kdim..][..mg * kdim];
        col.resize(kdim * po, 0);
        im2col(&g3, cg, xg, col);
        for (yrow, wrow) in y.chunks_exact_mut(po).zip(wg.chunks_exact(kdim)) {
            for (&wv, crow) in wrow.iter().zip(col.chunks_exact(po)) {
                if wv != 0 {
                    for (o, &cv) in yrow.iter_mut().zip(crow) {
                        *o = o.wrapping_add(wv.wrapping_mul(cv));
                    }
                }
            }
        }
    };
    if !out.is_empty() {
        if !crate::par::worth(out.len() * kdim, PAR_MIN) {
            let mut col = Vec::new();
            out.chunks_mut(mg * po).enumerate().for_each(|(t, y)| task(t, y, &mut col));
        } else {
            out.par_chunks_mut(mg * po).enumerate().for_each_init(Vec::new, |col, (t, y)| task(t, y, col));
        }
    }
    Ok((shape, out))
}

/// `x - zp` with a per-tensor zero point.
fn shift_x(x: &Tensor, zp: Option<&Tensor>) -> Result<Vec<i32>> {
    let mut v = load_i32(x)?;
    if let Some(z) = zp {
        let zs = load_i32(z)?;
        let [z] = zs.as_slice() else {
            return Err(Error::unsupported(format!("x zero point of shape {:?} (only per-tensor)", z.shape())));
        };
        v.iter_mut().for_each(|v| *v -= *z);
    }
    Ok(v)
}

/// `w - zp` with a per-tensor or per-output-channel zero point.
fn shift_w(w: &Tensor, zp: Option<&Tensor>) -> Result<Vec<i32>> {
    let mut v = load_i32(w)?;
    if let Some(z) = zp {
        let zs = load_i32(z)?;
        let m = w.shape().first().copied().unwrap_or(0);
        if zs.len() != 1 && zs.len() != m {
            return Err(Error::invalid(format!("w zero point of shape {:?} for {m} output channels", z.shape())));
        }
        let per = v.len().checked_div(m).unwrap_or(0).max(1);
        for (i, v) in v.iter_mut().enumerate() {
            *v -= if zs.len() == 1 { zs[0] } else { zs[i / per] };
        }
    }
    Ok(v)
}

struct ConvInteger(ConvAttrs);

fn conv_integer_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let generic = Box::new(ConvInteger(parse_conv(info, 0, 1)?));
    super::qconv_prepared::prepared_integer_factory(info, generic)
}

impl Kernel for ConvInteger {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let w = tensor_in(inputs, 1)?;
        let (zx, zw) = (opt_tensor_in(inputs, 2)?, opt_tensor_in(inputs, 3)?);
        let (shape, y) = match conv_int8(&self.0, x, zx, w, zw)? {
            Some(r) => r,
            None => conv_i32(&self.0, &shift_x(x, zx)?, x.shape(), &shift_w(w, zw)?, w.shape())?,
        };
        Ok(smallvec::smallvec![Tensor::from_vec(&shape, y)?.into()])
    }
}

struct QLinearConv(ConvAttrs);

fn qlinear_conv_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let generic = Box::new(QLinearConv(parse_conv(info, 0, 3)?));
    super::qconv_prepared::prepared_factory(info, generic)
}

/// A scalar f32 parameter.
fn scalar(t: &Tensor, what: &str) -> Result<f32> {
    match load_f32(t)?.as_slice() {
        [v] => Ok(*v),
        _ => Err(Error::invalid(format!("{what} must be a scalar, got shape {:?}", t.shape()))),
    }
}

impl Kernel for QLinearConv {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        Ok(smallvec::smallvec![qlinear_conv(&self.0, inputs)?.into()])
    }
}

/// Zero point `i`, when given, must have the type of its data (input `data`).
fn check_zp_type(inputs: &[Option<&Value>], data: usize, i: usize) -> Result<()> {
    let d = tensor_in(inputs, data)?.dtype();
    match opt_tensor_in(inputs, i)? {
        Some(z) if z.dtype() != d => {
            Err(Error::invalid(format!("zero point (input {i}) has type {}, its data {d}", z.dtype())))
        }
        _ => Ok(()),
    }
}

/// QLinearConv of NCHW inputs (ONNX's and com.microsoft's, whose `channels_last` form
/// transposes around this).
pub(crate) fn qlinear_conv(attrs: &ConvAttrs, inputs: &[Option<&Value>]) -> Result<Tensor> {
    {
        let x = tensor_in(inputs, 0)?;
        let x_scale = scalar(tensor_in(inputs, 1)?, "x_scale")?;
        let w = tensor_in(inputs, 3)?;
        let w_scale = load_f32(tensor_in(inputs, 4)?)?;
        let y_scale = scalar(tensor_in(inputs, 6)?, "y_scale")?;
        let y_zp = opt_tensor_in(inputs, 7)?;
        let bias = opt_tensor_in(inputs, 8)?;
        check_zp_type(inputs, 0, 2)?;
        check_zp_type(inputs, 3, 5)?;
        let (zx, zw) = (opt_tensor_in(inputs, 2)?, opt_tensor_in(inputs, 5)?);
        let (shape, acc) = match conv_int8(attrs, x, zx, w, zw)? {
            Some(r) => r,
            None => conv_i32(attrs, &shift_x(x, zx)?, x.shape(), &shift_w(w, zw)?, w.shape())?,
        };
        let m = shape[1];
        if w_scale.len() != 1 && w_scale.len() != m {
            return Err(Error::invalid(format!("w_scale has {} elements for {m} output channels", w_scale.len())));
        }
        let bias = bias.map(load_i32).transpose()?;
        if let Some(b) = &bias
            && b.len() != m
        {
            return Err(Error::invalid(format!("bias has {} elements for {m} output channels", b.len())));
        }
        let out_dtype = y_zp.map_or(x.dtype(), Tensor::dtype);
        let Some((lo, hi)) = int_range(out_dtype).filter(|_| matches!(out_dtype, DType::I8 | DType::U8)) else {
            return Err(Error::unsupported(format!("QLinearConv output of type {out_dtype}")));
        };
        let zp = match y_zp {
            Some(z) => match load_i32(z)?.as_slice() {
                [v] => *v,
                _ => return Err(Error::unsupported("y_zero_point must be a scalar")),
            },
            None => 0,
        };
        let plane: usize = shape[2..].iter().product();
        let fill = |o: &mut [i32]| {
            for (i, (block, acc)) in o.chunks_mut(plane.max(1)).zip(acc.chunks(plane.max(1))).enumerate() {
                let oc = i % m.max(1);
                let ws = if w_scale.len() == 1 { w_scale[0] } else { w_scale[oc] };
                let b = bias.as_ref().map_or(0, |b| b[oc]);
                round::requantize(acc, b, x_scale * ws / y_scale, zp, (lo, hi), block, |v| v);
            }
        };
        let mut q = vec![0i32; acc.len()];
        fill(&mut q);
        store_int(out_dtype, &shape, &q)
    }
}
