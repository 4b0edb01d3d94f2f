//! Helpers shared by kernel families that compute in f64 (Det, the losses, the training
//! optimizers) or in wrapping ring arithmetic (Einsum, CumProd), and the outer/extent/inner
//! split around an axis that the axis-walking kernels use.

use vinort_ir::{DType, Error, Result, Tensor};

/// `(outer, extent, inner)` of a shape around `axis`.
pub(crate) fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product())
}

/// A float tensor's elements as f64 (an error for non-float types).
pub(crate) fn load_f64(t: &Tensor) -> Result<Vec<f64>> {
    if !t.dtype().is_float() {
        return Err(Error::unsupported(format!("element type {} (expected a float type)", t.dtype())));
    }
    t.to_f64_vec()
}

/// A float tensor of `dtype` and `shape` holding `vals` rounded to that type.
pub(crate) fn store_f64(dtype: DType, shape: &[usize], vals: &[f64]) -> Result<Tensor> {
    fn fill<T: vinort_ir::Elem>(shape: &[usize], vals: &[f64], f: impl Fn(f64) -> T) -> Tensor {
        Tensor::build::<T>(shape, |o| o.iter_mut().zip(vals).for_each(|(o, v)| *o = f(*v)))
    }
    if vals.len() != vinort_ir::tensor::numel(shape) {
        return Err(Error::invalid(format!("{} values for shape {shape:?}", vals.len())));
    }
    Ok(match dtype {
        DType::F32 => fill::<f32>(shape, vals, |v| v as f32),
        DType::F64 => fill::<f64>(shape, vals, |v| v),
        DType::F16 => fill::<half::f16>(shape, vals, half::f16::from_f64),
        DType::BF16 => fill::<half::bf16>(shape, vals, half::bf16::from_f64),
        other => return Err(Error::unsupported(format!("element type {other} (expected a float type)"))),
    })
}

/// Element types with the ring operations Einsum and CumProd need (integers wrap).
pub trait Ring: vinort_ir::Elem {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `self + o`.
    fn add(self, o: Self) -> Self;
    /// `self * o`.
    fn mul(self, o: Self) -> Self;
}

macro_rules! ring_float {
    ($($t:ty),*) => {$(
        impl Ring for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
        }
    )*};
}
macro_rules! ring_int {
    ($($t:ty),*) => {$(
        impl Ring for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
        }
    )*};
}
ring_float!(f32, f64);
ring_int!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Runs `$body` with `$T` bound to the [`Ring`] type of `$dt`; f16 and bf16 go through f32
/// (`$body` sees f32 tensors, converted by [`widen_half`] and [`narrow_half`]).
macro_rules! dispatch_ring {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            vinort_ir::DType::F32 | vinort_ir::DType::F16 | vinort_ir::DType::BF16 => {
                type $T = f32;
                $body
            }
            vinort_ir::DType::F64 => {
                type $T = f64;
                $body
            }
            vinort_ir::DType::I8 => {
                type $T = i8;
                $body
            }
            vinort_ir::DType::I16 => {
                type $T = i16;
                $body
            }
            vinort_ir::DType::I32 => {
                type $T = i32;
                $body
            }
            vinort_ir::DType::I64 => {
                type $T = i64;
                $body
            }
            vinort_ir::DType::U8 => {
                type $T = u8;
                $body
            }
            vinort_ir::DType::U16 => {
                type $T = u16;
                $body
            }
            vinort_ir::DType::U32 => {
                type $T = u32;
                $body
            }
            vinort_ir::DType::U64 => {
                type $T = u64;
                $body
            }
            other => Err(vinort_ir::Error::unsupported(format!("element type {other}"))),
        }
    };
}
pub(crate) use dispatch_ring;

/// An f16 or bf16 tensor widened to f32; other tensors unchanged.
pub(crate) fn widen_half(t: &Tensor) -> Result<std::borrow::Cow<'_, Tensor>> {
    Ok(match t.dtype() {
        DType::F16 | DType::BF16 => {
            let v = t.to_f64_vec()?;
            std::borrow::Cow::Owned(store_f64(DType::F32, t.shape(), &v)?)
        }
        _ => std::borrow::Cow::Borrowed(t),
    })
}

/// An f32 result narrowed back to `dtype` when that is f16 or bf16.
pub(crate) fn narrow_half(t: Tensor, dtype: DType) -> Result<Tensor> {
    match dtype {
        DType::F16 | DType::BF16 if t.dtype() == DType::F32 => store_f64(dtype, t.shape(), &t.to_f64_vec()?),
        _ => Ok(t),
    }
}
