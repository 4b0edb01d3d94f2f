//! The element type this family computes in, tensor widening and narrowing, and a safe
//! wrapper around the `gemm` crate for the gate projections and DeformConv's column product.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use vinort_ir::{DType, Elem, Error, Result, Tensor};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Multiply-adds above which a product is worth splitting across rayon's pool.
const PAR_MIN_MACS: usize = 1 << 16;

/// f32 or f64: the types the kernels compute in.
///
/// Sealed because `gemm::gemm` panics on any type it does not know.
pub(crate) trait Float:
    Elem
    + sealed::Sealed
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
{
    const ZERO: Self;
    const ONE: Self;
    fn from_f32(v: f32) -> Self;
    fn from_f64(v: f64) -> Self;
    fn exp(self) -> Self;
    fn tanh(self) -> Self;
    fn ln_1p(self) -> Self;
    fn abs(self) -> Self;
    fn floor(self) -> Self;
    /// The value truncated toward zero as an integer (saturating; NaN gives 0).
    fn to_i64(self) -> i64;
    /// The elements of a float tensor in this type: f32 takes f32, f16 and bf16 (widened),
    /// f64 takes f64.
    fn load(t: &Tensor) -> Result<Vec<Self>>;
    /// A tensor of `dtype` (one [`Float::load`] accepts) holding `v`, narrowed if need be.
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor>;
}

fn wrong_type(d: DType, want: &str) -> Error {
    Error::invalid(format!("expected a {want} tensor, got {d}"))
}

impl Float for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f32(v: f32) -> Self {
        v
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn tanh(self) -> Self {
        f32::tanh(self)
    }
    fn ln_1p(self) -> Self {
        f32::ln_1p(self)
    }
    fn abs(self) -> Self {
        f32::abs(self)
    }
    fn floor(self) -> Self {
        f32::floor(self)
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn load(t: &Tensor) -> Result<Vec<Self>> {
        let t = t.to_aligned();
        Ok(match t.dtype() {
            DType::F32 => t.to_vec::<f32>()?,
            DType::F16 => {
                let src = t.as_slice::<f16>()?;
                let mut v = vec![0.0; src.len()];
                src.convert_to_f32_slice(&mut v);
                v
            }
            DType::BF16 => {
                let src = t.as_slice::<bf16>()?;
                let mut v = vec![0.0; src.len()];
                src.convert_to_f32_slice(&mut v);
                v
            }
            d => return Err(wrong_type(d, "f32, f16 or bf16")),
        })
    }
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor> {
        let check = |n: usize| {
            if n == v.len() {
                Ok(())
            } else {
                Err(Error::invalid(format!("{} values cannot fill shape {shape:?}", v.len())))
            }
        };
        check(shape.iter().product())?;
        Ok(match dtype {
            DType::F32 => Tensor::from_slice(shape, v)?,
            DType::F16 => Tensor::build::<f16>(shape, |o| o.convert_from_f32_slice(v)),
            DType::BF16 => Tensor::build::<bf16>(shape, |o| o.convert_from_f32_slice(v)),
            d => return Err(wrong_type(d, "f32, f16 or bf16")),
        })
    }
}

impl Float for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    fn ln_1p(self) -> Self {
        f64::ln_1p(self)
    }
    fn abs(self) -> Self {
        f64::abs(self)
    }
    fn floor(self) -> Self {
        f64::floor(self)
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn load(t: &Tensor) -> Result<Vec<Self>> {
        match t.dtype() {
            DType::F64 => t.to_aligned().to_vec::<f64>(),
            d => Err(wrong_type(d, "f64")),
        }
    }
    fn store(dtype: DType, shape: &[usize], v: &[Self]) -> Result<Tensor> {
        match dtype {
            DType::F64 => Tensor::from_slice(shape, v),
            d => Err(wrong_type(d, "f64")),
        }
    }
}

/// A read-only strided matrix: element `(i, j)` is `data[i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct Mat<'a, T> {
    data: &'a [T],
    rs: usize,
    cs: usize,
}

impl<'a, T> Mat<'a, T> {
    /// A row-major matrix with `cols` columns.
    pub fn rows(data: &'a [T], cols: usize) -> Self {
        Mat { data, rs: cols, cs: 1 }
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        Mat { data: self.data, rs: self.cs, cs: self.rs }
    }
}

/// One past the largest index a `rows x cols` matrix (both at least 1) with these strides
/// touches; None on overflow.
fn span(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<usize> {
    (rows - 1).checked_mul(rs)?.checked_add((cols - 1).checked_mul(cs)?)?.checked_add(1)
}

fn isize_of(s: usize) -> Result<isize> {
    isize::try_from(s).map_err(|_| Error::invalid(format!("stride {s} does not fit in isize")))
}

/// `c = a @ b` (or `c += a @ b` when `accumulate`) with `a` m x k, `b` k x n and `c` the
/// first m * n elements of a row-major m x n buffer.
pub(crate) fn matmul<T: Float>(
    (m, n, k): (usize, usize, usize),
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    c: &mut [T],
    accumulate: bool,
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    let bad = || Error::invalid(format!("matrix product {m}x{k} @ {k}x{n} does not fit its buffers"));
    if m.checked_mul(n).is_none_or(|len| len > c.len()) {
        return Err(bad());
    }
    if k == 0 {
        if !accumulate {
            c[..m * n].fill(T::ZERO);
        }
        return Ok(());
    }
    if span(m, k, a.rs, a.cs).is_none_or(|s| s > a.data.len())
        || span(k, n, b.rs, b.cs).is_none_or(|s| s > b.data.len())
    {
        return Err(bad());
    }
    let par = if m.saturating_mul(n).saturating_mul(k) >= PAR_MIN_MACS {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    let (ldc, a_rs, a_cs, b_rs, b_cs) =
        (isize_of(n)?, isize_of(a.rs)?, isize_of(a.cs)?, isize_of(b.rs)?, isize_of(b.cs)?);
    // SAFETY: `T` is f32 or f64 (sealed `Float`), both of which `gemm` implements. gemm reads
    // lhs at `i * a.rs + p * a.cs` (i < m, p < k), rhs at `p * b.rs + j * b.cs` (j < n) and
    // writes dst at `i * n + j`; `span` and the length check above show the largest of each
    // lies inside its slice without overflow, and every stride fits in isize. `c` is borrowed
    // mutably, so it aliases neither input. With `read_dst == false` dst is only written.
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
            T::ONE,
            false,
            false,
            false,
            par,
        );
    }
    Ok(())
}
