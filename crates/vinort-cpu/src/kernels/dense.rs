//! The one safe wrapper around the `gemm` crate, shared by every kernel family that
//! multiplies matrices (linalg's MatMul/Gemm/Conv, rnn's gate projections and DeformConv), so
//! the bounds checks that make the `unsafe` call sound live in one place.

use std::ops::{Add, Mul};

use rayon::prelude::*;
use vinort_ir::{Elem, Error, Result};

use crate::par;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types `gemm` multiplies natively: f32 and f64.
///
/// Sealed: `gemm::gemm` panics for any other type, so only these two may implement it. The
/// kernel families' own element traits build on it.
pub(crate) trait GemmElem:
    Elem + sealed::Sealed + Add<Output = Self> + Mul<Output = Self> + Send + Sync
{
    const ZERO: Self;
    const ONE: Self;
}

impl GemmElem for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

impl GemmElem for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

/// A read-only strided matrix: element `(i, j)` is `data[i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a, T> {
    pub data: &'a [T],
    pub rs: usize,
    pub cs: usize,
}

impl<'a, T> View<'a, T> {
    /// A row-major matrix with `cols` columns.
    pub fn rows(data: &'a [T], cols: usize) -> Self {
        View { data, rs: cols, cs: 1 }
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        View { data: self.data, rs: self.cs, cs: self.rs }
    }
}

/// One past the largest index a `rows x cols` matrix with these strides touches, or None on
/// overflow. Only called with `rows, cols >= 1`.
fn span(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<usize> {
    (rows - 1).checked_mul(rs)?.checked_add((cols - 1).checked_mul(cs)?)?.checked_add(1)
}

fn stride(s: usize) -> Result<isize> {
    isize::try_from(s).map_err(|_| Error::invalid(format!("stride {s} does not fit in isize")))
}

/// `c = scale * a @ b` (or `c += scale * a @ b` when `accumulate`), with `a` m x k, `b` k x n
/// and `c` m x n row-major with row stride `ldc`. `parallel` lets `gemm` use rayon's pool
/// (it stays single-threaded below its own size threshold); pass false when the caller already
/// runs one product per rayon task.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_into<T: GemmElem>(
    (m, n, k): (usize, usize, usize),
    a: View<'_, T>,
    b: View<'_, T>,
    c: &mut [T],
    ldc: usize,
    accumulate: bool,
    scale: T,
    parallel: bool,
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    let bad = || Error::invalid(format!("matrix product {m}x{k} @ {k}x{n} does not fit its buffers"));
    if ldc < n || span(m, n, ldc, 1).is_none_or(|s| s > c.len()) {
        return Err(bad());
    }
    if k == 0 {
        if !accumulate {
            for row in c.chunks_mut(ldc).take(m) {
                row[..n].fill(T::ZERO);
            }
        }
        return Ok(());
    }
    if span(m, k, a.rs, a.cs).is_none_or(|s| s > a.data.len())
        || span(k, n, b.rs, b.cs).is_none_or(|s| s > b.data.len())
    {
        return Err(bad());
    }
    if m == 1 && gemv((n, k), a, b, &mut c[..n], accumulate, scale, parallel) {
        return Ok(());
    }
    let par = if parallel { gemm::Parallelism::Rayon(0) } else { gemm::Parallelism::None };
    let (ldc, a_rs, a_cs, b_rs, b_cs) = (stride(ldc)?, stride(a.rs)?, stride(a.cs)?, stride(b.rs)?, stride(b.cs)?);
    // SAFETY: `T` is f32 or f64 (sealed `GemmElem`), which `gemm` supports. Every index gemm forms
    // is `i * rs + j * cs` with i, j below the matrix extents; `span` checked above that the
    // largest such index of dst (m x n, strides ldc, 1), lhs (m x k) and rhs (k x n) lies inside
    // its slice, without overflow, and each stride fits in isize. `c` is borrowed mutably, so
    // it aliases neither input. With `read_dst == false`, dst is only written.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            ldc,
            accumulate,
            a.data.as_ptr(),
            a_cs,
            a_rs,
            b.data.as_ptr(),
            b_cs,
            b_rs,
            T::ONE,
            scale,
            false,
            false,
            false,
            par,
        );
    }
    Ok(())
}

/// Lanes of the independent partial sums a dot product keeps (one AVX-512 vector of f32), so
/// the loop vectorizes without reassociating any one sum.
const LANES: usize = 16;

/// `c = scale * a @ b` for one row of `a` (a vector times a matrix, as a classifier's last
/// Gemm is at batch 1), when `b`'s columns or rows are contiguous; false (nothing written)
/// otherwise. `gemm` runs such a product on one thread at about half the memory bandwidth,
/// and it is all memory: every element of `b` is read once. Columns contiguous (`transB`):
/// one dot product per output. Rows contiguous: output blocks accumulate `a[i] · b[i, block]`
/// down the rows. Either way the outputs split into parallel blocks.
#[allow(clippy::too_many_arguments)]
fn gemv<T: GemmElem>(
    (n, k): (usize, usize),
    a: View<'_, T>,
    b: View<'_, T>,
    c: &mut [T],
    accumulate: bool,
    scale: T,
    parallel: bool,
) -> bool {
    if b.rs != 1 && b.cs != 1 {
        return false;
    }
    let av: std::borrow::Cow<'_, [T]> = if a.cs == 1 {
        std::borrow::Cow::Borrowed(&a.data[..k])
    } else {
        std::borrow::Cow::Owned((0..k).map(|i| a.data[i * a.cs]).collect())
    };
    let job = Gemv { a: &av, b, accumulate, scale };
    let block = |j0: usize, out: &mut [T]| {
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx512() {
            // SAFETY: the CPU running this code has AVX-512F (checked just above).
            return unsafe { job.block_avx512(j0, out) };
        }
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx2() {
            // SAFETY: the CPU running this code has AVX2 and FMA (checked just above).
            return unsafe { job.block_avx2(j0, out) };
        }
        job.block(j0, out)
    };
    if parallel && n.saturating_mul(k) >= par::MACS && n >= 2 * LANES {
        let per = n.div_ceil(4 * rayon::current_num_threads()).next_multiple_of(LANES);
        c.par_chunks_mut(per).enumerate().for_each(|(t, out)| block(t * per, out));
    } else {
        block(0, c);
    }
    true
}

/// One vector-times-matrix product; [`Gemv::block`] writes a run of its outputs.
struct Gemv<'a, T> {
    a: &'a [T],
    b: View<'a, T>,
    accumulate: bool,
    scale: T,
}

impl<T: GemmElem> Gemv<'_, T> {
    /// The same loops compiled for AVX2 and FMA, so they vectorize 8 f32 wide.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn block_avx2(&self, j0: usize, out: &mut [T]) {
        self.block(j0, out)
    }

    /// The same loops compiled for AVX-512, so they vectorize 16 f32 wide.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn block_avx512(&self, j0: usize, out: &mut [T]) {
        self.block(j0, out)
    }

    /// Outputs `j0..j0 + out.len()`.
    #[inline(always)]
    fn block(&self, j0: usize, out: &mut [T]) {
        let (a, b, k, scale) = (self.a, self.b, self.a.len(), self.scale);
        if b.rs == 1 {
            for (j, y) in (j0..).zip(out.iter_mut()) {
                let v = scale * dot(a, &b.data[j * b.cs..j * b.cs + k]);
                *y = if self.accumulate { *y + v } else { v };
            }
            return;
        }
        // The sums build in `out` itself unless it already holds what they add to.
        let kept = if self.accumulate { out.to_vec() } else { Vec::new() };
        out.fill(T::ZERO);
        for (i, &ai) in a.iter().enumerate() {
            let row = &b.data[i * b.rs + j0..i * b.rs + j0 + out.len()];
            for (s, &bv) in out.iter_mut().zip(row) {
                *s = *s + ai * bv;
            }
        }
        if self.accumulate {
            for (y, c0) in out.iter_mut().zip(kept) {
                *y = c0 + scale * *y;
            }
        } else {
            for y in out.iter_mut() {
                *y = scale * *y;
            }
        }
    }
}

/// `Σ a[i] · b[i]` over `LANES` interleaved partial sums.
#[inline(always)]
fn dot<T: GemmElem>(a: &[T], b: &[T]) -> T {
    let mut acc = [T::ZERO; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for l in 0..LANES {
            acc[l] = acc[l] + x[l] * y[l];
        }
    }
    let mut tail = T::ZERO;
    for (x, y) in ar.iter().zip(br) {
        tail = tail + *x * *y;
    }
    acc.iter().fold(tail, |s, v| s + *v)
}
