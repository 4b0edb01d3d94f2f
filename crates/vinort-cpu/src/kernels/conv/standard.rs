//! [Conv](https://onnx.ai/onnx/operators/onnx__Conv.html) and
//! [ConvTranspose](https://onnx.ai/onnx/operators/onnx__ConvTranspose.html), opsets 1–22+,
//! 1-D, 2-D and 3-D spatial, f32 and f64 (f16 and bf16 computed in f32).
//!
//! Conv is im2col + one GEMM per (image, group); a 1x1, stride-1, unpadded conv multiplies the
//! input directly, and a depthwise conv (one input and one output channel per group) is a
//! direct loop whose innermost axis is a contiguous multiply-add the compiler vectorises.
//! ConvTranspose is one GEMM per (image, group) producing columns, scattered back by col2im.
//! Work is spread with rayon over (image, group) when there are enough of them, otherwise
//! inside the GEMM.

use std::borrow::Cow;
use vinort_ir::Values;

use rayon::prelude::*;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::depthwise::depthwise_plane;
use super::im2col::{Geo3, im2col, prod3};
use super::narrow::Narrow;
use crate::kernel::{Kernel, NodeInfo, Registry, opt_tensor_in, tensors_in};
use crate::kernels::epilogue::{Epilogue, Operands as EpiOperands};
use crate::kernels::linalg::common::{Real, View, check_dtype, from_compute, matmul_into, to_compute, widen_const};
use crate::kernels::window::{AutoPad, Window, WindowAttrs, to3, valid_range};

const TYPES: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

pub(crate) fn register(r: &mut Registry) {
    r.op("", "Conv", conv_factory);
    r.op("", "ConvTranspose", conv_transpose_factory);
}

/// The node's element type, then X, W and the optional bias in the compute type.
type ConvInputs<'a> = (DType, Cow<'a, Tensor>, Cow<'a, Tensor>, Option<Cow<'a, Tensor>>);

/// Weights and bias widened to f32 once when they are f16/bf16 constants.
struct Consts {
    w: Option<Tensor>,
    b: Option<Tensor>,
}

impl Consts {
    fn new(info: &NodeInfo<'_>) -> Result<Consts> {
        for i in 0..3 {
            check_dtype(info.node, info.input_dtype(i), &TYPES)?;
        }
        let widen = |i| match info.const_input(i).filter(|t| TYPES.contains(&t.dtype())) {
            Some(t) => widen_const(t),
            None => Ok(None),
        };
        Ok(Consts { w: widen(1)?, b: widen(2)? })
    }

    /// (x, w, bias) in the compute type, checking they share the node's element type.
    fn inputs<'a>(&'a self, inputs: &[Option<&'a Value>]) -> Result<ConvInputs<'a>> {
        let [x, w] = tensors_in(inputs)?;
        let b = opt_tensor_in(inputs, 2)?;
        let dtype = x.dtype();
        if w.dtype() != dtype || b.is_some_and(|b| b.dtype() != dtype) {
            return Err(Error::invalid("X, W and B must share one element type"));
        }
        if !TYPES.contains(&dtype) {
            return Err(Error::unsupported(format!("{dtype} inputs")));
        }
        let xc = to_compute(x)?;
        let wc = match &self.w {
            Some(t) if t.shape() == w.shape() => Cow::Borrowed(t),
            _ => to_compute(w)?,
        };
        let bc = match (b, &self.b) {
            (None, _) => None,
            (Some(b), Some(t)) if t.shape() == b.shape() => Some(Cow::Borrowed(t)),
            (Some(b), _) => Some(to_compute(b)?),
        };
        Ok((dtype, xc, wc, bc))
    }
}

/// Checks the parts of the shapes both ops share and returns (spatial rank, kernel shape).
fn check_shapes(x: &[usize], w: &[usize], kernel_attr: &Option<Vec<usize>>) -> Result<Vec<usize>> {
    if x.len() < 3 {
        return Err(Error::invalid(format!("X must be [N, C, spatial...], got {x:?}")));
    }
    if w.len() != x.len() {
        return Err(Error::invalid(format!("W {w:?} and X {x:?} differ in rank")));
    }
    if x.len() > 5 {
        return Err(Error::unsupported(format!("{}-D spatial convolutions (1-D to 3-D only)", x.len() - 2)));
    }
    let kernel = w[2..].to_vec();
    if let Some(k) = kernel_attr
        && *k != kernel
    {
        return Err(Error::invalid(format!("kernel_shape {k:?} disagrees with W {w:?}")));
    }
    Ok(kernel)
}

fn check_bias(b: Option<&Tensor>, m: usize) -> Result<()> {
    match b {
        Some(b) if b.shape() != [m] => Err(Error::invalid(format!("B must have shape [{m}], got {:?}", b.shape()))),
        _ => Ok(()),
    }
}

/// Runs `task(index, output chunk, scratch, parallel_gemm)` once per (image, group), in
/// parallel over tasks when there are at least as many as threads.
fn for_each_task<T: Real>(
    out: &mut [T],
    tasks: usize,
    task: impl Fn(usize, &mut [T], &mut Vec<T>, bool) -> Result<()> + Sync,
) -> Result<()> {
    if out.is_empty() || tasks == 0 {
        return Ok(());
    }
    let chunk = out.len() / tasks;
    if tasks > 1 && !crate::par::serial() && tasks >= rayon::current_num_threads() {
        out.par_chunks_mut(chunk).enumerate().try_for_each(|(t, y)| with_scratch(|col| task(t, y, col, false)))
    } else {
        with_scratch(|col| out.chunks_mut(chunk).enumerate().try_for_each(|(t, y)| task(t, y, col, true)))
    }
}

thread_local! {
    /// This thread's im2col / column scratch, kept across runs (a `Vec<f32>` or `Vec<f64>`).
    static SCRATCH: std::cell::Cell<Option<Box<dyn std::any::Any>>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with this thread's scratch vector of `T`, kept across calls so that a conv does
/// not allocate (and zero) its column matrix every run. The vector is taken out of the cell
/// for the call, so a nested use on the same thread gets a new one instead of a conflict.
fn with_scratch<T: Real, R>(f: impl FnOnce(&mut Vec<T>) -> R) -> R {
    let mut held = SCRATCH.take().filter(|b| b.is::<Vec<T>>()).unwrap_or_else(|| Box::new(Vec::<T>::new()));
    let r = match held.downcast_mut::<Vec<T>>() {
        Some(v) => f(v),
        None => f(&mut Vec::new()),
    };
    SCRATCH.set(Some(held));
    r
}

/// Sets each channel plane of `y` to its bias, or `y` to zeros without one: the start of a
/// block that is then added to (the output buffer holds garbage until then).
fn fill_bias<T: Real>(y: &mut [T], plane: usize, bias: Option<&[T]>) {
    match bias {
        Some(b) => {
            for (row, v) in y.chunks_mut(plane).zip(b) {
                row.fill(*v);
            }
        }
        None => y.fill(T::ZERO),
    }
}

// ---------------------------------------------------------------------------------------------
// Conv

struct Conv {
    attrs: WindowAttrs,
    group: i64,
    consts: Consts,
    /// What the graph optimizer fused after it.
    epi: Epilogue,
    /// The transposed packed product for images of few output pixels.
    narrow: Option<Narrow>,
}

pub(crate) fn conv_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    fused_conv_factory(info, Epilogue::default())
}

/// A Conv with the elementwise tail `epi` applied to each (image, group) block as it is made.
pub(crate) fn fused_conv_factory(info: &NodeInfo<'_>, epi: Epilogue) -> Result<Box<dyn Kernel>> {
    let node = info.node;
    Ok(Box::new(Conv {
        attrs: WindowAttrs::parse(node)?,
        group: node.attr_or("group", 1i64)?,
        consts: Consts::new(info)?,
        epi,
        narrow: Narrow::new(info, node.attr_or("group", 1i64)?),
    }))
}

impl Kernel for Conv {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (dtype, x, w, b) = self.consts.inputs(inputs)?;
        let (xs, ws) = (x.shape(), w.shape());
        let kernel = check_shapes(xs, ws, &self.attrs.kernel)?;
        let (n, c, m) = (xs[0], xs[1], ws[0]);
        let group = usize::try_from(self.group)
            .ok()
            .filter(|g| *g > 0)
            .ok_or_else(|| Error::invalid("group must be positive"))?;
        if c % group != 0 || m % group != 0 || ws[1] * group != c {
            return Err(Error::invalid(format!(
                "group {group} does not fit X channels {c}, W {ws:?} (W must be [M, C/group, ...])"
            )));
        }
        check_bias(b.as_deref(), m)?;
        let win = self.attrs.resolve(&kernel)?;
        let geo = win.geometry(&xs[2..])?;
        let g = Geo3::forward((n, c, m, group), &xs[2..], &win, &geo);
        let out_len = n * m * geo.out.iter().product::<usize>();
        let ops = self.epi.operands(inputs, out_len)?;
        if let Some(narrow) = self.narrow.as_ref().filter(|nw| dtype == DType::F32 && nw.takes(&g)) {
            let (x, b) = (x.as_slice::<f32>()?, b.as_deref().map(Tensor::as_slice::<f32>).transpose()?);
            let (per_in, per_out) = (c * prod3(&g.i), out_len / n.max(1));
            let y = Tensor::try_build_full::<f32, Error>(&[&[n, m], geo.out.as_slice()].concat(), |y| {
                for (i, yi) in y.chunks_exact_mut(per_out).enumerate() {
                    narrow.image(&g, &x[i * per_in..][..per_in], b, yi)?;
                    self.epi.apply(yi, i * per_out, per_out, ops)?;
                }
                Ok(())
            })?;
            return Ok(smallvec::smallvec![y.into()]);
        }
        let epi = (!self.epi.is_empty()).then_some((&self.epi, ops));
        let run = Operands { g: &g, x: &x, w: &w, b: b.as_deref(), transpose: false, epi };
        run.in_compute_type(&[&[n, m], geo.out.as_slice()].concat(), dtype)
    }
}

/// X, W and the optional B as slices of the compute type.
type Slices<'a, T> = (&'a [T], &'a [T], Option<&'a [T]>);

/// A Conv or ConvTranspose's widened operands over its geometry.
struct Operands<'a> {
    g: &'a Geo3,
    x: &'a Tensor,
    w: &'a Tensor,
    b: Option<&'a Tensor>,
    transpose: bool,
    /// A fused tail and its residual (Conv only).
    epi: Option<(&'a Epilogue, EpiOperands<'a>)>,
}

impl Operands<'_> {
    /// Builds an output of `shape` in the compute type of the widened inputs (`f64` for f64,
    /// else `f32`), then narrows it back to the node's `dtype`.
    fn in_compute_type(&self, shape: &[usize], dtype: DType) -> Result<Values> {
        let y = match self.x.dtype() {
            // Both forms write every element (see `fill_bias`).
            DType::F64 => Tensor::try_build_full::<f64, Error>(shape, |o| self.run(o))?,
            _ => Tensor::try_build_full::<f32, Error>(shape, |o| self.run(o))?,
        };
        Ok(smallvec::smallvec![from_compute(y, dtype)?.into()])
    }

    fn run<T: Real>(&self, out: &mut [T]) -> Result<()> {
        if self.transpose { conv_transpose(self, out) } else { conv(self, out) }
    }

    /// X, W (`w_len` elements) and B as `T`, checked against the geometry and the output.
    fn slices<T: Real>(&self, w_len: usize, out_len: usize) -> Result<Slices<'_, T>> {
        let (g, [pi, po, _]) = (self.g, self.g.sizes().1);
        let (x, w) = (self.x.as_slice::<T>()?, self.w.as_slice::<T>()?);
        if x.len() != g.n * g.c * pi || w.len() != w_len || out_len != g.n * g.m * po {
            let op = if self.transpose { "ConvTranspose" } else { "Conv" };
            return Err(Error::invalid(format!("{op} buffers do not match their shapes")));
        }
        Ok((x, w, self.b.map(|b| b.as_slice::<T>()).transpose()?))
    }
}

fn conv<T: Real>(op: &Operands<'_>, out: &mut [T]) -> Result<()> {
    let g = op.g;
    let ((cg, mg), [pi, po, pk]) = g.sizes();
    let kdim = cg * pk;
    let (x, w, bias) = op.slices::<T>(g.m * kdim, out.len())?;
    let depthwise = cg == 1 && mg == 1;
    let pointwise = pk == 1 && g.s == [1; 3] && g.p == [0; 3] && g.o == g.i;
    let chunk = mg * po;
    for_each_task(out, g.n * g.group, |t, y, col, par| {
        let (ni, gi) = (t / g.group, t % g.group);
        let xg = &x[(ni * g.c + gi * cg) * pi..][..cg * pi];
        let wg = &w[gi * mg * kdim..][..mg * kdim];
        // The product overwrites its block when there is no bias to add to.
        if bias.is_some() || depthwise {
            fill_bias(y, po, bias.map(|b| &b[gi * mg..][..mg]));
        }
        if depthwise {
            depthwise_plane(g, xg, wg, y, col);
        } else {
            let cols: &[T] = if pointwise {
                xg
            } else {
                col.resize(kdim * po, T::ZERO);
                im2col(g, cg, xg, col);
                col
            };
            let dims = (mg, po, kdim);
            matmul_into(dims, View::rows(wg, kdim), View::rows(cols, po), y, po, bias.is_some(), T::ONE, par)?;
        }
        match op.epi {
            Some((epi, ops)) => epi.apply(y, t * chunk, y.len(), ops),
            None => Ok(()),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose

struct ConvTranspose {
    attrs: WindowAttrs,
    group: i64,
    output_padding: Option<Vec<i64>>,
    output_shape: Option<Vec<i64>>,
    consts: Consts,
}

fn conv_transpose_factory(info: &NodeInfo<'_>) -> Result<Box<dyn Kernel>> {
    let node = info.node;
    Ok(Box::new(ConvTranspose {
        attrs: WindowAttrs::parse(node)?,
        group: node.attr_or("group", 1i64)?,
        output_padding: node.attr("output_padding")?,
        output_shape: node.attr("output_shape")?,
        consts: Consts::new(info)?,
    }))
}

impl ConvTranspose {
    /// Output extents and begin pads per the spec's ConvTranspose equations.
    fn geometry(&self, input: &[usize], win: &Window) -> Result<(Vec<usize>, Vec<isize>)> {
        let r = input.len();
        let op: Vec<i64> = match &self.output_padding {
            None => vec![0; r],
            Some(v) if v.len() == r && v.iter().all(|x| *x >= 0) => v.clone(),
            Some(v) => return Err(Error::invalid(format!("output_padding {v:?} does not fit {r} spatial axes"))),
        };
        // output_shape may be given with or without the leading N and C.
        let target: Option<Vec<i64>> = match &self.output_shape {
            None => None,
            Some(v) if v.len() == r => Some(v.clone()),
            Some(v) if v.len() == r + 2 => Some(v[2..].to_vec()),
            Some(v) => return Err(Error::invalid(format!("output_shape {v:?} does not fit {r} spatial axes"))),
        };
        let mut out = vec![0; r];
        let mut begin = vec![0; r];
        for i in 0..r {
            let (inp, s, k, d) =
                (input[i] as i64, win.strides[i] as i64, win.kernel[i] as i64, win.dilations[i] as i64);
            let natural = s * (inp - 1) + op[i] + (k - 1) * d + 1;
            let wanted = match (&target, win.auto_pad) {
                (Some(t), _) => Some(t[i]),
                (None, AutoPad::SameUpper | AutoPad::SameLower) => Some(inp * s),
                _ => None,
            };
            let (o, b) = match wanted {
                Some(o) => {
                    let total = natural - o;
                    // Spec: SAME_UPPER puts the smaller half first, everything else the larger.
                    // The halves are floored (the spec's reference divides with Python's `//`):
                    // an output_shape larger than the natural extent makes `total` negative,
                    // and the extra rows go at the end, so the begin pad of -1 is 0, not -1.
                    let half = total.div_euclid(2);
                    let b = if win.auto_pad == AutoPad::SameUpper { half } else { total - half };
                    (o, b)
                }
                None if win.auto_pad == AutoPad::Valid => (natural, 0),
                None => (natural - (win.pads[i] + win.pads[i + r]) as i64, win.pads[i] as i64),
            };
            if o < 0 {
                return Err(Error::invalid(format!("ConvTranspose output extent {o} on spatial axis {i} is negative")));
            }
            out[i] = o as usize;
            begin[i] = b as isize;
        }
        Ok((out, begin))
    }
}

impl Kernel for ConvTranspose {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let (dtype, x, w, b) = self.consts.inputs(inputs)?;
        let (xs, ws) = (x.shape(), w.shape());
        let kernel = check_shapes(xs, ws, &self.attrs.kernel)?;
        let (n, c) = (xs[0], xs[1]);
        let group = usize::try_from(self.group)
            .ok()
            .filter(|g| *g > 0)
            .ok_or_else(|| Error::invalid("group must be positive"))?;
        if ws[0] != c || c % group != 0 {
            return Err(Error::invalid(format!(
                "group {group} and W {ws:?} do not fit X channels {c} (W must be [C, M/group, ...])"
            )));
        }
        if xs[2..].contains(&0) {
            return Err(Error::invalid(format!("ConvTranspose needs a non-empty spatial input, got {xs:?}")));
        }
        let m = ws[1] * group;
        check_bias(b.as_deref(), m)?;
        let win = self.attrs.resolve(&kernel)?;
        let (out, begin) = self.geometry(&xs[2..], &win)?;
        let mut p = [0isize; 3];
        p[3 - begin.len()..].copy_from_slice(&begin);
        let g = Geo3 {
            n,
            c,
            m,
            group,
            i: to3(&xs[2..], 1),
            o: to3(&out, 1),
            k: to3(&kernel, 1),
            s: to3(&win.strides, 1),
            d: to3(&win.dilations, 1),
            p,
        };
        let run = Operands { g: &g, x: &x, w: &w, b: b.as_deref(), transpose: true, epi: None };
        run.in_compute_type(&[&[n, m], out.as_slice()].concat(), dtype)
    }
}

fn conv_transpose<T: Real>(op: &Operands<'_>, out: &mut [T]) -> Result<()> {
    let g = op.g;
    let ((cg, mg), [pi, po, pk]) = g.sizes();
    let mgk = mg * pk;
    let (x, w, bias) = op.slices::<T>(g.c * mgk, out.len())?;
    let direct = pk == 1 && g.s == [1; 3] && g.p == [0; 3] && g.o == g.i;
    for_each_task(out, g.n * g.group, |t, y, col, par| {
        let (ni, gi) = (t / g.group, t % g.group);
        let xg = View::rows(&x[(ni * g.c + gi * cg) * pi..][..cg * pi], pi);
        // W_g is [C/group, M/group * kernel]; its transpose maps input channels to columns.
        let wt = View::rows(&w[gi * cg * mgk..][..cg * mgk], mgk).t();
        fill_bias(y, po, bias.map(|b| &b[gi * mg..][..mg]));
        if direct {
            return matmul_into((mg, pi, cg), wt, xg, y, po, bias.is_some(), T::ONE, par);
        }
        col.resize(mgk * pi, T::ZERO);
        matmul_into((mgk, pi, cg), wt, xg, col, pi, false, T::ONE, par)?;
        col2im(g, col, y);
        Ok(())
    })
}

/// Adds each column entry to the output position its input position and kernel tap reach.
fn col2im<T: Real>(g: &Geo3, col: &[T], y: &mut [T]) {
    let ([i0, i1, i2], [o0, o1, o2], [s0, s1, s2]) = (g.i, g.o, g.s);
    let (pi, po) = (prod3(&g.i), prod3(&g.o));
    let mut rows = col.chunks(pi);
    for plane in y.chunks_mut(po) {
        for [off0, off1, off2] in g.tap_offsets() {
            let Some(row) = rows.next() else { return };
            let (lo0, hi0) = valid_range(i0, o0, s0, off0);
            let (lo1, hi1) = valid_range(i1, o1, s1, off1);
            let (lo2, hi2) = valid_range(i2, o2, s2, off2);
            if lo2 == hi2 {
                continue;
            }
            for r0 in lo0..hi0 {
                let y0 = (r0 as isize * s0 as isize + off0) as usize;
                for r1 in lo1..hi1 {
                    let y1 = (r1 as isize * s1 as isize + off1) as usize;
                    let src = &row[(r0 * i1 + r1) * i2..][lo2..hi2];
                    let dst = &mut plane[(y0 * o1 + y1) * o2..][..o2];
                    let start = (lo2 as isize * s2 as isize + off2) as usize;
                    for (dv, sv) in dst[start..].iter_mut().step_by(s2).zip(src) {
                        *dv += *sv;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use vinort_ir::{Attr, Tensor};

    use crate::test_support::{op, run1};

    /// Leaves a NaN-filled buffer of `len` f32 in the tensor pool, where the next output of that
    /// size will come from.
    fn poison_pool(len: usize) {
        drop(Tensor::build::<f32>(&[len], |o| o.fill(f32::NAN)));
    }

    /// Output buffers are not zeroed before a kernel writes them: a bias-less depthwise Conv
    /// and ConvTranspose (which add into their blocks) must start from zeros themselves.
    /// Ones convolved with ones count the taps that land inside the input.
    #[test]
    fn biasless_conv_and_transpose_ignore_what_a_reused_buffer_held() {
        let ones = |shape: &[usize]| Tensor::from_vec(shape, vec![1f32; shape.iter().product()]).unwrap();
        for _ in 0..2 {
            poison_pool(2 * 9);
            let node =
                op("Conv", 11).inputs(2).attrs([("group", Attr::Int(2)), ("pads", Attr::Ints(vec![1; 4]))]).build();
            let y = run1(&node, &[ones(&[1, 2, 3, 3]), ones(&[2, 1, 3, 3])]).unwrap();
            let plane = [4.0, 6.0, 4.0, 6.0, 9.0, 6.0, 4.0, 6.0, 4.0];
            assert_eq!(y.as_slice::<f32>().unwrap(), [plane, plane].concat().as_slice());

            poison_pool(9);
            let node = op("ConvTranspose", 11).inputs(2).build();
            let y = run1(&node, &[ones(&[1, 1, 2, 2]), ones(&[1, 1, 2, 2])]).unwrap();
            assert_eq!(y.as_slice::<f32>().unwrap(), [1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0]);
        }
    }
}
