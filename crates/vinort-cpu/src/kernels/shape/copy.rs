//! The element mover every data-movement kernel of this family is built on.
//!
//! A kernel describes *where* elements go as a type-independent [`Step`] list; [`run_plan`]
//! then performs the moves once per storage width (1, 2, 4, 8 or 16 bytes, or `String`s).
//! Moving bytes as plain words of the element's width is exact for every ONNX type, so one
//! implementation covers all 28 element types, including those with no Rust element type
//! (complex, 8-bit floats, sub-byte types stored unpacked).

use std::borrow::Cow;

use bytemuck::Pod;
use smallvec::SmallVec;
use vinort_ir::tensor::strides_of;
use vinort_ir::{DType, Error, Origin, Result, Tensor};

/// One move of elements from an input into the output. Offsets and strides count elements.
pub(crate) enum Step {
    /// For every index `i` of `shape`:
    /// `out[dst_off + Σ i·dst_strides] = srcs[src][src_off + Σ i·src_strides]`.
    /// Strides may be zero (broadcast) or negative (reversal).
    Strided(Strided),
    /// `out[dst_off + i] = srcs[src][map[i]]`.
    Gather { src: usize, dst_off: usize, map: Vec<usize> },
    /// Contiguous runs `(src_off, dst_off, len)` from one input.
    Runs { src: usize, runs: Vec<[usize; 3]> },
}

/// Per-axis numbers of a copy, inline up to rank 6 (no allocation for the common ranks).
pub(crate) type Dims<T> = SmallVec<[T; 6]>;

/// A strided N-d copy; see [`Step::Strided`].
#[derive(Clone, Debug)]
pub(crate) struct Strided {
    pub src: usize,
    pub src_off: usize,
    pub src_strides: Dims<isize>,
    pub dst_off: usize,
    pub dst_strides: Dims<isize>,
    pub shape: Dims<usize>,
}

impl Strided {
    /// A copy of a whole input read through `src_strides`, written row-major into the whole
    /// output of `shape`.
    pub(crate) fn dense(src: usize, src_off: usize, src_strides: Dims<isize>, shape: &[usize]) -> Strided {
        Strided { src, src_off, src_strides, dst_off: 0, dst_strides: dense_strides(shape), shape: shape.into() }
    }
}

/// Row-major strides of a shape, signed.
pub(crate) fn dense_strides(shape: &[usize]) -> Dims<isize> {
    strides_of(shape).iter().map(|&s| s as isize).collect()
}

/// Number of elements of a shape computed from a model's values, or
/// [`Error::MemoryLimit`] when even one byte per element would not meet the memory limits
/// (checked before any index table or buffer of that size is made).
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    use vinort_ir::limits::{self, Refused, Which};
    let n = limits::byte_size(shape, 1).ok_or(Error::MemoryLimit(Refused {
        bytes: usize::MAX,
        limit: limits::single_limit(),
        held: 0,
        which: Which::Process,
        at_least: false,
    }))?;
    limits::check(n).map_err(|r| Error::MemoryLimit(Refused { at_least: true, ..r }))?;
    Ok(n)
}

/// A zeroed buffer of `shape`'s elements for a kernel's own scratch or output, or
/// [`Error::MemoryLimit`] when its bytes overflow or do not meet the memory limits: for sizes
/// taken from attributes or data, which a hostile model can make astronomically large (an
/// allocation that fails aborts the process; a refused one is an error naming the node).
pub(crate) fn zeroed<T: Clone + Default>(shape: &[usize]) -> Result<Vec<T>> {
    use vinort_ir::limits::{self, Refused, Which};
    let bytes = limits::byte_size(shape, std::mem::size_of::<T>()).ok_or(Error::MemoryLimit(Refused {
        bytes: usize::MAX,
        limit: limits::single_limit(),
        held: 0,
        which: Which::Process,
        at_least: false,
    }))?;
    limits::check(bytes).map_err(Error::MemoryLimit)?;
    Ok(vec![T::default(); shape.iter().product()])
}

/// Builds the output of `out_shape` and element type `dtype` by running `steps` over `srcs`
/// (which must all have type `dtype`). Elements no step writes are zero (empty strings).
pub(crate) fn run_plan(dtype: DType, srcs: &[&Tensor], out_shape: &[usize], steps: &[Step]) -> Result<Tensor> {
    for t in srcs {
        if t.dtype() != dtype {
            return Err(Error::DTypeMismatch { expected: dtype, found: t.dtype() });
        }
    }
    let n = checked_numel(out_shape)?;
    if let Some(view) = contiguous_view(dtype, srcs, out_shape, steps, n)? {
        return Ok(view);
    }
    match dtype.size() {
        0 => {
            let views = srcs.iter().map(|t| t.as_strings()).collect::<Result<Vec<_>>>()?;
            let mut out = vec![String::new(); n];
            execute(steps, &views, &mut out)?;
            Tensor::from_strings(out_shape, out)
        }
        1 => run_words::<u8>(dtype, srcs, out_shape, n, steps),
        2 => run_words::<u16>(dtype, srcs, out_shape, n, steps),
        4 => run_words::<u32>(dtype, srcs, out_shape, n, steps),
        8 => run_words::<u64>(dtype, srcs, out_shape, n, steps),
        16 => run_words::<u128>(dtype, srcs, out_shape, n, steps),
        w => Err(Error::unsupported(format!("elements of {w} bytes ({dtype})"))),
    }
}

/// When the whole output is one contiguous run of one input, the output shares that input's
/// storage instead of copying it (Slice of leading rows, Split along axis 0...).
fn contiguous_view(
    dtype: DType,
    srcs: &[&Tensor],
    out_shape: &[usize],
    steps: &[Step],
    n: usize,
) -> Result<Option<Tensor>> {
    let [Step::Strided(job)] = steps else { return Ok(None) };
    let Some(t) = srcs.get(job.src) else { return Ok(None) };
    // A view of caller memory must not outlive the run: only the copy path detaches it.
    if dtype == DType::String || t.origin() == Origin::Borrowed || n == 0 || job.dst_off != 0 {
        return Ok(None);
    }
    // The copy must fill the whole output (a constant Pad copies less and fills the rest).
    if job.shape.iter().product::<usize>() != n {
        return Ok(None);
    }
    let dims = simplify(job);
    let contiguous = match dims.as_slice() {
        [] => true,
        [(len, 1, 1)] => *len == n,
        _ => false,
    };
    if !contiguous || job.src_off + n > t.len() {
        return Ok(None);
    }
    let Some(bytes) = t.shared_bytes() else { return Ok(None) };
    let w = dtype.size();
    // Misaligned storage is copied (aligned) rather than passed on to typed kernels.
    if !(bytes.as_ptr() as usize).is_multiple_of(w) {
        return Ok(None);
    }
    let part = bytes.slice(job.src_off * w..(job.src_off + n) * w);
    Tensor::from_shared_bytes(dtype, out_shape, part).map(Some)
}

fn words<W: Pod>(t: &Tensor) -> Cow<'_, [W]> {
    match bytemuck::try_cast_slice::<u8, W>(t.as_bytes()) {
        Ok(s) => Cow::Borrowed(s),
        // Storage shared with a model file may be misaligned for the word type.
        Err(_) => Cow::Owned(bytemuck::allocation::pod_collect_to_vec(t.as_bytes())),
    }
}

fn run_words<W: Pod>(dtype: DType, srcs: &[&Tensor], out_shape: &[usize], n: usize, steps: &[Step]) -> Result<Tensor> {
    let views: SmallVec<[Cow<'_, [W]>; 4]> = srcs.iter().map(|t| words::<W>(t)).collect();
    let views: SmallVec<[&[W]; 4]> = views.iter().map(|c| c.as_ref()).collect();
    let raw = Tensor::try_build::<u8, Error>(&[n * std::mem::size_of::<W>()], |bytes| {
        let out = bytemuck::try_cast_slice_mut::<u8, W>(bytes)
            .map_err(|e| Error::invalid(format!("output buffer cannot hold {dtype} words: {e}")))?;
        execute(steps, &views, out)
    })?;
    // The bytes were built as u8 (the only way to fill any element type generically) and are
    // now labelled with the real type; they stay 64-byte aligned.
    raw.reinterpret(dtype, out_shape)
}

fn out_of_range(what: &str) -> Error {
    Error::invalid(format!("internal copy plan {what} out of range"))
}

/// Runs the steps for one element representation.
pub(crate) fn execute<T: Clone>(steps: &[Step], srcs: &[&[T]], out: &mut [T]) -> Result<()> {
    for step in steps {
        match step {
            Step::Strided(job) => {
                let src = srcs.get(job.src).ok_or_else(|| out_of_range("input"))?;
                strided(job, src, out)?;
            }
            Step::Gather { src, dst_off, map } => {
                let src = srcs.get(*src).ok_or_else(|| out_of_range("input"))?;
                let dst = out.get_mut(*dst_off..dst_off + map.len()).ok_or_else(|| out_of_range("gather output"))?;
                for (d, &m) in dst.iter_mut().zip(map) {
                    *d = src.get(m).ok_or_else(|| out_of_range("gather index"))?.clone();
                }
            }
            Step::Runs { src, runs } => {
                let src = srcs.get(*src).ok_or_else(|| out_of_range("input"))?;
                for &[s, d, n] in runs {
                    let from = src.get(s..s + n).ok_or_else(|| out_of_range("run source"))?;
                    out.get_mut(d..d + n).ok_or_else(|| out_of_range("run target"))?.clone_from_slice(from);
                }
            }
        }
    }
    Ok(())
}

/// The dims of a strided copy with unit extents dropped and mergeable neighbours merged:
/// `(extent, src_stride, dst_stride)`, outermost first. Empty when the copy is one element.
fn simplify(job: &Strided) -> Dims<(usize, isize, isize)> {
    let mut dims: Dims<(usize, isize, isize)> = Dims::new();
    for ((&n, &ss), &ds) in job.shape.iter().zip(&job.src_strides).zip(&job.dst_strides) {
        if n == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(prev) if prev.1 == ss * n as isize && prev.2 == ds * n as isize => *prev = (prev.0 * n, ss, ds),
            _ => dims.push((n, ss, ds)),
        }
    }
    dims
}

/// Lowest and highest offsets a strided walk reaches.
fn reach(off: usize, dims: impl Iterator<Item = (usize, isize)>) -> (i128, i128) {
    let (mut lo, mut hi) = (off as i128, off as i128);
    for (n, s) in dims {
        let span = (n as i128 - 1) * s as i128;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    (lo, hi)
}

/// Tile edge for the cache-blocked transpose path.
const TILE: usize = 32;

fn strided<T: Clone>(job: &Strided, src: &[T], dst: &mut [T]) -> Result<()> {
    if job.src_strides.len() != job.shape.len() || job.dst_strides.len() != job.shape.len() {
        return Err(out_of_range("rank"));
    }
    if job.shape.contains(&0) {
        return Ok(());
    }
    let mut dims = simplify(job);
    // Validating the reach once lets the loops below index without per-element checks.
    let (slo, shi) = reach(job.src_off, dims.iter().map(|d| (d.0, d.1)));
    let (dlo, dhi) = reach(job.dst_off, dims.iter().map(|d| (d.0, d.2)));
    if slo < 0 || shi >= src.len() as i128 || dlo < 0 || dhi >= dst.len() as i128 {
        return Err(out_of_range("strided copy"));
    }
    let (s0, d0) = (job.src_off as isize, job.dst_off as isize);
    let Some(&(n, ss, ds)) = dims.last() else {
        dst[d0 as usize] = src[s0 as usize].clone();
        return Ok(());
    };
    if ss == 1 && ds == 1 {
        dims.pop();
        for_each_offset(&dims, s0, d0, |s, d| {
            let (s, d) = (s as usize, d as usize);
            dst[d..d + n].clone_from_slice(&src[s..s + n]);
        });
        return Ok(());
    }
    // A transpose-like copy (destination contiguous, source contiguous along another dim):
    // walk it in square tiles so both sides stay in cache. Loop order is free because every
    // element is written independently.
    let inner_src = dims[..dims.len() - 1].iter().rposition(|d| d.1 == 1);
    if ds == 1
        && let Some(p) = inner_src
    {
        let (a, _, da) = dims.remove(p);
        dims.pop();
        for_each_offset(&dims, s0, d0, |s, d| {
            if n <= 4 {
                // A few source rows interleaved (an image's channels moved last): they
                // stream in order, no tiling needed.
                for i in 0..a {
                    let (srow, drow) = (s + i as isize, (d + i as isize * da) as usize);
                    for j in 0..n {
                        // SAFETY: as below.
                        unsafe {
                            *dst.get_unchecked_mut(drow + j) =
                                src.get_unchecked((srow + j as isize * ss) as usize).clone();
                        }
                    }
                }
                return;
            }
            for i0 in (0..a).step_by(TILE) {
                for j0 in (0..n).step_by(TILE) {
                    for i in i0..(i0 + TILE).min(a) {
                        let srow = s + i as isize;
                        let drow = (d + i as isize * da) as usize;
                        for j in j0..(j0 + TILE).min(n) {
                            // SAFETY: every offset of this walk was checked against both
                            // slices by `reach` above; per-element checks kept the loop from
                            // vectorizing and cost about half its time.
                            unsafe {
                                *dst.get_unchecked_mut(drow + j) =
                                    src.get_unchecked((srow + j as isize * ss) as usize).clone();
                            }
                        }
                    }
                }
            }
        });
        return Ok(());
    }
    dims.pop();
    for_each_offset(&dims, s0, d0, |s, d| {
        for j in 0..n as isize {
            dst[(d + j * ds) as usize] = src[(s + j * ss) as usize].clone();
        }
    });
    Ok(())
}

/// Calls `f(src_offset, dst_offset)` for every index of `dims` (row-major).
fn for_each_offset(dims: &[(usize, isize, isize)], s0: isize, d0: isize, mut f: impl FnMut(isize, isize)) {
    let mut idx: Dims<usize> = smallvec::smallvec![0; dims.len()];
    let (mut s, mut d) = (s0, d0);
    loop {
        f(s, d);
        let mut k = dims.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            let (n, ss, ds) = dims[k];
            idx[k] += 1;
            s += ss;
            d += ds;
            if idx[k] < n {
                break;
            }
            s -= ss * n as isize;
            d -= ds * n as isize;
            idx[k] = 0;
        }
    }
}

/// A one-element tensor as a broadcast source covering `shape`.
pub(crate) fn broadcast_scalar(src: usize, shape: &[usize]) -> Step {
    Step::Strided(Strided::dense(src, 0, smallvec::smallvec![0; shape.len()], shape))
}
