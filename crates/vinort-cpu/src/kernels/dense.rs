//! The one safe wrapper around the `gemm` crate, shared by every kernel family that
//! multiplies matrices (linalg's MatMul/Gemm/Conv, rnn's gate projections and DeformConv), so
//! the bounds checks that make the `unsafe` call sound live in one place.

use vinort_ir::{Elem, Error, Result};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types `gemm` multiplies natively: f32 and f64.
///
/// Sealed: `gemm::gemm` panics for any other type, so only these two may implement it. The
/// kernel families' own element traits build on it.
pub(crate) trait GemmElem: Elem + sealed::Sealed {
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
