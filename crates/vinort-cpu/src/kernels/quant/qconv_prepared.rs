//! QLinearConv with constant weights, scales, zero points and bias (what quantizers write and
//! what the optimizer's QDQ fusion builds), and ConvInteger with constant weights and weight
//! zero point (what `quantize_dynamic` writes after each DynamicQuantizeLinear), prepared once
//! when the kernel is built.
//!
//! At build time a depthwise filter is shifted by its zero point into f32, and (QLinearConv)
//! each output channel's multiplier `x_scale · w_scale / y_scale` and bias are computed.
//! ConvInteger's input zero point may be a runtime value (DynamicQuantizeLinear's output): it
//! is read per run. A run then works in parallel tasks with scratch reused across runs, and
//! each channel's i32 sums go to a [`Sink`]: requantized to 8 bits (QLinearConv) or stored as
//! they are (ConvInteger):
//!
//! * depthwise (one input channel per group, one output per group, at most 258 taps): per
//!   (image, channel) plane, `x − zx` in f32, the f32 depthwise walk (exact: every partial sum
//!   of products of 9-bit integers stays below 2²⁴), then requantized straight into the plane
//!   of the 8-bit output;
//! * otherwise, per (image, group), `W · cols` with the weights as qgemm's left operand (read in
//!   place) and the input columns (`im2col` padded with `zx`; a 1x1 stride-1 unpadded conv's
//!   input itself) as its right, so the product comes out channel-major, as NCHW wants it. The
//!   pixels are cut into chunks of 192 columns (and the channels into blocks when there are few
//!   chunks); a task packs its chunk ([`PackedB::repack_rows`], into reused memory), multiplies
//!   into a small i32 block that stays in cache, and requantizes each row straight into its
//!   place in the output. No pixels × channels intermediate, no transposition.
//!
//! The arithmetic is [`super::qconv::qlinear_conv`]'s, unchanged (the same i32 sums, the same
//! f32 multiplier, the same requantization: ONNX Runtime's), so the outputs are identical; inputs this
//! form does not take (non-constant parameters, another input type) go to the generic kernels.

use std::cell::Cell;
use std::thread::LocalKey;
use vinort_ir::Values;

use rayon::prelude::*;
use vinort_ir::{DType, Error, Result, RunContext, Tensor, Value};

use super::qconv::{ConvAttrs, geometry, parse_conv};
use super::{int_range, load_f32, load_i32, round};
use crate::kernel::{Kernel, NodeInfo, opt_tensor_in, tensor_in};
use crate::kernels::conv::depthwise::depthwise_plane;
use crate::kernels::conv::im2col::{Geo3, im2col_pad};
use crate::per_shape::PerShape;
use crate::qgemm::{Int8, PackedB, qgemm};

/// An 8-bit quantized element type, with its reusable per-thread scratch.
pub(super) trait Q8: Copy + Default + Send + Sync + vinort_ir::Elem + 'static {
    fn int8(s: &[Self]) -> Int8<'_>;
    fn to_i32(self) -> i32;
    /// `v` (already clamped to the type's range) as the type.
    fn from_i32(v: i32) -> Self;
    /// This thread's buffer for im2col columns.
    fn cols() -> &'static LocalKey<Cell<Vec<Self>>>;
    /// True for i8.
    const SIGNED: bool;
}

/// A depthwise task's buffers: the shifted input plane, its f32 sums, the walk's scratch and
/// the sums as i32.
type PlaneBufs = (Vec<f32>, Vec<f32>, Vec<f32>, Vec<i32>);

thread_local! {
    static COLS_U8: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    static COLS_I8: Cell<Vec<i8>> = const { Cell::new(Vec::new()) };
    static ACC: Cell<Vec<i32>> = const { Cell::new(Vec::new()) };
    static PACKED: Cell<Option<PackedB>> = const { Cell::new(None) };
    static PLANES: Cell<PlaneBufs> = const { Cell::new((Vec::new(), Vec::new(), Vec::new(), Vec::new())) };
}

impl Q8 for u8 {
    const SIGNED: bool = false;
    fn int8(s: &[u8]) -> Int8<'_> {
        Int8::U8(s)
    }
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    fn from_i32(v: i32) -> u8 {
        v as u8
    }
    fn cols() -> &'static LocalKey<Cell<Vec<u8>>> {
        &COLS_U8
    }
}

impl Q8 for i8 {
    const SIGNED: bool = true;
    fn int8(s: &[i8]) -> Int8<'_> {
        Int8::I8(s)
    }
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    fn from_i32(v: i32) -> i8 {
        v as i8
    }
    fn cols() -> &'static LocalKey<Cell<Vec<i8>>> {
        &COLS_I8
    }
}

/// Runs `f` with this thread's buffer from `key`, resized to `len` (contents unspecified). The
/// buffer is taken out of the cell for the call, so a nested use on the same thread (a rayon
/// worker stealing another node's task) gets a fresh one instead of a borrow conflict.
pub(super) fn with_buf<T: Clone + Default, R>(
    key: &'static LocalKey<Cell<Vec<T>>>,
    len: usize,
    f: impl FnOnce(&mut [T]) -> R,
) -> R {
    let mut v = key.take();
    if v.len() < len {
        v.resize(len, T::default());
    }
    let r = f(&mut v[..len]);
    key.set(v);
    r
}

/// How the convolution runs.
pub(super) enum Form {
    /// (w − zw) in f32, `[channel][tap]`.
    Depthwise(Vec<f32>),
    /// The weights (M × K, u8 or i8, read in place as qgemm's left operand) and their zero
    /// point per output channel.
    Gemm(Tensor, Vec<i32>),
}

/// A QLinearConv or ConvInteger whose weights (and, for QLinearConv, every other parameter)
/// were constants at build time.
pub(crate) struct PreparedConv {
    p: Prepared,
    /// The generic kernel, for inputs this form does not take.
    fallback: Box<dyn Kernel>,
    /// The geometry and output shape of the last input shape.
    geometry: PerShape<(Geo3, Vec<usize>)>,
}

/// What was computed at build time.
pub(super) struct Prepared {
    pub(super) attrs: ConvAttrs,
    pub(super) x_dtype: DType,
    pub(super) w_shape: Vec<usize>,
    pub(super) zx: Zx,
    pub(super) out: Out,
    pub(super) form: Form,
}

/// X's zero point.
#[derive(Clone, Copy)]
pub(super) enum Zx {
    Const(i32),
    /// ConvInteger's input 2, read per run.
    Input,
}

/// What the i32 sums become.
pub(super) enum Out {
    /// QLinearConv: requantized into `dtype`.
    Requant(Requant),
    /// ConvInteger: the sums themselves.
    Sums,
}

/// QLinearConv's requantization parameters.
pub(super) struct Requant {
    pub(super) dtype: DType,
    /// Per output channel: multiplier (`x_scale · w_scale / y_scale` in f32) and bias.
    pub(super) mult: Vec<f32>,
    pub(super) bias: Vec<i32>,
    pub(super) zy: i32,
    /// The output type's range.
    pub(super) range: (i32, i32),
}

/// Where an output channel's row of i32 sums goes.
trait Sink: Sync {
    type Y: Copy + Default + Send + Sync + vinort_ir::Elem + 'static;
    /// Output channel `oc`'s sums `acc` into `dst` (as long).
    fn row(&self, oc: usize, acc: &[i32], dst: &mut [Self::Y]);
}

/// Requantized to the 8-bit `Y`.
struct ToQ8<'a, Y>(&'a Requant, std::marker::PhantomData<Y>);

impl<Y: Q8> Sink for ToQ8<'_, Y> {
    type Y = Y;
    fn row(&self, oc: usize, acc: &[i32], dst: &mut [Y]) {
        let q = self.0;
        round::requantize(acc, q.bias[oc], q.mult[oc], q.zy, q.range, dst, Y::from_i32);
    }
}

/// Stored as i32.
struct ToI32;

impl Sink for ToI32 {
    type Y = i32;
    fn row(&self, _: usize, acc: &[i32], dst: &mut [i32]) {
        dst.copy_from_slice(acc);
    }
}

/// Input `i` when absent (None), or constant (Some(Some)); Some(None) when it is a runtime value.
fn constant<'a>(info: &'a NodeInfo<'_>, i: usize) -> Option<Option<&'a Tensor>> {
    match info.node.inputs.get(i).copied().flatten() {
        None => Some(None),
        Some(_) => info.const_input(i).map(Some),
    }
}

/// The prepared QLinearConv when X's type is known and every other input is a constant of a
/// form it takes; `fallback` otherwise.
pub(crate) fn prepared_factory(info: &NodeInfo<'_>, fallback: Box<dyn Kernel>) -> Result<Box<dyn Kernel>> {
    Ok(match prepare_qlinear(info)? {
        Some(p) => Box::new(PreparedConv { p, fallback, geometry: PerShape::default() }),
        None => fallback,
    })
}

/// The prepared ConvInteger when X's type is known and the weights and their zero point are
/// constants of a form it takes (X's zero point may be a runtime value); `fallback` otherwise.
pub(crate) fn prepared_integer_factory(info: &NodeInfo<'_>, fallback: Box<dyn Kernel>) -> Result<Box<dyn Kernel>> {
    Ok(match prepare_integer(info)? {
        Some(p) => Box::new(PreparedConv { p, fallback, geometry: PerShape::default() }),
        None => fallback,
    })
}

/// A per-tensor zero point's value: 0 when absent, None when it is not one element.
fn scalar_zp(z: Option<&Tensor>) -> Result<Option<i32>> {
    Ok(match z.map(load_i32).transpose()?.as_deref() {
        None => Some(0),
        Some([v]) => Some(*v),
        Some(_) => None,
    })
}

/// The weights' form and zero point per output channel, when W (input `wi`) and its zero point
/// (input `zwi`) are constants this kernel takes.
fn weights(info: &NodeInfo<'_>, wi: usize, zwi: usize) -> Result<Option<(ConvAttrs, Vec<usize>, Form)>> {
    let (Some(Some(w)), Some(zw)) = (constant(info, wi), constant(info, zwi)) else { return Ok(None) };
    if !matches!(w.dtype(), DType::U8 | DType::I8) || zw.is_some_and(|z| z.dtype() != w.dtype()) {
        return Ok(None);
    }
    let ws = w.shape().to_vec();
    if !(3..=5).contains(&ws.len()) || ws[0] == 0 {
        return Ok(None);
    }
    let attrs = parse_conv(info, 0, wi)?;
    let (m, g) = (ws[0], attrs.group);
    if m % g != 0 {
        return Ok(None);
    }
    let zwv = zw.map(load_i32).transpose()?.unwrap_or_else(|| vec![0]);
    let zwv = match zwv.len() {
        1 => vec![zwv[0]; m],
        n if n == m => zwv,
        _ => return Ok(None),
    };
    let pk: usize = ws[2..].iter().product();
    let (cg, mg) = (ws[1], m / g);
    if cg * pk == 0 {
        // No products (an empty channel or kernel axis): the generic kernel's output.
        return Ok(None);
    }
    let wt = w.to_aligned();
    let form = if cg == 1 && mg == 1 && pk <= 258 {
        let wi = load_i32(&wt)?;
        Form::Depthwise(wi.iter().enumerate().map(|(i, v)| (v - zwv[i / pk]) as f32).collect())
    } else {
        Form::Gemm(wt, zwv)
    };
    Ok(Some((attrs, ws, form)))
}

pub(super) fn prepare_qlinear(info: &NodeInfo<'_>) -> Result<Option<Prepared>> {
    let mut c = [None; 9];
    for (i, slot) in c.iter_mut().enumerate().skip(1) {
        match constant(info, i) {
            Some(t) => *slot = t,
            None => return Ok(None),
        }
    }
    let [_, Some(x_scale), zx, Some(_), Some(w_scale), _, Some(y_scale), zy, bias] = c else { return Ok(None) };
    let Some(x_dtype) = info.input_dtype(0).or(zx.map(Tensor::dtype)) else { return Ok(None) };
    let out_dtype = zy.map_or(x_dtype, Tensor::dtype);
    let all_8bit = [x_dtype, out_dtype].iter().all(|d| matches!(d, DType::U8 | DType::I8));
    if !all_8bit || zx.is_some_and(|z| z.dtype() != x_dtype) {
        return Ok(None);
    }
    let Some((attrs, ws, form)) = weights(info, 3, 5)? else { return Ok(None) };
    let m = ws[0];
    let scalar = |t: &Tensor| -> Result<Option<f32>> {
        Ok(match load_f32(t)?.as_slice() {
            [v] => Some(*v),
            _ => None,
        })
    };
    let (Some(xs), Some(ys)) = (scalar(x_scale)?, scalar(y_scale)?) else { return Ok(None) };
    let wsc = load_f32(w_scale)?;
    let (Some(zxv), Some(zyv)) = (scalar_zp(zx)?, scalar_zp(zy)?) else { return Ok(None) };
    // ONNX's bias is [M]: one of another length is the generic kernel's error to report.
    let bias = match bias.map(load_i32).transpose()? {
        None => vec![0; m],
        Some(b) if b.len() == m => b,
        Some(_) => return Ok(None),
    };
    if wsc.len() != 1 && wsc.len() != m {
        return Ok(None);
    }
    // The generic kernel's multiplier: the product and quotient in f32.
    let mult = (0..m).map(|oc| xs * if wsc.len() == 1 { wsc[0] } else { wsc[oc] } / ys).collect();
    let Some(range) = int_range(out_dtype) else { return Ok(None) };
    let out = Out::Requant(Requant { dtype: out_dtype, mult, bias, zy: zyv, range });
    Ok(Some(Prepared { attrs, x_dtype, w_shape: ws, zx: Zx::Const(zxv), out, form }))
}

fn prepare_integer(info: &NodeInfo<'_>) -> Result<Option<Prepared>> {
    let zx = match constant(info, 2) {
        Some(Some(z)) if info.input_dtype(0).is_some_and(|d| d != z.dtype()) => return Ok(None),
        Some(Some(z)) => match scalar_zp(Some(z))? {
            Some(v) => Zx::Const(v),
            None => return Ok(None),
        },
        Some(None) => Zx::Const(0),
        None => Zx::Input,
    };
    let Some(x_dtype) = info.input_dtype(0).or_else(|| info.input_dtype(2)) else { return Ok(None) };
    if !matches!(x_dtype, DType::U8 | DType::I8) || info.input_dtype(2).is_some_and(|d| d != x_dtype) {
        return Ok(None);
    }
    let Some((attrs, ws, form)) = weights(info, 1, 3)? else { return Ok(None) };
    Ok(Some(Prepared { attrs, x_dtype, w_shape: ws, zx, out: Out::Sums, form }))
}

impl Kernel for PreparedConv {
    fn run(&self, inputs: &[Option<&Value>], ctx: &RunContext) -> Result<Values> {
        let p = &self.p;
        let x = tensor_in(inputs, 0)?;
        let xs = x.shape();
        if x.dtype() != p.x_dtype || xs.len() != p.w_shape.len() {
            return self.fallback.run(inputs, ctx);
        }
        let zx = match p.zx {
            Zx::Const(v) => v,
            // A zero point of another type or size is the generic kernel's to take or reject.
            Zx::Input => match opt_tensor_in(inputs, 2)? {
                None => 0,
                // One byte read in place (load_i32 would allocate every run).
                Some(z) if z.dtype() == p.x_dtype && z.len() == 1 => {
                    let byte = z.as_bytes()[0];
                    if p.x_dtype == DType::U8 { i32::from(byte) } else { i32::from(byte as i8) }
                }
                Some(_) => return self.fallback.run(inputs, ctx),
            },
        };
        let prepared = self.geometry.get(xs, || geometry(&p.attrs, xs, &p.w_shape))?;
        let (g3, shape) = (&prepared.0, prepared.1.as_slice());
        let x = x.to_aligned();
        let y = match (&p.out, p.x_dtype) {
            (Out::Sums, DType::U8) => p.conv::<u8, _>(g3, x.as_slice()?, zx, shape, &ToI32),
            (Out::Sums, _) => p.conv::<i8, _>(g3, x.as_slice()?, zx, shape, &ToI32),
            (Out::Requant(q), x_dtype) => {
                let (to_u8, to_i8) = (ToQ8::<u8>(q, Default::default()), ToQ8::<i8>(q, Default::default()));
                match (x_dtype, q.dtype) {
                    (DType::U8, DType::U8) => p.conv::<u8, _>(g3, x.as_slice()?, zx, shape, &to_u8),
                    (DType::U8, _) => p.conv::<u8, _>(g3, x.as_slice()?, zx, shape, &to_i8),
                    (_, DType::U8) => p.conv::<i8, _>(g3, x.as_slice()?, zx, shape, &to_u8),
                    _ => p.conv::<i8, _>(g3, x.as_slice()?, zx, shape, &to_i8),
                }
            }
        }?;
        Ok(smallvec::smallvec![y.into()])
    }
}

impl Prepared {
    fn conv<X: Q8, S: Sink>(&self, g3: &Geo3, x: &[X], zx: i32, shape: &[usize], sink: &S) -> Result<Tensor> {
        Tensor::try_build_full::<S::Y, Error>(shape, |y| {
            if y.is_empty() {
                return Ok(());
            }
            match &self.form {
                Form::Depthwise(w) => {
                    self.depthwise(g3, x, zx, w, y, sink);
                    Ok(())
                }
                Form::Gemm(w, zw) => self.gemm(g3, x, zx, w, zw, y, sink),
            }
        })
    }

    fn depthwise<X: Q8, S: Sink>(&self, g3: &Geo3, x: &[X], zx: i32, w: &[f32], y: &mut [S::Y], sink: &S) {
        let ((_, [pi, po, pk]), c) = (g3.sizes(), g3.c);
        // About 32k multiply-adds per task, so small late layers do not pay a fork per plane.
        let min = (1 << 15) / (po * pk).max(1);
        let plane = |(t, yp): (usize, &mut [S::Y])| {
            let (ci, mut bufs) = (t % c, PLANES.take());
            let (xf, yf, scratch, acc) = &mut bufs;
            xf.resize(pi, 0.0);
            widen(&x[t * pi..][..pi], zx, xf);
            yf.clear();
            yf.resize(po, 0.0);
            depthwise_plane(g3, xf, &w[ci * pk..][..pk], yf, scratch);
            acc.resize(po, 0);
            narrow(yf, acc);
            sink.row(ci, acc, yp);
            PLANES.set(bufs);
        };
        if crate::par::worth(y.len() * pk, 2 << 15) {
            y.par_chunks_mut(po).enumerate().with_min_len(min.max(1)).for_each(plane);
        } else {
            y.chunks_mut(po).enumerate().for_each(plane);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn gemm<X: Q8, S: Sink>(
        &self,
        g3: &Geo3,
        x: &[X],
        zx: i32,
        w: &Tensor,
        zw: &[i32],
        y: &mut [S::Y],
        sink: &S,
    ) -> Result<()> {
        /// Pixel columns per task: four 48-column panels of packed B.
        const CHUNK: usize = 192;
        let ((cg, mg), [pi, po, pk]) = g3.sizes();
        let (c, m, kdim) = (g3.c, g3.m, cg * pk);
        let pointwise = pk == 1 && g3.s == [1; 3] && g3.p == [0; 3] && g3.o == g3.i;
        let chunks = po.div_ceil(CHUNK);
        // Few chunks (a late 7x7 or 14x14 layer): split the channels too, so both cores work.
        let blocks = (4usize.div_ceil(chunks)).min(mg.div_ceil(16)).max(1);
        let rows_per = mg.div_ceil(blocks);
        let out = Disjoint::new(y);
        for ni in 0..g3.n {
            for gi in 0..g3.group {
                let xg = &x[(ni * c + gi * cg) * pi..][..cg * pi];
                let wg = &w.as_bytes()[gi * mg * kdim..][..mg * kdim];
                let task = |cols: &[X], t: usize| -> Result<()> {
                    let (ci, bi) = (t / blocks, t % blocks);
                    let (p0, r0) = (ci * CHUNK, bi * rows_per);
                    let (np, nr) = ((po - p0).min(CHUNK), (mg - r0.min(mg)).min(rows_per));
                    if nr == 0 {
                        return Ok(());
                    }
                    let mut packed = PACKED.take().unwrap_or_else(PackedB::empty);
                    packed.repack_rows(X::int8(&cols[p0..]), po, kdim, np, zx).map_err(Error::invalid)?;
                    let wrows = &wg[r0 * kdim..][..nr * kdim];
                    let a = match w.dtype() {
                        DType::U8 => Int8::U8(wrows),
                        // SAFETY: the tensor's elements are i8 (viewed as bytes above): same size
                        // and alignment, every bit pattern valid.
                        _ => Int8::I8(unsafe { std::slice::from_raw_parts(wrows.as_ptr().cast::<i8>(), wrows.len()) }),
                    };
                    let oc0 = gi * mg + r0;
                    let r = with_buf(&ACC, nr * np, |acc| {
                        qgemm(nr, a, kdim, &zw[oc0..oc0 + nr], &packed, acc, np, false).map_err(Error::invalid)?;
                        for (r, row) in acc.chunks_exact(np).enumerate() {
                            let oc = oc0 + r;
                            // SAFETY: task (chunk, block) is the only writer of columns p0..p0+np
                            // of the rows of its block: the pieces of different tasks are disjoint.
                            let dst = unsafe { out.piece(((ni * m + oc) * po) + p0, np) };
                            sink.row(oc, row, dst);
                        }
                        Ok(())
                    });
                    PACKED.set(Some(packed));
                    r
                };
                let run = |cols: &[X]| -> Result<()> {
                    let tasks = chunks * blocks;
                    if tasks == 1 || !crate::par::worth(po * kdim * mg, PAR_WORK) {
                        (0..tasks).try_for_each(|t| task(cols, t))
                    } else {
                        (0..tasks).into_par_iter().try_for_each(|t| task(cols, t))
                    }
                };
                if pointwise {
                    run(xg)?;
                } else {
                    // Padding is zx itself, so it adds nothing once shifted (zx is an X constant,
                    // so it fits X).
                    with_buf(X::cols(), kdim * po, |cols| {
                        im2col_pad(g3, cg, xg, cols, X::from_i32(zx));
                        run(cols)
                    })?;
                }
            }
        }
        Ok(())
    }
}

/// Multiply-adds below which a convolution runs on the calling thread (a fork-join costs about
/// as much as this much VNNI work).
const PAR_WORK: usize = 1 << 18;

/// An output written in parallel by tasks that each own disjoint pieces of it.
struct Disjoint<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: a Disjoint is only a way to hand out non-overlapping `&mut` pieces of one slice to
// several threads (see `piece`), which is sound whenever sending `&mut [T]` is (T: Send).
unsafe impl<T: Send> Sync for Disjoint<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Disjoint<'_, T> {}

impl<'a, T> Disjoint<'a, T> {
    fn new(s: &'a mut [T]) -> Self {
        Disjoint { ptr: s.as_mut_ptr(), len: s.len(), _borrow: std::marker::PhantomData }
    }

    /// Elements `start .. start + len`.
    ///
    /// # Safety
    /// No two pieces in use at the same time may overlap.
    #[allow(clippy::mut_from_ref)]
    unsafe fn piece(&self, start: usize, len: usize) -> &mut [T] {
        assert!(start.checked_add(len).is_some_and(|e| e <= self.len), "piece {start}+{len} of {}", self.len);
        // SAFETY: in bounds (asserted); exclusive by the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }
}

/// `x − zx` as f32 (exact: 9-bit integers), compiled for AVX-512 when the CPU has it.
fn widen<X: Q8>(x: &[X], zx: i32, out: &mut [f32]) {
    #[inline(always)]
    fn portable<X: Q8>(x: &[X], zx: i32, out: &mut [f32]) {
        for (o, v) in out.iter_mut().zip(x) {
            *o = (v.to_i32() - zx) as f32;
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn avx512<X: Q8>(x: &[X], zx: i32, out: &mut [f32]) {
        portable(x, zx, out)
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx512() {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { avx512(x, zx, out) };
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2<X: Q8>(x: &[X], zx: i32, out: &mut [f32]) {
        portable(x, zx, out)
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx2() {
        // SAFETY: the CPU running this code supports AVX2 (checked just above).
        return unsafe { avx2(x, zx, out) };
    }
    portable(x, zx, out)
}

/// The depthwise sums (integers below 2²⁴ in magnitude, so exactly representable) as i32,
/// compiled for AVX-512 when the CPU has it: one conversion instruction per vector, where `as`
/// adds a saturating sequence per element.
fn narrow(sums: &[f32], out: &mut [i32]) {
    #[inline(always)]
    fn portable(sums: &[f32], out: &mut [i32]) {
        for (o, v) in out.iter_mut().zip(sums) {
            // Clamped first so the conversion is defined for any value (NaN cannot occur: the
            // sums are of finite products).
            let v = v.clamp(-16_777_216.0, 16_777_216.0);
            // SAFETY: v is finite and within ±2²⁴, inside i32's range.
            *o = unsafe { v.to_int_unchecked::<i32>() };
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn avx512(sums: &[f32], out: &mut [i32]) {
        portable(sums, out)
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx512() {
        // SAFETY: the CPU running this code supports AVX-512F (checked just above).
        return unsafe { avx512(sums, out) };
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2(sums: &[f32], out: &mut [i32]) {
        portable(sums, out)
    }
    #[cfg(target_arch = "x86_64")]
    if crate::isa::avx2() {
        // SAFETY: the CPU running this code supports AVX2 (checked just above).
        return unsafe { avx2(sums, out) };
    }
    portable(sums, out)
}
