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
    if n <= THIN_COLS && thin((m, n, k), a, b, (c, ldc), accumulate, scale, parallel) {
        return Ok(());
    }
    let par = if parallel && !par::serial() { gemm::Parallelism::Rayon(0) } else { gemm::Parallelism::None };
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
    if parallel && !par::serial() && n.saturating_mul(k) >= par::MACS && n >= 2 * LANES {
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
            // Four outputs at a time: `a` is loaded once for four independent sums (one alone
            // waits on its own additions), each summed exactly as `dot` sums it.
            let col = |j: usize| &b.data[j * b.cs..j * b.cs + k];
            let mut quads = out.chunks_exact_mut(4);
            let mut j = j0;
            for ys in &mut quads {
                let sums = dots(a, &[col(j), col(j + 1), col(j + 2), col(j + 3)]);
                for (y, v) in ys.iter_mut().zip(sums) {
                    let v = scale * v;
                    *y = if self.accumulate { *y + v } else { v };
                }
                j += 4;
            }
            for (j, y) in (j..).zip(quads.into_remainder()) {
                let v = scale * dot(a, col(j));
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

/// Columns of `b` up to which [`thin`] takes a product instead of `gemm`.
const THIN_COLS: usize = 4;

/// `c = scale * a @ b` when `b` has at most [`THIN_COLS`] columns and `a`'s rows are
/// contiguous, as a Conv over a few output positions is (a streaming audio model's frame: a
/// 1–4 wide output of 64–258 channels, K of a few hundred); false (nothing written) otherwise.
/// `gemm` packs both operands and runs microkernels sized for wide outputs, which costs
/// several times the products here. Here each row of `a` is read once for all columns of `b`
/// (gathered contiguous first when they are strided), each output summed as [`dot`] sums, and
/// rows split into parallel blocks when the product is big enough to pay for it.
#[allow(clippy::too_many_arguments)]
fn thin<T: GemmElem>(
    (m, n, k): (usize, usize, usize),
    a: View<'_, T>,
    b: View<'_, T>,
    (c, ldc): (&mut [T], usize),
    accumulate: bool,
    scale: T,
    parallel: bool,
) -> bool {
    if a.cs != 1 || n > THIN_COLS {
        return false;
    }
    let cols: std::borrow::Cow<'_, [T]> = if b.rs == 1 && b.cs == k {
        std::borrow::Cow::Borrowed(&b.data[..n * k])
    } else {
        let mut cols = vec![T::ZERO; n * k];
        for (j, col) in cols.chunks_exact_mut(k).enumerate() {
            for (i, v) in col.iter_mut().enumerate() {
                *v = b.data[i * b.rs + j * b.cs];
            }
        }
        std::borrow::Cow::Owned(cols)
    };
    let job = Thin { a, cols: &cols, n, k, ldc, accumulate, scale };
    let rows = |i0: usize, out: &mut [T]| {
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx512() {
            // SAFETY: the CPU running this code has AVX-512F (checked just above).
            return unsafe { job.rows_avx512(i0, out) };
        }
        #[cfg(target_arch = "x86_64")]
        if crate::isa::avx2() {
            // SAFETY: the CPU running this code has AVX2 and FMA (checked just above).
            return unsafe { job.rows_avx2(i0, out) };
        }
        job.rows(i0, out)
    };
    let c = &mut c[..(m - 1) * ldc + n];
    let threads = rayon::current_num_threads();
    if parallel
        && !par::serial()
        && threads > 1
        && m.saturating_mul(n).saturating_mul(k) >= par::MACS
        && m >= 2 * threads
    {
        let per = m.div_ceil(threads);
        c.par_chunks_mut(per * ldc).enumerate().for_each(|(t, out)| rows(t * per, out));
    } else {
        rows(0, c);
    }
    true
}

/// A product with a few columns; [`Thin::rows`] writes a run of its output rows.
struct Thin<'a, T> {
    a: View<'a, T>,
    /// The columns of `b`, each `k` long, one after the other.
    cols: &'a [T],
    n: usize,
    k: usize,
    ldc: usize,
    accumulate: bool,
    scale: T,
}

impl<T: GemmElem> Thin<'_, T> {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn rows_avx2(&self, i0: usize, out: &mut [T]) {
        self.rows(i0, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn rows_avx512(&self, i0: usize, out: &mut [T]) {
        self.rows(i0, out)
    }

    /// Rows `i0..` of the output, `out` starting at row `i0` (the last row may be short of `ldc`).
    #[inline(always)]
    fn rows(&self, i0: usize, out: &mut [T]) {
        match self.n {
            1 => self.rows_of::<1>(i0, out),
            2 => self.rows_of::<2>(i0, out),
            3 => self.rows_of::<3>(i0, out),
            _ => self.rows_of::<4>(i0, out),
        }
    }

    /// [`Thin::rows`] for `N` columns.
    #[inline(always)]
    fn rows_of<const N: usize>(&self, i0: usize, out: &mut [T]) {
        let k = self.k;
        let mut cols: [&[T]; N] = [&[]; N];
        for (col, whole) in cols.iter_mut().zip(self.cols.chunks_exact(k)) {
            *col = whole;
        }
        for (r, y) in out.chunks_mut(self.ldc).enumerate() {
            let i = i0 + r;
            let row = &self.a.data[i * self.a.rs..i * self.a.rs + k];
            for (y, v) in y[..N].iter_mut().zip(dots(row, &cols)) {
                let v = self.scale * v;
                *y = if self.accumulate { *y + v } else { v };
            }
        }
    }
}

/// `Σ a[i] · cols[j][i]` for each of the `N` columns, each summed exactly as [`dot`] sums it.
#[inline(always)]
fn dots<T: GemmElem, const N: usize>(a: &[T], cols: &[&[T]; N]) -> [T; N] {
    let mut acc = [[T::ZERO; LANES]; N];
    let (xs, x_tail) = a.as_chunks::<LANES>();
    let mut ys: [(&[[T; LANES]], &[T]); N] = [(&[], &[]); N];
    for (y, col) in ys.iter_mut().zip(cols) {
        *y = col.as_chunks::<LANES>();
    }
    for (c, x) in xs.iter().enumerate() {
        for (acc, (y, _)) in acc.iter_mut().zip(&ys) {
            if let Some(y) = y.get(c) {
                mul_add_lanes(acc, x, y);
            }
        }
    }
    let mut sums = [T::ZERO; N];
    for ((sum, acc), (_, y_tail)) in sums.iter_mut().zip(&acc).zip(&ys) {
        let mut tail = T::ZERO;
        for (x, y) in x_tail.iter().zip(*y_tail) {
            tail = tail + *x * *y;
        }
        *sum = acc.iter().fold(tail, |s, v| s + *v);
    }
    sums
}

/// `acc[l] += x[l] · y[l]` on whole lanes, one vector operation each.
#[inline(always)]
fn mul_add_lanes<T: GemmElem>(acc: &mut [T; LANES], x: &[T; LANES], y: &[T; LANES]) {
    for l in 0..LANES {
        acc[l] = acc[l] + x[l] * y[l];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `scale * a @ b (+ c)` in f64, element by element.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        m: usize,
        n: usize,
        k: usize,
        a: View<'_, f32>,
        b: View<'_, f32>,
        c0: &[f32],
        ldc: usize,
        acc: bool,
        scale: f32,
    ) -> Vec<f64> {
        let mut want = vec![];
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k)
                    .map(|p| f64::from(a.data[i * a.rs + p * a.cs]) * f64::from(b.data[p * b.rs + j * b.cs]))
                    .sum();
                want.push(f64::from(scale) * s + if acc { f64::from(c0[i * ldc + j]) } else { 0.0 });
            }
        }
        want
    }

    proptest! {
        /// Products with 1–4 columns (the `thin` path) and a few more (`gemm`), with b's
        /// columns contiguous or strided, a row stride past n, accumulation and a scale, agree
        /// with a naive f64 product within f32 rounding of a k-term sum.
        #[test]
        fn few_column_products_match_a_naive_product(
            m in 1usize..40, n in 1usize..7, k in 1usize..70, pad in 0usize..3,
            b_transposed: bool, acc: bool, seed: u64,
        ) {
            let mut rng = seed;
            let mut next = || { rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((rng >> 40) as f32 / (1u64 << 24) as f32) - 0.5 };
            let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let ldc = n + pad;
            let c0: Vec<f32> = (0..m * ldc).map(|_| next()).collect();
            let av = View::rows(&a, k);
            // The same k x n matrix stored by rows, or by columns (b[j * k + p]).
            let bv = if b_transposed { View { data: &b, rs: 1, cs: k } } else { View::rows(&b, n) };
            let mut c = c0.clone();
            matmul_into((m, n, k), av, bv, &mut c, ldc, acc, 0.75, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let want = naive(m, n, k, av, bv, &c0, ldc, acc, 0.75);
            for i in 0..m {
                for j in 0..n {
                    let (got, want) = (f64::from(c[i * ldc + j]), want[i * n + j]);
                    prop_assert!((got - want).abs() <= 1e-5 * (k as f64 + 1.0), "c[{i},{j}] = {got}, want {want}");
                }
                // Padding past each row's n columns is left as it was.
                for j in n..ldc {
                    prop_assert_eq!(c[i * ldc + j], c0[i * ldc + j]);
                }
            }
        }
    }
}
