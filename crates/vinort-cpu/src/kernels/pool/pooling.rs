//! Pooling, 1-D to 3-D spatial:
//! [MaxPool](https://onnx.ai/onnx/operators/onnx__MaxPool.html) (opsets 1–22+, f32, f64,
//! f16, bf16, and i8/u8 from opset 12, with the optional `Indices` output),
//! [AveragePool](https://onnx.ai/onnx/operators/onnx__AveragePool.html) (opsets 1–22+,
//! `count_include_pad`, `ceil_mode`, `dilations` from opset 19),
//! [LpPool](https://onnx.ai/onnx/operators/onnx__LpPool.html) (opsets 1–22+; `p` was a float
//! before opset 2), and the global forms
//! [GlobalMaxPool](https://onnx.ai/onnx/operators/onnx__GlobalMaxPool.html),
//! [GlobalAveragePool](https://onnx.ai/onnx/operators/onnx__GlobalAveragePool.html),
//! [GlobalLpPool](https://onnx.ai/onnx/operators/onnx__GlobalLpPool.html) (any spatial rank).
//! Averages and Lp norms are computed in f32 for f16/bf16.

use rayon::prelude::*;
use vinort_ir::Values;
use vinort_ir::{Attr, DType, Elem, Error, Result, RunContext, Shape, Tensor, Value};

use crate::kernel::{Kernel, NodeInfo, Registry, tensor_in};
use crate::kernels::linalg::common::{Real, check_dtype, from_compute, to_compute};
use crate::kernels::window::{WindowAttrs, to3};
use crate::per_shape::PerShape;

const FLOATS: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];
const MAX_TYPES: [DType; 6] = [DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8];

pub(crate) fn register(r: &mut Registry) {
    r.op("", "MaxPool", |i| factory(i, Kind::Max, false));
    r.op("", "AveragePool", |i| factory(i, Kind::Avg { include_pad: false }, false));
    r.op("", "LpPool", |i| factory(i, Kind::Lp(2.0), false));
    r.op("", "GlobalMaxPool", |i| factory(i, Kind::Max, true));
    r.op("", "GlobalAveragePool", |i| factory(i, Kind::Avg { include_pad: false }, true));
    r.op("", "GlobalLpPool", |i| factory(i, Kind::Lp(2.0), true));
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Max,
    Avg { include_pad: bool },
    Lp(f64),
}

struct Pool {
    kind: Kind,
    /// None for the global forms, whose window is the whole spatial extent.
    /// Its `ceil_mode` decides the output size.
    window: Option<WindowAttrs>,
    column_major: bool,
    /// MaxPool's optional second output is connected.
    want_indices: bool,
    /// The window tables and output shape of the last input shape.
    prepared: PerShape<(Plan, Shape)>,
}

fn factory(info: &NodeInfo<'_>, kind: Kind, global: bool) -> Result<Box<dyn Kernel>> {
    let node = info.node;
    let int_ok = matches!(kind, Kind::Max) && node.opset >= 12 && !global;
    check_dtype(node, info.input_dtype(0), if int_ok { &MAX_TYPES } else { &FLOATS })?;
    let kind = match kind {
        Kind::Avg { .. } => Kind::Avg { include_pad: node.attr_or("count_include_pad", false)? },
        Kind::Lp(_) => Kind::Lp(match node.attr_raw("p") {
            None => 2.0,
            Some(Attr::Int(p)) => *p as f64,
            // Opset 1 declared p as a float.
            Some(Attr::Float(p)) => *p as f64,
            Some(other) => return Err(node.error(format!("attribute 'p' must be int, found {}", other.kind()))),
        }),
        Kind::Max => Kind::Max,
    };
    if let Kind::Lp(p) = kind
        && p.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
    {
        return Err(node.error(format!("p must be positive, got {p}")));
    }
    let window = if global {
        None
    } else {
        let w = WindowAttrs::parse(node)?;
        if w.kernel.is_none() {
            return Err(node.error("required attribute 'kernel_shape' is missing"));
        }
        Some(w)
    };
    Ok(Box::new(Pool {
        kind,
        window,
        column_major: node.attr_or("storage_order", 0i64)? == 1,
        want_indices: matches!(kind, Kind::Max) && !global && node.outputs.get(1).is_some_and(Option::is_some),
        prepared: PerShape::default(),
    }))
}

/// Per output index along one axis: the input positions its window covers inside the input,
/// and how many taps fall inside the padded extent (for `count_include_pad`).
struct Axis {
    taps: Vec<Vec<usize>>,
    padded: Vec<usize>,
}

#[allow(clippy::too_many_arguments)]
fn axis(inp: usize, out: usize, k: usize, s: usize, d: usize, pb: usize, pe: usize) -> Axis {
    let mut a = Axis { taps: Vec::with_capacity(out), padded: Vec::with_capacity(out) };
    for o in 0..out {
        let start = (o * s) as isize - pb as isize;
        let pos = (0..k).map(|t| start + (t * d) as isize);
        a.taps.push(pos.clone().filter(|p| *p >= 0 && *p < inp as isize).map(|p| p as usize).collect());
        // Windows never start before -pb; taps past the end padding only exist in ceil mode
        // and are not counted.
        a.padded.push(pos.filter(|p| *p < (inp + pe) as isize).count());
    }
    a
}

/// The window of every output position, as three axes.
struct Plan {
    axes: [Axis; 3],
    i: [usize; 3],
    o: [usize; 3],
    /// For a 1-D or 2-D pool whose windows are unit-step runs: the row and column runs that
    /// [`max_plane_2d`] walks.
    runs2d: Option<(Runs, Runs)>,
}

/// Per output position along one axis, its window as a run `start..end` of input positions.
type Runs = Vec<(usize, usize)>;

impl Plan {
    fn each(&self, mut f: impl FnMut(usize, &[usize], &[usize], &[usize], usize)) {
        let [a0, a1, a2] = &self.axes;
        let mut flat = 0;
        for o0 in 0..self.o[0] {
            for o1 in 0..self.o[1] {
                for o2 in 0..self.o[2] {
                    let padded = a0.padded[o0] * a1.padded[o1] * a2.padded[o2];
                    f(flat, &a0.taps[o0], &a1.taps[o1], &a2.taps[o2], padded);
                    flat += 1;
                }
            }
        }
    }
}

/// Element types MaxPool compares directly.
trait MaxElem: Elem + PartialOrd {
    const LOWEST: Self;
}
impl MaxElem for f32 {
    const LOWEST: Self = f32::NEG_INFINITY;
}
impl MaxElem for f64 {
    const LOWEST: Self = f64::NEG_INFINITY;
}
impl MaxElem for i8 {
    const LOWEST: Self = i8::MIN;
}
impl MaxElem for u8 {
    const LOWEST: Self = u8::MIN;
}

/// MaxPool of `x` into a new tensor of `shape`, writing the argmax indices when asked.
fn max_pool_tensor<T: MaxElem>(
    plan: &Plan,
    shape: &[usize],
    x: &Tensor,
    indices: Option<&mut [i64]>,
    column_major: bool,
) -> Result<Tensor> {
    Tensor::try_build::<T, Error>(shape, |y| {
        max_pool(plan, x.as_slice()?, y, indices, column_major);
        Ok(())
    })
}

/// Max over each window; the index is the first maximum met in row-major window order (an
/// empty window, possible only when pads exceed the kernel, gives LOWEST and -1).
fn max_pool<T: MaxElem>(plan: &Plan, x: &[T], y: &mut [T], idx: Option<&mut [i64]>, column_major: bool) {
    let [i0, i1, i2] = plan.i;
    let (pi, po) = (i0 * i1 * i2, plan.o.iter().product::<usize>());
    if y.is_empty() || x.len() != y.len() / po * pi {
        return;
    }
    let spatial = |p0: usize, p1: usize, p2: usize| {
        if column_major { p0 + p1 * i0 + p2 * i0 * i1 } else { (p0 * i1 + p1) * i2 + p2 }
    };
    let plane = |(c, yp): (usize, &mut [T]), mut ip: Option<&mut [i64]>| {
        // Planes are indexed rather than zipped so an empty spatial input still fills Y.
        let xp = &x[c * pi..][..pi];
        plan.each(|o, t0, t1, t2, _| {
            let mut best = T::LOWEST;
            let mut at = -1i64;
            for &p0 in t0 {
                for &p1 in t1 {
                    for &p2 in t2 {
                        let v = xp[(p0 * i1 + p1) * i2 + p2];
                        if at < 0 || v > best {
                            best = v;
                            at = spatial(p0, p1, p2) as i64;
                        }
                    }
                }
            }
            yp[o] = best;
            if let Some(ip) = ip.as_deref_mut() {
                ip[o] = if at < 0 { -1 } else { (c * pi) as i64 + at };
            }
        })
    };
    // A 1-D or 2-D pool whose windows are unit-step runs: the direct loops below.
    if let Some((rows, cols)) = &plan.runs2d {
        let plane2 = |(c, yp): (usize, &mut [T]), ip: Option<&mut [i64]>| {
            max_plane_2d(&x[c * pi..][..pi], i2, rows, cols, yp, ip.map(|ip| (ip, c * pi, column_major.then_some(i1))));
        };
        return each_plane(y, idx, po, x.len(), plane2);
    }
    each_plane(y, idx, po, x.len(), plane);
}

/// `f((plane, its output), its indices)` for every output plane of `po` elements, on rayon
/// when the `work` (elements read) pays for it and the thread may hand work out.
fn each_plane<T: Send>(
    y: &mut [T],
    idx: Option<&mut [i64]>,
    po: usize,
    work: usize,
    f: impl Fn((usize, &mut [T]), Option<&mut [i64]>) + Sync + Send,
) {
    match (idx, crate::par::worth(work, crate::par::ELEMENTS)) {
        (Some(idx), true) => {
            y.par_chunks_mut(po).enumerate().zip(idx.par_chunks_mut(po)).for_each(|(p, ip)| f(p, Some(ip)));
        }
        (None, true) => y.par_chunks_mut(po).enumerate().for_each(|p| f(p, None)),
        (Some(idx), false) => y.chunks_mut(po).enumerate().zip(idx.chunks_mut(po)).for_each(|(p, ip)| f(p, Some(ip))),
        (None, false) => y.chunks_mut(po).enumerate().for_each(|p| f(p, None)),
    }
}

/// Each output position's taps as a run `start..end` of consecutive input positions, when
/// every one is (no dilation, or a single tap); None otherwise.
fn runs(taps: &[Vec<usize>]) -> Option<Vec<(usize, usize)>> {
    taps.iter()
        .map(|t| match t.as_slice() {
            [] => Some((0, 0)),
            [first, .., last] if last - first + 1 == t.len() => Some((*first, last + 1)),
            [only] => Some((*only, only + 1)),
            _ => None,
        })
        .collect()
}

/// One plane of a 2-D MaxPool (rows of `width` elements) whose windows are the row runs ×
/// column runs given per output row and column: the same comparisons in the same order as the
/// general walk (row-major window order, the first maximum kept, an empty window giving
/// LOWEST and index -1), without its per-position closure and tap lists. `idx` gets the
/// indices, offset by `base`, row-major or (with the height) column-major.
fn max_plane_2d<T: MaxElem>(
    xp: &[T],
    width: usize,
    rows: &[(usize, usize)],
    cols: &[(usize, usize)],
    yp: &mut [T],
    idx: Option<(&mut [i64], usize, Option<usize>)>,
) {
    let ow = cols.len();
    let halves = |runs: &[(usize, usize)]| runs.iter().enumerate().all(|(o, &(a, b))| a == 2 * o && b == a + 2);
    if halves(rows) && halves(cols) && idx.as_ref().is_none_or(|(_, _, cm)| cm.is_none()) {
        let idx = idx.map(|(ip, base, _)| (ip, base));
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx512() {
            // SAFETY: the CPU running this code has AVX-512F (checked just above).
            return unsafe { max_plane_2x2_avx512(xp, width, ow, yp, idx) };
        }
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx2() {
            // SAFETY: the CPU running this code has AVX2 (checked just above).
            return unsafe { max_plane_2x2_avx2(xp, width, ow, yp, idx) };
        }
        return max_plane_2x2(xp, width, ow, yp, idx);
    }
    match idx {
        None => {
            for (yr, &(r0, r1)) in yp.chunks_exact_mut(ow).zip(rows) {
                for (y, &(c0, c1)) in yr.iter_mut().zip(cols) {
                    let mut best = T::LOWEST;
                    let mut seen = false;
                    for r in r0..r1 {
                        for &v in &xp[r * width + c0..r * width + c1] {
                            if !seen || v > best {
                                best = v;
                                seen = true;
                            }
                        }
                    }
                    *y = best;
                }
            }
        }
        Some((ip, base, column_major)) => {
            for ((yr, ir), &(r0, r1)) in yp.chunks_exact_mut(ow).zip(ip.chunks_exact_mut(ow)).zip(rows) {
                for ((y, i), &(c0, c1)) in yr.iter_mut().zip(ir.iter_mut()).zip(cols) {
                    let mut best = T::LOWEST;
                    let mut at = None;
                    for r in r0..r1 {
                        for c in c0..c1 {
                            let v = xp[r * width + c];
                            if at.is_none() || v > best {
                                best = v;
                                at = Some((r, c));
                            }
                        }
                    }
                    *y = best;
                    *i = match (at, column_major) {
                        (None, _) => -1,
                        (Some((r, c)), None) => (base + r * width + c) as i64,
                        (Some((r, c)), Some(height)) => (base + r + c * height) as i64,
                    };
                }
            }
        }
    }
}

/// [`max_plane_2x2`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn max_plane_2x2_avx2<T: MaxElem>(xp: &[T], width: usize, ow: usize, yp: &mut [T], idx: Option<(&mut [i64], usize)>) {
    max_plane_2x2(xp, width, ow, yp, idx)
}

/// [`max_plane_2x2`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn max_plane_2x2_avx512<T: MaxElem>(xp: &[T], width: usize, ow: usize, yp: &mut [T], idx: Option<(&mut [i64], usize)>) {
    max_plane_2x2(xp, width, ow, yp, idx)
}

/// [`max_plane_2d`] for the common 2x2 window at stride 2 (unpadded, undilated): each output is
/// its four inputs compared in the walk's order (a, b on the upper row, then c, d), the first
/// maximum kept, as straight-line selects the compiler vectorizes (the general walk's loops
/// over runs of two did one element at a time).
#[inline(always)]
fn max_plane_2x2<T: MaxElem>(xp: &[T], width: usize, ow: usize, yp: &mut [T], idx: Option<(&mut [i64], usize)>) {
    if ow == 0 {
        return;
    }
    let pick = |ra: &[T], rb: &[T], ox: usize| {
        let (a, b, c, d) = (ra[2 * ox], ra[2 * ox + 1], rb[2 * ox], rb[2 * ox + 1]);
        let (mut best, mut at) = (a, 0);
        if b > best {
            (best, at) = (b, 1);
        }
        if c > best {
            (best, at) = (c, width);
        }
        if d > best {
            (best, at) = (d, width + 1);
        }
        (best, at)
    };
    match idx {
        None => {
            for (oy, yr) in yp.chunks_exact_mut(ow).enumerate() {
                let (ra, rb) = (&xp[2 * oy * width..][..width], &xp[(2 * oy + 1) * width..][..width]);
                for (ox, y) in yr.iter_mut().enumerate() {
                    *y = pick(ra, rb, ox).0;
                }
            }
        }
        Some((ip, base)) => {
            for (oy, (yr, ir)) in yp.chunks_exact_mut(ow).zip(ip.chunks_exact_mut(ow)).enumerate() {
                let (ra, rb) = (&xp[2 * oy * width..][..width], &xp[(2 * oy + 1) * width..][..width]);
                let row0 = base + 2 * oy * width;
                for (ox, (y, i)) in yr.iter_mut().zip(ir.iter_mut()).enumerate() {
                    let (best, at) = pick(ra, rb, ox);
                    *y = best;
                    *i = (row0 + 2 * ox + at) as i64;
                }
            }
        }
    }
}

/// The sum of `v` in eight interleaved lanes, added pairwise at the end.
fn lane_sum<T: Real>(v: &[T]) -> T {
    let mut lanes = [T::ZERO; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for (l, x) in lanes.iter_mut().zip(c) {
            *l += *x;
        }
    }
    for (l, x) in lanes.iter_mut().zip(chunks.remainder()) {
        *l += *x;
    }
    let [a, b, c, d, e, f, g, h] = lanes;
    ((a + b) + (c + d)) + ((e + f) + (g + h))
}

fn avg_lp_pool<T: Real>(plan: &Plan, kind: Kind, x: &[T], y: &mut [T]) {
    let [_, i1, i2] = plan.i;
    let (pi, po) = (plan.i.iter().product::<usize>(), plan.o.iter().product::<usize>());
    if y.is_empty() || x.len() != y.len() / po * pi {
        return;
    }
    each_plane(y, None, po, x.len(), |(c, yp), _| {
        let xp = &x[c * pi..][..pi];
        plan.each(|o, t0, t1, t2, padded| {
            let mut acc = T::ZERO;
            // An average over a run of a row (a global pool's whole plane is one) sums it in
            // lanes: one accumulator was a chain of dependent adds, 4 cycles each.
            let run = match (kind, t2) {
                (Kind::Avg { .. }, [first, .., last]) if last - first + 1 == t2.len() => Some(*first..last + 1),
                _ => None,
            };
            for &p0 in t0 {
                for &p1 in t1 {
                    let row = &xp[(p0 * i1 + p1) * i2..];
                    if let Some(r) = run.clone() {
                        acc += lane_sum(&row[r]);
                        continue;
                    }
                    for &p2 in t2 {
                        acc += match kind {
                            Kind::Lp(p) => row[p2].abs().powf(T::from_f64(p)),
                            _ => row[p2],
                        };
                    }
                }
            }
            yp[o] = match kind {
                Kind::Lp(p) => acc.powf(T::from_f64(1.0 / p)),
                Kind::Avg { include_pad: true } => acc / T::from_usize(padded),
                _ => acc / T::from_usize(t0.len() * t1.len() * t2.len()),
            };
        })
    });
}

impl Pool {
    /// The window tables and the output shape for an input of shape `xs`.
    fn prepare(&self, xs: &[usize]) -> Result<(Plan, Shape)> {
        if xs.len() < 3 {
            return Err(Error::invalid(format!("pool input must be [N, C, spatial...], got {xs:?}")));
        }
        let spatial = &xs[2..];
        let (kernel, strides, dilations, pb, pe, out) = match &self.window {
            None => {
                // Global pools take any spatial rank: fold it into one axis.
                let n: usize = spatial.iter().product();
                (
                    vec![n],
                    vec![1],
                    vec![1],
                    smallvec::smallvec![0],
                    smallvec::smallvec![0],
                    smallvec::smallvec![1usize; spatial.len()],
                )
            }
            Some(w) => {
                let kernel = w.kernel.clone().unwrap_or_default();
                if kernel.len() != spatial.len() {
                    return Err(Error::invalid(format!("kernel_shape {kernel:?} does not fit input {xs:?}")));
                }
                if kernel.len() > 3 {
                    return Err(Error::unsupported("pools over more than 3 spatial axes"));
                }
                let win = w.resolve(&kernel)?;
                let g = win.geometry(spatial)?;
                (kernel, win.strides, win.dilations, g.pad_begin, g.pad_end, g.out)
            }
        };
        let (i, o) = match &self.window {
            None => ([1, 1, spatial.iter().product()], [1, 1, 1]),
            Some(_) => (to3(spatial, 1), to3(&out, 1)),
        };
        let (k, s, d, b, e) = (to3(&kernel, 1), to3(&strides, 1), to3(&dilations, 1), to3(&pb, 0), to3(&pe, 0));
        // The tables below hold a window per output position: attributes (pads, kernel) are the
        // model's word, so their size is checked first, even for an empty output.
        // Each position is a small vector of its own, so the bound is on positions × taps
        // (2^24, far past any real pool: 4096 positions of a 4096-wide window).
        for a in 0..3 {
            if o[a].saturating_mul(k[a]) > 1 << 24 {
                return Err(Error::unsupported(format!(
                    "a pool of {} output positions over a {}-wide window along one axis (pads {:?}/{:?})",
                    o[a], k[a], pb, pe
                )));
            }
        }
        let axes = [0, 1, 2].map(|a| axis(i[a], o[a], k[a], s[a], d[a], b[a], e[a]));
        // (The depth window must hold the one depth position: a depth pad as large as the
        // kernel leaves it empty, and every output is then LOWEST.)
        let flat = i[0] == 1 && o[0] == 1 && axes[0].taps[0] == [0];
        let runs2d = match flat.then(|| (runs(&axes[1].taps), runs(&axes[2].taps))) {
            Some((Some(rows), Some(cols))) => Some((rows, cols)),
            _ => None,
        };
        let plan = Plan { axes, i, o, runs2d };
        let mut shape: Shape = xs[..2].into();
        shape.extend_from_slice(&out);
        Ok((plan, shape))
    }
}

impl Kernel for Pool {
    fn run(&self, inputs: &[Option<&Value>], _: &RunContext) -> Result<Values> {
        let x = tensor_in(inputs, 0)?;
        let prepared = self.prepared.get(x.shape(), || self.prepare(x.shape()))?;
        let (plan, shape) = (&prepared.0, prepared.1.as_slice());

        let dtype = x.dtype();
        let x = x.to_aligned();
        let mut outputs = Values::new();
        match self.kind {
            Kind::Max => {
                let pool_into = |indices: Option<&mut [i64]>| -> Result<Tensor> {
                    Ok(match dtype {
                        DType::F32 => max_pool_tensor::<f32>(plan, shape, &x, indices, self.column_major)?,
                        DType::F64 => max_pool_tensor::<f64>(plan, shape, &x, indices, self.column_major)?,
                        DType::I8 => max_pool_tensor::<i8>(plan, shape, &x, indices, self.column_major)?,
                        DType::U8 => max_pool_tensor::<u8>(plan, shape, &x, indices, self.column_major)?,
                        DType::F16 | DType::BF16 => {
                            let xc = to_compute(&x)?;
                            from_compute(max_pool_tensor::<f32>(plan, shape, &xc, indices, self.column_major)?, dtype)?
                        }
                        d => return Err(Error::unsupported(format!("MaxPool on {d}"))),
                    })
                };
                if self.want_indices {
                    // The indices are written in place into their output tensor (no copy).
                    let mut y = None;
                    let indices = Tensor::try_build::<i64, Error>(shape, |ind| {
                        y = Some(pool_into(Some(ind))?);
                        Ok(())
                    })?;
                    outputs.push(y.ok_or_else(|| Error::invalid("MaxPool produced no values"))?.into());
                    outputs.push(indices.into());
                } else {
                    outputs.push(pool_into(None)?.into());
                }
            }
            kind => {
                let xc = to_compute(&x)?;
                let y = match xc.dtype() {
                    DType::F64 => Tensor::try_build::<f64, Error>(shape, |y| {
                        avg_lp_pool(plan, kind, xc.as_slice()?, y);
                        Ok(())
                    })?,
                    _ => Tensor::try_build::<f32, Error>(shape, |y| {
                        avg_lp_pool(plan, kind, xc.as_slice()?, y);
                        Ok(())
                    })?,
                };
                outputs.push(from_compute(y, dtype)?.into());
            }
        }
        Ok(outputs)
    }
}
